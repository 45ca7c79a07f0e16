"""Read a model's shape from a Hugging Face style ``config.json`` on disk.

The file is parsed as plain JSON and only the numbers below are taken from it: nothing in it is
run, imported or fetched (``auto_map``, ``trust_remote_code`` and the like are ignored), and no
network is used. Anything unreadable or out of range raises :class:`CatalogError` naming the
file and the key.

Mapping (first key present wins; aliases cover GPT-2/NeoX style names):

==========================  =========================================================
Model field                 config.json key
==========================  =========================================================
D                           hidden_size | n_embd | d_model
F                           intermediate_size | n_inner | ffn_dim | ffn_hidden_size;
                            for an MoE config with moe_intermediate_size, that instead
                            (one routed expert), and intermediate_size becomes F_dense
N                           num_attention_heads | n_head | num_heads
K                           num_key_value_heads | num_kv_heads | n_head_kv (default N)
H                           head_dim | head_size (default D / N); latent attention:
                            v_head_dim
L                           num_hidden_layers | n_layer | num_layers
V                           vocab_size
E                           num_local_experts | n_routed_experts | num_experts (default 1)
k                           num_experts_per_tok | moe_topk (required when E > 1)
tied                        tie_word_embeddings (default: see below)
max_context                 max_position_embeddings | n_positions | max_sequence_length
                            | seq_length (optional)
dense_layers, F_dense       first_k_dense_replace, intermediate_size
shared_experts, F_shared    n_shared_experts (width F); or shared_expert_intermediate_size
                            (one shared expert of that width)
kv_lora_rank ...            kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim
sliding_window,             sliding_window with layer_types (count of
local_layers                "sliding_attention"), or the family's rule: gemma2 every other
                            layer (layers 0, 2, 4 ...), gemma3 all but every
                            sliding_window_pattern-th, qwen2-style use_sliding_window with
                            max_window_layers, otherwise every layer
==========================  =========================================================

``gated`` (does the MLP have a gate matrix, 3DF parameters instead of 2DF) is decided by this rule:

1. model_type starting with a gated family (llama, mistral, mixtral, gemma, qwen, deepseek, phi3,
   olmo, granite, internlm) -> true;
2. model_type of a classic two-matrix MLP (gpt2, gpt_neo, gpt_neox, gptj, gpt_bigcode, starcoder2,
   opt, bloom, falcon, phi, mpt) -> false, whatever the activation;
3. otherwise the activation (hidden_act | hidden_activation | activation_function): silu, swish,
   swiglu, geglu and gelu_pytorch_tanh -> true (every family using them gates its MLP), anything
   else -> false.

``tied`` when the key is absent follows the config class's default in transformers: false for the
llama, mistral, mixtral, qwen and deepseek families, true otherwise (PretrainedConfig's default).

The model's key is the folder name of the file (lower case, dashes), its name ``_name_or_path``
or that folder name.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from .errors import CatalogError
from .models import Model
from .tomlcatalog import MAX_DIGITS, shown, too_long
from .userfiles import file_label, load_json_file

__all__ = ["model_from_hf_config", "MAX_CONFIG_BYTES"]

#: Largest config.json read (1 MB); real ones are a few kB.
MAX_CONFIG_BYTES = 1_000_000

_GATED_FAMILIES = ("llama", "mistral", "mixtral", "gemma", "qwen", "deepseek", "phi3", "olmo",
                   "granite", "internlm")
_PLAIN_MLP_TYPES = frozenset({"gpt2", "gpt_neo", "gpt_neox", "gptj", "gpt_bigcode", "starcoder2", "opt",
                              "bloom", "falcon", "phi", "mpt"})
_GATED_ACTIVATIONS = frozenset({"silu", "swish", "swiglu", "geglu", "gelu_pytorch_tanh"})
_UNTIED_BY_DEFAULT = ("llama", "mistral", "mixtral", "qwen", "deepseek")

_D = (("hidden_size", "n_embd", "d_model"), "d_model")
_L = (("num_hidden_layers", "n_layer", "num_layers"), "layers")
_N = (("num_attention_heads", "n_head", "num_heads"), "query heads")
_V = (("vocab_size",), "vocabulary size")
_F = (("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"), "d_ff, the MLP width")
_K = (("num_key_value_heads", "num_kv_heads", "n_head_kv"), "KV heads")
_H = (("head_dim", "head_size"), "head dimension")
_E = (("num_local_experts", "n_routed_experts", "num_experts"), "routed experts")
_TOPK = (("num_experts_per_tok", "moe_topk"), "experts per token")
_CONTEXT = (("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"),
            "context length")
_ACT = ("hidden_act", "hidden_activation", "activation_function")


class _Reader:
    """Typed look-ups in one parsed config, with errors that name the file."""

    def __init__(self, label: str, cfg: dict):
        self.label, self.cfg = label, cfg

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

    def flag(self, name: str) -> bool | None:
        value = self.cfg.get(name)
        if value is None or isinstance(value, bool):
            return value
        raise self.fail(f"{name!r} = {shown(value)} must be true or false")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def _gated(model_type: str, activation: str) -> bool:
    if model_type.startswith(_GATED_FAMILIES):
        return True
    if model_type in _PLAIN_MLP_TYPES:
        return False
    return activation.lower() in _GATED_ACTIVATIONS


def _local_layers(r: _Reader, model_type: str, L: int, window: int) -> int:
    layer_types = r.cfg.get("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != L or \
                not all(isinstance(t, str) for t in layer_types):
            raise r.fail(f"'layer_types' must be a list of {L} strings, one per layer")
        return sum(t == "sliding_attention" for t in layer_types)
    if model_type == "gemma2":
        return math.ceil(L / 2)
    if model_type.startswith("gemma3"):
        pattern = r.one("sliding_window_pattern", "one global layer in every this many") or 6
        return L - L // pattern
    if r.flag("use_sliding_window") is False:
        return 0
    if "max_window_layers" in r.cfg and r.flag("use_sliding_window"):
        first = r.one("max_window_layers", "layers before sliding windows start", minimum=0) or 0
        return max(L - first, 0)
    return L


def model_from_hf_config(path: str | Path) -> Model:
    """The :class:`Model` described by a config.json (or a folder holding one).

    Raises :class:`CatalogError` for a missing or oversized file, invalid JSON, a top level that
    is not an object, a missing or non-positive size, or an inconsistent shape.
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
    r = _Reader(label, cfg)
    model_type = r.text("model_type")

    D = r.integer(_D, required=True)
    L = r.integer(_L, required=True)
    N = r.integer(_N, required=True)
    V = r.integer(_V, required=True)
    K = r.integer(_K) or N
    E = r.integer(_E) or 1
    k = 1
    if E > 1:
        k = r.integer(_TOPK, required=True)

    # MLP widths
    expert_width = r.one("moe_intermediate_size", "one routed expert's width") if E > 1 else None
    if model_type in ("gpt2", "gpt_bigcode") and r.cfg.get("n_inner") is None and \
            r.cfg.get("intermediate_size") is None:
        mlp_width = 4 * D  # GPT-2's n_inner = null means 4·d_model
    else:
        mlp_width = r.integer(_F, required=expert_width is None)
    extra: dict[str, Any] = {}
    if E > 1:
        for name in ("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step"):
            step = r.one(name, "MoE layer spacing")
            if step not in (None, 1):
                raise r.fail(f"{name!r} = {step}: only configs with an MoE MLP in every layer "
                             "(after any leading dense layers) are supported")
        if r.cfg.get("mlp_only_layers"):
            raise r.fail("'mlp_only_layers' (dense layers between MoE layers) is not supported")
        dense = r.one("first_k_dense_replace", "leading dense layers", minimum=0) or 0
        if dense:
            if mlp_width is None:
                raise CatalogError(f"{label} lacks 'intermediate_size' (the width of the "
                                   f"{dense} dense layers before the MoE layers)")
            extra.update(dense_layers=dense, F_dense=mlp_width)
        shared = r.one("n_shared_experts", "shared experts", minimum=0) or 0
        shared_width = r.one("shared_expert_intermediate_size", "the shared expert's width", minimum=0)
        if shared:
            extra["shared_experts"] = shared
        elif shared_width:
            extra.update(shared_experts=1, F_shared=shared_width)
    F = expert_width or mlp_width

    # attention
    if cfg.get("kv_lora_rank") is not None:
        H = r.one("v_head_dim", "value head dimension", required=True)
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
    window = r.one("sliding_window", "local attention window")
    if window is not None:
        local = _local_layers(r, model_type, L, window)
        if local:
            extra.update(sliding_window=window, local_layers=local)

    tied = r.flag("tie_word_embeddings")
    if tied is None:
        tied = not model_type.startswith(_UNTIED_BY_DEFAULT)
    folder = p.resolve().parent.name
    name = r.text("_name_or_path") or folder or "config.json"
    model = Model(
        key=_slug(folder)[:64].rstrip("-.") or _slug(model_type)[:64].rstrip("-.") or "hf-config",
        name=name,
        source=f"Hugging Face config.json at {label}",
        D=D, F=F, N=N, K=K, H=H, L=L, V=V, E=E, k=k,
        gated=_gated(model_type, r.text(*_ACT)),
        tied=tied,
        max_context=r.integer(_CONTEXT),
        **extra,
    )
    problems = model.problems()
    if problems:
        raise r.fail("; ".join(problems))
    return model
