"""Hands-on tasks: a shard_map body to write, its inputs, the unsharded answer and the collectives it must use.

Two tasks from the book's chapter on programming TPUs in JAX (jax-stuff.md):

- ``collective_matmul``: ``A[B, D_x] @ W[D, F_x] -> out[B, F_x]`` without gathering A whole: A's blocks travel
  round the ring with ``jax.lax.ppermute`` while each step's matmul runs (the chapter's collective matmul).
  HLO must hold CollectivePermutes and no AllGather, AllReduce, ReduceScatter or AllToAll.
- ``moe_all_to_all``: a top-1 MoE layer, tokens ``x[T_x, D]``, their experts ``e[T_x]``, one expert per device
  ``W[E_x, D, D]``: dispatch with ``jax.lax.all_to_all``, apply, return with a second one. The chapter uses
  ``ragged_all_to_all``; XLA:CPU in jax 0.10.2 does not implement ``ragged-all-to-all`` (UNIMPLEMENTED in its
  thunk emitter), so the task pads each device's sends to a fixed capacity and uses the dense ``all_to_all``.
  HLO must hold AllToAlls and no AllGather, AllReduce or ReduceScatter.

The inputs are drawn from ``numpy.random.default_rng(seed)``; the reference is computed with numpy alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ...errors import BadValueError

__all__ = ["HandsOnTask", "TASKS", "make_task", "task_from_json"]

#: name -> (function name, parameter names and allowed values, required kinds, forbidden kinds)
TASKS: Mapping[str, dict] = {
    "collective_matmul": {
        "entry": "collective_matmul",
        "params": {"n": (4, 8), "B": (8, 16, 24, 32, 48, 64), "D_local": (4, 8, 12, 16), "F_local": (2, 4, 6, 8)},
        "required": ("CollectivePermute",),
        "forbidden": ("AllGather", "AllReduce", "ReduceScatter", "AllToAll"),
    },
    "moe_all_to_all": {
        "entry": "moe_layer",
        "params": {"n": (4, 8), "T_local": (2, 4, 6, 8, 12, 16), "D": (8, 12, 16, 24, 32)},
        "required": ("AllToAll",),
        "forbidden": ("AllGather", "AllReduce", "ReduceScatter"),
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
    def mesh(self) -> tuple[tuple[str, int], ...]:
        return (("x", int(self.params["n"])),)

    @property
    def specs(self) -> tuple[list, list]:
        """(in_specs, out_spec) as lists of axis names or None."""
        if self.name == "collective_matmul":
            return [[None, "x"], [None, "x"]], [None, "x"]
        return [["x", None], ["x"], ["x", None, None]], ["x", None]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        p = self.params
        if self.name == "collective_matmul":
            d, f = p["D_local"] * p["n"], p["F_local"] * p["n"]
            return {"A": (p["B"], d), "W": (d, f), "out": (p["B"], f)}
        t = p["T_local"] * p["n"]
        return {"x": (t, p["D"]), "e": (t,), "W": (p["n"], p["D"], p["D"]), "out": (t, p["D"])}

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        s = self.shapes()
        if self.name == "collective_matmul":
            return [rng.standard_normal(s["A"]).astype(np.float32), rng.standard_normal(s["W"]).astype(np.float32)]
        x = rng.standard_normal(s["x"]).astype(np.float32)
        e = rng.integers(0, self.params["n"], s["e"]).astype(np.int32)
        w = (rng.standard_normal(s["W"]) / np.sqrt(self.params["D"])).astype(np.float32)
        return [x, e, w]

    def reference(self) -> np.ndarray:
        """The unsharded answer, by numpy in float64."""
        ins = [np.asarray(a, np.float64) if a.dtype.kind == "f" else a for a in self.inputs()]
        if self.name == "collective_matmul":
            return ins[0] @ ins[1]
        x, e, w = ins
        return np.einsum("td,tdf->tf", x, w[e])

    def as_json(self) -> dict:
        return {"task": self.name, "seed": self.seed, "params": dict(self.params)}


def make_task(name: str, params: Mapping[str, int], seed: int) -> HandsOnTask:
    """A task, every parameter checked against its allowed values (a bad one is one BadValueError line)."""
    if name not in TASKS:
        raise BadValueError(f"unknown hands-on task {name!r}; known: {', '.join(TASKS)}")
    allowed = TASKS[name]["params"]
    if set(params) != set(allowed):
        raise BadValueError(f"task {name}: parameters must be exactly {', '.join(allowed)}")
    for key, values in allowed.items():
        value = params[key]
        if isinstance(value, bool) or not isinstance(value, int) or value not in values:
            raise BadValueError(f"task {name}: {key} must be one of {', '.join(map(str, values))}, not {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_SEED:
        raise BadValueError(f"task {name}: seed must be a whole number from 0 to {MAX_SEED - 1}")
    return HandsOnTask(name, dict(params), seed)


def task_from_json(doc: Any, label: str = "task file") -> HandsOnTask:
    """The task a ``task.json`` (written by ``scalemath problems handson``) describes."""
    if not isinstance(doc, dict) or not isinstance(doc.get("params"), dict) or "task" not in doc:
        raise BadValueError(f'{label} must be {{"task": ..., "seed": ..., "params": {{...}}}} as '
                            "'scalemath problems handson' writes it")
    return make_task(doc["task"], doc["params"], doc.get("seed"))
