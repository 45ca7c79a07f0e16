"""Read where data parallelism, FSDP, tensor parallelism and FSDP + TP turn compute-bound off a plot of one
layer's backward compute and communication time against the global batch (training.md, 'Combining FSDP and
Tensor Parallelism', its figure of the four schemes' communication against the compute line).

The figure is scalemath.plots.training.data (the engine's parallel.<scheme>.t_math_bwd and .t_comms_bwd at
batches N, 2N, ... 2^16 N) without its min-batch marks, which carry two of the answers; the key comes from the
engine's parallel.dp.min_batch and parallel.fsdp_tp.min_batch on the plot's meshes and from the plotted exact
values. The second route is hand arithmetic in fractions on the chip's raw catalog fields (bf16 peak and one
ICI link's bytes/s, both directions counted), squaring to compare the FSDP + TP line's square root exactly.
The plot sets X to the book's X_opt = sqrt(2BN/F), which balances a TP term twice parallel.fsdp_tp.t_comms_bwd's
(see that quantity's note), so the drawn line is FSDP's term there; it meets the compute line where
parallel.fsdp_tp.min_batch says, both sides carrying the same factor of two.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import choice, pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if

NAME = "figure_training_read"
READ_TOL = Fraction(1, 10)
CHIPS = ("tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e")
WIDTHS = (2048, 4096, 8192, 12288, 16384)
RATIOS = (3, Fraction(7, 2), 4)
#: the schemes as the plot draws them, DP and FSDP on one line (both AllReduce-size their weight gradients)
LINES = ("DP and FSDP", "TP", "FSDP + TP")
SETS = ("none of them", "DP and FSDP", "TP", "FSDP + TP", "DP, FSDP and TP", "DP, FSDP and FSDP + TP",
        "TP and FSDP + TP", "all four")
B_BYTES = 2  # bf16 weights and activations
SPAN = 10  # the plot spans 2^10 batches per chip (three decades: the tick labels stay apart)


def _subset(bound: tuple[bool, bool, bool]) -> int:
    names = [LINES[i] for i in range(3) if bound[i]]
    text = {(): "none of them", ("DP and FSDP", "TP", "FSDP + TP"): "all four"}.get(tuple(names))
    if text is None:
        text = {("DP and FSDP", "TP"): "DP, FSDP and TP", ("DP and FSDP", "FSDP + TP"): "DP, FSDP and FSDP + TP",
                ("TP", "FSDP + TP"): "TP and FSDP + TP"}.get(tuple(names), names[0] if len(names) == 1 else "")
    return SETS.index(text)


def _second(p) -> dict:
    """Hand arithmetic: per-chip crossovers, the compute time and each line's communication against it."""
    chip = get_chip(p["chip"])
    C, W = Fraction(chip.flops_per_s["bf16"]), 2 * Fraction(chip.ici_link_bytes_per_s)
    D, F, N, B, b = Fraction(p["D"]), Fraction(p["F"]), p["n_dev"], Fraction(p["B_asked"]), B_BYTES
    dp_star = C * b / (2 * 3 * W)  # 8BDF/(CN) = 4DFb/(3W), per chip B/N
    fsdp_tp_star = C ** 2 * b ** 2 / (8 * F * W ** 2)  # 4BDF/(CN) = 2 sqrt(2BN/F)... squared, per chip
    t_math = 8 * B * D * F / (C * N)
    dp = 4 * D * F * b / (3 * W)
    tp = 2 * B * D * b / (3 * W)
    # X = X_opt^2 = B M_X N / (F M_Y) with M_X = 2, M_Y = 1 (the book's balance), kept to [1, N]; the line is
    # the larger of TP's 2BDb / (M_Y W X) and FSDP's 4DFb X / (M_X W N), compared squared
    x_sq = min(max(2 * B * N / F, Fraction(1)), Fraction(N * N))
    mixed_sq = max((2 * B * D * b) ** 2 / (W * W * x_sq), (2 * D * F * b) ** 2 * x_sq / (W * N) ** 2)
    ratios_sq = ((dp / t_math) ** 2, (tp / t_math) ** 2, mixed_sq / t_math ** 2)
    return {"dp_star": dp_star, "fsdp_tp_star": fsdp_tp_star, "t_math": t_math, "ratios_sq": ratios_sq,
            "x_star_sq": 2 * fsdp_tp_star * N * N / F}


def draw(rng):
    chip, D, ratio = pick(rng, CHIPS), pick(rng, WIDTHS), pick(rng, RATIOS)
    N = 2 ** rng.randint(4, 12)
    p = {"chip": chip, "D": D, "F": int(D * ratio), "n_dev": N, "B_asked": N}
    r = _second(p)
    low, high = sorted((r["dp_star"], r["fsdp_tp_star"]))
    reject_if(high > 2 ** 13, "a crossover past the plotted batches")
    reject_if(not 1 <= r["x_star_sq"] <= N * N, "X_opt at the FSDP + TP crossover must be a mesh of N chips")
    top = max(k for k in range(14) if 2 ** k <= low)  # the window 2^lo .. 2^(lo + SPAN) holds both crossovers
    lo = rng.randint(max(0, (high * 2).__ceil__().bit_length() - SPAN), max(0, min(top - 1, 13 - SPAN)))
    reject_if(not 2 ** lo * 2 <= low and high * 2 <= 2 ** (lo + SPAN), "both crossovers inside the window")
    p |= {"lo": lo, "B_asked": N * 2 ** rng.randint(lo, lo + SPAN)}
    close = [Fraction(16, 25) <= q <= Fraction(25, 16) for q in _second(p)["ratios_sq"]]
    reject_if(any(close), "a communication line too near the compute line at the asked batch to read")
    return p


def _kind(chip: str, D: int, F: int, n: int, lo: int):
    """The schemes' backward communication and the compute line against the batch per chip, 2^lo to
    2^(lo + SPAN), DP and FSDP (the same bytes) as one line, no min-batch marks."""
    from ... import quantities as Q
    from ...plots import training
    from ...plots.common import Series

    fig = training.data(Q.Context(chip=chip, dtype="bf16"), n, list(training.SCHEMES), {"D": D, "F": F})
    keep, series = range(lo, lo + SPAN + 1), []
    for s in fig.panels[0].series:
        if s.label.startswith("DP,"):
            continue
        label = "DP and FSDP" + s.label[len("FSDP"):] if s.label.startswith("FSDP,") else s.label
        points = [(x // n, y) for x, y in zip(s.x, s.y) if (x // n).bit_length() - 1 in keep]
        series.append(Series(label, tuple(x for x, _ in points), tuple(y for _, y in points), kind=s.kind,
                             color=s.color))
    panel = dataclasses.replace(fig.panels[0], series=tuple(series), marks=(), xlabel="batch per chip B/N")
    title = f"One layer, D = {D}, F = {F}, on {n} x {get_chip(chip).name} (read the values off the axes)"
    return dataclasses.replace(fig, title=title, panels=(panel,),
                               note="the dotted grid marks 2, 3, ... 9 of each decade")


FIGURE_KINDS.setdefault("training", _kind)


def figure(p) -> Spec:
    return Spec("training", (p["chip"], p["D"], p["F"], p["n_dev"], p["lo"]),
                alt="One layer's backward compute time and the communication of DP and FSDP, TP and FSDP + TP "
                    "against the batch per chip, log axes")


def _engine(name: str, chip: str, values: dict):
    from ... import quantities as Q

    q = Q.get(name)
    return Q.evaluate(q, Q.Context(chip=chip, dtype="bf16"),
                      {k: v for k, v in values.items() if k in {s.name for s in q.params}}).value


def solve(p):
    N, chip = p["n_dev"], p["chip"]
    dp_star = _engine("parallel.dp.min_batch", chip, {"X": N, "M_X": 3})
    mixed_star = _engine("parallel.fsdp_tp.min_batch", chip, {"F": p["F"], "M_X": 2, "M_Y": 1, "n_dev": N})
    panel = build(figure(p)).panels[0]
    at = panel.series[0].x.index(p["B_asked"] // N)
    compute = panel.series[0].y[at]
    comms = {s.label.split(",")[0]: s.y[at] for s in panel.series[1:]}
    bound = tuple(comms[k] <= compute for k in ("DP and FSDP", "TP", "FSDP + TP"))
    return [Answer("dp_per_chip", "the batch per chip from which DP and FSDP are compute-bound", dp_star / N,
                   "1", rel_tol=READ_TOL),
            Answer("fsdp_tp_per_chip", "the batch per chip from which FSDP + TP is compute-bound", mixed_star / N,
                   "1", rel_tol=READ_TOL),
            choice("bound", "which schemes are compute-bound at the asked batch", SETS, _subset(bound)),
            Answer("t_math", "the backward compute time of the layer at the asked batch", compute, "s",
                   rel_tol=READ_TOL)]


def check(p):
    r = _second(p)
    return {"dp_per_chip": r["dp_star"], "fsdp_tp_per_chip": r["fsdp_tp_star"], "t_math": r["t_math"],
            "bound": _subset(tuple(q <= 1 for q in r["ratios_sq"]))}


register_figure(NAME, figure)
register(Generator(NAME, "training", "Reading where each training scheme turns compute-bound off a plot",
                   "training.md, 'Combining FSDP and Tensor Parallelism'", draw, solve, check))
