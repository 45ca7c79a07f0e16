"""Speculative decoding: a cheap drafter proposes a few tokens and the target model checks them all in
one pass that costs about one ordinary decode step, because decoding is memory-bound. With each drafted
token accepted independently with probability α, the expected tokens per round and the speed-up over
plain decoding; and the draft length, 1 to 8, that maximises it (inference.md, 'Appendix D:
Speculative Sampling'; the expectation is Leviathan et al.'s 2023 walltime model, which the book cites
for the idea).

Engine route: ``inference.speculative.speedup_draft1`` to ``_draft8``; the expected tokens per round
are the first step of the drawn length's derivation. Second route: the geometric series in closed
form, (1 − α^(γ+1))/(1 − α), over the round's cost 1 + γ·c, written with plain fractions.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ... import quantities
from ...symbolic.inference import SPECULATIVE_DRAFTS
from ..draws import pick
from ..model import Answer
from ..registry import Generator, register

SOURCE = "inference.md, 'Appendix D: Speculative Sampling'"
ACCEPT = (50, 60, 70, 75, 80, 85, 90, 95)  # percent
COSTS = (1, 2, 5, 10, 20)  # a draft step's time, percent of a target step


def draw(rng):
    return {"accept": pick(rng, ACCEPT), "gamma": pick(rng, SPECULATIVE_DRAFTS), "cost": pick(rng, COSTS)}


def _values(p):
    return {"a_acc": Fraction(p["accept"], 100), "r_draft": Fraction(p["cost"], 100)}


def _speedup(p, gamma):
    q = quantities.get(f"inference.speculative.speedup_draft{gamma}")
    return q, quantities.evaluate(q, quantities.Context(), _values(p))


def solve(p):
    q, ev = _speedup(p, p["gamma"])
    first = ev.derivation.steps[0]
    expected = type(ev.derivation)("speculative decoding: expected tokens per round", (first,),
                                   ev.derivation.source).at({s: v for s, v in ev.given.items()
                                                             if s in first.expr.free_symbols})
    speedups = {g: _speedup(p, g) for g in SPECULATIVE_DRAFTS}
    best = max(SPECULATIVE_DRAFTS, key=lambda g: (speedups[g][1].value, -g))
    bq, bev = speedups[best]
    return [
        Answer("tokens", "expected tokens per verification round", expected.value, first.unit, expected),
        Answer("speedup", "expected speed-up over plain decoding", ev.value, q.unit, ev),
        Answer("best_draft", "draft length from 1 to 8 with the largest expected speed-up", sp.Integer(best),
               "token", rel_tol=Fraction(0)),
        Answer("best_speedup", "expected speed-up at that draft length", bev.value, bq.unit, bev),
    ]


def _second(a: Fraction, c: Fraction, gamma: int) -> tuple[Fraction, Fraction]:
    tokens = (1 - a ** (gamma + 1)) / (1 - a)
    return tokens, tokens / (1 + gamma * c)


def check(p):
    a, c = Fraction(p["accept"], 100), Fraction(p["cost"], 100)
    tokens, speedup = _second(a, c, p["gamma"])
    table = [(_second(a, c, g)[1], -g) for g in range(1, 9)]
    best_speedup, neg = max(table)
    return {"tokens": tokens, "speedup": speedup, "best_draft": -neg, "best_speedup": best_speedup}


register(Generator("inference_speculative", "inference", "Expected speed-up of speculative decoding",
                   SOURCE, draw, solve, check))
