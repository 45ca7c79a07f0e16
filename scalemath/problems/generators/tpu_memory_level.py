"""The same matmul fed from HBM and from VMEM: how much smaller can the batch be? (tpus.md, Q4)."""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import MODEL_SHAPES, ask, pick, whole, whole_check
from ..registry import Generator, register, reject_if

#: VMEM bandwidth as a multiple of HBM bandwidth (the book's rule of thumb for v5e is 22).
VMEM_RATIOS = (16, 22, 32)
DTYPES = ("int8", "int8", "bf16")
CHIPS = ("tpu-v5e", "tpu-v5e", "tpu-v5e", "tpu-v4p", "tpu-v5p", "tpu-v6e")


def draw(rng):
    dtype = pick(rng, DTYPES)
    chip = get_chip(pick(rng, CHIPS))
    reject_if(dtype not in chip.flops_per_s, "the chip has no rate for this dtype")
    model, d, f = pick(rng, MODEL_SHAPES)
    ratio = pick(rng, VMEM_RATIOS)
    b = {"bf16": 2, "int8": 1}[dtype]
    c, w = chip.flops_per_s[dtype], chip.hbm_bytes_per_s
    reject_if(2 * d * f * w <= c * b * (d + f), "the matmul is never compute-bound from HBM")
    return {"chip": chip.key, "dtype": dtype, "model": model, "D": d, "F": f, "ratio": ratio}


def solve(p):
    shape = {"D": p["D"], "F": p["F"]}
    chip = get_chip(p["chip"])
    vmem = p["ratio"] * chip.hbm_bytes_per_s
    return [
        whole(ask("batch_hbm", "smallest whole compute-bound batch with operands in HBM", "matmul.critical_batch",
                  chip=p["chip"], dtype=p["dtype"], level="hbm", given=shape), "up"),
        whole(ask("batch_vmem", "smallest whole compute-bound batch with operands in VMEM", "matmul.critical_batch",
                  chip=p["chip"], dtype=p["dtype"], given={**shape, "W": vmem}), "up"),
    ]


def _crossover(c: Fraction, w: Fraction, d: int, f: int, b: int) -> Fraction:
    # 2BDF / C = b (BD + DF + BF) / W, solved for B
    return Fraction(b * d * f) / w / (Fraction(2 * d * f) / c - Fraction(b * (d + f)) / w)


def check(p):
    chip = get_chip(p["chip"])
    b = {"bf16": 2, "int8": 1}[p["dtype"]]
    c = Fraction(chip.flops_per_s[p["dtype"]])
    hbm = Fraction(chip.hbm_bytes_per_s)
    return (whole_check("batch_hbm", _crossover(c, hbm, p["D"], p["F"], b), "up")
            | whole_check("batch_vmem", _crossover(c, hbm * p["ratio"], p["D"], p["F"], b), "up"))


register(Generator("tpu_memory_level", "tpu", "A matmul from HBM and from VMEM",
                   "tpus.md, 'Worked Problems' (Q4)", draw, solve, check))
