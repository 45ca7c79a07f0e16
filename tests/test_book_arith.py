"""Issue 29's missing transformer, GPU and TPU arithmetic: whole-model FFW and attention totals, the FSDP x TP
split rounded to a real mesh, the tree AllReduce, the general multi-level sharded reduction over a fat tree, and
a TPU core's MXU padding, systolic fill bubble and VPU reductions. Each row is held against plain arithmetic
written here and, where the book gives one, its worked answer (figures copied with their provenance)."""

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from scalemath import quantities
from scalemath.quantities import Context
from scalemath.symbolic.symbols import sym


def value(name, chip=None, **given):
    return quantities.evaluate(quantities.get(name), Context(chip=chip), given).value


def at(name, **values):
    return quantities.get(name).derivation.at({sym(k): v for k, v in values.items()}).value


# -- whole-model totals ------------------------------------------------------------------------------------------

LLAMA2_13B = dict(L=40, D=5120, F=13824, N=40, K=40, H=128, n_mlp=3)


@pytest.mark.parametrize("name, hand, book", [
    # training.md, 'Some Problems to Work', Q1: LLaMA-2 13B, FFW 8.5e9 and attention 4.2e9 (book, 2 s.f.)
    ("transformer.ffw_params_total", 3 * 40 * 5120 * 13824, 8.5e9),
    ("transformer.attention_params_total", 40 * (2 * 5120 * 40 * 128 + 2 * 5120 * 40 * 128), 4.2e9),
], ids=["ffw-llama2-13b", "attention-llama2-13b"])
def test_whole_model_totals(name, hand, book):
    got = at(name, **LLAMA2_13B)
    assert got == hand
    assert float(got) == pytest.approx(book, rel=0.02)


def test_totals_follow_the_model_gqa():
    v = dict(L=80, D=8192, F=28672, N=64, K=8, H=128, n_mlp=3)  # LLaMA-3 70B's shape
    assert at("transformer.attention_params_total", **v) == 80 * (2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128)
    assert at("transformer.ffw_params_total", **v) == 80 * 3 * 8192 * 28672


# -- the FSDP x TP split on a real mesh ----------------------------------------------------------------------------

def _hand_mesh(B, F, MX, MY, n):
    x_opt = math.sqrt(B / F * MX / MY * n)
    lo = 2 ** math.floor(math.log2(x_opt))
    x = int(min(max(lo if x_opt / lo <= 2 * lo / x_opt else 2 * lo, 1), n))  # a power of two at least 1: whole
    return x_opt, x, n // x, x * (n // x), max(x / x_opt, x_opt / x)


@pytest.mark.parametrize("B, F, MX, MY, n, book_x, book_y, book_chips", [
    # training.md, worked: a 4x4x4 slice, B = 48,000, F = 32,768: X_opt 13.9 (13.69 exact), chosen X = 16, Y = 4
    (48000, 32768, 2, 1, 64, 16, 4, 64),
    # training.md, 'Some Problems to Work', LLaMA-3 70B: X_opt = 1618 -> 2048-way FSDP x 4-way TP on 8192 of 8960
    (4194304, 28672, 2, 1, 8960, 2048, 4, 8192),
], ids=["slice-4x4x4", "llama3-70b-8960"])
def test_mesh_rounding_book(B, F, MX, MY, n, book_x, book_y, book_chips):
    args = dict(B=B, F=F, M_X=MX, M_Y=MY, n_dev=n)
    assert at("parallel.fsdp_tp.x_mesh", **args) == book_x
    assert at("parallel.fsdp_tp.y_mesh", **args) == book_y
    assert at("parallel.fsdp_tp.mesh_chips", **args) == book_chips
    x_opt, x, y, chips, penalty = _hand_mesh(B, F, MX, MY, n)
    assert (x, y, chips) == (book_x, book_y, book_chips)
    assert float(at("parallel.fsdp_tp.mesh_penalty", **args)) == pytest.approx(penalty, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1024, 2**24), F=st.sampled_from([8192, 13824, 28672, 53248]),
       n=st.sampled_from([16, 64, 256, 1024, 4096, 8960]))
def test_mesh_rounding_law(B, F, n):
    """The nearest power of two costs at most sqrt 2 of the least communication, when X_opt fits the mesh."""
    args = dict(B=B, F=F, M_X=2, M_Y=1, n_dev=n)
    x_opt, x, y, chips, penalty = _hand_mesh(B, F, 2, 1, n)
    assert at("parallel.fsdp_tp.x_mesh", **args) == x
    assert at("parallel.fsdp_tp.y_mesh", **args) == y
    got = float(at("parallel.fsdp_tp.mesh_penalty", **args))
    assert got == pytest.approx(penalty, rel=1e-9)
    if 1 <= x_opt <= n / 2:
        assert 1 <= got <= math.sqrt(2) + 1e-12


# -- GPU collectives: the tree AllReduce and the multi-level sharded reduction --------------------------------

@pytest.mark.parametrize("n", [2, 4, 8, 72, 256], ids=lambda n: f"N{n}")
def test_tree_against_ring(n):
    V, W, a = 10**9, 450 * 10**9, Fraction(1, 10**5)
    bw = Fraction(2 * V * (n - 1), n * W)
    tree = at("gpu.all_reduce.tree_time", N=n, V=V, W_gpu=W, a_hop=a)
    ring = at("gpu.all_reduce.ring_latency_time", N=n, V=V, W_gpu=W, a_hop=a)
    assert tree == 2 * math.ceil(math.log2(n)) * a + bw
    assert ring == 2 * (n - 1) * a + bw
    assert tree <= ring  # log2 N <= N - 1: the same bytes, fewer latencies


SUPERPOD = dict(D_node=8, D_leaf=32, D_spine=4, W_gpu=450 * 10**9, W_node=400 * 10**9, W_su=128 * 10**11)


def test_sharded_reduction_superpod():
    # gpus.md, 'Cross-node collectives': the 1024-GPU SuperPod's AllGather/ReduceScatter runs at 413 GB/s
    # (400e9 * 32/31, the leaf level); with Y = 1 the general form is the plain fat tree's
    t = at("gpu.fat_tree.sharded_time", V=1, Y=1, **SUPERPOD)
    assert t == Fraction(31, 32 * 400 * 10**9)
    assert float(1 / t) / 1e9 == pytest.approx(413, abs=0.5)
    assert t == at("gpu.fat_tree.time", V=1, **SUPERPOD)


@pytest.mark.parametrize("y", [1, 2, 8, 16, 32, 64], ids=lambda y: f"Y{y}")
def test_sharded_reduction_pop_quiz_3(y):
    # gpus.md, Pop Quiz 3 over one SU (spine left out: D_spine = 1 never binds): Y <= 8: 2DF·31/(32·400e9);
    # Y > 8: 2DF·256/(Y·12.8e12) with the ring's 31/32 kept (the book drops it there)
    V = 2 * 8192 * 32768
    su = dict(SUPERPOD, D_spine=2, W_su=10**30)
    got = at("gpu.fat_tree.sharded_time", V=V, Y=y, **su)
    leaf = Fraction(V * 31, 32 * 400 * 10**9) if y <= 8 else Fraction(V * 256 * 31, y * 128 * 10**11 * 32)
    node = Fraction(V * 7, 8 * y * 450 * 10**9)
    assert got == max(leaf, node)


# -- a TPU core ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("B, D, F, s", [
    (1024, 128, 128, 128), (1024, 200, 128, 128), (8, 4096, 1000, 128), (512, 4096, 14336, 256),
    (64, 100, 300, 256), (2048, 8192, 28672, 128)],
    ids=["fits", "d200", "f1000", "v6e-fits", "v6e-small", "llama3"])
def test_mxu_padding(B, D, F, s):
    dp, fp = -(-D // s) * s, -(-F // s) * s
    assert at("tpu.mxu.padded_flops", B=B, D=D, F=F, s_mxu=s) == 2 * B * dp * fp
    assert at("tpu.mxu.wasted_flops", B=B, D=D, F=F, s_mxu=s) == 2 * B * (dp * fp - D * F)
    assert at("tpu.mxu.padding_efficiency", D=D, F=F, s_mxu=s) == Fraction(D * F, dp * fp)


def test_mxu_padding_book_rule():
    # tpus.md, Key Takeaways: smaller axes are padded to 128 (256 on v6e): a 64-wide weight uses 1/4 of a v6e's
    # array along that side, so D = F = 64 wastes 15/16 of its FLOPs
    assert at("tpu.mxu.padding_efficiency", D=64, F=64, s_mxu=256) == Fraction(1, 16)
    assert value("tpu.mxu.padding_efficiency", "tpu-v6e", D=64, F=64) == Fraction(1, 16)
    assert value("tpu.mxu.padding_efficiency", "tpu-v5e", D=64, F=64) == Fraction(1, 4)


@pytest.mark.parametrize("B, s", [(8, 128), (128, 128), (4096, 128), (256, 256)], ids=str)
def test_systolic_fill(B, s):
    assert at("tpu.systolic.cycles", B=B, s_mxu=s) == B + 2 * (s - 1)
    assert at("tpu.systolic.fill_efficiency", B=B, s_mxu=s) == Fraction(B, B + 2 * (s - 1))


@pytest.mark.parametrize("B, D", [(8, 128), (64, 256), (1024, 4096)], ids=str)
def test_vpu_reductions(B, D):
    # tpus.md, Appendix A: along the 8 sublanes, 3 shuffles (by 4, 2, 1) and 3 adds; across lanes, the XLU
    cols, rows = D // 128, B // 8
    assert value("tpu.vpu.sublane_reduce_ops", "tpu-v5p", B=B, D=D) == cols * (rows - 1) + cols * 6
    assert value("tpu.vpu.lane_reduce_ops", "tpu-v5p", B=B, D=D) == rows * (cols - 1) + rows * 7
    assert at("tpu.vpu.sublane_reduce_ops", B=8, D=128, n_sublane=8, n_vlane=128) == 6  # one register: 3 + 3


@pytest.mark.parametrize("n", [2, 8, 72], ids=lambda n: f"N{n}")
def test_sharp_bytes_received(n):
    # gpus.md, SHARP: per GPU ingress B/N (its reduced shard), then B(N-1)/N (the multicast): exactly B
    V = 10**9
    got = quantities.get("gpu.sharp.bytes_received_per_gpu").derivation.at({sym("V"): V, sym("N"): n})
    assert [s.value for s in got.steps] == [Fraction(V, n), Fraction(V * (n - 1), n), V]
