"""Read speculative decoding's expected speed-up off a plot: against the acceptance rate for several draft
lengths, and against the draft length for several acceptance rates (inference.md, 'Appendix D: Speculative
Sampling'; the book's Chinchilla 70B figure finds 3 to 4 drafted tokens best: drafting more stops paying).

The figure is scalemath.plots.serving.speculative_data (the engine's inference.speculative.speedup_draftγ) without
the best-length marks; the key is read from the same exact data. The second route is the formula in plain
fractions: (1 + α + ... + α^γ) / (1 + γ c).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ..draws import choice, pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if

NAME = "figure_speculative_read"
READ_TOL = Fraction(1, 10)
COSTS = ("1/50", "1/25", "1/20", "1/10")
DRAFTS = (1, 2, 4, 8)
RATES = ("0.5", "0.6", "0.7", "0.8", "0.9")
LENGTHS = tuple(range(1, 9))


def _speedup(a: Fraction, g: int, c: Fraction) -> Fraction:
    return sum(a**i for i in range(g + 1)) / (1 + g * c)


def draw(rng):
    c = pick(rng, COSTS)
    rates = sorted(rng.sample(RATES, 3), key=Fraction)
    r = pick(rng, rates)
    ys = [_speedup(Fraction(r), g, Fraction(c)) for g in LENGTHS]
    short, long = sorted(rng.sample(LENGTHS, 2))
    lo, hi = sorted((ys[short - 1], ys[long - 1]))
    reject_if(hi < Fraction(105, 100) * lo, "the two draft lengths must differ by 5 percent to be read")
    alpha = f"{rng.randint(8, 19) * 5 / 100:g}"  # 0.4 .. 0.95, points of the plot's α axis
    g_other = pick(rng, [g for g in LENGTHS if g not in (short, long)])
    return {"draft_cost": c, "rates": rates, "rate_asked": r, "alpha_asked": alpha,
            "draft_asked": pick(rng, DRAFTS), "short": short, "long": long, "other_draft": g_other}


def _kind(cost: str, rates: tuple[str, ...]):
    from ...plots import serving

    fig = serving.speculative_data(cost, DRAFTS, rates)
    panels = tuple(dataclasses.replace(p, marks=()) for p in fig.panels)
    return dataclasses.replace(fig, title=fig.title + " (read the values off the axes)", panels=panels)


FIGURE_KINDS.setdefault("speculative", _kind)


def figure(p) -> Spec:
    return Spec("speculative", (p["draft_cost"], tuple(p["rates"])),
                alt="Speculative decoding's expected speed-up against acceptance rate and against draft length")


def solve(p):
    meta = build(figure(p)).meta
    alpha = Fraction(p["alpha_asked"])
    at = list(meta["alphas"]).index(alpha)
    by_draft = {Fraction(str(a)): ys for a, ys in meta["by_draft"].items()}[Fraction(p["rate_asked"])]
    longer = bool(by_draft[p["long"] - 1] > by_draft[p["short"] - 1])
    return [Answer("speedup_alpha", "the speed-up at the asked acceptance rate and draft length",
                   meta["by_alpha"][p["draft_asked"]][at], "1", rel_tol=READ_TOL),
            choice("longer", "which of the two draft lengths is faster at the asked acceptance rate",
                   (f"γ = {p['short']}", f"γ = {p['long']}"), int(longer)),
            Answer("speedup_other", "the speed-up at the asked acceptance rate with the other draft length",
                   by_draft[p["other_draft"] - 1], "1", rel_tol=READ_TOL)]


def check(p):
    c, r = Fraction(p["draft_cost"]), Fraction(p["rate_asked"])
    ys = [_speedup(r, g, c) for g in LENGTHS]
    return {"speedup_alpha": _speedup(Fraction(p["alpha_asked"]), p["draft_asked"], c),
            "longer": int(ys[p["long"] - 1] > ys[p["short"] - 1]), "speedup_other": ys[p["other_draft"] - 1]}


register_figure(NAME, figure)
register(Generator(NAME, "inference", "Reading speculative decoding's speed-up off a plot",
                   "inference.md, 'Appendix D: Speculative Sampling'", draw, solve, check))
