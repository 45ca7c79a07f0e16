"""A weight matrix per batch element: intensity stuck below 2/b_w (roofline.md, Q4)."""

from __future__ import annotations

from fractions import Fraction

from ..draws import ask, pick, pow2
from ..registry import Generator, register

DTYPES = ("int8", "bf16")
ELEMENT_BYTES = {"bf16": Fraction(2), "int8": Fraction(1)}


def draw(rng):
    return {"dtype": pick(rng, DTYPES), "B": pow2(rng, 2, 9), "D": pow2(rng, 9, 13), "F": pow2(rng, 9, 14)}


def solve(p):
    return [ask(name, what, "matmul.batched_weights_intensity", dtype=p["dtype"],
                given={"B": batch, "D": p["D"], "F": p["F"]})
            for name, what, batch in (("intensity", "arithmetic intensity", p["B"]),
                                      ("intensity_doubled", "arithmetic intensity with the batch doubled",
                                       2 * p["B"]))]


def _intensity(b: int, d: int, f: int, e: Fraction) -> Fraction:
    flops = Fraction(2 * b * d * f)
    nbytes = e * (b * d + b * d * f + b * f)   # X[B,D], Y[B,D,F] and Z[B,F], all in one dtype
    return flops / nbytes


def check(p):
    e = ELEMENT_BYTES[p["dtype"]]
    return {"intensity": _intensity(p["B"], p["D"], p["F"], e),
            "intensity_doubled": _intensity(2 * p["B"], p["D"], p["F"], e)}


register(Generator("batched_weights", "roofline", "Intensity with a weight matrix per batch element",
                   "roofline.md, 'A Few Problems to Work' (Q4)", draw, solve, check))
