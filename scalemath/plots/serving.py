"""Two inference figures: a decode step's time split into loading the parameters, loading the KV caches and the
FLOPs, against batch (applied-inference.md, 'Visualizing the Latency Throughput Tradeoff');
and speculative decoding's expected speed-up against the acceptance rate and the draft length (inference.md,
Appendix D). Every value is an engine quantity (``inference.decode.*``, ``inference.speculative.*``).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from .. import quantities as Q
from ..errors import BadValueError, NoCrossoverError
from ..symbolic.inference.speculative import SPECULATIVE_DRAFTS
from .common import Bars, Figure, Mark, Panel, Series
from .decode import batches

__all__ = ["PARTS", "ALPHAS", "breakdown_data", "speculative_data"]

PARTS = (("inference.decode.t_weights", "loading the parameters"), ("inference.decode.t_kv", "loading the KV caches"),
         ("inference.decode.t_math", "the FLOPs"))
STEP = "inference.decode.step_time"
#: acceptance rates on the x axis: 0.05, 0.1, ..., 0.95 (the engine's α is positive)
ALPHAS = tuple(Fraction(i, 20) for i in range(1, 20))


def _eval(name: str, ctx: Q.Context, given: dict):
    q = Q.get(name)
    params = {p.name for p in q.params}
    ev = Q.evaluate(q, ctx, {k: v for k, v in given.items() if k in params})
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        raise BadValueError(f"{name} still depends on {missing}; give --model (and --chip)")
    return sp.sympify(ev.value)


def breakdown_data(ctx: Q.Context, chips: int, context: int, batch: int | None = None) -> Figure:
    """The three parts of a decode step and the step time at batches 1, 2, 4, ... up to the largest that fits,
    and the parts at ``batch`` (default: the largest) as bars."""
    model = ctx.get_model()
    if model is None:
        raise BadValueError("the serving breakdown needs a model: give --model NAME or --model-config config.json")
    base = {"n_dev": chips, "S": context}
    try:
        largest = _eval("inference.memory.max_batch", ctx, base)
    except NoCrossoverError:  # the weights alone overflow HBM
        largest = 0
    if largest < 1:
        raise BadValueError(f"{ctx.model} with a context of {context} does not fit on {chips} x {ctx.chip} "
                            "(inference.memory.max_batch < 1); give more --chips or a shorter --context")
    xs = batches(int(largest))
    if batch is not None and batch > xs[-1]:
        raise BadValueError(f"--batch {batch}: at most {xs[-1]} sequences of {context} tokens fit on {chips} x "
                            f"{ctx.chip}")
    at = batch or xs[-1]
    if at not in xs:
        xs = tuple(sorted(set(xs) | {at}))
    parts = {name: tuple(_eval(name, ctx, {**base, "B": b}) for b in xs) for name, _ in PARTS}
    step = tuple(_eval(STEP, ctx, {**base, "B": b}) for b in xs)
    series = [Series(what, xs, parts[name], kind="dashed", color=j + 3) for j, (name, what) in enumerate(PARTS)]
    series.append(Series(f"step time ({STEP})", xs, step, color=0))
    marks = []
    if not model.is_moe:
        crit = _eval("inference.decode.critical_batch", ctx, {"n_dev": chips})
        if crit <= xs[-1]:
            marks.append(Mark(f"FLOPs = parameters at B = {float(crit):.0f}", crit,
                              _eval("inference.decode.t_weights", ctx, base), color=8, kind="ridge"))
    i = xs.index(at)
    bars = Bars(tuple(what for _, what in PARTS) + ("step = KV + max(FLOPs, parameters)",),
                tuple(parts[name][i] for name, _ in PARTS) + (step[i],), "s", "time per decode step",
                title=f"at batch {at}")
    panel = Panel("batch (sequences)", "time per decode step", "1", "s", tuple(series), tuple(marks), legend="best")
    chip = ctx.get_chip()
    dtypes = f"{ctx.weight_dtype or ctx.dtype or 'bf16'} weights, {ctx.cache_dtype or 'bf16'} KV cache"
    return Figure("serving", f"Where a decode step's time goes: {model.name} on {chips} x {chip.name}, context "
                             f"{context}, {dtypes}", (panel, bars),
                  note=f"{STEP} = t_kv + max(t_math, t_weights); the batch stops at inference.memory.max_batch",
                  meta={"batch": xs, "parts": parts, "step_time": step, "at": at})


def _fraction(text, what: str) -> Fraction:
    try:
        value = Fraction(str(text))
    except (ValueError, ZeroDivisionError):
        raise BadValueError(f"{what} {text!r}: not a number (write 0.05 or 1/20)") from None
    return value


def speculative_data(draft_cost=Fraction(1, 20), drafts=(1, 2, 4, 8), rates=(Fraction(6, 10), Fraction(8, 10),
                                                                               Fraction(9, 10))) -> Figure:
    """Expected speed-up against α for each draft length in ``drafts``, and against γ = 1..8 for each rate."""
    c = _fraction(draft_cost, "--draft-cost")
    if not 0 < c <= 1:
        raise BadValueError(f"--draft-cost {draft_cost}: the draft step's cost relative to the target's, above 0 "
                            "and at most 1")
    bad = [g for g in drafts if g not in SPECULATIVE_DRAFTS]
    if bad:
        raise BadValueError(f"--drafts {bad[0]}: the engine has draft lengths {SPECULATIVE_DRAFTS[0]} to "
                            f"{SPECULATIVE_DRAFTS[-1]}")
    rates = tuple(_fraction(a, "--rates") for a in rates)
    if any(not 0 < a < 1 for a in rates):
        raise BadValueError("--rates: each acceptance rate is above 0 and below 1")
    ctx = Q.Context()

    def speedup(g, a):
        return _eval(f"inference.speculative.speedup_draft{g}", ctx, {"a_acc": a, "r_draft": c})

    by_alpha = {g: tuple(speedup(g, a) for a in ALPHAS) for g in drafts}
    by_draft = {a: tuple(speedup(g, a) for g in SPECULATIVE_DRAFTS) for a in rates}
    left = Panel("acceptance rate α", "expected speed-up", "1", "1",
                 tuple(Series(f"γ = {g} drafted tokens", ALPHAS, by_alpha[g], color=i) for i, g in enumerate(drafts))
                 + (Series("plain decoding", (ALPHAS[0], ALPHAS[-1]), (1, 1), kind="dashed", color=8),),
                 xlog=False, ylog=False, legend="upper left")
    best = []
    for i, a in enumerate(rates):
        ys = by_draft[a]
        j = max(range(len(ys)), key=lambda k: ys[k])
        best.append(Mark(f"best of 1..{SPECULATIVE_DRAFTS[-1]}: γ = {SPECULATIVE_DRAFTS[j]}", SPECULATIVE_DRAFTS[j],
                         ys[j], color=i))
    right = Panel("draft length γ", "expected speed-up", "1", "1",
                  tuple(Series(f"α = {float(a):g}", SPECULATIVE_DRAFTS, by_draft[a], color=i)
                        for i, a in enumerate(rates)), tuple(best), xlog=False, ylog=False, legend="upper left")
    return Figure("speculative", f"Speculative decoding: expected speed-up, a draft step costing {float(c):g} of "
                                 "a target step", (left, right),
                  note="inference.speculative.speedup_draftγ = (1 + α + ... + α^γ) / (1 + γ c): i.i.d. "
                       "acceptance, the target's check costing one memory-bound step (Leviathan et al. 2023)",
                  meta={"alphas": ALPHAS, "by_alpha": by_alpha, "by_draft": by_draft, "draft_cost": c})
