"""FLOPs of a transformer (transformers.md): per block over B tokens, per token with and without attention,
of a whole training run (6 or, with rematerialisation, 8 per parameter per token), and the run's FLOPs
utilisation. ``B`` counts tokens, and FLOPs "per token" are for the whole model unless the title says "one
layer".
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from .common import (APPLIED, FRACTION, MOE, PARAMS_SRC, PROBLEMS, REMAT, RULE, TOKENS, B, C, D, H, K, L, N, P_act, T,
                     V, n_dev, t_run)
from .counts import BOOK_CHOICES, counts_recompute, per_token_steps
from .params import _attention_steps, _mlp_step


# -- FLOPs ---------------------------------------------------------------------------------------

_SIX = "6 FLOPs per parameter per token: 2 forward, 4 backward (a gradient for each operand)"


@functools.cache
def mlp_flops() -> Derivation:
    mlp = _mlp_step()
    return Derivation("training FLOPs of one MLP block over B tokens", (
        mlp, Step(r"\mathrm{FLOPs}_{\mathrm{mlp}}", 6 * B * mlp.expr, _SIX, "FLOP")), PARAMS_SRC)


@functools.cache
def projection_flops() -> Derivation:
    attn = _attention_steps()[-1]
    return Derivation("training FLOPs of one layer's Q, K, V, O projections over B tokens", (
        attn, Step(r"\mathrm{FLOPs}_{\mathrm{qkvo}}", 6 * B * attn.expr, _SIX, "FLOP")), PARAMS_SRC)


def _dot_attention_steps(per_token: bool) -> tuple[Step, ...]:
    b = 1 if per_token else B
    who = "a token's" if per_token else "each of B tokens'"
    return (
        Step(r"\mathrm{FLOPs}_{QK^T}", 2 * b * T * N * H,
             f"{who} N query heads each dot an H-vector with T keys (forward)", "FLOP"),
        Step(r"\mathrm{FLOPs}_{PV}", 2 * b * T * N * H,
             "the softmax weights over T positions mix T value vectors of size H, per query head (forward)",
             "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{attn,fwd}}", 4 * b * T * N * H, "both contractions, forward", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", 12 * b * T * N * H,
             "training is 3x the forward pass (softmax, O(TN), left out)", "FLOP"),
    )


@functools.cache
def attention_flops() -> Derivation:
    """Dot-product attention of one layer over B tokens, each attending to T positions."""
    return Derivation("training FLOPs of one layer's dot-product attention over B tokens",
                      _dot_attention_steps(False), PARAMS_SRC)


@functools.cache
def unembedding_flops() -> Derivation:
    return Derivation("training FLOPs of the unembedding over B tokens", (
        Step(r"P_{\mathrm{unemb}}", D * V, "W_unembed[D,V], used once, not per layer", "param"),
        Step(r"\mathrm{FLOPs}_{\mathrm{unemb}}", 6 * B * D * V, _SIX, "FLOP")), PARAMS_SRC)


def _matmul_param_step(experts: str) -> Step:
    mlp = _mlp_step(experts).expr
    why = ("the matmul parameters of one layer: MLP and projections (norms are not matmuls)"
           if experts == "dense" else "the matmul parameters one token uses per layer: k experts and projections")
    return Step(r"P_{\mathrm{matmul}}", mlp + 2 * D * (N + K) * H, why, "param")


_RECOMPUTED = {
    "full": ("8 FLOPs per parameter per token, per layer: 2 forward, 2 for the forward run again (recompute=full: "
             "each layer's forward is recomputed in the backward pass), 4 backward"),
    "selective": _SIX + ", per layer (recompute=selective keeps every matmul's output)",
}


def _per_token_steps(experts: str, recompute: str = "none") -> tuple[Step, ...]:
    per_layer = _matmul_param_step(experts)
    matmul = Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", (8 if recompute == "full" else 6) * per_layer.expr,
                  _RECOMPUTED.get(recompute, _SIX + ", per layer"), "FLOP")
    attn = Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", (12 if recompute == "none" else 16) * T * N * H,
                "dot-product attention per layer: QK^T and the mix with V over T positions, 4TNH forward, x3"
                + ("" if recompute == "none" else
                   f", plus 4TNH for its forward again (recompute={recompute}"
                   + (": attention's QK^T, softmax and softmax·V are recomputed, Korthikanti et al. 2022, Section 5)"
                      if recompute == "selective" else ")")),
                "FLOP")
    unemb = Step(r"\mathrm{FLOPs}_{\mathrm{unemb}}", 6 * D * V,
                 "the unembedding [D,V], once; the embedding is a lookup, not a matmul"
                 + ("" if recompute == "none" else "; its forward is not recomputed (Megatron-LM's Eq. 3 counts "
                                                   "the logit layer 3x, not 4x)"), "FLOP")
    total = Step(r"\mathrm{FLOPs}_{\mathrm{token}}", L * (matmul.expr + attn.expr) + unemb.expr,
                 "L layers plus the unembedding", "FLOP")
    return per_layer, matmul, attn, unemb, total


@functools.cache
def flops_per_token(experts: str = "dense", recompute: str = "none") -> Derivation:
    """Training FLOPs per token, attention included; ``experts="active"`` for an MoE (k experts per token);
    ``recompute`` counts the FLOPs the chips run when activations are recomputed (hardware FLOPs)."""
    title = "training FLOPs per token" + (" (mixture of experts, k experts per token)" if experts != "dense" else "")
    if recompute != "none":
        title += f", recomputed FLOPs included (recompute={recompute})"
    return Derivation(title, _per_token_steps(experts, recompute), MOE if experts != "dense" else RULE)


@functools.cache
def forward_flops_per_token(experts: str = "dense") -> Derivation:
    """A third of :func:`flops_per_token`: 2 FLOPs per matmul parameter, 4TNH of attention per layer."""
    per_layer = _matmul_param_step(experts)
    matmul = Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", 2 * per_layer.expr,
                  "a multiply and an add per parameter per token, per layer", "FLOP")
    attn = Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", 4 * T * N * H,
                "dot-product attention per layer: QK^T and the mix with V over T positions", "FLOP")
    unemb = Step(r"\mathrm{FLOPs}_{\mathrm{unemb}}", 2 * D * V, "the unembedding [D,V], once", "FLOP")
    total = Step(r"\mathrm{FLOPs}_{\mathrm{fwd}}", L * (matmul.expr + attn.expr) + unemb.expr,
                 "L layers plus the unembedding: a third of the training FLOPs", "FLOP")
    title = "forward FLOPs per token" + (" (mixture of experts, k experts per token)" if experts != "dense" else "")
    return Derivation(title, (per_layer, matmul, attn, unemb, total), MOE if experts != "dense" else RULE)


@functools.cache
def matmul_flops_per_token() -> Derivation:
    """The rule of thumb: 6 x non-embedding parameters per token, attention dot products left out."""
    per_layer = _matmul_param_step("dense")
    return Derivation("training FLOPs per token of the layers' matmuls (6 x parameters)", (
        per_layer,
        Step(r"\mathrm{FLOPs}_{\mathrm{token}}", 6 * L * per_layer.expr, _SIX + ", over L layers", "FLOP")), RULE)


@functools.cache
def attention_flops_per_token(forward: bool = False) -> Derivation:
    steps = _dot_attention_steps(True)
    last = steps[2] if forward else steps[3]
    return Derivation(f"{'forward' if forward else 'training'} FLOPs per token of dot-product attention",
                      steps[: 3 if forward else 4] + (Step(
                          r"\mathrm{FLOPs}_{\mathrm{attn,token}}", L * last.expr, "over L layers", "FLOP"),),
                      FRACTION)


_EXECUTED = ": training FLOPs are what the chips run, recomputed ones included"


@functools.cache
def training_flops(attention: str = "none", recompute: str = "none") -> Derivation:
    """The book's 6·P_active·tokens; under other conventions, attention's dot products (causal or over all T)
    and the recomputed forward are added (:mod:`.counts`)."""
    if (attention, recompute) != (BOOK_CHOICES["attention"], BOOK_CHOICES["recompute"]):
        steps = per_token_steps(P_act, attention, recompute, hardware=True, why_hw=_EXECUTED, weight=TOKENS)
        note = ("the 8·P form runs the unembedding's forward again too; Megatron-LM's Eq. 3 does not "
                "(transformer.megatron_iteration_flops, 6·D·V per token for the logits)"
                if recompute == "full" else "")
        return Derivation(f"training FLOPs (attention={attention}, recompute={recompute})", steps,
                          APPLIED + "; Chowdhery et al. 2022 (PaLM), Appendix B; Narayanan et al. 2021 (Megatron-LM), "
                          "Section 5.1", note=note)
    return Derivation("training FLOPs (6 x parameters x tokens)", (
        Step(r"\mathrm{FLOPs}_{\mathrm{fwd}}", 2 * P_act * TOKENS,
             "a multiply and an add per (active) parameter per token", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{bwd}}", 4 * P_act * TOKENS,
             "backward: the gradients with respect to the weights and to the activations", "FLOP"),
        Step(r"\mathrm{FLOPs}", 6 * P_act * TOKENS, "forward plus backward", "FLOP")), APPLIED)


@functools.cache
def training_flops_remat() -> Derivation:
    return Derivation("training FLOPs with block rematerialisation (8 x parameters x tokens)", (
        Step(r"\mathrm{FLOPs}_{\mathrm{fwd}}", 2 * P_act * TOKENS, "the forward pass", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{remat}}", 2 * P_act * TOKENS,
             "the forward pass again, layer by layer, during backward", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{bwd}}", 4 * P_act * TOKENS, "the backward pass", "FLOP"),
        Step(r"\mathrm{FLOPs}", 8 * P_act * TOKENS, "6 becomes 8 FLOPs per parameter per token", "FLOP")), REMAT)


@functools.cache
def remat_extra_flops() -> Derivation:
    """Saving only the 7 big matmul outputs: backward redoes QK^T and softmax·V (transformers.md Q6)."""
    return Derivation("FLOPs recomputed per layer when only the big matmul outputs are saved", (
        Step(r"\mathrm{FLOPs}_{QK^T}", 2 * B * T * N * H, "redo the scores QK^T for B tokens", "FLOP"),
        Step(r"\mathrm{FLOPs}_{PV}", 2 * B * T * N * H, "redo softmax(·)·V", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{extra}}", 4 * B * T * N * H,
             "both, per layer (elementwise O(BD) and O(BF) work left out)", "FLOP")), PROBLEMS)


@functools.cache
def mfu(attention: str = "none", recompute: str = "none", utilisation: str = "mfu") -> Derivation:
    """The book's MFU from 6·P_active·tokens; under other conventions the FLOPs used add attention's dot
    products, and under utilisation=hfu the recomputed ones too (then the result is the HFU)."""
    if (attention, recompute, utilisation) != tuple(BOOK_CHOICES.values()):
        hfu = counts_recompute(utilisation)
        why = (": HFU counts the FLOPs the chips ran" if hfu else ": MFU counts the model's FLOPs only")
        used_steps = per_token_steps(P_act, attention, recompute, hardware=hfu, why_hw=why, weight=TOKENS)
        available = n_dev * t_run * C
        name = "HFU" if hfu else "MFU"
        return Derivation(f"{'hardware' if hfu else 'model'} FLOPs utilisation of a training run "
                          f"(attention={attention}, recompute={recompute}, utilisation={utilisation})", used_steps + (
            Step(r"\mathrm{FLOPs}_{\mathrm{avail}}", available, "chips x seconds x peak FLOPs/s", "FLOP"),
            Step(rf"\mathrm{{{name}}}", used_steps[-1].expr / available, "used over available", "1")),
            PROBLEMS + "; PaLM (Chowdhery et al. 2022), Appendix B")
    used = 6 * P_act * TOKENS
    available = n_dev * t_run * C
    return Derivation("model FLOPs utilisation of a training run", (
        Step(r"\mathrm{FLOPs}_{\mathrm{used}}", used, "6 x (active) parameters x tokens", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{avail}}", available, "chips x seconds x peak FLOPs/s", "FLOP"),
        Step(r"\mathrm{MFU}", used / available, "used over available", "1")), PROBLEMS)
