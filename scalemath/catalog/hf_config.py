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
gpt2            a plain two-matrix MLP of ``n_inner`` (default 4·n_embd); tied; counted
                the book's way, like the catalog's GPT-3: its biases, LayerNorm biases and
                learned position embeddings are left out
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

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import CatalogError
from .models import Model
from .reader import MAX_DIGITS, shown, too_long
from ..files import file_label, load_json_file

__all__ = ["model_from_hf_config", "MAX_CONFIG_BYTES", "KNOWN_FAMILIES"]

#: Largest config.json read (1 MB); real ones are a few kB.
MAX_CONFIG_BYTES = 1_000_000


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
    "gpt2": _Family(gated=False, tied=True),
}

#: The model_type values this reader knows, for messages and the docs.
KNOWN_FAMILIES = tuple(sorted(_FAMILIES))

_D = (("hidden_size", "n_embd", "d_model"), "d_model")
_L = (("num_hidden_layers", "n_layer", "num_layers"), "layers")
_N = (("num_attention_heads", "n_head", "num_heads"), "query heads")
_V = (("vocab_size",), "vocabulary size")
_F = (("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"), "d_ff, the MLP width")
_K = (("num_key_value_heads", "num_kv_heads", "n_head_kv"), "KV heads")
_H = (("head_dim", "head_size"), "head dimension")
_E = (("num_local_experts", "n_routed_experts", "num_experts"), "routed experts")
_TOPK = (("num_experts_per_tok", "experts_per_token", "moe_topk"), "experts per token")
_CONTEXT = (("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"),
            "context length")


class _Reader:
    """Typed look-ups in one parsed config, with errors that name the file."""

    def __init__(self, label: str, cfg: dict, defaults: Mapping[str, Any] | None = None):
        self.label, self.cfg, self.defaults = label, cfg, defaults or {}

    def fail(self, message: str) -> CatalogError:
        return CatalogError(f"{self.label}: {message}")

    def integer(self, spec, *, required: bool = False, minimum: int = 1) -> int | None:
        names, meaning = spec
        for name in names:
            if name not in self.cfg:
                continue
            value = self.cfg[name]
            if value is None:
                if required:
                    raise self.fail(f"{name!r} is null; it must be a positive integer ({meaning})")
                return None
            if isinstance(value, bool) or not isinstance(value, int) or too_long(value):
                kind = "a non-negative" if minimum == 0 else "a positive"
                raise self.fail(f"{name!r} = {shown(value)} must be {kind} integer of at most {MAX_DIGITS} "
                                f"digits ({meaning})")
            if value < minimum:
                kind = "non-negative" if minimum == 0 else "positive"
                raise self.fail(f"{name!r} = {value} must be {kind} ({meaning})")
            return value
        for name in names:
            if name in self.defaults:
                return self.defaults[name]
        if required:
            also = f"; also looked for {', '.join(repr(n) for n in names[1:])}" if names[1:] else ""
            raise CatalogError(f"{self.label} lacks {names[0]!r} ({meaning}){also}")
        return None

    def one(self, name: str, meaning: str, **kw) -> int | None:
        return self.integer(((name,), meaning), **kw)

    def text(self, *names: str) -> str:
        for name in names:
            value = self.cfg.get(name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise self.fail(f"{name!r} = {shown(value)} must be a string")
            if len(value) > 2000 or not value.isprintable():
                raise self.fail(f"{name!r} = {shown(value)} must be one line of at most 2000 printable characters")
            return value
        return ""

    def flag(self, name: str, default: bool | None = None) -> bool | None:
        value = self.cfg.get(name)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        raise self.fail(f"{name!r} = {shown(value)} must be true or false")

    def layer_list(self, name: str, L: int, kind: type) -> list | None:
        """A per-layer list (``layer_types``, ``no_rope_layers``) of L items of ``kind``, or None."""
        value = self.cfg.get(name)
        if value is None or value == []:
            return None
        if not isinstance(value, list) or len(value) != L or \
                not all(isinstance(t, kind) and not isinstance(t, bool) for t in value):
            what = "strings" if kind is str else "integers"
            raise self.fail(f"{name!r} must be a list of {L} {what}, one per layer")
        return value

    def indices(self, name: str, L: int) -> set[int] | None:
        """A list of layer indices (``moe_layers``, ``mlp_only_layers``), or None when absent."""
        value = self.cfg.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < L
                                                  for i in value):
            raise self.fail(f"{name!r} must be a list of layer indices from 0 to {L - 1}")
        return set(value)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def _unknown(label: str, model_type: str) -> CatalogError:
    known = ", ".join(KNOWN_FAMILIES)
    if not model_type:
        return CatalogError(f"{label} has no 'model_type', so its architecture is unknown; "
                            f"the families this reader knows are {known}")
    return CatalogError(f"{label}: model_type {shown(model_type)} is not an architecture this reader knows; "
                        f"the families this reader knows are {known}")


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
    K = r.integer(_K) or N
    E = (r.integer(_E) or 1) if family.moe != "none" else 1
    k = r.integer(_TOPK, required=True) if E > 1 else 1

    # MLP widths
    if model_type == "gpt2" and r.cfg.get("n_inner") is None and r.cfg.get("intermediate_size") is None:
        mlp_width = 4 * D  # GPT-2's n_inner = null means 4·d_model
    else:
        mlp_width = r.integer(_F, required=family.moe not in ("qwen", "deepseek") or E == 1)
    extra: dict[str, Any] = _moe_layout(r, family, L, E, mlp_width) if E > 1 else {"F": mlp_width}
    if extra["F"] is None:
        raise CatalogError(f"{label} lacks 'intermediate_size' (d_ff, the MLP width)")

    # attention
    bias = r.flag("attention_bias", family.attention_bias)
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
        if family.qk_norm:
            extra["qk_norm"] = True
    if family.sinks:
        extra["attention_sinks"] = True
    if family.expert_bias:
        extra.update(mlp_bias=True, router_bias=True)
    elif r.flag("mlp_bias", False):
        extra["mlp_bias"] = True
    if family.norms_per_layer != 2:
        extra["norms_per_layer"] = family.norms_per_layer
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
