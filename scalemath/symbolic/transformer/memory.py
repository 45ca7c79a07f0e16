"""Memory of training and serving a transformer: bytes of the weights, gradients and optimizer state, of the
activations kept for the backward pass under each checkpointing policy, and of the KV cache.
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from .common import KV, REMAT, TRAINING, B, D, F, H, K, L, P, S, b_g, b_opt, b_w, b_x, n_ckpt


# -- memory --------------------------------------------------------------------------------------

@functools.cache
def weights_bytes() -> Derivation:
    return Derivation("bytes of the weights", (
        Step(r"\mathrm{bytes}_{\mathrm{w}}", b_w * P, "one weight element per parameter", "byte"),), TRAINING)


@functools.cache
def gradient_bytes() -> Derivation:
    return Derivation("bytes of the gradients", (
        Step(r"\mathrm{bytes}_{\mathrm{g}}", b_g * P, "one gradient element per parameter", "byte"),), TRAINING)


@functools.cache
def optimizer_bytes() -> Derivation:
    return Derivation("bytes of the optimizer state", (Step(
        r"\mathrm{bytes}_{\mathrm{opt}}", b_opt * P,
        "Adam keeps two moments per parameter: b_opt = 8 in fp32 (12 with an fp32 master copy of the weights)",
        "byte"),), TRAINING)


@functools.cache
def training_state_bytes() -> Derivation:
    w, opt = weights_bytes().result, optimizer_bytes().result
    return Derivation("bytes of weights plus optimizer state", (w, opt, Step(
        r"\mathrm{bytes}", w.expr + opt.expr,
        "weights and Adam moments: 2 + 8 = 10 bytes per parameter for bf16 weights and fp32 moments", "byte")),
        TRAINING)


@functools.cache
def training_state_bytes_with_grads() -> Derivation:
    w, g, opt = weights_bytes().result, gradient_bytes().result, optimizer_bytes().result
    return Derivation("bytes of weights, gradients and optimizer state", (w, g, opt, Step(
        r"\mathrm{bytes}", w.expr + g.expr + opt.expr, "all three (activations not included)", "byte")), TRAINING)


#: saved [B, D]-sized tensors per layer for each checkpointing policy of the book
CHECKPOINT_POLICIES = {
    "no_remat": (20, "no rematerialisation: about 20 intermediates of size [B,D] kept per layer"),
    "block_remat": (1, "block remat: only each layer's input is kept"),
    "big_matmuls": (7, "only the outputs of the 7 big matmuls (Q, K, V, O, W_in1, W_in2, W_out) are kept"),
}


@functools.cache
def activation_bytes(policy: str | None = None) -> Derivation:
    """Saved activations over L layers and B tokens; ``policy`` fixes the checkpoints per layer."""
    if policy is None:
        count, why, title = n_ckpt, "n_ckpt tensors of size [B,D] kept per layer", "with n_ckpt checkpoints per layer"
    else:
        count, why = CHECKPOINT_POLICIES[policy]
        title = policy.replace("_", " ").replace("remat", "rematerialisation")
    return Derivation(f"activation bytes kept for the backward pass ({title})", (
        Step(r"\mathrm{bytes}_{\mathrm{layer}}", count * b_x * B * D, why, "byte"),
        Step(r"\mathrm{bytes}_{\mathrm{act}}", count * b_x * B * D * L, "over L layers", "byte")), REMAT)


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
