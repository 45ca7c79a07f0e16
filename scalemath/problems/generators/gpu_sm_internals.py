"""Inside a GPU (gpus.md, 'What Is a GPU?', 'Memory' and Quiz 1): Tensor Cores per chip, the clock the
datasheet's peak implies from the SM count and the FLOPs per Tensor Core per cycle, the register file of
one SM, the warps an SM keeps resident when each thread uses r registers, and the SMEM of the whole chip.

Engine route: the registered quantities ``gpu.tensor_cores``, ``gpu.tensor_core.implied_clock``,
``gpu.sm.register_bytes``, ``gpu.sm.resident_warps`` and ``gpu.smem_bytes`` on the drawn chip. Second
route: plain integer and Fraction arithmetic on the catalog's per-SM fields, counted out here.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import ask, pick, whole_check
from ..registry import Generator, register

SOURCE = "gpus.md, 'What Is a GPU?', 'Memory' and 'Quiz 1: GPU hardware'"
CHIPS = ("a100", "h100", "b200")
#: registers per thread a kernel might use (the hardware allows up to 255)
REGISTERS = (32, 40, 48, 56, 64, 72, 80, 96, 112, 128, 144, 168, 192, 224, 255)
WARP = 32


def draw(rng):
    return {"chip": pick(rng, CHIPS), "r_thread": pick(rng, REGISTERS)}


def solve(p):
    chip, r = p["chip"], p["r_thread"]
    warps = ask("warps", "warps resident on one SM", "gpu.sm.resident_warps", chip=chip, given={"r_thread": r})
    by_regs = warps.evaluated.steps[0].value / WARP  # threads over 32, before the floor
    warps = dataclasses.replace(warps, kind="whole", rounding="down", unrounded=by_regs, unit="unit")
    return [ask("tensor_cores", "Tensor Cores on the chip", "gpu.tensor_cores", chip=chip, rel_tol=Fraction(0)),
            ask("clock", "clock implied by the peak", "gpu.tensor_core.implied_clock", chip=chip, dtype="bf16"),
            ask("sm_registers", "register file of one SM", "gpu.sm.register_bytes", chip=chip),
            warps,
            ask("smem", "SMEM of the whole chip", "gpu.smem_bytes", chip=chip)]


def check(p):
    c = get_chip(p["chip"])
    tcs = c.sms * c.subpartitions_per_sm  # one Tensor Core per subpartition
    per_cycle = tcs * c.tensor_core_flops_per_cycle
    regs = c.subpartitions_per_sm * c.registers_per_subpartition  # 32-bit registers per SM
    threads = Fraction(regs, p["r_thread"])
    warps = whole_check("warps", threads / WARP, "down")
    warps["warps"] = min(c.max_warps_per_sm, warps["warps"])
    return {"tensor_cores": tcs, "clock": Fraction(c.flops_per_s["bf16"], per_cycle), "sm_registers": 4 * regs,
            **warps, "smem": c.sms * c.smem_bytes}


register(Generator("gpu_sm_internals", "gpu", "Inside a GPU: Tensor Cores, clock, registers, warps and SMEM",
                   SOURCE, draw, solve, check))
