"""Hands-on: fix the sharding of a transformer's MLP block, and count what each layout moves (profiling.md).

The statement is the task of ``scalemath problems handson layer_sharding --seed S`` (the same sizes, drawn from
the same seed): ``out = gelu(x @ W_in) @ W_out`` on n devices, its stub the naive layout (both weights sharded
along D), the student's ``shardings()`` graded by running it (``scalemath problems grade FILE.py --key
task.json``) against a budget of bytes in collectives. The sheet asks what can be worked out on paper first: the
budget (the V of Megatron's one AllReduce of the [B, D] output), the naive layout's bytes per device in
collectives, and the FLOPs per device of the block under Megatron's layout.

Engine route: :func:`scalemath.problems.coderun.layer.layout_plan`, each matmul of a layout by the cheapest plan of
``sharding.plans`` (the book's rules). Second route: plain integers, each matmul's local shapes and partial sums
written out, the naive first matmul's two options (gather W_in, or reduce the partial sums) compared by hand.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ..coderun.layer import budget_bytes, megatron_flops, naive_bytes
from ..coderun.statements import draw_task
from ..draws import count, whole_check
from ..model import Answer
from ..registry import Generator, register

SOURCE = ("profiling.md, Problem 2 (a transformer layer's naive sharding read off its profile and fixed, 184 ms to "
          "67 ms per layer); sharding.md, the cases of a sharded matmul; training.md, 'Tensor Parallelism'")
BYTES = 4  # float32


def draw(rng):
    seed = rng.randrange(2**31)
    task = draw_task("layer_sharding", seed)
    return {"task_seed": seed, **task.params}  # the stub is written by 'problems handson' (its layout holds None)


def solve(p):
    return [
        count(Answer("budget_bytes", "bytes per device of Megatron's collectives: the budget",
                     sp.Integer(budget_bytes(p)), "byte", rel_tol=Fraction(0))),
        count(Answer("naive_bytes", "bytes per device the naive layout's collectives move",
                     sp.Integer(naive_bytes(p)), "byte", rel_tol=Fraction(0))),
        count(Answer("flops", "FLOPs per device of the block under Megatron's layout",
                     sp.Integer(megatron_flops(p)), "FLOP", rel_tol=Fraction(0))),
    ]


def check(p):
    n, b, d, f = p["n"], p["B"], p["D"], p["F"]
    # Megatron: x[B, D] @ W_in[D, F/n] -> h[B, F/n], no communication; h[B, F/n] @ W_out[F/n, D] -> partial
    # sums of out[B, D] on every device, summed by one AllReduce of the whole [B, D] array
    megatron_moved = b * d * BYTES
    megatron_flops_ = 2 * b * d * (f // n) + 2 * b * (f // n) * d
    # naive, first matmul: x[B, D] @ W_in[D/n, F]; either gather W_in (D F elements) or slice x and reduce the
    # [B, F] partial sums; the smaller moves
    first = min(d * f, b * f) * BYTES
    # naive, second matmul: h[B, F] @ W_out[F, D/n] -> out[B, D/n], gathered to the replicated [B, D]
    second = b * d * BYTES
    counts = {"budget_bytes": megatron_moved, "naive_bytes": first + second, "flops": megatron_flops_}
    return {k: v for name, value in counts.items() for k, v in whole_check(name, value, "nearest").items()}


register(Generator("handson_layer_sharding", "sharding", "Hands-on: fix a layer's sharding",
                   SOURCE, draw, solve, check))
