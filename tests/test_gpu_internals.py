"""Inside one chip: the gpu.* and tpu.* quantities of symbolic/chip_internals.py, bound from the catalog.

Each expected figure is written out with where it comes from (gpus.md / tpus.md, or arithmetic on the
catalog's own numbers, marked [D]). A quantity whose catalog field is missing names the chip and the field.
"""

from __future__ import annotations

import json

import pytest
import sympy as sp
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.errors import BadValueError
from scalemath.catalog.hardware import default_catalog, get_chip
from scalemath.quantities import QUANTITIES, Context, evaluate, get

R = sp.Rational
MiB = 2**20


def value(quantity, chip, **given):
    return evaluate(get(quantity), Context(chip=chip), given).value


# (quantity, chip, given, exact value)
CASES = [
    # CUDA cores: n_SM x 4 x lanes (gpus.md Quiz 1 Q1; V100 and A100 have 16 lanes per subpartition)
    ("gpu.cuda_cores", "v100", {}, 5120),
    ("gpu.cuda_cores", "a100", {}, 6912),
    ("gpu.cuda_cores", "h100", {}, 16896),
    ("gpu.cuda_cores", "h800", {}, 16896),
    ("gpu.cuda_cores", "b200", {}, 18944),
    ("gpu.sm.cuda_cores", "h100", {}, 128),
    ("gpu.sm.cuda_cores", "a100", {}, 64),
    # Tensor Cores: NVIDIA counts 8 per V100 SM, 4 later (gpus.md 'GPUs vs. TPUs': H100 528)
    ("gpu.tensor_cores", "v100", {}, 640),
    ("gpu.tensor_cores", "h100", {}, 528),
    ("gpu.tensor_cores", "gb200", {}, 592),
    ("gpu.warp_schedulers", "h100", {}, 528),
    ("gpu.warp_schedulers", "b200", {}, 592),
    # registers: 4 x 16384 x 4 B = 256 KiB per SM (gpus.md 'Memory'); per chip 132 x 256 KiB = 33 MiB
    ("gpu.sm.register_bytes", "h100", {}, 262144),
    ("gpu.sm.register_bytes", "v100", {}, 262144),
    ("gpu.register_bytes", "h100", {}, 33 * MiB),
    ("gpu.register_bytes", "b200", {}, 37 * MiB),  # [D] 148 x 256 KiB
    ("gpu.smem_bytes", "a100", {}, 108 * 192 * 1024),  # [D] 108 x 192 KiB
    ("gpu.onchip_bytes", "h100", {}, 66 * MiB),
    ("gpu.sm.l2_bytes", "h100", {}, R(52428800, 132)),  # [D] 50 MiB over 132 SMs
    # resident warps: 8 when every thread uses 256 registers (gpus.md 'Memory'); the 64 cap otherwise
    ("gpu.sm.resident_warps", "h100", {}, 8),
    ("gpu.sm.resident_warps", "h100", {"r_thread": 64}, 32),
    ("gpu.sm.resident_warps", "h100", {"r_thread": 24}, 64),
    ("gpu.sm.resident_warps", "h100", {"r_thread": 100}, 20),  # [D] floor(65536 / 100 / 32) = 20
    # Tensor Cores per cycle (gpus.md 'What Is a GPU?'): C / (n_SM x 4 x f)
    ("gpu.sm.tensor_flops_per_s", "h100", {}, 7_500_000_000_000),
    ("gpu.tensor_core.flops_per_cycle", "h100", {"f_clk": 1_760_000_000}, R(990 * 10**12, 132 * 4 * 1_760_000_000)),
    ("gpu.tensor_core.flops_per_cycle", "a100", {}, R(310 * 10**12, 108 * 4 * 1_100_000_000)),  # [D] at base clock
    ("gpu.tensor_core.implied_clock", "h100", {}, R(990 * 10**12, 528 * 1024)),
    # vector FLOPs (gpus.md Quiz 1 Q2): 16896 x 1.59e9 and x 1.98e9; with FMA x 2
    ("gpu.vector.flops_per_s", "h100", {}, 16896 * 1_590_000_000),
    ("gpu.vector.flops_per_s_boost", "h100", {}, 16896 * 1_980_000_000),
    ("gpu.vector.fma_flops_per_s", "h100", {}, 2 * 16896 * 1_980_000_000),
    ("gpu.vector.fma_flops_per_s_base", "v100", {}, 2 * 5120 * 1_250_000_000),
    ("gpu.vector.implied_clock", "b200", {}, R(80 * 10**12, 37888)),
    ("gpu.vector.tensor_ratio", "h100", {}, 15),
    ("gpu.vector.tensor_ratio", "b200", {}, R(2250, 80)),
    ("gpu.vector.tensor_ratio_no_fma", "h100", {}, R(990 * 10**12, 16896 * 1_980_000_000)),
    ("gpu.vector.hbm_intensity_no_fma", "h100", {}, R(16896 * 1_980_000_000, 3_350_000_000_000)),
    # ratios between levels
    ("gpu.ratio.l2_to_hbm", "h100", {}, R(5500, 3350)),
    ("gpu.ratio.hbm_to_nvlink", "h100", {}, R(3350, 450)),
    ("gpu.ratio.nvlink_to_nic", "h100", {}, 9),
    ("gpu.ratio.nvlink_to_nic", "gb200", {}, 18),
    # H800: NVIDIA's 400 GB/s of NVLink (both directions) = 200e9 each way over 50 GB/s of InfiniBand = 4;
    # with the 160 GB/s DeepSeek-V3's report measures, its "roughly 3.2 times" (160 / 50)
    ("gpu.ratio.nvlink_to_nic", "h800", {}, 4),
    ("gpu.ratio.nvlink_to_nic", "h800", {"W_gpu": 160 * 10**9}, sp.Rational(16, 5)),
    # TPU vector unit (tpus.md Appendix A; roofline.md footnote: about 7e12 per core on v5p)
    ("tpu.vpu.alus_per_core", "tpu-v5p", {}, 4096),
    ("tpu.vpu.alus", "tpu-v5p", {}, 8192),
    ("tpu.vpu.flops_per_s_per_core", "tpu-v5p", {}, 4096 * 1_750_000_000),
    ("tpu.vpu.flops_per_s", "tpu-v5p", {}, 8192 * 1_750_000_000),
    ("tpu.vpu.mxu_ratio", "tpu-v5p", {}, R(459, 14)),  # about 30x (2026 text)
    # ICI egress: v5p 6 x 90 GB/s = 540 GB/s (gpus.md 'Beyond the node level')
    ("tpu.ici.egress", "tpu-v5p", {}, 540_000_000_000),
    ("tpu.ici.egress", "tpu-v5e", {}, 180_000_000_000),
    ("tpu.ici.egress", "tpu-v2", {}, 240_000_000_000),
    ("tpu.ratio.vmem_to_hbm", "tpu-v5e", {}, 22),
    ("tpu.ratio.hbm_to_ici", "tpu-v5e", {}, R(82, 9)),
    ("tpu.ratio.hbm_to_ici_egress", "tpu-v5p", {}, R(2800, 540)),
    ("tpu.ratio.ici_to_dcn", "tpu-v5p", {}, R(180, R(25, 4))),
    ("tpu.ratio.ici_to_pcie", "tpu-v6e", {}, R(180, 32)),
    # aggregate HBM bandwidth of a pod (tpus.md Worked Problems Q2 pattern): v5e 256 x 8.2e11
    ("pod.hbm_bytes_per_s", "tpu-v5e", {}, 256 * 820_000_000_000),
    ("pod.hbm_bytes_per_s", "tpu-v5p", {}, 8960 * 2_800_000_000_000),
    ("pod.hbm_bytes_per_s", "tpu-v5p", {"X": 4, "Y": 4, "Z": 4}, 64 * 2_800_000_000_000),
]


@pytest.mark.parametrize("quantity, chip, given, expected", CASES,
                         ids=[f"{q}-{c}{'-' + '-'.join(f'{k}{v}' for k, v in g.items()) if g else ''}"
                              for q, c, g, _ in CASES])
def test_value(quantity, chip, given, expected):
    assert value(quantity, chip, **given) == sp.nsimplify(expected)


@pytest.mark.parametrize("key", [c.key for c in default_catalog().every_chip() if c.family == "gpu"])
def test_counts_agree_with_the_catalog(key):
    chip = get_chip(key)
    assert value("gpu.cuda_cores", key) == chip.cuda_cores
    assert value("gpu.tensor_cores", key) == chip.tensor_cores
    assert value("gpu.sm.register_bytes", key) == chip.register_bytes_per_sm


# (quantity, chip, message fragment): a catalog value missing names the chip and the field
MISSING = [
    ("gpu.vector.flops_per_s", "b200", "b200 has no clock_hz"),
    ("gpu.vector.flops_per_s_boost", "gb200", "gb200 has no boost_clock_hz"),
    ("gpu.ratio.l2_to_hbm", "a100", "a100 has no l2_bytes_per_s"),
    ("gpu.tensor_core.implied_clock", "h200", "h200 has no tensor_core_flops_per_cycle"),
    ("gpu.vector.tensor_ratio", "h200", "h200 has no fp32 rate"),
    ("tpu.vpu.alus", "tpu-v5e", "tpu-v5e has no vpu_alus_per_lane"),
    ("tpu.vpu.alus", "tpu-v4p", "tpu-v4p has no vpu_alus_per_lane"),
    ("tpu.ratio.vmem_to_hbm", "tpu-v5p", "tpu-v5p has no vmem_bytes_per_s"),
    ("tpu.ratio.ici_to_pcie", "tpu-v2", "tpu-v2 has no pcie_bytes_per_s"),
    ("gpu.cuda_cores", "tpu-v5e", "tpu-v5e has no cuda_cores_per_subpartition"),
]


@pytest.mark.parametrize("quantity, chip, fragment", MISSING, ids=[f"{q}-{c}" for q, c, _ in MISSING])
def test_missing_catalog_value_names_chip_and_field(quantity, chip, fragment):
    with pytest.raises(BadValueError, match=fragment):
        value(quantity, chip)


def test_given_value_replaces_a_missing_one():
    # the B200 clock the book leaves out, given by hand: 18944 x 1.86e9
    assert value("gpu.vector.flops_per_s", "b200", f_clk=1_860_000_000) == 18944 * 1_860_000_000


def test_every_step_has_a_reason_and_a_unit():
    names = [n for n in QUANTITIES if n.startswith(("gpu.sm.", "gpu.vector.", "gpu.tensor", "gpu.ratio.", "tpu."))]
    assert len(names) >= 25
    for name in names:
        for step in get(name).derivation.steps:
            assert step.why and step.unit, (name, step.label)


def test_derive_cli_json():
    result = CliRunner().invoke(main, ["derive", "gpu.tensor_core.flops_per_cycle", "--chip", "h100",
                                       "--set", "f_clk=1.76e9", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert round(data["value"]) == 1065 and data["given"]["n_sm"] == 132 and data["given"]["n_sub"] == 4
    assert [s["label"] for s in data["steps"]][-1] == r"F_{\mathrm{TC}}"


def test_derive_cli_missing_clock_is_one_clean_line():
    result = CliRunner().invoke(main, ["derive", "gpu.vector.flops_per_s", "--chip", "b200"])
    assert result.exit_code != 0
    assert "b200 has no clock_hz in the catalog" in result.output and "Traceback" not in result.output


def test_quantities_topic_gpu_lists_the_new_quantities():
    result = CliRunner().invoke(main, ["quantities", "--topic", "gpu", "--format", "json"])
    names = {q["name"] for q in json.loads(result.output)}
    assert {"gpu.cuda_cores", "gpu.node.capacity", "gpu.cluster.spine_switches", "gpu.all_gather.time"} <= names
