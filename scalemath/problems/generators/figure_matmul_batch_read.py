"""Read a matmul's attainable FLOPs/s against its batch off a plot: where each of two weight shapes turns
compute-bound, and what one of them reaches at a memory-bound batch (roofline.md, 'Worked problems', question 3:
int8 weights and bf16 activations on TPU v5e, compute-bound from B* = 136 for D = F = 4096 and 226 for 1024).

The figure is scalemath.plots.roofline.batch_data (the engine's matmul.flops / matmul.t_lower at batches 1, 2,
4, ... 4096 and at matmul.critical_batch) with its series named by their shapes only and the crossings left as
unlabelled drop lines. The key: the two crossings from matmul.critical_batch, to the nearest token as the book
prints them, and the FLOPs/s read from the same exact data the figure draws. The second route is plain arithmetic
on raw catalog fields: the chip's peak at the activations' dtype and its HBM bandwidth, and the bytes of X[B,D]
and Z[B,F] in the activations' dtype and of Y[D,F] in the weights', each moved once.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import ask, pick, whole, whole_check
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if
from .matmul_bounds import ELEMENT_BYTES

NAME = "figure_matmul_batch_read"
#: Reading a value off a log axis with a minor grid: within 10 % of the key.
READ_TOL = Fraction(1, 10)
CHIPS = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "h100", "a100", "b200")
WEIGHT_DTYPES = ("int8", "bf16", "fp8")
ACT_DTYPE = "bf16"
#: Model widths and MLP widths of published configurations, 1024 to 16384.
SIZES = (1024, 2048, 3072, 4096, 5120, 8192, 11008, 14336, 16384)
#: The plotted batches are 1, 2, 4, ... 2**TOP (scalemath.plots.roofline.batch_data's grid).
TOP = 12
#: Two crossings closer than this ratio would be read as one.
APART = Fraction(13, 10)


def _second(chip_key: str, weight_dtype: str) -> dict:
    chip = get_chip(chip_key)
    return {"C": Fraction(chip.flops_per_s[ACT_DTYPE]), "W": Fraction(chip.hbm_bytes_per_s),
            "bx": ELEMENT_BYTES[ACT_DTYPE], "bw": ELEMENT_BYTES[weight_dtype]}


def _bytes(r: dict, B, D: int, F: int) -> Fraction:
    """X[B,D] and Y[D,F] read once, Z[B,F] written once."""
    return r["bx"] * B * D + r["bw"] * D * F + r["bx"] * B * F


def _crossing(r: dict, D: int, F: int) -> Fraction | None:
    """The batch where 2BDF / C = bytes / W: linear in B, B (2DFW - C bx (D + F)) = C bw DF; None when the
    activations' bytes keep it memory-bound at every batch."""
    slope = 2 * D * F * r["W"] - r["C"] * r["bx"] * (D + F)
    return None if slope <= 0 else r["C"] * r["bw"] * D * F / slope


def _flops_per_s(r: dict, B: int, D: int, F: int) -> Fraction:
    flops = Fraction(2 * B * D * F)
    return flops / max(flops / r["C"], _bytes(r, B, D, F) / r["W"])


def draw(rng):
    chip, wd = pick(rng, CHIPS), pick(rng, WEIGHT_DTYPES)
    reject_if(wd not in get_chip(chip).flops_per_s, f"{chip} has no {wd} rate")
    shapes = tuple((pick(rng, SIZES), pick(rng, SIZES)) for _ in range(2))
    r = _second(chip, wd)
    crossings = [_crossing(r, D, F) for D, F in shapes]
    reject_if(not all(c is not None and 4 <= c <= 2 ** (TOP - 1) for c in crossings),
              "both shapes turn compute-bound between batches 4 and 2048")
    lo, hi = sorted(crossings)
    reject_if(hi < APART * lo, "the two crossings at least 1.3x apart")
    which = pick(rng, "ab")
    below = [2 ** k for k in range(TOP + 1) if 2 ** k < crossings["ab".index(which)]]
    return {"chip": chip, "weight_dtype": wd, "D_a": shapes[0][0], "F_a": shapes[0][1], "D_b": shapes[1][0],
            "F_b": shapes[1][1], "asked": which, "B_asked": pick(rng, below)}


def _kind(chip: str, weight_dtype: str, shapes: tuple[tuple[int, int], ...]):
    """FLOPs/s against batch per (D, F), each series named by its shape alone, the crossings unlabelled."""
    from ... import quantities as Q
    from ...plots import roofline

    fig = roofline.batch_data(Q.Context(chip=chip, dtype=ACT_DTYPE, weight_dtype=weight_dtype), list(shapes))
    panel = fig.panels[0]
    series = tuple(dataclasses.replace(s, label=f"D = {d}, F = {f}") for s, (d, f) in zip(panel.series, shapes))
    marks = tuple(dataclasses.replace(m, label="") for m in panel.marks)
    title = f"{get_chip(chip).name}, {weight_dtype} weights, {ACT_DTYPE} activations (read the values off the axes)"
    return dataclasses.replace(fig, title=title,
                               panels=(dataclasses.replace(panel, series=series, marks=marks),),
                               note="attainable FLOPs/s = FLOPs / max(compute time, HBM time); the dotted grid "
                                    "marks 2, 3, ... 9 of each decade")


FIGURE_KINDS.setdefault("matmul_batch", _kind)


def _shapes(p) -> tuple[tuple[int, int], tuple[int, int]]:
    return (p["D_a"], p["F_a"]), (p["D_b"], p["F_b"])


def figure(p) -> Spec:
    return Spec("matmul_batch", (p["chip"], p["weight_dtype"], _shapes(p)),
                alt="A matmul's attainable FLOPs/s against its batch for two weight shapes, log axes")


def _crossing_engine(p, s: str, description: str) -> Answer:
    """matmul.critical_batch for shape ``s``, to the nearest token (the book prints 136 and 226), graded as a reading
    off a log axis: any batch within READ_TOL of it is right, as the statement says (kept a number, not a count,
    which would have to be exact)."""
    counted = whole(ask(f"crossover_{s}", description, "matmul.critical_batch", chip=p["chip"], dtype=ACT_DTYPE,
                        weight_dtype=p["weight_dtype"], given={"D": p["D_" + s], "F": p["F_" + s]},
                        rel_tol=READ_TOL), "nearest")
    return dataclasses.replace(counted, kind="number", rounding=None)


def solve(p):
    series = build(figure(p)).panels[0].series["ab".index(p["asked"])]
    at = series.y[series.x.index(p["B_asked"])]
    return [_crossing_engine(p, "a", "the batch at which the first shape turns compute-bound"),
            _crossing_engine(p, "b", "the batch at which the second shape turns compute-bound"),
            Answer("flops_at", "the FLOPs/s the asked shape reaches at the asked batch", at, "FLOP/s",
                   rel_tol=READ_TOL)]


def check(p):
    r = _second(p["chip"], p["weight_dtype"])
    s = p["asked"]
    return (whole_check("crossover_a", _crossing(r, p["D_a"], p["F_a"]), "nearest")
            | whole_check("crossover_b", _crossing(r, p["D_b"], p["F_b"]), "nearest")
            | {"flops_at": _flops_per_s(r, p["B_asked"], p["D_" + s], p["F_" + s])})


register_figure(NAME, figure)
register(Generator(NAME, "roofline", "Reading a matmul's FLOPs/s against batch off a plot",
                   "roofline.md, 'Worked problems' (question 3)", draw, solve, check))
