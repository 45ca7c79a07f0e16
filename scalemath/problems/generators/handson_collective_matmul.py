"""Hands-on: write the shard_map body of a collective matmul, and count what it moves (jax-stuff.md).

The statement is the task of ``scalemath problems handson collective_matmul --seed S`` (the same sizes, drawn
from the same seed): A[B, D_x] @ W[D, F_x] with A's blocks passed round the ring by ``jax.lax.ppermute``. The
code is graded by running it (``scalemath problems grade FILE.py --key task.json``); the sheet asks what the
compiled program will show: how many CollectivePermutes, the bytes each moves per device, and the FLOPs per
device (the same as the plain matmul after an AllGather).

Engine route: ``sharding.array_bytes`` of one device's block of A and the registered
``jax.collective_matmul.flops`` (the book's A[B_X, D_Y] form with X = 1, Y = n). Second route: plain integers,
and the ring walked step by step until every block has visited every device.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...symbolic.notation import parse_array
from ...symbolic.sharding import array_bytes
from ..coderun.statements import draw_task, stub
from ..draws import ask, whole, whole_check
from ..model import Answer
from ..registry import Generator, register

SOURCE = ("jax-stuff.md, 'Example [Collective Matmul]' and 'shard_map: explicit parallelism control over a "
          "program' (ppermute)")
BYTES = 4  # the task runs in float32


def draw(rng):
    seed = rng.randrange(2**31)
    task = draw_task("collective_matmul", seed)
    p = dict(task.params)
    return {"task_seed": seed, **p, "D": p["D_local"] * p["n"], "F": p["F_local"] * p["n"], "stub": stub(task)}


def solve(p):
    n = p["n"]
    block = array_bytes(parse_array("A[B, D_X]"), {"X": n}, {"B": p["B"], "D": p["D"]}, sp.Integer(BYTES))
    flops = ask("flops", "FLOPs per device for the whole product", "jax.collective_matmul.flops",
                given={"B": p["B"], "D": p["D"], "F": p["F"], "X": 1, "Y": n}, rel_tol=Fraction(0))
    return [  # counts, exact: each a whole number, printed and graded whole
        whole(Answer("permutes", "CollectivePermutes in the compiled program", sp.Integer(n - 1), "1",
                     rel_tol=Fraction(0)), "nearest"),
        whole(Answer("block_bytes", "bytes each CollectivePermute moves per device", sp.Integer(block), "byte",
                     rel_tol=Fraction(0)), "nearest"),
        whole(flops, "nearest"),
    ]


def check(p):
    n = p["n"]
    holder = list(range(n))  # holder[d]: whose block of A device d holds; one ppermute shifts them by one
    seen = [{d} for d in range(n)]
    shifts = 0
    while any(len(s) < n for s in seen):
        holder = [holder[(d + 1) % n] for d in range(n)]
        for d in range(n):
            seen[d].add(holder[d])
        shifts += 1
    counts = {"permutes": shifts, "block_bytes": p["B"] * p["D_local"] * BYTES,
              "flops": n * 2 * p["B"] * p["D_local"] * p["F_local"]}
    return {k: v for name, value in counts.items() for k, v in whole_check(name, value, "nearest").items()}


register(Generator("handson_collective_matmul", "sharding", "Hands-on: a collective matmul with ppermute",
                   SOURCE, draw, solve, check))
