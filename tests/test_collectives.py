"""Collective costs: identities, limits and hand-computed values.

The properties evaluate each derivation on its own with random exact values, so an
identity such as AllReduce = ReduceScatter + AllGather is checked on numbers and not
only by the way the AllReduce is built.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath import quantities
from scalemath.values import units
from scalemath.quantities import Context, evaluate
from scalemath.symbolic import collectives as coll
from scalemath.symbolic.symbols import sym as _sym
from scalemath.symbolic.symbols import sym

V, N, N_axes = sym("V"), sym("N"), sym("N_axes")
X, Y, Z = sym("X"), sym("Y"), sym("Z")
W_ici, W_link, t_hop = sym("W_ici"), sym("W_link"), sym("t_hop")
W_gpu, W_node, W_su = sym("W_gpu"), sym("W_node"), sym("W_su")
D_node, D_leaf, D_spine, M = sym("D_node"), sym("D_leaf"), sym("D_spine"), sym("M_nodes")
eta, k_top, t_meas = sym("eta"), sym("k_top"), sym("t_meas")
R = sp.Rational

COLLECTIVE_NAMES = sorted(n for n in quantities.QUANTITIES if n.startswith(("collective.", "gpu.")))

# -- random exact values for every symbol a collective uses ---------------------------------------------

counts = st.integers(min_value=1, max_value=256)
bandwidths = st.integers(min_value=10**9, max_value=10**13)
byte_counts = st.integers(min_value=1, max_value=10**12)
latencies = st.fractions(min_value=Fraction(1, 10**8), max_value=Fraction(1, 10**4)).filter(lambda f: f > 0)
shares = st.fractions(min_value=Fraction(1, 100), max_value=1).filter(lambda f: f > 0)

STRATEGIES = {
    "V": byte_counts, "N": counts, "N_axes": st.integers(1, 3), "X": counts, "Y": counts, "Z": counts,
    "W_ici": bandwidths, "W_link": bandwidths, "W_gpu": bandwidths, "W_node": bandwidths, "W_su": bandwidths,
    "t_hop": latencies, "a_hop": latencies, "t_meas": latencies, "D_node": counts, "D_leaf": counts, "D_spine": counts,
    "M_nodes": counts, "eta": shares, "k_top": counts,
    "n_idle": st.integers(1, 3), "k_sw": counts, "W_port": bandwidths,  # idle axes; a scale-out switch's ports
}


def values_for(derivation, draw) -> dict[sp.Symbol, object]:
    return {s: draw(STRATEGIES[s.name]) for s in sorted(derivation.symbols, key=lambda s: s.name)}


# -- AllReduce = ReduceScatter + AllGather ---------------------------------------------------------------

SUMS = [
    (coll.all_reduce_time, coll.reduce_scatter_time, coll.all_gather_time),
    (coll.all_reduce_time_approx, coll.reduce_scatter_time_approx, coll.all_gather_time_approx),
    (coll.all_reduce_time_multi_axis, coll.reduce_scatter_time_multi_axis, coll.all_gather_time_multi_axis),
    (coll.all_reduce_time_no_wraparound, coll.reduce_scatter_time_no_wraparound, coll.all_gather_time_no_wraparound),
    (coll.all_reduce_time_unidirectional, coll.reduce_scatter_time_unidirectional,
     coll.all_gather_time_unidirectional),
    (coll.gpu_all_reduce_time, coll.gpu_reduce_scatter_time, coll.gpu_all_gather_time),
    (coll.gpu_all_reduce_cross_node_time, coll.gpu_reduce_scatter_cross_node_time,
     coll.gpu_all_gather_cross_node_time),
]


@pytest.mark.parametrize("ar, rs, ag", SUMS, ids=[s[0].__name__ for s in SUMS])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_all_reduce_is_reduce_scatter_plus_all_gather(ar, rs, ag, data):
    values = values_for(ar(), data.draw)
    total = ar().at(values).value
    assert total.is_Rational
    assert total == rs().at(values).value + ag().at(values).value


@pytest.mark.parametrize("ar, rs, ag", SUMS, ids=[s[0].__name__ for s in SUMS])
def test_all_reduce_is_twice_the_gather_symbolically(ar, rs, ag):
    assert sp.simplify(ar().expr - 2 * ag().expr) == 0
    assert rs().expr == ag().expr


# -- an axis of one device moves nothing ----------------------------------------------------------------

EXACT_RINGS = [coll.all_gather_time, coll.reduce_scatter_time, coll.all_reduce_time,
               coll.all_gather_time_no_wraparound, coll.all_reduce_time_no_wraparound,
               coll.all_gather_time_unidirectional, coll.all_reduce_time_unidirectional,
               coll.all_to_all_time, coll.all_to_all_time_unidirectional, coll.all_gather_latency_aware_no_wraparound,
               coll.gpu_all_gather_time, coll.gpu_reduce_scatter_time, coll.gpu_all_reduce_time,
               coll.gpu_all_to_all_time, coll.gpu_ragged_all_to_all_time, coll.gpu_ragged_all_to_all_time_exact,
               coll.gpu_all_reduce_time_measured]


@pytest.mark.parametrize("build", EXACT_RINGS, ids=[f.__name__ for f in EXACT_RINGS])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_axis_of_one_device_costs_nothing(build, data):
    values = values_for(build(), data.draw) | {N: 1}
    assert build().at(values).value == 0


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_single_node_and_single_unit_cost_nothing(data):
    values = values_for(coll.gpu_fat_tree_time(), data.draw) | {D_node: 1, D_leaf: 1, D_spine: 1}
    assert coll.gpu_fat_tree_time().at(values).value == 0
    values = values_for(coll.gpu_all_to_all_cross_node_time(), data.draw) | {M: 1}
    assert coll.gpu_all_to_all_cross_node_time().at(values).value == 0


# -- more bytes never cost less ------------------------------------------------------------------------

BYTE_TIMES = [n for n in COLLECTIVE_NAMES
              if quantities.get(n).unit == "s" and V in quantities.get(n).derivation.symbols]


def test_every_time_with_bytes_is_covered():
    assert len(BYTE_TIMES) >= 35


@pytest.mark.parametrize("name", BYTE_TIMES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), more=st.integers(min_value=1, max_value=10**6))
def test_cost_grows_with_bytes(name, data, more):
    d = quantities.get(name).derivation
    values = values_for(d, data.draw)
    small = d.at(values).value
    large = d.at(values | {V: values[V] + more}).value
    assert large >= small
    if not d.expr.has(sp.Max) and _sym("a_hop") not in d.expr.free_symbols:
        # bandwidth-bound costs are linear in the bytes (a fixed latency per send makes them affine)
        assert large * values[V] == small * (values[V] + more)


# -- latency-aware costs bound both of their terms ---------------------------------------------------------

LATENCY = [coll.all_gather_latency_aware, lambda: coll.all_gather_latency_aware_axes(2),
           lambda: coll.all_gather_latency_aware_axes(3)]


@pytest.mark.parametrize("build", LATENCY, ids=["ring", "xy", "xyz"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_latency_aware_is_at_least_both_terms(build, data):
    ev = build().at(values_for(build(), data.draw))
    latency, bandwidth, total = (s.value for s in ev.steps)
    assert total >= latency and total >= bandwidth
    assert total in (latency, bandwidth)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_latency_aware_without_wraparound_bounds_both_regimes(data):
    d = coll.all_gather_latency_aware_no_wraparound()
    values = values_for(d, data.draw)
    total = d.at(values).value
    bandwidth_only = coll.all_gather_time_no_wraparound().at({s: values[s] for s in (V, N, W_link)}).value
    assert total >= bandwidth_only
    assert total >= (values[N] - 1) * values[t_hop]


# -- exact forms tend to the book's approximations ---------------------------------------------------------

@pytest.mark.parametrize("exact, approx", [
    (coll.all_gather_time, coll.all_gather_time_approx),
    (coll.reduce_scatter_time, coll.reduce_scatter_time_approx),
    (coll.all_reduce_time, coll.all_reduce_time_approx),
    (coll.all_to_all_time, coll.all_to_all_time_approx),
    (coll.gpu_all_gather_time, coll.gpu_all_gather_time_approx),
], ids=["all-gather", "reduce-scatter", "all-reduce", "all-to-all", "gpu-all-gather"])
def test_exact_form_tends_to_the_book_form(exact, approx):
    expr = exact().expr.subs(W_link, W_ici / 2)
    assert sp.simplify(sp.limit(expr, N, sp.oo) - approx().expr) == 0


def test_unidirectional_and_open_line_tend_to_one_link():
    for d in (coll.all_gather_time_unidirectional(), coll.all_gather_time_no_wraparound()):
        assert sp.limit(d.expr, N, sp.oo) == V / W_link


def test_gpu_all_to_all_tends_to_bytes_over_n():
    # the book's "≈ B/(W·N)" for the in-node AllToAll, and "≈ B/(M·W_node)" across nodes
    assert sp.limit(coll.gpu_all_to_all_time().expr * N, N, sp.oo) == V / W_gpu
    assert sp.limit(coll.gpu_all_to_all_cross_node_time().expr * M, M, sp.oo) == V / W_node


@pytest.mark.parametrize("n", [2, 4, 6, 8, 16, 64, 256])
def test_exact_all_to_all_equals_the_book_for_even_rings(n):
    values = {V: 10**9, N: n, W_ici: 90 * 10**9}
    assert coll.all_to_all_time().at(values).value == R(10**9, 4 * 90 * 10**9)


@pytest.mark.parametrize("n", [1, 3, 5, 7, 15])
def test_exact_all_to_all_on_odd_rings(n):
    values = {V: 10**9, N: n, W_ici: 90 * 10**9}
    assert coll.all_to_all_time().at(values).value == R(10**9, 4 * 90 * 10**9) * R(n**2 - 1, n**2)


@settings(max_examples=40, deadline=None)
@given(v=byte_counts, x=counts, w=bandwidths)
def test_torus_all_to_all_on_one_axis_is_the_ring_cost(v, x, w):
    torus = coll.all_to_all_time_torus().at({V: v, X: x, Y: 1, Z: 1, W_ici: w}).value
    assert torus == coll.all_to_all_time_approx().at({V: v, W_ici: w}).value


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 512), k=st.integers(1, 64), v=byte_counts, w=bandwidths)
def test_ragged_all_to_all_expected_cost_never_exceeds_the_approximation(n, k, v, w):
    values = {N: n, k_top: k, V: v, W_gpu: w}
    exact = coll.gpu_ragged_all_to_all_time_exact().at(values).value
    approx = coll.gpu_ragged_all_to_all_time().at(values).value
    dense = coll.gpu_all_to_all_time().at(values).value
    assert 0 < exact <= approx <= dense
    if k >= n:
        assert approx == dense


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 512), v=byte_counts, w=bandwidths)
def test_bus_bandwidth_of_an_ideal_ring_is_the_link_bandwidth(n, v, w):
    # nccl-tests' convention: at the ideal ring time the bus bandwidth is the per-GPU bandwidth
    values = {N: n, V: v, W_gpu: w}
    for time, bus in ((coll.gpu_all_reduce_time, coll.gpu_all_reduce_bus_bandwidth),
                      (coll.gpu_all_gather_time, coll.gpu_all_gather_bus_bandwidth)):
        if n == 1:
            continue  # nothing moves, no time to divide by
        t = time().at(values).value
        assert bus().at(values | {t_meas: t}).value == w


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 512), v=byte_counts, w=bandwidths)
def test_sharp_speedup_is_the_ratio_of_the_times(n, v, w):
    values = {N: n, V: v, W_gpu: w}
    ring = coll.gpu_all_reduce_time().at(values).value
    sharp = coll.gpu_all_reduce_sharp_time().at(values).value
    assert coll.gpu_sharp_speedup().at(values).value == ring / sharp


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_fat_tree_time_is_bytes_over_effective_bandwidth(data):
    d = coll.gpu_fat_tree_time()
    values = values_for(d, data.draw)
    for s in (D_node, D_leaf, D_spine):
        values[s] = max(values[s], 2)
    assert d.at(values).value == values[V] / coll.gpu_fat_tree_bandwidth().at(values).value


def test_ragged_exact_form_has_a_dimensionless_symbolic_exponent():
    # ((N-1)/N)^k: a symbolic exponent is fine when base and exponent are both dimensionless
    assert units.dims_of_expr(coll.gpu_ragged_all_to_all_time_exact().expr) == {"s": 1}
    assert "gpu.all_to_all.ragged_time_exact" in quantities.QUANTITIES
    with pytest.raises(units.DimensionError, match="symbolic exponent"):
        units.dims_of_expr(sym("V") ** sym("N"))


def test_latency_aware_axes_refuses_other_counts():
    with pytest.raises(ValueError, match="2 or 3"):
        coll.all_gather_latency_aware_axes(1)


# -- hand-computed values --------------------------------------------------------------------------------

HAND = [
    # 9 MB gathered over 4 chips at 9e10 B/s: 3/4 of 9e6 bytes in 75 us
    ("ag-exact-4", "collective.all_gather.time", {"V": 9 * 10**6, "N": 4, "W_ici": 9 * 10**10}, R(75, 10**6)),
    ("ag-approx", "collective.all_gather.time_approx", {"V": 9 * 10**6, "N": 4, "W_ici": 9 * 10**10}, R(1, 10**4)),
    # three axes at once: 9e6 / (3 * 9e10) = 33.3 us
    ("ag-3-axes", "collective.all_gather.time_multi_axis", {"V": 9 * 10**6, "N_axes": 3, "W_ici": 9 * 10**10},
     R(1, 30000)),
    # a line of 4 chips: the end chip takes 3 shards of 2.25 MB at 4.5e10: 150 us
    ("ag-open-line-4", "collective.all_gather.time_no_wraparound", {"V": 9 * 10**6, "N": 4, "W_link": 45 * 10**9},
     R(150, 10**6)),
    ("ar-open-line-4", "collective.all_reduce.time_no_wraparound", {"V": 9 * 10**6, "N": 4, "W_link": 45 * 10**9},
     R(300, 10**6)),
    ("rs-uni-ring-3", "collective.reduce_scatter.time_unidirectional", {"V": 9 * 10**6, "N": 3, "W_link": 3 * 10**9},
     R(2, 10**3)),
    # 16 chips, 1 us hops, 1 MB: 8 us of latency, 1e6/9e10 = 11.1 us of transfer, which wins
    ("ag-latency-16", "collective.all_gather.latency_aware",
     {"V": 10**6, "N": 16, "W_ici": 9 * 10**10, "t_hop": R(1, 10**6)}, R(1, 90000)),
    # 16 chips, 1 us hops, 100 kB: the 8 us of latency dominate 1.1 us of transfer
    ("ag-latency-16-small", "collective.all_gather.latency_aware",
     {"V": 10**5, "N": 16, "W_ici": 9 * 10**10, "t_hop": R(1, 10**6)}, R(8, 10**6)),
    # 16 x 16 x 16: the longest path is 24 hops, 24 us; 9e6/(3*9e10) = 33.3 us
    ("ag-latency-xyz", "collective.all_gather.latency_aware_xyz",
     {"V": 9 * 10**6, "X": 16, "Y": 16, "Z": 16, "W_ici": 9 * 10**10, "t_hop": R(1, 10**6)}, R(1, 30000)),
    # AllToAll on a ring of 3: each link direction carries one 1 MB chunk at 4.5e10: 22.2 us
    ("a2a-exact-3", "collective.all_to_all.time", {"V": 9 * 10**6, "N": 3, "W_ici": 9 * 10**10}, R(1, 45000)),
    ("a2a-approx", "collective.all_to_all.time_approx", {"V": 9 * 10**6, "W_ici": 9 * 10**10}, R(1, 40000)),
    # 4 x 4 x 8 torus, 128 chips: 1.28e9 * 8 / (4 * 128 * 9e10) = 222 us
    ("a2a-torus-4x4x8", "collective.all_to_all.time_torus",
     {"V": 128 * 10**7, "X": 4, "Y": 4, "Z": 8, "W_ici": 9 * 10**10}, R(2, 9000)),
    # unidirectional ring of 4: (1 + 2 + 3) chunks of V/16 per link
    ("a2a-uni-4", "collective.all_to_all.time_unidirectional", {"V": 16 * 10**6, "N": 4, "W_link": 10**9},
     R(6, 1000)),
    ("threshold-v5p", "collective.latency_threshold", {"W_link": 9 * 10**10, "t_hop": R(1, 10**6)}, 90000),
    # 8 GPUs, 64 MB at 450 GB/s: 7/8 * 64e6 / 450e9
    ("gpu-ag-8", "gpu.all_gather.time", {"V": 64 * 10**6, "N": 8, "W_gpu": 450 * 10**9}, R(56, 450000)),
    ("gpu-ar-8", "gpu.all_reduce.time", {"V": 64 * 10**6, "N": 8, "W_gpu": 450 * 10**9}, R(112, 450000)),
    ("gpu-sharp-8", "gpu.all_reduce.sharp_time", {"V": 64 * 10**6, "N": 8, "W_gpu": 450 * 10**9}, R(64, 450000)),
    ("gpu-a2a-8", "gpu.all_to_all.time", {"V": 64 * 10**6, "N": 8, "W_gpu": 450 * 10**9}, R(7, 450000)),
    # top-2 of 8: a quarter of the dense AllToAll
    ("gpu-ragged-k2", "gpu.all_to_all.ragged_time", {"V": 64 * 10**6, "N": 8, "k_top": 2, "W_gpu": 450 * 10**9},
     R(7, 4 * 450000)),
    ("gpu-a2a-4-nodes", "gpu.all_to_all.cross_node_time", {"V": 16 * 10**6, "M_nodes": 4, "W_node": 400 * 10**9},
     R(3, 400000)),
    # at 80% of 450 GB/s the 8-GPU AllReduce of 64 MB takes 1/0.8 as long
    ("gpu-ar-eta", "gpu.all_reduce.time_measured",
     {"V": 64 * 10**6, "N": 8, "W_gpu": 450 * 10**9, "eta": R(4, 5)}, R(112, 360000)),
    # 1 GB in 5 ms on 8 GPUs: algBW 200 GB/s, busBW 350 GB/s
    ("gpu-busbw", "gpu.all_reduce.bus_bandwidth", {"V": 10**9, "N": 8, "t_meas": R(5, 1000)}, 350 * 10**9),
    ("gpu-busbw-ag", "gpu.all_gather.bus_bandwidth", {"V": 10**9, "N": 8, "t_meas": R(5, 1000)}, 175 * 10**9),
    # Y = 32 over 8-GPU nodes: scale-out 1e9 * 8 / (400e9 * 32) = 625 us; NVLink 1e9/(450e9 * 8) = 278 us
    ("gpu-inner-y32", "gpu.all_reduce.sharded_inner_time",
     {"V": 10**9, "Y": 32, "D_node": 8, "W_gpu": 450 * 10**9, "W_node": 400 * 10**9}, R(625, 10**6)),
]


@pytest.mark.parametrize("name, given, expected", [h[1:] for h in HAND], ids=[h[0] for h in HAND])
def test_hand_computed_values(name, given, expected):
    assert evaluate(quantities.get(name), Context(), given).value == sp.nsimplify(expected)


# top-k ragged AllToAll: the approximate and the expected destination shares (hand-computed)
@pytest.mark.parametrize("z, k, approx, expected", [
    (8, 4, 0.4375, 0.3621),
    (8, 8, 0.875, 0.5743),
    (16, 8, 0.4688, 0.3781),
    (64, 8, 0.1230, 0.1165),
    (256, 8, 0.0311, 0.0307),
], ids=["z8-k4", "z8-k8", "z16-k8", "z64-k8", "z256-k8"])
def test_ragged_factors(z, k, approx, expected):
    values = {N: z, k_top: k, V: z, W_gpu: 1}  # with V = N and W = 1 the time is share * (N - 1)/N
    a = coll.gpu_ragged_all_to_all_time().at(values).value
    e = coll.gpu_ragged_all_to_all_time_exact().at(values).value
    assert float(a) == pytest.approx(approx, abs=1e-4)
    assert float(e) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("n, ratio", [(2, 1), (4, R(3, 2)), (8, R(7, 4))], ids=["n2", "n4", "n8"])
def test_open_line_against_the_ring(n, ratio):
    # a line without wraparound costs 2(N - 1)/N times the book's ring cost (W_ici = 2 W_link)
    values = {V: 10**6, N: n, W_link: 45 * 10**9, W_ici: 90 * 10**9}
    line = coll.all_gather_time_no_wraparound().at(values).value
    ring = coll.all_gather_time_approx().at(values).value
    assert line / ring == ratio


def test_quantities_have_their_topics():
    for name in COLLECTIVE_NAMES:
        assert quantities.get(name).topic == ("collectives" if name.startswith("collective.") else "gpu")


@pytest.mark.parametrize("chip, name, expected", [
    ("tpu-v5e", "W_ici", 90 * 10**9),
    ("tpu-v5p", "W_ici", 180 * 10**9),
    ("h100", "W_gpu", 450 * 10**9),
    ("h100", "W_node", 400 * 10**9),
    ("b200", "W_node", 400 * 10**9),
    ("gb200", "W_node", 3600 * 10**9),
    ("gb200", "D_node", 72),
], ids=["v5e-ici", "v5p-ici", "h100-nvlink", "h100-node", "b200-node", "gb200-node", "gb200-domain"])
def test_binders_read_the_catalog(chip, name, expected):
    q = quantities.get("gpu.all_reduce.sharded_inner_time" if name != "W_ici" else "collective.all_gather.time")
    values = quantities.bind(q, Context(chip=chip), {"Y": 8} if name != "W_ici" else {})
    assert values[sym(name)] == expected


@pytest.mark.parametrize("quantity,n,expected", [
    # a unidirectional ring AllGather runs at W_link, a bidirectional one at W_ici = 2 W_link: twice as fast
    ("collective.all_gather.bidirectional_speedup", 8, 2),
    ("collective.all_gather.bidirectional_speedup", 3, 2),
    # AllToAll: distances halve as well as the bandwidth: 2N(N-1)/floor(N^2/2), 7/2 at N = 8, towards the book's 4
    ("collective.all_to_all.bidirectional_speedup", 8, sp.Rational(7, 2)),
    ("collective.all_to_all.bidirectional_speedup", 1024, sp.Rational(2 * 1024 * 1023, 1024**2 // 2)),
], ids=["ag-8", "ag-3", "a2a-8", "a2a-1024"])
def test_bidirectional_speedups(quantity, n, expected):
    from scalemath import quantities

    assert quantities.evaluate(quantities.get(quantity), quantities.Context(), {"N": n}).value == expected


def test_all_to_all_speedup_tends_to_the_books_four():
    from scalemath import quantities

    expr = quantities.get("collective.all_to_all.bidirectional_speedup").derivation.expr
    assert sp.limit(expr.subs(sym("N"), 2 * sym("X")), sym("X"), sp.oo) == 4


@pytest.mark.parametrize("given,loaded,stored", [
    # X[8, 8192] and Y[8192, 8192] loaded in int8 weights with bf16 activations, Z[8, 8192] stored in bf16
    ({"B": 8, "D": 8192, "F": 8192, "b_x": 2, "b_w": 1, "b_o": 2}, 2 * 8 * 8192 + 8192 * 8192, 2 * 8 * 8192),
], ids=["decode-int8"])
def test_matmul_bytes_loaded_and_stored_apart(given, loaded, stored):
    from scalemath import quantities

    ctx = quantities.Context()
    assert quantities.evaluate(quantities.get("matmul.bytes_loaded"), ctx, {k: v for k, v in given.items()
                                                                            if k != "b_o"}).value == loaded
    assert quantities.evaluate(quantities.get("matmul.bytes_stored"), ctx,
                               {k: given[k] for k in ("B", "F", "b_o")}).value == stored


def test_tiled_matmul_intensity_by_hand():
    # 4096^3 in bf16 with 128 x 128 tiles: 1024 tiles each stream 2 x 128 x 4096 elements, plus one store of Z:
    # 2 * 4096^3 / (1024 * 2 * 2 * 128 * 4096 + 2 * 4096^2) = 4096/65 (the tile's own b_m b_n/(b_m + b_n) = 64 less the store)
    from scalemath import quantities

    values = {"B": 4096, "D": 4096, "F": 4096, "b_m": 128, "b_n": 128, "b_x": 2, "b_w": 2, "b_o": 2}
    ev = quantities.evaluate(quantities.get("matmul.tiled.intensity"), quantities.Context(), values)
    assert ev.value == sp.Rational(4096, 65)
