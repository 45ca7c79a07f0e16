"""What a student reads for a hands-on task: the statement (Markdown) and the stub file to fill in (the layout
task's are written by :mod:`.layer`).

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
    if task.name == "layer_sharding":
        from .layer import statement as layer_statement

        return layer_statement(task, grade.replace("your function runs", "the block runs with your layout"))
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
    if task.k == 1:
        routing = (f"each\nrouted to one expert by `expert[T_x]` (integers 0 to {n - 1}); expert e multiplies its "
                   f"tokens by `W[e]`, with\n`W[E_x, D, D]` ({_shape(s['W'])}). The result is "
                   "`out[t] = x[t] @ W[expert[t]]`, sharded like the tokens.")
        seen = f"`expert` of shape {_shape((p['T_local'],))}"
        capacity = "its own token count, so none is dropped"
        back = "puts each token's row back in place"
    else:
        k = task.k
        routing = (f"each\nrouted to {k} different experts by `expert[T_x, k]` ({_shape(s['e'])}, integers 0 to "
                   f"{n - 1}, top-{k} routing); expert e multiplies\nits tokens by `W[e]`, with `W[E_x, D, D]` "
                   f"({_shape(s['W'])}). A token's result is the plain average of its {k} experts'\nresults (the "
                   "book's Problem 2, part 4: route to k experts and average): "
                   f"`out[t] = (1/{k}) sum_j x[t] @ W[expert[t, j]]`,\nsharded like the tokens. No routing weights: "
                   "every expert counts equally.")
        seen = f"`expert` of shape {_shape((p['T_local'], k))}"
        capacity = (f"its own token count: a token's {k} experts are different, so no expert gets more than that from "
                    "one device, and none is dropped")
        back = f"averages each token's {k} returned rows in place"
    return f"""# Hands-on: an MoE layer with all_to_all

A mesh of {n} devices along one axis `x`, one expert per device. Tokens `x[T_x, D]` ({_shape(s['x'])}), {routing}

Write the `shard_map` body `moe_layer(x, expert, w)`: each device packs its tokens into one buffer per expert
(capacity: {capacity}), sends each buffer to its expert's device with
`jax.lax.all_to_all`, applies its expert to what it received, sends the results back with a second
`all_to_all`, and {back}. (The book's MoE layer uses `ragged_all_to_all`, which
XLA's CPU backend does not implement; here the buffers are padded to a fixed capacity.)

Each device sees `x` of shape {_shape((p['T_local'], p['D']))}, {seen} and
`w` of shape {_shape((1, p['D'], p['D']))}. The compiled program must use AllToAlls: no AllGather (of the tokens
or the experts), AllReduce or ReduceScatter.

{grade}
"""


def stub(task: HandsOnTask) -> str:
    p = task.params
    if task.name == "layer_sharding":
        from .layer import stub as layer_stub

        return layer_stub(task)
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
    if task.k == 1:
        routes, rows = f'their experts [{p["T_local"]}]', "out[t] = x[t] @ W[expert[t]]"
    else:
        routes = f'their experts [{p["T_local"]}, {task.k}] ({task.k} different ones per token)'
        rows = f"out[t] = the average over j of x[t] @ W[expert[t, j]]"
    return f'''"""Write the shard_map body (see TASK.md). Mesh axis "x" of {p["n"]} devices, one expert each."""

import jax
import jax.numpy as jnp


def moe_layer(x, expert, w):
    """x: this device's [{p["T_local"]}, {p["D"]}] tokens; expert: {routes}; w: this device's expert [1, {p["D"]}, {p["D"]}].

    Return this device's [{p["T_local"]}, {p["D"]}] rows of {rows}, using jax.lax.all_to_all.
    """
    raise NotImplementedError("write the body")
'''
