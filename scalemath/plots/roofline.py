"""The roofline: attainable FLOPs/s against arithmetic intensity on log-log axes, one line per chip,
the ridge points (roofline.critical_intensity) labelled and the user's ops placed on them.

An op is written ``"NAME SYM=VALUE ..."`` where ``NAME.flops`` and ``NAME.bytes`` are quantities, e.g.
``"matmul B=512 D=8192 F=32768"``, ``"inference.decode B=64 S=8192 n_dev=8"`` (with ``--model``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .. import quantities as Q
from ..errors import BadValueError
from ..values.parse import parse_assignments, shorten
from ..values.printing import decimal
from .common import Figure, Mark, Panel, Series

__all__ = ["Op", "parse_op", "data", "draw"]


@dataclass(frozen=True)
class Op:
    name: str  # the quantities' prefix: NAME.flops, NAME.bytes
    given: dict
    text: str


def parse_op(text: str) -> Op:
    """``"matmul B=512 D=8192 F=32768"`` -> Op('matmul', {B: 512, ...}); a clear error otherwise."""
    words = text.split()
    if not words:
        raise BadValueError("--op is empty; write it like \"matmul B=512 D=8192 F=32768\"")
    name = words[0]
    for part in ("flops", "bytes"):
        if f"{name}.{part}" not in Q.QUANTITIES:
            have = sorted({n.rsplit(".", 1)[0] for n in Q.QUANTITIES if n.endswith(".flops")
                           and n.rsplit(".", 1)[0] + ".bytes" in Q.QUANTITIES})
            raise BadValueError(f"--op {shorten(text)}: {shorten(name)} has no {name}.{part} quantity; an op is one "
                                f"of {', '.join(have)} followed by SYM=VALUE, e.g. \"matmul B=512 D=8192 F=32768\"")
    return Op(name, parse_assignments([",".join(words[1:])]), text)


def _numeric(ev, what: str):
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        raise BadValueError(f"{what} still depends on {missing}; give {'it' if ',' not in missing else 'them'} "
                            "in the op, e.g. \"matmul B=512 D=8192 F=32768\"")
    return ev.value


#: The arithmetic intensities an op may have on the plot (the axis spans them in powers of two): 10^-25 to
#: 10^25 FLOP/byte, far past any real op, and inside what a figure shows (plots.common.PLOTTABLE); an op
#: with B=1e-2000 made a grid of 13000 points
MAX_INTENSITY = sp.Integer(10) ** 25


def op_point(op: Op, ctx: Q.Context) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(FLOPs, bytes, intensity) of ``op`` on ``ctx``'s chip and dtypes, exact."""
    flops = _numeric(Q.evaluate(Q.get(f"{op.name}.flops"), ctx, _only(op, f"{op.name}.flops")), f"{op.name}.flops")
    nbytes = _numeric(Q.evaluate(Q.get(f"{op.name}.bytes"), ctx, _only(op, f"{op.name}.bytes")), f"{op.name}.bytes")
    intensity = flops / nbytes
    if not 1 / MAX_INTENSITY <= intensity <= MAX_INTENSITY:
        raise BadValueError(f"--op {shorten(op.text)}: its arithmetic intensity, {decimal(intensity)} FLOP/byte, "
                            "is beyond what the roofline shows (10^-25 to 10^25 FLOP/byte)")
    return flops, nbytes, intensity


def _only(op: Op, quantity: str) -> dict:
    """The op's values that ``quantity`` takes (matmul.flops has no b_w); a name neither takes is an error."""
    taken = {p.name for p in Q.get(quantity).params}
    both = taken | {p.name for p in Q.get(quantity.rsplit(".", 1)[0] + ".bytes").params} \
        | {p.name for p in Q.get(quantity.rsplit(".", 1)[0] + ".flops").params}
    for name in op.given:
        if name not in both:
            raise BadValueError(f"--op {shorten(op.text)}: {name} is not a parameter of {op.name}; it takes "
                                f"{', '.join(sorted(both))}")
    return {k: v for k, v in op.given.items() if k in taken}


def _floor_log2(value) -> int:
    """floor(log2(value)) of a positive number, from the bit lengths of its exact fraction (SymPy's floor of
    log(x, 2) ran for minutes on a rational of hundreds of digits, an op with B=1e300); an irrational value
    is rounded to 30 digits first.

    >>> _floor_log2(sp.Rational(9850, 41)), _floor_log2(sp.Rational(1, 3)), _floor_log2(8), _floor_log2(10**300)
    (7, -2, 3, 996)
    """
    value = sp.sympify(value)
    value = value if value.is_Rational else sp.Rational(sp.N(value, 30))
    p, q = int(value.p), int(value.q)
    k = p.bit_length() - q.bit_length()
    return k if p << max(0, -k) >= q << max(0, k) else k - 1


def _grid(lo, hi) -> list[sp.Rational]:
    """Powers of two from below ``lo`` to above ``hi`` (exact)."""
    a = _floor_log2(lo) - 1
    b = -_floor_log2(1 / hi) + 1  # ceil(log2(hi)) + 1
    return [sp.Rational(2) ** k for k in range(a, b + 1)]


def data(contexts: list[Q.Context], ops: list[Op] = ()) -> Figure:
    """Each chip's roofline (roofline.attainable_flops over intensity), ridge and the ops, exact."""
    crit_q, attain_q = Q.get("roofline.critical_intensity"), Q.get("roofline.attainable_flops")
    ridges = {ctx.chip: Q.evaluate(crit_q, ctx).value for ctx in contexts}
    points = {(op.text, ctx.chip): op_point(op, ctx) for op in ops for ctx in contexts}
    every = list(ridges.values()) + [p[2] for p in points.values()]
    grid = _grid(min(every) / 16, max(every) * 16)
    series, marks = [], []
    for i, ctx in enumerate(contexts):
        xs = sorted(set(grid) | {ridges[ctx.chip]})
        ys = [Q.evaluate(attain_q, ctx, {"AI": x}).value for x in xs]
        dtype = ctx.compute_dtype or "bf16"
        series.append(Series(f"{ctx.get_chip().name} ({dtype})", tuple(xs), tuple(ys), color=i))
        ridge_y = Q.evaluate(attain_q, ctx, {"AI": ridges[ctx.chip]}).value
        marks.append(Mark(f"ridge {float(ridges[ctx.chip]):.0f} FLOP/B", ridges[ctx.chip], ridge_y, color=i,
                          kind="ridge"))
    for j, op in enumerate(ops):
        for i, ctx in enumerate(contexts):
            _, _, ai = points[(op.text, ctx.chip)]
            y = Q.evaluate(attain_q, ctx, {"AI": ai}).value
            ais = sorted({float(points[(op.text, c.chip)][2]) for c in contexts})
            label = f"{op.text} ({' / '.join(f'{a:.3g}' for a in ais)} FLOP/B)"
            marks.append(Mark(label, ai, y, color=i, kind="op", group=j))
    panel = Panel("arithmetic intensity", "attainable FLOPs/s", "FLOP/byte", "FLOP/s", tuple(series), tuple(marks),
                  legend="lower right")
    chips = ", ".join(ctx.chip for ctx in contexts)
    return Figure("roofline", f"Roofline: {chips}", (panel,),
                  note="min(C, W_hbm · intensity); ridge = C / W_hbm (roofline.critical_intensity)",
                  meta={"ridges": ridges, "ops": points})


def draw(figure: Figure):
    from .common import render

    return render(figure)


def batch_data(ctx: Q.Context, shapes: list[tuple[int, int]]) -> Figure:
    """Attainable FLOPs/s of a matmul against its batch, matmul.flops / matmul.t_lower, one line per (D, F),
    the batch where it turns compute-bound (matmul.critical_batch) marked; exact values."""
    flops_q, time_q, crit_q = Q.get("matmul.flops"), Q.get("matmul.t_lower"), Q.get("matmul.critical_batch")
    series, marks, crossings = [], [], {}
    for i, (d, f) in enumerate(shapes):
        crit = Q.evaluate(crit_q, ctx, {"D": d, "F": f}).value
        xs = tuple(sorted({2 ** k for k in range(0, 13)} | {crit}))
        ys = tuple(Q.evaluate(flops_q, ctx, {"B": b, "D": d, "F": f}).value
                   / Q.evaluate(time_q, ctx, {"B": b, "D": d, "F": f}).value for b in xs)
        series.append(Series(f"D = {d}, F = {f}: compute-bound from B* = {float(crit):.0f}", xs, ys, color=i))
        marks.append(Mark("", crit, ys[xs.index(crit)], color=i, kind="ridge"))
        crossings[(d, f)] = crit
    chip = ctx.get_chip()
    w, x = ctx.weight_dtype or ctx.dtype or "bf16", ctx.act_dtype or ctx.dtype or "bf16"
    panel = Panel("batch B", "attainable FLOPs/s", "token", "FLOP/s", tuple(series), tuple(marks),
                  legend="lower right")
    return Figure("roofline-batch", f"A matmul's FLOPs/s against batch on {chip.name}: {w} weights, {x} activations",
                  (panel,), note="matmul.flops / matmul.t_lower, t_lower = max(t_math, t_comms); B* = "
                                 "matmul.critical_batch (exact bytes)", meta={"crossings": crossings})


def layer_batch_data(ctx: Q.Context, d: int, f: int, n: int, largest: int = 1024) -> Figure:
    """A feed-forward layer's time and throughput against batch (inference.md, Appendix A: 'How real is the batch
    size > 240 rule?'): the up-projection [B, D] x [D, F/n] and the down-projection [B, F/n] x [F/n, D] on each of n
    chips, each at matmul.t_lower, their sum the layer's time (collectives left out, as the appendix's model does);
    the batch where the layer turns compute-bound (matmul.critical_batch of one projection) marked. Exact values."""
    if f % n:
        raise BadValueError(f"F = {f} does not split over {n} chips; give a chip count that divides it")
    time_q, crit_q = Q.get("matmul.t_lower"), Q.get("matmul.critical_batch")
    xs = tuple(sorted({1, *range(32, largest + 1, 32)}))
    steps = tuple(Q.evaluate(time_q, ctx, {"B": b, "D": d, "F": f // n}).value
                  + Q.evaluate(time_q, ctx, {"B": b, "D": f // n, "F": d}).value for b in xs)
    rates = tuple(b / t for b, t in zip(xs, steps))
    crit = Q.evaluate(crit_q, ctx, {"D": d, "F": f // n}).value
    at = (Q.evaluate(time_q, ctx, {"B": crit, "D": d, "F": f // n}).value
          + Q.evaluate(time_q, ctx, {"B": crit, "D": f // n, "F": d}).value)
    chip = ctx.get_chip()
    mark = f"compute-bound from B = {float(crit):.0f}"
    panels = (Panel("batch B", "time per layer", "token", "s", (Series("layer", xs, steps, color=0),),
                    (Mark(mark, crit, at, color=1, kind="ridge"),), xlog=False, ylog=False, legend="upper left"),
              Panel("batch B", "throughput", "token", "token/s", (Series("layer", xs, rates, color=0),),
                    (Mark(mark, crit, crit / at, color=1, kind="ridge"),), xlog=False, ylog=False,
                    legend="lower right"))
    w = ctx.weight_dtype or ctx.dtype or "bf16"
    return Figure("layer-batch", f"A {d} x {f} feed-forward layer on {n} x {chip.name}, {w} weights: time and "
                                 "throughput against batch", panels,
                  note="each chip: [B, D] x [D, F/n] and [B, F/n] x [F/n, D] at matmul.t_lower, collectives left out",
                  meta={"batch": xs, "time": steps, "throughput": rates, "critical_batch": crit})
