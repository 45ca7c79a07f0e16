"""Typed look-ups in one parsed Hugging Face ``config.json`` (:class:`_Reader`), with the keys read for every
family and their aliases (see :mod:`.hf_config`). Every error names the file and the key."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import CatalogError
from .reader import MAX_DIGITS, shown, too_long

_D = (("hidden_size", "n_embd", "n_embed", "d_model"), "d_model")
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
