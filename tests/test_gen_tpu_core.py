"""Generators for a TPU core's internals: a matmul padded to the MXU with the systolic fill bubble, and
reductions on the VPU over sublanes or lanes. Rows hold the book's rules (tpus.md) beside hand counts."""

from fractions import Fraction

import pytest

from scalemath.problems.generators import tpu_mxu_padding as mxu
from scalemath.problems.generators import tpu_vpu_reduce as vpu


def answers(gen, p):
    return {a.name: a.value for a in gen.solve(p)}


@pytest.mark.parametrize("chip, D, F, B, side", [
    # tpus.md, Key Takeaways: pad to 128, to 256 on v6e: D = F = 200 fills 200²/256² of a v6e's array
    ("tpu-v6e", 200, 200, 1024, 256), ("tpu-v5e", 200, 200, 1024, 128), ("tpu-v5p", 4000, 13824, 64, 128),
    ("tpu7x", 576, 11008, 8, 256)], ids=["v6e-200", "v5e-200", "v5p", "tpu7x"])
def test_padding_and_fill(chip, D, F, B, side):
    p = {"chip": chip, "D": D, "F": F, "B": B}
    a, second = answers(mxu, p), mxu.check(p)
    dp, fp = -(-D // side) * side, -(-F // side) * side
    assert a["run"] == 2 * B * dp * fp == second["run"]
    assert a["useful"] == Fraction(D * F, dp * fp) == second["useful"]
    assert a["fill"] == Fraction(B, B + 2 * (side - 1))


def test_v6e_pads_twice_as_far():
    """The same small matmul uses a quarter as much of a 256-wide array as of a 128-wide one."""
    p5, p6 = ({"chip": c, "D": 128, "F": 128, "B": 8} for c in ("tpu-v5e", "tpu-v6e"))
    assert answers(mxu, p6)["useful"] * 4 == answers(mxu, p5)["useful"] == 1


@pytest.mark.parametrize("B, D, rows, cols", [
    (8, 128, 6, 7),          # one register: 3 shuffles + 3 adds (tpus.md, Appendix A); 7 XLU steps across lanes
    (64, 256, 2 * 7 + 2 * 6, 8 * 1 + 8 * 7),
    (1024, 4096, 32 * 127 + 32 * 6, 128 * 31 + 128 * 7)], ids=["one-register", "64x256", "1024x4096"])
def test_vpu_counts(B, D, rows, cols):
    for chip in vpu.CHIPS:
        for axis in ("rows", "cols"):
            p = {"chip": chip, "B": B, "D": D, "axis": axis}
            a = answers(vpu, p)
            assert (a["over_rows"], a["over_cols"]) == (rows, cols) == tuple(vpu.check(p).values())
