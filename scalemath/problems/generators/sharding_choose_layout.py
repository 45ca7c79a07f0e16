"""Choose how to shard an MLP matmul on a 2D mesh: the layout that is fastest among those whose arrays fit a
per-chip memory limit (sharding.md, 'Computation With Sharded Arrays'; training.md, the DP / FSDP / TP
layouts of one matmul).

The student is given four layouts of ``In[B, D] · W[D, F] → Out[B, F]`` in the book's notation and a limit
on the bytes each chip may hold of the three arrays as laid out, and chooses. The key: of the layouts that
fit, the one with the smallest lower bound max(T_math, T_comms); on a tie (layouts without communication,
or compute-bound ones, all take T_math), the one that holds fewer bytes per chip. Draws whose order has an
exact tie, or where the fastest layout fits anyway, are rejected.

Engine route: :func:`scalemath.symbolic.sharding.plans` gives each layout's plan (its collectives and
FLOPs per device), :func:`scalemath.symbolic.sharded_cost.plan_cost` prices it on the slice's rings, and
:func:`scalemath.reports.shard.layout` counts each array's bytes per device.

Second route: each layout's bytes, FLOPs and collectives counted by hand (the table ``BY_HAND``: local
shapes as fractions of B, D and F, the collective each layout needs and its V), priced with the ring's
busiest-link count in plain Fractions.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import sympy as sp

from ...cache import persistent
from ...catalog.hardware import get_chip
from ...reports.shard import layout
from ...symbolic.derivation import Derivation, Evaluated, EvaluatedStep, Step
from ...symbolic.notation import parse_contraction
from ...symbolic.sharded_cost import plan_cost
from ...symbolic.sharding import plans
from ...symbolic.symbols import sym
from ..draws import MODEL_SHAPES, binding, choice, frac, pick, pow2
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = ("sharding.md, 'Computation With Sharded Arrays' (cases 1 to 4); training.md, data, fully-sharded "
          "and tensor parallelism of one matmul")
BYTES = 2  # bf16
#: (chip, slice): every axis wraps (v5e/v6e: 16-chip axes; v4p/v5p: whole cubes); the mesh is its first two axes
SLICES = (("tpu-v5e", (16, 16)), ("tpu-v6e", (16, 16)), ("tpu-v5p", (4, 4, 4)), ("tpu-v5p", (8, 8, 8)),
          ("tpu-v4p", (4, 4, 4)), ("tpu-v5p", (4, 8, 8)))

# Each layout with its count by hand: elements per chip of In, W, Out as (coefficient of B·D, D·F, B·F) over
# the product of the named axes; then the collectives: (kind, axes, V as (which product, over which axes)).
#   "XY" divides by |X||Y|, "X" by |X|, "" by 1.
BY_HAND = {
    "In[B_XY, D] @ W[D, F] -> Out[B_XY, F]": (("XY", "", "XY"), ()),
    "In[B_X, D] @ W[D, F_Y] -> Out[B_X, F_Y]": (("X", "Y", "XY"), ()),
    "In[B, D] @ W[D, F_XY] -> Out[B, F_XY]": (("", "XY", "XY"), ()),
    # local Out[B/X, F] holds partial sums over D_Y: AllReduce over Y of the local B·F/X block
    "In[B_X, D_Y] @ W[D_Y, F] -> Out[B_X, F]": (("XY", "Y", "X"), (("AllReduce", "Y", ("BF", "X")),)),
    # the same partial sums, scattered along F over Y
    "In[B_X, D_Y] @ W[D_Y, F] -> Out[B_X, F_Y]": (("XY", "Y", "XY"), (("ReduceScatter", "Y", ("BF", "X")),)),
    # W stored D_X F_Y: gather D over X first; the gathered W[D, F_Y] is D·F/Y
    "In[B_X, D] @ W[D_X, F_Y] -> Out[B_X, F_Y]": (("X", "XY", "XY"), (("AllGather", "X", ("DF", "Y")),)),
    # fully sharded W: gather all of it over both axes
    "In[B_XY, D] @ W[D_XY, F] -> Out[B_XY, F]": (("XY", "XY", "XY"), (("AllGather", "XY", ("DF", "")),)),
    # D sharded over X in both: partial sums of the local [B, F/Y] block, AllReduced over X
    "In[B, D_X] @ W[D_X, F_Y] -> Out[B, F_Y]": (("X", "XY", "Y"), (("AllReduce", "X", ("BF", "Y")),)),
}
PATTERNS = tuple(BY_HAND)
LETTERS = "abcdefgh"


def _shown(pattern: str) -> str:
    """A layout as the sheet prints it: ``In[B_X, D] · W[D, F_Y] -> Out[B_X, F_Y]``."""
    return pattern.replace(" @ ", " · ")


def _values(p) -> dict:
    chip = get_chip(p["chip"])
    return {sym("B"): p["B"], sym("D"): p["D"], sym("F"): p["F"], sym("C"): chip.flops("bf16"),
            sym("W_ici"): chip.bandwidth("ici"), sym("t_hop"): chip.hop_latency_s}


@persistent
def _engine(x: int, y: int, pattern: str):
    """(memory derivation, cost derivation) of one layout on an X x Y mesh, sizes kept as the symbols B, D, F."""
    mesh = {"X": x, "Y": y}
    c = parse_contraction(pattern, mesh)
    sizes = {d: sym(d) for d in ("B", "D", "F")}
    (plan,) = plans(c, mesh, sizes, BYTES)
    arrays = [layout(arr, mesh, sizes, BYTES) for arr in (c.lhs, c.rhs, c.out)]
    steps = tuple(Step(rf"\mathrm{{bytes}}_{{\mathrm{{{arr.name}}}}}", lay["_local"],
                       f"{arr} holds 1/{lay['shards']} of the array on each chip, 2 bytes per element", "byte")
                  for arr, lay in zip((c.lhs, c.rhs, c.out), arrays))
    total = Step(r"M_{\mathrm{chip}}", sp.Add(*(s.expr for s in steps)), "the three arrays together", "byte")
    memory = Derivation(f"bytes per chip of {_shown(pattern)}", steps + (total,), SOURCE)
    return memory, plan_cost(plan, mesh)


def _evaluate(p) -> list[tuple[Evaluated, Evaluated]]:
    values = _values(p)
    layouts = (_engine(p["X"], p["Y"], pattern) for pattern in p["layouts"].split("; "))
    return [(mem.at(values), cost.at(values)) for mem, cost in layouts]


def _order(items) -> list[int]:
    """Fastest first; on a tie in time, fewer bytes per chip first."""
    return sorted(range(len(items)), key=lambda i: (items[i][1], items[i][0]))


def _limit(key_mem: Fraction, below: Fraction) -> int | None:
    """A round limit in bytes at or above the key's memory and under every faster layout's."""
    for digits in (1, 2, 3):
        e = 10 ** max(0, len(str(math.ceil(key_mem))) - digits)
        limit = math.ceil(key_mem / e) * e
        if limit < below:
            return limit
    return None


def draw(rng):
    chip_key, shape = pick(rng, SLICES)
    chip = get_chip(chip_key)
    reject_if(not all(chip.wraps(shape)), "every axis of the slice must wrap around")
    model, d, f = pick(rng, MODEL_SHAPES)
    layouts = rng.sample(PATTERNS, 4)
    p = {"chip": chip_key, "slice": "x".join(map(str, shape)), "X": shape[0], "Y": shape[1], "model": model,
         "D": d, "F": f, "B": pow2(rng, 10, 16), "layouts": "; ".join(layouts)}
    items = [(Fraction(m), Fraction(t)) for m, t in ((frac(m.value), frac(c.value)) for m, c in _evaluate(p))]
    reject_if(len(set(items)) < len(items), "two layouts tie in both time and memory")
    order = _order(items)
    fits_at = binding([items[i][0] for i in order])
    reject_if(not fits_at, "no layout holds fewer bytes than every faster one: the limit cannot bind")
    k = pick(rng, fits_at)
    limit = _limit(items[order[k]][0], min(items[order[j]][0] for j in range(k)))
    reject_if(limit is None, "no round limit separates the key from the faster layouts")
    p["limit"] = limit
    for i, pat in enumerate(layouts):
        p[f"layout_{LETTERS[i]}"] = _shown(pat)
    return p


def solve(p):
    evaluated = _evaluate(p)
    items = [(frac(m.value), frac(c.value)) for m, c in evaluated]
    order = [i for i in _order(items) if items[i][0] <= p["limit"]]
    best = order[0]
    shown = [_shown(pat) for pat in p["layouts"].split("; ")]
    steps = []
    for i, (m, c) in enumerate(evaluated):
        fits = "fits" if items[i][0] <= p["limit"] else "over the limit"
        steps.append(EvaluatedStep(Step(rf"M^{{({LETTERS[i]})}}", m.value, f"layout {LETTERS[i]}: {shown[i]}: {fits}",
                                        "byte"), m.value))
        steps.append(EvaluatedStep(Step(rf"T^{{({LETTERS[i]})}}", c.value,
                                        f"layout {LETTERS[i]}: lower bound, {c.derivation.title}", "s"), c.value))
    table = Derivation("every layout's bytes per chip and lower bound", tuple(s.step for s in steps), SOURCE)
    pick_one = choice("layout", "the fastest layout whose arrays fit the per-chip limit", shown, best)
    pick_one = dataclasses.replace(pick_one, evaluated=Evaluated(table, {}, tuple(steps)))
    mem, cost = evaluated[best]
    return [pick_one,
            Answer("t_best", "lower bound of the chosen layout", cost.value, "s", cost),
            Answer("mem_best", "bytes per chip of the arrays of the chosen layout", mem.value, "byte", mem)]


# -- second route: bytes, FLOPs and collectives counted by hand ------------------------------------------

def check(p):
    chip = get_chip(p["chip"])
    link = Fraction(chip.ici_link_bytes_per_s)          # one direction of one link
    hop = Fraction(chip.hop_latency_ns, 10**9)
    peak = Fraction(chip.flops_per_s["bf16"])
    B, D, F, X, Y = p["B"], p["D"], p["F"], p["X"], p["Y"]
    over = {"XY": X * Y, "X": X, "Y": Y, "": 1}
    size = {"BD": B * D, "DF": D * F, "BF": B * F}
    items = []
    for pat in p["layouts"].split("; "):
        arrays, collectives = BY_HAND[pat]
        mem = sum(Fraction(BYTES * size[k], over[a]) for k, a in zip(("BD", "DF", "BF"), arrays))
        t_math = Fraction(2 * B * D * F, X * Y) / peak
        t_comms = Fraction(0)
        for kind, axes, (prod, per) in collectives:
            v = Fraction(BYTES * size[prod], over[per])
            n = over[axes]
            # rings on every axis: two opposite rings per axis, each link carries (n - 1)/n of V/2 per axis
            busiest = v * (n - 1) / n / (2 * len(axes))
            hops = Fraction(sum(over[a] for a in axes), 2)
            one = max(busiest / link, hops * hop)
            t_comms += 2 * one if kind == "AllReduce" else one   # AllReduce = ReduceScatter + AllGather
        items.append((mem, max(t_math, t_comms)))
    order = [i for i in _order(items) if items[i][0] <= p["limit"]]
    best = order[0]
    return {"layout": best, "t_best": items[best][1], "mem_best": items[best][0]}


register(Generator("sharding_choose_layout", "sharding", "Choose the sharding of a matmul under a memory limit",
                   SOURCE, draw, solve, check))
