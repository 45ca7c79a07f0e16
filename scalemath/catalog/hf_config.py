"""Read a model's shape from a Hugging Face style ``config.json`` on disk.

The file is parsed as plain JSON and only the numbers below are taken from it: nothing in it is
run, imported or fetched (``auto_map``, ``trust_remote_code`` and the like are ignored), and no
network is used. Anything unreadable or out of range raises :class:`CatalogError` naming the
file and the key.

Only architectures this reader knows are read: ``model_type`` (of ``text_config`` in a
multimodal wrapper such as LLaMA 4 or Gemma 3, whose language model is read and whose vision
tower is not) must name one of the families in the table below, since the family decides what
the numbers mean and which tensors exist besides them. A config without ``model_type``, or
with another one, is refused rather than read as some default architecture.

==============  ==========================================================================
family          what the family adds to the keys read for every family
==============  ==========================================================================
llama           ``attention_bias`` (default false): biases on q, k, v and o;
                ``mlp_bias`` (default false); untied by default
mistral         ``sliding_window`` (default 4096; null: none) on every layer
mixtral         mistral with ``num_local_experts`` experts of width ``intermediate_size``
phi3            like mistral (fused q/k/v and gate/up matrices count the same)
qwen2           q/k/v biases unless ``attention_bias`` is false (Qwen2Config's default is
                on); ``use_sliding_window`` with ``max_window_layers``
qwen2_moe       qwen2 with ``num_experts`` experts of width ``moe_intermediate_size``, one
                shared expert of ``shared_expert_intermediate_size``; its shared-expert
                gate (D per layer) is not counted
qwen3           q/k norms; ``attention_bias`` (default false) on q, k, v and o
qwen3_moe       qwen3 with ``num_experts`` experts of width ``moe_intermediate_size``;
                ``decoder_sparse_step`` and ``mlp_only_layers`` say which layers are dense
gemma           tied by default; ``head_dim`` default 256
gemma2          gemma with four norms per layer; every other layer (0, 2, 4 ...) local
gemma3_text     gemma2 with q/k norms; all but every ``sliding_window_pattern``-th (6)
                layer local; vocab_size 262208 and max_position_embeddings 131072 when
                absent (Gemma3TextConfig's defaults, which released configs rely on)
gpt_oss         biases on q, k, v, o, every expert matrix and the router; attention
                sinks; local layers from ``layer_types``
deepseek_v2/v3  latent attention (``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``,
                ``qk_nope_head_dim``, ``v_head_dim``); ``n_routed_experts`` of width
                ``moe_intermediate_size`` and ``n_shared_experts``; dense layers before
                ``first_k_dense_replace`` and off the ``moe_layer_freq`` step; the router's
                score-correction bias when ``topk_method`` is ``noaux_tc``
llama4_text     ``num_local_experts`` of width ``intermediate_size`` plus one shared expert
                of that width; dense layers (``intermediate_size_mlp``) off the
                ``interleave_moe_layer_step`` (or ``moe_layers``); chunked attention
                (``attention_chunk_size``, on the RoPE layers of ``no_rope_layers``)
                recorded as a window of the chunk size: a chunked layer never holds more
gpt2            a plain two-matrix MLP of ``n_inner`` (default 4·n_embd); tied; biases on
                every linear map, LayerNorms with a bias, a learned position table of
                ``n_positions`` rows (so ``published_param_count`` is the checkpoint's:
                124,439,808 for GPT-2); ``add_cross_attention`` is refused
opt             gpt2's tensors (``enable_bias``, default true) with a ReLU MLP of
                ``ffn_dim`` and ``max_position_embeddings`` + 2 learned positions;
                ``word_embed_proj_dim`` other than hidden_size (project_in/out),
                ``do_layer_norm_before`` false and norms without weights are refused
bloom           gpt2's tensors with ALiBi (no position table), a LayerNorm after the
                word embeddings, a 4·D MLP; ``n_embed`` is the width
gpt_neox        biases on q/k/v (fused), o (``attention_bias``, default true) and the
                MLP; two LayerNorms with a bias per layer; untied; rotary
falcon          one KV head with ``multi_query`` (default true), else ``num_kv_heads``
                (and with ``new_decoder_architecture``); LayerNorms with a bias, one per
                parallel block (``parallel_attn``; two with the new architecture unless
                ``num_ln_in_parallel_attn`` is 1); ``bias`` on every linear map; tied
starcoder2      ``use_bias`` (default true) on every linear map, LayerNorms with a bias,
                a plain MLP, ``sliding_window`` on every layer; tied by default
olmo2           RMS norms after attention and after the MLP; q/k norms over the whole
                projection, (N + K)·H per layer
cohere          one LayerNorm (no bias) before a parallel attention and MLP; tied;
                ``use_qk_norm``: per-head q/k norms, (N + K)·H per layer
==============  ==========================================================================

Keys read for every family (first key present wins; aliases cover GPT-2 style names):

==========================  =========================================================
Model field                 config.json key
==========================  =========================================================
D                           hidden_size | n_embd | d_model
F                           intermediate_size | n_inner | ffn_dim | ffn_hidden_size, or
                            one routed expert's width for a mixture of experts
N                           num_attention_heads | n_head | num_heads
K                           num_key_value_heads | num_kv_heads | n_head_kv (default N)
H                           head_dim | head_size (default D / N); latent attention:
                            v_head_dim
L                           num_hidden_layers | n_layer | num_layers
V                           vocab_size
E                           num_local_experts | n_routed_experts | num_experts (default 1)
k                           num_experts_per_tok | experts_per_token | moe_topk
tied                        tie_word_embeddings (default: the family's)
max_context                 max_position_embeddings | n_positions | max_sequence_length
                            | seq_length (optional)
sliding_window,             sliding_window with ``layer_types`` (the count of
local_layers                "sliding_attention" and "chunked_attention"), or the
                            family's rule
==========================  =========================================================

The model is named from the config itself: ``_name_or_path``, else the file's name when it is
not ``config.json``, else the folder holding it; its key is that name's last part in lower case
with dashes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import CatalogError
from .hf_families import _FAMILIES, KNOWN_FAMILIES, _local_layers, _moe_layout
from .hf_layouts import _kv_heads, outside_the_letters, refuse_unknown_layout
from .hf_fields import _CONTEXT, _D, _E, _F, _H, _K, _L, _N, _TOPK, _V, _Reader
from .models import Model
from .reader import shown
from ..files import file_label, load_json_file

__all__ = ["model_from_hf_config", "MAX_CONFIG_BYTES", "KNOWN_FAMILIES"]

#: Largest config.json read (1 MB); real ones are a few kB.
MAX_CONFIG_BYTES = 1_000_000


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def _unknown(label: str, model_type: str) -> CatalogError:
    known = ", ".join(KNOWN_FAMILIES)
    if not model_type:
        return CatalogError(f"{label} has no 'model_type', so its architecture is unknown; "
                            f"the families this reader knows are {known}")
    return CatalogError(f"{label}: model_type {shown(model_type)} is not an architecture this reader knows; "
                        f"the families this reader knows are {known}")


def _key(name: str, model_type: str) -> str:
    """A catalog key from the name's last part (``meta-llama/Llama-3.1-8B`` -> ``llama-3.1-8b``)."""
    last = name.replace("\\", "/").rstrip("/").split("/")[-1]
    return _slug(last)[:64].rstrip("-.") or _slug(model_type)[:64].rstrip("-.") or "hf-config"


def _name(r: _Reader, p: Path) -> str:
    """The config's own name: _name_or_path, else the file's stem unless it is 'config', else its folder."""
    own = r.text("_name_or_path").strip()
    if own:
        return own
    if p.stem.lower() != "config" and p.stem:
        return p.stem
    return p.resolve().parent.name or "config.json"


def model_from_hf_config(path: str | Path) -> Model:
    """The :class:`Model` described by a config.json (or a folder holding one).

    Raises :class:`CatalogError` for a missing or oversized file, invalid JSON, a top level that
    is not an object, an unknown or missing ``model_type``, a missing or non-positive size, or an
    inconsistent shape.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    label = file_label(p)
    raw = load_json_file(p, "model config", MAX_CONFIG_BYTES, error=CatalogError)
    if not isinstance(raw, dict):
        raise CatalogError(f"{label}: the top level must be a JSON object {{...}}, not {type(raw).__name__}")
    cfg = raw
    # multimodal wrappers keep the language model under text_config
    nested = raw.get("text_config")
    if isinstance(nested, dict) and not any(n in raw for n in _D[0]):
        cfg = {**{k: v for k, v in raw.items() if k != "text_config"}, **nested}
    model_type = _Reader(label, cfg).text("model_type")
    family = _FAMILIES.get(model_type)
    if family is None:
        raise _unknown(label, model_type)
    r = _Reader(label, cfg, family.defaults)

    D = r.integer(_D, required=True)
    L = r.integer(_L, required=True)
    N = r.integer(_N, required=True)
    V = r.integer(_V, required=True)
    K = _kv_heads(r, family, N, model_type)
    E = (r.integer(_E) or 1) if family.moe != "none" else 1
    k = r.integer(_TOPK, required=True) if E > 1 else 1

    # MLP widths
    if family.mlp_width == "4D" and all(r.cfg.get(n) is None for n in _F[0]):
        mlp_width = 4 * D  # GPT-2's n_inner = null, BLOOM's and Falcon 7B's absent width: 4·d_model
    else:
        mlp_width = r.integer(_F, required=family.moe not in ("qwen", "deepseek") or E == 1)
    extra: dict[str, Any] = _moe_layout(r, family, L, E, mlp_width) if E > 1 else {"F": mlp_width}
    if extra["F"] is None:
        raise CatalogError(f"{label} lacks 'intermediate_size' (d_ff, the MLP width)")

    # attention
    refuse_unknown_layout(r, model_type, D)
    bias = r.flag(family.bias_key, family.attention_bias)
    if cfg.get("kv_lora_rank") is not None:
        H = r.one("v_head_dim", "value head dimension", required=True)
        if bias:
            raise r.fail("'attention_bias' = true with latent attention (kv_lora_rank) is not supported")
        extra.update(kv_lora_rank=r.one("kv_lora_rank", "compressed KV width"),
                     q_lora_rank=r.one("q_lora_rank", "query bottleneck width"),
                     qk_rope_head_dim=r.one("qk_rope_head_dim", "rotary query/key head dimension",
                                            required=True),
                     qk_nope_head_dim=r.one("qk_nope_head_dim", "non-rotary query/key head dimension",
                                            required=True))
    else:
        H = r.integer(_H)
        if H is None:
            if D % N:
                raise CatalogError(f"{label} lacks 'head_dim' (head dimension), and hidden_size {D} "
                                   f"is not a multiple of num_attention_heads {N}")
            H = D // N
        if bias:
            extra.update(qkv_bias=True, o_bias=family.output_bias)
        if r.flag(family.qk_norm_key, False) if family.qk_norm_key else family.qk_norm:
            extra.update(qk_norm=True, qk_norm_per_head=family.qk_norm_per_head)
    if family.sinks:
        extra["attention_sinks"] = True
    if family.expert_bias:
        extra.update(mlp_bias=True, router_bias=True)
    elif bias if family.bias_key != "attention_bias" else r.flag("mlp_bias", family.mlp_bias):
        extra["mlp_bias"] = True  # opt's enable_bias, falcon's bias, starcoder2's use_bias: every linear map
    extra.update(outside_the_letters(r, family, model_type))
    window, local = _local_layers(r, family, L)
    if local:
        extra.update(sliding_window=window, local_layers=local)

    tied = r.flag("tie_word_embeddings", family.tied)
    name = _name(r, p)
    model = Model(
        key=_key(name, model_type),
        name=name,
        source=f"Hugging Face config.json at {label}",
        D=D, N=N, K=K, H=H, L=L, V=V, E=E, k=k,
        gated=family.gated,
        tied=tied,
        max_context=r.integer(_CONTEXT),
        **extra,
    )
    problems = model.problems()
    if problems:
        raise r.fail("; ".join(problems))
    return model
