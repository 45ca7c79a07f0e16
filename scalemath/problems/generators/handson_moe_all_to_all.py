"""Hands-on: write the shard_map body of an MoE layer with all_to_all, and size what it moves (jax-stuff.md).

The statement is the task of ``scalemath problems handson moe_all_to_all --seed S`` (the same sizes, drawn from
the same seed): top-k routing with k = 1 or 2 drawn (the book's Problem 2, part 4: k different experts per token,
their results averaged), one expert per device, each device's tokens packed into one buffer row per expert with a
capacity of its own token count (a token's k experts differ, so none is dropped), dispatched and returned by
``jax.lax.all_to_all``. The chapter's layer
uses ``ragged_all_to_all``; XLA's CPU backend (jax 0.10.2) does not implement ``ragged-all-to-all``, so the task
pads to a fixed capacity, and the sheet asks what that padding costs. The code is graded by running it
(``scalemath problems grade FILE.py --key task.json``).

Engine route: ``sharding.array_bytes`` of one device's buffer (and of the group's whole array, the V that the
book prices and the grader lists for an AllToAll), the expert's FLOPs and the useful share (k real slots of n per
token) from those shapes. Second route: plain integers and fractions, the slots counted one (token, choice) at a
time.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...symbolic.notation import parse_array
from ...symbolic.sharding import array_bytes
from ..coderun.statements import draw_task, stub
from ..model import Answer
from ..draws import count, whole_check
from ..registry import Generator, register

SOURCE = ("jax-stuff.md, 'shard_map' (the MoE layer with ragged_all_to_all, here a capacity-padded all_to_all); "
          "sharding.md, 'Our final communication primitive: the AllToAll'")
BYTES = 4  # float32


def draw(rng):
    seed = rng.randrange(2**31)
    task = draw_task("moe_all_to_all", seed)
    return {"task_seed": seed, **task.params, "T": task.params["T_local"] * task.params["n"], "stub": stub(task)}


def solve(p):
    n, c, d, k = p["n"], p["T_local"], p["D"], p.get("k", 1)
    sizes = {"E": n, "C": c, "D": d, "G": n}
    buffer = array_bytes(parse_array("Buf[E, C, D]"), {"X": n}, sizes, sp.Integer(BYTES))
    elements = array_bytes(parse_array("Buf[G, E, C, D]"), {"X": n}, sizes, sp.Integer(1))  # all n buffers
    slots = n * c  # what one expert receives: a row of C slots from each of the n devices
    return [
        count(Answer("buffer_bytes", "bytes of one device's dispatch buffer", sp.Integer(buffer), "byte",
                     rel_tol=Fraction(0))),
        count(Answer("v_elements", "V of each AllToAll, in elements (the n buffers of the group)",
                     sp.Integer(elements), "1", rel_tol=Fraction(0))),
        count(Answer("expert_flops", "FLOPs of one device's expert matmul, padding included",
                     sp.Integer(2 * slots * d * d), "FLOP", rel_tol=Fraction(0))),
        Answer("useful_share", "share of those FLOPs spent on real tokens, on average", sp.Rational(k * c, slots), "1",
               rel_tol=Fraction(0)),
    ]


def check(p):
    n, c, d, k = p["n"], p["T_local"], p["D"], p.get("k", 1)
    received = [[c] * n for _ in range(n)]  # received[e][s]: slots expert e gets from device s
    pairs = sum(1 for _token in range(n * c) for _choice in range(k))  # every (token, expert) pair fills a slot
    tokens_per_expert = Fraction(pairs, n)  # spread evenly over the n experts on average
    slots = sum(received[0])
    counts = {"buffer_bytes": n * c * d * BYTES, "v_elements": n * (n * c * d), "expert_flops": 2 * slots * d * d}
    return {**{k: v for name, value in counts.items() for k, v in whole_check(name, value, "nearest").items()},
            "useful_share": tokens_per_expert / slots}


register(Generator("handson_moe_all_to_all", "sharding", "Hands-on: an MoE layer with all_to_all",
                   SOURCE, draw, solve, check))
