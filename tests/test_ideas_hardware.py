"""GPU and TPU ideas the book index (docs/reference/book_ideas.toml) had as partial or absent, as quantities:
the spine's SHARP AllReduce (gpus.md Quiz 4 Q4), a divergent warp, the SMs of a small elementwise op (Quiz 1 Q7),
a VMEM prefetch of a layer's weights, and the average distance of a ring, a torus and a twisted torus.

Second routes: plain fractions from the catalog's integers, loops over lanes and chips, and breadth-first search
over the torus graphs; the book's figures from /work/shared/reference/worked/part4-gpus.yaml where it prints one.
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath.catalog.hardware import default_catalog, get_chip
from scalemath.catalog.models import get_model
from scalemath.quantities import Context, evaluate, get


def value(quantity, chip=None, model=None, **given):
    return evaluate(get(quantity), Context(chip=chip, model=model), given).value


def frac(x) -> sp.Rational:
    return sp.Rational(x.numerator, x.denominator)


# -- the spine's SHARP AllReduce (Quiz 4 Q4) -----------------------------------------------------------------------

def _su_uplink(chip) -> int:
    c = default_catalog()
    sw = c.chip_switch(get_chip(chip), "scaleout")
    gpus = get_chip(chip).su_nodes * get_chip(chip).nvlink_domain
    leaves = -(-2 * gpus // sw.ports)  # half of each leaf's ports face the nodes
    return leaves * (sw.ports // 2) * sw.port_bytes_per_s


SPINE = [("h100", 4, 2 * 8192 * 32768), ("h100", 8, 10**9), ("b200", 4, 2 * 8192 * 32768)]


@pytest.mark.parametrize("chip, units, v", SPINE, ids=[f"{c}-{u}su-{v}" for c, u, v in SPINE])
def test_sharp_spine_against_ring(chip, units, v):
    w = _su_uplink(chip)
    assert value("gpu.sharp.spine_time", chip, V=v) == frac(Fraction(v, w))
    ring = Fraction(2 * v * (units - 1), units * w)
    assert value("gpu.sharp.spine_ring_time", chip, V=v, D_spine=units) == frac(ring)
    assert value("gpu.sharp.spine_speedup", chip, D_spine=units) == frac(ring / Fraction(v, w))


def test_sharp_spine_quiz4_q4():
    # worked record gpus-quiz4-q4 (corrected, ERRATUM 9): each SU's uplink is 8 x 16 x 2 x 50e9 = 12.8e12 B/s, so
    # T = 2DF / 12.8e12; the book's printed 2DF / 6.4e12 takes 1.6 TB/s IB switches. Without SHARP, 2DF / 8.53e12.
    d, f = 8192, 32768
    assert _su_uplink("h100") == 12_800_000_000_000
    assert value("gpu.sharp.spine_time", "h100", V=2 * d * f) == sp.Rational(2 * d * f, 12_800_000_000_000)
    ring = value("gpu.sharp.spine_ring_time", "h100", V=2 * d * f, D_spine=4)
    assert ring == sp.Rational(2 * 2 * d * f * 3, 4 * 12_800_000_000_000)
    assert abs(float(sp.Rational(2 * d * f) / ring) - 8.53e12) / 8.53e12 < 1e-3
    assert value("gpu.sharp.spine_speedup", "h100", D_spine=4) == sp.Rational(3, 2)


# -- a divergent warp --------------------------------------------------------------------------------------------

def _lane_loop(k, c_if, c_else):
    """Run the branch lane by lane: each of the two passes issues to all 32 lanes, masked lanes idle."""
    issued = useful = 0
    for path_cycles, takes in ((c_if, lambda lane: lane < k), (c_else, lambda lane: lane >= k)):
        for _ in range(path_cycles):
            for lane in range(32):
                issued += 1
                useful += takes(lane)
    return issued // 32, Fraction(useful, issued)


DIVERGE = [(16, 10, 10), (1, 5, 40), (31, 12, 3), (8, 10, 30)]


@pytest.mark.parametrize("k, c_if, c_else", DIVERGE, ids=[f"k{k}-{a}-{b}" for k, a, b in DIVERGE])
def test_divergent_warp_by_lanes(k, c_if, c_else):
    cycles, efficiency = _lane_loop(k, c_if, c_else)
    given_ = {"k_if": k, "c_if": c_if, "c_else": c_else}
    assert value("gpu.warp.divergent_cycles", c_if=c_if, c_else=c_else) == cycles
    assert value("gpu.warp.divergence_efficiency", **given_) == frac(efficiency)
    assert value("gpu.warp.divergence_slowdown", c_if=c_if, c_else=c_else) == frac(Fraction(cycles, max(c_if, c_else)))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 31), st.integers(1, 50), st.integers(1, 50))
def test_divergence_costs_between_one_and_two(k, c_if, c_else):
    slow = value("gpu.warp.divergence_slowdown", c_if=c_if, c_else=c_else)
    assert 1 < slow <= 2
    # each lane works for one path's cycles, between the shorter and the longer, of the c_if + c_else issued
    efficiency = value("gpu.warp.divergence_efficiency", k_if=k, c_if=c_if, c_else=c_else)
    assert sp.Rational(min(c_if, c_else), c_if + c_else) <= efficiency <= 1 / slow


# -- a small elementwise op (Quiz 1 Q7) ----------------------------------------------------------------------------

GPUS = [c.key for c in default_catalog().every_chip() if c.family == "gpu" and c.sms]
SIZES = [1, 32, 33, 1024, 65536, 1024**3]


@pytest.mark.parametrize("chip", GPUS)
@pytest.mark.parametrize("n", SIZES)
def test_elementwise_sms_by_counting(chip, n):
    c = get_chip(chip)
    per_sm = c.subpartitions_per_sm * c.cuda_cores_per_subpartition
    busy, left = 0, n
    while left > 0 and busy < c.sms:  # hand one SM's lanes at a time their elements
        busy, left = busy + 1, left - per_sm
    assert value("gpu.elementwise.warps", chip, n_elem=n) == -(-n // 32)
    assert value("gpu.elementwise.sms_used", chip, n_elem=n) == busy
    assert value("gpu.elementwise.compute_slowdown", chip, n_elem=n) == frac(Fraction(c.sms, busy))


def test_elementwise_quiz1_q7():
    # worked record gpus-quiz1-q7: N = 1024 uses "at most 1024 CUDA cores or 8 SMs, roughly 16x longer"
    assert value("gpu.elementwise.sms_used", "h100", n_elem=1024) == 8
    assert value("gpu.elementwise.compute_slowdown", "h100", n_elem=1024) == sp.Rational(132, 8)


# -- prefetching a layer's weights into VMEM -----------------------------------------------------------------------

PREFETCH = [("tpu-v5e", "llama3-70b", 4096), ("tpu-v5e", "llama3-8b", 16), ("tpu-v5p", "llama3-8b", 4096),
            ("tpu-v6e", "gemma2-27b", 256)]


@pytest.mark.parametrize("chip, model, b", PREFETCH, ids=[f"{c}-{m}-B{b}" for c, m, b in PREFETCH])
def test_vmem_prefetch_by_fractions(chip, model, b):
    c, m = get_chip(chip), get_model(model)
    ctx = Context(chip=chip, model=model, dtype="bf16")
    per_layer = Fraction(m.param_count() - m.outside_layers_params(), m.L)
    weights = 2 * per_layer  # bf16
    math = Fraction(2 * b * per_layer) / Fraction(c.flops("bf16"))
    hidden = min(weights, Fraction(c.vmem_bytes), Fraction(c.hbm_bytes_per_s) * math)
    got = evaluate(get("tpu.vmem.prefetch_hidden_fraction"), ctx, {"B": b}).value
    assert got == frac(hidden / weights)
    assert evaluate(get("tpu.vmem.prefetch_exposed_time"), ctx, {"B": b}).value == \
        frac((weights - hidden) / c.hbm_bytes_per_s)
    assert evaluate(get("tpu.vmem.layers_held"), ctx).value == frac(Fraction(c.vmem_bytes) / weights)


def test_vmem_holds_a_sliver_of_a_70b_layer():
    # LLaMA 3-70B's layer is about 1.7 GB in bf16; a v5e's 128 MiB of VMEM holds under 8 % of it
    held = value("tpu.vmem.layers_held", "tpu-v5e", "llama3-70b")
    assert sp.Rational(7, 100) < held < sp.Rational(8, 100)


# -- average distances on rings, tori and the twisted torus --------------------------------------------------------

def _bfs_average(nodes, neighbours):
    start = nodes[0]  # every graph here is vertex-transitive: one source gives the average
    seen, queue = {start: 0}, deque([start])
    while queue:
        u = queue.popleft()
        for v in neighbours(u):
            if v not in seen:
                seen[v] = seen[u] + 1
                queue.append(v)
    return Fraction(sum(seen.values()), len(nodes))


def _torus(a, twisted):
    nodes = [(x, y) for x in range(2 * a) for y in range(a)]

    def neighbours(u):
        x, y = u
        up = (x, y + 1) if y < a - 1 else ((x + a * twisted) % (2 * a), 0)
        down = (x, y - 1) if y > 0 else ((x - a * twisted) % (2 * a), a - 1)
        return [((x + 1) % (2 * a), y), ((x - 1) % (2 * a), y), up, down]
    return _bfs_average(nodes, neighbours)


@pytest.mark.parametrize("a", range(1, 13))
def test_twisted_torus_by_search(a):
    plain, twisted = _torus(a, False), _torus(a, True)
    assert value("torus.avg_hops_2a_by_a", a_tw=a) == frac(plain)
    assert value("torus.twisted.avg_hops", a_tw=a) == frac(twisted)
    assert value("torus.twisted.distance_ratio", a_tw=a) == frac(twisted / plain)
    assert (twisted < plain) == (a > 1)


@pytest.mark.parametrize("n", range(1, 21))
def test_ring_and_line_averages(n):
    ring = Fraction(sum(min(d, n - d) for d in range(n)), n)
    line = Fraction(sum(abs(i - j) for i in range(n) for j in range(n)), n * n)
    assert value("torus.avg_hops_wraparound", N=n) == frac(ring)
    assert value("torus.avg_hops_no_wraparound", N=n) == frac(line)


def test_wraparound_halves_a_long_axis():
    # tpus.md: wraparound cuts the farthest distance from N - 1 to N/2; on average it is (N/4)/(N/3) = 3/4 of
    # the line's for N = 16: 4 hops against 85/16
    assert value("torus.avg_hops_wraparound", N=16) == 4
    assert value("torus.avg_hops_no_wraparound", N=16) == sp.Rational(255, 48)


# -- the TPU scalar core's DMA requests ----------------------------------------------------------------------------

TPUS_WITH_CLOCK = [c.key for c in default_catalog().every_chip() if c.family == "tpu" and c.clock_hz]


@pytest.mark.parametrize("chip", TPUS_WITH_CLOCK)
def test_dma_requests_by_fractions(chip):
    c = get_chip(chip)
    per_s = c.cores_per_chip * c.clock_hz
    assert value("tpu.scalar.dma_requests_per_s", chip) == per_s
    assert value("tpu.scalar.min_dma_bytes", chip) == frac(Fraction(c.hbm_bytes_per_s, per_s))


def test_dma_v5e():
    # one core at 1.5 GHz against 8.2e11 B/s of HBM: a DMA must move about 547 bytes to keep HBM busy
    assert value("tpu.scalar.min_dma_bytes", "tpu-v5e") == sp.Rational(820_000_000_000, 1_500_000_000)


# -- an AllGather spread over an idle axis (sharding.md Q2) ---------------------------------------------------------

def _w_ici(chip):
    return evaluate(get("collective.all_gather.time_approx"), Context(chip=chip), {"V": 1}).value ** -1


IDLE = [(1, 1), (1, 2), (2, 1), (1, 3)]


@pytest.mark.parametrize("axes, idle", IDLE, ids=[f"{a}+{i}" for a, i in IDLE])
def test_idle_axis_by_fractions(axes, idle):
    v = 2 * 1024 * 4096 // 4
    w = _w_ici("tpu-v4p")
    t = value("collective.all_gather.idle_axis_time", "tpu-v4p", V=v, N_axes=axes, n_idle=idle)
    assert t == sp.Rational(v) / (w * (axes + idle))
    assert value("collective.all_gather.idle_axis_speedup", N_axes=axes, n_idle=idle) == sp.Rational(axes + idle, axes)
    # after the free reshard it is the registered multi-axis AllGather over every axis
    assert t == value("collective.all_gather.time_multi_axis", "tpu-v4p", V=v, N_axes=axes + idle)


def test_idle_axis_q2():
    # worked record sharding-q2a: AllGather_X([B_X, D_Y]) on a v4p 4x4x4 is 2BD/(Y W_ici) = 23.3 us (W_ici = 9e10);
    # resharding onto the idle Z first halves it
    v = 2 * 1024 * 4096 // 4
    assert _w_ici("tpu-v4p") == 9 * 10**10
    t = value("collective.all_gather.idle_axis_time", "tpu-v4p", V=v, N_axes=1, n_idle=1)
    assert t == sp.Rational(v, 2 * 9 * 10**10)
    assert abs(float(t) - 11.65e-6) < 0.01e-6


# -- the share of ICI bandwidth an AllGather reaches against its size ----------------------------------------------

@pytest.mark.parametrize("v, n", [(10**7, 16), (625_000, 16), (10**9, 4), (45_000, 8)])
def test_achieved_fraction_by_fractions(v, n):
    hop = Fraction(str(get_chip("tpu-v5e").hop_latency_s))
    bw = Fraction(v) / Fraction(int(_w_ici("tpu-v5e")))
    expected = bw / (hop * n / 2 + bw)
    assert value("collective.all_gather.achieved_fraction", "tpu-v5e", V=v, N=n) == frac(expected)


@settings(max_examples=40, deadline=None)
@given(st.fractions(min_value=Fraction(1, 100), max_value=Fraction(99, 100)), st.sampled_from([4, 8, 16]))
def test_size_for_fraction_round_trips(f, n):
    size = value("collective.all_gather.size_for_fraction", "tpu-v5e", f_bw=sp.Rational(f.numerator, f.denominator),
                 N=n)
    assert value("collective.all_gather.achieved_fraction", "tpu-v5e", V=size, N=n) == frac(f)


def test_ninety_five_percent_near_ten_megabytes():
    # sharding.md, Case 2: the measured v5e AllGather over a 16-chip axis reaches about 95 % of the link bandwidth
    # near 10 MB; with 1 us hops the additive model puts 95 % at 19 x 8 us x 9e10 B/s = 13.68 MB and 93 % at 10 MB
    assert value("collective.all_gather.size_for_fraction", "tpu-v5e", f_bw=sp.Rational(95, 100), N=16) == 13_680_000
    assert value("collective.all_gather.achieved_fraction", "tpu-v5e", V=10**7, N=16) == sp.Rational(125, 134)


# -- host offload ------------------------------------------------------------------------------------------------

CHIPS_WITH_PCIE = [c.key for c in default_catalog().every_chip() if c.pcie_bytes_per_s]
OFFLOAD = [(160 * 10**9, 1), (10**9, Fraction(1, 10)), (32 * 10**9, 2)]


@pytest.mark.parametrize("chip", CHIPS_WITH_PCIE)
@pytest.mark.parametrize("m, t", OFFLOAD, ids=[f"{m}B-{t}s" for m, t in OFFLOAD])
def test_offload_by_fractions(chip, m, t):
    w = get_chip(chip).pcie_bytes_per_s
    t_cmp = sp.Rational(t.numerator, t.denominator) if isinstance(t, Fraction) else t
    transfer = Fraction(m, w)
    assert value("parallel.offload.transfer_time", chip, M_off=m) == frac(transfer)
    assert value("parallel.offload.hidden_bytes", chip, t_cmp=t_cmp) == frac(w * Fraction(t))
    assert value("parallel.offload.hidden_fraction", chip, M_off=m, t_cmp=t_cmp) == frac(min(Fraction(1),
                                                                                               Fraction(t) / transfer))
    assert value("parallel.offload.exposed_time", chip, M_off=m, t_cmp=t_cmp) == frac(max(Fraction(0),
                                                                                            transfer - Fraction(t)))


def test_offload_over_nvlink_c2c():
    # the catalog gives a GB200 no host-link figure; typed as NVLink-C2C's 450 GB/s each way (NVIDIA's 900 GB/s
    # both ways), the same offload is 450/64 = 7.03x faster than over an H100's PCIe Gen5 x16
    from scalemath.errors import ScalemathError

    with pytest.raises(ScalemathError, match="pcie_bytes_per_s"):
        value("parallel.offload.transfer_time", "gb200", M_off=10**9)
    c2c = value("parallel.offload.transfer_time", "gb200", M_off=10**9, W_host=450 * 10**9)
    assert value("parallel.offload.transfer_time", "h100", M_off=10**9) / c2c == sp.Rational(450, 64)


# -- traffic in proportion to each channel's speed (ICI and DCN) ---------------------------------------------------

def _ici_dcn(chip):
    w_ici = _w_ici(chip)
    return w_ici, w_ici / value("tpu.ratio.ici_to_dcn", chip)


@pytest.mark.parametrize("chip", ["tpu-v5e", "tpu-v5p", "tpu-v4p", "tpu-v6e"])
def test_balance_by_fractions(chip):
    w_ici, w_dcn = _ici_dcn(chip)
    v = 10**9
    assert value("tpu.balance.dcn_share", chip) == w_dcn / (w_ici + w_dcn)
    assert value("tpu.balance.balanced_time", chip, V=v) == v / (w_ici + w_dcn)
    for f in (sp.Rational(1, 100), sp.Rational(1, 2), sp.Rational(9, 10)):
        assert value("tpu.balance.split_time", chip, V=v, f_dcn=f) == max(f * v / w_dcn, (1 - f) * v / w_ici)


@settings(max_examples=40, deadline=None)
@given(st.fractions(min_value=Fraction(1, 1000), max_value=Fraction(999, 1000)))
def test_the_proportional_split_is_fastest(f):
    v = 10**9
    best = value("tpu.balance.balanced_time", "tpu-v5e", V=v)
    share = value("tpu.balance.dcn_share", "tpu-v5e")
    assert value("tpu.balance.split_time", "tpu-v5e", V=v, f_dcn=frac(f)) >= best
    assert value("tpu.balance.split_time", "tpu-v5e", V=v, f_dcn=share) == best
