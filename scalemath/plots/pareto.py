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
