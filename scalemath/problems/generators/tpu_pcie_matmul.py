"""A bf16 matmul fed entirely over PCIe from host memory: when is it compute-bound? (tpus.md, Q3)."""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import ask, pick, pick_chip, pow2, whole, whole_check
from ..registry import Generator, register, reject_if

RATIOS = (1, 2, 3, 4, 8)


def draw(rng):
    chip = pick_chip(rng, family="tpu", levels=["pcie"], dtypes=["bf16"])
    ratio = pick(rng, RATIOS)
    d = pow2(rng, 14, 20)
    f = ratio * d
    c, w = chip.flops_per_s["bf16"], chip.pcie_bytes_per_s
    # the exact crossover is C*D*F / (D*F*W - C*(D + F)); keep it within 2x of the B << D rule
    reject_if(d * f * w <= 2 * c * (d + f), "B is not small next to D and F: the rule of thumb breaks")
    return {"chip": chip.key, "ratio": ratio, "D": d}


def solve(p):
    given = {"D": p["D"], "F": p["ratio"] * p["D"]}
    return [
        whole(ask("batch_approx", "smallest whole compute-bound batch with B much smaller than D and F",
                  "matmul.critical_batch_approx", chip=p["chip"], dtype="bf16", level="pcie"), "up"),
        whole(ask("batch_exact", "smallest whole compute-bound batch counting every byte",
                  "matmul.critical_batch", chip=p["chip"], dtype="bf16", level="pcie", given=given), "up"),
    ]


def check(p):
    chip = get_chip(p["chip"])
    c, w = Fraction(chip.flops_per_s["bf16"]), Fraction(chip.pcie_bytes_per_s)
    d = p["D"]
    f = p["ratio"] * d
    # compute time 2BDF/C against PCIe time 2(BD + DF + BF)/W, everything in bf16 (2 bytes)
    # B << D, F: only the 2DF weight bytes count, so 2BDF/C = 2DF/W
    approx = c / w
    # exact: B (2DF/C - 2(D + F)/W) = 2DF/W
    exact = Fraction(2 * d * f) / w / (Fraction(2 * d * f) / c - Fraction(2 * (d + f)) / w)
    return whole_check("batch_approx", approx, "up") | whole_check("batch_exact", exact, "up")


register(Generator("tpu_pcie_matmul", "tpu", "A matmul streamed over PCIe",
                   "tpus.md, 'Worked Problems' (Q3)", draw, solve, check))
