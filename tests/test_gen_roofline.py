"""The roofline generators: hand-picked parameters, values worked out by hand.

Each row calls the generator module's ``solve`` (the engine) and ``check`` (plain
Fractions) directly and compares both with the expected value written here.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.catalog.hardware import get_chip
from scalemath.problems.generators import (
    batched_weights, dot_product, matmul_bounds, matmul_critical_batch, split_matmul, token_batch
)
from scalemath.problems import registry
from scalemath.problems.registry import Reject

E12, E14 = 10**12, 10**14


def assert_answers(module, params, expected):
    solved, checked = registry.exact_routes(module, params, expected)
    assert sorted(solved) == sorted(expected) == sorted(checked)
    for name, want in expected.items():
        assert solved[name] == sp.Rational(want), name
        assert Fraction(checked[name]) == Fraction(want), name


# -- dot_product ---------------------------------------------------------------------

DOT = [
    # bf16, N = 1024: 1024 multiplies + 1023 adds = 2047; bytes 2*1024*2 + 2 = 4098; limit 1/2
    pytest.param({"dtype": "bf16", "N": 1024},
                 {"flops": 2047, "bytes": 4098, "intensity": Fraction(2047, 4098),
                  "intensity_limit": Fraction(1, 2)}, id="bf16-1024"),
    # fp32, N = 2^20: 2^21 - 1 = 2097151 FLOPs; 2*2^20*4 + 4 = 8388612 bytes; limit 1/4
    pytest.param({"dtype": "fp32", "N": 2**20},
                 {"flops": 2097151, "bytes": 8388612, "intensity": Fraction(2097151, 8388612),
                  "intensity_limit": Fraction(1, 4)}, id="fp32-2^20"),
    # int8, N = 4096: 8191 OPs; 2*4096 + 1 = 8193 bytes; limit 1
    pytest.param({"dtype": "int8", "N": 4096},
                 {"flops": 8191, "bytes": 8193, "intensity": Fraction(8191, 8193), "intensity_limit": 1},
                 id="int8-4096"),
]


@pytest.mark.parametrize("params, expected", DOT)
def test_dot_product(params, expected):
    assert_answers(dot_product, params, expected)


# -- token_batch ---------------------------------------------------------------------

TOKENS = [
    # the book's example: 512 * 4096 = 2097152 tokens; / 2048 = 1024
    pytest.param({"n_seq": 512, "T": 4096, "n_dev": 2048}, {"total_tokens": 2097152, "local_tokens": 1024},
                 id="book-512x4096-on-2048"),
    # 96 * 2048 = 196608; / 384 = 512
    pytest.param({"n_seq": 96, "T": 2048, "n_dev": 384}, {"total_tokens": 196608, "local_tokens": 512},
                 id="96x2048-on-384"),
]


@pytest.mark.parametrize("params, expected", TOKENS)
def test_token_batch(params, expected):
    assert_answers(token_batch, params, expected)


class Scripted:
    """An rng whose randrange returns the indices given, in order."""

    def __init__(self, *indices):
        self.indices = list(indices)

    def randrange(self, n):
        return self.indices.pop(0)


@pytest.mark.parametrize("s, t, n", [
    (8, 512, 8192),   # 4096 tokens on 8192 devices: half a token each
    (8, 512, 384),    # 4096 / 384 = 10.67: not whole
], ids=["below-one", "not-whole"])
def test_token_batch_rejects(s, t, n):
    rng = Scripted(token_batch.SEQUENCES.index(s), token_batch.SEQ_LENS.index(t), token_batch.DEVICES.index(n))
    with pytest.raises(Reject, match="whole number of tokens"):
        token_batch.draw(rng)


# -- matmul_bounds -------------------------------------------------------------------

# v5e, int8 weights, bf16 activations, B = 256, D = 4096, F = 14336:
# FLOPs = 2*256*4096*14336 = 30064771072; bytes = 2*256*4096 + 4096*14336 + 2*256*14336
# = 2097152 + 58720256 + 7340032 = 68157440; T_math = 30064771072/1.97e14 = 152.6 us,
# T_comms = 68157440/8.2e11 = 83.1 us, so the lower bound is T_math.
V5E_MATH, V5E_COMMS = Fraction(30064771072, 197 * E12), Fraction(68157440, 82 * 10**10)
# H100, fp8, B = 16, D = 8192, F = 28672: FLOPs = 2*16*8192*28672 = 7516192768;
# bytes = 16*8192 + 8192*28672 + 16*28672 = 131072 + 234881024 + 458752 = 235470848;
# T_math = 3.80 us, T_comms = 235470848/3.35e12 = 70.3 us, so the lower bound is T_comms.
H100_MATH, H100_COMMS = Fraction(7516192768, 198 * 10**13), Fraction(235470848, 335 * 10**10)
BOUNDS = [
    pytest.param({"chip": "tpu-v5e", "dtype": "bf16", "weight_dtype": "int8", "model": "LLaMA-3 8B",
                  "B": 256, "D": 4096, "F": 14336},
                 {"flops": 30064771072, "bytes": 68157440, "t_math": V5E_MATH, "t_comms": V5E_COMMS,
                  "t_lower": V5E_MATH, "t_upper": V5E_MATH + V5E_COMMS}, id="v5e-int8-weights"),
    pytest.param({"chip": "h100", "dtype": "fp8", "weight_dtype": "fp8", "model": "LLaMA-2 70B",
                  "B": 16, "D": 8192, "F": 28672},
                 {"flops": 7516192768, "bytes": 235470848, "t_math": H100_MATH, "t_comms": H100_COMMS,
                  "t_lower": H100_COMMS, "t_upper": H100_MATH + H100_COMMS}, id="h100-fp8"),
]


@pytest.mark.parametrize("params, expected", BOUNDS)
def test_matmul_bounds(params, expected):
    assert_answers(matmul_bounds, params, expected)


# -- matmul_critical_batch -----------------------------------------------------------

def exact_batch(c, w, b_act, b_wt, d, f):
    """Hand solution of 2BDF/C = (b_act B D + b_wt D F + b_act B F)/W for B."""
    return Fraction(c) * b_wt * d * f / (2 * d * f * w - Fraction(c) * b_act * (d + f))


CRITICAL = [
    # v5e, int8 weights (Q2): approx 1.97e14 * 1 / (2 * 8.2e11) = 4925/41 = 120.1;
    # exact 1.97e14 * 58720256 / (2 * 58720256 * 8.2e11 - 1.97e14 * 2 * 18432) = 129.9
    pytest.param({"chip": "tpu-v5e", "dtype": "bf16", "weight_dtype": "int8", "model": "LLaMA-3 8B",
                  "D": 4096, "F": 14336},
                 {"critical_batch_approx": Fraction(4925, 41),
                  "critical_batch": exact_batch(197 * E12, 82 * 10**10, 2, 1, 4096, 14336)}, id="v5e-int8-weights"),
    # v5e, int4 weights: approx halves to 4925/82 = 60.1; exact 35302400/543451 = 64.96
    pytest.param({"chip": "tpu-v5e", "dtype": "bf16", "weight_dtype": "int4", "model": "LLaMA-3 8B",
                  "D": 4096, "F": 14336},
                 {"critical_batch_approx": Fraction(4925, 82), "critical_batch": Fraction(35302400, 543451)},
                 id="v5e-int4-weights"),
    # H100, int8 x int8: approx 1.98e15 / (2 * 3.35e12) = 19800/67 = 295.5; exact with b = 1 everywhere
    pytest.param({"chip": "h100", "dtype": "int8", "weight_dtype": "int8", "model": "LLaMA-2 70B",
                  "D": 8192, "F": 28672},
                 {"critical_batch_approx": Fraction(19800, 67),
                  "critical_batch": exact_batch(198 * 10**13, 335 * 10**10, 1, 1, 8192, 28672)}, id="h100-int8"),
    # TPU v3, bf16 x bf16: approx = C/W = 1.4e14 / 9e11 = 1400/9 = 155.6; exact 164.1
    pytest.param({"chip": "tpu-v3", "dtype": "bf16", "weight_dtype": "bf16", "model": "LLaMA-2 7B",
                  "D": 4096, "F": 11008},
                 {"critical_batch_approx": Fraction(1400, 9),
                  "critical_batch": exact_batch(140 * E12, 900 * 10**9, 2, 2, 4096, 11008)}, id="v3-bf16"),
]


@pytest.mark.parametrize("params, expected", CRITICAL)
def test_matmul_critical_batch(params, expected):
    assert_answers(matmul_critical_batch, params, expected)


def test_exact_hand_value():
    # spot check of the hand formula itself: 1.97e14 * 4096^2 / (2 * 4096^2 * 8.2e11 - 1.97e14 * 2 * 8192)
    # is 136.08 (roofline Q3, corrected)
    assert float(exact_batch(197 * E12, 82 * 10**10, 2, 1, 4096, 4096)) == pytest.approx(136.08, abs=0.01)


def test_matmul_critical_batch_rejects_no_crossover(monkeypatch):
    # D = F = 64 on a TPU v5e in bf16: 2 D F W = 6.7e15 < C * 2 * (D + F) = 5.0e16, so T_math < T_comms
    # at every B and the draw is rejected by name
    monkeypatch.setattr(matmul_critical_batch, "MODEL_SHAPES", (("toy", 64, 64),))
    monkeypatch.setattr(matmul_critical_batch, "pick_chip", lambda rng, **kw: get_chip("tpu-v5e"))
    rng = Scripted(0, 0)  # the first mix (bf16 x bf16), the toy shape
    with pytest.raises(Reject, match="compute-bound"):
        matmul_critical_batch.draw(rng)


# -- batched_weights -----------------------------------------------------------------

BATCHED = [
    # int8, B = 16, D = 2048, F = 8192: 2*2048*8192 / (2048 + 2048*8192 + 8192) = 33554432/16787456,
    # just under 2 (B cancels, so doubling the batch gives the same)
    pytest.param({"dtype": "int8", "B": 16, "D": 2048, "F": 8192},
                 {"intensity": Fraction(33554432, 16787456), "intensity_doubled": Fraction(33554432, 16787456)},
                 id="int8"),
    # bf16, B = 4, D = F = 512: 2*512*512 / (2 * (512 + 262144 + 512)) = 524288/526336, just under 1
    pytest.param({"dtype": "bf16", "B": 4, "D": 512, "F": 512},
                 {"intensity": Fraction(524288, 526336), "intensity_doubled": Fraction(524288, 526336)}, id="bf16"),
]


@pytest.mark.parametrize("params, expected", BATCHED)
def test_batched_weights(params, expected):
    assert_answers(batched_weights, params, expected)


# -- split_matmul --------------------------------------------------------------------

SPLIT = [
    # v5e (book example), B = 256, D = 4096, F = 14336: T_math = 256*4096*14336/1.97e14 = 76.3 us;
    # T_comms = 2*256*14336/4.5e10 = 163.1 us; D* = 2 * 1.97e14 / 4.5e10 = 78800/9 = 8755.6
    pytest.param({"chip": "tpu-v5e", "model": "LLaMA-3 8B", "B": 256, "D": 4096, "F": 14336},
                 {"t_math": Fraction(256 * 4096 * 14336, 197 * E12), "t_comms": Fraction(2 * 256 * 14336, 45 * 10**9),
                  "critical_d": Fraction(78800, 9)}, id="v5e"),
    # v6e, B = 1024, D = 8192, F = 28672: D* = 2 * 9.2e14 / 9e10 = 184000/9 = 20444
    pytest.param({"chip": "tpu-v6e", "model": "LLaMA-3 70B", "B": 1024, "D": 8192, "F": 28672},
                 {"t_math": Fraction(1024 * 8192 * 28672, 920 * E12), "t_comms": Fraction(2 * 1024 * 28672, 90 * 10**9),
                  "critical_d": Fraction(184000, 9)}, id="v6e"),
]


@pytest.mark.parametrize("params, expected", SPLIT)
def test_split_matmul(params, expected):
    assert_answers(split_matmul, params, expected)


# -- every generator draws, checks and renders -----------------------------------------

