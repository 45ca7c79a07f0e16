"""The latency-throughput Pareto front of ``serve``'s search: every configuration no other beats on both
per-token latency and throughput per chip (serve's front, as the search priced it), the winner marked
at its exact values."""

from __future__ import annotations

from ..values.printing import with_unit
from .common import Figure, Mark, Panel, Series

__all__ = ["data"]


def _describe(row: dict) -> str:
    return f"{row['topology']} {row['layout']}, batch {row['batch']}"


def data(report: dict) -> Figure:
    """The front's (step time, tokens/s per chip) points, fastest first, and the chosen configuration."""
    front = report["pareto"]
    xs = tuple(row["step_time"] for row in front)
    ys = tuple(row["tokens_per_s_per_chip"] for row in front)
    series = [Series("Pareto front", xs, ys, color=0), Series("", xs, ys, kind="points", color=0)]
    best_step, best_rate = report["step"].value, report["throughput_per_chip"]
    chosen = (report["topology"], report["layout"], report["batch"])
    marks = []
    for i, what in ((0, "fastest"), (len(front) - 1, "most throughput")):
        row = front[i] if front else None
        if row is not None and (row["topology"], row["layout"], row["batch"]) != chosen and \
                (i == 0 or len(front) > 1):
            marks.append(Mark(f"{what}: {_describe(row)}", xs[i], ys[i], color=0, kind="op", group=len(marks) + 1))
    # the chosen one is a series of one point, so that its legend entry is drawn in its own colour (an op mark's
    # entry is grey: its shape stands for marks of several colours)
    series.append(Series(f"chosen ({report['objective']}): {report['topology']} {report['layout']}, batch "
                         f"{report['batch']}", (best_step,), (best_rate,), kind="points", color=1))
    spans = ()
    if report.get("max_latency") is not None:
        limit = report["max_latency"]
        spans = ((limit, max(xs + (best_step,)) * 2, f"over --max-latency {with_unit(limit, 's')}"),)
    panel = Panel("time per decode step (latency per token)", "throughput per chip", "s", "token/s",
                  tuple(series), tuple(marks), spans=spans, legend="center right")
    title = (f"Serving {report['model']} on {report['chip']}: context {report['context']}, "
             f"{report['weights']} weights, {report['kv_dtype']} KV cache")
    return Figure("pareto", title, (panel,),
                  note=f"{report['search']['candidates']:,} configurations searched; the front as the search priced "
                       f"them, the chosen one at its exact values (comms: {report['comms']})",
                  meta={"front": list(zip(xs, ys)), "chosen": (best_step, best_rate)})


def slices(ctx, topologies: list[str], context: int, limit=None) -> Figure:
    """The trade-off the book's Pareto figure shows (inference.md, 'Theoretical estimates for LLM latency and
    throughput', after the ESTI paper's PaLM figure): one model under 1D tensor parallelism on TPU slices of several sizes, each at batches 1, 2, 4, ... up to the
    largest whose caches fit, every point priced exactly by the forms ``serve`` ranks with
    (``inference.decode.step_time_comms`` with ``inference.decode.t_comms``), and the front of those no other
    point beats on both latency and throughput per chip. ``limit`` shades the steps slower than it."""
    import sympy as sp

    from .. import quantities as Q
    from ..errors import BadValueError, NoCrossoverError
    from ..search import serve_space
    from .decode import batches

    chip, model = ctx.get_chip(), ctx.get_model()
    if model is None:
        raise BadValueError("the trade-off plot needs a model: give --model NAME")
    if chip.family == "gpu":
        raise BadValueError("the slices trade-off is drawn for TPU slices; for a GPU use 'scalemath plot pareto'")
    points, lines = {}, []
    for i, name in enumerate(topologies):
        n = 1
        for a in name.split("x"):
            n *= int(a)
        (lay,) = [lay for lay in serve_space.layouts(chip, model, [(name, n)]) if lay.kind in ("tp", "single")]
        try:
            largest = Q.evaluate(Q.get("inference.memory.max_batch"), ctx, {"n_dev": n, "S": context}).value
        except NoCrossoverError:
            largest = 0
        if largest < 1:
            raise BadValueError(f"{model.name} with a context of {context} does not fit on {name} (not one "
                                "sequence's cache beside the weights); drop that slice or shorten the context")
        step = Q.evaluate(Q.get("inference.decode.step_time_comms"), ctx, {"n_dev": n, "S": context}).value
        if lay.kind == "tp":
            comms = Q.evaluate(Q.get("inference.decode.t_comms"), ctx, {"hops": lay.hops, "M_Y": lay.m_y}).value
        else:
            comms = 0
        step = step.subs({s: comms for s in step.free_symbols if s.name == "t_comms"})
        (b_sym,) = [s for s in step.free_symbols if s.name == "B"]
        xs = batches(int(largest))
        steps = tuple(step.subs(b_sym, b) for b in xs)
        rates = tuple(sp.Integer(b) / (n * t) for b, t in zip(xs, steps))
        for b, t, r in zip(xs, steps, rates):
            points[(name, b)] = (t, r)
        lines.append(Series(f"{name} ({n} chips)", steps, rates, color=i))
        lines.append(Series("", steps, rates, kind="points", color=i))
    front, best = [], None
    for key in sorted(points, key=lambda k: (points[k][0], -points[k][1])):
        if best is None or points[key][1] > best:
            front.append(key)
            best = points[key][1]
    lines.append(Series("Pareto front", tuple(points[k][0] for k in front), tuple(points[k][1] for k in front),
                        kind="dashed", color=8))
    spans = () if limit is None else ((limit, max(t for t, _ in points.values()) * 2, "slower than the limit"),)
    panel = Panel("time per decode step (latency per token)", "throughput per chip", "s", "token/s", tuple(lines),
                  spans=spans, legend="center right")
    w = ctx.weight_dtype or ctx.dtype or "bf16"
    kv = ctx.cache_dtype or w
    dtypes = f"{w} weights and KV cache" if kv == w else f"{w} weights, {kv} KV cache"
    return Figure("pareto-slices", f"{model.name} on {chip.name} slices: context {context}, {dtypes}",
                  (panel,), note="1D tensor parallelism on each slice, inference.decode.step_time_comms; batches 1, "
                                 "2, 4, ... to the largest that fits",
                  meta={"points": points, "front": front})
