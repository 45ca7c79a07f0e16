"""The space of serving configurations, built and ranked as NumPy arrays.

A candidate is a topology (a TPU slice or a GPU count), a way of sharding the replica over
it (1D tensor parallelism; 2D weight-stationary on a TPU slice for a dense model; expert
parallelism for a mixture of experts), a weight dtype, a KV-cache dtype and a decode batch.
Every combination is laid out as arrays at once; a vectorized mask keeps those whose
weights and caches fit in HBM (``inference.memory.max_batch``), and the engine's own closed
forms, compiled once (:class:`~scalemath.search.compiled.Compiled`), give each one's
collective time (``inference.decode.t_comms*``), step time, throughput and cost. Floats
live only here; :mod:`scalemath.search.serve` re-derives the winner exactly.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..catalog import hardware
from .. import quantities
from ..errors import BadValueError
from .compiled import Compiled

__all__ = ["Layout", "Space", "GPU_COLLECTIVE_LATENCY", "collective_latency", "STEP_FORMS", "MOE_STEP_FORMS",
           "step_form", "part_form", "layouts", "comm_quantity", "build",
           "batch_grid", "evaluate", "pareto", "slice_shape"]

#: Least time of one NVLink collective for a GPU whose catalog entry has no
#: ``nvlink_collective_latency_ns`` (a user's own file): the packaged catalog's figure, llm-analysis's
#: ``intra_node_min_message_latency``.
GPU_COLLECTIVE_LATENCY = Fraction(8, 10**6)


def collective_latency(chip: hardware.Chip) -> Fraction:
    """The chip's NVLink collective latency floor from the catalog, else :data:`GPU_COLLECTIVE_LATENCY`."""
    floor = chip.nvlink_collective_latency_s
    return GPU_COLLECTIVE_LATENCY if floor is None else floor
#: --comms: how the collectives enter the step (see scalemath.symbolic.decode_comms).
STEP_FORMS = {"critical": "inference.decode.step_time_comms", "overlap": "inference.decode.step_time_overlap",
              "none": "inference.decode.step_time"}
#: A mixture of experts' step forms read only the experts its batch touches (scalemath.symbolic.inference.moe_decode).
MOE_STEP_FORMS = {"critical": "inference.moe.step_time_comms", "overlap": "inference.moe.step_time_overlap",
                  "none": "inference.moe.step_time"}


def step_form(model, comms: str) -> str:
    """The step form ``--comms`` names, for a mixture of experts the one that reads only the experts touched."""
    return (MOE_STEP_FORMS if model is not None and model.is_moe else STEP_FORMS)[comms]


def part_form(model, part: str) -> str:
    """``inference.decode.<part>``; a mixture's weight loading counts only the experts its batch touches."""
    return "inference.moe.t_weights" if part == "t_weights" and model is not None and model.is_moe else \
        f"inference.decode.{part}"


EXACT_BATCHES = 2048  # every batch up to here; a 1 % geometric grid above (the winner is then refined)
MAX_SEARCHED_BATCH = 10**18  # the largest batch the grid holds (below 2^63)


@dataclass(frozen=True)
class Layout:
    """One way to lay a replica on one topology."""

    kind: str  # "single", "tp", "2d" or "ep"
    topology: str
    n: int
    shape: tuple[int, ...]
    hops: int = 0  # hops of the tensor-parallel (or YZ) collectives: floor(a/2) summed over the axes
    m_y: int = 1  # axes the tensor-parallel collectives span
    x: int = 1  # 2D: the X axis; EP: the slice's axes (x, y, z)
    y: int = 1
    z: int = 1

    @property
    def label(self) -> str:
        return {"single": "one chip, no collectives", "tp": f"1D tensor parallel over {self.n}",
                "2d": f"2D weight-stationary X={self.x}, YZ={self.n // self.x}",
                "ep": f"expert parallel over {self.n}"}[self.kind]

    def point(self) -> dict[str, int]:
        """The layout's values of the collective quantity's varying names."""
        return {"tp": {"hops": self.hops, "M_Y": self.m_y, "n_dev": self.n},
                "2d": {"n_dev": self.n, "X": self.x, "hops": self.hops},
                "ep": {"n_dev": self.n, "X": self.x, "Y": self.y, "Z": self.z, "hops": self.hops, "M_Y": self.m_y},
                "single": {}}[self.kind]


def slice_shape(chip: hardware.Chip, n: int) -> tuple[int, ...]:
    """A TPU slice of n chips as near-cubic (or near-square) axes; a GPU count as (n,)."""
    if chip.family == "gpu":
        return (n,)
    dims = chip.torus_dims or 2
    shape, left = [], n
    for i in range(dims, 1, -1):
        side = max(d for d in range(1, int(round(left ** (1 / i))) + 1) if left % d == 0)
        shape.append(side)
        left //= side
    return tuple(sorted(shape + [left]))


def _hops(axes: Sequence[int]) -> int:
    return sum(a // 2 for a in axes)


def layouts(chip: hardware.Chip, model, slices: Sequence[tuple[str, int]]) -> list[Layout]:
    """Every sharding of every topology (a few per topology: a short loop, not over candidates)."""
    gpu = chip.family == "gpu"
    out = []
    for name, n in slices:
        shape = slice_shape(chip, n) if gpu or "x" not in name else tuple(int(a) for a in name.split("x"))
        if n == 1:
            out.append(Layout("single", name, 1, shape))
            continue
        used = [a for a in shape if a > 1]
        out.append(Layout("tp", name, n, shape, _hops(shape), len(used)))
        if not gpu and not model.is_moe and not model.is_mla and len(used) >= 2:
            for x in sorted(set(used)):
                rest = list(shape)
                rest.remove(x)
                out.append(Layout("2d", name, n, shape, _hops(rest), 1, x))
        if model.is_moe and n <= model.E and model.E % n == 0:
            axes = tuple(sorted(shape, reverse=True)) + (1, 1)
            axes = axes[:2] + (int(np.prod(axes[2:])),)  # a 4-axis --topology folds its extra axes into Z
            out.append(Layout("ep", name, n, shape, _hops(shape), len(used), *axes))
    return out


def comm_quantity(kind: str, gpu: bool) -> str | None:
    return {("tp", False): "inference.decode.t_comms", ("tp", True): "inference.decode.t_comms_gpu",
            ("2d", False): "inference.decode.t_comms_2d", ("ep", False): "inference.decode.t_comms_ep",
            ("ep", True): "inference.decode.t_comms_ep_gpu"}.get((kind, gpu))


_VARYING = {"tp": ("B", "hops", "M_Y"), "2d": ("B", "n_dev", "X", "hops"),
            "ep": ("B", "n_dev", "X", "Y", "Z", "hops", "M_Y")}
_VARYING_GPU = {"tp": ("B", "n_dev"), "ep": ("B", "n_dev")}


def comm_fixed(chip: hardware.Chip) -> dict[str, object]:
    """Values the collective forms need that the catalog lacks for this chip (stated assumptions)."""
    if chip.family != "gpu":
        return {}
    fixed: dict[str, object] = {"t_coll": collective_latency(chip)}
    if chip.nic_bytes_per_s is None or chip.nvlink_domain is None:
        fixed["W_node"] = chip.bandwidth("nvlink")  # single-node topologies only (see serve.topologies)
        fixed["D_node"] = chip.nvlink_domain or 8
    return fixed


@dataclass
class Space:
    """The candidates as flat arrays (one entry per candidate) and what indexes them."""

    layouts: list[Layout]
    weight_dtypes: list[str]
    kv_dtypes: list[str]
    b_w: list[Fraction]
    kv_token: list[Fraction]  # per KV dtype
    batch: np.ndarray
    layout: np.ndarray
    wdt: np.ndarray
    kvdt: np.ndarray
    candidates: int = 0
    fits: np.ndarray | None = None
    t_comms: np.ndarray | None = None
    step: np.ndarray | None = None
    parts: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    throughput: np.ndarray | None = None
    cost: np.ndarray | None = None
    t_prefill: np.ndarray | None = None
    seconds: float = 0.0

    def point(self, i: int) -> dict[str, object]:
        """Candidate i's exact values of the step form's varying names."""
        lay = self.layouts[int(self.layout[i])]
        return {"B": int(self.batch[i]), "n_dev": lay.n, "b_w": self.b_w[int(self.wdt[i])],
                "kv_token": self.kv_token[int(self.kvdt[i])]}

    def subset(self, keep: np.ndarray) -> None:
        for name in ("batch", "layout", "wdt", "kvdt", "fits", "t_comms", "step", "throughput", "cost", "t_prefill"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value[keep])
        self.parts = {k: v[keep] for k, v in self.parts.items()}


def _memory(ctx, space: Space, context: int) -> np.ndarray:
    """Largest batch that fits, per (layout, weight dtype, KV dtype) triple, as a float array."""
    f = Compiled("inference.memory.max_batch", ctx, {"S": context}, ("n_dev", "b_w", "kv_token"))
    n = np.array([lay.n for lay in space.layouts], dtype=float)[:, None, None]
    bw = np.array([float(b) for b in space.b_w])[None, :, None]
    kv = np.array([float(k) for k in space.kv_token])[None, None, :]
    return f(n_dev=n, b_w=bw, kv_token=kv)


def batch_grid(max_batches: np.ndarray, pinned: int | None) -> np.ndarray:
    """Every batch up to EXACT_BATCHES, a 1 % geometric grid above, and every configuration's largest batch."""
    if pinned is not None:
        return np.array([pinned], dtype=np.int64)
    largest = float(max(1.0, np.nanmax(max_batches)))
    if largest > MAX_SEARCHED_BATCH:  # beyond 64-bit integers soon after (a user's catalog with petabytes of HBM)
        raise BadValueError(f"the largest batch that fits in memory, {largest:.3g} sequences, is beyond the "
                            f"10^{len(str(MAX_SEARCHED_BATCH)) - 1} the search counts to; pin one with --batch, "
                            "or give fewer chips or a longer --context")
    top = int(largest)
    grid = [np.arange(1, min(top, EXACT_BATCHES) + 1)]
    if top > EXACT_BATCHES:
        grid.append(np.unique(np.floor(np.geomspace(EXACT_BATCHES, top, int(np.log(top / EXACT_BATCHES) / 0.01) + 2))))
    own = max_batches[np.isfinite(max_batches) & (max_batches >= 1)]
    grid.append(own)
    return np.unique(np.concatenate(grid).astype(np.int64))


def build(ctx, chip, model, slices, weight_dtypes, kv_dtypes, kv_token, context, pinned, paired=False) -> Space:
    """Every combination of layout, dtypes and batch, with the memory mask applied; ``paired`` keeps only
    the KV dtype listed at the weight dtype's position (the cache in the weights' dtype)."""
    lays = layouts(chip, model, slices)
    b_w = [hardware.dtype_bytes(d) for d in weight_dtypes]
    space = Space(lays, list(weight_dtypes), list(kv_dtypes), [Fraction(b) for b in b_w],
                  [Fraction(k) for k in kv_token], *(np.empty(0, dtype=np.int64) for _ in range(4)))
    max_batch = _memory(ctx, space, context)  # [layout, weight dtype, kv dtype]
    grid = batch_grid(max_batch, pinned)
    L, W, K, Bi = np.meshgrid(np.arange(len(lays)), np.arange(len(b_w)), np.arange(len(kv_token)),
                              np.arange(len(grid)), indexing="ij")
    space.layout, space.wdt, space.kvdt, space.batch = L.ravel(), W.ravel(), K.ravel(), grid[Bi.ravel()]
    if paired:
        space.layout, space.wdt, space.kvdt, space.batch = (a[space.wdt == space.kvdt] for a in
                                                            (space.layout, space.wdt, space.kvdt, space.batch))
    space.candidates = space.batch.size
    space.fits = space.batch <= max_batch[space.layout, space.wdt, space.kvdt]
    space.subset(space.fits)
    return space


def evaluate(ctx, chip, space: Space, context: int, prompt: int, generate: int, mfu, comms: str,
             max_latency: Fraction | None) -> None:
    """Collectives, step, throughput and cost of every candidate that fits (NumPy, one call per form)."""
    start = time.process_time()
    gpu = chip.family == "gpu"
    n = np.array([lay.n for lay in space.layouts])[space.layout]
    kinds = np.array([lay.kind for lay in space.layouts])[space.layout]
    space.t_comms = np.zeros(space.batch.size)
    if comms != "none":
        for kind in ("tp", "2d", "ep"):
            mask = kinds == kind
            if not mask.any():
                continue
            varying = (_VARYING_GPU if gpu else _VARYING)[kind]
            f = Compiled(comm_quantity(kind, gpu), ctx, comm_fixed(chip), varying)
            columns = {name: np.array([lay.point().get(name, 0) for lay in space.layouts], dtype=float)
                       for name in varying if name != "B"}
            space.t_comms[mask] = f(B=space.batch[mask].astype(float),
                                    **{k: v[space.layout[mask]] for k, v in columns.items()})
    bw = np.array([float(b) for b in space.b_w])[space.wdt]
    kv = np.array([float(k) for k in space.kv_token])[space.kvdt]
    args = dict(B=space.batch.astype(float), n_dev=n.astype(float), b_w=bw, kv_token=kv)
    fixed, model = {"S": context}, ctx.get_model()
    for part in ("t_math", "t_weights", "t_kv"):
        names = ("B", "n_dev") if part == "t_math" else ("n_dev", "b_w") if part == "t_weights" else \
            ("B", "n_dev", "kv_token")
        names = ("B",) + names if part_form(model, part) == "inference.moe.t_weights" else names
        space.parts[part] = Compiled(part_form(model, part), ctx, fixed, names)(**{k: args[k] for k in names})
    space.parts["t_comms"] = space.t_comms
    if comms == "none":
        step = Compiled(step_form(model, "none"), ctx, fixed, tuple(args))
        space.step = step(**args)
    else:
        step = Compiled(step_form(model, comms), ctx, fixed, tuple(args) + ("t_comms",))
        space.step = step(**args, t_comms=space.t_comms)
    space.throughput = space.batch / (n * space.step)
    prefill = Compiled("inference.prefill.time", ctx, {"T": prompt, "MFU": mfu}, ("n_dev",))
    space.t_prefill = prefill(n_dev=n.astype(float))
    if chip.price_cents_per_hour:
        cost = Compiled("inference.cost.per_million_tokens_disaggregated", ctx, {"n_gen": generate},
                        ("B", "n_dev", "t_step", "t_prefill"))
        space.cost = cost(B=args["B"], n_dev=args["n_dev"], t_step=space.step, t_prefill=space.t_prefill)
    space.seconds = time.process_time() - start


def pareto(step: np.ndarray, throughput: np.ndarray) -> np.ndarray:
    """Indices of the latency-throughput front, fastest first: no other candidate is both faster and
    higher in throughput per chip."""
    order = np.lexsort((-throughput, step))
    best = np.maximum.accumulate(throughput[order])
    keep = np.empty(order.size, dtype=bool)
    keep[:1] = True
    keep[1:] = throughput[order][1:] > best[:-1] * (1 + 1e-12)
    return order[keep]


def rank(space: Space, objective: str, max_latency: Fraction | None) -> tuple[np.ndarray, np.ndarray]:
    """Feasible candidates (under the latency limit) and their order, best first: the objective, then fewer
    chips, then lower latency, then the smaller batch."""
    ok = np.ones(space.step.size, dtype=bool) if max_latency is None else space.step <= float(max_latency) * (1 + 1e-12)
    idx = np.flatnonzero(ok)
    score = -space.throughput[idx] if objective == "throughput" else space.cost[idx]
    n = np.array([lay.n for lay in space.layouts])[space.layout[idx]]
    best = score.min() if idx.size else 0
    level = np.where(np.abs(score - best) <= 1e-9 * np.abs(best), best, score)  # ties within float noise
    order = np.lexsort((space.batch[idx], space.step[idx], n, level))
    return idx, idx[order]


def groups(space: Space, ranked: np.ndarray) -> np.ndarray:
    """The best candidate of each (layout, weight dtype, KV dtype) configuration, in rank order."""
    key = (space.layout[ranked] * len(space.b_w) + space.wdt[ranked]) * len(space.kv_token) + space.kvdt[ranked]
    _, first = np.unique(key, return_index=True)
    return ranked[np.sort(first)]
