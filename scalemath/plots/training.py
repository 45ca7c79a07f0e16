"""Compute against communication time per layer for parallelism schemes, over the global batch (training.md,
'Combining FSDP and Tensor Parallelism': any scheme whose communication line lies above the compute line
is comms-bound). Each scheme spreads the batch over all ``chips``; the times are the backward pass of one
layer (the pass with the most communication, and the only one data parallelism communicates in)."""

from __future__ import annotations

import sympy as sp

from .. import quantities as Q
from ..errors import BadValueError
from .common import Figure, Mark, Panel, Series, count

__all__ = ["SCHEMES", "data"]

#: scheme -> (label, mesh values it runs on (N: all the chips), min-batch quantity or None)
SCHEMES = {
    "dp": ("DP", {"X": "N", "M_X": 3}, "parallel.dp.min_batch"),
    "fsdp": ("FSDP", {"X": "N", "M_X": 3}, "parallel.fsdp.min_batch"),
    "tp": ("TP", {"Y": "N", "M_Y": 3}, None),
    "fsdp_tp": ("FSDP + TP, X = x_opt", {"M_X": 2, "M_Y": 1}, "parallel.fsdp_tp.min_batch"),
}


def _eval(name: str, ctx: Q.Context, values: dict):
    q = Q.get(name)
    taken = {p.name for p in q.params}
    ev = Q.evaluate(q, ctx, {k: v for k, v in values.items() if k in taken})
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        raise BadValueError(f"{name} still depends on {missing}; give --model or --set {missing.split(',')[0]}=...")
    return ev.value


def batches(chips: int, top: int | None = None) -> tuple[int, ...]:
    """Powers of two from the first at or above one token per chip, over 2^20 times more."""
    lo = 1 << max(0, (chips - 1).bit_length())
    return tuple(lo << k for k in range(0, 17)) if top is None else tuple(b for b in (lo << k for k in range(64))
                                                                              if b <= top)


def mesh(scheme: str, chips: int, given: dict, batch) -> dict:
    """The mesh values of ``scheme`` on ``chips`` at global ``batch`` (FSDP + TP: X = x_opt in [1, N])."""
    values = {k: (chips if v == "N" else v) for k, v in SCHEMES[scheme][1].items()}
    values.update({k: v for k, v in given.items() if k in ("M_X", "M_Y")})
    return values


def data(ctx: Q.Context, chips: int, schemes: list[str], given: dict | None = None) -> Figure:
    """T_math and each scheme's T_comms (backward, one layer) at each batch, exact; the min batches marked."""
    given = dict(given or {})
    for name in schemes:
        if name not in SCHEMES:
            raise BadValueError(f"--scheme {name}: choose from {', '.join(SCHEMES)}")
    if chips < 1:
        raise BadValueError("--chips must be at least 1")
    chip = ctx.get_chip()
    if chip is not None and chip.family == "gpu":
        raise BadValueError(f"{ctx.chip} is a GPU: the training plot prices the collectives over a TPU's ICI "
                            "(parallel.dp/fsdp/tp/fsdp_tp); pick a TPU chip, e.g. --chip tpu-v5p")
    extra = {k: v for k, v in given.items() if k not in ("M_X", "M_Y")}
    series, marks, compute = [], [], []
    xs = batches(chips)
    for i, name in enumerate(schemes):
        label, _, min_q = SCHEMES[name]
        comms = []
        for b in xs:
            values = {**extra, **mesh(name, chips, given, b), "B": b, "n_dev": chips}
            if name == "fsdp_tp":
                x = _eval("parallel.fsdp_tp.x_opt", ctx, values)
                x = min(max(x, sp.Integer(1)), sp.Integer(chips))
                values.update(X=x, Y=sp.Integer(chips) / x)
            comms.append(_eval(f"parallel.{name}.t_comms_bwd", ctx, values))
            if i == 0:
                compute.append(_eval(f"parallel.{name}.t_math_bwd", ctx, values))
        shape = ", ".join(f"{k}={v}" for k, v in mesh(name, chips, given, None).items())
        series.append(Series(f"{label}, {shape}", xs, tuple(comms), color=i + 1))
        if min_q is not None:
            values = {**extra, **mesh(name, chips, given, None), "n_dev": chips}
            b_min = _eval(min_q, ctx, values)
            at = {**values, "B": b_min}
            if name == "fsdp_tp":
                x = min(max(_eval("parallel.fsdp_tp.x_opt", ctx, at), sp.Integer(1)), sp.Integer(chips))
                at.update(X=x, Y=sp.Integer(chips) / x)
            same = next((k for k, m in enumerate(marks) if m.x == b_min), None)
            if same is not None:  # DP and FSDP communicate the same bytes in the backward pass
                marks[same] = Mark(f"{marks[same].label.split(':')[0]}, {name}: {count(b_min, 'tokens')}", b_min,
                                   marks[same].y, color=marks[same].color)
            elif xs[0] <= b_min <= xs[-1]:
                marks.append(Mark(f"{name}: {count(b_min, 'tokens')}", b_min,
                                  _eval(f"parallel.{name}.t_math_bwd", ctx, at), color=i + 1))
    series.insert(0, Series("compute", xs, tuple(compute), kind="dashed", color=8))
    panel = Panel("global batch B", "time per layer, backward pass", "token", "s", tuple(series), tuple(marks),
                  legend="upper left")
    return Figure("training", f"Compute against communication per layer on {chips} x {chip.name if chip else ctx.chip}",
                  (panel,), note="parallel.<scheme>.t_math_bwd and .t_comms_bwd; marked: parallel.<scheme>.min_batch, "
                                 "where communication meets compute", meta={"batches": xs, "compute": compute})
