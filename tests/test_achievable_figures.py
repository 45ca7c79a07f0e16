"""What chips really reach (``[chips.KEY.achievable]``): a large GEMM's and a fused attention kernel's FLOP/s, a
collective's bandwidth and latency.

Every measured figure in the catalog has a row below: the number as its source prints it, turned into SI units by
plain arithmetic, with the printed precision as the tolerance, and the page it is printed on (the catalog's source
must name that page). The default fallback (``measured`` False), the validation of a user's file and the
``hardware show`` output follow.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.catalog.achievable import Achieved, combined_forward_backward
from scalemath.catalog.efficiency import sustained_fraction, under_efficiency
from scalemath.catalog.hardware import default_catalog, get_chip, load_catalog
from scalemath.cli import main
from scalemath.errors import BadValueError, CatalogError, UnknownNameError

T, G, US = 10**12, 10**9, 1000  # TFLOP/s or TB/s, GB/s, ns per microsecond

MAMF = "github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md"
NET = "github.com/stas00/ml-engineering/blob/master/network/README.md"
BOOK_GPUS = "jax-ml.github.io/scaling-book/gpus/"
BOOK_SHARDING = "jax-ml.github.io/scaling-book/sharding/"
NCCL_212 = "github.com/NVIDIA/nccl-tests/issues/212"
NCCL_290 = "github.com/NVIDIA/nccl-tests/issues/290"
NCCL_812 = "github.com/NVIDIA/nccl/issues/812"
PALLAS = "docs.jax.dev/en/latest/pallas/tpu/matmul.html"
DEEPSEEK = "arXiv:2412.19437"
FA2 = "arXiv:2307.08691"
FA3 = "arXiv:2407.08608"

# (chip, figure key, the printed value in SI units, half a unit of its last printed digit, the page)
PUBLISHED = [
    # Bekman's MAMF table prints TFLOPS to one decimal
    ("h100", "matmul_bf16_flops_per_s", Fraction(7945, 10) * T, Fraction(5, 100) * T, MAMF),
    ("h100", "matmul_fp8_flops_per_s", Fraction(14026, 10) * T, Fraction(5, 100) * T, MAMF),
    ("h200", "matmul_bf16_flops_per_s", Fraction(7945, 10) * T, Fraction(5, 100) * T, MAMF),  # "H200 is the same"
    ("h200", "matmul_fp8_flops_per_s", Fraction(14534, 10) * T, Fraction(5, 100) * T, MAMF),
    ("h800", "matmul_bf16_flops_per_s", Fraction(7945, 10) * T, Fraction(5, 100) * T, MAMF),  # the H100's die
    ("h800", "matmul_fp8_flops_per_s", Fraction(14026, 10) * T, Fraction(5, 100) * T, MAMF),
    ("a100", "matmul_bf16_flops_per_s", Fraction(2712, 10) * T, Fraction(5, 100) * T, MAMF),
    ("b200", "matmul_bf16_flops_per_s", Fraction(17450, 10) * T, Fraction(5, 100) * T, MAMF),
    ("b200", "matmul_fp8_flops_per_s", Fraction(34325, 10) * T, Fraction(5, 100) * T, MAMF),
    ("gb200", "matmul_bf16_flops_per_s", Fraction(18220, 10) * T, Fraction(5, 100) * T, MAMF),
    ("gb200", "matmul_fp8_flops_per_s", Fraction(36156, 10) * T, Fraction(5, 100) * T, MAMF),
    # the Pallas guide prints 'Matmul FLOP/s:  181823175395037.44' for XLA's 8192^3 bf16 matmul on v5e
    ("tpu-v5e", "matmul_bf16_flops_per_s", Fraction("181823175395037.44"), Fraction(1), PALLAS),
    # NVLink: AllReduce bus bandwidth, GB/s
    ("h100", "nvlink_bytes_per_s", 370 * G, G // 2, BOOK_GPUS),                  # "about 370 GB/s"
    ("h200", "nvlink_bytes_per_s", Fraction(36761, 100) * G, G // 200, NET),      # 367.61GBps, ring, 16 GiB
    ("a100", "nvlink_bytes_per_s", Fraction(23489, 100) * G, G // 200, NET),      # 234.89 GB/s, 16 GiB
    ("b200", "nvlink_bytes_per_s", Fraction(74064, 100) * G, G // 200, NET),      # 740.64GBps, 4 GiB
    ("h800", "nvlink_bytes_per_s", 160 * G, G // 2, DEEPSEEK),                    # "160 GB/s"
    # across nodes, per GPU: "46-48GB/s per NIC" at NDR (the low end), "192GB/s AllReduce BusBW" over 8 HDR NICs
    ("h100", "nic_bytes_per_s", 46 * G, G // 2, NCCL_290),
    ("h200", "nic_bytes_per_s", 46 * G, G // 2, NCCL_290),
    ("h800", "nic_bytes_per_s", 46 * G, G // 2, NCCL_290),
    ("b200", "nic_bytes_per_s", 46 * G, G // 2, NCCL_290),
    ("gb200", "nic_bytes_per_s", 46 * G, G // 2, NCCL_290),
    ("a100", "nic_bytes_per_s", Fraction(192 * G, 8), Fraction(G, 2 * 8), NCCL_812),
    # TPU v5e ICI: an AllGather reaches about 95 % of the axis's 2 x 4.5e10 B/s (the book's empirical figure)
    ("tpu-v5e", "ici_bytes_per_s", Fraction(95, 100) * 2 * 45 * G, Fraction(5, 1000) * 2 * 45 * G, BOOK_SHARDING),
    # latency: nccl-tests' time for the smallest AllReduce on one A100 node, 43.83 us
    ("a100", "nvlink_latency_ns", Fraction(4383, 100) * US, Fraction(5, 1000) * US, NET),
    # fused attention, forward + backward, causal, head dim 128, seqlen 16k: FlashAttention-2's whole TFLOPs/s
    ("a100", "attention_bf16_flops_per_s", 189 * T, T // 2, FA2),                 # Figure 4(d), A100 80GB SXM4
    ("h100", "attention_bf16_flops_per_s", 328 * T, T // 2, FA2),                 # Figure 7(d), H100 80GB SXM5
    ("h800", "attention_bf16_flops_per_s", 328 * T, T // 2, FA2),                 # the H100's compute
    ("h200", "attention_bf16_flops_per_s", 328 * T, T // 2, FA2),
]


def _answer(chip, key) -> Achieved:
    if key.startswith("matmul_"):
        return chip.achievable_flops(key.split("_")[1])
    if key.startswith("attention_"):
        return chip.achievable_attention_flops(key.split("_")[1])
    network = key.split("_", 1)[0]
    return chip.collective_latency(network) if key.endswith("_latency_ns") else chip.achievable_bandwidth(network)


@pytest.mark.parametrize("key, figure, printed, tolerance, page", PUBLISHED,
                         ids=[f"{k}-{f}" for k, f, *_ in PUBLISHED])
def test_every_measured_figure_is_the_printed_one(key, figure, printed, tolerance, page):
    got = _answer(get_chip(key), figure)
    assert got.measured
    assert abs(Fraction(got.value) - printed) <= tolerance, (got.value, float(printed))
    assert page in got.source


def test_every_measured_figure_in_the_catalog_has_a_row():
    rows = {(k, f) for k, f, *_ in PUBLISHED}
    for chip in default_catalog().every_chip():
        for figure in chip.achievable.figures:
            assert (chip.key, figure) in rows, (chip.key, figure)


# The sources' own arithmetic, by a second route: Bekman's efficiency column is MAMF / theory (printed to 0.1 %),
# nccl-tests' bus bandwidth is algbw x 2(n-1)/n, Bekman's B200 share is busbw / 900, the v5e guide's utilization
# is FLOP/s over 197e12 (printed to 1e-4 %).
@pytest.mark.parametrize("measured, theory, printed_percent, half_digit", [
    (Fraction(2712, 10), 312, Fraction(869, 10), Fraction(5, 100)),      # A100 SXM bf16
    (Fraction(7945, 10), 989, Fraction(803, 10), Fraction(5, 100)),      # H100 SXM bf16
    (Fraction(17450, 10), 2250, Fraction(776, 10), Fraction(5, 100)),    # B200 SXM bf16
    (Fraction(18220, 10), 2500, Fraction(729, 10), Fraction(5, 100)),    # GB200 SXM bf16
    (Fraction(14026, 10), 1979, Fraction(709, 10), Fraction(5, 100)),    # H100 SXM fp8
    (Fraction(14534, 10), 1979, Fraction(734, 10), Fraction(5, 100)),    # H200 SXM fp8
    (Fraction(34325, 10), 4500, Fraction(763, 10), Fraction(5, 100)),    # B200 SXM fp8
    (Fraction(36156, 10), 5000, Fraction(723, 10), Fraction(5, 100)),    # GB200 SXM fp8
    (Fraction(13422, 100) * 2 * 7 / 8, 300, 78, Fraction(1, 2)),          # A100 node: algbw 134.22 -> 234.89 busbw
    (Fraction(74064, 100), 900, 82, Fraction(1, 2)),                      # one P6-B200 node: 82 %
    (Fraction(36761, 100), 450, 82, Fraction(1, 2)),                      # 8x H200, ring: 82 %
    (Fraction("181823175395037.44") / 10**12, 197, Fraction("92.2960"), Fraction(5, 100000)),  # v5e XLA matmul
], ids=["a100-bf16", "h100-bf16", "b200-bf16", "gb200-bf16", "h100-fp8", "h200-fp8", "b200-fp8", "gb200-fp8",
        "a100-nccl-busbw", "b200-nvlink-share", "h200-nvlink-share", "v5e-utilization"])
def test_the_sources_arithmetic_reproduces(measured, theory, printed_percent, half_digit):
    assert abs(100 * Fraction(measured) / theory - printed_percent) <= half_digit


def test_the_a100_bus_bandwidth_is_its_algbw_scaled():
    # nccl-tests: busbw = algbw x 2(n-1)/n; the 16 GiB row prints algbw 134.22 and busbw 234.89 on 8 GPUs
    busbw = Fraction(13422, 100) * 2 * 7 / 8
    assert abs(busbw - Fraction(23489, 100)) <= Fraction(1, 100)
    assert get_chip("a100").achievable_bandwidth("nvlink").value == 234_890_000_000


def test_the_share_of_peak_is_the_measured_over_the_peak():
    got = get_chip("h100").achievable_bandwidth("nvlink")
    assert got.peak == 450 * G and got.share == Fraction(370, 450)
    got = get_chip("h100").under("datasheet").achievable_flops("bf16")
    assert got.value == 794_500_000_000_000 and got.share == Fraction(7945, 9895)  # the datasheet's 989.5 peak


# -- attention: forward and backward combined as the papers count them ---------------------------------------------

def _fwd_bwd_by_hand(forward_tflops, backward_tflops, seqlen=16384, head_dim=128, heads=16, causal=True):
    """One forward plus one backward pass of the papers' benchmark (batch x seqlen = 16k tokens, hidden 2048) timed
    at each pass's own rate: FLOPs 4 s^2 d h per sequence forward (halved when causal), 2.5x that backward."""
    batch = 16384 // seqlen
    forward = Fraction(4 * batch * seqlen**2 * head_dim * heads, 2 if causal else 1)
    backward = Fraction(5, 2) * forward
    seconds = forward / (forward_tflops * T) + backward / (backward_tflops * T)
    return (forward + backward) / seconds


@pytest.mark.parametrize("forward, backward, seqlen, heads, head_dim, causal", [
    (648, 561, 16384, 16, 128, False),     # FlashAttention-3, arXiv:2407.08608v2 Figures 5(c) and 6(b)
    (370, 322, 16384, 16, 128, False),     # its FlashAttention-2 2.5.8 baseline, the same figures
    (595, 516, 16384, 16, 128, False),     # its cuDNN 9.1 baseline
    (616, 561, 16384, 16, 128, True),      # causal forward 5(d) beside the only backward printed (non-causal)
    (300, 300, 512, 32, 64, True),         # equal rates: the rate itself
], ids=["fa3-h100", "fa2-in-fa3-h100", "cudnn-h100", "fa3-causal-forward", "equal-rates"])
def test_forward_and_backward_combine_time_weighted(forward, backward, seqlen, heads, head_dim, causal):
    got = combined_forward_backward(forward * T, backward * T)
    assert got == _fwd_bwd_by_hand(forward, backward, seqlen, head_dim, heads, causal)
    assert min(forward, backward) * T <= got <= max(forward, backward) * T


def test_the_h100_source_gives_flashattention_3_combined_as_the_engine_does():
    # FlashAttention-3 is a note in the H100's source (FlashAttention-2 is the figure); its printed combination is
    # the engine's, rounded to the tenth
    got = combined_forward_backward(648 * T, 561 * T)
    source = get_chip("h100").achievable_attention_flops("bf16").source
    assert f"= {float(got / T):.1f} TFLOP/s" in source and FA3 in source
    for printed in ("616 TFLOPs/s with causal mask (Figure 5(d))", "648 without (Figure 5(c))",
                    "backward 561 without causal mask (Figure 6(b)"):
        assert printed in source
    assert f"({float(got / T):.1f} TFLOP/s without causal mask" in get_chip("h100").achievable.notes


@pytest.mark.parametrize("forward, backward, ratio", [(0, 5, Fraction(5, 2)), (5, -1, Fraction(5, 2)), (5, 5, 0)],
                         ids=["zero forward", "negative backward", "zero ratio"])
def test_a_rate_that_is_not_positive_cannot_be_combined(forward, backward, ratio):
    with pytest.raises(BadValueError, match="must be positive"):
        combined_forward_backward(forward, backward, ratio)


def test_attention_is_a_share_of_the_peak_and_below_the_matmul_rate():
    for key, peak in (("a100", 310 * T), ("h100", 990 * T)):  # the book's peaks (datasheets: 312, 989.5)
        got = get_chip(key).achievable_attention_flops("bf16")
        assert got.peak == peak and got.share == Fraction(got.value, peak)
        assert got.value < get_chip(key).achievable_flops("bf16").value


# -- where nobody measured: the default share of the peak -----------------------------------------------------------

DEFAULTS = [  # (chip, figure, expected by plain arithmetic: 80 % of the catalog's peak, or the default latency)
    ("v100", "matmul_fp16_flops_per_s", Fraction(4, 5) * 125 * T),
    ("tpu-v5p", "matmul_bf16_flops_per_s", Fraction(4, 5) * 459 * T),
    ("tpu-v6e", "matmul_fp8_flops_per_s", Fraction(4, 5) * 920 * T),
    ("h100", "matmul_fp32_flops_per_s", Fraction(4, 5) * 66 * T),
    ("gb200", "nvlink_bytes_per_s", Fraction(4, 5) * 900 * G),
    ("v100", "nic_bytes_per_s", Fraction(4, 5) * Fraction(625, 100) * G),
    ("tpu-v4p", "ici_bytes_per_s", Fraction(4, 5) * 2 * 45 * G),
    ("tpu-v5e", "dcn_bytes_per_s", Fraction(4, 5) * Fraction(3125, 1000) * G),
    ("h100", "nvlink_latency_ns", 8000),
    ("h100", "nic_latency_ns", 8000),
    ("tpu-v5p", "ici_latency_ns", 1000),
    ("tpu-v5p", "dcn_latency_ns", 8000),
    # attention: 0.7 of the achievable matmul rate, measured or itself assumed
    ("b200", "attention_bf16_flops_per_s", Fraction(7, 10) * Fraction(17450, 10) * T),
    ("h100", "attention_fp8_flops_per_s", Fraction(7, 10) * Fraction(14026, 10) * T),
    ("v100", "attention_fp16_flops_per_s", Fraction(7, 10) * Fraction(4, 5) * 125 * T),
    ("tpu-v5p", "attention_bf16_flops_per_s", Fraction(7, 10) * Fraction(4, 5) * 459 * T),
]


@pytest.mark.parametrize("key, figure, expected", DEFAULTS, ids=[f"{k}-{f}" for k, f, _ in DEFAULTS])
def test_a_figure_nobody_measured_is_assumed_from_the_default(key, figure, expected):
    got = _answer(get_chip(key), figure)
    assert not got.measured
    assert got.value == expected and isinstance(got.value, int)
    assert got.source.startswith("assumed")


def test_assumed_attention_says_whether_its_matmul_rate_was_measured():
    assert "(measured;" in get_chip("b200").achievable_attention_flops("bf16").source
    assert "(itself assumed;" in get_chip("v100").achievable_attention_flops("fp16").source
    assert "0.7 of the achievable bf16 matmul rate" in get_chip("b200").achievable_attention_flops("bf16").source


def test_the_default_follows_the_datasheet_peak():
    got = get_chip("tpu-v6e").under("datasheet").achievable_flops("bf16")  # 918 on the datasheet, the book's 920
    assert not got.measured and got.value == Fraction(4, 5) * 918 * T


@pytest.mark.parametrize("chip, kind, dtype, measured_in", [
    ("h100", "matmul", "fp16", "bf16"), ("h100", "attention", "fp16", "bf16"), ("a100", "matmul", "fp16", "bf16"),
    ("a100", "attention", "fp16", "bf16")], ids=["h100-matmul", "h100-attention", "a100-matmul", "a100-attention"])
def test_a_dtype_at_the_same_peak_takes_the_measured_figure(chip, kind, dtype, measured_in):
    # bf16 and fp16 run on the same tensor cores at the same peak: a kernel measured in one reaches as much in the
    # other, where a default share of the peak (fp16 attention on H100: 0.7 x 792 = 554 TFLOP/s) would put the
    # unmeasured one far above the measured one (328)
    c = get_chip(chip)
    assert c.flops(dtype) == c.flops(measured_in)
    got = _answer(c, f"{kind}_{dtype}_flops_per_s")
    key = f"{kind}_{measured_in}_flops_per_s"
    assert got.measured and got.value == c.achievable.figures[key]
    assert got.source == c.achievable.sources[key] + f"; the {measured_in} figure, at the same peak as {dtype}"


@pytest.mark.parametrize("call, error, message", [
    (lambda: get_chip("h100").achievable_bandwidth("ici"), BadValueError, "its networks are nvlink, nic"),
    (lambda: get_chip("tpu-v5e").collective_latency("nvlink"), BadValueError, "its networks are ici, dcn"),
    (lambda: get_chip("h100").achievable_bandwidth("pcie"), UnknownNameError, "network"),
    (lambda: get_chip("a100").achievable_flops("fp8"), BadValueError, "a100 has no fp8 rate"),
    (lambda: get_chip("a100").achievable_attention_flops("fp8"), BadValueError, "a100 has no fp8 rate"),
    (lambda: get_chip("tpu-v2").achievable_bandwidth("dcn"), BadValueError, "tpu-v2 has no dcn bandwidth"),
], ids=["ici on a GPU", "nvlink on a TPU", "unknown network", "a dtype without a peak",
        "attention in a dtype without a peak", "no peak to share"])
def test_a_question_the_catalog_cannot_answer_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- a user's file ----------------------------------------------------------------------------------------------------

_MINE = """
[chips.mine]
name = "Mine"
family = "gpu"
source = "my notes"
flops_per_s = { bf16 = 100_000_000_000_000 }
hbm_bytes = 10_000_000_000
hbm_bytes_per_s = 1_000_000_000_000
nvlink_bytes_per_s = 100_000_000_000
"""
_SOURCES = '\n[chips.mine.achievable.sources]\nmatmul_bf16_flops_per_s = "my bench"\n'
_DEFAULTS = """
[defaults.achievable]
matmul_percent = 50
bandwidth_percent = 60
attention_fraction_of_matmul = 0.5
nvlink_latency_ns = 5000
nic_latency_ns = 9000
ici_latency_ns = 1000
dcn_latency_ns = 9000

[defaults.achievable.sources]
matmul_percent = "mine"
bandwidth_percent = "mine"
attention_fraction_of_matmul = "mine"
nvlink_latency_ns = "mine"
nic_latency_ns = "mine"
ici_latency_ns = "mine"
dcn_latency_ns = "mine"
"""


def _file(tmp_path, text):
    path = tmp_path / "hw.toml"
    path.write_text(_MINE + text, encoding="utf-8")
    return path


def test_a_users_file_gives_measured_figures_and_takes_the_packaged_defaults(tmp_path):
    chip = load_catalog(_file(tmp_path, "[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 70_000_000_000_000\n"
                                        + _SOURCES))["mine"]
    assert chip.achievable_flops("bf16") == Achieved(70 * T, "my bench", True, 100 * T)
    assert chip.achievable_bandwidth("nvlink").value == 80 * G and not chip.achievable_bandwidth("nvlink").measured
    assert chip.achievable_attention_flops("bf16").value == Fraction(7, 10) * 70 * T  # the packaged 0.7


def test_a_users_file_gives_a_measured_attention_figure(tmp_path):
    text = ("[chips.mine.achievable]\nattention_bf16_flops_per_s = 40_000_000_000_000\n"
            '[chips.mine.achievable.sources]\nattention_bf16_flops_per_s = "my FlashAttention run"\n')
    chip = load_catalog(_file(tmp_path, text))["mine"]
    assert chip.achievable_attention_flops("bf16") == Achieved(40 * T, "my FlashAttention run", True, 100 * T)
    assert not chip.achievable_flops("bf16").measured


def test_a_users_file_may_give_its_own_defaults(tmp_path):
    chip = load_catalog(_file(tmp_path, _DEFAULTS))["mine"]
    assert chip.achievable_flops("bf16").value == 50 * T
    assert chip.achievable_bandwidth("nvlink").value == 60 * G
    assert chip.collective_latency("nic").value == 9000
    assert chip.achievable_attention_flops("bf16").value == Fraction(1, 2) * 50 * T


def test_a_sustained_fraction_scales_the_kernel_rates_under_its_convention(tmp_path):
    text = ("[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 70_000_000_000_000\nsustained_fraction = 0.6\n"
            + _SOURCES + 'sustained_fraction = "fitted to my runs"\n')
    chip = load_catalog(_file(tmp_path, text))["mine"]
    kernel, attention = chip.achievable_flops("bf16"), chip.achievable_attention_flops("bf16")
    assert under_efficiency(chip, kernel, "kernel") == kernel
    scaled = under_efficiency(chip, kernel, "sustained")
    assert scaled.value == 42 * T and "times the sustained fraction 0.6 (fitted to my runs)" in scaled.source
    assert under_efficiency(chip, attention, "sustained").value == Fraction(6, 10) * attention.value
    assert sustained_fraction(chip) == Achieved(Fraction(6, 10), "fitted to my runs", False)
    # a chip without one keeps its kernel rates, and says so
    plain = load_catalog(_file(tmp_path, "[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 70_000_000_000_000\n"
                                         + _SOURCES))["mine"]
    kept = under_efficiency(plain, plain.achievable_flops("bf16"), "sustained")
    assert kept.value == 70 * T and "no sustained fraction in the catalog for mine" in kept.source
    with pytest.raises(BadValueError, match="efficiency 'fast': choose one of kernel, sustained"):
        under_efficiency(plain, kept, "fast")


_BAD = [
    ("[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 200_000_000_000_000\n" + _SOURCES,
     r"key 'achievable.matmul_bf16_flops_per_s' = 200000000000000 is above the chip's peak flops_per_s.bf16"),
    ('[chips.mine.datasheet]\nsource = "x"\nflops_per_s = { bf16 = 60_000_000_000_000 }\n'
     "[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 70_000_000_000_000\n" + _SOURCES,
     r"is above the datasheet's peak flops_per_s.bf16 = 60000000000000"),
    ("[chips.mine.achievable]\nmatmul_bf17_flops_per_s = 1\n" + _SOURCES,
     r"\[chips.mine.achievable\] has unknown key 'matmul_bf17_flops_per_s'"),
    ('[chips.mine.achievable]\nici_bytes_per_s = 1\n[chips.mine.achievable.sources]\nici_bytes_per_s = "x"\n',
     r"key 'ici_bytes_per_s': a GPU has no ici network; its networks are nvlink, nic"),
    ("[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 1\n", r"lacks a sources table"),
    ('[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 1\nnvlink_latency_ns = 9\n' + _SOURCES,
     r"sources lacks the source of nvlink_latency_ns"),
    ('[chips.mine.achievable]\nmatmul_bf16_flops_per_s = 1\n' + _SOURCES + 'nic_bytes_per_s = "x"\n',
     r"sources has 'nic_bytes_per_s', which names no figure"),
    ("[chips.mine.achievable]\nmatmul_bf16_flops_per_s = -5\n" + _SOURCES,
     r"key 'matmul_bf16_flops_per_s' = -5 must be a whole number from 1 to 10\^18 FLOP/s"),
    ('[chips.mine.achievable]\nnic_bytes_per_s = 1\n[chips.mine.achievable.sources]\nnic_bytes_per_s = "x"\n',
     r"key 'achievable.nic_bytes_per_s' = 1: the chip has no peak to hold it against \(nic_bytes_per_s\)"),
    ("[chips.mine.achievable.sources]\n", r"\[chips.mine.achievable\] gives no figure"),
    (None, r"key 'achievable' must be a table"),
    (_DEFAULTS.replace("matmul_percent = 50", "matmul_percent = 120"),
     r"\[defaults.achievable\], key 'matmul_percent' = 120 must be a whole number from 1 to 100 percent"),
    (_DEFAULTS.replace("dcn_latency_ns = 9000\n", "", 1), r"\[defaults.achievable\] lacks dcn_latency_ns"),
    (_DEFAULTS.replace('dcn_latency_ns = "mine"\n', ""), r"sources must give the reasoning of each default"),
    ("[chips.mine.achievable]\nattention_bf16_flops_per_s = 100_000_000_000_001\n"
     '[chips.mine.achievable.sources]\nattention_bf16_flops_per_s = "x"\n',
     r"key 'achievable.attention_bf16_flops_per_s' = 100000000000001 is above the chip's peak flops_per_s.bf16"),
    ("[chips.mine.achievable]\nattention_fp8_flops_per_s = 1\n"
     '[chips.mine.achievable.sources]\nattention_fp8_flops_per_s = "x"\n',
     r"attention_fp8_flops_per_s' = 1: the chip has no peak to hold it against \(flops_per_s.fp8\)"),
    (_DEFAULTS.replace("attention_fraction_of_matmul = 0.5", "attention_fraction_of_matmul = 1.5"),
     r"key 'attention_fraction_of_matmul' = 1.5 must be a decimal above 0 and at most 1"),
    (_DEFAULTS.replace("attention_fraction_of_matmul = 0.5", "attention_fraction_of_matmul = 0"),
     r"key 'attention_fraction_of_matmul' = 0 must be a decimal above 0"),
    (_DEFAULTS.replace("attention_fraction_of_matmul = 0.5", 'attention_fraction_of_matmul = "0.5"'),
     r"key 'attention_fraction_of_matmul' = '0.5' must be a decimal"),
    (_DEFAULTS.replace("attention_fraction_of_matmul = 0.5", "attention_fraction_of_matmul = 0.12345"),
     r"with at most 4 decimals"),
    (_DEFAULTS.replace("attention_fraction_of_matmul = 0.5\n", ""),
     r"\[defaults.achievable\] lacks attention_fraction_of_matmul"),
    ('[chips.mine.achievable]\nsustained_fraction = 1.5\n[chips.mine.achievable.sources]\nsustained_fraction = "x"\n',
     r"key 'sustained_fraction' = 1.5 must be a decimal above 0 and at most 1"),
    ("[chips.mine.achievable]\nsustained_fraction = 0.5\n[chips.mine.achievable.sources]\n",
     r"sources lacks the source of sustained_fraction"),
]


@pytest.mark.parametrize("table, message", _BAD, ids=[
    "above the peak", "above the datasheet's peak", "unknown key", "a network the chip has not", "no sources",
    "a figure without its source", "a source without its figure", "negative", "no peak to hold it against",
    "no figure", "not a table", "a default share over 100", "a default missing", "a default without reasoning",
    "attention above the peak", "attention in a dtype without a peak", "attention share over 1", "attention share 0",
    "attention share a string", "attention share too fine", "attention share missing", "sustained fraction over 1",
    "sustained fraction without its source"])
def test_a_bad_achievable_table_is_refused_by_name(tmp_path, table, message):
    text = table if table is not None else ""
    path = _file(tmp_path, text)
    if table is None:
        path.write_text(_MINE.replace('source = "my notes"', 'source = "my notes"\nachievable = 3'),
                        encoding="utf-8")
    with pytest.raises(CatalogError, match=message) as caught:
        load_catalog(path)
    assert "hw.toml" in str(caught.value)
    out = _cli("hardware", "show", "mine", "--hardware-file", str(path), code=CatalogError.exit_code)
    assert "hw.toml" in out and "Traceback" not in out and len(out.strip().splitlines()) == 1


# -- hardware show ----------------------------------------------------------------------------------------------------


def _cli(*args, code=0):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == code, result.output
    return result.output


def test_show_lists_measured_and_assumed_figures_with_their_sources():
    out = _cli("hardware", "show", "h100")
    assert "  matmul_bf16_flops_per_s              794.5 TFLOP/s  (794500000000000)  80.25 % of peak, measured [1]" \
        in out
    assert "  matmul_fp16_flops_per_s              794.5 TFLOP/s  (794500000000000)  80.25 % of peak, measured [2]" \
        in out
    assert "  attention_bf16_flops_per_s           328 TFLOP/s  (328000000000000)  33.13 % of peak, measured [4]" \
        in out
    assert ("  attention_fp8_flops_per_s            981.8 TFLOP/s  (981820000000000)  49.59 % of peak, assumed "
            "(default 70 % of the achievable matmul rate)") in out
    assert "  nvlink_bytes_per_s                   370 GB/s  (370000000000)  82.22 % of peak, measured [6]" in out
    assert "  nic_latency_ns                       8000 ns  assumed (default)" in out
    assert "[6] How To Scale Your Model, part 12" in out and NCCL_212 in out
    assert "[4] Tri Dao, 'FlashAttention-2" in out and "notes: attention is FlashAttention-2's figure" in out
    out = _cli("hardware", "show", "v100")
    assert "measured" not in out.split("achievable (", 1)[1]


def test_show_json_gives_each_figure_with_its_source():
    data = json.loads(_cli("hardware", "show", "a100", "--format", "json"))["achievable"]
    assert data["nvlink_bytes_per_s"] == {"value": 234_890_000_000, "measured": True,
                                          "share_of_peak": str(Fraction(23489, 30000)),
                                          "source": get_chip("a100").achievable.sources["nvlink_bytes_per_s"]}
    assert data["nvlink_latency_ns"]["share_of_peak"] is None and data["nvlink_latency_ns"]["value"] == 43_830
    assert data["matmul_fp16_flops_per_s"]["measured"] is True  # the bf16 figure: the same peak
    assert data["matmul_fp16_flops_per_s"]["value"] == data["matmul_bf16_flops_per_s"]["value"]
    assert data["attention_bf16_flops_per_s"]["value"] == 189_000_000_000_000
    assert data["attention_bf16_flops_per_s"]["share_of_peak"] == str(Fraction(189, 310))
    listed = {c["key"]: c for c in json.loads(_cli("hardware", "list", "--format", "json"))}
    assert listed["tpu-v5e"]["achievable"]["ici_bytes_per_s"]["value"] == 85_500_000_000


def test_a_chip_built_by_hand_reads_with_the_catalogs_bounds():
    from scalemath.catalog import achievable
    from scalemath.catalog.chip_table import ACHIEVABLE_LIMITS

    assert dict(achievable._LIMITS) == dict(ACHIEVABLE_LIMITS)
