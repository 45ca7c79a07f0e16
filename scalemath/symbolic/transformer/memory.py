"""Memory of training and serving a transformer: bytes of the weights, gradients and optimizer state (under the
``optimizer`` convention), of the activations kept for the backward pass under each checkpointing policy (the book's
counts, or Korthikanti et al. 2022's under the ``activations`` convention), and of the KV cache.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from .common import KV, REMAT, TRAINING, B, D, F, H, K, L, N, P, S, T, b_g, b_opt, b_w, b_x, n_ckpt
from ..symbols import sym

n_tp = sym("n_tp")

#: Where the optimizer conventions' byte counts come from.
MIXED_SRC = ("Megatron-LM's distributed-optimizer guide (https://docs.nvidia.com/megatron/dist-optimizer.md): bf16 "
             "parameters and fp32 gradients, 18 bytes per parameter (6 + 12/d with the distributed optimizer)")
ZERO_SRC = "Rajbhandari et al. 2020 (ZeRO), Section 3.1: 2Ψ + 2Ψ + KΨ with K = 12"


def element_bytes(optimizer: str = "book") -> tuple[sp.Expr, sp.Expr, str]:
    """Bytes per parameter of the gradients and of the optimizer state under an ``optimizer`` convention, and why.

    The weights keep their own dtype (b_w, bound from --dtype or --weight-dtype) under every choice.

    >>> element_bytes("mixed-precision")[:2], element_bytes("zero-paper")[:2]
    ((4, 12), (b_w, 12))
    """
    if optimizer == "book":
        return b_g, b_opt, "b_g bytes per gradient, b_opt of Adam state per parameter (the book's 8: two fp32 moments)"
    if optimizer == "mixed-precision":
        return (sp.Integer(4), sp.Integer(12),
                "mixed precision: fp32 gradients (4 bytes), an fp32 master copy and two fp32 Adam moments (12 bytes)")
    if optimizer == "zero-paper":
        return (b_w, sp.Integer(12), "the ZeRO paper's: gradients in the weights' 16-bit dtype, K = 12 bytes of fp32 "
                                     "master copy and Adam moments")
    raise ValueError(f"no optimizer convention {optimizer!r}")


def _source(optimizer: str) -> str:
    return {"book": TRAINING, "mixed-precision": MIXED_SRC, "zero-paper": ZERO_SRC}[optimizer]


# -- memory --------------------------------------------------------------------------------------

@functools.cache
def weights_bytes() -> Derivation:
    return Derivation("bytes of the weights", (
        Step(r"\mathrm{bytes}_{\mathrm{w}}", b_w * P, "one weight element per parameter", "byte"),), TRAINING)


@functools.cache
def gradient_bytes(optimizer: str = "book") -> Derivation:
    grad, _, why = element_bytes(optimizer)
    return Derivation("bytes of the gradients", (Step(
        r"\mathrm{bytes}_{\mathrm{g}}", grad * P,
        "one gradient element per parameter" + ("" if optimizer == "book" else f" ({why})"), "byte"),),
        _source(optimizer))


@functools.cache
def optimizer_bytes(optimizer: str = "book") -> Derivation:
    _, opt, why = element_bytes(optimizer)
    if optimizer == "book":
        why = "Adam keeps two moments per parameter: b_opt = 8 in fp32 (12 with an fp32 master copy of the weights)"
    return Derivation("bytes of the optimizer state", (Step(
        r"\mathrm{bytes}_{\mathrm{opt}}", opt * P, why, "byte"),), _source(optimizer))


@functools.cache
def training_state_bytes(optimizer: str = "book") -> Derivation:
    w, opt = weights_bytes().result, optimizer_bytes(optimizer).result
    why = ("weights and Adam moments: 2 + 8 = 10 bytes per parameter for bf16 weights and fp32 moments"
           if optimizer == "book" else "weights and optimizer state (gradients not included)")
    return Derivation("bytes of weights plus optimizer state", (w, opt, Step(
        r"\mathrm{bytes}", w.expr + opt.expr, why, "byte")), _source(optimizer))


@functools.cache
def training_state_bytes_with_grads(optimizer: str = "book") -> Derivation:
    w, g, opt = weights_bytes().result, gradient_bytes(optimizer).result, optimizer_bytes(optimizer).result
    why = "all three (activations not included)"
    if optimizer != "book":
        why += f": {sp.sstr(sp.expand((w.expr + g.expr + opt.expr) / P))} bytes per parameter"
    return Derivation("bytes of weights, gradients and optimizer state", (w, g, opt, Step(
        r"\mathrm{bytes}", w.expr + g.expr + opt.expr, why, "byte")), _source(optimizer))


#: saved [B, D]-sized tensors per layer for each checkpointing policy of the book
CHECKPOINT_POLICIES = {
    "no_remat": (20, "no rematerialisation: about 20 intermediates of size [B,D] kept per layer"),
    "block_remat": (1, "block remat: only each layer's input is kept"),
    "big_matmuls": (7, "only the outputs of the 7 big matmuls (Q, K, V, O, W_in1, W_in2, W_out) are kept"),
}


@functools.cache
def activation_bytes(policy: str | None = None, activations: str = "book", recompute: str = "none") -> Derivation:
    """Saved activations over L layers and B tokens; ``policy`` fixes the checkpoints per layer. Under
    ``activations="korthikanti"`` (the general form only) Korthikanti et al.'s count with tensor and sequence
    parallelism over n_TP ranks, cut by ``recompute`` (none, selective or full)."""
    if activations == "korthikanti" and policy is None:
        return korthikanti_activation_bytes("tp_sp", recompute)
    if policy is None:
        count, why, title = n_ckpt, "n_ckpt tensors of size [B,D] kept per layer", "with n_ckpt checkpoints per layer"
    else:
        count, why = CHECKPOINT_POLICIES[policy]
        title = policy.replace("_", " ").replace("remat", "rematerialisation")
    return Derivation(f"activation bytes kept for the backward pass ({title})", (
        Step(r"\mathrm{bytes}_{\mathrm{layer}}", count * b_x * B * D, why, "byte"),
        Step(r"\mathrm{bytes}_{\mathrm{act}}", count * b_x * B * D * L, "over L layers", "byte")), REMAT)


KORTHIKANTI = ("Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models', Section 4 "
               "and Table 2")

#: Korthikanti et al.'s bytes per layer over s·b·h (16-bit activations, 1-byte dropout masks), by (parallelism,
#: recomputation): s·b = B tokens of a micro-batch, h = D, a = N heads, s = T, t = n_TP.
_ATTN = 5 * N * T / D
KORTHIKANTI_FORMS = {
    ("none", "none"): (34 + _ATTN, "no parallelism: attention 11·sbh + 5·a·s²·b, MLP 19·sbh, two layer norms 4·sbh"),
    ("tp", "none"): (10 + 24 / n_tp + _ATTN / n_tp,
                     "tensor parallelism over t ranks: the layer norms' and dropouts' 10·sbh stay whole on every rank"),
    ("tp_sp", "none"): ((34 + _ATTN) / n_tp,
                        "tensor and sequence parallelism: every term split over the t ranks"),
    ("tp", "selective"): (10 + 24 / n_tp,
                          "tensor parallelism, attention's softmax, dropout and QK^T/AV inputs recomputed"),
    ("tp_sp", "selective"): (34 / n_tp, "tensor and sequence parallelism with selective recomputation"),
    ("none", "selective"): (sp.Integer(34), "selective recomputation, no parallelism"),
    ("tp", "full"): (sp.Integer(2), "full recomputation: only each layer's 16-bit input is kept"),
    ("tp_sp", "full"): (sp.Integer(2), "full recomputation: only each layer's 16-bit input is kept (the paper's "
                                       "2·sbh, not split over the ranks)"),
    ("none", "full"): (sp.Integer(2), "full recomputation: only each layer's 16-bit input is kept"),
}


#: Where the paper writes each form out (the others are rows of its Table 2 only).
_EQUATIONS = {("none", "none"): "Equation 1", ("tp", "none"): "Equation 2", ("tp_sp", "none"): "Equations 4 and 5",
              ("tp_sp", "selective"): "Equation 6", ("none", "full"): "Section 5 (2sbhL)",
              ("tp_sp", "full"): "Section 5 (2sbhL)", ("tp", "full"): "Section 5 (2sbhL)"}


@functools.cache
def korthikanti_activation_bytes(parallel: str = "none", recompute: str = "none") -> Derivation:
    """Korthikanti et al. 2022's activation bytes over L layers of a micro-batch of B tokens (s·b), scaled by b_x/2
    from the paper's 16-bit count. With pipeline parallelism (1F1B) the first stage holds this too: L/p layers for
    p micro-batches in flight (Section 4.2.3).

    >>> korthikanti_activation_bytes("none").result.expr
    B*D*L*b_x*(34 + 5*N*T/D)/2
    """
    factor, why = KORTHIKANTI_FORMS[(parallel, recompute)]
    per_layer = b_x / 2 * B * D * factor
    title = {"none": "no parallelism", "tp": "tensor parallel", "tp_sp": "tensor and sequence parallel"}[parallel]
    if recompute != "none":
        title += f", {recompute} recomputation"
    return Derivation(f"activation bytes kept for the backward pass (Korthikanti et al.: {title})", (
        Step(r"\mathrm{bytes}_{\mathrm{layer}}", per_layer,
             f"s·b·h·({sp.sstr(factor)}) bytes with s·b = B tokens, h = D, a = N, s = T, t = n_TP: {why}; "
             "b_x/2 scales the paper's 16-bit count", "byte"),
        Step(r"\mathrm{bytes}_{\mathrm{act}}", per_layer * L, "over L layers", "byte")),
        f"{KORTHIKANTI}, {_EQUATIONS.get((parallel, recompute), 'Table 2')}")


@functools.cache
def activation_bytes_ffw_outputs() -> Derivation:
    return Derivation("activation bytes with checkpoints after the three FFW matmuls", (
        Step(r"\mathrm{bytes}_{\mathrm{layer}}", b_x * B * (D + 2 * F),
             "two [B,F] outputs (W_in1, W_in2) and one [B,D] (W_out) per layer", "byte"),
        Step(r"\mathrm{bytes}_{\mathrm{act}}", b_x * L * B * (D + 2 * F), "over L layers", "byte")), TRAINING)


@functools.cache
def kv_cache_bytes_per_token() -> Derivation:
    return Derivation("KV cache bytes per token", (Step(
        r"\mathrm{bytes}_{\mathrm{kv}}", 2 * L * K * H * b_x,
        "a key and a value of K heads x H per layer", "byte"),), KV)


@functools.cache
def kv_cache_bytes() -> Derivation:
    per_token = kv_cache_bytes_per_token().result
    return Derivation("KV cache bytes of one sequence of S tokens", (per_token, Step(
        r"\mathrm{bytes}_{\mathrm{kv,seq}}", S * per_token.expr, "S cached tokens: cache[2, S, L, K, H]",
        "byte")), KV)
