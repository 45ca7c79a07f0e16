"""FLOP counts as papers print them: Megatron-LM's FLOPs per iteration (Narayanan et al. 2021, Eq. 3), Kaplan et
al. 2020's forward FLOPs per token, MFU and HFU from an achieved FLOP/s or a throughput per chip, and a run's
compute in petaFLOP/s-days (Brown et al. 2020, Table D.1).

In the book's symbols: ``B`` counts tokens (Megatron-LM's B·s), ``T`` is the sequence length (s, n_ctx), ``D``
the model width (h, d_model), ``L`` the layers (l, n_layer), ``N·H`` the attention width (d_attn), ``V_vocab``
the vocabulary.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import APPLIED, B, C, D, H, L, N, P, P_act, T, V
from .counts import BOOK_CHOICES, attention_fwd_per_token, counts_recompute, per_token_steps

__all__ = ["megatron_iteration_flops", "kaplan_forward_flops_per_token", "utilisation_from_achieved",
           "utilisation_from_throughput", "pf_days", "PF_DAY"]

MEGATRON = "Narayanan et al. 2021 (Megatron-LM), Section 5.1, Eq. 3"
KAPLAN = "Kaplan et al. 2020, Section 2.1 and Table 1"
PALM = "Chowdhery et al. 2022 (PaLM), Section 4.1 and Appendix B"
GPT3 = "Brown et al. 2020 (GPT-3), Appendix D, Table D.1"

#: FLOPs in one petaFLOP/s-day: 10^15 FLOP/s for 86400 s (GPT-3's Table D.1: 8.64e+19).
PF_DAY = 10**15 * 86400

C_ach, r_tok, n_flop = sym("C_ach"), sym("r_tok"), sym("n_flop")


@functools.cache
def megatron_iteration_flops() -> Derivation:
    """96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) for a GPT model (a plain MLP of width 4h, N·H = h) with full
    recomputation; B here counts the iteration's tokens, Megatron-LM's B·s."""
    layer_fwd = Step(r"\mathrm{FLOPs}_{\mathrm{layer,fwd}}", 24 * B * D**2 + 4 * B * T * D,
                     "forward of one GPT layer over B tokens: Q, K, V projections 6BD², scores QK^T 2BTD, softmax·V "
                     "2BTD, output projection 2BD², MLP D→4D→D 16BD²", "FLOP")
    layers = Step(r"\mathrm{FLOPs}_{\mathrm{layers}}", 4 * L * layer_fwd.expr,
                  "x4 over L layers: the forward, the forward again (full recomputation), and the backward (twice "
                  "the forward)", "FLOP")
    logits = Step(r"\mathrm{FLOPs}_{\mathrm{logits}}", 6 * B * D * V,
                  "the logit layer [D,V]: 2BDV forward, 4BDV backward; it is not recomputed", "FLOP")
    total = Step(r"F", 96 * B * L * D**2 * (1 + T / (6 * D) + V / (16 * L * D)),
                 "the sum, as Eq. 3 prints it. It is transformer.flops_per_token under recompute=full (attention over "
                 "all T, the book's count there) times B, for n_mlp = 2, F = 4D, K = N and N·H = D: 8 x 12D² per "
                 "layer (the matmuls, recomputed), 16TD per layer (attention, recomputed) and 6DV (logits, not); "
                 "transformer.training_flops under attention=full, recompute=full counts 8·P per token and so runs "
                 "the logits' forward again too (2·B·D·V more)", "FLOP")
    return Derivation("FLOPs of one training iteration, full recomputation (Megatron-LM, Eq. 3)",
                      (layer_fwd, layers, logits, total), MEGATRON)


@functools.cache
def kaplan_forward_flops_per_token() -> Derivation:
    """C_forward = 2N + 2·n_layer·n_ctx·d_attn, N the non-embedding parameters."""
    params = Step(r"C_{\mathrm{params}}", 2 * P,
                  "a multiply and an add per non-embedding parameter (Kaplan et al.'s N: P here counts the "
                  "non-embedding parameters)", "FLOP")
    attn = Step(r"C_{\mathrm{attn}}", 2 * L * T * N * H,
                "attention's dot products, 2·n_layer·n_ctx·d_attn with d_attn = N·H: half of the 4·L·N·H·T over all "
                f"T positions, the same as the causal count ({sp.sstr(attention_fwd_per_token('causal'))})", "FLOP")
    return Derivation("forward FLOPs per token (Kaplan et al. 2020)", (
        params, attn, Step(r"C_{\mathrm{forward}}", params.expr + attn.expr,
                           "Kaplan et al.'s C_forward; training is about 3x (C ≈ 6N)", "FLOP")), KAPLAN)


def _name(utilisation: str) -> str:
    return "HFU" if counts_recompute(utilisation) else "MFU"


@functools.cache
def utilisation_from_achieved(utilisation: str = "mfu") -> Derivation:
    """Achieved FLOP/s per chip over the chip's peak: an MFU when the achieved FLOPs are the model's, an HFU when
    they are the chips' (recomputation included), as Megatron-LM's Table 1 prints them."""
    name = _name(utilisation)
    what = ("the chips' FLOPs, recomputed ones included (utilisation=hfu)" if name == "HFU"
            else "the model's FLOPs, recomputation not counted (utilisation=mfu)")
    return Derivation(f"{'hardware' if name == 'HFU' else 'model'} FLOPs utilisation from the achieved FLOP/s "
                      "per chip", (Step(rf"\mathrm{{{name}}}", C_ach / C,
                                        f"achieved over peak FLOP/s of one chip; the achieved rate counts {what}",
                                        "1"),), PALM)


@functools.cache
def utilisation_from_throughput(attention: str = "none", recompute: str = "none",
                                utilisation: str = "mfu") -> Derivation:
    """Tokens/s per chip x FLOPs per token over the chip's peak (PaLM's MFU: observed throughput over the
    theoretical peak throughput)."""
    name = _name(utilisation)
    why = ": HFU counts the FLOPs the chips ran" if name == "HFU" else ": MFU counts the model's FLOPs only"
    per_token = per_token_steps(P_act, attention, recompute, hardware=name == "HFU", why_hw=why)
    achieved = Step(r"C_{\mathrm{ach}}", r_tok * per_token[-1].expr,
                    "tokens per second per chip x FLOPs per token", "FLOP/s")
    chosen = "" if (attention, recompute, utilisation) == tuple(BOOK_CHOICES.values()) else \
        f" (attention={attention}, recompute={recompute}, utilisation={utilisation})"
    return Derivation(f"{'hardware' if name == 'HFU' else 'model'} FLOPs utilisation from tokens/s per chip"
                      + chosen, per_token + (achieved, Step(rf"\mathrm{{{name}}}", achieved.expr / C,
                                                            "achieved over peak FLOP/s of one chip", "1")), PALM)


@functools.cache
def pf_days() -> Derivation:
    """A number of FLOPs in petaFLOP/s-days, the unit GPT-3's Table D.1 prints a run's compute in."""
    return Derivation("FLOPs in petaFLOP/s-days", (
        Step(r"\mathrm{PF\text{-}days}", n_flop / PF_DAY,
             "one petaFLOP/s-day is 10^15 FLOP/s for 86400 s: 8.64e19 FLOPs", "PF-day"),), GPT3 + "; " + APPLIED)
