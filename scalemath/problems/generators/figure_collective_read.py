"""Read off an AllGather's time against its size where hop latency stops dominating (sharding.md, S-5).

The figure is scalemath.plots.collective's own data (an AllGather on one bidirectional ring of a TPU
slice: time = max(t_hop N / 2, V / W_ici)) without the crossover's label or the shaded regime; the key is
read from the same exact data. The second route is the hand formulas: V* = t_hop N W_link (W_ici = 2
W_link both ways), the flat floor t_hop N / 2 and V / (2 W_link) above V*, from the catalog's integers.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...catalog.hardware import default_catalog, get_chip
from ..draws import choice, pick
from ..figures import Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if

NAME = "figure_collective_read"
#: Reading a value off a log axis with a minor grid: within 10 % of the key.
READ_TOL = Fraction(1, 10)
RINGS = (4, 8, 16)
CHOICES = ("latency-bound: its time is the hops' floor", "bandwidth-bound: its time grows with its size")
SPAN = 9  # the plot shows sizes from 2**x_lo to 2**(x_lo + SPAN) bytes


def _chips() -> list[str]:
    return [c.key for c in default_catalog() if c.family == "tpu" and c.hop_latency_ns and c.ici_link_bytes_per_s]


def draw(rng):
    chip = get_chip(pick(rng, _chips()))
    ring = pick(rng, RINGS)
    vstar = Fraction(chip.hop_latency_ns, 10**9) * ring * chip.ici_link_bytes_per_s
    k = int(sp.floor(sp.log(sp.Rational(vstar), 2)))  # 2**k <= V* < 2**(k+1)
    lo = k - rng.randint(2, SPAN - 3)
    reject_if(lo < 10 or lo + SPAN > 34, "the plotted sizes are 1 KiB to 16 GiB")
    ask = rng.choice([j for j in range(lo + 1, lo + SPAN) if abs(j - k) >= 2 and not (k < j <= k + 1)])
    big = rng.choice([j for j in range(k + 2, lo + SPAN + 1)])
    reject_if(big == ask, "two questions about the same message")
    return {"chip": chip.key, "N": ring, "x_lo": lo, "x_hi": lo + SPAN, "asked_log2": ask, "V_asked": 2 ** ask,
            "big_log2": big, "V_big": 2 ** big}


def figure(p) -> Spec:
    return Spec("collective", (p["chip"], p["N"], (p["x_lo"], p["x_hi"])),
                alt="An AllGather's time against message size on log axes: flat, then rising")


def solve(p):
    fig = build(figure(p))
    meta = fig.meta
    cross = meta["crossover"]
    times = dict(zip(meta["sizes"], meta["times"]))
    floor = times[meta["sizes"][0]]  # the smallest size is latency-bound
    return [Answer("crossover", "the message size where latency stops dominating", cross, "byte",
                   rel_tol=READ_TOL),
            Answer("floor", "the AllGather's time for small messages", floor, "s", rel_tol=READ_TOL),
            choice("regime", "is the asked message latency-bound or bandwidth-bound?", CHOICES,
                   0 if p["V_asked"] <= cross else 1),
            Answer("time_big", "the time to AllGather the large message", times[p["V_big"]], "s",
                   rel_tol=READ_TOL)]


def check(p):
    chip = get_chip(p["chip"])
    t_hop, link, n = Fraction(chip.hop_latency_ns, 10**9), chip.ici_link_bytes_per_s, p["N"]
    vstar = t_hop * n * link
    floor = t_hop * n / 2
    return {"crossover": vstar, "floor": floor, "regime": 0 if p["V_asked"] <= vstar else 1,
            "time_big": max(floor, Fraction(p["V_big"], 2 * link))}


register_figure(NAME, figure)
register(Generator(NAME, "sharding", "Reading a collective's latency crossover off a plot",
                   "sharding.md, 'A note on latency'", draw, solve, check))
