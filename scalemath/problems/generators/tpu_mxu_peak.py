"""A TPU's peak matmul rate from its systolic arrays (tpus.md, 'What Is a TPU?' and Appendix B)."""

from __future__ import annotations

from ...catalog.hardware import get_chip
from fractions import Fraction

from ..draws import MODEL_SHAPES, ask, pick, pick_chip, pow2
from ..registry import Generator, register

NEEDS = ("mxu_side", "mxus_per_core", "clock_hz")


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=NEEDS, dtypes=["bf16"])
    # only a few chips list their MXUs, so the problem also varies the matmul it times at that peak
    model, d, f = pick(rng, MODEL_SHAPES)
    return {"chip": chip.key, "cores": chip.cores_per_chip or 1, "catalog_bf16": chip.flops_per_s["bf16"],
            "model": model, "D": d, "F": f, "B": pow2(rng, 6, 14), "mfu": pick(rng, (40, 50, 60, 70))}


def solve(p):
    peak = ask("peak", "peak matmul FLOPs/s of the chip", "mxu.peak_flops_per_s", chip=p["chip"])
    rate = peak.value * Fraction(p["mfu"], 100)
    return [ask("per_cycle", "FLOPs per cycle of one MXU", "mxu.flops_per_cycle", chip=p["chip"]), peak,
            ask("t_matmul", "time of the layer's matmul at the given share of that peak", "matmul.t_math",
                given={"B": p["B"], "D": p["D"], "F": p["F"], "C": rate})]


def check(p):
    chip = get_chip(p["chip"])
    side = chip.mxu_side
    alus = side * side                    # one multiply-accumulate cell per grid position
    per_cycle = 2 * alus                  # a multiply and an add in every cell, every cycle
    mxus = (chip.cores_per_chip or 1) * chip.mxus_per_core
    peak = per_cycle * mxus * chip.clock_hz
    cycles = Fraction(p["B"] * p["D"] * p["F"], alus * mxus)   # multiply-adds over the cells working each cycle
    return {"per_cycle": per_cycle, "peak": peak,
            "t_matmul": cycles / (chip.clock_hz * Fraction(p["mfu"], 100))}


register(Generator("tpu_mxu_peak", "tpu", "Peak FLOPs/s from the MXUs",
                   "tpus.md, 'What Is a TPU?' and Appendix B", draw, solve, check))
