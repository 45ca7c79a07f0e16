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
from scalemath.hardware import default_catalog, get_chip, load_catalog

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
     "chip 'x1', key 'hbm_bytes' = <an integer of 31 digits> must be a positive integer of at most 30 digits"),
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
