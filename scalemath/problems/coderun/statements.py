"""What a student reads for a hands-on task: the statement (Markdown) and the stub file to fill in.

The parameters are drawn from the seed (:func:`draw_task`), so one seed gives one task for the whole class or
one per student (``--seed`` per student).
"""

from __future__ import annotations

import random

from .tasks import TASKS, HandsOnTask, make_task

__all__ = ["draw_task", "statement", "stub"]


def draw_task(name: str, seed: int) -> HandsOnTask:
    """The task ``name`` with its sizes drawn from ``seed`` (the inputs are drawn from the same seed)."""
    rng = random.Random(f"handson:{name}:{seed}")
    params = {key: rng.choice(values) for key, values in TASKS.get(name, {}).get("params", {}).items()}
    return make_task(name, params, seed)


def _shape(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def statement(task: HandsOnTask) -> str:
    p, s = task.params, task.shapes()
    n = p["n"]
    grade = ("Grade it with `scalemath problems grade stub.py --key task.json`: your function runs in a sandboxed "
             f"child process on {n} simulated CPU devices, its result is compared with the unsharded computation "
             "(numpy) and the collectives of its compiled HLO are read.")
    if task.name == "collective_matmul":
        return f"""# Hands-on: a collective matmul with ppermute

A mesh of {n} devices along one axis `x`. A is {_shape(s['A'])} (B x D), sharded on its contracting dimension D:
`A[B, D_x]`; W is {_shape(s['W'])} (D x F), sharded on F: `W[D, F_x]`. The product `out[B, F_x]` =
A @ W, sharded like W.

Gathering A whole before the matmul (an AllGather) leaves the matmul waiting for the transfer. Write the
`shard_map` body `collective_matmul(a, w)` that instead passes A's blocks round the ring with
`jax.lax.ppermute`, so that while one block travels, the block a device already holds is multiplied with the
matching rows of its W and added to the result (the book's collective matmul, "Programming TPUs in JAX").

Each device sees `a` of shape {_shape((p['B'], p['D_local']))} and `w` of shape {_shape((s['W'][0], p['F_local']))};
it returns its {_shape((p['B'], p['F_local']))} block of the result. The compiled program must use
CollectivePermutes only: no AllGather, AllReduce, ReduceScatter or AllToAll.

{grade}
"""
    return f"""# Hands-on: an MoE layer with all_to_all

A mesh of {n} devices along one axis `x`, one expert per device. Tokens `x[T_x, D]` ({_shape(s['x'])}), each
routed to one expert by `expert[T_x]` (integers 0 to {n - 1}); expert e multiplies its tokens by `W[e]`, with
`W[E_x, D, D]` ({_shape(s['W'])}). The result is `out[t] = x[t] @ W[expert[t]]`, sharded like the tokens.

Write the `shard_map` body `moe_layer(x, expert, w)`: each device packs its tokens into one buffer per expert
(capacity: its own token count, so none is dropped), sends each buffer to its expert's device with
`jax.lax.all_to_all`, applies its expert to what it received, sends the results back with a second
`all_to_all`, and puts each token's row back in place. (The book's MoE layer uses `ragged_all_to_all`, which
XLA's CPU backend does not implement; here the buffers are padded to a fixed capacity.)

Each device sees `x` of shape {_shape((p['T_local'], p['D']))}, `expert` of shape {_shape((p['T_local'],))} and
`w` of shape {_shape((1, p['D'], p['D']))}. The compiled program must use AllToAlls: no AllGather (of the tokens
or the experts), AllReduce or ReduceScatter.

{grade}
"""


def stub(task: HandsOnTask) -> str:
    p = task.params
    if task.name == "collective_matmul":
        return f'''"""Write the shard_map body (see TASK.md). Mesh axis "x" of {p["n"]} devices."""

import jax
import jax.numpy as jnp


def collective_matmul(a, w):
    """a: this device's [{p["B"]}, {p["D_local"]}] block of A[B, D_x]; w: its [{p["D_local"] * p["n"]}, {p["F_local"]}] block of W[D, F_x].

    Return this device's [{p["B"]}, {p["F_local"]}] block of A @ W, moving A's blocks with jax.lax.ppermute.
    """
    raise NotImplementedError("write the body")
'''
    return f'''"""Write the shard_map body (see TASK.md). Mesh axis "x" of {p["n"]} devices, one expert each."""

import jax
import jax.numpy as jnp


def moe_layer(x, expert, w):
    """x: this device's [{p["T_local"]}, {p["D"]}] tokens; expert: their experts [{p["T_local"]}]; w: this device's expert [1, {p["D"]}, {p["D"]}].

    Return this device's [{p["T_local"]}, {p["D"]}] rows of out[t] = x[t] @ W[expert[t]], using jax.lax.all_to_all.
    """
    raise NotImplementedError("write the body")
'''
