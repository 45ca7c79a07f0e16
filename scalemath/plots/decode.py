"""Decode step time and throughput against batch (applied-inference.md, 'Visualizing the Latency Throughput
Tradeoff'): inference.decode.step_time = KV loading + max(compute, weight loading), per context length, up to the
largest batch whose caches fit in HBM (inference.memory.max_batch)."""

from __future__ import annotations

from .. import quantities as Q
from ..errors import BadValueError
from .common import Figure, Mark, Panel, Series

__all__ = ["data", "batches"]

PARTS = (("inference.decode.t_weights", "loading weights"), ("inference.decode.t_kv", "loading KV caches"),
         ("inference.decode.t_math", "compute"))


def _eval(name: str, ctx: Q.Context, given: dict):
    ev = Q.evaluate(Q.get(name), ctx, {k: v for k, v in given.items() if k in {p.name for p in Q.get(name).params}})
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        raise BadValueError(f"{name} still depends on {missing}; give --model (and --chip)")
    return ev.value


def batches(largest: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``largest``, and ``largest`` itself."""
    out = [1 << k for k in range(largest.bit_length()) if 1 << k <= largest]
    return tuple(sorted(set(out) | {largest}))


def data(ctx: Q.Context, chips: int, contexts: list[int]) -> Figure:
    """Step time, its parts (one context) and throughput per chip at each batch that fits, exact."""
    if ctx.get_model() is None:
        raise BadValueError("the decode plot needs a model: give --model NAME or --model-config config.json")
    if not contexts:
        raise BadValueError("--context names no length; give one or a comma list, e.g. 2048,8192")
    steps, thru, trade, marks, parts, sweeps = [], [], [], [], [], {}
    for i, S in enumerate(contexts):
        base = {"n_dev": chips, "S": S}
        largest = _eval("inference.memory.max_batch", ctx, base)
        if largest < 1:
            raise BadValueError(f"{ctx.model} with a context of {S} does not fit on {chips} x {ctx.chip} "
                                "(inference.memory.max_batch < 1); give more --chips or a shorter --context")
        xs = batches(int(largest))
        t = tuple(_eval("inference.decode.step_time", ctx, {**base, "B": b}) for b in xs)
        r = tuple(_eval("inference.decode.throughput_per_chip", ctx, {**base, "B": b}) for b in xs)
        label = f"context {S}"
        steps.append(Series(label, xs, t, color=i))
        thru.append(Series(label, xs, r, color=i))
        trade.append(Series(label, t, r, color=i))
        marks.append(Mark(f"max batch {xs[-1]}", xs[-1], r[-1], color=i))
        sweeps[S] = {"batch": xs, "step_time": t, "throughput_per_chip": r}
        if len(contexts) == 1:
            for j, (name, what) in enumerate(PARTS):
                parts.append(Series(what, xs, tuple(_eval(name, ctx, {**base, "B": b}) for b in xs), kind="dashed",
                                    color=j + 3))
    model = ctx.get_model()
    crit = [] if model.is_moe else [_eval("inference.decode.critical_batch", ctx, {"n_dev": chips})]
    step_marks = tuple(Mark(f"critical batch {float(c):.0f}", c,
                            _eval("inference.decode.step_time", ctx, {"n_dev": chips, "S": contexts[0], "B": c}),
                            color=8, kind="ridge") for c in crit)
    panels = (Panel("batch (sequences)", "time per decode step", "1", "s", tuple(steps + parts), step_marks,
                    legend="best"),
              Panel("batch (sequences)", "throughput per chip", "1", "token/s", tuple(thru), tuple(marks),
                    legend="lower right"),
              Panel("time per decode step (latency per token)", "throughput per chip", "s", "token/s", tuple(trade),
                    legend="lower right"))
    chip = ctx.get_chip()
    dtypes = f"{ctx.weight_dtype or ctx.dtype or 'bf16'} weights, {ctx.cache_dtype or 'bf16'} KV cache"
    return Figure("decode", f"Decoding {model.name} on {chips} x {chip.name}: {dtypes}", panels,
                  note="inference.decode.step_time = t_kv + max(t_math, t_weights); throughput per chip = "
                       "batch / (step time x chips); each curve stops at inference.memory.max_batch",
                  meta={"sweeps": sweeps, "critical_batch": crit})
