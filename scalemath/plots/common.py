"""What every figure shares: the data records, units on the axes, the drawing of line panels, saving.

A figure is computed first, as a :class:`Figure` of exact values (integers, fractions, SymPy numbers taken
from the engine), and drawn second: :func:`render` converts to float only there. matplotlib is imported
inside :func:`_pyplot` (headless Agg backend), so importing this module costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from .ticks import labelled_log

__all__ = ["Series", "Mark", "Panel", "Heat", "Bars", "Figure", "render", "to_float", "count", "FORMATS", "PLOTTABLE",
           "check_plottable"]

#: The formats a figure is saved in, by file suffix.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
_STYLE = {"figure.dpi": 100, "savefig.dpi": 120, "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9,
          "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.grid": True,
          "grid.alpha": 0.3, "grid.linewidth": 0.5, "axes.spines.top": False, "axes.spines.right": False,
          "svg.hashsalt": "scalemath", "svg.fonttype": "path", "path.simplify": False, "lines.linewidth": 1.6,
          "figure.constrained_layout.use": True,
          # TrueType (Type 42) fonts in PDFs: vector and copyable, as journals ask (not Type 3). ps.fonttype also
          # sizes matplotlib's PDF font subsets: left at 3, every character past Latin-1 (the minus sign, a thin
          # space) starts a second embedded copy of the font, and each copy is subset again
          "pdf.fonttype": 42, "ps.fonttype": 42}
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")


@dataclass(frozen=True)
class Series:
    """One curve (or set of points): exact x and y values, and how it is drawn."""

    label: str
    x: tuple
    y: tuple
    kind: str = "line"  # line | points | dashed | step
    color: int | None = None  # index into the palette; by position when None


@dataclass(frozen=True)
class Mark:
    """A labelled point: a ridge point, a user's op, a crossover."""

    label: str
    x: object
    y: object
    color: int | None = None
    kind: str = "label"  # label: text beside it | ridge: a dotted drop line, text below | op: a marker in the legend
    group: int = 0  # ops: one marker shape (and legend entry) per group


@dataclass(frozen=True)
class Panel:
    """One set of axes: its curves, marks, shaded x ranges and labels (a unit in brackets is scaled)."""

    xlabel: str
    ylabel: str
    xunit: str
    yunit: str
    series: tuple[Series, ...]
    marks: tuple[Mark, ...] = ()
    xlog: bool = True
    ylog: bool = True
    spans: tuple[tuple[object, object, str], ...] = ()  # (x from, x to, label): a shaded regime
    title: str = ""
    legend: str = "best"


@dataclass(frozen=True)
class Heat:
    """A heat map over two whole-number axes: ``values[i][j]`` at (x[j], y[i])."""

    xlabel: str
    ylabel: str
    x: tuple[int, ...]
    y: tuple[int, ...]
    values: tuple[tuple[object, ...], ...]  # a number, or the text of a grey cell ("does not fit")
    unit: str
    cbar: str
    title: str = ""
    best: tuple[int, int] | None = None  # (x, y) of the best cell


@dataclass(frozen=True)
class Bars:
    """One horizontal bar per label, exact values."""

    labels: tuple[str, ...]
    values: tuple
    unit: str
    xlabel: str
    title: str = ""


@dataclass(frozen=True)
class Figure:
    kind: str
    title: str
    panels: tuple[Panel | Heat | Bars, ...]
    note: str = ""  # one line under the figure: what it assumes
    meta: dict = field(default_factory=dict, compare=False)


def to_float(value) -> float:
    """An exact engine value as a float, for drawing only."""
    return float(value)


#: The magnitudes a figure shows (and 0), far past any real chip or model: beyond them matplotlib's axes
#: overflow (floats end near 1.8e308; plot training --set M_X=1e-300 drew times of 1e300 s), and a log axis
#: over more than about 75 decades leaves no room to lay the figure out
PLOTTABLE = (Fraction(1, 10**30), 10**30)


def check_plottable(figure: Figure) -> None:
    """Refuse, naming it, a value of ``figure`` that no axis can show, before anything is drawn."""
    import sympy as sp

    from ..errors import BadValueError
    from ..values.printing import decimal

    lo, hi = sp.Rational(PLOTTABLE[0].numerator, PLOTTABLE[0].denominator), sp.Integer(PLOTTABLE[1])
    for panel in figure.panels:
        if isinstance(panel, Heat):
            values = [v for row in panel.values for v in row if not isinstance(v, str)]
        elif isinstance(panel, Bars):
            values = list(panel.values)
        else:
            values = [v for s in panel.series for v in (*s.x, *s.y)] + [v for m in panel.marks for v in (m.x, m.y)]
            values += [v for a, b, _ in panel.spans for v in (a, b)]
        for value in values:
            x = sp.sympify(value)
            if x != 0 and not (x.is_finite and lo <= abs(x) <= hi):
                shown = decimal(x, 4) if x.is_finite else str(value)
                raise BadValueError(f"{figure.title}: a value to draw, {shown}, is beyond what a figure can show "
                                    "(magnitudes 1e-30 to 1e30); give values nearer those of real chips and models")


# -- units on the axes -------------------------------------------------------------------------

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"),
             (1e-9, "n"))
#: Units scaled with an SI prefix; the others are drawn as they are.
_SCALED = ("s", "byte", "FLOP", "FLOP/s", "byte/s", "token/s", "param")
_SHOWN = {"byte": "B", "byte/s": "B/s", "token/s": "tokens/s"}


def scale(values, unit: str) -> tuple[float, str]:
    """(divisor, unit text) so that the largest value shows between 1 and 1000 of the prefixed unit."""
    shown = _SHOWN.get(unit, unit)
    finite = [abs(v) for v in values if v and v == v and v not in (float("inf"), float("-inf"))]
    if unit not in _SCALED or not finite:
        return 1.0, shown
    top = max(finite)
    for factor, prefix in _PREFIXES:
        if top >= factor:
            return factor, prefix + shown
    return _PREFIXES[-1][0], _PREFIXES[-1][1] + shown


def count(value, unit: str = "") -> str:
    """A count for a label, three figures and an SI prefix: ``3.48M tokens``, ``406k``."""
    v = float(value)
    for factor, prefix in _PREFIXES[:6]:
        if abs(v) >= factor:
            text = f"{v / factor:.3g}{prefix}"
            break
    else:
        text = f"{v:.3g}"
    return f"{text} {unit}".strip()


# -- drawing -----------------------------------------------------------------------------------

def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _color(i: int | None, default: int) -> str:
    return _COLORS[(default if i is None else i) % len(_COLORS)]


def _axis(axis, label: str, unit: str, shown: str, log: bool, values=()) -> str:
    """Set the axis' scale and tick labels; return its label. A log axis in a unit that takes SI prefixes
    has them on its ticks (1 kB, 10 ms); any other axis names its unit in brackets. A log axis over more
    than three decades has no minor ticks (they cost most of the drawing time and say little there)."""
    if log:
        axis.axes.set_xscale("log") if axis is axis.axes.xaxis else axis.axes.set_yscale("log")
        positive = [v for v in values if v > 0 and math.isfinite(v)]
        if positive and max(positive) > 1000 * min(positive):
            from matplotlib.ticker import NullLocator

            axis.set_minor_locator(NullLocator())
        labelled_log(axis, _SHOWN.get(unit, unit) if unit in _SCALED else None)
        if unit in _SCALED:
            return label
    return f"{label} [{shown}]" if shown and shown != "1" else label


def _draw_panel(ax, panel: Panel) -> None:
    xs = [to_float(v) for s in panel.series for v in s.x] + [to_float(m.x) for m in panel.marks]
    ys = [to_float(v) for s in panel.series for v in s.y] + [to_float(m.y) for m in panel.marks]
    xf, xunit = (1.0, "") if panel.xlog and panel.xunit in _SCALED else scale(xs, panel.xunit)
    yf, yunit = (1.0, "") if panel.ylog and panel.yunit in _SCALED else scale(ys, panel.yunit)
    for lo, hi, label in panel.spans:
        ax.axvspan(to_float(lo) / xf, to_float(hi) / xf, color="#999999", alpha=0.12, lw=0)
        ax.text((to_float(lo) * to_float(hi)) ** 0.5 / xf if panel.xlog else (to_float(lo) + to_float(hi)) / 2 / xf,
                0.02, label, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=7,
                color="#555555")
    for i, s in enumerate(panel.series):
        x = [to_float(v) / xf for v in s.x]
        y = [to_float(v) / yf for v in s.y]
        color = _color(s.color, i)
        if s.kind == "points":
            ax.plot(x, y, "o", ms=3.5, color=color, label=s.label or "_nolegend_")
        elif s.kind == "step":
            ax.plot(x, y, drawstyle="steps-post", color=color, label=s.label or "_nolegend_")
        else:
            ax.plot(x, y, "--" if s.kind == "dashed" else "-", color=color, label=s.label or "_nolegend_")
    shapes = ("s", "^", "D", "v", "P", "X", "*", "h")
    groups: dict[int, str] = {}
    for j, m in enumerate(panel.marks):
        x, y = to_float(m.x) / xf, to_float(m.y) / yf
        color = _color(m.color, j)
        if m.kind == "op":
            ax.plot([x], [y], shapes[m.group % len(shapes)], ms=6, mfc=color, mec="#222222", mew=0.8, zorder=6)
            groups.setdefault(m.group, m.label)
            continue
        ax.plot([x], [y], "o", ms=5, mfc="white", mec=color, mew=1.5, zorder=5)
        if m.kind == "ridge":
            ax.axvline(x, color=color, lw=0.8, ls=":", zorder=1)
            if m.label:
                ax.annotate(m.label, (x, y), textcoords="offset points", xytext=(5, -11), fontsize=7,
                            color=color)
        elif m.kind == "left":  # text to the left, below: for points at the right end of a curve
            ax.annotate(m.label, (x, y), textcoords="offset points", xytext=(-6, -12), fontsize=7, color=color,
                        ha="right")
        else:
            ax.annotate(m.label, (x, y), textcoords="offset points", xytext=(6, -12 if j % 2 else 6), fontsize=7,
                        color=color, ha="left")
    for group, label in sorted(groups.items()):
        ax.plot([], [], shapes[group % len(shapes)], ms=6, mfc="#bbbbbb", mec="#222222", mew=0.8, ls="none",
                label=label)
    finite = [v for v in ys if v > 0 and math.isfinite(v)]
    if panel.ylog and finite and max(finite) < 1.5 * min(finite):  # a flat line: a readable range around it
        ax.set_ylim(min(finite) / 3 / yf, max(finite) * 3 / yf)
    ax.set_xlabel(_axis(ax.xaxis, panel.xlabel, panel.xunit, xunit, panel.xlog, xs))
    ax.set_ylabel(_axis(ax.yaxis, panel.ylabel, panel.yunit, yunit, panel.ylog, ys))
    if panel.title:
        ax.set_title(panel.title)
    if any(s.label for s in panel.series) or groups:
        ax.legend(loc=panel.legend, frameon=True, framealpha=0.9, edgecolor="none")


def _draw_heat(fig, ax, heat: Heat) -> None:
    import numpy as np

    flat = [to_float(v) for row in heat.values for v in row if not isinstance(v, str)]
    factor, unit = scale(flat, heat.unit)
    grid = np.array([[np.nan if isinstance(v, str) else to_float(v) / factor for v in row] for row in heat.values])
    cmap = _pyplot().get_cmap("viridis_r").with_extremes(bad="#e4e4e4")
    image = ax.imshow(np.ma.masked_invalid(grid), origin="lower", aspect="auto", cmap=cmap,
                      interpolation="nearest")
    ax.set_xticks(range(len(heat.x)), [str(v) for v in heat.x], rotation=45 if len(heat.x) > 8 else 0)
    ax.set_yticks(range(len(heat.y)), [str(v) for v in heat.y])
    ax.set_xlabel(heat.xlabel)
    ax.set_ylabel(heat.ylabel)
    ax.grid(False)
    small = len(heat.x) <= 14 and len(heat.y) <= 16
    low, high = (np.nanmin(grid), np.nanmax(grid)) if flat else (0, 0)
    for i, row in enumerate(heat.values):
        for j, v in enumerate(row):
            if not small:
                continue
            if isinstance(v, str):
                ax.text(j, i, v, ha="center", va="center", fontsize=5.5, color="#777777")
            else:
                shade = (grid[i, j] - low) / (high - low) if high > low else 0
                ax.text(j, i, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=6,
                        color="white" if shade > 0.45 else "black")
    if heat.best is not None:
        j, i = heat.x.index(heat.best[0]), heat.y.index(heat.best[1])
        ax.add_patch(_pyplot().Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="#d62728", lw=2))
    bar = fig.colorbar(image, ax=ax)
    bar.set_label(f"{heat.cbar} [{unit}]")
    if heat.title:
        ax.set_title(heat.title)


def _draw_bars(ax, bars: Bars) -> None:
    values = [to_float(v) for v in bars.values]
    positive = [v for v in values if v > 0]
    log = bool(positive) and len(positive) == len(values) and max(positive) > 100 * min(positive)
    factor, unit = (1.0, "") if log and bars.unit in _SCALED else scale(values, bars.unit)
    ypos = list(range(len(values)))[::-1]
    ax.barh(ypos, [v / factor for v in values], color=_COLORS[0], height=0.6)
    ax.set_yticks(ypos, list(bars.labels))
    label = _axis(ax.xaxis, bars.xlabel, bars.unit, unit, log, values)
    ax.set_xlabel(label)
    ax.grid(axis="y", visible=False)
    for y, v in zip(ypos, values):
        ax.annotate(_value_text(v, bars.unit), (v / factor, y), textcoords="offset points", xytext=(3, 0),
                    va="center", fontsize=7)
    ax.margins(x=0.15)
    if bars.title:
        ax.set_title(bars.title)


def _value_text(v: float, unit: str) -> str:
    from ..values.printing import with_unit

    return with_unit(v, unit, 4)


def render(figure: Figure):
    """The matplotlib figure for ``figure`` (the caller saves and closes it)."""
    check_plottable(figure)
    plt = _pyplot()
    with plt.rc_context(_STYLE):
        n = len(figure.panels)
        rows = max((len(p.labels) for p in figure.panels if isinstance(p, Bars)), default=0)
        height = max(4.4, 1.2 + 0.28 * rows)
        fig, axes = plt.subplots(1, n, figsize=(6.4 if n == 1 else 5.2 * n, height), squeeze=False)
        for ax, panel in zip(axes[0], figure.panels):
            if isinstance(panel, Heat):
                _draw_heat(fig, ax, panel)
            elif isinstance(panel, Bars):
                _draw_bars(ax, panel)
            else:
                _draw_panel(ax, panel)
        fig.suptitle(figure.title, fontsize=11)
        if figure.note:
            import textwrap

            per_line = int(125 * fig.get_figwidth() / 6.4)
            fig.supxlabel("\n".join(textwrap.wrap(figure.note, per_line)), fontsize=7, color="#555555")
    return fig
