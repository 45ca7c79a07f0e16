"""Speculative decoding (inference.md, 'Appendix D: Speculative Sampling'): a cheap draft model proposes γ
tokens, the target checks them in one pass, and the speed-up is the tokens kept per round over the round's cost.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from .common import APPENDIX_D, alpha, c_draft, gamma, tau


#: Draft lengths with a registered speculative-decoding speed-up (the symbolic length is refused
#: by the unit checker, which accepts only numeric exponents).
SPECULATIVE_DRAFTS = tuple(range(1, 9))


# -- speculative decoding (Appendix D) -----------------------------------------------------------------

def _round_step(draft: sp.Expr) -> Step:
    return Step(r"T_{\mathrm{round}}/T_{\mathrm{step}}", 1 + draft * c_draft,
                "γ draft steps of relative cost c, then one target pass over the γ + 1 positions, which costs "
                "about one ordinary step because decoding is memory-bound", "1")


@functools.cache
def speculative_speedup_measured() -> Derivation:
    """Speed-up from a measured mean τ of tokens emitted per verification round."""
    rnd = _round_step(gamma)
    return Derivation("speculative decoding: speed-up over plain decoding from the tokens per round", (
        rnd, Step(r"\mathrm{speedup}", tau / rnd.expr,
                  "τ tokens per round against one token per plain step", "1")), APPENDIX_D,
        note="The book gives the idea; the ratio is Leviathan et al.'s (2023) walltime model.")


@functools.cache
def speculative_speedup(draft: int | None = None) -> Derivation:
    """Expected speed-up when each drafted token is accepted independently with probability α.

    ``draft`` fixes the draft length γ (the registered forms); ``None`` keeps γ symbolic, whose
    ``α^(γ+1)`` the unit checker refuses, so that form is for direct use only.

    >>> speculative_speedup(2).expr
    (a_acc**2 + a_acc + 1)/(2*r_draft + 1)
    """
    if draft is None:
        tokens = (1 - alpha ** (gamma + 1)) / (1 - alpha)
        length: sp.Expr = gamma
    else:
        if draft < 1:
            raise ValueError("the draft length must be at least 1")
        tokens = sp.Add(*(alpha**i for i in range(draft + 1)))
        length = sp.Integer(draft)
    expected = Step(r"\mathrm{E}[\tau]", tokens,
                    "draft i is kept only if it and all before it are accepted; the target always adds a token "
                    "of its own: 1 + α + ... + α^γ = (1 − α^(γ+1))/(1 − α)", "token")
    rnd = _round_step(length)
    title = "speculative decoding: expected speed-up" + ("" if draft is None else f" with {draft} drafted tokens")
    return Derivation(title, (expected, rnd, Step(r"\mathrm{speedup}", expected.expr / rnd.expr,
                                                  "expected tokens per round over the round's cost in plain steps",
                                                  "1")), APPENDIX_D,
                      note="The book gives the idea; the expectation assumes i.i.d. acceptance "
                           "(Leviathan et al. 2023).")
