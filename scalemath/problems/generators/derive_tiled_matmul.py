"""Derive what a tiled matmul moves from HBM and its arithmetic intensity (roofline.md and gpus.md, a matmul
computed tile by tile: each output tile of P rows and Q columns streams its rows of the left input and its
columns of the right one over the whole contracting dimension, then stores itself once).

Framing drawn: the dimension names, the element types of the two inputs and the output, the tile letters.
Key: the engine's ``matmul.tiled.bytes`` and ``matmul.tiled.intensity`` in the problem's names. Second route:
the tiles counted by hand, (rows/P)(cols/Q) of them, each loading P x K and K x Q input elements, plus the one
store of the output, and 2 x the product of the three dimensions over that.
"""

from __future__ import annotations

import sympy as sp

from ..draws import pick
from ..registry import Generator, register
from .derive_common import DTYPES, engine_form, formula, name

SOURCE = "roofline.md, 'Matrix multiplication' and gpus.md, tiled matmuls (bytes a tiling moves)"
SHAPES = (("B", "D", "F"), ("T", "D", "F"), ("M", "K", "L"), ("B", "K", "F"), ("T", "H", "D"))
TILES = (("P", "Q"), ("R", "U"))
OUT_TYPES = {"bf16": 2, "fp32": 4}


def draw(rng):
    rows, inner, cols = pick(rng, SHAPES)
    dx, dw = pick(rng, tuple(DTYPES)), pick(rng, tuple(DTYPES))
    do = pick(rng, tuple(OUT_TYPES))
    tm, tn = pick(rng, TILES)
    return {"rows": rows, "inner": inner, "cols": cols, "dx": dx, "dw": dw, "do": do, "bx": DTYPES[dx],
            "bw": DTYPES[dw], "bo": OUT_TYPES[do], "tm": tm, "tn": tn}


def _symbols(p):
    return ((p["rows"], "rows of the left input and of the output"), (p["inner"], "the contracting dimension"),
            (p["cols"], "columns of the right input and of the output"), (p["tm"], "rows of one output tile"),
            (p["tn"], "columns of one output tile"))


def _subs(p):
    return {"B": name(p["rows"]), "D": name(p["inner"]), "F": name(p["cols"]), "b_m": name(p["tm"]),
            "b_n": name(p["tn"]), "b_x": p["bx"], "b_w": p["bw"], "b_o": p["bo"]}


def solve(p):
    return [formula("bytes", "bytes the tiled matmul moves to and from HBM",
                    engine_form("matmul.tiled.bytes", _subs(p)), _symbols(p)),
            formula("intensity", "arithmetic intensity of the tiled matmul",
                    engine_form("matmul.tiled.intensity", _subs(p)), _symbols(p))]


def check(p):
    R, K, C, tm, tn = (name(p[k]) for k in ("rows", "inner", "cols", "tm", "tn"))
    tiles = (R / tm) * (C / tn)
    per_tile = tm * K * p["bx"] + K * tn * p["bw"]  # the tile's strip of rows and strip of columns
    moved = tiles * per_tile + R * C * p["bo"]
    return {"bytes": sp.expand(moved), "intensity": 2 * R * K * C / moved}


register(Generator("derive_tiled_matmul", "roofline", "Derive: the bytes and intensity of a tiled matmul",
                   SOURCE, draw, solve, check))
