"""Read a ring AllReduce and a SHARP AllReduce off one plot of time against size inside an NVLink node: each
large message's time and the speed-up in-switch reduction gives (gpus.md, 'Intra-node collectives' and Quiz 4).

The figure is scalemath.plots.gpu_collective.sharp_data's curves without their labels or shading; the key comes
from the same exact data. The second route is the hand formulas from the catalog's integers: the ring sends
2V(N-1)/N bytes per GPU, SHARP V, over the GPU's NVLink egress, each at least the NVLink collective latency.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ..draws import pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if
from .figure_gpu_collective_read import _chips, _floor

NAME = "figure_sharp_read"
READ_TOL = Fraction(1, 10)
GPUS = (2, 4, 8)
SPAN = 9


def draw(rng):
    chip = get_chip(pick(rng, [c for c in _chips() if get_chip(c).nvlink_switch is not None]))  # SHARP: Hopper on
    n = pick(rng, GPUS)
    vstar = _floor(chip) * chip.nvlink_bytes_per_s  # SHARP leaves the floor here; the ring earlier
    k = int(sp.floor(sp.log(sp.Rational(vstar), 2)))
    lo = k - rng.randint(2, SPAN - 4)
    reject_if(lo < 10 or lo + SPAN > 34, "the plotted sizes are 1 KiB to 16 GiB")
    big = rng.choice([j for j in range(k + 2, lo + SPAN + 1)])
    small = rng.choice([j for j in range(lo, lo + SPAN + 1) if j != big])
    return {"chip": chip.key, "N": n, "x_lo": lo, "x_hi": lo + SPAN, "V_big": 2 ** big, "V_small": 2 ** small}


def _kind(chip: str, n: int, window: tuple[int, int]):
    """Both curves, sizes 2^lo to 2^hi, no labels on the corners and no shading."""
    from ... import quantities as Q
    from ...plots import gpu_collective
    from ...plots.common import Panel

    fig = gpu_collective.sharp_data(Q.Context(chip=chip), n)
    lo, hi = 2 ** window[0], 2 ** window[1]
    panel = fig.panels[0]
    series = tuple(dataclasses.replace(s, label=label, x=tuple(x for x in s.x if lo <= x <= hi),
                                       y=tuple(y for x, y in zip(s.x, s.y) if lo <= x <= hi))
                   for s, label in zip(panel.series, ("ring AllReduce", "SHARP AllReduce")))
    panel = Panel(panel.xlabel, panel.ylabel, panel.xunit, panel.yunit, series, (), legend="upper left")
    return dataclasses.replace(fig, title=fig.title.split(":")[0] + " (read the values off the axes)",
                               panels=(panel,), note="the dotted grid marks 2, 3, ... 9 of each decade")


FIGURE_KINDS.setdefault("sharp", _kind)


def figure(p) -> Spec:
    return Spec("sharp", (p["chip"], p["N"], (p["x_lo"], p["x_hi"])),
                alt="Two AllReduce times against message size on log axes, both flat, then rising; SHARP lower")


def solve(p):
    meta = build(figure(p)).meta
    rings, sharps = dict(zip(meta["sizes_ring"], meta["ring"])), dict(zip(meta["sizes_sharp"], meta["sharp"]))
    ring, sharp = rings[p["V_big"]], sharps[p["V_big"]]
    return [Answer("ring", "the ring AllReduce's time for the large message", ring, "s", rel_tol=READ_TOL),
            Answer("sharp", "the SHARP AllReduce's time for the large message", sharp, "s", rel_tol=READ_TOL),
            Answer("speedup", "how many times faster SHARP is for the large message", ring / sharp, "1",
                   rel_tol=READ_TOL),
            Answer("sharp_other", "the SHARP AllReduce's time for the other message", sharps[p["V_small"]], "s",
                   rel_tol=READ_TOL)]


def check(p):
    chip = get_chip(p["chip"])
    floor, w, n, v = _floor(chip), chip.nvlink_bytes_per_s, p["N"], p["V_big"]
    ring, sharp = max(floor, Fraction(2 * v * (n - 1), n * w)), max(floor, Fraction(v, w))
    return {"ring": ring, "sharp": sharp, "speedup": ring / sharp, "sharp_other": max(floor, Fraction(p["V_small"], w))}


register_figure(NAME, figure)
register(Generator(NAME, "gpu", "Reading SHARP's saving on an AllReduce off a plot",
                   "gpus.md, 'Intra-node collectives' (in-network reduction)", draw, solve, check))
