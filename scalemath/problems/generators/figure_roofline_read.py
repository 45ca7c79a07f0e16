"""Read a chip's roofline off its plot: the ridge, which ops are compute-bound, their FLOPs/s (roofline.md).

The figure is scalemath.plots.roofline's own data (one chip, bf16, HBM; two matmuls placed on it as op A
and op B) with the ridge left unlabelled; the key is read from the same exact data. The second route is
the hand formulas: ridge = C / W_hbm from the catalog's integers, a matmul's intensity
2BDF / (2BD + 2DF + 2BF) in bf16, attainable = min(C, W_hbm * intensity).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ..draws import MODEL_SHAPES, choice, pick, pow2
from ..figures import Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if

NAME = "figure_roofline_read"
#: Reading a value off a log axis with a minor grid: within 10 % of the key.
READ_TOL = Fraction(1, 10)
CHOICES = ("neither op A nor op B", "op A only", "op B only", "both op A and op B")


def _ridge(chip) -> Fraction:
    return Fraction(chip.flops_per_s["bf16"], chip.hbm_bytes_per_s)


def _intensity(b: int, d: int, f: int) -> Fraction:
    return Fraction(2 * b * d * f, 2 * b * d + 2 * d * f + 2 * b * f)


def draw(rng):
    chip = get_chip(pick(rng, _chips()))
    shape_a, shape_b = pick(rng, MODEL_SHAPES), pick(rng, MODEL_SHAPES)
    b_a, b_b = pow2(rng, 3, 12), pow2(rng, 3, 12)
    ridge = _ridge(chip)
    ia, ib = _intensity(b_a, shape_a[1], shape_a[2]), _intensity(b_b, shape_b[1], shape_b[2])
    for i in (ia, ib):
        reject_if(Fraction(3, 4) < i / ridge < Fraction(4, 3), "an op within a third of the ridge cannot be read")
        reject_if(not Fraction(1, 12) <= i / ridge <= 12, "an op more than 12x from the ridge leaves the window")
    reject_if(Fraction(2, 3) < ia / ib < Fraction(3, 2), "the two ops' markers would overlap")
    every = [ia, ib, ridge]
    lo = int(sp.floor(sp.log(min(every), 2))) - 1
    hi = int(sp.ceiling(sp.log(max(every), 2))) + 1
    return {"chip": chip.key, "dtype": "bf16", "model_a": shape_a[0], "B_a": b_a, "D_a": shape_a[1],
            "F_a": shape_a[2], "model_b": shape_b[0], "B_b": b_b, "D_b": shape_b[1], "F_b": shape_b[2],
            "x_lo": lo, "x_hi": hi, "I_a": ia, "I_b": ib}


def _chips() -> list[str]:
    from ...catalog.hardware import default_catalog

    return [c.key for c in default_catalog() if "bf16" in c.flops_per_s and c.hbm_bytes_per_s]


def _ops(p) -> tuple[str, str]:
    return tuple(f"matmul B={p['B_' + s]} D={p['D_' + s]} F={p['F_' + s]}" for s in "ab")


def figure(p) -> Spec:
    return Spec("roofline", (p["chip"], p["dtype"], _ops(p), (p["x_lo"], p["x_hi"])),
                alt="A roofline: attainable FLOPs/s against arithmetic intensity on log axes, with op A and op B")


def solve(p):
    fig = build(figure(p))
    meta = fig.meta
    (ridge,) = meta["ridges"].values()
    marks = {m.label: m for m in fig.panels[0].marks}
    a, b = marks["op A"], marks["op B"]
    bound = int(bool(a.x >= ridge)) + 2 * int(bool(b.x >= ridge))
    return [Answer("ridge", "the ridge point's arithmetic intensity", ridge, "FLOP/byte",
                   rel_tol=READ_TOL),
            choice("compute_bound", "which of the two ops are compute-bound?", CHOICES, int(bound)),
            Answer("attainable_a", "op A's attainable FLOPs/s", a.y, "FLOP/s", rel_tol=READ_TOL),
            Answer("attainable_b", "op B's attainable FLOPs/s", b.y, "FLOP/s", rel_tol=READ_TOL)]


def check(p):
    chip = get_chip(p["chip"])
    c, w = chip.flops_per_s["bf16"], chip.hbm_bytes_per_s
    ia = _intensity(p["B_a"], p["D_a"], p["F_a"])
    ib = _intensity(p["B_b"], p["D_b"], p["F_b"])
    ridge = Fraction(c, w)
    return {"ridge": ridge, "compute_bound": int(ia >= ridge) + 2 * int(ib >= ridge),
            "attainable_a": min(Fraction(c), w * ia), "attainable_b": min(Fraction(c), w * ib)}


register_figure(NAME, figure)
register(Generator(NAME, "roofline", "Reading a roofline plot", "roofline.md, 'Visualizing rooflines'",
                   draw, solve, check))
