"""Labels on log axes: at least three labelled ticks on every one (issue 28: a TPU v3 roofline spanning less
than a decade of FLOP/s had a single labelled tick), powers of ten when they are enough, else 1-2-5, else finer.
matplotlib is imported inside the functions that draw."""

from __future__ import annotations

import math

__all__ = ["LEAST_LABELS", "log_labels", "labelled_log"]

#: Labelled ticks every log axis has at least (issue 28: a TPU v3 roofline spanning less than a decade had one).
LEAST_LABELS = 3
#: The mantissas labelled on a log axis, coarsest first: powers of ten, then 1-2-5, then finer.
_LABEL_SETS = ((1,), (1, 2, 5), (1, 2, 3, 5, 7), (1, 2, 3, 4, 5, 6, 7, 8, 9))


def _ticks_in(lo: float, hi: float, subs) -> list[float]:
    first, last = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    return [m * 10.0 ** k for k in range(first, last + 1) for m in subs
            if lo * (1 - 1e-9) <= m * 10.0 ** k <= hi * (1 + 1e-9)]


def log_labels(axis, least: int = LEAST_LABELS) -> tuple[int, ...]:
    """The mantissas to label on the log ``axis`` (its view as drawn) so that at least ``least`` ticks carry a
    label: powers of ten when they are enough, else 1-2-5, else finer; a view too narrow for even 1 to 9 is
    widened downwards to hold ``least`` of them."""
    lo, hi = sorted(axis.get_view_interval())
    for subs in _LABEL_SETS:
        if len(_ticks_in(lo, hi, subs)) >= least:
            return subs
    subs = _LABEL_SETS[-1]
    below = _ticks_in(hi / 10 ** (least + 1), hi, subs)[-least:]
    set_lim = axis.axes.set_xlim if axis is axis.axes.xaxis else axis.axes.set_ylim
    set_lim(below[0] / 1.05, hi)
    return subs


def _mantissa(x: float) -> float:
    return round(x / 10 ** math.floor(math.log10(x) + 1e-9), 6)


def labelled_log(axis, si_unit: str | None) -> None:
    """Ticks at 1 to 9 of each decade on a log axis, those at the mantissas :func:`log_labels` picks labelled:
    with an SI prefix and ``si_unit`` (20 TFLOP/s), or, when it is None, as plain numbers, the powers of ten alone
    keeping matplotlib's own labels (10^3)."""
    from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator

    subs = log_labels(axis)
    if subs == (1,) and si_unit is None:
        return
    eng = None if si_unit is None else EngFormatter(unit=si_unit, places=None, sep="\N{THIN SPACE}")

    def label(x, _pos=None):
        if x <= 0 or _mantissa(x) not in subs:
            return ""
        return eng.format_eng(x) if eng is not None else f"{x:g}"

    if subs != (1,):
        axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10)), numticks=100))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(FuncFormatter(label))
