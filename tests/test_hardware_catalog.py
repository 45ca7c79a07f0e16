"""Table tests for the packaged hardware catalog (scalemath/hardware.toml) and its loader.

Every expected figure is written out here, so the tests need nothing outside the
project. Critical intensities are compute / bandwidth, compared with the value
rounded to 4 significant figures; where the book prints the number, a comment
says where.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from scalemath.errors import BadValueError, CatalogError, UnknownNameError
from scalemath.catalog.hardware import default_catalog, get_chip, load_catalog

CHIP_KEYS = [
    "tpu-v3",
    "tpu-v4p",
    "tpu-v5p",
    "tpu-v5e",
    "tpu-v6e",
    "tpu7x",
    "v100",
    "a100",
    "h100",
    "h200",
    "b200",
    "gb200",
]
TPUS = CHIP_KEYS[:6]
GPUS = CHIP_KEYS[6:]
# chips the book names outside its spec tables: reachable by name, not iterated (problem generators
# draw from the tables' chips)
OTHER_CHIPS = ["tpu-v2", "h800"]
EVERY_CHIP = ["tpu-v2", *TPUS, *GPUS[:3], "h800", *GPUS[3:]]


# -- 1. every chip loads -------------------------------------------------------------


@pytest.mark.parametrize("key", CHIP_KEYS)
def test_chip_loads(key):
    chip = get_chip(key)
    assert chip.key == key
    assert chip.name.strip()
    assert chip.source.startswith("How To Scale Your Model")
    assert chip.family == ("tpu" if key in TPUS else "gpu")
    assert chip.hbm_bytes > 0 and chip.hbm_bytes_per_s > 0
    assert chip.flops_per_s


def test_catalog_holds_exactly_the_chips_in_order():
    assert [c.key for c in default_catalog()] == CHIP_KEYS
    assert len(default_catalog()) == len(CHIP_KEYS)
    assert list(default_catalog().chips) == EVERY_CHIP
    assert [c.key for c in default_catalog().every_chip()] == EVERY_CHIP


@pytest.mark.parametrize("key", OTHER_CHIPS)
def test_other_chips_are_reachable_by_name_but_not_iterated(key):
    chip = get_chip(key)
    assert chip.spec_table is False and chip.source.startswith("How To Scale Your Model")
    assert chip not in list(default_catalog())


def test_lookup_ignores_case():
    assert get_chip("H100").key == "h100"


def test_unknown_chip_suggests_a_name():
    with pytest.raises(UnknownNameError, match="tpu-v5e"):
        get_chip("tpu-v5")


@pytest.mark.parametrize("key", TPUS)
def test_tpu_has_interconnect_fields(key):
    chip = get_chip(key)
    assert chip.ici_link_bytes_per_s and chip.ici_links and chip.torus_dims
    assert len(chip.pod_shape) == chip.torus_dims
    assert len(chip.host_shape) == chip.torus_dims
    assert chip.hop_latency_s == Fraction(1, 10**6)
    assert chip.dcn_bytes_per_s and chip.pcie_bytes_per_s
    assert chip.nvlink_bytes_per_s is None and chip.sms is None


@pytest.mark.parametrize("key", GPUS)
def test_gpu_has_interconnect_fields(key):
    chip = get_chip(key)
    assert chip.nvlink_links and chip.nvlink_link_bytes_per_s and chip.nvlink_bytes_per_s
    assert chip.nvlink_bytes_per_s == chip.nvlink_links * chip.nvlink_link_bytes_per_s
    assert chip.nvlink_domain and chip.sms and chip.tensor_cores and chip.cuda_cores
    assert chip.ici_link_bytes_per_s is None and chip.pod_shape is None


# -- 2. critical intensities ----------------------------------------------------------

# (chip, dtype, level, compute / bandwidth to 4 significant figures)
INTENSITIES = [
    # TPU v3
    ("tpu-v3", "bf16", "hbm", 155.6),
    ("tpu-v3", "bf16", "ici", 700.0),
    ("tpu-v3", "bf16", "dcn", 22400),
    ("tpu-v3", "int8", "pcie", 8750),
    # TPU v4p
    ("tpu-v4p", "bf16", "hbm", 229.2),
    ("tpu-v4p", "bf16", "ici", 3056),
    ("tpu-v4p", "bf16", "ici-link", 6111),
    ("tpu-v4p", "bf16", "pcie", 17190),
    # TPU v5p
    ("tpu-v5p", "bf16", "hbm", 163.9),
    ("tpu-v5p", "bf16", "ici", 2550),  # sharding.md Q4 and part 5: 2550
    ("tpu-v5p", "int8", "ici", 5100),  # part 5: 5100 in int8
    ("tpu-v5p", "bf16", "dcn", 73440),  # part 5: 73,440
    ("tpu-v5p", "int4", "ici-link", 20440),
    ("tpu-v5p", "fp32", "hbm", 5.000),  # roofline.md vector-unit footnote: "about 3" (loose)
    ("tpu-v5p", "fp8", "pcie", 28690),
    # TPU v5e
    ("tpu-v5e", "bf16", "hbm", 240.2),  # roofline.md and tpus.md: 240
    ("tpu-v5e", "int8", "hbm", 480.5),  # roofline.md Q1: 480 (halved to 240 for int8 bytes)
    ("tpu-v5e", "bf16", "ici", 2189),  # parts 7-8: about 2200
    ("tpu-v5e", "bf16", "ici-link", 4378),  # roofline.md: 4377 (truncated), D > 8755
    ("tpu-v5e", "bf16", "dcn", 63040),
    ("tpu-v5e", "bf16", "pcie", 12310),
    ("tpu-v5e", "int4", "hbm", 961.0),
    ("tpu-v5e", "bf16", "vmem", 10.92),  # tpus.md: about 240 / 22, "B > 11" in Q4
    # TPU v6e
    ("tpu-v6e", "bf16", "hbm", 575.0),
    ("tpu-v6e", "int8", "hbm", 1150),
    ("tpu-v6e", "bf16", "ici", 5111),
    ("tpu-v6e", "bf16", "dcn", 73600),
    ("tpu-v6e", "bf16", "pcie", 28750),  # tpus.md Q3 prints 57,500 with its own 1.6e10
    # TPU7x
    ("tpu7x", "bf16", "hbm", 310.8),
    ("tpu7x", "int8", "ici", 25610),
    ("tpu7x", "fp8", "dcn", 369100),
    ("tpu7x", "bf16", "pcie", 143800),
    # V100
    ("v100", "fp16", "hbm", 138.9),
    ("v100", "fp16", "nvlink", 833.3),
    ("v100", "fp32", "pcie", 981.3),
    # A100
    ("a100", "bf16", "hbm", 155.0),
    ("a100", "int8", "nvlink", 2067),
    ("a100", "fp32", "hbm", 9.750),
    ("a100", "bf16", "pcie", 9688),
    # H100
    ("h100", "bf16", "hbm", 295.5),  # roofline.md Q5: 295
    ("h100", "fp8", "hbm", 591.0),  # part 12 Quiz 1: 590
    ("h100", "bf16", "nvlink", 2200),  # part 12 data parallelism: 2200 within a node
    ("h100", "bf16", "dcn", 19800),  # part 12 expert parallelism rule: 8 x 2475 (not printed)
    ("h100", "fp32", "hbm", 19.70),  # part 12 Quiz 1 prints 10 without counting FMA as 2
    ("h100", "bf16", "pcie", 15470),
    # H200
    ("h200", "bf16", "hbm", 206.3),
    ("h200", "int8", "nvlink", 4400),
    # B200
    ("b200", "bf16", "hbm", 281.3),  # part 12 Quiz 1: 281
    ("b200", "fp8", "hbm", 562.5),  # part 12 Quiz 1: 562
    ("b200", "bf16", "nvlink", 2500),  # part 12 Quiz 5: 2500 within a node
    ("b200", "fp4", "dcn", 180000),
    ("b200", "fp32", "pcie", 1250),
    # GB200
    ("gb200", "bf16", "nvlink", 2500),
    ("gb200", "fp4", "hbm", 1125),
    ("gb200", "bf16", "dcn", 45000),
]


@pytest.mark.parametrize(
    "key, dtype, level, printed",
    INTENSITIES,
    ids=[f"{k}-{d}-{lvl}" for k, d, lvl, _ in INTENSITIES],
)
def test_critical_intensity(key, dtype, level, printed):
    chip = get_chip(key)
    exact = Fraction(chip.flops(dtype), chip.bandwidth(level))
    assert math.isclose(float(exact), printed, rel_tol=5e-4), (float(exact), printed)


def test_ici_is_twice_one_link():
    chip = get_chip("tpu-v5e")
    assert chip.bandwidth("ici") == 2 * chip.bandwidth("ici-link") == 90_000_000_000


# Cross-node thresholds in the book's form: per-GPU compute / whole-node egress.
NODE_THRESHOLDS = [
    ("h100", 2475),  # part 12 data parallelism: 2475 across nodes
    ("b200", 5625),  # part 12 Quiz 5: 5625 for a B200 DGX
    ("gb200", 625.0),  # part 12 Appendix A: about 4x better than H100
]


@pytest.mark.parametrize("key, printed", NODE_THRESHOLDS, ids=[k for k, _ in NODE_THRESHOLDS])
def test_cross_node_threshold(key, printed):
    chip = get_chip(key)
    node_egress = chip.nic_bytes_per_s * chip.nvlink_domain
    assert math.isclose(Fraction(chip.flops("bf16"), node_egress), printed, rel_tol=5e-4)


# -- 3. raw catalog values -------------------------------------------------------------

RAW = [
    ("tpu-v3", "pod_chips", 1024),
    ("tpu-v4p", "pod_chips", 4096),
    ("tpu-v5p", "pod_chips", 8960),
    ("tpu-v5e", "pod_chips", 256),
    ("tpu-v6e", "pod_chips", 256),
    ("tpu7x", "pod_chips", 9216),
    ("tpu-v3", "host_chips", 8),
    ("tpu-v4p", "host_chips", 4),
    ("tpu-v5p", "host_chips", 4),
    ("tpu-v5e", "host_chips", 8),
    ("tpu-v6e", "host_chips", 8),
    ("tpu7x", "host_chips", 4),
    ("tpu-v5p", "pod_shape", (16, 20, 28)),
    ("tpu7x", "pod_shape", (4, 4, 576)),
    ("tpu-v5e", "hbm_bytes", 16_000_000_000),
    ("tpu-v5p", "hbm_bytes", 96_000_000_000),
    ("tpu7x", "hbm_bytes", 192_000_000_000),
    ("h100", "hbm_bytes", 80_000_000_000),
    ("h200", "hbm_bytes", 141_000_000_000),
    ("b200", "hbm_bytes", 192_000_000_000),
    ("tpu-v5e", "hbm_bytes_per_s", 820_000_000_000),
    ("tpu-v5p", "hbm_bytes_per_s", 2_800_000_000_000),
    ("h100", "hbm_bytes_per_s", 3_350_000_000_000),
    ("b200", "hbm_bytes_per_s", 8_000_000_000_000),
    ("tpu-v5e", "vmem_bytes", 134_217_728),
    ("tpu-v5e", "vmem_bytes_per_s", 18_040_000_000_000),
    ("tpu-v5p", "ici_link_bytes_per_s", 90_000_000_000),
    ("tpu-v5e", "ici_link_bytes_per_s", 45_000_000_000),
    ("tpu-v5e", "dcn_bytes_per_s", 3_125_000_000),
    ("tpu-v6e", "pcie_bytes_per_s", 32_000_000_000),
    ("tpu-v5p", "cores_per_chip", 2),
    ("tpu-v5e", "cores_per_chip", 1),
    ("tpu-v6e", "mxu_side", 256),
    ("tpu-v5p", "wraparound", "cube"),
    ("tpu-v6e", "wraparound", "size16"),
    ("tpu7x", "wraparound", "unknown"),
    ("h100", "nvlink_domain", 8),
    ("gb200", "nvlink_domain", 72),
    ("h100", "nvlink_bytes_per_s", 450_000_000_000),
    ("h100", "sms", 132),
    ("h100", "tensor_cores", 528),
    ("b200", "cuda_cores", 18944),
    ("tpu-v5e", "price_cents_per_hour", 120),
    ("tpu-v5p", "price_cents_per_hour", 420),
    ("h100", "price_cents_per_hour", 1080),
]


@pytest.mark.parametrize("key, attr, expected", RAW, ids=[f"{k}-{a}" for k, a, _ in RAW])
def test_raw_value(key, attr, expected):
    assert getattr(get_chip(key), attr) == expected


NODE_EGRESS = [
    ("h100", 400_000_000_000),
    ("h200", 400_000_000_000),
    ("b200", 400_000_000_000),
    ("gb200", 3_600_000_000_000),
]


@pytest.mark.parametrize("key, expected", NODE_EGRESS, ids=[k for k, _ in NODE_EGRESS])
def test_node_egress(key, expected):
    chip = get_chip(key)
    assert chip.nic_bytes_per_s * chip.nvlink_domain == expected


FLOPS = [
    ("tpu-v5e", "bf16", 197_000_000_000_000),
    ("tpu-v5p", "bf16", 459_000_000_000_000),
    ("tpu-v5p", "fp32", 14_000_000_000_000),
    ("tpu-v6e", "bf16", 920_000_000_000_000),
    ("tpu7x", "int8", 4_610_000_000_000_000),
    ("tpu7x", "fp8", 4_614_000_000_000_000),
    ("v100", "fp16", 125_000_000_000_000),
    ("h100", "bf16", 990_000_000_000_000),
    ("h200", "bf16", 990_000_000_000_000),
    ("b200", "bf16", 2_250_000_000_000_000),
]


@pytest.mark.parametrize("key, dtype, expected", FLOPS, ids=[f"{k}-{d}" for k, d, _ in FLOPS])
def test_flops_value(key, dtype, expected):
    assert get_chip(key).flops(dtype) == expected


# Values the catalog deliberately leaves out (unknown, or the feature is absent).
ABSENT = [
    ("tpu7x", "mxus_per_core"),
    ("tpu-v6e", "clock_hz"),
    ("b200", "clock_hz"),
    ("gb200", "pcie_bytes_per_s"),
    ("v100", "nvswitches"),
    ("tpu-v5p", "vmem_bytes_per_s"),
    ("h200", "tmem_bytes_per_sm"),
]


@pytest.mark.parametrize("key, attr", ABSENT, ids=[f"{k}-{a}" for k, a in ABSENT])
def test_absent_value(key, attr):
    assert getattr(get_chip(key), attr) is None


@pytest.mark.parametrize(
    "key, dtype",
    [("v100", "bf16"), ("a100", "fp8"), ("h200", "fp32"), ("tpu-v3", "fp8"), ("tpu7x", "int4")],
    ids=lambda v: v,
)
def test_absent_dtype(key, dtype):
    assert dtype not in get_chip(key).dtypes


# -- 4. wraparound rules --------------------------------------------------------------

WRAPS = [
    ("tpu-v5e", (8, 16), (False, True)),
    ("tpu-v5e", (16, 16), (True, True)),
    ("tpu-v5e", (4, 8), (False, False)),
    ("tpu-v6e", (16, 8), (True, False)),
    ("tpu-v5p", (2, 2, 4), (False, False, False)),
    ("tpu-v5p", (4, 4, 8), (True, True, True)),
    ("tpu-v4p", (4, 4, 4), (True, True, True)),
    ("tpu-v4p", (2, 2, 1), (False, False, False)),
]


@pytest.mark.parametrize(
    "key, shape, expected",
    WRAPS,
    ids=[f"{k}-{'x'.join(map(str, s))}" for k, s, _ in WRAPS],
)
def test_wraps(key, shape, expected):
    assert get_chip(key).wraps(shape) == expected


@pytest.mark.parametrize("key", ["tpu-v3", "tpu7x", "h100"])
def test_wraps_without_rule(key):
    with pytest.raises(BadValueError, match=key):
        get_chip(key).wraps((4, 4, 4))


# -- 5. invalid catalog files ---------------------------------------------------------

GOOD_CHIP = """\
[chips.x1]
name = "X1"
family = "tpu"
source = "test"
flops_per_s = { bf16 = 100 }
hbm_bytes = 10
hbm_bytes_per_s = 5
"""

BAD_FILES = [
    ("not-toml", "[chips.x1\nname = ", "not valid TOML"),
    ("no-chips", 'title = "nothing here"\n', "no [chips.NAME] tables found"),
    ("empty-chips", "[chips]\n", "no [chips.NAME] tables found"),
    ("chip-not-table", "[chips]\nx1 = 3\n", "must be a table"),
    ("missing-required", GOOD_CHIP.replace("hbm_bytes = 10\n", ""), "lacks required key(s) hbm_bytes"),
    ("unknown-key", GOOD_CHIP + "hbm_gb = 16\n", "unknown key 'hbm_gb'"),
    ("negative", GOOD_CHIP.replace("hbm_bytes = 10", "hbm_bytes = -10"), "chip 'x1', key 'hbm_bytes'"),
    ("zero", GOOD_CHIP + "sms = 0\n", "chip 'x1', key 'sms'"),
    ("float", GOOD_CHIP.replace("hbm_bytes_per_s = 5", "hbm_bytes_per_s = 8.2e11"), "key 'hbm_bytes_per_s'"),
    ("bool-as-int", GOOD_CHIP + "ici_links = true\n", "key 'ici_links'"),
    ("bad-dtype", GOOD_CHIP.replace("bf16 = 100", "bf32 = 100"), "not 'bf32'"),
    ("bad-rate", GOOD_CHIP.replace("bf16 = 100", "bf16 = 1.5"), "key 'flops_per_s'"),
    ("empty-flops", GOOD_CHIP.replace("{ bf16 = 100 }", "{}"), "key 'flops_per_s'"),
    ("bad-family", GOOD_CHIP.replace('"tpu"', '"npu"'), "one of tpu, gpu"),
    ("bad-wraparound", GOOD_CHIP + 'wraparound = "ring"\n', "key 'wraparound'"),
    ("bad-shape", GOOD_CHIP + "pod_shape = [16, 0]\n", "key 'pod_shape'"),
    ("bad-megacore", GOOD_CHIP + "megacore = 1\n", "true or false"),
    ("empty-name", GOOD_CHIP.replace('"X1"', '"  "'), "key 'name'"),
    ("31-digit-int", GOOD_CHIP.replace("hbm_bytes = 10", "hbm_bytes = " + "9" * 31),
     "chip 'x1', key 'hbm_bytes' = <an integer of 31 digits> must be a whole number from 1 to 10^15 bytes"),
    ("31-digit-rate", GOOD_CHIP.replace("bf16 = 100", "bf16 = " + "9" * 31), "key 'flops_per_s'"),
    ("5000-digit-int", GOOD_CHIP.replace("hbm_bytes = 10", "hbm_bytes = " + "9" * 5000), "more than 4300 digits"),
    ("deep-nesting", "a = " + "[" * 100_000, "nested too deeply"),
    ("bad-chip-key", GOOD_CHIP.replace("[chips.x1]", '[chips."a_b&c"]'), "chip name 'a_b&c' is not allowed"),
    ("name-with-newline", GOOD_CHIP.replace('"X1"', '"X\\n1"'), "one line of at most 2000 printable characters"),
]


@pytest.mark.parametrize("text, fragment", [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES])
def test_invalid_catalog(tmp_path, text, fragment):
    path = tmp_path / "hw.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    message = str(info.value)
    assert fragment in message
    assert str(path) in message


def test_minimal_catalog_loads(tmp_path):
    path = tmp_path / "hw.toml"
    path.write_text(GOOD_CHIP, encoding="utf-8")
    catalog = load_catalog(path)
    chip = get_chip("x1", catalog)
    assert chip.flops("bf16") == 100 and chip.hbm_bytes == 10
    assert chip.notes == "" and chip.pod_shape is None


def test_missing_file(tmp_path):
    path = tmp_path / "absent.toml"
    with pytest.raises(CatalogError, match="cannot read hardware file"):
        load_catalog(path)


def test_catalog_error_is_a_value_error(tmp_path):
    path = tmp_path / "hw.toml"
    path.write_text("", encoding="utf-8")
    with pytest.raises(ValueError):
        load_catalog(path)


# -- 6. unknown or missing dtypes and levels ------------------------------------------


def test_missing_dtype_lists_what_the_chip_has():
    with pytest.raises(BadValueError) as info:
        get_chip("v100").flops("bf16")
    message = str(info.value)
    assert "v100" in message and "bf16" in message
    assert "fp16, fp32" in message


def test_unknown_dtype():
    with pytest.raises(UnknownNameError, match="fp64"):
        get_chip("h100").flops("fp64")


@pytest.mark.parametrize(
    "key, level",
    [("tpu-v5p", "vmem"), ("h100", "ici"), ("tpu-v5e", "nvlink"), ("gb200", "pcie"), ("tpu-v2", "dcn"),
     ("tpu-v2", "pcie")],
    ids=lambda v: v,
)
def test_missing_bandwidth(key, level):
    with pytest.raises(BadValueError, match=f"no {level} bandwidth"):
        get_chip(key).bandwidth(level)


def test_unknown_level():
    with pytest.raises(UnknownNameError, match="level"):
        get_chip("h100").bandwidth("l2")


# -- 7. the hardware chapters' numbers: TPU v2, H800, per-SM fields, racks, switches -------------------------
#
# Sources (hardware.toml names them per chip): TPU v2 from the profiling chapter (23e12 FLOP/s per core,
# 1.2e11 B/s bidirectional ICI), Google's system architecture table (16 GiB, 600 GB/s, 256-chip pod) and
# Jouppi et al. 2020 (700 MHz, one MXU per core); H800 from the GPU chapter's DeepSeek-V3 example (990e12),
# NVIDIA's H800 SXM specifications (NVLink 400 GB/s both directions = 200 GB/s each way; the book assumes 300)
# and DeepSeek's report (8 NVLink links, 50 GB/s InfiniBand); per-SM
# fields from gpus.md 'What Is a GPU?' and 'Memory' (4 subpartitions, 16384 registers, 256 registers per
# thread, FLOPs per Tensor Core per cycle 256/512/1024/2048, L2 5.5 TB/s measured), CUDA cores per
# subpartition = cuda_cores / sms / 4, the CUDA guide's 64 resident warps; racks and scalable units from
# 'Beyond the node level' (32-node SUs, 8 NVL72 racks = 576 GPUs) and the TPU v4 paper (64-chip cubes).

# The NVLink collective latency floor: llm-analysis's intra_node_min_message_latency, 8e-06 s in every one of its GPU
# configurations; the book gives no GPU latency (reference hardware.md, "GPU latency").
LATENCY_ROWS = [(key, "nvlink_collective_latency_ns", 8000) for key in ("v100", "a100", "h100", "h800", "h200", "b200",
                                                                         "gb200")]

NEW_ROWS = [*LATENCY_ROWS,
    ("tpu-v2", "flops_per_s.bf16", 46_000_000_000_000),
    ("tpu-v2", "hbm_bytes", 16_000_000_000),
    ("tpu-v2", "hbm_bytes_per_s", 600_000_000_000),
    ("tpu-v2", "cores_per_chip", 2),
    ("tpu-v2", "megacore", False),
    ("tpu-v2", "mxus_per_core", 1),
    ("tpu-v2", "mxu_side", 128),
    ("tpu-v2", "clock_hz", 700_000_000),
    ("tpu-v2", "ici_link_bytes_per_s", 60_000_000_000),
    ("tpu-v2", "ici_links", 4),
    ("tpu-v2", "torus_dims", 2),
    ("tpu-v2", "pod_shape", (16, 16)),
    ("tpu-v2", "host_shape", (2, 2)),
    ("tpu-v2", "wraparound", 'unknown'),
    ("tpu-v2", "hop_latency_ns", 1_000),
    ("tpu-v4p", "vpu_sublanes", 8),
    ("tpu-v4p", "vpu_lanes", 128),
    ("tpu-v4p", "rack_chips", 64),
    ("tpu-v5p", "vpu_sublanes", 8),
    ("tpu-v5p", "vpu_lanes", 128),
    ("tpu-v5p", "vpu_alus_per_lane", 4),
    ("tpu-v5p", "rack_chips", 64),
    ("v100", "subpartitions_per_sm", 4),
    ("v100", "cuda_cores_per_subpartition", 16),
    ("v100", "registers_per_subpartition", 16_384),
    ("v100", "max_registers_per_thread", 256),
    ("v100", "max_warps_per_sm", 64),
    ("v100", "tensor_core_flops_per_cycle", 256),
    ("v100", "scaleout_switch", 'ib-edr'),
    ("a100", "subpartitions_per_sm", 4),
    ("a100", "cuda_cores_per_subpartition", 16),
    ("a100", "registers_per_subpartition", 16_384),
    ("a100", "max_registers_per_thread", 256),
    ("a100", "max_warps_per_sm", 64),
    ("a100", "tensor_core_flops_per_cycle", 512),
    ("a100", "scaleout_switch", 'ib-hdr'),
    ("h100", "l2_bytes_per_s", 5_500_000_000_000),
    ("h100", "subpartitions_per_sm", 4),
    ("h100", "cuda_cores_per_subpartition", 32),
    ("h100", "registers_per_subpartition", 16_384),
    ("h100", "max_registers_per_thread", 256),
    ("h100", "max_warps_per_sm", 64),
    ("h100", "tensor_core_flops_per_cycle", 1_024),
    ("h100", "nvlink_switch", 'nvswitch-gen3'),
    ("h100", "scaleout_switch", 'ib-ndr'),
    ("h100", "su_nodes", 32),
    ("h800", "flops_per_s.bf16", 990_000_000_000_000),
    ("h800", "flops_per_s.fp16", 990_000_000_000_000),
    ("h800", "flops_per_s.fp8", 1_980_000_000_000_000),
    ("h800", "flops_per_s.int8", 1_980_000_000_000_000),
    ("h800", "hbm_bytes", 80_000_000_000),
    ("h800", "hbm_bytes_per_s", 3_350_000_000_000),
    ("h800", "smem_bytes", 262_144),
    ("h800", "l2_bytes", 52_428_800),
    ("h800", "register_bytes_per_sm", 262_144),
    ("h800", "subpartitions_per_sm", 4),
    ("h800", "cuda_cores_per_subpartition", 32),
    ("h800", "registers_per_subpartition", 16_384),
    ("h800", "max_registers_per_thread", 256),
    ("h800", "max_warps_per_sm", 64),
    ("h800", "tensor_core_flops_per_cycle", 1_024),
    ("h800", "clock_hz", 1_590_000_000),
    ("h800", "sms", 132),
    ("h800", "tensor_cores", 528),
    ("h800", "cuda_cores", 16_896),
    ("h800", "boost_clock_hz", 1_980_000_000),
    ("h800", "nvlink_links", 8),
    ("h800", "nvlink_link_bytes_per_s", 25_000_000_000),
    ("h800", "nvlink_bytes_per_s", 200_000_000_000),  # NVIDIA's H800 SXM: 400 GB/s counting both directions
    ("h800", "nvlink_domain", 8),
    ("h800", "nvswitches", 4),
    ("h800", "nic_bytes_per_s", 50_000_000_000),
    ("h800", "nvlink_switch", 'nvswitch-gen3'),
    ("h800", "scaleout_switch", 'ib-ndr'),
    ("h800", "pcie_bytes_per_s", 64_000_000_000),
    ("h200", "subpartitions_per_sm", 4),
    ("h200", "cuda_cores_per_subpartition", 32),
    ("h200", "registers_per_subpartition", 16_384),
    ("h200", "max_registers_per_thread", 256),
    ("h200", "max_warps_per_sm", 64),
    ("h200", "nvlink_switch", 'nvswitch-gen3'),
    ("h200", "scaleout_switch", 'ib-ndr'),
    ("b200", "subpartitions_per_sm", 4),
    ("b200", "cuda_cores_per_subpartition", 32),
    ("b200", "registers_per_subpartition", 16_384),
    ("b200", "max_registers_per_thread", 256),
    ("b200", "max_warps_per_sm", 64),
    ("b200", "tensor_core_flops_per_cycle", 2_048),
    ("b200", "nvlink_switch", 'nvswitch-gen4'),
    ("b200", "scaleout_switch", 'ib-ndr'),
    ("b200", "su_nodes", 32),
    ("gb200", "subpartitions_per_sm", 4),
    ("gb200", "cuda_cores_per_subpartition", 32),
    ("gb200", "registers_per_subpartition", 16_384),
    ("gb200", "max_registers_per_thread", 256),
    ("gb200", "max_warps_per_sm", 64),
    ("gb200", "tensor_core_flops_per_cycle", 2_048),
    ("gb200", "nvlink_switch", 'nvswitch-gen4'),
    ("gb200", "scaleout_switch", 'ib-ndr'),
    ("gb200", "su_nodes", 8),
    ("gb200", "rack_chips", 72),
]


@pytest.mark.parametrize("key, attr, expected", NEW_ROWS, ids=[f"{k}-{a}" for k, a, _ in NEW_ROWS])
def test_new_catalog_value(key, attr, expected):
    chip = get_chip(key)
    if attr.startswith("flops_per_s."):
        assert chip.flops(attr.split(".", 1)[1]) == expected
    else:
        assert getattr(chip, attr) == expected


NEW_FIELDS = {"subpartitions_per_sm", "cuda_cores_per_subpartition", "registers_per_subpartition",
              "max_registers_per_thread", "max_warps_per_sm", "l2_bytes_per_s", "tensor_core_flops_per_cycle",
              "vpu_sublanes", "vpu_lanes", "vpu_alus_per_lane", "nvlink_switch", "scaleout_switch", "su_nodes",
              "rack_chips", "nvlink_collective_latency_ns"}


def test_every_new_number_has_a_row():
    from dataclasses import fields

    rows = {(k, a) for k, a, _ in NEW_ROWS}
    for chip in default_catalog().every_chip():
        for f in fields(chip):
            value = getattr(chip, f.name)
            if value is None or f.name in ("key", "name", "family", "source", "notes", "spec_table", "achievable"):
                continue
            if chip.spec_table and f.name not in NEW_FIELDS:
                continue
            if f.name == "flops_per_s":
                assert all((chip.key, f"flops_per_s.{d}") in rows for d in value), chip.key
            else:
                assert (chip.key, f.name) in rows, (chip.key, f.name)


@pytest.mark.parametrize("key", GPUS + ["h800"])
def test_per_sm_fields_agree_with_the_chip_totals(key):
    chip = get_chip(key)
    assert chip.sms * chip.subpartitions_per_sm * chip.cuda_cores_per_subpartition == chip.cuda_cores
    assert chip.subpartitions_per_sm * chip.registers_per_subpartition * 4 == chip.register_bytes_per_sm


def test_h800_records_the_nvlink_conflict():
    # NVIDIA's H800 SXM: 400 GB/s of NVLink counting both directions = 8 links x 25 GB/s = 200 GB/s each way;
    # gpus.md assumes 300 GB/s, DeepSeek-V3's report measures about 160 (erratum 15): both recorded in the notes
    chip = get_chip("h800")
    assert chip.nvlink_bytes_per_s == 200_000_000_000
    assert chip.nvlink_links * chip.nvlink_link_bytes_per_s == chip.nvlink_bytes_per_s
    assert chip.derived()["nvlink_both_directions_bytes_per_s"] == 400_000_000_000
    assert "300 GB/s" in chip.notes and "160 GB/s" in chip.notes


# (switch, ports, port bytes/s, capacity): gpus.md (NVSwitch 64 x 25 GB/s = 1.6 TB/s; NDR 64 x 50 GB/s =
# 3.2 TB/s), the book's link counts for NVSwitch gen 4, NVIDIA datasheets for the others
SWITCHES = [
    ("nvswitch-gen3", 64, 25_000_000_000, 1_600_000_000_000),
    ("nvswitch-gen4", 72, 50_000_000_000, 3_600_000_000_000),
    ("ib-edr", 36, 12_500_000_000, 450_000_000_000),
    ("ib-hdr", 40, 25_000_000_000, 1_000_000_000_000),
    ("ib-ndr", 64, 50_000_000_000, 3_200_000_000_000),
    ("ib-xdr", 144, 100_000_000_000, 14_400_000_000_000),
    ("eth-800g", 64, 100_000_000_000, 6_400_000_000_000),
]


@pytest.mark.parametrize("key, ports, per_port, capacity", SWITCHES, ids=[s[0] for s in SWITCHES])
def test_switch(key, ports, per_port, capacity):
    switch = default_catalog().switch(key)
    assert (switch.ports, switch.port_bytes_per_s, switch.capacity_bytes_per_s) == (ports, per_port, capacity)
    assert switch.source.strip()


def test_switches_are_exactly_these():
    assert list(default_catalog().switches) == [s[0] for s in SWITCHES]


@pytest.mark.parametrize("key, nvlink, scaleout", [
    ("h100", "nvswitch-gen3", "ib-ndr"), ("b200", "nvswitch-gen4", "ib-ndr"), ("gb200", "nvswitch-gen4", "ib-ndr"),
    ("a100", None, "ib-hdr"), ("v100", None, "ib-edr")], ids=lambda v: str(v))
def test_chip_switches(key, nvlink, scaleout):
    chip = get_chip(key)
    assert (chip.nvlink_switch, chip.scaleout_switch) == (nvlink, scaleout)


@pytest.mark.parametrize("key, field, expected", [
    ("h100", "node_egress_bytes_per_s", 400_000_000_000), ("gb200", "node_egress_bytes_per_s", 3_600_000_000_000),
    ("h100", "su_chips", 256), ("gb200", "su_chips", 576), ("tpu-v5p", "ici_egress_bytes_per_s", 540_000_000_000),
    ("tpu-v5e", "pod_hbm_bytes", 4_096_000_000_000), ("tpu-v5p", "pod_hbm_bytes", 860_160_000_000_000),
    ("h100", "smem_bytes_per_chip", 33 * 2**20)], ids=lambda v: str(v))
def test_derived_view(key, field, expected):
    # tpus.md Worked Problems Q2: v5e pod 4 TB of HBM, v5p 860 TB; gpus.md: 400 GB/s, 3.6 TB/s, 540 GB/s
    assert get_chip(key).derived()[field] == expected


# -- 8. the hardware command group --------------------------------------------------------------------------


def _cli(*args):
    import json

    from click.testing import CliRunner

    from scalemath.cli import main

    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output if "json" not in args else json.loads(result.output)


def test_show_json_has_every_field_derived_totals_and_switches():
    data = _cli("hardware", "show", "h100", "--format", "json")
    assert data["sms"] == 132 and data["subpartitions_per_sm"] == 4 and data["su_nodes"] == 32
    assert data["derived"]["node_egress_bytes_per_s"] == 400_000_000_000
    assert data["switches"]["scaleout"]["capacity_bytes_per_s"] == 3_200_000_000_000
    assert data["switches"]["nvlink"]["ports"] == 64


def test_show_json_tpu_pod_sizes():
    data = _cli("hardware", "show", "tpu-v5p", "--format", "json")
    assert data["derived"]["pod_chips"] == 8960 and data["derived"]["host_chips"] == 4
    assert data["derived"]["ici_egress_bytes_per_s"] == 540_000_000_000


def test_show_text_has_derived_lines_and_switches():
    out = _cli("hardware", "show", "gb200")
    assert "node_egress_bytes_per_s" in out and "3.6 TB/s" in out and "scaleout switch ib-ndr" in out


def test_show_a_switch_and_list_switches():
    assert _cli("hardware", "show", "ib-ndr", "--format", "json")["capacity_bytes_per_s"] == 3_200_000_000_000
    assert [s["key"] for s in _cli("hardware", "list", "--switches", "--format", "json")] == [s[0] for s in SWITCHES]
    assert "nvswitch-gen4" in _cli("hardware", "list", "--switches")


def test_list_shows_the_chips_outside_the_tables():
    out = _cli("hardware", "list")
    assert "h800" in out and "tpu-v2" in out and "outside its spec tables" in out
    assert [c["key"] for c in _cli("hardware", "list", "--format", "json")] == EVERY_CHIP


# -- the NVLink collective latency floor ------------------------------------------------------------------------


@pytest.mark.parametrize("latency_ns, expected", [(8000, Fraction(8, 10**6)), (5000, Fraction(5, 10**6)),
                                                  (None, Fraction(8, 10**6))], ids=["catalog", "own-value", "absent"])
def test_serving_search_reads_the_latency_floor_from_the_catalog(latency_ns, expected):
    # the serving search's t_coll is the chip's catalog field; a chip without it (a user's file) keeps 8 us
    import dataclasses

    from scalemath.search import serve_space as serving

    chip = dataclasses.replace(get_chip("h100"), nvlink_collective_latency_ns=latency_ns)
    assert serving.comm_fixed(chip)["t_coll"] == expected
    assert serving.collective_latency(chip) == expected


def test_hardware_show_prints_the_latency_floor():
    from click.testing import CliRunner

    from scalemath.cli import main

    out = CliRunner().invoke(main, ["hardware", "show", "b200"]).output
    assert "nvlink_collective_latency_ns" in out and "8000 ns" in out
    assert "llm-analysis" in get_chip("b200").source
