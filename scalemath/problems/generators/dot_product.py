"""Dot product of two long vectors: FLOPs, bytes, intensity and its long-vector limit (roofline.md)."""

from __future__ import annotations

from fractions import Fraction

from ..draws import ask, pick, pow2
from ..registry import Generator, register

DTYPES = ("bf16", "bf16", "fp32", "int8")

#: Bytes per element, written out again for the second route (not read from the engine).
ELEMENT_BYTES = {"fp32": Fraction(4), "bf16": Fraction(2), "int8": Fraction(1)}


def draw(rng):
    return {"dtype": pick(rng, DTYPES), "N": pow2(rng, 10, 24)}


def solve(p):
    given = {"N": p["N"]}
    return [
        ask("flops", "operations performed", "dot.flops", dtype=p["dtype"], given=given),
        ask("bytes", "bytes moved", "dot.bytes", dtype=p["dtype"], given=given),
        ask("intensity", "arithmetic intensity", "dot.intensity", dtype=p["dtype"], given=given),
        ask("intensity_limit", "intensity for very long vectors", "dot.intensity_limit", dtype=p["dtype"]),
    ]


def check(p):
    n, b = p["N"], ELEMENT_BYTES[p["dtype"]]
    flops = Fraction(n + (n - 1))          # N multiplies, N - 1 adds
    nbytes = n * b + n * b + b             # read x and y, write one scalar
    # (2N - 1) / (2Nb + b) = (2 - 1/N) / (2b + b/N) -> 2 / 2b as N grows
    return {"flops": flops, "bytes": nbytes, "intensity": flops / nbytes, "intensity_limit": Fraction(2) / (2 * b)}


register(Generator("dot_product", "roofline", "Arithmetic intensity of a dot product",
                   "roofline.md, 'Where Does the Time Go?'", draw, solve, check))
