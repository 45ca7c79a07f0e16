"""Derive the backward pass of an AllGather: a ReduceScatter, the AllGather's transpose (sharding.md,
'A Deeper Dive into TPU Communication Primitives'), and its cost on a bidirectional ring with the ring's
(N-1)/N kept; and what an AllReduce of the same gradient would cost instead (ReduceScatter + AllGather).

Framing drawn: the array's name and dimension names, which dimension is sharded, the mesh axis, the
element type and the order of the choices. Key: the engine's ``collective.reduce_scatter.time`` and
``collective.all_reduce.time`` with V the gradient's bytes. Second route written here from the book's text:
the ReduceScatter sends each of the N - 1 partial-sum chunks of V/N bytes it does not keep, over both
directions at W; the AllReduce is that plus an AllGather moving as much.
"""

from __future__ import annotations

from ..draws import choice, pick
from ..registry import Generator, register
from .derive_common import AXES, DIM_PAIRS, DTYPES, engine_form, formula, name

SOURCE = "sharding.md, 'A Deeper Dive into TPU Communication Primitives' (ReduceScatter is AllGather's transpose)"
ARRAYS = ("A", "Wgt", "Emb", "P", "Kernel")
KINDS = ("ReduceScatter", "AllGather", "AllReduce", "AllToAll")


def draw(rng):
    d1, d2 = pick(rng, DIM_PAIRS)
    dtype = pick(rng, tuple(DTYPES))
    order = list(range(len(KINDS)))
    rng.shuffle(order)
    return {"array": pick(rng, ARRAYS), "d1": d1, "d2": d2, "axis": pick(rng, AXES), "dtype": dtype,
            "bytes": DTYPES[dtype], "sharded": rng.randrange(2), "order": "".join(map(str, order))}


def _choices(p) -> list[str]:
    return [f"{KINDS[int(k)]} over {p['axis']}" for k in p["order"]]


def solve(p):
    V = p["bytes"] * name(p["d1"]) * name(p["d2"])
    subs = {"V": V, "N": name(p["axis"]), "W_ici": name("W")}
    ax = p["axis"]
    symbols = ((p["d1"], f"size of dimension {p['d1']} of {p['array']}"),
               (p["d2"], f"size of dimension {p['d2']} of {p['array']}"),
               (ax, f"devices along mesh axis {ax}"),
               ("W", f"bandwidth of each device along {ax}, both directions together, in bytes/s"))
    return [choice("backward", "the collective of the backward pass", _choices(p), f"ReduceScatter over {ax}"),
            formula("t_reduce_scatter", f"time of the backward pass's collective, ({ax}-1)/{ax} kept",
                    engine_form("collective.reduce_scatter.time", subs), symbols),
            formula("t_all_reduce", "time of an AllReduce of the same gradient",
                    engine_form("collective.all_reduce.time", subs), symbols)]


def check(p):
    n, W = name(p["axis"]), name("W")
    V = p["bytes"] * name(p["d1"]) * name(p["d2"])  # the unreduced gradient on each device
    rs = (n - 1) * (V / n) / W  # n - 1 chunks of V/n leave each device, both directions at W together
    return {"backward": _choices(p).index(f"ReduceScatter over {p['axis']}"),
            "t_reduce_scatter": rs, "t_all_reduce": rs + rs}


register(Generator("derive_reduce_scatter", "sharding", "Derive: the backward pass of an AllGather is a ReduceScatter",
                   SOURCE, draw, solve, check))
