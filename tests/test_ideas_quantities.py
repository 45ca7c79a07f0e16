"""Quantities added for ideas the book index (docs/reference/book_ideas.toml) had as partial or absent.

Each value is recomputed from the catalog's own integers in plain fractions, and held against the book's
figure where it prints one.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.catalog.hardware import default_catalog, get_chip
from scalemath.quantities import Context, evaluate, get

TPUS_WITH_PCIE = [c.key for c in default_catalog().every_chip() if c.family == "tpu" and c.pcie_bytes_per_s]


def value(quantity, chip, **given):
    return evaluate(get(quantity), Context(chip=chip), given).value


@pytest.mark.parametrize("chip", TPUS_WITH_PCIE)
def test_hbm_over_pcie(chip):
    c = get_chip(chip)
    assert value("tpu.ratio.hbm_to_pcie", chip) == sp.Rational(Fraction(c.hbm_bytes_per_s, c.pcie_bytes_per_s))


@pytest.mark.parametrize("chip, expected", [
    ("tpu-v4p", 75),  # tpus.md 'What Is a TPU?': PCIe "close to 100x" below HBM; 1.2e12 / 1.6e10 = 75
    ("tpu-v5e", sp.Rational(820, 16)),  # 8.2e11 / 1.6e10 = 51.25
])
def test_hbm_over_pcie_book_figures(chip, expected):
    assert value("tpu.ratio.hbm_to_pcie", chip) == expected


def test_vpu_hbm_intensity_v5p():
    # roofline.md footnote: the v5p VPU at about 7e12 FLOPs/s per core, critical intensity "about 3";
    # per chip (two cores, 1.4e13) against 2.8e12 B/s of HBM the ridge is at 5 FLOPs per byte.
    c = get_chip("tpu-v5p")
    expected = Fraction(c.flops("fp32"), c.hbm_bytes_per_s)
    assert expected == 5
    assert value("tpu.vpu.hbm_intensity", "tpu-v5p") == sp.Rational(expected)
    per_core = Fraction(c.flops("fp32"), c.cores_per_chip * c.hbm_bytes_per_s)
    assert 2 < per_core < 3  # the footnote's "about 3" is one core's rate against the chip's HBM


def test_vpu_hbm_intensity_is_symbolic_without_a_chip():
    from scalemath.symbolic.chip_internals import vpu_hbm_intensity
    from scalemath.symbolic.symbols import sym

    assert vpu_hbm_intensity().steps[-1].expr == sym("C_vec") / sym("W_hbm")


def _in(quantity, context, **given):
    return evaluate(get(quantity), context, given).value


# (level, chip, the book's threshold without SHARP): gpus.md 'Data Parallelism' (2200 in a node, 2475 across)
SHARP = [("in_node", "h100", 2200), ("", "h100", 2475), ("in_node", "b200", 2500), ("", "b200", 5625)]


@pytest.mark.parametrize("level, chip, without", SHARP, ids=[f"{c}-{lv or 'cross_node'}" for lv, c, _ in SHARP])
def test_sharp_halves_the_gpu_dp_threshold(level, chip, without):
    # gpus.md: "SHARP + pure DP: theoretically halves both thresholds". With bf16 gradients the backward pass
    # computes 8BDF/(X C) against an in-switch AllReduce of 2 x 2DF bytes each way at W: B/X = C / (2 W).
    c = get_chip(chip)
    w = c.nvlink_bytes_per_s if level else c.node_egress_bytes_per_s
    suffix = "_sharp_in_node" if level else "_sharp"
    ctx = Context(chip=chip)
    got = _in(f"parallel.gpu.dp.min_batch_per_gpu{suffix}", ctx)
    assert got == sp.Rational(Fraction(c.flops("bf16"), 2 * w))
    plain = _in("parallel.gpu.dp.min_batch_per_gpu" + ("_in_node" if level else ""), ctx)
    assert plain == without and got == sp.Rational(without, 2)


def test_kv_transfer_llama3_70b_on_v5e():
    # inference.md 'Designing an Effective Inference Engine': disaggregation ships the prompt's cache. LLaMA 3-70B
    # with an int8 cache holds 2 L K H = 2 x 80 x 8 x 128 = 163,840 bytes per token (applied-inference.md); an
    # 8192-token prompt from a 16-chip v5e prefill server over 3.125e9 B/s of DCN per chip.
    c = get_chip("tpu-v5e")
    expected = Fraction(8192 * 2 * 80 * 8 * 128, 16 * c.dcn_bytes_per_s)
    ctx = Context(chip="tpu-v5e", model="llama3-70b", kv_dtype="int8")
    got = _in("inference.serving.kv_transfer_time", ctx, T=8192, n_dev=16)
    assert got == sp.Rational(expected)
    assert 0.026 < float(got) < 0.027  # about 27 ms, longer than the 19 ms step the chapter's full-HBM batch takes


def test_kv_transfer_is_linear_in_the_prompt_and_inverse_in_the_chips():
    ctx = Context(chip="h100", model="llama3-8b")
    one = _in("inference.serving.kv_transfer_time", ctx, T=1024, n_dev=8)
    assert _in("inference.serving.kv_transfer_time", ctx, T=4096, n_dev=8) == 4 * one
    assert _in("inference.serving.kv_transfer_time", ctx, T=1024, n_dev=16) == one / 2


# gpus.md Quiz 4 Q1 (worked record gpus-quiz4-q1): an AllGather of V bytes over one scalable unit of M nodes.
# The node's switches take in V and send out D_node V (egress-bound: V / 450e9 on an H100 node); the top switch
# takes in V and sends out V (M - 1), each node's link at 400e9: V (M - 1) / (M 400e9).
SU = [("h100", 32, 10**9), ("h100", 4, 536_870_912), ("b200", 32, 10**9)]


@pytest.mark.parametrize("chip, m, v", SU, ids=[f"{c}-M{m}" for c, m, _ in SU])
def test_su_all_gather_byte_accounting(chip, m, v):
    c = get_chip(chip)
    ctx = Context(chip=chip)
    node = evaluate(get("gpu.all_gather.node_switch_bytes"), ctx, {"V": v, "M_nodes": m})
    assert node.value == c.nvlink_domain * v
    assert _in("gpu.all_gather.node_switch_time", ctx, V=v, M_nodes=m) == sp.Rational(Fraction(v, c.nvlink_bytes_per_s))
    assert _in("gpu.all_gather.top_switch_bytes", ctx, V=v, M_nodes=m) == v * (m - 1)
    assert _in("gpu.all_gather.top_switch_time", ctx, V=v, M_nodes=m) == \
        sp.Rational(Fraction(v * (m - 1), m * c.node_egress_bytes_per_s))


def test_su_all_gather_book_figures():
    # the book's H100 numbers: t_node = B / 450e9 and t_top = B (M - 1) / (M 400e9)
    ctx = Context(chip="h100")
    assert _in("gpu.all_gather.node_switch_time", ctx, V=450 * 10**9, M_nodes=32) == 1
    assert _in("gpu.all_gather.top_switch_time", ctx, V=32 * 400 * 10**9, M_nodes=32) == 31


def test_node_switch_ingress_is_the_whole_array():
    from scalemath.symbolic.symbols import sym
    from scalemath.symbolic.topology import all_gather_node_switch_bytes, all_gather_top_switch_bytes

    v = sym("V")
    assert sp.simplify(all_gather_node_switch_bytes().steps[0].expr - v) == 0
    assert all_gather_top_switch_bytes().steps[0].expr == v
