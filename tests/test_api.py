"""scalemath.api: the commands as functions, their results' exact values and Jupyter reprs, their errors."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp
from click.testing import CliRunner

import scalemath
from scalemath import errors
from scalemath.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"

# Values from outside the engine, each with its source.
DERIVED = [
    # ../shared/reference/hardware.md R2 (Part 1, Matrix multiplication): v5e 1.97e14 FLOP/s / 8.2e11 B/s -> 240;
    # by hand 197e12 / 820e9 = 9850/41
    ("roofline.critical_intensity", {"chip": "tpu-v5e"}, Fraction(9850, 41), "FLOP/byte"),
    # R4 (Part 1, A Few Problems to Work, Q5): H100 -> 295; the catalog's 9.9e14 / 3.35e12 = 19800/67 by hand
    ("matmul.critical_batch_approx", {"chip": "h100"}, Fraction(19800, 67), "token"),
    # hand count: T_math = 2 B D F / C = 2 * 256 * 8192 * 32768 / 9.9e14 s
    ("matmul.t_math", {"chip": "h100", "B": 256, "D": 8192, "F": 32768}, Fraction(2 * 256 * 8192 * 32768, 990 * 10**12),
     "s"),
    # the same with the values given as text and a Fraction (read by the safe parser, exactly)
    ("matmul.t_math", {"chip": "h100", "B": "2**8", "D": Fraction(8192), "F": "32768"},
     Fraction(2 * 256 * 8192 * 32768, 990 * 10**12), "s"),
]


@pytest.mark.parametrize("name, kwargs, exact, unit", DERIVED, ids=["v5e-intensity", "h100-batch", "t_math", "as-text"])
def test_derive_exact_values(name, kwargs, exact, unit):
    r = scalemath.derive(name, **kwargs)
    assert r.exact == sp.Rational(exact.numerator, exact.denominator) and isinstance(r.exact, sp.Rational)
    assert r.value == pytest.approx(float(exact), rel=1e-12) and r.unit == unit
    assert r.steps[-1].exact == r.exact and r.steps[-1].value == r.value


def test_derive_matches_the_command():
    """The function and ``derive --format json`` give the same record (the same library calls)."""
    r = scalemath.derive("matmul.t_math", chip="h100", B=256, D=8192, F=32768)
    cli = json.loads(CliRunner().invoke(main, ["derive", "matmul.t_math", "--chip", "h100", "--set",
                                               "B=256,D=8192,F=32768", "--format", "json"]).output)
    assert r.report == cli
    assert str(r.exact) == cli["exact"] and [s.label for s in r.steps] == [s["label"] for s in cli["steps"]]


def test_symbolic_result():
    r = scalemath.derive("collective.all_gather.time")
    V, N, W = (sp.Symbol(n, positive=True) for n in ("V", "N", "W_ici"))
    assert sp.simplify(r.exact - V * (N - 1) / (N * W)) == 0  # sharding.md: V (N - 1) / (N W_ici), by hand
    assert r.value is None and "V" in repr(r)
    assert r._repr_latex_().startswith("$$") and r"\frac{V \left(N - 1\right)}{N W_{\mathrm{ici}}}" in r.latex


def test_reprs():
    r = scalemath.derive("matmul.critical_batch_approx", chip="h100")
    assert repr(r) == "<matmul.critical_batch_approx on h100 = 295.5 token (exact 19800/67)>"
    latex = r._repr_latex_()
    assert latex.startswith("$$\n\\begin{aligned}") and latex.endswith("\\end{aligned}\n$$")
    assert r"B^* &= \frac{C b_w}{2 W}" in latex
    html = r._repr_html_()
    assert html.count("<tr>") == 1 + len(r.steps) and "<math" in html and "19800/67" in html
    assert str(r).startswith("matmul.critical_batch_approx: ") and "exact 19800/67" in str(r)


def test_solve_crossover():
    # hand: 2 B D F / C = (B D b_x + B F b_o + D F b_w) / W with b = 2 (bf16) on tpu-v5e (C 1.97e14, W 8.2e11):
    # B = C D F b_w / (2 D F W - C (D b_x + F b_o))
    C, W, D, F = 197 * 10**12, 82 * 10**10, 8192, 32768
    expected = sp.Rational(C * D * F * 2, 2 * D * F * W - C * (2 * D + 2 * F))
    r = scalemath.solve("matmul.t_math", "B", against="matmul.t_comms", chip="tpu-v5e", D=D, F=F)
    assert r.exact == expected and r.name == "matmul.t_math = matmul.t_comms"
    # T_math = 1 ms on H100: B = 1e-3 * C / (2 D F), by hand
    r = scalemath.solve("matmul.t_math", "B", equals="1/1000", chip="h100", D=D, F=F)
    assert r.exact == sp.Rational(990 * 10**12, 1000 * 2 * D * F)


CHECKS = [
    # R2: 240 is within 1% of 9850/41
    ("roofline.critical_intensity", "240", {"chip": "tpu-v5e"}, True, None),
    # twice the book's 295 on H100: the factor-2 slip is named
    ("matmul.critical_batch_approx", "591 token", {"chip": "h100"}, False, "2x"),
    ("matmul.critical_batch_approx", 295.5, {"chip": "h100"}, True, None),
]


@pytest.mark.parametrize("name, answer, kwargs, right, slip", CHECKS, ids=["right", "factor-2", "float"])
def test_check(name, answer, kwargs, right, slip):
    v = scalemath.check(name, answer, **kwargs)
    assert bool(v) is right and v.right is right
    assert (slip in v.diagnosis) if slip else v.diagnosis is None
    assert ("right" if right else "wrong") in v._repr_html_()


def test_check_expression():
    assert scalemath.check("matmul.critical_batch_approx", expr="C*b_w/(2*W)")
    assert not scalemath.check("matmul.critical_batch_approx", expr="C/W")


ERRORS = [
    (lambda: scalemath.derive("roofline.critical_intensty"), errors.UnknownNameError, "roofline.critical_intensity"),
    (lambda: scalemath.derive("roofline.critical_intensity", chip="h1000"), errors.UnknownNameError, "h100"),
    (lambda: scalemath.derive("matmul.t_math", Q=1), errors.UnknownNameError, "Q"),
    (lambda: scalemath.derive("matmul.t_math", B="__import__('os')"), errors.ScalemathError, "B="),
    (lambda: scalemath.derive("matmul.t_math", B=[1]), errors.BadValueError, "give a number"),
    (lambda: scalemath.derive("matmul.t_math", B=-1), errors.BadValueError, "must be positive"),
    (lambda: scalemath.derive("matmul.t_math", dtype="bf17"), errors.BadValueError, "dtype='bf17'"),
    (lambda: scalemath.solve("matmul.t_math", "B"), errors.BadValueError, "exactly one of"),
    (lambda: scalemath.check("roofline.critical_intensity", "240"), errors.BadValueError, "still depends on"),
    (lambda: scalemath.check("roofline.critical_intensity", "1", chip="h100", rel_tol=2), errors.BadValueError,
     "rel_tol"),
    (lambda: scalemath.plan("llama3-8b", "tpu-v5p", 256, "4M", mfu="0.4", cp=2), errors.BadValueError,
     "--mfu prices the book's way"),
    (lambda: scalemath.serve("llama3-8b", "tpu-v5e", topology="2x2", chips=4), errors.BadValueError, "not both"),
    (lambda: scalemath.generate("roofline", n=2, jobs=0), errors.BadValueError, "--jobs 0 must be"),
]


@pytest.mark.parametrize("call, kind, fragment", ERRORS, ids=[
    "quantity", "chip", "parameter", "python-text", "list", "negative", "dtype", "solve-both", "symbolic-check",
    "rel-tol", "plan-mfu-cp", "serve-both", "generate-jobs"])
def test_errors_are_the_librarys(call, kind, fragment):
    with pytest.raises(kind) as info:
        call()
    assert fragment in str(info.value) and "\n" not in str(info.value).strip()


def test_error_message_is_the_commands():
    with pytest.raises(errors.UnknownNameError) as info:
        scalemath.derive("roofline.critical_intensty")
    cli = CliRunner().invoke(main, ["derive", "roofline.critical_intensty"])
    assert cli.exit_code == info.value.exit_code and f"error: {info.value}" in cli.output


def test_plan_and_serve_match_the_commands():
    p = scalemath.plan("llama3-8b", "tpu-v5p", 256, "4Mi", top=2)
    cli = json.loads(CliRunner().invoke(main, ["plan", "--model", "llama3-8b", "--chip", "tpu-v5p", "--chips", "256",
                                               "--batch-tokens", "4Mi", "--top", "2", "--format", "json"]).output)
    mine = p.as_json()
    for k in ("results", "families", "derivations", "training_time", "params"):  # "search" holds the CPU time taken
        assert json.loads(json.dumps(mine[k])) == cli[k], k
    assert p.exact == p.best.step.value and "<table" in p._repr_html_()
    assert p.figure().svg().lstrip().startswith("<?xml")
    s = scalemath.serve("llama3-8b", "tpu-v5e", topology="2x2", context=4096)
    cli = json.loads(CliRunner().invoke(main, ["serve", "--model", "llama3-8b", "--chip", "tpu-v5e",
                                               "--topology", "2x2",
                                               "--context", "4096", "--format", "json"]).output)
    mine = json.loads(json.dumps(s.as_json()))
    for k in ("step_time", "layout", "batch", "runners_up", "pareto", "step_derivation"):
        assert mine[k] == cli[k], k
    assert "<table" in s._repr_html_() and s.exact == s.report["step"].value


def test_generate_is_the_commands_set(tmp_path):
    """The same seed writes byte-identical files through the function and the command."""
    api = scalemath.generate("roofline", n=2, seed=3, out=tmp_path / "api", formats="md,json")
    result = CliRunner().invoke(main, ["problems", "generate", "--topic", "roofline", "--n", "2", "--seed", "3",
                                       "--format", "md,json", "--out", str(tmp_path / "cli")])
    assert result.exit_code == 0, result.output
    assert len(api.problems) == 2 and api.files
    for f in api.files:
        assert f.read_bytes() == (tmp_path / "cli" / f.relative_to(tmp_path / "api")).read_bytes(), f.name
    workers = scalemath.generate("roofline", n=2, seed=3, out=tmp_path / "workers", formats="md,json", jobs=2)
    assert [f.read_bytes() for f in workers.files] == [f.read_bytes() for f in api.files]
    again = scalemath.generate("roofline", n=2, seed=3, out=tmp_path / "api", formats="md,json")
    assert again.unchanged and not api.unchanged  # the same set again: nothing written
    with pytest.raises(errors.ScalemathError, match="already holds a different set"):
        scalemath.generate("roofline", n=2, seed=4, out=tmp_path / "api", formats="md,json")  # nothing overwritten


def test_grade(tmp_path):
    s = scalemath.generate("roofline", n=2, seed=3, out=tmp_path / "set", formats="json")
    key = json.loads((tmp_path / "set" / "manifest.json").read_text())
    # the key's own values: a number as its exact fraction, a choice by its text
    answers = {p["id"]: {a["name"]: a["choices"][int(a["exact"])] if a.get("kind") == "choice" else a["exact"]
                         for a in p["answers"]} for p in key["problems"]}
    (tmp_path / "right.json").write_text(json.dumps(answers))
    g = scalemath.grade(tmp_path / "right.json", tmp_path / "set" / "manifest.json")
    assert g.right == g.total == sum(len(p.answers) for p in s.problems) and g.score == 1
    blank = scalemath.grade(tmp_path / "set" / "answers.json")
    assert blank.right == 0 and blank.total == g.total and "<table" in blank._repr_html_()


def test_hlo():
    h = scalemath.hlo(EXAMPLES / "ffw.hlo", "tpu-v5e", mesh="X=8")
    out = h.as_json()
    # hand count: the all-gather's output is bf16[8192, 32768] = 8192 * 32768 * 2 bytes; the dot's FLOPs are
    # 2 * 256 * 8192 * 32768
    assert out["collectives"][0]["bytes"] == 8192 * 32768 * 2
    assert next(o for o in out["ops"] if o["opcode"] == "dot")["flops"] == 2 * 256 * 8192 * 32768
    assert str(h).startswith("HLO module ffw") and "<pre>" in h._repr_html_()
    assert repr(h) == "<hlo module ffw: 2 ops, 8 devices on tpu-v5e>"


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_import_is_lazy():
    """``import scalemath`` loads neither SymPy nor the API; the first call does."""
    assert run("import sys, scalemath; print('sympy' in sys.modules, 'scalemath.api' in sys.modules)") == "False False"
    assert run("import scalemath; print(scalemath.derive('roofline.critical_intensity', chip='tpu-v5e').exact)") == \
        "9850/41"


def test_the_api_names_are_the_functions_even_after_the_cli_is_imported():
    """No module of the package is named like an API function, so importing the CLI (which imports the modules
    planning, serving and hlo_analysis) leaves ``scalemath.plan`` and the others the API's functions."""
    import scalemath.cli  # noqa: F401

    assert set(scalemath.__all__) >= set(scalemath._API)
    for name in scalemath._API:
        assert getattr(scalemath, name) is getattr(scalemath.api, name), name


@pytest.mark.parametrize("pattern, mesh, chip, given", [
    ("A[I, J_X] @ B[J_X, K] -> C[I, K]", "X=16", "tpu-v5e", {"I": 8192, "J": 8192, "K": 8192}),
    ("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "X=4,Y=2", "h100", {"I": 4096, "J": 1024, "K": 2048}),
    ("A[I_X, J] -> A[I, J_X]", "X=4", "tpu-v5e", {"I": 1024, "J": 1024}),
    ("A[I_X, J_Y]", "X=4,Y=2", None, {"I": 1024, "J": 1024}),
], ids=["case 3 on a ring", "case 1 on a GPU node", "a reshard", "one layout"])
def test_shard_is_the_commands(pattern, mesh, chip, given):
    r = scalemath.shard(pattern, mesh, chip, given=given)
    args = ["shard", pattern, "--mesh", mesh, "--set", ",".join(f"{k}={v}" for k, v in given.items())]
    args += ["--chip", chip] if chip else []
    assert str(r) + "\n" == CliRunner().invoke(main, args).output
    assert json.loads(json.dumps(r.as_json(), default=str)) == json.loads(CliRunner().invoke(main, args + ["--format",
                                                                                                           "json"]).output)
    assert "<pre>" in r._repr_html_()


def test_shard_case_3_by_hand():
    """The book's case 3 (sharding.md): the local products are partial sums, AllReduced over X; the AllReduce moves
    the whole output, 8192 x 8192 bf16 = 134,217,728 bytes (hand count)."""
    r = scalemath.shard("A[I, J_X] @ B[J_X, K] -> C[I, K]", "X=16", "tpu-v5e", given={"I": 8192, "J": 8192, "K": 8192})
    assert r.report["case"] == "3"
    assert "V = 134.2 MB" in str(r)


def test_dir_lists_the_public_api():
    """``dir(scalemath)`` (what tab completion reads) names every API function, without importing them."""
    names = run("import scalemath, sys; print(','.join(dir(scalemath)), 'sympy' in sys.modules)")
    listed, loaded = names.rsplit(" ", 1)
    assert set(scalemath._API) | {"Context", "evaluate", "get_quantity"} <= set(listed.split(",")) and loaded == "False"


@pytest.mark.parametrize("name, answer, expr, given, right", [
    ("inference.serving.prefill_servers", "106", None, {"B": 531, "t_prefill": 1, "n_gen": 5, "t_step": 1}, False),
    ("inference.serving.prefill_servers", "107", None, {"B": 531, "t_prefill": 1, "n_gen": 5, "t_step": 1}, True),
    ("collective.all_gather.time", None, "V/W_ici", {}, False),
    ("transformer.training_flops", None, "6*P_active*tokens", {}, True),
], ids=["a ceiling rounded down", "the ceiling", "a ring's (N-1)/N dropped", "the book's 6·P"])
def test_the_api_and_the_cli_check_alike(name, answer, expr, given, right):
    """One check behind both: the whole number a ceiling asks for, and the closed form's diagnosis."""
    from click.testing import CliRunner

    from scalemath.cli import main

    chip = {"collective.all_gather.time": "tpu-v5e"}.get(name)
    verdict = scalemath.check(name, answer, expr=expr, chip=chip, **given)
    argv = ["check", name] + ([answer] if answer else ["--expr", expr]) + (["--chip", chip] if chip else [])
    if given:
        argv += ["--set", ",".join(f"{k}={v}" for k, v in given.items())]
    result = CliRunner().invoke(main, argv + ["--format", "json"])
    shown = json.loads(result.output)
    assert bool(verdict) == right and result.exit_code == (0 if right else 1)
    assert shown.get("right", shown.get("equivalent")) == right
    assert shown.get("diagnosis") == getattr(verdict, "diagnosis", None)
