"""What a config.json says beyond the book's letters for the GPT-2 style families and their kin: how many key/value
heads Falcon has, the norms per layer and their biases, learned position tables and BLOOM's embedding norm (see the
table of :mod:`.hf_config`), and the layouts the reader refuses by name because the catalog has no field for them."""

from __future__ import annotations

from typing import Any

from .hf_families import _Family
from .hf_fields import _K, _Reader

__all__ = ["outside_the_letters", "refuse_unknown_layout"]


def _kv_heads(r: _Reader, family: _Family, N: int, model_type: str) -> int:
    """K: Falcon's multi_query (one KV head) unless new_decoder_architecture, whose num_kv_heads counts; else the
    shared keys, N when absent."""
    if model_type == "falcon":
        if r.flag("new_decoder_architecture", False) or not r.flag("multi_query", True):
            return r.integer(_K) or N
        return 1
    return r.integer(_K) or N


def _falcon_norms(r: _Reader) -> int:
    """Falcon's norms per layer: the 7B's parallel block has one (input_layernorm); new_decoder_architecture has
    ln_attn and ln_mlp unless num_ln_in_parallel_attn is 1; a sequential block has two."""
    if r.flag("new_decoder_architecture", False):
        return 1 if r.one("num_ln_in_parallel_attn", "norms before the parallel block") == 1 else 2
    return 1 if r.flag("parallel_attn", True) else 2


def outside_the_letters(r: _Reader, family: _Family, model_type: str) -> dict[str, Any]:
    """Model fields for norms (how many per layer, with or without a bias), a learned position table and a norm
    after the embedding."""
    out: dict[str, Any] = {}
    norms = _falcon_norms(r) if model_type == "falcon" else family.norms_per_layer
    if norms != 2:
        out["norms_per_layer"] = norms
    if family.norm_bias:
        out["norm_bias"] = True
    if family.embedding_norm:
        out["embedding_norm"] = True
    if family.positions == "n_positions":  # GPT-2's wpe: one row per position of n_positions
        out["learned_positions"] = r.integer((("n_positions", "n_ctx", "max_position_embeddings"),
                                              "rows of the learned position table"), required=True)
    elif family.positions == "opt":  # OPTLearnedPositionalEmbedding keeps 2 rows more than positions
        out["learned_positions"] = r.one("max_position_embeddings", "positions of the learned table",
                                         required=True) + 2
    return out


def refuse_unknown_layout(r: _Reader, model_type: str, D: int) -> None:
    """Refuse, naming the key, what a family can do that the catalog has no field for."""
    if model_type == "opt":
        proj = r.one("word_embed_proj_dim", "width of the word embeddings")
        if proj is not None and proj != D:
            raise r.fail(f"'word_embed_proj_dim' = {proj} differs from hidden_size {D}: OPT's project_in and "
                         "project_out matrices (OPT-350m) are not counted by the catalog")
        if not r.flag("do_layer_norm_before", True) or r.flag("_remove_final_layer_norm", False):
            raise r.fail("'do_layer_norm_before' = false or '_remove_final_layer_norm' = true: OPT's post-norm "
                         "layout without a final norm (OPT-350m) is not counted by the catalog")
        if not r.flag("layer_norm_elementwise_affine", True):
            raise r.fail("'layer_norm_elementwise_affine' = false: norms without weights are not counted by the "
                         "catalog")
    if model_type == "gpt2" and r.flag("add_cross_attention", False):
        raise r.fail("'add_cross_attention' = true: GPT-2's cross-attention blocks (an encoder-decoder's) are not "
                     "counted by the catalog")
    if model_type == "starcoder2" and r.text("norm_type") not in ("", "layer_norm"):
        raise r.fail(f"'norm_type' = {r.text('norm_type')!r}: StarCoder2 is counted with LayerNorms (weight and "
                     "bias); another norm is not")
