"""A collective's time and effective bandwidth against message size on one ring of a TPU slice, the
latency-bound regime shaded: below V* a ring's hops cost more than its bytes (sharding.md, S-5)."""

from __future__ import annotations

import sympy as sp

from .. import quantities as Q
from ..errors import BadValueError
from ..values.printing import with_unit
from ..symbolic.symbols import SYMBOLS
from .common import Figure, Mark, Panel, Series

__all__ = ["COLLECTIVES", "data"]

#: name -> (the engine's time with hop latency, or None; the bandwidth-bound time)
COLLECTIVES = {
    "all-gather": ("collective.all_gather.latency_aware", "collective.all_gather.time"),
    "reduce-scatter": (None, "collective.reduce_scatter.time"),
    "all-reduce": (None, "collective.all_reduce.time"),
    "all-to-all": (None, "collective.all_to_all.time"),
}
SIZES = tuple(2 ** k for k in range(10, 35))  # 1 KiB .. 16 GiB


def _value(name: str, ctx: Q.Context, given: dict):
    ev = Q.evaluate(Q.get(name), ctx, given)
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        raise BadValueError(f"{name} still depends on {missing} on {ctx.chip}; give it with --set")
    return ev.value


def data(ctx: Q.Context, collective: str = "all-gather", ring: int = 16) -> Figure:
    """Time (the engine's form at each size, exact) and bandwidth V / time over SIZES on a ring of ``ring`` chips."""
    if collective not in COLLECTIVES:
        raise BadValueError(f"--collective {collective}: choose one of {', '.join(COLLECTIVES)}")
    chip = ctx.get_chip()
    if chip is not None and chip.family == "gpu":
        raise BadValueError(f"{ctx.chip} is a GPU: the collective plot draws a TPU ICI ring (collective.*); pick a "
                            "TPU chip, e.g. --chip tpu-v5e")
    latency_q, bandwidth_q = COLLECTIVES[collective]
    main = latency_q or bandwidth_q
    given = {"N": ring}
    spans, marks, sizes = [], [], SIZES
    cross = None
    if latency_q is not None:
        form = Q.evaluate(Q.get(latency_q), ctx, given).value  # Max(hops term, bytes term), free in V
        V = SYMBOLS["V"].symbol
        hops, nbytes = sorted(form.args, key=lambda a: a.has(V))
        cross = sp.solve(sp.Eq(hops, nbytes), V)[0]
        sizes = tuple(sorted(set(SIZES) | {cross}))
        spans.append((SIZES[0], cross, "latency-bound"))
        marks.append(Mark(f"V* = {with_unit(cross, 'byte')}", cross, hops, color=1, kind="ridge"))
    times = [_value(main, ctx, {**given, "V": v}) for v in sizes]
    series = [Series(f"{collective} ({main})", sizes, tuple(times), color=0)]
    if latency_q is not None:
        reference = [_value(bandwidth_q, ctx, {**given, "V": v}) for v in sizes]
        series.append(Series(f"bandwidth-bound ({bandwidth_q})", sizes, tuple(reference), kind="dashed", color=8))
    bandwidth = tuple(v / t for v, t in zip(sizes, times))
    time_panel = Panel("message size V", "time", "byte", "s", tuple(series), tuple(marks), spans=tuple(spans),
                       legend="upper left")
    bw_series = (Series("V / time", sizes, bandwidth, color=0),)
    bw_marks = (Mark(f"V* = {with_unit(cross, 'byte')}", cross, cross / _value(main, ctx, {**given, "V": cross}), color=1,
                     kind="ridge"),) if cross is not None else ()
    bw_panel = Panel("message size V", "effective bandwidth", "byte", "byte/s", bw_series, bw_marks,
                     spans=tuple(spans), legend="lower right")
    title = f"{collective} on a ring of {ring} {chip.name if chip else ''} chips"
    note = (f"{main}; V* = N·t_hop·W_ici/2, where one hop's latency costs as much as the bytes" if latency_q else
            f"{main}: bandwidth-bound (the engine has no hop-latency form for {collective})")
    return Figure("collective", title, (time_panel, bw_panel), note=note,
                  meta={"sizes": sizes, "times": times, "bandwidth": bandwidth, "crossover": cross})
