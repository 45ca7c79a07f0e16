"""Training FLOPs per token under the conventions papers count by (:mod:`scalemath.conventions`): attention's
dot products left out (the book's 6·P), over a causal mask, or over all T positions (PaLM's 6N + 12·L·H·Q·T);
activations recomputed or not; and whether recomputed FLOPs count (HFU) or not (MFU).

The book's choices (none, none, mfu) give the book's 6·P_active per token; the quantities that read these axes
keep their own book derivation and build through here only for another choice.

>>> from scalemath.symbolic.symbols import sym
>>> per_token_steps(sym("P_active"), "full", "full", hardware=True)[-1].expr
16*H*L*N*T + 8*P_active
>>> per_token_steps(sym("P_active"), "full", "full", hardware=False)[-1].expr
12*H*L*N*T + 6*P_active
"""

from __future__ import annotations

import sympy as sp

from ..derivation import Step
from .common import H, L, N, T

__all__ = ["BOOK_CHOICES", "attention_fwd_per_token", "counts_recompute", "per_token_steps", "utilisation_symbol"]

#: The book's choice on each axis these forms read.
BOOK_CHOICES = {"attention": "none", "recompute": "none", "utilisation": "mfu"}


def attention_fwd_per_token(attention: str) -> sp.Expr:
    """Forward FLOPs per token of attention's QK^T and softmax·V over all layers: 4·L·N·H·T over all T positions,
    half that under a causal mask (a token sees on average about T/2 positions), none when left out."""
    return {"none": sp.Integer(0), "causal": 2 * L * N * H * T, "full": 4 * L * N * H * T}[attention]


_FWD = {"causal": "2·L·N·H·T", "full": "4·L·N·H·T"}
_ATTN_WHY = {
    "causal": "attention's QK^T and softmax·V under a causal mask, each token seeing T/2 positions on average: "
              "2·L·N·H·T forward, 6·L·N·H·T in training (attention=causal)",
    "full": "attention's QK^T and softmax·V over all T positions: 4·L·N·H·T forward, 12·L·N·H·T in training "
            "(attention=full; PaLM's 12·L·H·Q·T, Chowdhery et al. 2022, Appendix B)",
}


def counts_recompute(utilisation: str) -> bool:
    """Whether a utilisation counts recomputed FLOPs: HFU does (the chips ran them), MFU does not."""
    return utilisation == "hfu"


def utilisation_symbol(utilisation: str) -> sp.Symbol:
    from ..symbols import sym
    return sym("HFU" if utilisation == "hfu" else "MFU")


def per_token_steps(P: sp.Symbol, attention: str, recompute: str, *, hardware: bool, why_hw: str = "",
                    weight: sp.Expr = sp.Integer(1)) -> tuple[Step, ...]:
    """Steps ending in the training FLOPs per token under the choices, times ``weight`` (1 per token; B for a
    batch; tokens for a run). ``hardware``: count the FLOPs the chips ran, recomputed ones included (training
    FLOPs, HFU); otherwise the model's FLOPs whatever was recomputed (MFU: PaLM, Chowdhery et al. 2022,
    Appendix B). ``why_hw`` says why recomputation is or is not counted."""
    w = sp.sympify(weight)
    hardware = hardware and recompute != "none"
    again_params = 2 * P if hardware and recompute == "full" else 0
    fwd_attn = attention_fwd_per_token(attention)
    again_attn = fwd_attn if hardware else 0
    of = "" if w == 1 else "; per token, times the tokens"
    if again_params:
        why_params = ("8 FLOPs per parameter per token: 2 forward, 2 for the forward run again under full "
                      f"recomputation (recompute=full{why_hw}), 4 backward")
    else:
        why_params = "6 FLOPs per parameter per token: 2 forward, 4 backward" + {
            "none": "",
            "full": f"; the forward run again (recompute=full) is not counted{why_hw}",
            "selective": "; selective recomputation (recompute=selective) redoes no matmul with the weights",
        }[recompute]
    if attention == "none":
        why_params += "; attention's dot products left out (attention=none, the book's)"
    steps = [Step(r"\mathrm{FLOPs}_{\mathrm{params}}", (6 * P + again_params) * w, why_params + of, "FLOP")]
    if attention != "none":
        why = _ATTN_WHY[attention]
        redo = ("each layer's forward again" if recompute == "full" else
                "selective recomputation redoes attention's QK^T, softmax and softmax·V, Korthikanti et al. 2022, "
                "Section 5")
        if again_attn:
            why += f"; plus its {_FWD[attention]} forward again (recompute={recompute}{why_hw}: {redo})"
        elif recompute != "none":
            why += f"; its forward run again (recompute={recompute}: {redo}) is not counted{why_hw}"
        steps.append(Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", (3 * fwd_attn + again_attn) * w, why + of, "FLOP"))
    total = sum((st.expr for st in steps), sp.Integer(0))
    label = r"\mathrm{FLOPs}/\mathrm{token}" if w == 1 else r"\mathrm{FLOPs}"
    steps.append(Step(label, total, ("hardware FLOPs: what the chips ran, recomputation included" if hardware
                                     else "model FLOPs: what the model needs, recomputation not counted")
                      + (", per token" if w == 1 else ""), "FLOP" if w != 1 else "FLOP/token"))
    return tuple(steps)
