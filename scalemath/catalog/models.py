"""The model catalog: transformer configurations as frozen records, loaded lazily from ``models.toml``.

Letters are the book's (part 4, "All the Transformer Math You Need to Know"); the header of
``models.toml`` documents every key. A malformed file raises :class:`CatalogError` naming the
file, the model and the key.

>>> m = get_model("llama3-70b")
>>> (m.D, m.F, m.N, m.K, m.H, m.L)
(8192, 28672, 64, 8, 128, 80)
>>> m.param_count()
70553698304
>>> m.kv_elements_per_token()   # 2·L·K·H
163840
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .model_counts import ModelCounts
from .reader import MAX_DIGITS, read_entries, shown, too_long
from ..errors import CatalogError, UnknownNameError

__all__ = ["Model", "ModelCatalog", "load_models", "default_models", "get_model", "SYMBOL_FIELDS"]

#: Model fields that bind engine symbols (symbol name -> field). For a mixture-of-experts model F is
#: the width of one routed expert, so the book's MoE forms (3EDF params, B > 120·E/k ...) come out
#: right; the other MoE and attention details have no engine symbol.
SYMBOL_FIELDS: Mapping[str, str] = {"D": "D", "F": "F", "N": "N", "K": "K", "H": "H", "L": "L",
                                    "V_vocab": "V", "E": "E", "k": "k"}


@dataclass(frozen=True)
class Model(ModelCounts):
    """A transformer's shape. Letters are the book's: D d_model, F d_ff (for an MoE model, one
    routed expert's width), N query heads, K KV heads, H head dim, L layers, V vocabulary,
    E routed experts (1 for a dense model), k routed experts per token.

    The optional fields describe what the letters cannot:

    * MoE layout: ``dense_layers`` of the L layers have an ordinary MLP of width ``F_dense``
      (DeepSeek's leading layers, every other layer of LLaMA-4 Maverick: which ones changes no
      count, KV cache or FLOPs per token); the rest are MoE layers with E routed experts of width
      F plus ``shared_experts`` always-on experts of width ``F_shared`` (default F).
    * Multi-head latent attention (DeepSeek-V2/V3), on when ``kv_lora_rank`` is set: keys and
      values are rebuilt from one compressed latent of ``kv_lora_rank`` elements per token plus a
      shared rotary key of ``qk_rope_head_dim``; only those two are cached. Queries go through a
      ``q_lora_rank`` bottleneck when it is set. Each head's query/key has ``qk_nope_head_dim``
      (default H) + ``qk_rope_head_dim`` elements and its value has H.
    * Local attention: ``local_layers`` of the L layers attend only to the last
      ``sliding_window`` tokens, so their KV cache stops growing there (Gemma 2). Which layers
      are local changes no count, so only how many is recorded.
    * Small tensors the book's letters leave out, each off by default: ``qkv_bias`` (biases on
      the query, key and value projections, (N + 2K)·H per layer: Qwen2), ``o_bias`` (on the
      output projection, D per layer), ``mlp_bias`` (on every MLP matrix: 2F + D per gated MLP,
      F + D per plain one, for each expert), ``router_bias`` (E per MoE layer), ``attention_sinks``
      (one learned logit per query head, N per layer: GPT-OSS), ``qk_norm`` (an RMS norm of
      width H on queries and one on keys, 2H per layer: Qwen3, Gemma 3; with ``qk_norm_per_head``
      one scale per head and element, (N + K)·H per layer: OLMo 2, Cohere), ``norms_per_layer``
      (2; 1 for a parallel block with one norm: Falcon, Cohere; 4 with a norm after attention
      and after the MLP too: Gemma 2 and 3) and ``norm_bias`` (LayerNorms with a bias: every norm
      vector is 2·D: GPT-2 and 3, OPT, BLOOM, Pythia, StarCoder2).
    * Tensors outside the layers besides the embeddings, which the book's count leaves out with
      the final norm: ``learned_positions`` (rows of a learned position table, each D: GPT-2 and 3
      n_ctx, OPT max_position_embeddings + 2) and ``embedding_norm`` (a norm right after the token
      embedding: BLOOM).
    """

    key: str
    name: str
    source: str
    D: int
    F: int
    N: int
    K: int
    H: int
    L: int
    V: int
    E: int = 1
    k: int = 1
    gated: bool = True
    tied: bool = False
    max_context: int | None = None
    # mixture-of-experts layout
    F_dense: int | None = None
    dense_layers: int = 0
    shared_experts: int = 0
    F_shared: int | None = None
    # multi-head latent attention
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    # local (sliding-window) attention
    sliding_window: int | None = None
    local_layers: int = 0
    # small tensors beyond the book's letters
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    router_bias: bool = False
    attention_sinks: bool = False
    qk_norm: bool = False
    qk_norm_per_head: bool = False
    norms_per_layer: int = 2
    norm_bias: bool = False
    # outside the layers
    learned_positions: int = 0
    embedding_norm: bool = False
    notes: str = field(default="", compare=False)

    # -- what kind of model -------------------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        return self.E > 1

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (a compressed KV cache)."""
        return self.kv_lora_rank is not None

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (0 for a dense model)."""
        return self.L - self.dense_layers if self.is_moe else 0

    def problems(self) -> list[str]:
        """Inconsistencies between fields, as sentences (empty when the model is coherent).

        >>> Model("m", "m", "s", D=8, F=8, N=6, K=4, H=2, L=2, V=10).problems()
        ['K = 4 KV heads must divide N = 6 query heads']
        """
        out = []
        if self.N % self.K:
            out.append(f"K = {self.K} KV heads must divide N = {self.N} query heads")
        if self.is_moe:
            if self.k > self.E:
                out.append(f"k = {self.k} experts per token exceeds E = {self.E} experts")
            if self.dense_layers >= self.L:
                out.append(f"dense_layers = {self.dense_layers} leaves no MoE layer of L = {self.L}")
        else:
            if self.k != 1:
                out.append(f"k = {self.k} experts per token needs E > 1 experts (E = 1 is a dense model)")
            moe_only = [n for n in ("F_dense", "F_shared") if getattr(self, n) is not None]
            moe_only += [n for n in ("dense_layers", "shared_experts", "router_bias") if getattr(self, n)]
            if moe_only:
                out.append(f"{', '.join(moe_only)} describe a mixture of experts, but E = 1")
        if self.shared_experts == 0 and self.F_shared is not None:
            out.append("F_shared is set but shared_experts = 0")
        if not self.is_mla:
            stray = [n for n in ("q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim")
                     if getattr(self, n) is not None]
            if stray:
                out.append(f"{', '.join(stray)} describe latent attention, which needs kv_lora_rank")
        elif self.qk_rope_head_dim is None:
            out.append("latent attention (kv_lora_rank) needs qk_rope_head_dim")
        else:
            standard = [n for n in ("qkv_bias", "qk_norm") if getattr(self, n)]
            if standard:
                out.append(f"{', '.join(standard)} describe query/key/value projections, which latent "
                           "attention (kv_lora_rank) replaces")
        if self.local_layers > self.L:
            out.append(f"local_layers = {self.local_layers} exceeds L = {self.L}")
        if self.local_layers and self.sliding_window is None:
            out.append("local_layers needs sliding_window (the window in tokens)")
        if self.sliding_window is not None and not self.local_layers:
            out.append("sliding_window needs local_layers (how many layers use the window)")
        if self.norms_per_layer not in (1, 2, 4):
            out.append(f"norms_per_layer = {self.norms_per_layer} must be 2 (before attention and before the MLP), "
                       "1 (one before a parallel attention and MLP) or 4 (after each as well)")
        if self.qk_norm_per_head and not self.qk_norm:
            out.append("qk_norm_per_head needs qk_norm")
        return out


@dataclass(frozen=True)
class ModelCatalog:
    path: str
    models: Mapping[str, Model]

    def __getitem__(self, key: str) -> Model:
        try:
            return self.models[key.lower()]
        except KeyError:
            raise UnknownNameError("model", key, self.models, hint="'scalemath models list' shows them") from None

    def __iter__(self):
        return iter(self.models.values())

    def __len__(self) -> int:
        return len(self.models)


# How each catalog key is checked: text, flag, positive integer, or count (integer >= 0).
_TEXT = frozenset({"name", "source", "notes"})
_FLAGS = frozenset({"gated", "tied", "qkv_bias", "o_bias", "mlp_bias", "router_bias", "attention_sinks",
                    "qk_norm", "qk_norm_per_head", "norm_bias", "embedding_norm"})
_COUNTS = frozenset({"dense_layers", "shared_experts", "local_layers", "learned_positions"})
_KEYS = tuple(f.name for f in fields(Model) if f.name != "key")
_REQUIRED = ("name", "source", "D", "F", "N", "K", "H", "L", "V")


def _check_value(name: str, raw: Any) -> str | None:
    """What ``raw`` should have been for key ``name``, or None when it is fine."""
    if name in _TEXT:
        if not isinstance(raw, str) or not raw.strip():
            return "a non-empty string"
        return None if len(raw) <= 2000 and raw.isprintable() else "one line of at most 2000 printable characters"
    if name in _FLAGS:
        return None if isinstance(raw, bool) else "true or false"
    if too_long(raw):
        return f"an integer of at most {MAX_DIGITS} digits"
    is_int = isinstance(raw, int) and not isinstance(raw, bool)
    if name in _COUNTS:
        return None if is_int and raw >= 0 else "a non-negative integer"
    return None if is_int and raw > 0 else "a positive integer"


def _model(path: str, key: str, table: Any) -> Model:
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: model {key!r} must be a table ([models.{key}])")
    values = {}
    for name, raw in table.items():
        if name not in _KEYS:
            raise CatalogError(f"{path}: model {key!r} has unknown key {shown(name)}; known: {', '.join(sorted(_KEYS))}")
        wanted = _check_value(name, raw)
        if wanted:
            raise CatalogError(f"{path}: model {key!r}, key {name!r} = {shown(raw)} has the wrong type: "
                               f"it must be {wanted}")
        values[name] = raw
    missing = [n for n in _REQUIRED if n not in values]
    if missing:
        raise CatalogError(f"{path}: model {key!r} lacks {', '.join(missing)}")
    model = Model(key=key, **values)
    problems = model.problems()
    if problems:
        raise CatalogError(f"{path}: model {key!r}: {'; '.join(problems)}")
    return model


def load_models(path: str | Path | None = None) -> ModelCatalog:
    """Read a catalog in the format of ``models.toml`` (the packaged one when ``path`` is None)."""
    label, models = read_entries(path, "models.toml", "models", "model", _model)
    return ModelCatalog(label, models)


@functools.cache
def default_models() -> ModelCatalog:
    return load_models()


def get_model(name: str, catalog: ModelCatalog | None = None) -> Model:
    """A model by name, from ``catalog`` or the packaged one; unknown names get a did-you-mean."""
    return (catalog or default_models())[name]
