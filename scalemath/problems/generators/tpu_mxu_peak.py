"""A TPU's peak matmul rate from its systolic arrays (tpus.md, 'What Is a TPU?' and Appendix B)."""

from __future__ import annotations

from ...hardware import get_chip
from ..draws import ask, pick_chip
from ..registry import Generator, register

NEEDS = ("mxu_side", "mxus_per_core", "clock_hz")


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=NEEDS, dtypes=["bf16"])
    return {"chip": chip.key, "cores": chip.cores_per_chip or 1, "catalog_bf16": chip.flops_per_s["bf16"]}


def solve(p):
    return [ask("per_cycle", "FLOPs per cycle of one MXU", "mxu.flops_per_cycle", chip=p["chip"]),
            ask("peak", "peak matmul FLOPs/s of the chip", "mxu.peak_flops_per_s", chip=p["chip"])]


def check(p):
    chip = get_chip(p["chip"])
    side = chip.mxu_side
    alus = side * side                    # one multiply-accumulate cell per grid position
    per_cycle = 2 * alus                  # a multiply and an add in every cell, every cycle
    mxus = (chip.cores_per_chip or 1) * chip.mxus_per_core
    return {"per_cycle": per_cycle, "peak": per_cycle * mxus * chip.clock_hz}


register(Generator("tpu_mxu_peak", "tpu", "Peak FLOPs/s from the MXUs",
                   "tpus.md, 'What Is a TPU?' and Appendix B", draw, solve, check))
