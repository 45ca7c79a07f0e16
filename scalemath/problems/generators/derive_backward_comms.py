"""Derive the communication of a sharded matmul layer's backward pass, under data parallelism (weights
replicated) or FSDP (weights sharded, gathered before use): sharding.md's backward-pass rules and
training.md, 'Data Parallelism' and 'Fully-Sharded Data Parallelism (FSDP)'.

Forward: In[B_X, D] . Wt[D, F] -> Out[B_X, F]. Backward: dWt = In^T . dOut contracts over the sharded batch
and leaves partial sums {U_X}: DP all-reduces them; FSDP reduce-scatters them to Wt's sharding, and must
gather Wt again for dIn = dOut . Wt^T. Both move 2 (X-1)/X of the weight's bytes per device.

Framing drawn: the scheme, the names of the arrays and dimensions, the mesh axis, the weight's element type
and the order of the choices. Key: the engine's collective costs (``collective.all_reduce.time``,
``collective.all_gather.time``, ``collective.reduce_scatter.time``) with V the weight's bytes; the book's
bandwidth-bound forms (the (X-1)/X dropped) are accepted. Second route written here: bytes a device sends on
a ring of n, over both directions at W, collective by collective.
"""

from __future__ import annotations

import sympy as sp

from ...symbolic.derivation import Derivation, Step
from ..draws import choice, pick
from ..registry import Generator, register
from .derive_common import AXES, DTYPES, engine_form, formula, name, sum_of

SOURCE = "sharding.md, backward pass of a sharded matmul; training.md, 'Data Parallelism' and 'FSDP'"
NAMES = (("In", "Wup", "Out"), ("Xin", "Win", "Hid"), ("Act", "Wo", "Res"), ("Emb", "Wproj", "Proj"))
DIMS = (("B", "D", "F"), ("T", "D", "F"), ("B", "D", "H"), ("T", "D", "K"), ("B", "M", "F"))
SCHEMES = ("dp", "fsdp")
WEIGHT_DTYPES = ("bf16", "fp32")
#: The choices of "which collectives does the backward pass run?" (formatted with the names); the
#: right one for each scheme is first in its list of rights.
CHOICES = ("an AllReduce of d{w} over {ax}",
           "an AllGather of {w} and a ReduceScatter of d{w}, both over {ax}",
           "a ReduceScatter of d{x} over {ax}",
           "none: every gradient stays on its device",
           "an AllToAll of d{y} over {ax}")
RIGHT = {"dp": 0, "fsdp": 1}


def draw(rng):
    x, w, y = pick(rng, NAMES)
    b, d, f = pick(rng, DIMS)
    axis = pick(rng, AXES)
    dtype = pick(rng, WEIGHT_DTYPES)
    order = list(range(len(CHOICES)))
    rng.shuffle(order)
    return {"scheme": pick(rng, SCHEMES), "x": x, "w": w, "y": y, "b": b, "d": d, "f": f, "axis": axis,
            "dtype": dtype, "bytes": DTYPES[dtype], "order": "".join(map(str, order))}


def _choices(p) -> list[str]:
    return [CHOICES[int(k)].format(w=p["w"], x=p["x"], y=p["y"], ax=p["axis"]) for k in p["order"]]


def _right(p) -> int:
    return p["order"].index(str(RIGHT[p["scheme"]]))


def solve(p):
    ax, X, W = p["axis"], name(p["axis"]), name("W")
    V = p["bytes"] * name(p["d"]) * name(p["f"])
    subs = {"V": V, "N": X, "W_ici": W}
    symbols = ((p["d"], f"size of dimension {p['d']} (rows of {p['w']})"),
               (p["f"], f"size of dimension {p['f']} (columns of {p['w']})"),
               (ax, f"devices along mesh axis {ax}"),
               ("W", f"bandwidth of each device along {ax}, both directions together, in bytes/s"))
    ag = engine_form("collective.all_gather.time", subs)
    rs = engine_form("collective.reduce_scatter.time", subs)
    ar = engine_form("collective.all_reduce.time", subs)
    approx = sp.Integer(2) * V / W
    if p["scheme"] == "dp":
        bwd = ar
        fwd = _zero_forward()
        fwd_accept = []
    else:
        bwd = sum_of(((r"T_{\mathrm{AG}}", ag), (r"T_{\mathrm{RS}}", rs)), r"T_{\mathrm{bwd}}",
                     "gather the weight again for dIn, reduce-scatter its gradient", "backward communication", SOURCE)
        fwd = ag
        fwd_accept = [(V / W, f"the book's bandwidth-bound cost, ({ax}-1)/{ax} taken as 1")]
    return [choice("collectives", "the backward pass's collectives", _choices(p), _right(p)),
            formula("t_bwd", "communication time of the backward pass", bwd, symbols,
                    accept=[(approx, f"the book's bandwidth-bound cost, ({ax}-1)/{ax} taken as 1")]),
            formula("t_fwd", "communication time of the forward pass", fwd, symbols, accept=fwd_accept)]


def _zero_forward() -> Derivation:
    return Derivation("forward communication under data parallelism", (Step(
        r"T_{\mathrm{fwd}}", sp.Integer(0), "the weights are replicated and the batch sharded: no collective", "s"),),
        SOURCE)


def check(p):
    n, W = name(p["axis"]), name("W")
    weight = p["bytes"] * name(p["d"]) * name(p["f"])
    one_pass = (n - 1) * (weight / n) / W  # a ring AllGather or ReduceScatter: n - 1 shards per device
    book = weight / W  # the book's large-ring form: the whole weight through the links once, (n - 1)/n taken as 1
    bwd = 2 * one_pass  # DP: AllReduce = RS + AG; FSDP: AG of the weight + RS of its gradient
    fwd = sp.Integer(0) if p["scheme"] == "dp" else one_pass
    out = {"collectives": _right(p), "t_bwd": bwd, "t_fwd": fwd, "t_bwd.accept": [2 * book]}
    if p["scheme"] == "fsdp":
        out["t_fwd.accept"] = [book]
    return out


register(Generator("derive_backward_comms", "training", "Derive: the communication of a sharded layer's backward pass",
                   SOURCE, draw, solve, check))
