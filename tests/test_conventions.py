"""The conventions by name: parsing what a user types, choosing a quantity's form, and naming the choice."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.conventions import AXES, BOOK, PROFILES, Conventions, parse
from scalemath.errors import BadValueError
from scalemath.quantities import Context
from scalemath.quantities.registry import Quantity, evaluate
from scalemath.symbolic.derivation import Derivation, Step
from scalemath.symbolic.symbols import SYMBOLS


@pytest.mark.parametrize("typed, expected", [
    ([], {}),
    (["book"], {}),
    (["attention=causal"], {"attention": "causal"}),
    (["attention=causal,hardware=datasheet"], {"attention": "causal", "hardware": "datasheet"}),
    (["palm"], {"attention": "full", "utilisation": "mfu", "hardware": "datasheet"}),
    (["megatron", "attention=causal"], {**PROFILES["megatron"], "attention": "causal"}),
    (["attention=causal", "megatron"], dict(PROFILES["megatron"])),
    (["attention=none"], {}),
    ([" attention = full , "], {"attention": "full"}),
], ids=["nothing", "the book's profile", "one axis", "two axes in one", "a profile", "a profile then an axis",
        "an axis then a profile", "the book's choice named", "spaces and a trailing comma"])
def test_parse(typed, expected):
    conventions = parse(typed)
    assert {a: c for a, c in conventions.choices().items() if c != AXES[a].default} == \
        {a: c for a, c in expected.items() if c != AXES[a].default}
    assert conventions == Conventions.of(expected)


@pytest.mark.parametrize("typed, message", [
    (["bogus"], "unknown convention profile 'bogus'"),
    (["flops=8p"], "unknown convention 'flops'"),
    (["attention=half"], "convention attention has no choice 'half'; choose one of none, causal, full"),
    (["zero=4"], "choose one of book, 0, 1, 2, 3"),
], ids=["unknown profile", "unknown axis", "unknown choice", "a ZeRO stage past 3"])
def test_parse_refuses(typed, message):
    with pytest.raises(BadValueError, match=message):
        parse(typed)


def test_every_profile_names_real_choices_and_the_book_is_every_default():
    for name, choices in PROFILES.items():
        assert Conventions.of(choices).choices().keys() == AXES.keys(), name
    assert BOOK.choices() == {a.name: a.default for a in AXES.values()}
    assert BOOK.describe(["hardware", "attention"]) == "attention FLOPs: none (the book's); hardware figures: the book's"


_x = SYMBOLS["tokens"].symbol


def _toy(attention: str = "none") -> Derivation:
    factor = {"none": 6, "causal": 7, "full": 8}[attention]
    return Derivation("toy", (Step("y", factor * _x, f"{attention}", "FLOP"),), "test")


@pytest.mark.parametrize("typed, value", [([], 6), (["attention=causal"], 7), (["palm"], 8), (["hardware=datasheet"], 6)],
                         ids=["the book's", "causal", "a profile", "an axis the quantity does not read"])
def test_a_quantity_takes_the_form_its_conventions_choose(typed, value):
    q = Quantity("toy.flops", _toy, "transformer", conventions=("attention",))
    assert evaluate(q, Context(conventions=parse(typed)), {"tokens": 1}).value == value
    assert q.under(parse(typed)).expr == value * _x
    assert q.under(parse(typed)).steps[0].why == {6: "none", 7: "causal", 8: "full"}[value]


def test_derive_names_the_hardware_convention_of_a_chip():
    result = CliRunner().invoke(main, ["derive", "roofline.critical_intensity", "--chip", "h100", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["conventions"] == {"hardware": "book"}
    result = CliRunner().invoke(main, ["derive", "roofline.critical_intensity", "--chip", "h100"])
    assert "conventions: hardware figures: the book's" in result.output.splitlines()


@pytest.mark.parametrize("argv, message", [
    (["--convention", "bogus"], "unknown convention profile 'bogus'"),
    (["--convention", "attention=half"], "convention attention has no choice 'half'"),
], ids=["unknown profile", "unknown choice"])
def test_cli_refuses_a_bad_convention(argv, message):
    result = CliRunner().invoke(main, ["derive", "roofline.critical_intensity", "--chip", "h100", *argv])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_conventions_command_lists_every_axis_and_profile(fmt):
    result = CliRunner().invoke(main, ["conventions", "--format", fmt])
    assert result.exit_code == 0
    for name in [*AXES, *PROFILES]:
        assert name in result.output
    if fmt == "json":
        data = json.loads(result.output)
        assert data["axes"]["attention"]["default"] == "none" and data["profiles"]["palm"]["attention"] == "full"


# -- plan: the optimizer convention sets the bytes it counts, and names them ------------------------------------

@pytest.mark.parametrize("argv, per_param, line", [
    ([], (2, 2, 8), "optimizer book (8 bytes of state per parameter, gradients in the weights' dtype)"),
    (["--convention", "optimizer=mixed-precision"], (2, 4, 12),
     "optimizer mixed-precision (12 bytes of state per parameter, gradients in fp32)"),
    (["--convention", "optimizer=zero-paper"], (2, 2, 12), "optimizer zero-paper (12 bytes of state per parameter"),
    (["--convention", "optimizer=mixed-precision", "--optimizer-bytes", "4"], (2, 4, 4),
     "optimizer as given (4 bytes of state per parameter, gradients in fp32)"),
], ids=["the book's", "mixed precision: 18 bytes", "the ZeRO paper's 16 bytes", "bytes given win, and say so"])
def test_plan_counts_model_states_by_the_optimizer_convention(argv, per_param, line):
    """Weights, gradients and optimizer state per chip, with every degree pinned to one replica of TP 8: each is
    P/8 times the bytes per parameter the convention names (a hand count of the parts the search prints)."""
    result = CliRunner().invoke(main, ["plan", "--model", "llama3-8b", "--chip", "h100", "--chips", "8", "--batch-tokens",
                                       "64Ki", "--seq-len", "4096", "--tp", "8", "--pp", "1", "--fsdp", "1", "--dp", "1",
                                       "--format", "json", *argv])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert line in report["conventions"]["note"]
    steps = {s["label"]: Fraction(s["exact"]) for s in report["derivations"]["memory"]["steps"]}
    per_chip = steps["P_{\\mathrm{dev}}"]
    assert per_chip == Fraction(report["params"]["exact"]) / 8
    assert [steps[label] for label in _MEMORY_LABELS] == [per_chip * b for b in per_param]


_MEMORY_LABELS = ("\\mathrm{bytes}_{w}", "\\mathrm{bytes}_{g}", "\\mathrm{bytes}_{\\mathrm{opt}}")


@pytest.mark.parametrize("convention, named", [
    ("megatron", "recompute=full"), ("recompute=full", "recompute=full"),
    ("deepseek", "active_params=no-input-embedding")],
    ids=["a profile", "an axis", "another profile"])
def test_plan_refuses_a_convention_it_does_not_model(convention, named):
    result = CliRunner().invoke(main, ["plan", "--model", "llama3-8b", "--chip", "h100", "--chips", "8",
                                       "--batch-tokens", "64Ki", "--convention", convention])
    assert result.exit_code == 2 and "is not modelled by plan yet" in result.output and named in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [
    ["plan", "--model", "llama3-8b", "--chip", "a100", "--chips", "8", "--batch-tokens", "64Ki", "--tp", "8", "--pp",
     "1", "--fsdp", "1", "--dp", "1"],
    ["serve", "--model", "llama3-8b", "--chip", "a100", "--chips", "1", "--batch", "8"],
], ids=["plan", "serve"])
@pytest.mark.parametrize("convention, peak", [(None, 310 * 10**12), ("datasheet", 312 * 10**12)],
                         ids=["the book's figures", "the datasheet's"])
def test_the_searches_price_with_the_chosen_hardware_figures_and_name_them(command, convention, peak):
    argv = command + ["--format", "json"] + (["--convention", convention] if convention else [])
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["conventions"]["hardware"] == (convention or "book")
    if command[0] == "plan":  # the peak is what the achieved MFU divides by
        achieved = report["achieved"]
        assert Fraction(achieved["mfu"]["exact"]) == Fraction(achieved["flops_per_chip"]["exact"]) / peak
    text = CliRunner().invoke(main, command + (["--convention", convention] if convention else []))
    assert f"hardware figures: {convention or 'the book' + chr(39) + 's'}" in text.output


def test_serve_refuses_a_convention_it_does_not_model():
    result = CliRunner().invoke(main, ["serve", "--model", "llama3-8b", "--chip", "a100", "--convention", "palm"])
    assert result.exit_code == 2 and "attention=full is not modelled by serve yet" in result.output


_FLOPS = ["--set", "P_active=70e9,tokens=15e12,L=80,N=64,H=128,T=8192"]


@pytest.mark.parametrize("argv, expected", [
    (["check", "transformer.training_flops", "7.27e24", "--convention", "attention=full", *_FLOPS, "--format", "json"],
     {"attention": "full", "recompute": "none"}),
    (["check", "transformer.training_flops", "6.3e24", "--set", "P_active=70e9,tokens=15e12", "--format", "json"],
     {"attention": "none", "recompute": "none"}),
    (["check", "transformer.training_flops", "--expr", "6*P_active*tokens + 12*L*N*H*T*tokens", "--convention", "palm",
      "--format", "json"], {"attention": "full", "recompute": "none"}),
    (["compare", "roofline.critical_intensity", "--chip", "a100", "--vs", "h100", "--convention", "datasheet",
      "--format", "json"], {"hardware": "datasheet"}),
], ids=["check: PaLM's count with attention", "check: the book's 6·P", "check --expr: PaLM's closed form",
        "compare: datasheet figures"])
def test_check_and_compare_name_the_conventions_they_used(argv, expected):
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["conventions"] == expected


def test_a_table_names_its_conventions_in_its_caption():
    result = CliRunner().invoke(main, ["table", "roofline.critical_intensity", "--chip", "h100,a100", "--convention",
                                       "datasheet"])
    assert result.exit_code == 0
    assert result.output.splitlines()[0].endswith(" (conventions: hardware figures: datasheet):")
    assert "| A100 SXM4 80GB | 3.12e14 | 2.039e12 | 153 |" in result.output


@pytest.mark.parametrize("convention, tokens", [
    ("attention=full", Fraction(10**24) / (6 * 70 * 10**9 + 12 * 80 * 64 * 128 * 8192)),
    ("attention=causal", Fraction(10**24) / (6 * 70 * 10**9 + 6 * 80 * 64 * 128 * 8192)),
], ids=["PaLM's count", "causal attention"])
def test_solve_uses_the_chosen_form_and_names_it(convention, tokens):
    """How many tokens 10^24 FLOPs train a 70B model on, attention counted (a hand count of the closed form)."""
    result = CliRunner().invoke(main, ["solve", "transformer.training_flops", "--for", "tokens", "--equals", "1e24",
                                       "--convention", convention, "--set", "P_active=70e9,L=80,N=64,H=128,T=8192",
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert Fraction(report["exact"]) == tokens
    assert report["conventions"] == {"attention": convention.split("=")[1], "recompute": "none"}
