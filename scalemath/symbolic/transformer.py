"""Transformer accounting (book part 4, transformers.md): parameters, FLOPs, memory, intensity.

Symbols are the book's: D model width, F MLP width, N query heads, K key/value heads,
H head dimension, L layers, V (``V_vocab``) vocabulary, E experts and k experts per
token. Two conventions differ from the chapter's text, on purpose:

* ``B`` counts **tokens** (the engine's meaning everywhere), so the book's ``B·T`` with
  ``B`` sequences is ``B`` here, and the book's ``12BT²NH`` attention cost is ``12·B·T·N·H``.
* FLOPs "per token" are for the whole model unless the title says "one layer".

The architecture enters the forms as symbols that ``--model`` binds: ``n_mlp`` weight matrices
per MLP (3 for a gated MLP such as SwiGLU, 2 for a plain one) and ``n_emb`` embedding matrices
(2, or 1 when the unembedding is tied to the embedding). So one closed form serves GPT-3 and
LLaMA alike; without a model they take the book's values, 3 and 2. FLOPs of training and
serving use ``P_active``, the parameters one token goes through (``P`` for a dense model, the
k routed experts' share for a mixture of experts).

>>> params().expr
D*V_vocab*n_emb + L*(D*F*n_mlp + 2*D*H*(K + N) + 2*D + P_extra)
>>> attention_crossover_T_book().expr
8*D
>>> moe_critical_batch().expr
C*E*b_w/(2*W*k)
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step, crossover
from .symbols import sym

__all__ = [
    "mlp_params", "attention_params", "norm_params", "embedding_params", "params_per_layer", "params",
    "moe_mlp_params",
    "mlp_flops", "projection_flops", "attention_flops", "unembedding_flops",
    "flops_per_token", "forward_flops_per_token", "matmul_flops_per_token", "attention_flops_per_token",
    "attention_to_matmul_ratio", "attention_to_matmul_ratio_book", "attention_crossover_T",
    "attention_crossover_T_book", "attention_projection_crossover_T",
    "training_flops", "training_flops_remat", "remat_extra_flops", "mfu",
    "weights_bytes", "gradient_bytes", "optimizer_bytes", "training_state_bytes",
    "training_state_bytes_with_grads", "activation_bytes", "activation_bytes_ffw_outputs",
    "kv_cache_bytes_per_token", "kv_cache_bytes", "moe_critical_batch",
    "attention_intensity", "attention_intensity_prefill", "attention_intensity_decode",
    "attention_prefill_critical_T", "CHECKPOINT_POLICIES",
]

PARAMS_SRC = "transformers.md, 'Global FLOPs and Params Calculation'"
RULE = "transformers.md, 'General rule of thumb for Transformer FLOPs'"
FRACTION = "transformers.md, 'Fractional cost of attention with context length'"
MOE = "transformers.md, 'Sparsity and Mixture-of-Experts'"
REMAT = "transformers.md, 'Gradient checkpointing'"
KV = "transformers.md, 'Key-Value (KV) caching'"
PROBLEMS = "transformers.md, 'A Few Problems to Work'"
TRAINING = "training.md, 'Some Problems to Work'"
APPLIED = "applied-training.md, 'Counting parameters and FLOPs'"

B, T, S = sym("B"), sym("T"), sym("S")
D, F, N, K, H, L = sym("D"), sym("F"), sym("N"), sym("K"), sym("H"), sym("L")
V, E, k = sym("V_vocab"), sym("E"), sym("k")
P, P_act, TOKENS = sym("P"), sym("P_active"), sym("tokens")
n_mlp, n_emb, P_extra = sym("n_mlp"), sym("n_emb"), sym("P_extra")
b_x, b_w, b_g, b_opt, n_ckpt = sym("b_x"), sym("b_w"), sym("b_g"), sym("b_opt"), sym("n_ckpt")
C, W, n_dev, MFU, t_run = sym("C"), sym("W"), sym("n_dev"), sym("MFU"), sym("t_run")

ARCH = ("the model's architecture enters as symbols bound from --model: n_mlp weight matrices per MLP "
        "(3 gated, 2 plain) and n_emb embedding matrices (1 tied, 2 untied); without a model, the book's 3 and 2")


# -- parameters ----------------------------------------------------------------------------------

def _mlp_step(experts: str = "dense") -> Step:
    shape = "n_mlp matrices of D·F each: 3 for a gated MLP (W_in1, W_in2, W_out), 2 for a plain one (W_in, W_out)"
    if experts == "dense":
        return Step(r"P_{\mathrm{mlp}}", n_mlp * D * F, shape, "param")
    if experts == "total":
        return Step(r"P_{\mathrm{mlp}}", n_mlp * E * D * F,
                    f"E expert MLPs, each n_mlp·D·F ({shape}); the router's E·D is left out, as in the book",
                    "param")
    return Step(r"P_{\mathrm{mlp,active}}", n_mlp * k * D * F,
                "each token runs only k of the E experts, n_mlp·D·F each", "param")


def _attention_steps() -> tuple[Step, ...]:
    return (
        Step(r"P_{W_Q}", D * N * H, "W_Q[D,N,H]: one H-vector per query head", "param"),
        Step(r"P_{W_K} + P_{W_V}", 2 * D * K * H, "W_K and W_V[D,K,H]: K key/value heads each", "param"),
        Step(r"P_{W_O}", N * H * D, "W_O[N,H,D] maps the heads back to the model width", "param"),
        Step(r"P_{\mathrm{attn}}", 2 * D * (N + K) * H, "the four projections together", "param"),
    )


def _norm_step() -> Step:
    return Step(r"P_{\mathrm{norm}}", 2 * D,
                "two norms per layer (before attention and before the MLP), a D-vector each", "param")


def _embedding_step() -> Step:
    return Step(r"P_{\mathrm{emb}}", n_emb * D * V,
                "n_emb matrices of V·D: 2 when the embedding [V,D] and unembedding [D,V] are separate, "
                "1 when they are tied", "param")


@functools.cache
def mlp_params() -> Derivation:
    return Derivation("parameters of one MLP block", (_mlp_step(),), PARAMS_SRC)


@functools.cache
def attention_params() -> Derivation:
    return Derivation("parameters of one attention block (Q, K, V, O projections)", _attention_steps(), PARAMS_SRC)


@functools.cache
def norm_params() -> Derivation:
    return Derivation("parameters of one layer's norms", (_norm_step(),), PARAMS_SRC)


@functools.cache
def embedding_params() -> Derivation:
    return Derivation("embedding parameters", (_embedding_step(),), PARAMS_SRC)


def _layer_steps(experts: str) -> tuple[Step, ...]:
    mlp, attn, norm = _mlp_step(experts), _attention_steps()[-1], _norm_step()
    label = r"P_{\mathrm{layer,active}}" if experts == "active" else r"P_{\mathrm{layer}}"
    return (mlp, attn, norm, Step(label, mlp.expr + attn.expr + norm.expr + P_extra,
                                  "MLP, attention, norms and P_extra, the layer's small tensors besides those "
                                  "(biases such as Qwen's on Q, K, V, QK-norm scales, attention sinks, norms "
                                  "beyond two; 0 for the book's models)", "param"))


@functools.cache
def params_per_layer() -> Derivation:
    return Derivation("parameters of one transformer layer", _layer_steps("dense"), PARAMS_SRC)


@functools.cache
def params(experts: str = "dense") -> Derivation:
    """Total parameters: ``L·(MLP + attention + norms) + embeddings``.

    ``experts`` is ``"dense"`` (one MLP per layer), ``"total"`` (a mixture of E expert MLPs per
    layer: every parameter stored) or ``"active"`` (the k experts one token uses). The final norm
    after the last layer (D more parameters) is left out, as in the book's count.
    """
    if experts not in ("dense", "total", "active"):
        raise ValueError(f"experts must be 'dense', 'total' or 'active', not {experts!r}")
    layer = _layer_steps(experts)
    emb = _embedding_step()
    what = {"dense": "parameters", "total": "total parameters (mixture of experts)",
            "active": "active parameters per token (mixture of experts)"}[experts]
    label = "P_{\\mathrm{active}}" if experts == "active" else "P"
    total = Step(label, L * layer[-1].expr + emb.expr, "L layers plus the embeddings", "param")
    return Derivation(f"transformer {what}", layer + (emb, total), MOE if experts != "dense" else PARAMS_SRC)


@functools.cache
def moe_mlp_params(active: bool = False) -> Derivation:
    title = "active MLP parameters of one MoE layer" if active else "MLP parameters of one MoE layer"
    return Derivation(title, (_mlp_step("active" if active else "total"),), MOE)


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


def _per_token_steps(experts: str) -> tuple[Step, ...]:
    per_layer = _matmul_param_step(experts)
    matmul = Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", 6 * per_layer.expr, _SIX + ", per layer", "FLOP")
    attn = Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", 12 * T * N * H,
                "dot-product attention per layer: QK^T and the mix with V over T positions, 4TNH forward, x3",
                "FLOP")
    unemb = Step(r"\mathrm{FLOPs}_{\mathrm{unemb}}", 6 * D * V,
                 "the unembedding [D,V], once; the embedding is a lookup, not a matmul", "FLOP")
    total = Step(r"\mathrm{FLOPs}_{\mathrm{token}}", L * (matmul.expr + attn.expr) + unemb.expr,
                 "L layers plus the unembedding", "FLOP")
    return per_layer, matmul, attn, unemb, total


@functools.cache
def flops_per_token(experts: str = "dense") -> Derivation:
    """Training FLOPs per token, attention included; ``experts="active"`` for an MoE (k experts per token)."""
    title = "training FLOPs per token" + (" (mixture of experts, k experts per token)" if experts != "dense" else "")
    return Derivation(title, _per_token_steps(experts), MOE if experts != "dense" else RULE)


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


def _attention_side() -> sp.Expr:
    return 12 * T * N * H


def _matmul_side() -> sp.Expr:
    return 6 * (n_mlp * D * F + 2 * D * (N + K) * H)


_BOOK_SHAPE = {n_mlp: 3, F: 4 * D, K: N, H: D / N}


def _book_shape_steps() -> tuple[Step, ...]:
    return (Step("n_{\\mathrm{mlp}}", sp.Integer(3), "the book's gated MLP: three matrices", "1"),
            Step("F", 4 * D, "the book's shape: F = 4D", "element"),
            Step("N H", D, "the heads tile the model width: N·H = D", "element"),
            Step("K", N, "multi-head attention: as many key/value heads as query heads", "element"))


@functools.cache
def attention_to_matmul_ratio() -> Derivation:
    attn, mm = _attention_side(), _matmul_side()
    return Derivation("attention FLOPs over matmul FLOPs, per layer", (
        Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", attn, "dot-product attention per token, training", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", mm, "MLP and projections per token, training", "FLOP"),
        Step(r"\mathrm{ratio}", sp.factor(attn / mm), "the quotient", "1")), FRACTION)


@functools.cache
def attention_to_matmul_ratio_book() -> Derivation:
    attn, mm = _attention_side().subs(_BOOK_SHAPE), _matmul_side().subs(_BOOK_SHAPE)
    return Derivation("attention FLOPs over matmul FLOPs with F = 4D, NH = D, K = N", _book_shape_steps() + (
        Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", attn, "12TNH with NH = D", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", mm, "6(3DF + 4DNH) = 6(12D² + 4D²)", "FLOP"),
        Step(r"\mathrm{ratio}", sp.cancel(attn / mm), "the quotient: T/(8D)", "1")), FRACTION)


@functools.cache
def attention_crossover_T() -> Derivation:
    """The sequence length above which dot-product attention costs more than the matmuls."""
    return crossover(_attention_side(), _matmul_side(), T,
                     title="sequence length at which attention FLOPs equal the matmul FLOPs", source=FRACTION,
                     lhs_label=r"\mathrm{FLOPs}_{\mathrm{attn}}", rhs_label=r"\mathrm{FLOPs}_{\mathrm{matmul}}",
                     side_unit="FLOP", label="T^*", unit="token",
                     why="solve 12TNH = 6(n_mlp·DF + 2D(N+K)H) for T; attention dominates above it")


@functools.cache
def attention_crossover_T_book() -> Derivation:
    return crossover(_attention_side().subs(_BOOK_SHAPE), _matmul_side().subs(_BOOK_SHAPE), T,
                     title="sequence length at which attention FLOPs equal the matmul FLOPs (F = 4D, NH = D, K = N)",
                     source=FRACTION, lhs_label=r"\mathrm{FLOPs}_{\mathrm{attn}}",
                     rhs_label=r"\mathrm{FLOPs}_{\mathrm{matmul}}", side_unit="FLOP", label="T^*", unit="token",
                     why="12TD = 96D²: attention dominates once T > 8D", lead=_book_shape_steps())


@functools.cache
def attention_projection_crossover_T() -> Derivation:
    """Where dot-product attention equals the Q, K, V, O projections: T = D(N+K)/N (2D for MHA)."""
    return crossover(_attention_side(), 12 * D * (N + K) * H, T,
                     title="sequence length at which attention FLOPs equal the QKVO projection FLOPs",
                     source=PROBLEMS, lhs_label=r"\mathrm{FLOPs}_{\mathrm{attn}}",
                     rhs_label=r"\mathrm{FLOPs}_{\mathrm{qkvo}}", side_unit="FLOP", label="T^*", unit="token",
                     why="12TNH = 12D(N+K)H; with K = N (MHA) this is T = 2D")


@functools.cache
def training_flops() -> Derivation:
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
def mfu() -> Derivation:
    used = 6 * P_act * TOKENS
    available = n_dev * t_run * C
    return Derivation("model FLOPs utilisation of a training run", (
        Step(r"\mathrm{FLOPs}_{\mathrm{used}}", used, "6 x (active) parameters x tokens", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{avail}}", available, "chips x seconds x peak FLOPs/s", "FLOP"),
        Step(r"\mathrm{MFU}", used / available, "used over available", "1")), PROBLEMS)


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


# -- intensity -----------------------------------------------------------------------------------

@functools.cache
def moe_critical_batch() -> Derivation:
    """The token batch above which an MoE layer's matmuls are compute-bound, all experts loaded."""
    flops = Step(r"\mathrm{FLOPs}", 2 * k * B * D * F, "B tokens, each through k experts' [D,F] matrix", "FLOP")
    nbytes = Step(r"\mathrm{bytes}", b_w * E * D * F, "every expert's [D,F] weight is loaded", "byte")
    ai = Step(r"\mathrm{AI}", 2 * k * B / (b_w * E), "FLOPs over weight bytes", "FLOP/byte")
    return crossover(ai.expr, C / W, B, title="token batch at which an MoE layer becomes compute-bound",
                     source=MOE, lhs_label=r"\mathrm{AI}", rhs_label=r"\mathrm{AI}^*", side_unit="FLOP/byte",
                     label="B^*", unit="token", why="(C/W · b_w / 2) · E/k: the dense threshold times the sparsity",
                     lead=(flops, nbytes))


def _intensity_steps(s: sp.Expr, t: sp.Expr, note: str) -> tuple[Step, ...]:
    flops = 4 * t * s * N * H
    nbytes = b_x * (2 * t * N * H + 2 * s * K * H)
    return (
        Step(r"\mathrm{FLOPs}", flops, f"QK^T and the mix with V, forward, one sequence{note}", "FLOP"),
        Step(r"\mathrm{bytes}", nbytes,
             "read Q and write O ([T,N,H] each), read K and V ([S,K,H] each), once (a flash kernel)", "byte"),
        Step(r"\mathrm{AI}", sp.factor(flops / nbytes),
             "with b_x = 2 and G = N/K this is TSG/(TG + S); the batch cancels", "FLOP/byte"),
    )


@functools.cache
def attention_intensity() -> Derivation:
    return Derivation("arithmetic intensity of dot-product attention", _intensity_steps(S, T, ""), PROBLEMS)


@functools.cache
def attention_intensity_prefill() -> Derivation:
    return Derivation("arithmetic intensity of self-attention (prefill or training, S = T)",
                      _intensity_steps(T, T, " with S = T"), PROBLEMS)


@functools.cache
def attention_intensity_decode() -> Derivation:
    return Derivation("arithmetic intensity of attention while decoding (T = 1)",
                      _intensity_steps(S, sp.Integer(1), " with T = 1"), PROBLEMS)


@functools.cache
def attention_prefill_critical_T() -> Derivation:
    steps = _intensity_steps(T, T, " with S = T")
    return crossover(steps[-1].expr, C / W, T, title="sequence length at which self-attention becomes compute-bound",
                     source=PROBLEMS, lhs_label=r"\mathrm{AI}", rhs_label=r"\mathrm{AI}^*", side_unit="FLOP/byte",
                     label="T^*", unit="token",
                     why="TG/(G+1) = C/W for bf16: T = (C/W)(G+1)/G, 2C/W for MHA", lead=steps[:2])
