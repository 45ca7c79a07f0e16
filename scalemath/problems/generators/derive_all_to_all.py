"""Derive the AllToAll's cost on a bidirectional ring and compare it with an AllGather's: the book's 1/4
(sharding.md, 'Our final communication primitive: the AllToAll'). Answers are formulas over the array's
dimensions and the bandwidth W, graded by symbolic equivalence.

Framing drawn: the array's name, its two dimension names, which one is sharded before and after, the mesh
axis and the element type. Key: the engine's ``collective.all_to_all.time_approx`` and
``collective.all_gather.time_approx`` with V the array's bytes (the exact ring AllGather, with (X-1)/X kept,
``collective.all_gather.time``, is accepted). Second route: the book's chunk count written out here
(each device sends (N/2)(N/2+1)/2 chunk-hops one way and (N/2)(N/2-1)/2 the other, chunks of V/N^2 bytes,
over both directions at W), and the AllGather as the large-ring limit of (N-1)/N V / W.
"""

from __future__ import annotations

import sympy as sp

from ..draws import pick
from ..model import Answer
from ..registry import Generator, register
from .derive_common import AXES, DIM_PAIRS, DTYPES, engine_form, formula, name

SOURCE = "sharding.md, 'Our final communication primitive: the AllToAll' and 'What Have We Learned?'"
ARRAYS = ("A", "Act", "Q", "Tokens", "Expert")
#: the shared dimension pairs and a few more: the answers depend on the pair and the element size only (the
#: large-ring costs do not depend on the ring's size), so a class of 30 needs more than 8 pairs x 3 sizes
PAIRS = DIM_PAIRS + (("B", "T"), ("F", "H"), ("M", "F"), ("B", "H"))


def draw(rng):
    d1, d2 = pick(rng, PAIRS)
    dtype = pick(rng, tuple(DTYPES))
    return {"array": pick(rng, ARRAYS), "d1": d1, "d2": d2, "axis": pick(rng, AXES), "dtype": dtype,
            "bytes": DTYPES[dtype], "from": rng.randrange(2)}


def _symbols(p) -> tuple[tuple[str, str], ...]:
    return ((p["d1"], f"size of dimension {p['d1']} of {p['array']}"),
            (p["d2"], f"size of dimension {p['d2']} of {p['array']}"),
            (p["axis"], f"devices along mesh axis {p['axis']} (an even number)"),
            ("W", f"bandwidth of each device along {p['axis']}, both directions together, in bytes/s"))


def solve(p):
    V = p["bytes"] * name(p["d1"]) * name(p["d2"])
    subs = {"V": V, "N": name(p["axis"]), "W_ici": name("W")}
    a2a = engine_form("collective.all_to_all.time_approx", subs)
    ag = engine_form("collective.all_gather.time_approx", subs)
    exact = engine_form("collective.all_gather.time", subs).expr
    symbols = _symbols(p)
    ratio = sp.cancel(a2a.expr / ag.expr)
    return [formula("t_all_to_all", "time of the AllToAll", a2a, symbols),
            formula("t_all_gather", "time of the AllGather", ag, symbols,
                    accept=[(exact, f"the exact ring cost, with the ({p['axis']}-1)/{p['axis']} factor kept")]),
            Answer("ratio", "AllToAll time over AllGather time", ratio, "1", rel_tol=sp.Rational(1, 100))]


def check(p):
    """The book's chunk count, by hand, for an even ring of n devices (rational functions of n, so ``cancel``
    brings each to its one canonical form; the large-ring limit is that form at 1/n = 0)."""
    n, W = sp.Symbol("n", positive=True, even=True), name("W")
    V = p["bytes"] * name(p["d1"]) * name(p["d2"])
    half = n / 2
    right, left = half * (half + 1) / 2, half * (half - 1) / 2  # chunk-hops sent each way, per device
    t_a2a = sp.cancel((right + left) * (V / n**2) / W)  # both directions together carry W
    t_ag_exact = (n - 1) * (V / n) / W  # n - 1 shards of V/n arrive, over both directions at W
    h = sp.Dummy("h", positive=True)
    t_ag = sp.cancel(t_ag_exact.xreplace({n: 1 / h})).xreplace({h: 0})  # the book's cost: a large ring
    axis = name(p["axis"])
    return {"t_all_to_all": t_a2a, "t_all_gather": t_ag,
            "t_all_gather.accept": [t_ag_exact.subs(n, axis)], "ratio": sp.cancel(t_a2a / t_ag)}


register(Generator("derive_all_to_all", "sharding", "Derive: an AllToAll costs a quarter of an AllGather",
                   SOURCE, draw, solve, check))
