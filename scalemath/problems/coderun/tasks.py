"""Hands-on tasks: a shard_map body (or a layout) to write, its inputs, the unsharded answer and what is checked.

Two tasks from the book's chapter on programming TPUs in JAX (jax-stuff.md):

- ``collective_matmul``: ``A[B, D_x] @ W[D, F_x] -> out[B, F_x]`` without gathering A whole: A's blocks travel
  round the ring with ``jax.lax.ppermute`` while each step's matmul runs (the chapter's collective matmul).
  HLO must hold CollectivePermutes and no AllGather, AllReduce, ReduceScatter or AllToAll.
- ``moe_all_to_all``: an MoE layer with top-k routing (k = 1 or 2, the book's Problem 2 part 4), tokens
  ``x[T_x, D]``, their experts ``e[T_x]`` (k = 1) or ``e[T_x, k]`` (k distinct experts per token), one expert per
  device ``W[E_x, D, D]``: dispatch with ``jax.lax.all_to_all``, apply, return with a second one; a token's result
  is the plain average of its k experts' results (the book: "route to multiple (k) experts and then average the
  result"). The chapter uses ``ragged_all_to_all``; XLA:CPU in jax 0.10.2 does not implement
  ``ragged-all-to-all`` (UNIMPLEMENTED in its thunk emitter), so the task pads each device's sends to a fixed
  capacity (its own token count: a token's k experts are distinct, so no expert gets more) and uses the dense
  ``all_to_all``. HLO must hold AllToAlls and no AllGather, AllReduce or ReduceScatter. A task without ``k``
  (task files written before top-k) is top-1, with the same inputs as before.

And one from the chapter on profiling (profiling.md, Problem 2: a layer sharded naively, its profile read and its
sharding fixed):

- ``layer_sharding``: an MLP block ``out = gelu(x @ W_in) @ W_out`` (``jax.nn.gelu`` with ``approximate=False``,
  the exact erf form), ``x[B, D]``, ``W_in[D, F]``, ``W_out[F, D]``, written and jitted by the grader's child;
  the student writes only ``shardings()``, the layout of each array (mode ``layout``). Graded by the bytes its
  collectives move per device against a budget, one AllReduce of the output (:mod:`.layer`).

The inputs are drawn from ``numpy.random.default_rng(seed)``; the reference is computed with numpy alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ...errors import BadValueError

__all__ = ["HandsOnTask", "TASKS", "make_task", "task_from_json"]

#: name -> entry function, parameters and their allowed values, required and forbidden kinds, mode (shard_map default)
TASKS: Mapping[str, dict] = {
    "collective_matmul": {
        "entry": "collective_matmul",
        "params": {"n": (4, 8), "B": (8, 16, 24, 32, 48, 64), "D_local": (4, 8, 12, 16), "F_local": (2, 4, 6, 8)},
        "required": ("CollectivePermute",),
        "forbidden": ("AllGather", "AllReduce", "ReduceScatter", "AllToAll"),
    },
    "moe_all_to_all": {
        "entry": "moe_layer",
        "params": {"n": (4, 8), "T_local": (2, 4, 6, 8, 12, 16), "D": (8, 12, 16, 24, 32), "k": (1, 2)},
        "defaults": {"k": 1},  # task files written before top-k name no k
        "required": ("AllToAll",),
        "forbidden": ("AllGather", "AllReduce", "ReduceScatter"),
    },
    "layer_sharding": {
        "entry": "shardings",
        "mode": "layout",
        # B = 12 does not divide over 8 devices: sharding the batch there is refused, as the statement says
        "params": {"n": (4, 8), "B": (8, 12, 16), "D": (256, 512, 768, 1024), "F": (2048, 3072, 4096)},
        "required": (),
        "forbidden": (),
    },
}
MAX_SEED = 2**31


@dataclass(frozen=True)
class HandsOnTask:
    name: str
    params: Mapping[str, int]
    seed: int

    @property
    def spec(self) -> dict:
        return TASKS[self.name]

    @property
    def entry(self) -> str:
        return self.spec["entry"]

    @property
    def mode(self) -> str:
        """How the child runs the submission: ``shard_map`` (a body) or ``layout`` (a layout for a fixed block)."""
        return self.spec.get("mode", "shard_map")

    @property
    def k(self) -> int:
        """Experts per token (the MoE task; 1 elsewhere)."""
        return int(self.params.get("k", 1))

    @property
    def mesh(self) -> tuple[tuple[str, int], ...]:
        return (("x", int(self.params["n"])),)

    @property
    def specs(self) -> tuple[list, list]:
        """(in_specs, out_spec) as lists of axis names or None (a shard_map task's; a layout task has none)."""
        if self.mode == "layout":
            return [], []
        if self.name == "collective_matmul":
            return [[None, "x"], [None, "x"]], [None, "x"]
        routes = ["x"] if self.k == 1 else ["x", None]
        return [["x", None], routes, ["x", None, None]], ["x", None]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        p = self.params
        if self.name == "layer_sharding":
            b, d, f = p["B"], p["D"], p["F"]
            return {"x": (b, d), "w_in": (d, f), "w_out": (f, d), "hidden": (b, f), "out": (b, d)}
        if self.name == "collective_matmul":
            d, f = p["D_local"] * p["n"], p["F_local"] * p["n"]
            return {"A": (p["B"], d), "W": (d, f), "out": (p["B"], f)}
        t = p["T_local"] * p["n"]
        routes = (t,) if self.k == 1 else (t, self.k)
        return {"x": (t, p["D"]), "e": routes, "W": (p["n"], p["D"], p["D"]), "out": (t, p["D"])}

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        s = self.shapes()
        if self.name == "layer_sharding":  # weights scaled so that the hidden and output entries are about 1
            return [rng.standard_normal(s["x"]).astype(np.float32),
                    (rng.standard_normal(s["w_in"]) / np.sqrt(self.params["D"])).astype(np.float32),
                    (rng.standard_normal(s["w_out"]) / np.sqrt(self.params["F"])).astype(np.float32)]
        if self.name == "collective_matmul":
            return [rng.standard_normal(s["A"]).astype(np.float32), rng.standard_normal(s["W"]).astype(np.float32)]
        x = rng.standard_normal(s["x"]).astype(np.float32)
        if self.k == 1:
            e = rng.integers(0, self.params["n"], s["e"]).astype(np.int32)
        else:  # k distinct experts per token: the first k of a random order of the n
            e = np.argsort(rng.random((s["e"][0], self.params["n"])), axis=1)[:, :self.k].astype(np.int32)
        w = (rng.standard_normal(s["W"]) / np.sqrt(self.params["D"])).astype(np.float32)
        return [x, e, w]

    def reference(self) -> np.ndarray:
        """The unsharded answer, by numpy in float64."""
        ins = [np.asarray(a, np.float64) if a.dtype.kind == "f" else a for a in self.inputs()]
        if self.name == "layer_sharding":
            h = ins[0] @ ins[1]
            return (0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))) @ ins[2]  # gelu, its exact erf form
        if self.name == "collective_matmul":
            return ins[0] @ ins[1]
        x, e, w = ins
        if e.ndim == 1:
            return np.einsum("td,tdf->tf", x, w[e])
        return np.einsum("td,tjdf->tf", x, w[e]) / e.shape[1]  # the plain average of the k experts' results

    def mistakes(self) -> list[tuple[str, np.ndarray]]:
        """Wrong answers worth naming: (what the submission did, the result it gives), unsharded in float64."""
        if self.name != "moe_all_to_all" or self.k == 1:
            return []
        x, e, w = [np.asarray(a, np.float64) if a.dtype.kind == "f" else a for a in self.inputs()]
        want = self.reference()
        only = {j: np.einsum("td,tdf->tf", x, w[e[:, j]]) for j in (0, -1)}
        return [("the sum of the k experts' results: average them (divide by k)", want * self.k),
                ("each token's first expert only: route it to all k and average", only[0]),
                ("each token's last expert only: route it to all k and average", only[-1])]

    def as_json(self) -> dict:
        return {"task": self.name, "seed": self.seed, "params": dict(self.params)}


def make_task(name: str, params: Mapping[str, int], seed: int) -> HandsOnTask:
    """A task, every parameter checked against its allowed values (a bad one is one BadValueError line)."""
    if name not in TASKS:
        raise BadValueError(f"unknown hands-on task {name!r}; known: {', '.join(TASKS)}")
    allowed = TASKS[name]["params"]
    params = {**TASKS[name].get("defaults", {}), **params}
    if set(params) != set(allowed):
        raise BadValueError(f"task {name}: parameters must be exactly {', '.join(allowed)}")
    for key, values in allowed.items():
        value = params[key]
        if isinstance(value, bool) or not isinstance(value, int) or value not in values:
            raise BadValueError(f"task {name}: {key} must be one of {', '.join(map(str, values))}, not {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_SEED:
        raise BadValueError(f"task {name}: seed must be a whole number from 0 to {MAX_SEED - 1}")
    return HandsOnTask(name, {key: params[key] for key in allowed}, seed)


def task_from_json(doc: Any, label: str = "task file") -> HandsOnTask:
    """The task a ``task.json`` (written by ``scalemath problems handson``) describes."""
    if not isinstance(doc, dict) or not isinstance(doc.get("params"), dict) or "task" not in doc:
        raise BadValueError(f'{label} must be {{"task": ..., "seed": ..., "params": {{...}}}} as '
                            "'scalemath problems handson' writes it")
    return make_task(doc["task"], doc["params"], doc.get("seed"))
