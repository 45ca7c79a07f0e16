"""Read a ragged (top-k) AllToAll inside an NVLink node off a plot of its time against k, the destinations each
token goes to (gpus.md, 'Appendix B: More networking details'): the dense AllToAll's time, the k at which the
book's approximation reaches it, the expected cost at a k read off its curve, how much the approximation
overstates it, and on which side of that corner a k lies.

The figure is scalemath.plots.gpu_collective.ragged_data's three curves (the book's min(k/N, 1) approximation,
the expected cost with k random destinations, the dense AllToAll) with labels that do not give the formulas away
and without the k = N mark; the key is read from the same exact data. The second route is the hand formulas in
fractions from the catalog's integers: a dense AllToAll sends V(N-1)/N^2 bytes out of each GPU over its NVLink
egress, the approximation scales it by min(k/N, 1), the expected cost by 1 - ((N-1)/N)^k.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ..draws import choice, pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register
from .figure_gpu_collective_read import _chips

NAME = "figure_ragged_read"
READ_TOL = Fraction(1, 10)  # read off a linear axis with a minor grid
GPUS = (4, 6, 8)
SIZES = tuple(range(26, 33))  # 64 MiB .. 4 GiB
CHOICES = ("below the dense cost: some of the GPUs receive nothing from a token",
           "at the dense cost: every GPU already receives from every token")
LABELS = ("the book's approximation", "expected cost, random destinations", "dense AllToAll")


def draw(rng):
    chip = pick(rng, _chips())
    n = pick(rng, GPUS)
    k_read, k_over = rng.sample(range(2, 2 * n + 1), 2)
    k_regime = pick(rng, [k for k in range(2, 2 * n + 1) if k != n])
    return {"chip": chip, "N": n, "V": 2 ** pick(rng, SIZES), "k_read": k_read, "k_over": k_over,
            "k_regime": k_regime}


def _kind(chip: str, n: int, nbytes: int):
    """The three curves over k = 1 .. 2N, no mark at k = N and no formula in the legend."""
    from ... import quantities as Q
    from ...plots import gpu_collective
    from ...plots.common import Panel

    fig = gpu_collective.ragged_data(Q.Context(chip=chip), n, nbytes)
    panel = fig.panels[0]
    series = tuple(dataclasses.replace(s, label=label) for s, label in zip(panel.series, LABELS))
    panel = Panel(panel.xlabel, panel.ylabel, panel.xunit, panel.yunit, series, (), xlog=False, ylog=False,
                  legend="lower right")
    return dataclasses.replace(fig, title=fig.title + " (read the values off the axes)", panels=(panel,),
                               note="k on the x axis takes whole values; the dotted grid divides each labelled step "
                                    "into five")


FIGURE_KINDS.setdefault("ragged", _kind)


def figure(p) -> Spec:
    return Spec("ragged", (p["chip"], p["N"], p["V"]),
                alt="A ragged AllToAll's time against k: a straight line that levels off at the dense cost, and a "
                    "curve below it that approaches the dense cost more slowly")


def solve(p):
    meta = build(figure(p)).meta
    ks = list(meta["k"])
    approx, exact, dense = meta["approx"], meta["exact"], meta["dense"]
    full = sp.Integer(next(k for k, a in zip(ks, approx) if a >= dense))
    at = {k: i for i, k in enumerate(ks)}
    over = approx[at[p["k_over"]]] / exact[at[p["k_over"]]]
    return [Answer("dense", "the dense AllToAll's time", dense, "s", rel_tol=READ_TOL),
            Answer("k_full", "the smallest k at which the book's approximation reaches the dense cost", full, "1",
                   rel_tol=Fraction(0)),
            Answer("expected", "the expected time at the asked k", exact[at[p["k_read"]]], "s", rel_tol=READ_TOL),
            Answer("overstate", "how many times the approximation's time exceeds the expected time at the other k",
                   over, "1", rel_tol=READ_TOL),
            choice("regime", "whether the approximation is below the dense cost or at it, at the k asked in (e)", CHOICES,
                   int(bool(approx[at[p["k_regime"]]] >= dense)))]


def check(p):
    chip, n, v = get_chip(p["chip"]), p["N"], p["V"]
    dense = Fraction(v * (n - 1), n * n * chip.nvlink_bytes_per_s)

    def approx(k):
        return min(Fraction(k, n), 1) * dense

    def expected(k):
        return (1 - Fraction(n - 1, n) ** k) * dense

    return {"dense": dense, "k_full": n, "expected": expected(p["k_read"]),
            "overstate": approx(p["k_over"]) / expected(p["k_over"]), "regime": int(p["k_regime"] >= n)}


register_figure(NAME, figure)
register(Generator(NAME, "gpu", "Reading a ragged AllToAll's cost against k off a plot",
                   "gpus.md, 'Appendix B: More networking details' (the ragged AllToAll)", draw, solve, check))
