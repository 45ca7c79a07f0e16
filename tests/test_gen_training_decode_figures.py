"""figure_training_read and figure_decode_read (issue 29): their keys against plain arithmetic from published
figures (v5p: 459e12 bf16 FLOP/s and ICI links of 90e9 bytes/s, counted twice per axis; v5e: 197e12 FLOP/s,
45e9 per link, 16e9 bytes of HBM at 820e9 bytes/s; LLaMA 2 13B's layers written out), against the book's
worked thresholds where it prints them, the figures drawn with no answer on them, and the whole problems made
and checked for many seeds."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scalemath.problems import figures, sets
from scalemath.problems.registry import get_generator, make_problem

TRAINING = get_generator("figure_training_read")
DECODE = get_generator("figure_decode_read")


def _answers(gen, params):
    return {a.name: a for a in gen.solve(params)}


# -- the training figure --------------------------------------------------------------------------------------

TRAINING_ROWS = [
    # (id, params, DP per chip, FSDP + TP per chip, compute-bound schemes, compute time at the asked batch)
    # training.md's figure: v5p 16x16x16, D = 8192, F = 4D. DP over 3 axes: C b / (2 x 3 x 2 x 90e9) = 850
    # (the book's 850, training-ex3); FSDP + TP: C^2 b^2 / (8 F W^2) = 2550^2 / (2 x 32768) = 99.2 per chip,
    # 406,406 tokens on 4096 chips (the book prints about 400,000). At 1024 per chip DP and FSDP + TP are past
    # their thresholds; TP's ratio b C N / (12 W F) = 53 leaves it comms-bound.
    ("v5p-book-4096", {"chip": "tpu-v5p", "D": 8192, "F": 32768, "n_dev": 4096, "B_asked": 4096 * 1024,
                       "lo": 3},
     459e12 * 2 / (6 * 180e9), (459e12 * 2) ** 2 / (8 * 32768 * 180e9 ** 2), "DP, FSDP and FSDP + TP",
     8 * 4096 * 1024 * 8192 * 32768 / (459e12 * 4096)),
    # v5e, 64 chips, D = 4096, F = 14336, 16 per chip: below both thresholds (729.6 and 167.1), TP's ratio
    # 2 x 2189 x 64 / (12 x 14336) = 1.63: nothing is compute-bound
    ("v5e-64-small", {"chip": "tpu-v5e", "D": 4096, "F": 14336, "n_dev": 64, "B_asked": 64 * 16, "lo": 2},
     197e12 * 2 / (6 * 90e9), (197e12 * 2) ** 2 / (8 * 14336 * 90e9 ** 2), "none of them",
     8 * 64 * 16 * 4096 * 14336 / (197e12 * 64)),
]


@pytest.mark.parametrize("params, dp, mixed, bound, t_math", [r[1:] for r in TRAINING_ROWS],
                         ids=[r[0] for r in TRAINING_ROWS])
def test_training_reading_keys(params, dp, mixed, bound, t_math):
    from scalemath.problems.generators.figure_training_read import SETS

    a = _answers(TRAINING, params)
    assert float(a["dp_per_chip"].value) == pytest.approx(dp, rel=1e-12)
    assert float(a["fsdp_tp_per_chip"].value) == pytest.approx(mixed, rel=1e-12)
    assert SETS[int(a["bound"].value)] == bound
    assert float(a["t_math"].value) == pytest.approx(t_math, rel=1e-12)


def test_training_thresholds_are_the_books_worked_figures():
    # part2-transformers-training.yaml: training-ex3 (850 per chip over 3 axes) and the 16x16x16 figure's
    # N alpha^2 / (M_X M_Y F) = 406,406.25 tokens (the book prints about 400,000)
    a = _answers(TRAINING, TRAINING_ROWS[0][1])
    assert a["dp_per_chip"].value == 850
    assert a["fsdp_tp_per_chip"].value * 4096 == Fraction(40640625, 100)


def test_training_mixed_line_meets_compute_where_the_threshold_says():
    """The drawn FSDP + TP line (X at X_opt, the larger collective) crosses the compute line between the two
    plotted batches around parallel.fsdp_tp.min_batch, and not elsewhere."""
    params = TRAINING_ROWS[0][1]
    star = _answers(TRAINING, params)["fsdp_tp_per_chip"].value
    (panel,) = figures.build(_training_spec(params)).panels
    compute, mixed = panel.series[0], panel.series[-1]
    assert mixed.label.startswith("FSDP + TP") and compute.x[0] == 2 ** 3 and compute.x[-1] == 2 ** 13
    below = [b for b, c, m in zip(compute.x, compute.y, mixed.y) if m > c]
    assert below and max(below) < star < 2 * max(below)


def _training_spec(params):
    from scalemath.problems.generators.figure_training_read import figure

    return figure(params)


# -- the decode figure ---------------------------------------------------------------------------------------

# LLaMA 2 13B: 40 layers of D = 5120 (4 D^2 attention, 3 D F with F = 13824, two norms), 32000 x 5120 embedding
# and unembedding, no final norm in the book's count; MHA with 40 heads of 128: 2 x 40 x 40 x 128 x 2 bytes a token
P_13B = 40 * (4 * 5120**2 + 3 * 5120 * 13824 + 2 * 5120) + 2 * 32000 * 5120
KV_13B = 2 * 40 * 40 * 128 * 2


def _step_13b_v5e(B, S, n=8):
    return B * S * KV_13B / (n * 820e9) + max(2 * B * P_13B / (n * 197e12), 2 * P_13B / (n * 820e9))


DECODE_ROWS = [
    # (id, params, step at (S_step, B_step), doubling batch at S_double, throughput per chip at (S_rate, B_rate))
    # 13B on eight v5e (inference.md's example): weights 2P / (8 x 820e9) = 3.97 ms; at 8192 one sequence's
    # cache adds 1.02 ms, so twice the batch-1 step (9.98 ms) is reached on the weights' line at B = 5.87
    ("13b-v5e-8", {"model": "llama2-13b", "chip": "tpu-v5e", "weight_dtype": "bf16", "n_dev": 8,
                   "contexts": (2048, 4096, 8192), "S_step": 2048, "B_step": 16, "S_double": 8192, "S_rate": 4096,
                   "B_rate": 8},
     _step_13b_v5e(16, 2048), (2 * _step_13b_v5e(1, 8192) - 2 * P_13B / (8 * 820e9)) * 8 * 820e9 / (8192 * KV_13B),
     8 / (8 * _step_13b_v5e(8, 4096))),
]


@pytest.mark.parametrize("params, step, doubling, throughput", [r[1:] for r in DECODE_ROWS],
                         ids=[r[0] for r in DECODE_ROWS])
def test_decode_reading_keys(params, step, doubling, throughput):
    a = _answers(DECODE, params)
    assert float(a["step"].value) == pytest.approx(step, rel=1e-12)
    assert float(a["doubling"].value) == pytest.approx(doubling, rel=1e-12)
    assert float(a["throughput"].value) == pytest.approx(throughput, rel=1e-12)


def test_decode_doubling_on_the_flops_line():
    """With a short context and a fast-HBM chip the FLOPs pass the weights before the step doubles: the root
    comes from the Max's other line (the engine's root against plain arithmetic on it)."""
    found = 0
    for seed in range(200):
        p = make_problem(DECODE, seed).params
        from scalemath.problems.generators.figure_decode_read import _second, _step
        r = _second(p)
        root = _answers(DECODE, p)["doubling"].value
        if 2 * Fraction(str(root)) * r["P"] / (r["n"] * r["C"]) > r["bw"] * r["P"] / (r["n"] * r["W"]):
            found += 1
        assert abs(float(_step(r, p["S_double"], Fraction(str(float(root))))) / float(2 * _step(r, p["S_double"], 1))
                   - 1) < 1e-9
        if found:
            break
    assert found


# -- every figure generator of this file ---------------------------------------------------------------------

NAMES = ["figure_training_read", "figure_decode_read"]


@pytest.mark.parametrize("name", NAMES)
def test_figure_carries_no_answer_and_draws(name):
    pset = sets.build_set(generator_names=[name], n=1, seed=5)
    (problem,) = pset.problems
    spec = figures.spec_for(problem)
    fig = figures.build(spec)
    # the one mark left is where a decode curve ends (the largest batch that fits), which no question asks
    assert all(m.label.startswith("max batch") for p in fig.panels for m in p.marks)
    assert not any(p.spans for p in fig.panels) and not fig.panels[0].marks
    labels = " ".join(s.label for p in fig.panels for s in p.series)
    assert "min_batch" not in labels and "critical" not in labels
    svg = figures.file_bytes(spec, "svg")
    assert svg.lstrip().startswith(b"<?xml") or b"<svg" in svg[:400]


@pytest.mark.parametrize("name", NAMES)
def test_keys_hold_for_many_seeds(name):
    gen = get_generator(name)
    for seed in range(60):
        problem = make_problem(gen, seed)  # raises CheckFailedError if the hand route disagrees
        assert all(a.rel_tol in (Fraction(0), Fraction(1, 10)) for a in problem.answers)
