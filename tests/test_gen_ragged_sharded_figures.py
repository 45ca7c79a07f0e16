"""figure_ragged_read and figure_sharded_read (issue 29): their keys against hand arithmetic from published
figures (H100: 450 GB/s NVLink egress per GPU, 8 GPUs and 8 x 50 GB/s = 400 GB/s of scale-out per node; A100:
300 GB/s and 8 x 25 GB/s), against the book's worked Pop Quiz 3 values where it prints them, the figure drawn
with no answer on it, and the whole problem made and checked for many seeds."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from scalemath.problems import figures, sets
from scalemath.problems.registry import Reject, get_generator, make_problem

RAGGED = get_generator("figure_ragged_read")
SHARDED = get_generator("figure_sharded_read")


def _answers(gen, params):
    return {a.name: a for a in gen.solve(params)}


# -- the ragged AllToAll ------------------------------------------------------------------------------------

RAGGED_ROWS = [
    # (id, params, dense time, expected at k_read, approximation / expected at k_over, regime at k_regime)
    # H100, N = 8, 1 GiB: dense = 2^30 x 7 / (64 x 450e9) = 260.9 us; k = 2: 1 - (7/8)^2 = 15/64 of it;
    # k = 8: 1 / (1 - (7/8)^8) = 1.524 (random picks reach 65.6 % of the GPUs at k = N)
    ("h100-8-1GiB", {"chip": "h100", "N": 8, "V": 2**30, "k_read": 2, "k_over": 8, "k_regime": 5},
     2**30 * 7 / (64 * 450e9), 2**30 * 7 / (64 * 450e9) * 15 / 64, 1 / (1 - (7 / 8) ** 8), 0),
    # A100, N = 4, 256 MiB: dense = 2^28 x 3 / (16 x 300e9); k = 3: 1 - (3/4)^3 = 37/64; k = 6: 1 / (1 - (3/4)^6)
    ("a100-4-256MiB", {"chip": "a100", "N": 4, "V": 2**28, "k_read": 3, "k_over": 6, "k_regime": 7},
     2**28 * 3 / (16 * 300e9), 2**28 * 3 / (16 * 300e9) * 37 / 64, 1 / (1 - (3 / 4) ** 6), 1),
]


@pytest.mark.parametrize("params, dense, expected, over, regime", [r[1:] for r in RAGGED_ROWS],
                         ids=[r[0] for r in RAGGED_ROWS])
def test_ragged_reading_keys(params, dense, expected, over, regime):
    a = _answers(RAGGED, params)
    assert float(a["dense"].value) == pytest.approx(dense, rel=1e-12)
    assert int(a["k_full"].value) == params["N"]  # min(k/N, 1) reaches 1 at k = N
    assert float(a["expected"].value) == pytest.approx(expected, rel=1e-12)
    assert float(a["overstate"].value) == pytest.approx(over, rel=1e-12)
    assert int(a["regime"].value) == regime


def test_ragged_approximation_is_the_books_takeaway_below_n():
    """gpus.md's in-node takeaway prices a ragged AllToAll over 8 GPUs at B k / (64 W): the approximation with
    (N-1)/N taken as 1. Read back from the key: the expected time at k = 1 is the approximation's there."""
    params = {"chip": "h100", "N": 8, "V": 2**30, "k_read": 1, "k_over": 3, "k_regime": 2}
    a = _answers(RAGGED, params)
    assert float(a["expected"].value) == pytest.approx(2**30 * 1 / (64 * 450e9) * 7 / 8, rel=1e-12)


# -- Pop Quiz 3 ---------------------------------------------------------------------------------------------

SHARDED_ROWS = [
    # gpus.md Pop Quiz 3 on one H100 SU of 32 nodes, D = 8192, F = 32768, 2DF = 536,870,912 bytes:
    # the worked answer's Y <= 8 value 2DF x 31 / (32 x 400e9) = 1.300 ms; above the node 8/Y of it (the book
    # prints 2DF / (Y x 50e9), which leaves out the ring's 31/32: 0.671 ms at Y = 16, ours 0.650 ms)
    ("h100-book", {"chip": "h100", "D": 8192, "F": 32768, "nodes": 32, "largest": 256, "Y_read": 16, "Y_big": 256},
     536_870_912 * 31 / (32 * 400e9), 8, 536_870_912 * 31 / (32 * 400e9) / 2, 32),
    # A100, 16 nodes, D = 4096, F = 14336: 2DF x 15 / (16 x 200e9); Y = 64 is 8 x faster, Y = 32 4 x
    ("a100-16", {"chip": "a100", "D": 4096, "F": 14336, "nodes": 16, "largest": 128, "Y_read": 64, "Y_big": 32},
     2 * 4096 * 14336 * 15 / (16 * 200e9), 8, 2 * 4096 * 14336 * 15 / (16 * 200e9) / 8, 4),
]


@pytest.mark.parametrize("params, flat, corner, t_read, speedup", [r[1:] for r in SHARDED_ROWS],
                         ids=[r[0] for r in SHARDED_ROWS])
def test_sharded_reading_keys(params, flat, corner, t_read, speedup):
    a = _answers(SHARDED, params)
    assert float(a["flat"].value) == pytest.approx(flat, rel=1e-12)
    assert int(a["corner"].value) == corner
    assert float(a["t_read"].value) == pytest.approx(t_read, rel=1e-12)
    assert float(a["speedup"].value) == pytest.approx(speedup, rel=1e-12)


def test_sharded_flat_part_is_the_books_worked_figure():
    # part4-gpus.yaml, gpus-popquiz3: "Y<=8 -> 1.300 ms"; above the node the book's 2DF/(Y x 50 GB/s) to 1/32
    params = dict(SHARDED_ROWS[0][1])
    a = _answers(SHARDED, params)
    assert float(a["flat"].value) == pytest.approx(1.300e-3, abs=0.0005e-3)
    assert float(a["t_read"].value) == pytest.approx(536_870_912 / (16 * 50e9), rel=1 / 32 + 1e-9)


def test_sharded_figure_draws_the_general_form_not_the_two_level_one():
    """At Y = 128 on an H100 SU the two-level form stops falling (its node term binds at 149 us); the figure
    keeps falling, as the book's plot does."""
    fig = figures.build(_spec(SHARDED_ROWS[0][1]))
    (series,) = fig.panels[0].series
    times = dict(zip(series.x, series.y))
    assert times[128] == times[64] / 2 and times[256] == times[128] / 2
    assert "general" in series.label


def _spec(params):
    from scalemath.problems.generators.figure_sharded_read import figure

    return figure(params)


def test_sharded_is_asked_only_where_the_node_size_is_a_power_of_two():
    chips = set()
    for seed in range(80):
        try:
            chips.add(SHARDED.draw(random.Random(seed))["chip"])
        except Reject:
            pass
    assert chips and "gb200" not in chips  # 72 GPUs a node: its corner is not on the plotted powers of two


# -- both -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["figure_ragged_read", "figure_sharded_read"])
def test_figure_carries_no_answer_and_draws(name):
    pset = sets.build_set(generator_names=[name], n=1, seed=5)
    (problem,) = pset.problems
    spec = figures.spec_for(problem)
    fig = figures.build(spec)
    assert all(not p.marks and not p.spans for p in fig.panels)
    labels = " ".join(s.label for p in fig.panels for s in p.series)
    assert "min(" not in labels and "k/N" not in labels and "D_node" not in labels  # no formula in the legend
    svg = figures.file_bytes(spec, "svg")
    assert svg.lstrip().startswith(b"<?xml") or b"<svg" in svg[:400]


@pytest.mark.parametrize("name", ["figure_ragged_read", "figure_sharded_read"])
def test_keys_hold_for_many_seeds(name):
    gen = get_generator(name)
    for seed in range(60):
        problem = make_problem(gen, seed)  # raises CheckFailedError if the hand route disagrees
        tol = {a.name: a.rel_tol for a in problem.answers}
        assert all(t in (Fraction(0), Fraction(1, 10)) for t in tol.values())
