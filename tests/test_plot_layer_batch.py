"""The book figure inference-batch-scaling (inference.md, Appendix A, 'How real is the batch size > 240 rule?'): a
D = 8192, F = 32768 feed-forward layer sharded 4 ways, its time and throughput against batch, held to a hand count
from TPU v5e's published figures (197e12 bf16 FLOP/s, 820e9 bytes/s of HBM) and the appendix's own reasoning."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scalemath import quantities as Q
from scalemath.errors import BadValueError
from scalemath.plots import roofline

C, W = Fraction(197 * 10**12), Fraction(820 * 10**9)
D, F, N = 8192, 32768, 4


def _hand(B):
    """Up- and down-projection on one chip, bf16 everywhere, each max(FLOPs / C, bytes / W)."""
    f = F // N
    one = max(Fraction(2 * B * D * f) / C, Fraction(2 * (B * D + B * f + D * f)) / W)
    return 2 * one  # the down-projection moves the same bytes and does the same FLOPs


@pytest.fixture(scope="module")
def fig():
    return roofline.layer_batch_data(Q.Context(chip="tpu-v5e", dtype="bf16"), D, F, N)


@pytest.mark.parametrize("B", [1, 32, 224, 256, 512, 1024], ids=lambda b: f"B{b}")
def test_layer_time_is_the_hand_count(fig, B):
    i = fig.meta["batch"].index(B)
    assert Fraction(str(fig.meta["time"][i])) == _hand(B)
    assert Fraction(str(fig.meta["throughput"][i])) == B / _hand(B)


def test_flat_on_the_weights_then_linear(fig):
    # the appendix: weight loading dominates below the critical batch, 2 D F bytes over 4 chips = 327 us on v5e;
    # the book's rule puts the turn at C / W = 240, the exact bytes (activations too) at 2 D f W / ... = 255.3
    crit = fig.meta["critical_batch"]
    f = F // N
    assert Fraction(str(crit)) == C * 2 * D * f / (2 * D * f * W - C * 2 * (D + f))
    assert 240 < C / W < crit < 256
    assert float(fig.meta["time"][0]) == pytest.approx(2 * D * F * 2 / N / 820e9, rel=0.01)
    t = fig.meta["time"]
    assert t[fig.meta["batch"].index(1024)] / t[fig.meta["batch"].index(512)] == pytest.approx(2, rel=1e-12)


def test_chips_must_divide_f():
    with pytest.raises(BadValueError, match="does not split over 3 chips"):
        roofline.layer_batch_data(Q.Context(chip="tpu-v5e", dtype="bf16"), D, F, 3)
