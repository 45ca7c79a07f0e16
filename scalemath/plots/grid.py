"""A grid to read values off: a problem's figure asks a student to read numbers from its axes.

On a log axis a line at every 1 to 9 of each decade, those at 1, 2 and 5 labelled with an SI prefix (200 T, 3 k;
the axis label names the unit), and more labels where fewer than three of those fall in the view
(:func:`scalemath.plots.ticks.log_labels`: a TPU v3 roofline was read off one labelled tick). On a linear axis
matplotlib's ticks, with four lines between two of them.

Only the labelled positions are ticks. The lines between them are drawn as one line collection per axis and
style, not as matplotlib ticks: a tick is five artists (two marks, a grid line, two labels), laid out and drawn at
every pass, and the 2-to-9 ticks of a few decades on two axes took about a third of a figure's drawing time.
matplotlib is imported inside the functions that draw.
"""

from __future__ import annotations

import functools
import math

__all__ = ["reading_grid", "readable_log", "SI_UNITS"]

#: Units whose tick labels take an SI prefix, as shown on the ticks; any other unit is in the axis label.
SI_UNITS = {"FLOP/s": "FLOP/s", "byte": "B", "s": "s", "byte/s": "B/s", "token/s": "tokens/s"}

#: The look of the lines: at the labelled ticks (powers of ten on a log axis), and between them.
_MAJOR = {"linewidth": 0.7, "alpha": 0.5, "color": "#b0b0b0"}
_MINOR = {"linewidth": 0.5, "alpha": 0.35, "color": "#b0b0b0", "linestyle": ":"}


def reading_grid(fig, panels) -> None:
    """Every axes of ``fig`` (one per panel of ``panels``) with its reading grid."""
    for ax, panel in zip(fig.axes, panels):
        ax.grid(False)
        for axis, unit in ((ax.xaxis, panel.xunit), (ax.yaxis, panel.yunit)):
            if axis.get_scale() == "log":
                readable_log(axis, unit)
                major, minor = _log_lines(axis)
            else:
                major, minor = _linear_lines(axis)
            _lines(axis, major, _MAJOR)
            _lines(axis, minor, _MINOR)


def readable_log(axis, unit: str) -> None:
    """Ticks at the labelled mantissas of each decade (1, 2, 5, or more where the view is narrow), labelled with
    an SI prefix and the unit's symbol where :data:`SI_UNITS` has it, else as a plain number; no minor ticks."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    from .ticks import log_labels

    subs = tuple(sorted(set(log_labels(axis)) | {1, 2, 5}))
    shown = _label(SI_UNITS.get(unit))
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=100))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda x, _pos=None: shown(float(x), subs)))


@functools.cache
def _label(si: str | None):
    @functools.lru_cache(maxsize=None)  # matplotlib asks again at every layout pass
    def shown(x: float, subs: tuple) -> str:
        from ..values.printing import with_unit

        if x <= 0 or _mantissa(x) not in subs:
            return ""
        return with_unit(x, "1", 3) if si is None else _eng(x) + si

    return shown


def _mantissa(x: float) -> float:
    return round(x / 10 ** math.floor(math.log10(x) + 1e-9), 6)


def _eng(x: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"),
                          (1e-6, "µ"), (1e-9, "n")):
        if x >= scale * 0.9999:
            return f"{x / scale:g}\N{THIN SPACE}{prefix}"
    return f"{x:g}"


def _log_lines(axis) -> tuple[list[float], list[float]]:
    """The powers of ten in the view, and the 2 to 9 of each decade."""
    lo, hi = sorted(axis.get_view_interval())
    major, minor = [], []
    for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in range(1, 10):
            x = m * 10.0 ** k
            if lo * (1 - 1e-9) <= x <= hi * (1 + 1e-9):
                (major if m == 1 else minor).append(x)
    return major, minor


def _linear_lines(axis) -> tuple[list[float], list[float]]:
    """matplotlib's ticks in the view, and four lines evenly between two of them (and beyond, to the view's ends)."""
    lo, hi = sorted(axis.get_view_interval())
    major = [float(t) for t in axis.get_majorticklocs() if lo <= t <= hi]
    if len(major) < 2:
        return major, []
    step = (major[1] - major[0]) / 5
    first = major[0] - step * math.floor((major[0] - lo) / step + 1e-9)
    minor = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
    return major, [x for x in minor if min(abs(x - t) for t in major) > step / 2]


def _lines(axis, positions: list[float], style: dict) -> None:
    """Lines across the axes at ``positions`` of ``axis``, behind everything, changing no limit of the axes."""
    from matplotlib.collections import LineCollection

    if not positions:
        return
    ax = axis.axes
    vertical = axis is ax.xaxis
    where = ax.get_xaxis_transform() if vertical else ax.get_yaxis_transform()
    segments = [[(p, 0), (p, 1)] if vertical else [(0, p), (1, p)] for p in positions]
    ax.add_collection(LineCollection(segments, transform=where, zorder=0.5, **style), autolim=False)
