"""Parallelism for training: each threshold checked by a second route.

The thresholds come out of ``crossover``; here the book's two sides are written out again by
hand (bf16 everywhere, so every byte count is 2 per element), the root is put back into them,
and the sides are compared just below and just above it. The optimal FSDP degree is checked
against a numerical search, and memory per device against a tensor-by-tensor byte count.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath import quantities
from scalemath.errors import NoCrossoverError
from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic import parallelism as par
from scalemath.symbolic.symbols import sym

R = sp.Rational
BELOW, ABOVE = R(99, 100), R(101, 100)
BF16 = {"b_x": 2, "b_w": 2}

rates = st.integers(min_value=10**13, max_value=10**16)
bandwidths = st.integers(min_value=10**9, max_value=10**13)
widths = st.integers(min_value=128, max_value=2**17)
batches = st.integers(min_value=1, max_value=10**8)
degrees = st.integers(min_value=1, max_value=4096)
axes = st.integers(min_value=1, max_value=3)


def value(name: str, given: dict, ctx: Context = Context()) -> sp.Expr:
    return evaluate(get(name), ctx, given).value


def comms_bound_flips(math, comms, unknown: str, root, values: dict, *, bound_below: bool) -> None:
    """math == comms at the root; on one side of it comms wins, on the other math wins."""
    at = lambda x: (math(**(values | {unknown: x})), comms(**(values | {unknown: x})))  # noqa: E731
    m, c = at(root)
    assert m == c
    for x, comms_wins in ((root * BELOW, bound_below), (root * ABOVE, not bound_below)):
        m, c = at(x)
        assert (c > m) == comms_wins, (unknown, x)


# -- the book's sides, written out by hand ------------------------------------------------------------------

def dp_math(B, D, F, X, C, **_):           # backward: four matmuls of 2(B/X)DF
    return R(8 * B * D * F) / (X * C)


def dp_comms(D, F, M_X, W_ici, **_):      # two AllReduces of 2DF bytes, each 2V/W, over M_X axes
    return R(8 * D * F) / (M_X * W_ici)


def fsdp_math(B, D, F, X, C, **_):         # forward: two matmuls
    return R(4 * B * D * F) / (X * C)


def fsdp_comms(D, F, M_X, W_ici, **_):    # AllGather W_in and W_out, 2DF bytes each
    return R(4 * D * F) / (M_X * W_ici)


def tp_math(B, D, F, Y, C, **_):
    return R(4 * B * D * F) / (Y * C)


def tp_comms(B, D, M_Y, W_ici, **_):      # AllGather In and ReduceScatter Out, 2BD bytes each
    return R(4 * B * D) / (M_Y * W_ici)


def mixed_parts(B, D, F, X, n_dev, M_X, M_Y, W_ici):
    y = R(n_dev) / X
    return R(4 * D * F) / (y * W_ici * M_X), R(4 * B * D) / (X * W_ici * M_Y)


@settings(max_examples=40, deadline=None)
@given(c=rates, w=bandwidths, d=widths, f=widths, x=degrees, m=axes)
def test_dp_and_fsdp_batch_thresholds(c, w, d, f, x, m):
    values = {"C": c, "W_ici": w, "D": d, "F": f, "X": x, "M_X": m}
    for name, math, comms in (("parallel.dp.min_batch", dp_math, dp_comms),
                              ("parallel.fsdp.min_batch", fsdp_math, fsdp_comms)):
        root = value(name, {"C": c, "W_ici": w, "X": x, "M_X": m, "b_w": 2})
        comms_bound_flips(math, comms, "B", root, values, bound_below=True)
        per_device = value(name + "_per_device", {"C": c, "W_ici": w, "M_X": m, "b_w": 2})
        assert per_device == root / x == R(c, m * w)


@settings(max_examples=40, deadline=None)
@given(c=rates, w=bandwidths, d=widths, f=widths, b=batches, m=axes)
def test_dp_max_devices_is_the_batch_over_the_per_device_threshold(c, w, d, f, b, m):
    root = value("parallel.fsdp.max_devices", {"C": c, "W_ici": w, "B": b, "M_X": m, "b_w": 2})
    comms_bound_flips(fsdp_math, fsdp_comms, "X", root, {"C": c, "W_ici": w, "D": d, "F": f, "B": b, "M_X": m},
                      bound_below=False)
    assert root == b / value("parallel.fsdp.min_batch_per_device", {"C": c, "W_ici": w, "M_X": m, "b_w": 2})


@settings(max_examples=40, deadline=None)
@given(c=rates, w=bandwidths, d=widths, f=widths, b=batches, m=axes)
def test_tp_max_degree(c, w, d, f, b, m):
    root = value("parallel.tp.max_degree", {"C": c, "W_ici": w, "F": f, "M_Y": m, "b_x": 2})
    comms_bound_flips(tp_math, tp_comms, "Y", root, {"C": c, "W_ici": w, "D": d, "F": f, "B": b, "M_Y": m},
                      bound_below=False)
    # and the width a given degree needs is the same balance read the other way
    assert value("parallel.tp.min_f", {"C": c, "W_ici": w, "Y": root, "M_Y": m, "b_x": 2}) == f


def test_tp_bound_does_not_depend_on_batch_or_precision():
    d = par.tp_max_degree()
    assert sym("B") not in d.expr.free_symbols
    c, w = sym("C"), sym("W_ici")
    bf16 = d.expr.subs({sym("b_x"): 2})
    int8 = d.expr.subs({sym("b_x"): 1, c: 2 * c})  # twice the FLOPs, half the bytes
    assert sp.simplify(bf16 - int8) == 0
    assert sp.simplify(bf16 - sym("M_Y") * sym("F") * w / c) == 0


# -- FSDP + TP: the optimum and the thresholds --------------------------------------------------------------

def _grid_min(fn, x_opt, n):
    """The least value of fn over a fine grid of real X in [1, n] that includes x_opt's neighbourhood."""
    lo, hi = 1.0, float(n)
    grid = [lo * (hi / lo) ** (i / 400) for i in range(401)]
    grid += [float(x_opt) * (1 + j / 1000) for j in range(-20, 21)]
    return min((fn(x), x) for x in grid if 1 <= x <= n)


@settings(max_examples=30, deadline=None)
@given(b=st.integers(10**3, 10**8), f=widths, n=st.integers(4, 2**16), mx=axes, my=axes)
def test_x_opt_minimises_both_policies(b, f, n, mx, my):
    given = {"B": b, "F": f, "n_dev": n, "M_X": mx, "M_Y": my}
    x_opt = value("parallel.fsdp_tp.x_opt", given)
    assert x_opt == value("parallel.fsdp_tp.x_opt_sum_policy", given)
    assert x_opt ** 2 == R(b * mx * n, f * my)  # the book's sqrt((B/F)(M_X/M_Y)N)
    w, d = 10**11, 8192
    parts = lambda x: [float(t) for t in mixed_parts(b, d, f, sp.Float(float(x)), n, mx, my, w)]  # noqa: E731
    for combine in (max, sum):
        at_opt = combine(parts(x_opt))
        best, where = _grid_min(lambda x: combine(parts(x)), x_opt, n)
        if 1 <= x_opt <= n:
            assert at_opt <= best * (1 + 1e-9)
            assert abs(where - float(x_opt)) <= 0.05 * float(x_opt)
    # at the optimum the two kinds of communication take the same time
    t_fsdp, t_tp = mixed_parts(b, d, f, x_opt, n, mx, my, w)
    assert sp.simplify(t_fsdp - t_tp) == 0


@settings(max_examples=30, deadline=None)
@given(c=rates, w=bandwidths, d=widths, f=widths, n=st.integers(4, 2**16), mx=axes, my=axes)
def test_mixed_min_batch_both_policies(c, w, d, f, n, mx, my):
    hw = {"C": c, "W_ici": w, "F": f, "n_dev": n, "M_X": mx, "M_Y": my, "b_x": 2}

    def math(B, **_):
        return R(4 * B * d * f) / (n * c)

    def best_comms(combine):
        def comms(B, **_):
            x_opt = sp.sqrt(R(B * mx * n, f * my))
            return combine(mixed_parts(B, d, f, x_opt, n, mx, my, w))
        return comms

    roots = {}
    for policy, combine in (("", lambda ts: sp.Max(*ts)), ("_sum_policy", lambda ts: sp.Add(*ts))):
        root = value(f"parallel.fsdp_tp.min_batch{policy}", hw)
        roots[policy] = root
        at = lambda b: (math(b), best_comms(combine)(b))  # noqa: E731
        m, cm = at(root)
        assert sp.simplify(m - cm) == 0
        for b, comms_wins in ((root * BELOW, True), (root * ABOVE, False)):
            m, cm = at(b)
            assert (cm > m) == comms_wins
        per_chip = value(f"parallel.fsdp_tp.min_batch_per_chip{policy}", hw)
        assert per_chip == root / n
    alpha = R(c, w)
    assert roots[""] / n == alpha ** 2 / (mx * my * f)
    assert roots["_sum_policy"] == 4 * roots[""]
    # the chip count a batch supports is the batch over the per-chip threshold
    chips = value("parallel.fsdp_tp.max_chips", {k: v for k, v in hw.items() if k != "n_dev"} | {"B": 10**6})
    assert chips == 10**6 / (roots[""] / n)


def test_mixed_scheme_ratio_matches_the_books_closed_form():
    # T_math / T_comms at X_opt = sqrt(B F M_X M_Y / N) / alpha (training.md, P5-15)
    B, F, n, mx, my, C, W = (sym(s) for s in ("B", "F", "n_dev", "M_X", "M_Y", "C", "W_ici"))
    d = par.fsdp_tp_min_batch()
    math, comms = d.steps[-3].expr, d.steps[-2].expr
    ratio = sp.simplify((math / comms).subs(sym("b_x"), 2))
    assert sp.simplify(ratio - sp.sqrt(B * F * mx * my / n) * W / C) == 0


# -- across pods, GPUs ------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(c=rates, w=st.integers(10**8, 10**11), d=widths, f=widths, n=st.integers(2, 10**5), m=st.integers(1, 10**4))
def test_dcn_threshold(c, w, d, f, n, m):
    def math(B, **_):
        return R(8 * B * d * f) / (n * c)

    def comms(B, **_):  # each chip AllReduces its 1/M share of 2DF gradient bytes over DCN
        return R(8 * d * f) / (m * w)

    root = value("parallel.dcn.min_batch", {"C": c, "W_dcn": w, "n_dev": n, "n_slice": m, "b_w": 2})
    comms_bound_flips(math, comms, "B", root, {}, bound_below=True)
    assert value("parallel.dcn.min_batch_per_slice", {"C": c, "W_dcn": w, "b_w": 2}) == root * m / n == R(c, w)


@settings(max_examples=40, deadline=None)
@given(c=rates, w=bandwidths, d=widths, f=widths, b=batches, z=st.integers(9, 4096), k=st.integers(1, 16))
def test_gpu_expert_parallel_width(c, w, d, f, b, z, k):
    def math(F, **_):
        return R(4 * b * k * d * F) / (z * c)

    def comms(F, **_):  # the book's AllToAll cost, 8-GPU nodes, bf16
        return R(4 * b * d * (z - 8)) / (w * z) * min(R(8 * k, z), 1)

    hw = {"C": c, "W_node": w, "Z": z, "k": k, "D_node": 8, "b_x": 2}
    name = "parallel.gpu.ep.min_f_few_nodes" if 8 * k >= z else "parallel.gpu.ep.min_f_many_nodes"
    root = value(name, {n: v for n, v in hw.items() if n in {s.name for s in get(name).derivation.symbols}})
    comms_bound_flips(math, comms, "F", root, {}, bound_below=True)
    # the many-node width grows towards 8 C / W_node and never passes it
    assert value("parallel.gpu.ep.min_f_many_nodes", {"C": c, "W_node": w, "Z": z, "D_node": 8, "b_x": 2}) < 8 * R(c, w)


def test_gpu_expert_parallel_limit_is_eight_alpha():
    limit = par.gpu_ep_min_f_limit().expr.subs({sym("b_x"): 2, sym("D_node"): 8})
    assert sp.simplify(limit - 8 * sym("C") / sym("W_node")) == 0


@settings(max_examples=40, deadline=None)
@given(c=rates, w=bandwidths, d=widths, f=widths, b=batches)
def test_gpu_tp_two_nodes(c, w, d, f, b):
    def math(Y, **_):
        return R(4 * b * d * f) / (Y * c)

    def comms(Y, **_):  # only the GPUs beyond the first node's 8 send over the scale-out network
        return R(4 * b * d) * (Y - 8) / (Y * w)

    root = value("parallel.gpu.tp.max_degree_two_nodes", {"C": c, "W_node": w, "F": f, "D_node": 8, "b_x": 2})
    comms_bound_flips(math, comms, "Y", root, {}, bound_below=False)
    assert root == 8 + value("parallel.gpu.tp.max_degree", {"C": c, "W_node": w, "F": f, "b_x": 2})


@settings(max_examples=40, deadline=None)
@given(c=rates, w=bandwidths, m=st.integers(2, 64))
def test_gpu_dp_few_nodes_and_moe(c, w, m):
    alpha = R(c, w)
    few = value("parallel.gpu.dp.min_batch_per_gpu_few_nodes", {"C": c, "W_node": w, "M_nodes": m, "b_w": 2})
    assert few == alpha * (m - 1) / m
    moe = value("parallel.gpu.dp.min_batch_per_gpu_moe", {"C": c, "W_node": w, "E": 8 * m, "k": 2, "b_w": 2})
    assert moe == 4 * m * alpha


def test_one_node_of_data_parallelism_has_no_threshold():
    with pytest.raises(NoCrossoverError):
        value("parallel.gpu.dp.min_batch_per_gpu_few_nodes", {"C": 10**15, "W_node": 4 * 10**11, "M_nodes": 1,
                                                               "b_w": 2})


@pytest.mark.parametrize("y,nodes", [(1, 1), (4, 1), (8, 1), (16, 2), (64, 8), (128, 16)])
def test_gpu_dp_threshold_falls_with_the_nodes_a_replica_spans(y, nodes):
    got = value("parallel.gpu.dp.min_batch_per_gpu_model_sharded", {"Y": y}, Context(chip="h100"))
    assert got == R(990 * 10**12, 400 * 10**9) / nodes


def test_gpu_quantities_bind_without_a_pod_shape():
    # GPUs have no torus; X, Y, Z stay free instead of failing to bind
    ev = evaluate(get("parallel.gpu.tp.max_degree_in_node"), Context(chip="h100"), {"F": 28672})
    assert ev.value == R(28672 * 450, 990_000)


# -- memory, time, pipeline --------------------------------------------------------------------------------------

def test_memory_per_device_is_the_sum_of_its_tensors():
    # LLaMA-2-13B shapes, FSDP over 4096 chips, a 3M-token batch, bf16 weights and activations, Adam in fp32
    L, D, F, N, K, H, V = 40, 5120, 13824, 40, 40, 128, 32000
    B, X = 3 * 10**6, 4096
    per_layer = {"W_in1": D * F, "W_in2": D * F, "W_out": F * D,
                 "W_Q": D * N * H, "W_K": D * K * H, "W_V": D * K * H, "W_O": N * H * D}
    embeddings = {"embed": V * D, "unembed": V * D}
    params = L * sum(per_layer.values()) + sum(embeddings.values())
    tensor_bytes = 0
    for n in [*per_layer.values()] * L + [*embeddings.values()]:
        tensor_bytes += 2 * n + 4 * n + 4 * n        # bf16 weight, fp32 first and second moments
    saved = {"after W_in1": B * F, "after W_in2": B * F, "after W_out": B * D}
    act_bytes = L * sum(2 * n for n in saved.values())
    expected = R(tensor_bytes + act_bytes, X)
    got = value("parallel.memory_per_device.fsdp",
                {"P": params, "b_w": 2, "b_opt": 8, "A_act": act_bytes, "X": X})
    assert got == expected
    # every other scheme divides the same bytes by its own shard count, except DP's replicated state
    common = {"P": params, "b_w": 2, "b_opt": 8, "A_act": act_bytes}
    assert value("parallel.memory_per_device.fsdp_tp", common | {"X": 1024, "Y": 4}) == expected
    assert value("parallel.memory_per_device.pipeline", common | {"Z": 4096}) == expected
    assert value("parallel.memory_per_device.dp", common | {"X": X}) == tensor_bytes + R(act_bytes, X)


def test_min_chips_is_the_fewest_whole_chips_that_hold_the_state():
    given = {"P": 7 * 10**10, "b_w": 2, "b_opt": 8, "A_act": 10**13, "H_chip": 96 * 10**9}
    ev = evaluate(get("parallel.min_chips_memory"), Context(), given)
    exact, n = ev.steps[-2].value, ev.value
    memory = {k: v for k, v in given.items() if k != "H_chip"}
    # at the exact (fractional) count each chip holds exactly its HBM; the answer is the next whole chip
    assert value("parallel.memory_per_device.fsdp", memory | {"X": exact}) == 96 * 10**9
    assert n.is_Integer and n - 1 < exact <= n
    assert value("parallel.memory_per_device.fsdp", memory | {"X": n}) <= 96 * 10**9
    assert value("parallel.memory_per_device.fsdp", memory | {"X": n - 1}) > 96 * 10**9


@settings(max_examples=30, deadline=None)
@given(p=st.integers(10**8, 10**12), b=st.integers(10**4, 10**8), steps=st.integers(1, 10**6),
       n=st.integers(1, 10**5), c=rates, mfu=st.fractions(Fraction(1, 100), Fraction(1)))
def test_training_time_is_steps_times_step_time(p, b, steps, n, c, mfu):
    common = {"P": p, "n_dev": n, "C": c, "MFU": mfu}
    step = value("parallel.step_time", common | {"B": b})
    total = value("parallel.training_time", common | {"tokens": b * steps})
    assert total == steps * step


def test_step_time_overlaps_compute_and_communication():
    d = par.t_step("fsdp")
    L = sym("L")
    math, comms = d.steps[2].expr, d.steps[3].expr
    assert sp.simplify(math - L * (par.t_math("fsdp", "fwd").expr + par.t_math("fsdp", "bwd").expr)) == 0
    assert sp.simplify(comms - L * (par.t_comms("fsdp", "fwd").expr + par.t_comms("fsdp", "bwd").expr)) == 0
    assert d.expr == sp.Max(math, comms)


def test_fsdp_and_dp_share_the_per_device_threshold():
    assert par.dp_min_batch_per_device().expr == par.fsdp_min_batch_per_device().expr


def test_pipeline_transfers():
    hop = value("parallel.pipeline.t_comms_hop", {"B": 4096, "D": 8192, "b_x": 2, "n_mb": 4, "W": 10**9})
    total = value("parallel.pipeline.t_comms", {"B": 4096, "D": 8192, "b_x": 2, "n_mb": 4, "W": 10**9, "Z": 8})
    assert hop == R(2 * 1024 * 8192, 10**9)
    assert total == 10 * hop       # N_MB + Z - 2 = 10 hops on the critical path
    # the book gives no bubble formula; none is registered
    assert not [n for n in quantities.QUANTITIES if "bubble" in n]


def test_every_parallel_quantity_is_in_its_topic():
    names = [n for n in quantities.QUANTITIES if n.startswith("parallel.")]
    assert len(names) > 50
    assert all(get(n).topic == "parallelism" for n in names)
