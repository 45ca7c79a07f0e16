"""Read a GPU collective's time against its size inside an NVLink node off a plot: the latency floor, where it
ends, and a large message's time (gpus.md, 'Intra-node collectives'; the floor is the catalog's NVLink collective
latency).

The figure is scalemath.plots.gpu_collective's own data (time = max(floor, the engine's ring form gpu.*.time))
without the corner's label or the shaded regime; the key is read from the same exact data. The second route is
the hand formulas from the catalog's integers: a ring AllGather moves (N-1)/N of V per GPU, an AllReduce twice
that, over the GPU's NVLink egress.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import default_catalog, get_chip
from ..draws import choice, pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if

NAME = "figure_gpu_collective_read"
READ_TOL = Fraction(1, 10)  # read off a log axis with a minor grid
COLLECTIVES = {"all-gather": ("AllGather", 1), "all-reduce": ("AllReduce", 2)}  # bytes per byte of a ring pass
GPUS = (4, 8)
CHOICES = ("latency-bound: its time is the floor", "bandwidth-bound: its time grows with its size")
SPAN = 9


def _chips() -> list[str]:
    return [c.key for c in default_catalog() if c.family == "gpu" and c.nvlink_bytes_per_s]


def _per_byte(chip, collective: str, n: int) -> Fraction:
    return Fraction(COLLECTIVES[collective][1] * (n - 1), n * chip.nvlink_bytes_per_s)


def _floor(chip) -> Fraction:
    return Fraction(chip.collective_latency("nvlink").value, 10**9)


def draw(rng):
    chip = get_chip(pick(rng, _chips()))
    collective = pick(rng, tuple(COLLECTIVES))
    n = pick(rng, GPUS)
    vstar = _floor(chip) / _per_byte(chip, collective, n)
    k = int(sp.floor(sp.log(sp.Rational(vstar), 2)))
    lo = k - rng.randint(2, SPAN - 3)
    reject_if(lo < 10 or lo + SPAN > 34, "the plotted sizes are 1 KiB to 16 GiB")
    ask = rng.choice([j for j in range(lo + 1, lo + SPAN) if abs(j - k) >= 2])
    big = rng.choice([j for j in range(k + 2, lo + SPAN + 1)])
    reject_if(big == ask, "two questions about the same message")
    return {"chip": chip.key, "collective": collective, "N": n, "x_lo": lo, "x_hi": lo + SPAN,
            "V_asked": 2 ** ask, "V_big": 2 ** big}


def _kind(chip: str, collective: str, n: int, window: tuple[int, int]):
    """The in-node curve alone, sizes 2^lo to 2^hi, no corner label and no shading."""
    from ... import quantities as Q
    from ...plots import gpu_collective
    from ...plots.common import Panel

    fig = gpu_collective.data(Q.Context(chip=chip), collective, n, 2)
    lo, hi = 2 ** window[0], 2 ** window[1]
    panel = fig.panels[0]
    main = panel.series[0]
    keep = [i for i, x in enumerate(main.x) if lo <= x <= hi]
    series = (dataclasses.replace(main, label=f"{COLLECTIVES[collective][0]} time", x=tuple(main.x[i] for i in keep),
                                  y=tuple(main.y[i] for i in keep)),)
    panel = Panel(panel.xlabel, panel.ylabel, panel.xunit, panel.yunit, series, (), legend="upper left")
    return dataclasses.replace(fig, title=f"{COLLECTIVES[collective][0]} over {n} x {get_chip(chip).name} in one "
                                          "NVLink node (read the values off the axes)", panels=(panel,),
                               note="the dotted grid marks 2, 3, ... 9 of each decade")


FIGURE_KINDS.setdefault("gpu-collective", _kind)


def figure(p) -> Spec:
    return Spec("gpu-collective", (p["chip"], p["collective"], p["N"], (p["x_lo"], p["x_hi"])),
                alt="A GPU collective's time against message size on log axes: flat, then rising")


def solve(p):
    meta = build(figure(p)).meta
    cross, floor = meta["crossover_inside"], sp.Rational(meta["floors"][0].numerator, meta["floors"][0].denominator)
    times = dict(zip(meta["sizes"], meta["inside"]))
    name = COLLECTIVES[p["collective"]][0]
    return [Answer("floor", f"the {name}'s time for small messages", floor, "s", rel_tol=READ_TOL),
            Answer("crossover", "the message size where the time starts to grow", cross, "byte", rel_tol=READ_TOL),
            choice("regime", "is the asked message latency-bound or bandwidth-bound?", CHOICES,
                   0 if p["V_asked"] <= cross else 1),
            Answer("time_big", f"the time of the large {name}", times[p["V_big"]], "s", rel_tol=READ_TOL)]


def check(p):
    chip = get_chip(p["chip"])
    per_byte, floor = _per_byte(chip, p["collective"], p["N"]), _floor(chip)
    vstar = floor / per_byte
    return {"floor": floor, "crossover": vstar, "regime": 0 if p["V_asked"] <= vstar else 1,
            "time_big": max(floor, p["V_big"] * per_byte)}


register_figure(NAME, figure)
register(Generator(NAME, "gpu", "Reading a GPU collective's latency floor and bandwidth off a plot",
                   "gpus.md, 'Intra-node collectives'", draw, solve, check))
