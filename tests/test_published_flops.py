"""Published FLOP counts, utilisations, run times and costs, each row citing its paper and table, held against the
engine's quantities under the conventions each paper counts by. The tolerance is the precision the paper prints
(a value rounded half-up to the printed digits must equal the printed figure); a second route (plain arithmetic
with Fractions, or another quantity) checks the engine where it can.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

import pytest
import sympy as sp

from scalemath.catalog.models import get_model
from scalemath.conventions import parse
from scalemath.quantities import Context
from scalemath.quantities.registry import evaluate, get
from scalemath.symbolic.symbols import sym
from scalemath.values.units import read_in_unit


def shown_as(value, printed: str, scale=1) -> bool:
    """``value`` x ``scale`` rounded half-up to the digits of ``printed`` is ``printed`` (e.g. '3.64E+03', '46.2')."""
    value = sp.Rational(value) * scale
    target = Decimal(printed)
    with localcontext() as ctx:
        ctx.prec = 80
        exact = Decimal(int(value.p)) / Decimal(int(value.q))
        return exact.quantize(Decimal((0, (1,), target.as_tuple().exponent)), rounding=ROUND_HALF_UP) == target


def value_of(name: str, given: dict, *, conventions=(), chip=None):
    ctx = Context(chip=chip, conventions=parse(list(conventions)))
    return evaluate(get(name), ctx, {k: sp.Rational(v) for k, v in given.items()}).value


# -- PaLM (Chowdhery et al. 2022) ---------------------------------------------------------------------------------
# Section 4.1 and Table 3: PaLM 540B on 6144 TPU v4 chips, 238.3K tokens/sec at batch 2048, MFU 45.7 % without
# self-attention and 46.2 % with it; Appendix B counts 6N + 12·L·H·Q·T model FLOPs per token. Table 1: 118 layers,
# 48 heads of size 256, 540.35B parameters; sequence length 2048 (Section 5). The TPU v4 peak (275 TFLOP/s bf16) is
# the catalog's datasheet figure (cloud.google.com/tpu/docs/v4).
_PALM = {"P_active": "540.35e9", "L": 118, "N": 48, "H": 256, "T": 2048, "r_tok": Fraction(2383, 10) * 1000 / 6144}


@pytest.mark.parametrize("conventions, printed", [
    (["palm"], "46.2"),
    (["palm", "attention=none"], "45.7"),
], ids=["PaLM Table 3: 540B MFU with attention 46.2%", "PaLM Section 4.1: 540B MFU without attention 45.7%"])
def test_palm_mfu_from_throughput(conventions, printed):
    without = "attention=none" in conventions  # then the form reads no L, N, H, T
    given = {k: v for k, v in _PALM.items() if not (without and k in ("L", "N", "H", "T"))}
    mfu = value_of("transformer.mfu_from_throughput", given, conventions=conventions, chip="tpu-v4p")
    assert shown_as(mfu, printed, 100)
    # second route: PaLM's own arithmetic, observed over peak throughput
    attention = 0 if without else 12 * 118 * 48 * 256 * 2048
    plain = _PALM["r_tok"] * (6 * Fraction("540.35e9") + attention) / (275 * 10**12)
    assert mfu == sp.Rational(plain.numerator, plain.denominator)


def test_palm_mfu_over_a_whole_run_equals_the_throughput_route():
    """transformer.mfu (FLOPs used over chips x seconds x peak) for one second of the run is the same MFU."""
    given = {k: v for k, v in _PALM.items() if k != "r_tok"}
    run = value_of("transformer.mfu", {**given, "tokens": "238.3e3", "n_dev": 6144, "t_run": 1}, conventions=["palm"],
                   chip="tpu-v4p")
    assert run == value_of("transformer.mfu_from_throughput", _PALM, conventions=["palm"], chip="tpu-v4p")


# -- Megatron-LM (Narayanan et al. 2021) ---------------------------------------------------------------------------
# Table 1 (weak scaling, A100, peak 312 teraFLOP/s in 16-bit): achieved teraFLOP/s per GPU and its percentage of
# the theoretical peak. The achieved FLOPs are Eq. 3's, which count the recomputed forward: an HFU.
@pytest.mark.parametrize("params, achieved, percent", [
    ("1.7", 137, "44"), ("3.6", 138, "44"), ("7.5", 142, "46"), ("18.4", 135, "43"), ("39.1", 138, "44"),
    ("76.1", 140, "45"), ("145.6", 148, "47"), ("310.1", 155, "50"), ("529.6", 163, "52"), ("1008.0", 163, "52"),
], ids=lambda v: str(v))
def test_megatron_table_1_percentage_of_peak(params, achieved, percent):
    hfu = value_of("transformer.mfu_from_achieved", {"C_ach": achieved * 10**12}, conventions=["megatron"], chip="a100")
    assert shown_as(hfu, percent, 100), (params, float(hfu))
    assert hfu == value_of("transformer.hfu_from_achieved", {"C_ach": achieved * 10**12}, chip="a100",
                           conventions=["hardware=datasheet"])


# Table 1 rows (GPT, V = 51200, s = 2048): Eq. 3's FLOPs per iteration, 96·B·s·l·h²(1 + s/(6h) + V/(16·l·h)) with
# B sequences, against the same count the engine builds per token (recompute=full) and plain arithmetic.
@pytest.mark.parametrize("heads, h, layers, batch", [
    (24, 2304, 24, 512), (48, 6144, 40, 1024), (96, 12288, 80, 2304), (128, 20480, 105, 2520),
    (160, 25600, 128, 3072),
], ids=["1.7B", "18.4B", "145.6B", "529.6B", "1008.0B"])
def test_megatron_eq_3_equals_training_flops_with_full_recomputation(heads, h, layers, batch):
    s, V = 2048, 51200
    tokens = batch * s
    eq3 = value_of("transformer.megatron_iteration_flops", {"B": tokens, "T": s, "L": layers, "D": h, "V_vocab": V})
    plain = 96 * batch * s * layers * h**2 * (1 + Fraction(s, 6 * h) + Fraction(V, 16 * layers * h))
    assert eq3 == sp.Rational(plain.numerator, plain.denominator)
    per_token = value_of("transformer.flops_per_token",
                         {"D": h, "F": 4 * h, "N": heads, "K": heads, "H": h // heads, "L": layers, "T": s,
                          "V_vocab": V, "n_mlp": 2}, conventions=["recompute=full"])
    assert per_token * tokens == eq3


def test_megatron_eq_3_is_the_engine_count_symbolically():
    """For a GPT model (n_mlp = 2, F = 4D, K = N, N·H = D) B x FLOPs per token under recompute=full is Eq. 3."""
    B, D, N, L, T, V = (sym(n) for n in ("B", "D", "N", "L", "T", "V_vocab"))
    per_token = get("transformer.flops_per_token").under(parse(["recompute=full"])).expr
    gpt = per_token.subs({sym("n_mlp"): 2, sym("F"): 4 * D, sym("K"): N}).subs(sym("H"), D / N)
    assert sp.simplify(B * gpt - get("transformer.megatron_iteration_flops").derivation.expr) == 0
    # training_flops (6·P form) under attention=full, recompute=full recomputes the logits too: 2·B·D·V more
    P = 12 * L * D**2 + D * V
    coarse = get("transformer.training_flops").under(parse(["attention=full,recompute=full"])).expr
    coarse = coarse.subs({sym("P_active"): P, sym("tokens"): B}).subs(sym("H"), D / N)
    assert sp.simplify(coarse - get("transformer.megatron_iteration_flops").derivation.expr - 2 * B * D * V) == 0


# Section 5.1, end-to-end training time ≈ 8·T·P/(n·X): GPT-3 (175 billion parameters, 300 billion tokens, 1024 A100
# at X = 140 teraFLOP/s) about 34 days; the 1-trillion-parameter model (450 billion tokens, 3072 GPUs at 163
# teraFLOP/s) about 84 days, which follows from Table 1's count for that model, 1008.0 billion (1e12 gives 83.2).
@pytest.mark.parametrize("P, tokens, n, X, days", [
    ("175e9", "300e9", 1024, 140, "34"),
    ("1008.0e9", "450e9", 3072, 163, "84"),
], ids=["Megatron 5.1: GPT-3 175B about 34 days", "Megatron 5.1 and Table 1: 1T (1008.0B) about 84 days"])
def test_megatron_training_time(P, tokens, n, X, days):
    given = {"P": P, "tokens": tokens, "n_dev": n, "HFU": Fraction(X, 312)}
    seconds = value_of("parallel.training_time", given, conventions=["megatron", "attention=none"], chip="a100")
    assert shown_as(seconds, days, Fraction(1, 86400))
    assert seconds == 8 * sp.Rational(tokens) * sp.Rational(P) / (n * X * 10**12)
    # the same run priced at its MFU, counting the model's 6·P·tokens: MFU = HFU x 6/8 gives the same time
    mfu_given = {"P": P, "tokens": tokens, "n_dev": n, "MFU": Fraction(X, 312) * Fraction(6, 8)}
    assert value_of("parallel.training_time", mfu_given, conventions=["recompute=full", "hardware=datasheet"],
                    chip="a100") == seconds


# -- Chinchilla (Hoffmann et al. 2022), Table 3 (Approach 1): parameters, FLOPs, tokens ----------------------------
@pytest.mark.parametrize("params, tokens, flops", [
    ("400e6", "8.0e9", "1.92e19"), ("1e9", "20.2e9", "1.21e20"), ("10e9", "205.1e9", "1.23e22"),
    ("520e9", "11.0e12", "3.43e25"), ("1e12", "21.2e12", "1.27e26"), ("10e12", "216.2e12", "1.30e28"),
], ids=["400M", "1B", "10B", "520B", "1T", "10T"])
def test_chinchilla_table_3_is_6_N_D(params, tokens, flops):
    value = value_of("transformer.training_flops", {"P_active": params, "tokens": tokens})
    assert shown_as(value, flops)
    assert value == 6 * sp.Rational(params) * sp.Rational(tokens)


@pytest.mark.parametrize("params, tokens, printed, ours", [
    ("67e9", "1.5e12", "5.76e23", "6.03e23"), ("175e9", "3.7e12", "3.85e24", "3.89e24"),
    ("280e9", "5.9e12", "9.90e24", "9.91e24"), ("70e9", "1.4e12", "5.76e23", "5.88e23"),
], ids=["67B (does not reproduce)", "175B (does not reproduce)", "280B (does not reproduce)",
        "Chinchilla 70B, 1.4T: Gopher's budget (does not reproduce)"])
def test_chinchilla_rows_6_N_D_does_not_reproduce(params, tokens, printed, ours):
    """Rows whose rounded parameters and tokens do not give the printed FLOPs by 6·N·D: recorded, not loosened."""
    value = value_of("transformer.training_flops", {"P_active": params, "tokens": tokens})
    assert not shown_as(value, printed) and shown_as(value, ours)


# -- GPT-3 (Brown et al. 2020), Table D.1 ---------------------------------------------------------------------------
# Its convention: 2 forward FLOPs per active parameter per token, attention ignored, x3 for the backward pass:
# 6·N·tokens, the book's training_flops; one petaflop/s-day is 8.64e+19 FLOPs. All GPT-3 models saw 300B tokens.
@pytest.mark.parametrize("params_m, flops, pf_days", [
    (1320, "2.38E+21", "2.75E+01"), (2650, "4.77E+21", "5.52E+01"), (6660, "1.20E+22", "1.39E+02"),
    (12850, "2.31E+22", "2.68E+02"), (174600, "3.14E+23", "3.64E+03"),
], ids=["GPT-3 XL", "GPT-3 2.7B", "GPT-3 6.7B", "GPT-3 13B", "GPT-3 175B"])
def test_gpt3_table_d1(params_m, flops, pf_days):
    total = value_of("transformer.training_flops", {"P_active": params_m * 10**6, "tokens": 300 * 10**9})
    assert shown_as(total, flops)
    days = value_of("transformer.pf_days", {"n_flop": total})
    assert shown_as(days, pf_days)
    assert read_in_unit(days, "PF-days", "FLOP")[0] == total  # the unit a user types reads back as FLOPs


# -- DeepSeek-V3 technical report (DeepSeek-AI 2024), Table 1: H800 GPU hours and cost at $2 per GPU hour -----------
@pytest.mark.parametrize("gpu_hours, dollars", [
    ("2664e3", "5.328e6"), ("119e3", "0.238e6"), ("5e3", "0.01e6"), ("2788e3", "5.576e6"),
], ids=["pre-training", "context extension", "post-training", "total 2.788M GPU hours, $5.576M"])
def test_deepseek_v3_cost(gpu_hours, dollars):
    cents = value_of("parallel.run_cost", {"chip_hours": gpu_hours, "price": 200})
    assert shown_as(cents, dollars, Fraction(1, 100))
    typed = read_in_unit(sp.Rational(gpu_hours) / 10**6, "M GPU-hours", "chip-hour")[0]
    assert typed == sp.Rational(gpu_hours)


def test_chip_hours_of_a_run():
    """2048 GPUs for one day are 49152 GPU-hours (the report's cluster, Section 3.1)."""
    assert value_of("parallel.chip_hours", {"n_dev": 2048, "t_run": 86400}) == 49152


# Training FLOPs per token of DeepSeek-V3 at sequence length 4096: 250 GFLOPs, printed not in the technical report
# but in Zhao et al. 2025, 'Insights into DeepSeek-V3' (arXiv:2505.09343), Table 2. The catalog's count of the
# weights (MLA's projections, 8 of 256 routed experts and the shared one, the unembedding) with attention's
# products over MLA's head dims (192 for QK^T, 128 for softmax·V) under a causal mask, x3 for training, gives it;
# the same over all 4096 positions (281) or without attention (220, the 225 is 6 x 37.55B) does not.
@pytest.mark.parametrize("attention, printed, reproduces", [
    ("causal", "250", True), ("full", "250", False), ("none", "250", False),
], ids=["causal: 250.4", "full: 281.2", "none: 219.7"])
def test_deepseek_v3_training_flops_per_token(attention, printed, reproduces):
    m = get_model("deepseek-v3")
    weights, full = m.forward_flops_per_token(0), m.forward_flops_per_token(4096)
    forward = {"none": weights, "causal": m.forward_flops_per_token(4096, causal=True), "full": full}[attention]
    assert shown_as(3 * forward, printed, Fraction(1, 10**9)) is reproduces
    if attention == "causal":  # second route: half of attention's products over all 4096 positions
        assert forward == weights + Fraction(full - weights, 2)


# -- the units papers print, typed as answers ------------------------------------------------------------------------
@pytest.mark.parametrize("quantity, given, answer, code", [
    ("transformer.pf_days", "n_flop=3.14e23", "3.64E+03 PF-days", 0),   # GPT-3 Table D.1, 175B
    ("transformer.pf_days", "n_flop=3.14e23", "3.64e3 petaflop/s-days", 0),
    ("transformer.pf_days", "n_flop=3.14e23", "314 ZFLOP", 0),
    ("transformer.pf_days", "n_flop=3.14e23", "0.314 EFLOP", 1),
    ("parallel.run_cost", "chip_hours=2.788e6,price=200", "5.576 M USD", 0),  # DeepSeek-V3 Table 1
    ("parallel.chip_hours", "n_dev=2048,t_run=86400", "49.152 k GPU-hours", 0),
    ("parallel.chip_hours", "n_dev=2048,t_run=86400", "2048 GPU-days", 0),
    ("parallel.chip_hours", "n_dev=2048,t_run=86400", "2048 GPU-weeks", 2),
    ("parallel.chip_hours", "n_dev=2048,t_run=86400", "49152 PF-days", 2),
], ids=["PF-days", "petaflop/s-days", "ZFLOP", "EFLOP off by 1000", "M USD", "k GPU-hours", "GPU-days",
        "an unknown unit", "a unit of another kind"])
def test_answers_in_the_units_papers_print(quantity, given, answer, code):
    from click.testing import CliRunner

    from scalemath.cli import main

    result = CliRunner().invoke(main, ["check", quantity, answer, "--set", given])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output


# -- the conventions themselves -----------------------------------------------------------------------------------
_P, _Pa, _tok, _L, _N, _H, _T = (sym(n) for n in ("P", "P_active", "tokens", "L", "N", "H", "T"))


@pytest.mark.parametrize("name, conventions, expected", [
    ("transformer.training_flops", [], 6 * _Pa * _tok),
    ("transformer.training_flops", ["attention=causal"], (6 * _Pa + 6 * _L * _N * _H * _T) * _tok),
    ("transformer.training_flops", ["palm"], (6 * _Pa + 12 * _L * _N * _H * _T) * _tok),
    ("transformer.training_flops", ["recompute=full"], 8 * _Pa * _tok),
    ("transformer.training_flops", ["attention=full", "recompute=selective"], (6 * _Pa + 16 * _L * _N * _H * _T) * _tok),
    ("parallel.training_time", [], 6 * _P * _tok / (sym("n_dev") * sym("C") * sym("MFU"))),
    ("parallel.training_time", ["recompute=full"], 6 * _P * _tok / (sym("n_dev") * sym("C") * sym("MFU"))),
    ("parallel.training_time", ["recompute=full", "utilisation=hfu"],
     8 * _P * _tok / (sym("n_dev") * sym("C") * sym("HFU"))),
], ids=["the book's 6·P", "causal (PaLM's count halved)", "PaLM's 6N + 12LHQT", "full recomputation 8·P",
        "selective recomputation redoes attention's forward", "the book's run time",
        "MFU does not count recomputation", "Megatron-LM's 8·T·P/(n·X)"])
def test_forms_under_each_convention(name, conventions, expected):
    assert sp.expand(get(name).under(parse(conventions)).expr - expected) == 0


def test_the_book_form_is_the_default_build():
    for name in ("transformer.training_flops", "transformer.mfu", "parallel.step_time", "parallel.training_time",
                 "transformer.flops_per_token"):
        q = get(name)
        assert q.under(parse([])) is q.derivation
        assert q.under(parse(["attention=none", "recompute=none", "utilisation=mfu"])) is q.derivation


def test_kaplan_forward_count_is_a_third_of_the_causal_training_count():
    """Kaplan et al. 2020 (Section 2.1): C_forward = 2N + 2·n_layer·n_ctx·d_attn, and C ≈ 3·C_forward."""
    forward = get("transformer.kaplan_forward_flops_per_token").derivation.expr
    training = get("transformer.training_flops").under(parse(["attention=causal"])).expr.subs({_tok: 1, _Pa: _P})
    assert sp.expand(3 * forward - training) == 0


def test_derive_names_the_conventions_a_run_time_used():
    import json

    from click.testing import CliRunner

    from scalemath.cli import main

    result = CliRunner().invoke(main, ["derive", "parallel.training_time", "--convention", "megatron",
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["conventions"] == {"attention": "full", "recompute": "full", "utilisation": "hfu"}
    # an MFU given where the convention asks for an HFU: a clear message naming the parameters, exit 2
    result = CliRunner().invoke(main, ["derive", "parallel.training_time", "--convention", "megatron",
                                       "--set", "MFU=0.5"])
    assert result.exit_code == 2 and "HFU" in result.output and "Traceback" not in result.output
