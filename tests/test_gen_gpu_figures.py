"""The figure-reading generators of issue 29 (figure_gpu_collective_read, figure_sharp_read, figure_serving_read):
their keys against hand arithmetic from published figures (H100: 450 GB/s NVLink egress; the catalog's 8 µs
NVLink collective floor; A100: the 43.83 µs nccl-tests AllReduce of 32 KiB; TPU v5e: 8.2e11 B/s HBM, 1.97e14
bf16 FLOP/s), the figure drawn with no answer on it, and a set rendered."""

from __future__ import annotations

import pytest

from scalemath.problems import figures, sets
from scalemath.problems.registry import get_generator

W_H100, FLOOR_H100 = 450e9, 8e-6
ROWS = [  # (id, params, expected): time = max(floor, k V (N-1) / (N W)), k = 1 AllGather, 2 AllReduce
    ("h100-allreduce-8", {"chip": "h100", "collective": "all-reduce", "N": 8, "x_lo": 17, "x_hi": 26,
                          "V_asked": 2**18, "V_big": 2**25},
     {"floor": FLOOR_H100, "crossover": FLOOR_H100 * 8 * W_H100 / 14, "regime": 0,
      "time_big": 2**25 * 14 / (8 * W_H100)}),
    ("a100-allgather-4", {"chip": "a100", "collective": "all-gather", "N": 4, "x_lo": 20, "x_hi": 29,
                          "V_asked": 2**27, "V_big": 2**28},
     {"floor": 43.83e-6, "crossover": 43.83e-6 * 4 * 300e9 / 3, "regime": 1, "time_big": 2**28 * 3 / (4 * 300e9)}),
]


@pytest.mark.parametrize("params, expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_gpu_collective_reading_keys(params, expected):
    answers = {a.name: a for a in get_generator("figure_gpu_collective_read").solve(params)}
    for name, value in expected.items():
        assert float(answers[name].value) == pytest.approx(value, rel=1e-9), name


@pytest.mark.parametrize("chip, n, v, ring, sharp", [
    ("h100", 8, 2**28, 2**28 * 14 / (8 * W_H100), 2**28 / W_H100),   # gpus.md: SHARP is 2(N-1)/N = 1.75x faster
    ("b200", 4, 2**26, 2**26 * 6 / (4 * 900e9), 2**26 / 900e9),       # B200: 900 GB/s egress
], ids=["h100-8", "b200-4"])
def test_sharp_reading_keys(chip, n, v, ring, sharp):
    params = {"chip": chip, "N": n, "x_lo": 18, "x_hi": 27, "V_big": v, "V_small": 2**18}
    answers = {a.name: a for a in get_generator("figure_sharp_read").solve(params)}
    assert float(answers["ring"].value) == pytest.approx(ring, rel=1e-9)
    assert float(answers["sharp"].value) == pytest.approx(sharp, rel=1e-9)
    assert float(answers["speedup"].value) == pytest.approx(ring / sharp, rel=1e-9)
    floor = 8e-6  # 2**18 bytes sit on the floor: 262 kB < 8 µs x 450 GB/s = 3.6 MB
    assert float(answers["sharp_other"].value) == pytest.approx(floor, rel=1e-9)


def test_serving_reading_keys_llama3_70b_on_16_v5e():
    # applied-inference.md's setup: LLaMA 3-70B (70,553,706,496 parameters less the final norm's 8192), int8
    # weights and KV (2 x 80 layers x 8 KV heads x 128 = 163,840 bytes per token), 16 TPU v5e, context 8192
    P, kv, n, W, C, S, B = 70_553_698_304, 163_840, 16, 8.2e11, 1.97e14, 8192, 64
    params = {"model": "llama3-70b", "model_name": "LLaMA-3 70B", "chip": "tpu-v5e", "weight_dtype": "int8",
              "n_dev": n, "S": S, "B_asked": B}
    answers = {a.name: a for a in get_generator("figure_serving_read").solve(params)}
    t_w, t_kv, t_math = P / (n * W), B * S * kv / (n * W), 2 * B * P / (n * C)
    assert float(answers["t_weights"].value) == pytest.approx(t_w, rel=1e-9)  # 5.38 ms (the book: 5.34 ms)
    assert float(answers["step"].value) == pytest.approx(t_kv + max(t_w, t_math), rel=1e-9)
    assert int(answers["largest"].value) == 1  # the KV caches (6.5 ms) over the parameters (5.4 ms)
    assert float(answers["kv_equals_weights"].value) == pytest.approx(P / (S * kv), rel=1e-9)  # about 52.6


@pytest.mark.parametrize("draft_cost, alpha, g, rate, short, long, other, expected", [
    # (1 + α + ... + α^γ) / (1 + γ c), by hand: c = 1/20, α = 0.8, γ = 4: 3.3616 / 1.2 = 2.80133
    # at α = 0.6 eight drafts (1.768) still beat one (1.524)
    ("1/20", "0.8", 4, "0.6", 1, 8, 4, (3.3616 / 1.2, 1, (1 + .6 + .36 + .216 + .1296) / 1.2)),
    # drafting more stops paying (the book's Chinchilla 70B figure: 3-4 tokens best): at c = 1/10 and α = 0.5,
    # eight drafts (1.99609 / 1.8 = 1.109) lose to one (1.5 / 1.1 = 1.364)
    ("1/10", "0.5", 1, "0.5", 1, 8, 3, (1.5 / 1.1, 0, (1 + .5 + .25 + .125) / 1.3)),
], ids=["c=1/20", "c=1/10"])
def test_speculative_reading_keys(draft_cost, alpha, g, rate, short, long, other, expected):
    params = {"draft_cost": draft_cost, "rates": ["0.5", rate, "0.9"] if rate != "0.5" else ["0.5", "0.6", "0.9"],
              "rate_asked": rate, "alpha_asked": alpha, "draft_asked": g, "short": short, "long": long,
              "other_draft": other}
    answers = {a.name: a for a in get_generator("figure_speculative_read").solve(params)}
    assert float(answers["speedup_alpha"].value) == pytest.approx(expected[0], rel=1e-9)
    assert int(answers["longer"].value) == expected[1]
    assert float(answers["speedup_other"].value) == pytest.approx(expected[2], rel=1e-9)


@pytest.mark.parametrize("name", ["figure_gpu_collective_read", "figure_sharp_read", "figure_serving_read",
                                  "figure_speculative_read"])
def test_figure_carries_no_answer_and_draws(name):
    pset = sets.build_set(generator_names=[name], n=1, seed=5)
    (problem,) = pset.problems
    spec = figures.spec_for(problem)
    fig = figures.build(spec)
    assert all(not p.marks and not p.spans for p in fig.panels)  # no corner labelled, nothing shaded
    svg = figures.file_bytes(spec, "svg")
    assert svg.lstrip().startswith(b"<?xml") or b"<svg" in svg[:400]


def test_sharp_is_asked_only_of_chips_with_in_switch_reduction():
    gen = get_generator("figure_sharp_read")
    import random

    chips = {gen.draw(random.Random(seed))["chip"] for seed in range(60) if _ok(gen, seed)}
    assert chips and not chips & {"v100", "a100"}


def _ok(gen, seed):
    import random

    from scalemath.problems.registry import Reject

    try:
        gen.draw(random.Random(seed))
        return True
    except Reject:
        return False
