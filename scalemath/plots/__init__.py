"""Figures drawn from the engine: the roofline, compute against communication in training, decoding,
serve's Pareto front, collectives against message size, plan's search as heat maps, a table's chips,
and the book's own figures (:mod:`.book`).

Each kind is a module with a pure ``data(...)`` function that returns a :class:`~.common.Figure` of
exact engine values, and the drawing in :mod:`.common`; :func:`.output.save` writes PNG, SVG or PDF
with deterministic bytes. matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

__all__ = ["KINDS"]

#: The kinds of figure ``scalemath plot`` draws, and what each shows.
KINDS = {
    "roofline": "chips' rooflines on log-log axes, ridge points labelled, your ops placed on them",
    "training": "compute against communication time per layer over the batch, for parallelism schemes",
    "decode": "decode step time and throughput per chip against batch, for context lengths",
    "pareto": "the latency-throughput Pareto front of serve's search",
    "collective": "a collective's time and bandwidth against message size, the latency-bound regime shaded",
    "plan": "plan's search as heat maps over two degrees: where it fits, and the best step time",
    "sharp": "AllReduce in an NVLink node with and without in-switch reduction (SHARP) against message size",
    "ragged": "a ragged (top-k) AllToAll against k: the book's approximation and the expected cost",
    "sharded": "a collective over X of an array also sharded over Y, against Y (GPUs, Pop Quiz 3)",
    "serving": "a decode step's time split into parameters, KV caches and FLOPs against batch",
    "speculative": "speculative decoding's expected speed-up against acceptance rate and draft length",
}
