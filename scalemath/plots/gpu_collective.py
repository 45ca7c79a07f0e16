"""GPU collectives against message size (gpus.md, 'Intra-node collectives', 'Cross-node collectives' and
Appendix B): a ring collective inside an NVLink node and across nodes of the fat tree, each at least the
catalog's fixed cost of one collective on that network (the latency floor); AllReduce with and without
in-switch reduction (SHARP); the ragged (top-k) AllToAll, the book's approximation against the expected cost.

Every time is an engine quantity evaluated for the chip (``gpu.*``), with V left free and then set to each size:
these forms are proportional to V, so the size where a curve leaves its floor is t_floor / T(1 byte), exact.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from .. import quantities as Q
from ..errors import BadValueError
from ..symbolic.collectives.gpu_node import gpu_ragged_all_to_all_time_exact
from ..symbolic.symbols import SYMBOLS
from ..values.printing import with_unit
from .common import Figure, Mark, Panel, Series

__all__ = ["GPU_COLLECTIVES", "SIZES", "gpu_chip", "floors", "data", "sharp_data", "ragged_data"]

#: name -> (inside one NVLink node, across nodes of the fat tree)
GPU_COLLECTIVES = {
    "all-gather": ("gpu.all_gather.time", "gpu.all_gather.cross_node_time"),
    "reduce-scatter": ("gpu.reduce_scatter.time", "gpu.reduce_scatter.cross_node_time"),
    "all-reduce": ("gpu.all_reduce.time", "gpu.all_reduce.cross_node_time"),
    "all-to-all": ("gpu.all_to_all.time", "gpu.all_to_all.cross_node_time"),
}
#: nccl-tests' bus bandwidth, where the engine has its form
BUS = {"all-gather": "gpu.all_gather.bus_bandwidth", "all-reduce": "gpu.all_reduce.bus_bandwidth"}
SIZES = tuple(2 ** k for k in range(10, 35))  # 1 KiB .. 16 GiB
_V = SYMBOLS["V"].symbol


def gpu_chip(ctx: Q.Context):
    chip = ctx.get_chip()
    if chip is None or chip.family != "gpu":
        raise BadValueError(f"{ctx.chip} is not a GPU: this figure prices NVLink and the scale-out network "
                            "(gpu.*); pick a GPU, e.g. --chip h100")
    return chip


def floors(chip) -> tuple[Fraction, Fraction]:
    """The catalog's fixed cost of one collective inside the NVLink domain and across nodes, in seconds."""
    return tuple(Fraction(chip.collective_latency(n).value, 10**9) for n in ("nvlink", "nic"))


def _per_byte(name: str, ctx: Q.Context, given: dict) -> sp.Expr:
    """The quantity's time for a 1-byte message (its forms are V times this), exact."""
    q = Q.get(name)
    params = {p.name for p in q.params}
    ev = Q.evaluate(q, ctx, {k: v for k, v in {**given, "V": 1}.items() if k in params})
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        raise BadValueError(f"{name} still depends on {missing} on {ctx.chip}")
    return sp.sympify(ev.value)


def _curve(per_byte, floor, sizes):
    """The sizes with the corner added, max(floor, V x per_byte) at each, and the corner: the size where the two
    meet."""
    floor = sp.Rational(floor.numerator, floor.denominator)
    corner = floor / per_byte
    xs = tuple(sorted(set(sizes) | ({corner} if sizes[0] < corner < sizes[-1] else set())))
    return xs, tuple(sp.Max(floor, per_byte * v) for v in xs), corner


def _bandwidth_panel(series, marks, spans, label="bandwidth V / time"):
    return Panel("message size V", label, "byte", "byte/s", tuple(series), tuple(marks), spans=tuple(spans),
                 legend="lower right")


def data(ctx: Q.Context, collective: str = "all-reduce", gpus: int | None = None, nodes: int = 4) -> Figure:
    """Time and bandwidth over SIZES inside a node of ``gpus`` GPUs (default: the chip's NVLink domain) and
    across ``nodes`` nodes, each curve at least its network's latency floor."""
    if collective not in GPU_COLLECTIVES:
        raise BadValueError(f"--collective {collective}: choose one of {', '.join(GPU_COLLECTIVES)}")
    chip = gpu_chip(ctx)
    n = gpus or chip.nvlink_domain
    if n is None:
        raise BadValueError(f"{ctx.chip} has no NVLink domain size in the catalog; give --gpus")
    inside_q, across_q = GPU_COLLECTIVES[collective]
    t_in, t_out = floors(chip)
    inside_b = _per_byte(inside_q, ctx, {"N": n})
    across_b = _per_byte(across_q, ctx, {"M_nodes": nodes})
    x_in, inside, v_in = _curve(inside_b, t_in, SIZES)
    x_out, across, v_out = _curve(across_b, t_out, SIZES)
    spans = [(SIZES[0], v_in, "latency floor (in a node)")]
    label_in, label_out = f"in a node of {n} ({inside_q})", f"across {nodes} nodes ({across_q})"
    marks = (Mark(f"V* = {with_unit(v_in, 'byte')}", v_in, t_in, color=0, kind="ridge"),)
    time_panel = Panel("message size V", "time", "byte", "s",
                       (Series(label_in, x_in, inside, color=0), Series(label_out, x_out, across, color=1)),
                       marks, spans=tuple(spans), legend="upper left")
    bw_in = tuple(v / t for v, t in zip(x_in, inside))
    bw_out = tuple(v / t for v, t in zip(x_out, across))
    bw = [Series("in a node, V / time", x_in, bw_in, color=0), Series("across nodes, V / time", x_out, bw_out, color=1)]
    bus = None
    if collective in BUS:
        bus = tuple(sp.sympify(Q.evaluate(Q.get(BUS[collective]), ctx, {"N": n, "V": v, "t_meas": t}).value)
                    for v, t in zip(x_in, inside))
        bw.append(Series(f"in a node, nccl-tests bus bandwidth ({BUS[collective]})", x_in, bus, kind="dashed",
                         color=2))
    title = f"{collective} on {chip.name}: {n} GPUs over NVLink, and across {nodes} nodes"
    note = (f"time = max(latency floor, the engine's bandwidth form); floors {with_unit(t_in, 's')} (NVLink) and "
            f"{with_unit(t_out, 's')} (scale-out), the catalog's collective latencies; across nodes the floor ends "
            f"at V* = {with_unit(v_out, 'byte')}")
    return Figure("collective", title, (time_panel, _bandwidth_panel(bw, (), spans)), note=note,
                  meta={"sizes": x_in, "sizes_across": x_out, "inside": inside, "across": across,
                        "bandwidth_inside": bw_in,
                        "bandwidth_across": bw_out, "bus": bus, "crossover_inside": v_in,
                        "crossover_across": v_out, "floors": (t_in, t_out), "gpus": n, "nodes": nodes})


def sharp_data(ctx: Q.Context, gpus: int | None = None) -> Figure:
    """AllReduce in one NVLink node, a ring against SHARP (the switches reduce), time and bandwidth over SIZES."""
    chip = gpu_chip(ctx)
    if chip.nvlink_switch is None:
        raise BadValueError(f"{ctx.chip} has no NVSwitch with in-network reduction in the catalog (SHARP came with "
                            "Hopper's third-generation NVSwitch); pick e.g. --chip h100")
    n = gpus or chip.nvlink_domain
    if n is None:
        raise BadValueError(f"{ctx.chip} has no NVLink domain size in the catalog; give --gpus")
    t_in, _ = floors(chip)
    x_ring, ring, v_ring = _curve(_per_byte("gpu.all_reduce.time", ctx, {"N": n}), t_in, SIZES)
    x_sharp, sharp, v_sharp = _curve(_per_byte("gpu.all_reduce.sharp_time", ctx, {"N": n}), t_in, SIZES)
    speedup = sp.sympify(Q.evaluate(Q.get("gpu.all_reduce.sharp_speedup"), ctx, {"N": n}).value)
    spans = [(SIZES[0], v_sharp, "latency floor")]
    marks = (Mark(f"SHARP leaves the floor at {with_unit(v_sharp, 'byte')}", v_sharp, t_in, color=1, kind="ridge"),)
    time_panel = Panel("message size V", "AllReduce time", "byte", "s",
                       (Series("ring: ReduceScatter + AllGather (gpu.all_reduce.time)", x_ring, ring, color=0),
                        Series("SHARP: the switches reduce (gpu.all_reduce.sharp_time)", x_sharp, sharp, color=1)),
                       marks, spans=tuple(spans), legend="upper left")
    bw_ring = tuple(v / t for v, t in zip(x_ring, ring))
    bw_sharp = tuple(v / t for v, t in zip(x_sharp, sharp))
    bw_panel = _bandwidth_panel((Series("ring, V / time", x_ring, bw_ring, color=0),
                                 Series("SHARP, V / time", x_sharp, bw_sharp, color=1)), (), spans)
    return Figure("sharp", f"AllReduce over {n} x {chip.name} in one NVLink node: ring against SHARP",
                  (time_panel, bw_panel),
                  note=f"SHARP sends V bytes per GPU, the ring 2V(N-1)/N: {float(speedup):.3g}x faster for large V "
                       f"(gpu.all_reduce.sharp_speedup); both at least {with_unit(t_in, 's')}, the ring "
                       f"until {with_unit(v_ring, 'byte')}",
                  meta={"sizes_ring": x_ring, "sizes_sharp": x_sharp, "ring": ring, "sharp": sharp, "speedup": speedup,
                        "floor": t_in,
                        "crossover_ring": v_ring, "crossover_sharp": v_sharp})


def ragged_data(ctx: Q.Context, gpus: int | None = None, nbytes: int = 2**30) -> Figure:
    """A ragged AllToAll of ``nbytes`` in one node against k, the experts each token goes to: the book's
    min(k/N, 1) approximation, the expected cost with k random destinations, and the dense AllToAll."""
    chip = gpu_chip(ctx)
    n = gpus or chip.nvlink_domain
    if n is None or n < 2:
        raise BadValueError(f"{ctx.chip}: give --gpus, at least 2")
    ks = tuple(range(1, 2 * n + 1))
    given = {"N": n, "V": nbytes}
    dense = _per_byte("gpu.all_to_all.time", ctx, {"N": n}) * nbytes
    approx = tuple(_per_byte("gpu.all_to_all.ragged_time", ctx, {"N": n, "k_top": k}) * nbytes for k in ks)
    exact_form = gpu_ragged_all_to_all_time_exact()
    share = exact_form.steps[0].expr
    syms = {SYMBOLS[name].symbol: value for name, value in given.items()}
    exact = tuple(sp.sympify(share.subs({**syms, SYMBOLS["k_top"].symbol: k})) * dense for k in ks)
    series = (Series("approximation: min(k/N, 1) x dense (gpu.all_to_all.ragged_time)", ks, approx, color=0),
              Series("expected: (1 - ((N-1)/N)^k) x dense", ks, exact, color=1),
              Series("dense AllToAll (gpu.all_to_all.time)", ks, (dense,) * len(ks), kind="dashed", color=8))
    panel = Panel("k, destinations per token (top-k)", "AllToAll time", "1", "s", series,
                  (Mark(f"k = N = {n}", n, approx[n - 1], color=0, kind="ridge"),), xlog=False, ylog=False,
                  legend="lower right")
    at_n = exact[n - 1] / dense
    return Figure("ragged", f"Ragged AllToAll of {with_unit(nbytes, 'byte')} over {n} x {chip.name}", (panel,),
                  note=f"gpus.md, Appendix B: min(k/N, 1) is exact at k = 1; at k = N, random picks reach "
                       f"{float(at_n):.0%} of the destinations",
                  meta={"k": ks, "approx": approx, "exact": exact, "dense": dense, "gpus": n, "bytes": nbytes})
