"""2D weight-stationary decode (inference.md, Worked Problem 7 and Appendix B): the quantities
inference.ws2d.weight_bytes_per_chip, .collectives and .max_chips_compute_bound, and the generator
derive_weight_stationary_2d. Held against the book's printed forms and figures (T_2D = 2BD/(X W) + 4BF/(YZ W) in
bf16; X = sqrt(n/8), T_2D* = sqrt(128) BD/(sqrt(n) W) and n > 72 for F = 4D, which the book's first versions
printed as 81), against the algorithm run block by block in numpy on a small mesh, and against plain arithmetic
from published chip figures (TPU v5p: 4.59e14 bf16 FLOP/s, 1.8e11 B/s of ICI per axis; v4p: 2.75e14, 9e10)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import sympy as sp

from scalemath import quantities as Q
from scalemath.problems.generators import derive_weight_stationary_2d as ws2d
from scalemath.problems.generators.derive_common import name
from scalemath.problems.registry import get_generator, make_problem
from scalemath.symbolic.symbols import sym

GEN = get_generator("derive_weight_stationary_2d")
B, D, F, X, Y, Z, W, n = (name(k) for k in ("B", "D", "F", "X", "Y", "Z", "W", "n"))


def _answers(params):
    return {a.name: a for a in GEN.solve(params)}


def _params(act="bf16", wt="bf16", model="llama3-70b", chip="tpu-v5p"):
    from scalemath.catalog.models import get_model

    m = get_model(model)
    return {"act": act, "b_x": ws2d.ACTIVATIONS[act], "wt": wt, "b_w": ws2d.WEIGHTS[wt], "model": model,
            "model_name": m.name, "D": m.D, "F": m.F, "chip": chip}


def test_collectives_are_the_books_t_2d_in_bf16():
    a = _answers(_params())
    # inference.md Q7: T_2D = 2BD/(2X W) + 4BF/(YZ W) + 2BD/(2X W)
    assert sp.simplify(a["t_comms"].value - (2 * B * D / (X * W) + 4 * B * F / (Y * Z * W))) == 0


def test_best_x_and_least_time_are_the_books_for_f_4d():
    a = _answers(_params())
    x_opt = a["x_opt"].value.subs(F, 4 * D)
    assert sp.simplify(x_opt - sp.sqrt(n / 8)) == 0  # the book: X = sqrt(N/8), YZ = sqrt(8N)
    best = (2 * B * D / (X * W) + 4 * B * F * X / (n * W)).subs({X: x_opt, F: 4 * D})
    assert sp.simplify(best - sp.sqrt(128) * B * D / (sp.sqrt(n) * W)) == 0  # the book's sqrt(128) BD/(sqrt(N) W)


@pytest.mark.parametrize("model, d, f, expected", [
    ("megatron-gpt-39.1b", 8192, 32768, 72),  # F = 4D: 128 (3/4)^2 = 72 (inference.md Q7; V0/V1 printed 81)
    ("llama3-70b", 8192, 28672, 63),          # 18 F / D = 18 x 3.5
    ("gemma2-27b", 4608, 36864, 144),         # F = 8D
], ids=["f=4d-book", "llama3-70b", "gemma2-27b"])
def test_chip_count_where_2d_wins(model, d, f, expected):
    a = _answers(_params(model=model))
    assert a["n_star"].value == sp.Rational(18 * f, d) == expected


@pytest.mark.parametrize("chip, c, w, act, expected", [
    # n_max = 2 D F W^2 / (b_x^2 C^2) for LLaMA-3 70B's MLP (8192, 28672), by hand in floats
    ("tpu-v5p", 4.59e14, 1.8e11, "bf16", 2 * 8192 * 28672 * 1.8e11**2 / (4 * 4.59e14**2)),  # 18.06 -> 18
    ("tpu-v4p", 2.75e14, 9e10, "int8", 2 * 8192 * 28672 * 9e10**2 / (1 * 2.75e14**2)),     # 50.3 -> 50
], ids=["v5p-bf16", "v4p-int8"])
def test_most_chips_compute_bound(chip, c, w, act, expected):
    a = _answers(_params(act=act, chip=chip))
    assert float(a["n_max"].unrounded) == pytest.approx(expected, rel=1e-12)
    assert int(a["n_max"].value) == math.floor(expected)


def test_compute_bound_threshold_is_where_the_times_meet():
    """At n_max the FLOPs, 4BDF/(nC), equal the best collectives, b_x B sqrt(8DF/n)/W, at any batch."""
    d = Q.get("inference.ws2d.max_chips_compute_bound").derivation
    c, w_ici, b_x, nd = sym("C"), sym("W_ici"), sym("b_x"), sym("n_dev")
    root = d.expr
    flops = (4 * sym("B") * sym("D") * sym("F") / (nd * c)).subs(nd, root)
    comms = (b_x * sym("B") * sp.sqrt(8 * sym("D") * sym("F") / nd) / w_ici).subs(nd, root)
    assert sp.simplify(flops - comms) == 0


def test_collectives_sum_to_the_engines_t_2d_and_weights_conserve():
    total = Q.get("inference.ws2d.collectives").derivation.expr
    assert sp.simplify(total - Q.get("inference.ws2d.t_comms").derivation.expr) == 0
    held = Q.get("inference.ws2d.weight_bytes_per_chip").derivation.expr
    assert sp.simplify(held * sym("n_dev") - 2 * sym("b_w") * sym("D") * sym("F")) == 0  # n chips hold both once


@pytest.mark.parametrize("mesh", [(2, 2, 2), (2, 1, 4), (4, 2, 1)], ids=str)
def test_algorithm_run_block_by_block(mesh):
    """The five steps on an X x Y x Z mesh in numpy: the output is the unsharded In @ W_in @ W_out, each chip holds
    a [D/X, F/YZ] block of each matrix, and the arrays each collective hands a chip have the key's sizes."""
    nx, ny, nz = mesh
    yz = ny * nz
    b, d, f = 3, 8, 16
    rng = np.random.default_rng(0)
    x_in, w_in, w_out = rng.standard_normal((b, d)), rng.standard_normal((d, f)), rng.standard_normal((f, d))
    dx, fyz = d // nx, f // yz
    blocks_in = {(i, j): w_in[i * dx:(i + 1) * dx, j * fyz:(j + 1) * fyz] for i in range(nx) for j in range(yz)}
    blocks_out = {(i, j): w_out[j * fyz:(j + 1) * fyz, i * dx:(i + 1) * dx] for i in range(nx) for j in range(yz)}
    # 1. AllGather over YZ: chip (i, j) gets In[B, D_X] for its i
    gathered = {(i, j): x_in[:, i * dx:(i + 1) * dx] for i in range(nx) for j in range(yz)}
    # 2-3. local matmul, AllReduce over X: every chip of column j holds Tmp[B, F_YZ]
    tmp = {(i, j): sum(gathered[(k, j)] @ blocks_in[(k, j)] for k in range(nx)) for i in range(nx) for j in range(yz)}
    # 4-5. local matmul, ReduceScatter over YZ: Out[B, D_X] summed over j, then each chip keeps D/(XYZ)
    out = {i: sum(tmp[(i, j)] @ blocks_out[(i, j)] for j in range(yz)) for i in range(nx)}
    assert np.allclose(np.concatenate([out[i] for i in range(nx)], axis=1), x_in @ w_in @ w_out)
    values = {B: b, D: d, F: f, X: nx, Y: ny, Z: nz}
    a = _answers(_params(act="bf16", wt="int8"))
    assert a["weights"].value.subs(values) == blocks_in[(0, 0)].size + blocks_out[(0, 0)].size  # int8: 1 byte each
    steps = {s.step.label: s.step.expr for s in a["t_comms"].evaluated.steps}
    assert steps[r"\mathrm{bytes}_{\mathrm{In}}"].subs(values) == 2 * gathered[(0, 0)].size
    assert steps[r"\mathrm{bytes}_{\mathrm{Tmp}}"].subs(values) == 2 * tmp[(0, 0)].size


def test_scan_over_x_finds_the_books_optimum():
    """n = 512, F = 4D: the time over every X dividing n is least at X = 8 = sqrt(512/8) (the book's optimum)."""
    t = {x: 2 / x + 4 * 4 * x / 512 for x in (1, 2, 4, 8, 16, 32, 64)}  # 2BD/(XW) + 4BF/(YZ W), in BD/W
    assert min(t, key=t.get) == 8


def test_every_draw_is_compute_bound_on_two_chips_and_checks():
    for seed in range(60):
        problem = make_problem(GEN, seed)  # raises CheckFailedError if the hand route disagrees
        assert problem.by_name["n_max"].value >= 2


def test_draws_cover_every_chip_model_and_dtype():
    from scalemath.problems.registry import Reject

    seen = set()
    for seed in range(400):
        try:
            p = GEN.draw(random.Random(seed))
        except Reject:
            continue
        seen.add((p["chip"], p["act"]))
    assert {c for c, _ in seen} == set(ws2d.CHIPS) and {a for _, a in seen} == set(ws2d.ACTIVATIONS)
