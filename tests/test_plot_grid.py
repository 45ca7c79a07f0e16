"""The reading grid of a problem's figure (scalemath.plots.grid): where its lines fall, that they change no limit of
the axes, and that only the labelled positions are ticks."""

from __future__ import annotations

import math

import pytest

from scalemath.plots import grid

# (id, view, the powers of ten in it, the count of lines at 2 ... 9 of a decade in it)
LOG_VIEWS = [
    ("two-decades", (1.0, 100.0), [1.0, 10.0, 100.0], 16),
    ("inside-one-decade", (57e12, 130e12), [100e12], 4),  # 60, 70, 80 and 90 T; 200 T is past the view
    ("off-the-powers", (3.5, 42.0), [10.0], 9),  # 4 ... 9, then 20, 30, 40
]


class _Axis:
    """The two things the line finders ask of an axis."""

    def __init__(self, lo, hi, ticks=()):
        self.lo, self.hi, self.ticks = lo, hi, ticks

    def get_view_interval(self):
        return self.lo, self.hi

    def get_majorticklocs(self):
        return list(self.ticks)


@pytest.mark.parametrize("view, powers, between", [r[1:] for r in LOG_VIEWS], ids=[r[0] for r in LOG_VIEWS])
def test_log_lines(view, powers, between):
    major, minor = grid._log_lines(_Axis(*view))
    assert major == pytest.approx(powers)
    lo, hi = view
    expected = [m * 10.0 ** k for k in range(-20, 20) for m in range(2, 10)
                if lo * (1 - 1e-9) <= m * 10.0 ** k <= hi * (1 + 1e-9)]
    assert minor == pytest.approx(expected) and len(minor) == between
    assert all(round(x / 10 ** math.floor(math.log10(x) + 1e-9), 6) in range(2, 10) for x in minor)


# (id, view, matplotlib's ticks, the lines between them)
LINEAR_VIEWS = [
    ("steps-of-two", (0.25, 16.75), [0, 2, 4, 6, 8, 10, 12, 14, 16, 18],
     [x / 10 for x in range(4, 168, 4) if x % 20]),
    ("steps-of-five", (0.0, 25.0), [0, 5, 10, 15, 20, 25], [x for x in range(1, 25) if x % 5]),
    ("one-tick", (0.0, 1.0), [0.5], []),
]


@pytest.mark.parametrize("view, ticks, between", [r[1:] for r in LINEAR_VIEWS], ids=[r[0] for r in LINEAR_VIEWS])
def test_linear_lines(view, ticks, between):
    major, minor = grid._linear_lines(_Axis(*view, ticks))
    assert major == [t for t in ticks if view[0] <= t <= view[1]]
    assert minor == pytest.approx(between)


GENERATORS = [("roofline", "figure_roofline_read", 1), ("ragged-linear-x", "figure_ragged_read", 1),
              ("serving", "figure_serving_read", 2)]


@pytest.mark.parametrize("generator, seed", [r[1:] for r in GENERATORS], ids=[r[0] for r in GENERATORS])
def test_the_grid_changes_no_limit_and_ticks_only_the_labels(generator, seed):
    from matplotlib.collections import LineCollection

    from scalemath.plots.common import render
    from scalemath.problems import figures
    from scalemath.problems.registry import made_problem

    figure = figures.build(figures.spec_for(made_problem(generator, seed, "p1")))
    fig = render(figure)
    try:
        limits = [(ax.get_xlim(), ax.get_ylim()) for ax in fig.axes]
        grid.reading_grid(fig, figure.panels)
        fig.canvas.draw()
        assert [(ax.get_xlim(), ax.get_ylim()) for ax in fig.axes] == limits
        for ax in fig.axes:
            lines = [c for c in ax.collections if isinstance(c, LineCollection)]
            assert len(lines) >= 3, generator  # powers (or ticks) and the lines between, on both axes
            for axis in (ax.xaxis, ax.yaxis):
                assert len(axis.get_minorticklocs()) == 0
                if axis.get_scale() == "log":
                    labels = [t.get_text() for t in axis.get_majorticklabels()]
                    lo, hi = sorted(axis.get_view_interval())
                    inside = [t for t, loc in zip(labels, axis.get_majorticklocs()) if lo <= loc <= hi]
                    assert inside and all(inside), (generator, axis.axis_name, labels)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
