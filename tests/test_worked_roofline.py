"""The book's worked answers for roofline.md, reproduced through the quantity registry.

One row per worked answer of the reference records whose ids start with
``roofline-`` (the figures are copied here; the tests read nothing outside the
project). The tolerance is the one the book's rounding allows; a comment on each
row cites the record. Where a record carries a correction, the corrected value
is tested and the comment says so.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import sympy as sp

from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic.symbols import sym

B, D, F, N = sym("B"), sym("D"), sym("F"), sym("N")


def value(quantity, given=None, **ctx):
    return evaluate(get(quantity), Context(**ctx), dict(given or {})).value


# (id, quantity, context, given, book value, tolerance: 0 for exact, else pytest.approx keywords)
NUMERIC = [
    # roofline-ex-v5e-critical-intensity: 1.97e14 / 8.2e11 = 240.24, book "about 240" (rel 0.02)
    pytest.param("roofline.critical_intensity", dict(chip="tpu-v5e", dtype="bf16"), {}, 240, dict(rel=0.02),
                 id="ex-v5e-critical-intensity"),
    # roofline-ex-v5e-critical-intensity: the same with C and W_hbm given as the record's numbers
    pytest.param("roofline.critical_intensity", {}, {"C": 197 * 10**12, "W": 82 * 10**10}, 240, dict(rel=0.02),
                 id="ex-v5e-critical-intensity-given"),
    # roofline-ex-dot-product: (2N - 1)/(4N + 2) -> 1/2 for bf16, exact limit
    pytest.param("dot.intensity_limit", dict(dtype="bf16"), {}, Fraction(1, 2), 0,
                 id="ex-dot-product-limit"),
    # roofline-ex-vpu-critical-intensity: CORRECTED value 2.5 = 7e12 / 2.8e12 (v5p table HBM);
    # the book's "around 3" divides by a bandwidth it does not name
    pytest.param("roofline.critical_intensity", dict(chip="tpu-v5p"), {"C": 7 * 10**12}, Fraction(5, 2), 0,
                 id="ex-vpu-critical-intensity-corrected"),
    # roofline-ex-token-batch: 512 sequences x 4096 tokens = 2097152 tokens (book "2M")
    pytest.param("batch.total_tokens", {}, {"n_seq": 512, "T": 4096}, 2097152, 0, id="ex-token-batch-total"),
    # roofline-ex-token-batch: 2097152 / 2048 GPUs = 1024 tokens (book "1k")
    pytest.param("batch.local_tokens", {}, {"n_seq": 512, "T": 4096, "n_dev": 2048}, 1024, 0,
                 id="ex-token-batch-local"),
    # roofline-ex-two-chip-network: D/2 > C/W = 1.97e14 / 4.5e10 = 4377.8, book truncates to 4377 (rel 0.001)
    pytest.param("roofline.critical_intensity", dict(chip="tpu-v5e", dtype="bf16", level="ici-link"), {},
                 4377, dict(rel=0.001), id="ex-two-chip-network-half-d"),
    # roofline-ex-two-chip-network: D > 2C/W = 8755.6, book truncates to 8755 (rel 0.001)
    pytest.param("network.split_matmul.critical_d", dict(chip="tpu-v5e", dtype="bf16"), {},
                 8755, dict(rel=0.001), id="ex-two-chip-network-d"),
    # roofline-q1c: int8 critical intensity 3.94e14 / 8.2e11 = 480.5, book 480 (rel 0.02)
    pytest.param("roofline.critical_intensity", dict(chip="tpu-v5e", dtype="int8"), {}, 480, dict(rel=0.02),
                 id="q1c-int8-critical-intensity"),
    # roofline-q1c: int8 x int8 compute-bound above (C_int8 / W_hbm) / 2 = 240.2, book 240 (rel 0.02)
    pytest.param("matmul.critical_batch_approx", dict(chip="tpu-v5e", dtype="int8"), {}, 240, dict(rel=0.02),
                 id="q1c-int8-critical-batch"),
    # roofline-q2: int8 weights, bf16 activations and compute: 2B > 240, B > 120 (exact 120.1; rel 0.02)
    pytest.param("matmul.critical_batch_approx", dict(chip="tpu-v5e", dtype="bf16", weight_dtype="int8"), {},
                 120, dict(rel=0.02), id="q2-weight-only-int8"),
    # roofline-q3: CORRECTED, the exact crossover for D = F = 4096 is B* = 136.1 (the book only says
    # the smaller matrix "almost doubles" the batch); C = 1.97e14 and W = 8.2e11 given as in the record
    pytest.param("matmul.critical_batch", dict(dtype="bf16", weight_dtype="int8"),
                 {"C": 197 * 10**12, "W": 82 * 10**10, "D": 4096, "F": 4096}, 136.1, dict(abs=0.05),
                 id="q3-corrected-d4096"),
    # roofline-q3: CORRECTED, D = F = 1024 gives B* = 226.3
    pytest.param("matmul.critical_batch", dict(dtype="bf16", weight_dtype="int8"),
                 {"C": 197 * 10**12, "W": 82 * 10**10, "D": 1024, "F": 1024}, 226.3, dict(abs=0.05),
                 id="q3-corrected-d1024"),
    # roofline-q4: int8[B,D] x int8[B,D,F]: 2BDF/(BD + BDF + BF) is about 2 (rel 0.05); any real shape
    pytest.param("matmul.batched_weights_intensity", dict(dtype="int8"), {"B": 64, "D": 4096, "F": 14336},
                 2, dict(rel=0.05), id="q4-batched-weights"),
    # roofline-q5: H100 with the dense rate C = 9.89e14 given: 9.89e14 / 3.35e12 = 295.2, book 295 (rel 0.01)
    pytest.param("matmul.critical_batch_approx", dict(chip="h100", dtype="bf16"), {"C": 989 * 10**12},
                 295, dict(rel=0.01),
                 id="q5-h100-critical-batch"),
    # roofline-q5: the same threshold read as the critical intensity C/W of the H100
    pytest.param("roofline.critical_intensity", dict(chip="h100", dtype="bf16"), {"C": 989 * 10**12},
                 295, dict(rel=0.01),
                 id="q5-h100-critical-intensity"),
]


@pytest.mark.parametrize("quantity, ctx, given, book, tol", NUMERIC)
def test_worked_numeric(quantity, ctx, given, book, tol):
    got = value(quantity, given, **ctx)
    assert got.is_number
    if tol == 0:
        assert got == sp.Rational(book)
    else:
        assert float(got) == pytest.approx(float(book), **tol)


def test_q3_integer_crossovers_and_ratio():
    # roofline-q3, CORRECTED: brute force over integer batches gives 137 and 227; the ratio is 1.66
    # ("almost doubles" in the book)
    args = dict(dtype="bf16", weight_dtype="int8")
    common = {"C": 197 * 10**12, "W": 82 * 10**10}
    big = value("matmul.critical_batch", {**common, "D": 4096, "F": 4096}, **args)
    small = value("matmul.critical_batch", {**common, "D": 1024, "F": 1024}, **args)
    assert math.ceil(big) == 137 and math.ceil(small) == 227
    assert float(small / big) == pytest.approx(1.66, abs=0.005)


# (id, quantity, context, expected expression in the book's letters)
SYMBOLIC = [
    # roofline-ex-dot-product: bf16 dot product intensity (2N - 1)/(4N + 2)
    pytest.param("dot.intensity", dict(dtype="bf16"), (2 * N - 1) / (4 * N + 2), id="ex-dot-product-intensity"),
    # roofline-ex-two-chip-network: T_math = BDF / 1.97e14
    pytest.param("network.split_matmul.t_math", dict(chip="tpu-v5e", dtype="bf16"),
                 B * D * F / (197 * 10**12), id="ex-two-chip-network-t-math"),
    # roofline-ex-two-chip-network: T_comms = 2BF / 4.5e10 (full duplex, not 4BF)
    pytest.param("network.split_matmul.t_comms", dict(chip="tpu-v5e", dtype="bf16"),
                 2 * B * F / (45 * 10**9), id="ex-two-chip-network-t-comms"),
    # roofline-q1b: an int8 matmul performs 2BDF OPs
    pytest.param("matmul.flops", dict(chip="tpu-v5e", dtype="int8"), 2 * B * D * F, id="q1b-int8-ops"),
    # roofline-q1c: int8 intensity is about 2B when B << D, F
    pytest.param("matmul.intensity_approx", dict(dtype="int8"), 2 * B, id="q1c-int8-intensity-approx"),
    # roofline-q1c: the exact int8 intensity 2BDF / (BD + DF + BF)
    pytest.param("matmul.intensity", dict(dtype="int8"), 2 * B * D * F / (B * D + D * F + B * F),
                 id="q1c-int8-intensity"),
    # roofline-q1d: T_math = 2BDF / 3.94e14
    pytest.param("matmul.t_math", dict(chip="tpu-v5e", dtype="int8"), 2 * B * D * F / (394 * 10**12),
                 id="q1d-t-math"),
    # roofline-q1d: T_comms = (BD + DF + BF) / 8.2e11
    pytest.param("matmul.t_comms", dict(chip="tpu-v5e", dtype="int8"), (B * D + D * F + B * F) / (82 * 10**10),
                 id="q1d-t-comms"),
    # roofline-q1d: lower bound max(T_math, T_comms)
    pytest.param("matmul.t_lower", dict(chip="tpu-v5e", dtype="int8"),
                 sp.Max(2 * B * D * F / (394 * 10**12), (B * D + D * F + B * F) / (82 * 10**10)), id="q1d-lower"),
    # roofline-q1d: upper bound T_math + T_comms
    pytest.param("matmul.t_upper", dict(chip="tpu-v5e", dtype="int8"),
                 2 * B * D * F / (394 * 10**12) + (B * D + D * F + B * F) / (82 * 10**10), id="q1d-upper"),
    # roofline-q4: 2BDF / (BD + BDF + BF) for int8
    pytest.param("matmul.batched_weights_intensity", dict(dtype="int8"),
                 2 * B * D * F / (B * D + B * D * F + B * F), id="q4-batched-weights-intensity"),
]


@pytest.mark.parametrize("quantity, ctx, expected", SYMBOLIC)
def test_worked_symbolic(quantity, ctx, expected):
    got = value(quantity, **ctx)
    assert sp.simplify(got - expected) == 0


def test_q4_intensity_tends_to_two():
    # roofline-q4: with BDF dominating, the int8 intensity tends to 2 however large D and F get
    got = value("matmul.batched_weights_intensity", dtype="int8")
    assert sp.limit(sp.limit(got, D, sp.oo), F, sp.oo) == 2
