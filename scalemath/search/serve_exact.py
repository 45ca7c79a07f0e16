"""The winner of a serving search derived exactly, and the comparisons that explain it.

:func:`winner` takes the ranked candidates of :mod:`scalemath.search.serve_space`, refines the
batch where the grid was coarse, and evaluates every registered quantity at the winning point
exactly (rationals, every step): the collectives, the step and its parts, memory, prefill,
disaggregation, cost, the book's tensor-parallel limits. The runners-up and the Pareto front
stay floats from the search (they are shown rounded, never re-derived).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import sympy as sp

from ..values import printing as formatting
from .. import quantities
from . import serve_space as search

__all__ = ["winner", "PARETO_POINTS"]

PARETO_POINTS = 60  # points of the front kept for plotting (evenly spread in latency)


def _ev(name: str, ctx: quantities.Context, given):
    q = quantities.get(name)
    names = {p.name for p in q.params}
    return quantities.evaluate(q, ctx, {k: v for k, v in given.items() if k in names})


def _refine(ctx, chip, space, i, context, prompt, generate, mfu, comms, max_latency, objective):
    """Past the exact part of the batch grid, try every batch between the winner and the next grid value."""
    b = int(space.batch[i])
    higher = space.batch[(space.layout == space.layout[i]) & (space.wdt == space.wdt[i]) & (space.kvdt == space.kvdt[i])
                         & (space.batch > b)]
    top = int(higher.min()) if higher.size else b + 1
    if top <= b + 1:
        return space, i
    mini = search.Space(space.layouts, space.weight_dtypes, space.kv_dtypes, space.b_w, space.kv_token,
                        np.arange(b, top, dtype=np.int64), *(np.full(top - b, int(a[i])) for a in
                                                             (space.layout, space.wdt, space.kvdt)))
    fits = search._memory(ctx, mini, context)[int(space.layout[i]), int(space.wdt[i]), int(space.kvdt[i])]
    mini.subset(mini.batch <= fits)
    search.evaluate(ctx, chip, mini, context, prompt, generate, mfu, comms, max_latency)
    _, ranked = search.rank(mini, objective, max_latency)
    return (mini, int(ranked[0])) if ranked.size else (space, i)


def _step(wctx, chip, lay, comms, b, fixed):
    """(collectives, step) derivations at batch b."""
    comm = None
    if lay.kind != "single" and comms != "none":
        comm = _ev(search.comm_quantity(lay.kind, chip.family == "gpu"), wctx,
                   {**lay.point(), "B": b, **search.comm_fixed(chip)})
        return comm, _ev(search.step_form(wctx.get_model(), comms), wctx, {**fixed, "B": b, "t_comms": comm.value})
    return comm, _ev(search.step_form(wctx.get_model(), "none"), wctx, {**fixed, "B": b})


def _tp_limits(wctx, chip, model, lay, b, compute_bound):
    """The book's tensor-parallel limits (F8.11, F7.14, F7.24) for the chosen 1D degree, and warnings."""
    if lay.kind != "tp" or model.is_moe:
        return {}, []
    gpu = chip.family == "gpu"
    limits = {"compute_bound": _ev("parallel.gpu.tp.max_degree_in_node" if gpu else
                                   "inference.tp.max_degree_compute_bound", wctx, {"M_Y": lay.m_y}),
              "memory_bound": _ev("inference.tp.max_degree_memory_bound", wctx,
                                  {"B": b, **({"W_ici": chip.nvlink_bytes_per_s} if gpu else {})})}
    if not gpu:
        limits["latency_bound"] = _ev("inference.tp.latency_bound_degree", wctx, {"B": b})
    warnings = []
    regime = "compute_bound" if compute_bound else "memory_bound"
    limit = limits[regime].value
    if lay.n > limit:
        why = ("F8.11: Y < F·M_Y·W_ici/C at large batch" if compute_bound else
               "F7.14: Y < F/(B·β) with β = W_hbm/W_ici, memory-bound") if not gpu else \
            ("gpus.md: Y < 2·F·W_gpu/(C·b_x) inside a node" if compute_bound else "F7.14 with NVLink as the interconnect")
        warnings.append(f"{lay.n}-way tensor parallelism exceeds the book's limit of {formatting.decimal(limit)} for a "
                        f"{regime.replace('_', '-')} decode step ({why}): the activation collectives outlast the "
                        "matmuls they serve")
    if "latency_bound" in limits and lay.n > limits["latency_bound"].value:
        warnings.append(f"at batch {b} the {lay.n}-way collectives are latency-bound (F7.24: Y > b_x·B·D/(W_link·t_hop) "
                        f"= {formatting.decimal(limits['latency_bound'].value)}): each costs the hop latency, which "
                        "the step counts")
    return limits, warnings


def _row(space, i, best_tp, best_cost, objective):
    lay = space.layouts[int(space.layout[i])]
    parts = {k: float(v[i]) for k, v in space.parts.items()}
    row = {"topology": lay.topology, "chips": lay.n, "layout": lay.label, "weights": space.weight_dtypes[int(space.wdt[i])],
           "kv_dtype": space.kv_dtypes[int(space.kvdt[i])], "batch": int(space.batch[i]),
           "step_time": float(space.step[i]), "tokens_per_s_per_chip": float(space.throughput[i]),
           "cost_cents_per_million_tokens": None if space.cost is None else float(space.cost[i])}
    bound = {"t_math": "compute", "t_weights": "weight loading", "t_kv": "KV-cache loading",
             "t_comms": "collectives"}[max(parts, key=parts.get)]
    if objective == "cost":
        gap, what = row["cost_cents_per_million_tokens"] / best_cost - 1, "dearer per token"
    else:
        gap, what = 1 - row["tokens_per_s_per_chip"] / best_tp, "less throughput per chip"
    lost = f"{100 * gap:.3g} % {what}" if gap > 1e-9 else \
        "ties the winner, which comes first by fewer chips, then lower latency"
    row["why"] = f"{lost}; its step is {formatting.with_unit(sp.Float(row['step_time']), 's')}, mostly " \
                 f"{bound}"
    return row


def _front(space):
    idx = search.pareto(space.step, space.throughput)
    if idx.size > PARETO_POINTS:  # evenly spread in log latency, ends kept
        logs = np.log(space.step[idx])
        targets = np.linspace(logs[0], logs[-1], PARETO_POINTS)
        idx = idx[np.unique(np.searchsorted(logs, targets).clip(0, idx.size - 1))]
    return [_row(space, int(i), 1.0, 1.0, "throughput") | {"why": None} for i in idx]


def winner(ctx, chip, model, space, ranked, context, prompt, generate, mfu, comms, max_latency, objective, pinned):
    i = int(ranked[0])
    full = space
    if pinned is None and int(space.batch[i]) >= search.EXACT_BATCHES:
        space, i = _refine(ctx, chip, space, i, context, prompt, generate, mfu, comms, max_latency, objective)
    lay = space.layouts[int(space.layout[i])]
    w, kvd = space.weight_dtypes[int(space.wdt[i])], space.kv_dtypes[int(space.kvdt[i])]
    wctx = dataclasses.replace(ctx, weight_dtype=w, kv_dtype=kvd)
    point = space.point(i)
    b, n = point["B"], lay.n
    fixed = {"S": context, "n_dev": n, "kv_token": point["kv_token"], "b_w": point["b_w"]}
    comm, step = _step(wctx, chip, lay, comms, b, fixed)
    while max_latency is not None and step.value > max_latency and b > 1:  # float noise at the limit
        b -= 1
        comm, step = _step(wctx, chip, lay, comms, b, fixed)
    given = {**fixed, "B": b}
    parts = {k: _ev(search.part_form(model, k), wctx, given) for k in ("t_math", "t_weights", "t_kv")}
    if comm is not None:
        parts["t_comms"] = comm
    bound = max(parts, key=lambda k: parts[k].value)
    overlap = None
    if comm is not None and comms == "critical":
        overlap = _ev(search.step_form(model, "overlap"), wctx, {**given, "t_comms": comm.value})
    prefill = _ev("inference.prefill.time", wctx, {"T": prompt, "MFU": mfu, "n_dev": n})
    disagg = _ev("inference.serving.prefill_servers", wctx,
                 {"B": b, "t_prefill": prefill.value, "t_step": step.value, "n_gen": generate})
    experts = None
    if model.is_moe:  # the experts each MoE layer reads: at the decode batch, and at prefill (the prompt's T tokens)
        experts = {"E": model.E, "k": model.k, "layers": model.moe_layers,
                   "decode": _ev("inference.moe.experts_read", wctx, {"B": b}),
                   "prefill": _ev("inference.moe.experts_read", wctx, {"B": prompt})}
    crit = _ev("inference.decode.critical_batch_moe" if model.is_moe else "inference.decode.critical_batch", wctx, {})
    max_batch = _ev("inference.memory.max_batch", wctx, given)
    need = _ev("inference.memory.min_chips", wctx, given)
    cost = cost_all = None
    if chip.price_cents_per_hour:
        cost = _ev("inference.cost.per_million_tokens", wctx, {**given, "t_step": step.value})
        cost_all = _ev("inference.cost.per_million_tokens_disaggregated", wctx,
                       {**given, "t_step": step.value, "t_prefill": prefill.value, "n_gen": generate})
    limits, warnings = _tp_limits(wctx, chip, model, lay, b, parts["t_math"].value > parts["t_weights"].value)
    sweep, s = [], 1
    while s <= int(max_batch.value) and len(sweep) < 24:
        value = _step(wctx, chip, lay, comms, s, fixed)[1].value
        sweep.append((s, value, sp.Integer(s) / (n * value)))
        s *= 2
    best_tp = float(sp.Integer(b) / (n * step.value))
    best_cost = None if cost_all is None else float(cost_all.value)
    groups = search.groups(full, ranked)
    own = (full.layout[ranked[0]], full.wdt[ranked[0]], full.kvdt[ranked[0]])
    runners = [_row(full, int(j), best_tp, best_cost, objective) for j in groups
               if (full.layout[j], full.wdt[j], full.kvdt[j]) != own][:5]
    return {"model": model.key, "chip": chip.key, "weights": w, "kv_dtype": kvd, "batch": b, "topology": lay.topology,
            "chips": n, "shape": lay.shape, "layout": lay.label, "layout_kind": lay.kind, "min_chips": need,
            "step": step, "step_quantity": search.step_form(model, comms if comm is not None else "none"),
            "experts": experts, "comm": comm, "overlap_step": overlap, "parts": parts, "bound": bound,
            "throughput_per_chip": sp.Integer(b) / (n * step.value), "prefill": prefill, "disaggregation": disagg,
            "critical_batch": crit, "max_batch": max_batch, "cost": cost, "cost_disaggregated": cost_all,
            "tp_limits": limits, "warnings": warnings, "sweep": sweep, "runners_up": runners,
            "pareto": _front(full), "gpu_collective_latency": search.collective_latency(chip)
            if chip.family == "gpu" else None}
