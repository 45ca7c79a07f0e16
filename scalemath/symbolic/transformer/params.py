"""Parameters of a transformer (transformers.md, 'Global FLOPs and Params Calculation'): per block, per layer
and in total, for a dense model and for a mixture of experts (all experts stored, or the k one token uses).

>>> params().expr
D*V_vocab*n_emb + L*(D*F*n_mlp + 2*D*H*(K + N) + 2*D + P_extra)
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import MOE, PARAMS_SRC, D, E, F, H, K, L, N, P, P_act, P_extra, V, k, n_emb, n_mlp

P_out, P_pos, KV_TOK = sym("P_out"), sym("P_pos"), sym("kv_token")
#: Where the counts outside the book's letters come from.
COUNTS_SRC = ("the model's own accounting (scalemath.catalog.models, checked against a state dict and the "
              "published counts); Kaplan et al. 2020, § 2.1 for the non-embedding N")


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


def _embedding_step(active_params: str = "all-weights") -> Step:
    if active_params == "no-input-embedding":
        return Step(r"P_{\mathrm{unemb}}", D * V,
                    "the unembedding [D,V] only: the input embedding is a lookup, not a multiply, and is left out "
                    "(active_params = no-input-embedding); a tied matrix counts once, as the unembedding", "param")
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
def params(experts: str = "dense", active_params: str = "all-weights") -> Derivation:
    """Total parameters: ``L·(MLP + attention + norms) + embeddings``.

    ``experts`` is ``"dense"`` (one MLP per layer), ``"total"`` (a mixture of E expert MLPs per
    layer: every parameter stored) or ``"active"`` (the k experts one token uses). The final norm
    after the last layer (D more parameters) is left out, as in the book's count. For the active
    count, ``active_params`` (:mod:`scalemath.conventions`) is ``"all-weights"`` (the book's: both
    embedding matrices) or ``"no-input-embedding"`` (the unembedding D·V only).

    >>> params("active", "no-input-embedding").steps[-2].expr
    D*V_vocab
    """
    if experts not in ("dense", "total", "active"):
        raise ValueError(f"experts must be 'dense', 'total' or 'active', not {experts!r}")
    layer = _layer_steps(experts)
    emb = _embedding_step(active_params if experts == "active" else "all-weights")
    what = {"dense": "parameters", "total": "total parameters (mixture of experts)",
            "active": "active parameters per token (mixture of experts)"}[experts]
    label = "P_{\\mathrm{active}}" if experts == "active" else "P"
    total = Step(label, L * layer[-1].expr + emb.expr, "L layers plus the embeddings", "param")
    return Derivation(f"transformer {what}", layer + (emb, total), MOE if experts != "dense" else PARAMS_SRC)


@functools.cache
def moe_mlp_params(active: bool = False) -> Derivation:
    title = "active MLP parameters of one MoE layer" if active else "MLP parameters of one MoE layer"
    return Derivation(title, (_mlp_step("active" if active else "total"),), MOE)


# -- the model's own counts, bound from --model ---------------------------------------------------

@functools.cache
def model_params() -> Derivation:
    """Every tensor a model's checkpoint holds: the book's count P (layers and embeddings) plus what lies outside
    the layers besides the embeddings (the final norm, a learned position table, a norm after the embedding)."""
    return Derivation("every parameter of the model (the count a checkpoint holds)", (
        Step("P", P, "the book's count: every layer's tensors and the embedding matrices (bound from --model)",
             "param"),
        Step(r"P_{\mathrm{out}}", P_out, "outside the layers besides the embeddings: the final norm, a learned "
             "position table, a norm after the embedding (bound from --model)", "param"),
        Step(r"P_{\mathrm{all}}", P + P_out, "every tensor", "param")), COUNTS_SRC)


@functools.cache
def model_active_params() -> Derivation:
    """The parameters one token uses, as the model's own accounting counts them under the active_params
    convention (the book's all-weights, or no-input-embedding)."""
    return Derivation("active parameters of the model (its own count)", (
        Step(r"P_{\mathrm{active}}", P_act, "the weights one token's forward pass uses: k of the E experts, every "
             "other layer tensor, and the embeddings the active_params convention counts (bound from --model)",
             "param"),), COUNTS_SRC)


@functools.cache
def non_embedding_params() -> Derivation:
    """Kaplan et al.'s N: every tensor but the embedding and unembedding matrices and a learned position table."""
    every = P + P_out
    return Derivation("non-embedding parameters (Kaplan's N)", (
        Step(r"P_{\mathrm{all}}", every, "every tensor: the book's count P plus P_out outside the layers", "param"),
        Step(r"P_{\mathrm{emb}}", n_emb * D * V + P_pos, "the embedding matrices (n_emb of V·D) and the learned "
             "position table P_pos (0 with rotary or ALiBi positions)", "param"),
        Step(r"N_{\mathrm{Kaplan}}", every - n_emb * D * V - P_pos,
             "without them: the final norm, the layers' biases and norms stay", "param")), COUNTS_SRC)


@functools.cache
def model_kv_bytes_per_token() -> Derivation:
    """The KV cache one token adds, the model's own count: 2·L·K·H elements, or with latent attention
    L·(kv_lora_rank + qk_rope_head_dim), times the cache dtype's bytes."""
    return Derivation("KV cache bytes per token (the model's own count)", (
        Step(r"\mathrm{KV}_{\mathrm{tok}}", KV_TOK, "every layer's cached elements for one token (2·K·H, or the "
             "latent plus the rotary key with latent attention) times the cache dtype's bytes (bound from --model "
             "and --kv-dtype or --dtype)", "byte"),), COUNTS_SRC)
