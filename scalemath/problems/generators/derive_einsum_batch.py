"""Derive the FLOPs of an einsum with batch dimensions (sharding.md, 'A quick aside: how would we describe this
in code?' and the FLOPs rule of roofline.md: a contraction costs 2 x the product of every distinct dimension, a
dimension in both inputs and the output, a batch dimension, counted once), and per device when a batch dimension
is sharded over a mesh axis (no communication: each device multiplies its own batch block).

Framing drawn: one or two batch dimensions, one or two contracting ones, a free dimension on each side, the
letters, and whether (and which) batch dimension is sharded over X. Key: the engine's sharding plan for the
contraction (``scalemath.symbolic.sharding.plans``, as ``scalemath shard`` prints it) at symbolic sizes, unsharded
and sharded: its FLOPs and its collectives (none). Second route: the rule by hand, 2 x the product of the
distinct letters, over X when one is sharded.
"""

from __future__ import annotations

import sympy as sp

from ...symbolic.derivation import Derivation, Step
from ...symbolic.notation import parse_contraction
from ...symbolic.sharding import plans
from ..draws import pick
from ..model import Answer
from ..registry import Generator, register
from .derive_common import formula, name

SOURCE = "roofline.md, 'Matrix multiplication' (the FLOPs rule); sharding.md, batch dimensions of a contraction"
BATCH, LEFT, RIGHT, CONTRACT = ("B", "G", "H"), ("T", "M"), ("F", "L"), ("D", "K", "J")
ARRAYS = (("A", "W", "O"), ("P", "R", "U"), ("Act", "Wt", "Out"))


def draw(rng):
    nb, nc = rng.randint(1, 2), rng.randint(1, 2)
    batch = rng.sample(BATCH, nb)
    contract = rng.sample(CONTRACT, nc)
    p = {"batch": batch, "contract": contract, "left": pick(rng, LEFT), "right": pick(rng, RIGHT),
         "arrays": list(pick(rng, ARRAYS)), "sharded": pick(rng, batch + [""])}
    return p


def _pattern(p, sharded: bool) -> str:
    def dims(letters):
        return ", ".join(f"{d}_X" if sharded and d == p["sharded"] else d for d in letters)
    a, w, o = p["arrays"]
    lhs = p["batch"] + [p["left"]] + p["contract"]
    rhs = p["batch"] + p["contract"] + [p["right"]]
    out = p["batch"] + [p["left"], p["right"]]
    return f"{a}[{dims(lhs)}] @ {w}[{dims(rhs)}] -> {o}[{dims(out)}]"


def _letters(p) -> list[str]:
    return p["batch"] + [p["left"]] + p["contract"] + [p["right"]]


def _symbols(p):
    out = [(d, f"size of dimension {d}") for d in _letters(p)]
    if p["sharded"]:
        out.append(("X", "devices along mesh axis X"))
    return tuple(out)


def _plan(p, sharded: bool):
    mesh = {"X": 4}
    c = parse_contraction(_pattern(p, sharded), mesh)
    return c, plans(c, {"X": name("X")}, {d: name(d) for d in _letters(p)}, 2)[0]


def solve(p):
    c, whole = _plan(p, False)
    why = (f"batch {', '.join(c.batch)} counted once; contracting {', '.join(c.contracting)} summed over; each "
           "multiply-add is 2 FLOPs")
    total = Derivation("FLOPs of the einsum", (Step(r"\mathrm{FLOPs}", whole.flops, why, "FLOP"),), SOURCE)
    out = [formula("flops", "FLOPs of the whole einsum", total, _symbols(p))]
    if p["sharded"]:
        _, local = _plan(p, True)
        per = Derivation("FLOPs per device", (
            Step(r"\mathrm{FLOPs}", whole.flops, why, "FLOP"),
            Step(r"\mathrm{FLOPs}_{\mathrm{dev}}", local.flops,
                 f"each device multiplies its own block of {p['sharded']}: "
                 + ("no communication" if not local.collectives else "after its collectives"), "FLOP")), SOURCE)
        out.append(formula("flops_device", "FLOPs on each device", per, _symbols(p)))
        out.append(Answer("collectives", "collectives the sharded einsum needs", sp.Integer(len(local.collectives)),
                          "1", rel_tol=0))
    return out


def check(p):
    total = 2 * sp.Mul(*(name(d) for d in _letters(p)))
    out = {"flops": total}
    if p["sharded"]:
        out |= {"flops_device": total / name("X"), "collectives": 0}
    return out


register(Generator("derive_einsum_batch", "roofline", "Derive: the FLOPs of an einsum with batch dimensions",
                   SOURCE, draw, solve, check))
