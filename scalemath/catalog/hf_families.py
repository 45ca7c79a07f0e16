"""The architectures the Hugging Face config reader knows (``model_type``), and what each means beyond the keys
every family shares: which layers attend locally, how experts and dense layers are laid out (see the table of
:mod:`.hf_config`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import CatalogError
from .hf_fields import _Reader

__all__ = ["KNOWN_FAMILIES"]


@dataclass(frozen=True)
class _Family:
    """What a ``model_type`` means beyond the shared keys (see the module's table)."""

    gated: bool = True                 # three MLP matrices (SwiGLU, GeGLU)
    tied: bool = False                 # tie_word_embeddings when the key is absent
    attention_bias: bool = False       # attention_bias when the key is absent
    output_bias: bool = True           # attention_bias also biases o_proj (Qwen2: q, k, v only)
    qk_norm: bool = False
    norms_per_layer: int = 2
    sinks: bool = False
    expert_bias: bool = False          # biases on every expert matrix and on the router (GPT-OSS)
    mlp_bias: bool = False             # mlp_bias when the key is absent
    bias_key: str = "attention_bias"   # the key that switches the linear maps' biases
    norm_bias: bool = False            # LayerNorms with a bias
    qk_norm_per_head: bool = False     # q/k norm scales per head and element
    qk_norm_key: str = ""              # the key that switches q/k norms on (empty: the family's qk_norm)
    positions: str = "none"            # a learned position table: "n_positions" (GPT-2), "opt" (+2 rows)
    embedding_norm: bool = False       # a norm right after the token embedding (BLOOM)
    mlp_width: str = "key"             # "key": intermediate_size or an alias; "4D": 4·D when no key is set
    sliding: str = "none"              # which layers use sliding_window without layer_types
    moe: str = "none"                  # how experts and dense layers are laid out
    defaults: Mapping[str, Any] = field(default_factory=dict)


_FAMILIES: Mapping[str, _Family] = {
    "llama": _Family(),
    "mistral": _Family(sliding="all", defaults={"sliding_window": 4096}),
    "mixtral": _Family(sliding="all", moe="mixtral"),
    "phi3": _Family(sliding="all"),
    "qwen2": _Family(attention_bias=True, output_bias=False, sliding="qwen"),
    "qwen2_moe": _Family(attention_bias=True, output_bias=False, sliding="qwen", moe="qwen"),
    "qwen3": _Family(qk_norm=True, sliding="qwen"),
    "qwen3_moe": _Family(qk_norm=True, sliding="qwen", moe="qwen"),
    "gemma": _Family(tied=True, defaults={"head_dim": 256}),
    "gemma2": _Family(tied=True, norms_per_layer=4, sliding="alternate",
                      defaults={"head_dim": 256, "sliding_window": 4096}),
    "gemma3_text": _Family(tied=True, norms_per_layer=4, qk_norm=True, sliding="pattern",
                           defaults={"head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6,
                                     "vocab_size": 262208, "max_position_embeddings": 131072}),
    "gpt_oss": _Family(attention_bias=True, sinks=True, expert_bias=True, sliding="alternate", moe="gpt_oss"),
    "deepseek_v2": _Family(moe="deepseek"),
    "deepseek_v3": _Family(moe="deepseek"),
    "llama4_text": _Family(sliding="chunked", moe="llama4"),
    "gpt2": _Family(gated=False, tied=True, attention_bias=True, mlp_bias=True, norm_bias=True,
                    positions="n_positions", mlp_width="4D"),
    "opt": _Family(gated=False, tied=True, attention_bias=True, mlp_bias=True, bias_key="enable_bias",
                   norm_bias=True, positions="opt"),
    "bloom": _Family(gated=False, tied=True, attention_bias=True, mlp_bias=True, norm_bias=True,
                     embedding_norm=True, mlp_width="4D"),
    "gpt_neox": _Family(attention_bias=True, gated=False, mlp_bias=True, norm_bias=True),
    "falcon": _Family(gated=False, tied=True, bias_key="bias", norm_bias=True, mlp_width="4D"),
    "starcoder2": _Family(gated=False, tied=True, attention_bias=True, mlp_bias=True, bias_key="use_bias",
                          norm_bias=True, sliding="all"),
    "olmo2": _Family(qk_norm=True, qk_norm_per_head=True),
    "cohere": _Family(tied=True, norms_per_layer=1, qk_norm_per_head=True, qk_norm_key="use_qk_norm"),
}

#: The model_type values this reader knows, for messages and the docs.
KNOWN_FAMILIES = tuple(sorted(_FAMILIES))


def _local_layers(r: _Reader, family: _Family, L: int) -> tuple[int | None, int]:
    """(window, how many layers use it) from layer_types or the family's rule."""
    chunk = r.one("attention_chunk_size", "chunked attention's chunk in tokens") \
        if family.sliding == "chunked" else None
    window = chunk if family.sliding == "chunked" else r.one("sliding_window", "local attention window")
    if window is None:
        return None, 0
    layer_types = r.layer_list("layer_types", L, str)
    if layer_types is not None:
        return window, sum(t in ("sliding_attention", "chunked_attention") for t in layer_types)
    rule = family.sliding
    if rule == "all":
        return window, L
    if rule == "alternate":
        return window, math.ceil(L / 2)
    if rule == "pattern":
        pattern = r.one("sliding_window_pattern", "one global layer in every this many") or 6
        return window, L - L // pattern
    if rule == "qwen":
        if not r.flag("use_sliding_window", False):
            return None, 0
        first = r.one("max_window_layers", "layers before sliding windows start", minimum=0) or 0
        return window, max(L - first, 0)
    if rule == "chunked":
        rope = r.layer_list("no_rope_layers", L, int)
        if rope is None:
            interval = r.one("no_rope_layer_interval", "one layer without RoPE in every this many") or 4
            rope = [int((i + 1) % interval != 0) for i in range(L)]
        return window, sum(1 for flag in rope if flag)
    return None, 0


def _moe_layout(r: _Reader, family: _Family, L: int, E: int, mlp_width: int | None) -> dict[str, Any]:
    """The MoE fields: expert width F, dense layers and their width, shared experts."""
    out: dict[str, Any] = {}
    expert = r.one("moe_intermediate_size", "one routed expert's width") if family.moe in ("qwen", "deepseek") \
        else mlp_width
    if expert is None:
        raise CatalogError(f"{r.label} lacks 'moe_intermediate_size' (one routed expert's width)")
    out["F"] = expert
    dense_width = mlp_width
    if family.moe == "qwen":
        step = r.one("decoder_sparse_step", "one MoE layer in every this many") or 1
        dense = r.indices("mlp_only_layers", L) or set()
        moe = [i for i in range(L) if i not in dense and (i + 1) % step == 0]
        shared_width = r.one("shared_expert_intermediate_size", "the shared expert's width", minimum=0)
        if shared_width:
            out.update(shared_experts=1, F_shared=shared_width)
    elif family.moe == "deepseek":
        first = r.one("first_k_dense_replace", "leading dense layers", minimum=0) or 0
        freq = r.one("moe_layer_freq", "one MoE layer in every this many") or 1
        moe = [i for i in range(L) if i >= first and i % freq == 0]
        shared = r.one("n_shared_experts", "shared experts", minimum=0) or 0
        if shared:
            out["shared_experts"] = shared
        if r.text("topk_method") == "noaux_tc":
            out["router_bias"] = True  # e_score_correction_bias, one per expert
    elif family.moe == "llama4":
        listed = r.indices("moe_layers", L)
        step = r.one("interleave_moe_layer_step", "one MoE layer in every this many") or 1
        moe = sorted(listed) if listed is not None else list(range(step - 1, L, step))
        out.update(shared_experts=1)
        dense_width = r.one("intermediate_size_mlp", "the dense layers' MLP width")
    else:  # mixtral, gpt_oss: every layer
        moe = list(range(L))
    if not moe:
        raise r.fail(f"E = {E} experts but no layer is a mixture of experts")
    if len(moe) < L:
        if dense_width is None:
            raise CatalogError(f"{r.label} lacks the MLP width of its {L - len(moe)} dense layers "
                               f"({'intermediate_size_mlp' if family.moe == 'llama4' else 'intermediate_size'})")
        out.update(dense_layers=L - len(moe), F_dense=dense_width)
    return out
