"""Roofline time bounds of one MLP matmul on a real chip (roofline.md, Q1 and 'Matrix multiplication')."""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import MODEL_SHAPES, ask, pick, pick_chip, pow2
from ..registry import Generator, register

#: (compute and activation dtype, weight dtype). The output is stored in the activation dtype.
MIXES = (
    ("bf16", "bf16"),   # plain bf16 matmul
    ("bf16", "int8"),   # int8 weights, bf16 activations and compute (weight-only quantization)
    ("int8", "int8"),   # int8 storage and int8 OPs
    ("bf16", "int4"),   # int4 weights upcast to bf16
    ("fp8", "fp8"),     # fp8 storage and compute, where the chip has fp8
)
BOUNDS_MIXES = MIXES + (("fp16", "fp16"),)

#: Bytes per element, written out again for the second route (not read from the engine).
ELEMENT_BYTES = {"fp32": Fraction(4), "bf16": Fraction(2), "fp16": Fraction(2), "fp8": Fraction(1),
                 "int8": Fraction(1), "int4": Fraction(1, 2)}


def draw(rng):
    dtype, weight_dtype = pick(rng, BOUNDS_MIXES)
    chip = pick_chip(rng, dtypes=[dtype, weight_dtype])  # weights stored in a dtype the chip has
    model, d, f = pick(rng, MODEL_SHAPES)
    return {"chip": chip.key, "dtype": dtype, "weight_dtype": weight_dtype, "model": model,
            "B": pow2(rng, 4, 14), "D": d, "F": f}


def solve(p):
    kw = dict(chip=p["chip"], dtype=p["dtype"], weight_dtype=p["weight_dtype"],
              given={"B": p["B"], "D": p["D"], "F": p["F"]})
    return [
        ask("flops", "FLOPs of the matmul", "matmul.flops", **kw),
        ask("bytes", "bytes moved to and from HBM", "matmul.bytes", **kw),
        ask("t_math", "compute time", "matmul.t_math", **kw),
        ask("t_comms", "HBM time", "matmul.t_comms", **kw),
        ask("t_lower", "lower bound on the runtime", "matmul.t_lower", **kw),
        ask("t_upper", "upper bound on the runtime", "matmul.t_upper", **kw),
    ]


def check(p):
    chip = get_chip(p["chip"])
    c, w = Fraction(chip.flops_per_s[p["dtype"]]), Fraction(chip.hbm_bytes_per_s)
    b, d, f = p["B"], p["D"], p["F"]
    act, wt = ELEMENT_BYTES[p["dtype"]], ELEMENT_BYTES[p["weight_dtype"]]
    flops = Fraction(2 * b * d * f)                 # one multiply and one add per (b, d, f)
    nbytes = act * b * d + wt * d * f + act * b * f  # read X and Y, write Z
    t_math, t_comms = flops / c, nbytes / w
    return {"flops": flops, "bytes": nbytes, "t_math": t_math, "t_comms": t_comms,
            "t_lower": max(t_math, t_comms), "t_upper": t_math + t_comms}


register(Generator("matmul_bounds", "roofline", "Roofline bounds on a matmul's runtime",
                   "roofline.md, 'Matrix multiplication' and 'A Few Problems to Work' (Q1)",
                   draw, solve, check))
