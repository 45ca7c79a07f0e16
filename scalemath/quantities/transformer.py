"""The transformer chapter's accounting (transformers.md): parameters (dense, mixture of experts, active per
token), FLOPs per token and for training (with rematerialisation), MFU, the bytes of weights, gradients,
optimizer state, activations and KV cache, and attention's intensity and crossovers. Topic ``transformer``:
B counts tokens; a gated MLP and untied embeddings unless a model (``--model``) says otherwise, and F is
refused where a dense form does not describe the model's MLPs.
"""

from __future__ import annotations

from typing import Callable

from ..symbolic import transformer as tf
from ..symbolic.transformer.params import (model_active_params, model_kv_bytes_per_token, model_params,
                                          non_embedding_params)
from ..symbolic.transformer import memory as tf_memory
from ..symbolic.transformer import totals
from ..symbolic.transformer import causal, replicated_matmul
from ..symbolic.derivation import Derivation
from .registry import Quantity

__all__ = ["ENTRIES"]

TOPIC = "transformer"


def _q(name: str, build: Callable[..., Derivation], *, level: bool = False,
       conventions: tuple[str, ...] = ()) -> Quantity:
    return Quantity(name, build, TOPIC, level, conventions)


#: The axes the training FLOPs, MFU and time forms read (scalemath.conventions).
_FLOPS_AXES = ("attention", "recompute")
_UTIL_AXES = ("attention", "recompute", "utilisation")


#: In the registry's order.
ENTRIES: tuple[Quantity, ...] = (
    _q("transformer.mlp_params", tf.mlp_params),
    _q("transformer.attention_params", tf.attention_params),
    _q("transformer.ffw_params_total", totals.ffw_params_total),
    _q("transformer.attention_params_total", totals.attention_params_total),
    _q("transformer.norm_params", tf.norm_params),
    _q("transformer.embedding_params", tf.embedding_params),
    _q("transformer.params_per_layer", tf.params_per_layer),
    _q("transformer.params", tf.params),
    _q("transformer.moe_mlp_params", tf.moe_mlp_params),
    _q("transformer.moe_active_mlp_params", lambda: tf.moe_mlp_params(active=True)),
    _q("transformer.moe_params", lambda: tf.params(experts="total")),
    _q("transformer.moe_forward_flops_per_token", lambda: tf.forward_flops_per_token(experts="active")),
    Quantity("transformer.active_params", lambda active_params="all-weights": tf.params("active", active_params),
             TOPIC, conventions=("active_params",)),
    _q("transformer.mlp_flops", tf.mlp_flops),
    _q("transformer.projection_flops", tf.projection_flops),
    _q("transformer.attention_flops", tf.attention_flops),
    _q("transformer.unembedding_flops", tf.unembedding_flops),
    _q("transformer.flops_per_token", tf.flops_per_token, conventions=("recompute",)),
    _q("transformer.moe_flops_per_token", lambda: tf.flops_per_token(experts="active")),
    _q("transformer.forward_flops_per_token", tf.forward_flops_per_token),
    _q("transformer.matmul_flops_per_token", tf.matmul_flops_per_token),
    _q("transformer.attention_flops_per_token", tf.attention_flops_per_token),
    _q("transformer.attention_forward_flops_per_token", lambda: tf.attention_flops_per_token(forward=True)),
    _q("transformer.attention_to_matmul_ratio", tf.attention_to_matmul_ratio),
    _q("transformer.attention_to_matmul_ratio_book", tf.attention_to_matmul_ratio_book),
    _q("transformer.attention_crossover_T", tf.attention_crossover_T),
    _q("transformer.attention_crossover_T_book", tf.attention_crossover_T_book),
    _q("transformer.attention_projection_crossover_T", tf.attention_projection_crossover_T),
    _q("transformer.causal_attention_flops", causal.causal_attention_flops),
    _q("transformer.causal_attention_saving", causal.causal_attention_saving),
    _q("transformer.windowed_attention_flops", causal.windowed_attention_flops),
    _q("transformer.local_attention_crossover_T", causal.local_attention_crossover_T),
    _q("transformer.replicated_matmul_flops_per_device", replicated_matmul.replicated_matmul_flops_per_device),
    _q("transformer.replicated_matmul_flops_total", replicated_matmul.replicated_matmul_flops_total),
    _q("transformer.training_flops", tf.training_flops, conventions=_FLOPS_AXES),
    _q("transformer.training_flops_remat", tf.training_flops_remat),
    _q("transformer.remat_extra_flops", tf.remat_extra_flops),
    _q("transformer.mfu", tf.mfu, conventions=_UTIL_AXES),
    _q("transformer.hfu", lambda attention="none", recompute="none": tf.mfu(attention, recompute, "hfu"),
       conventions=_FLOPS_AXES),
    _q("transformer.mfu_from_achieved", tf.utilisation_from_achieved, conventions=("utilisation",)),
    _q("transformer.hfu_from_achieved", lambda: tf.utilisation_from_achieved("hfu")),
    _q("transformer.mfu_from_throughput", tf.utilisation_from_throughput, conventions=_UTIL_AXES),
    _q("transformer.hfu_from_throughput",
       lambda attention="none", recompute="none": tf.utilisation_from_throughput(attention, recompute, "hfu"),
       conventions=_FLOPS_AXES),
    _q("transformer.megatron_iteration_flops", tf.megatron_iteration_flops),
    _q("transformer.kaplan_forward_flops_per_token", tf.kaplan_forward_flops_per_token),
    _q("transformer.pf_days", tf.pf_days),
    _q("transformer.weights_bytes", tf.weights_bytes),
    Quantity("transformer.gradient_bytes", tf.gradient_bytes, TOPIC, conventions=("optimizer",)),
    Quantity("transformer.optimizer_bytes", tf.optimizer_bytes, TOPIC, conventions=("optimizer",)),
    Quantity("transformer.training_state_bytes", tf.training_state_bytes, TOPIC, conventions=("optimizer",)),
    Quantity("transformer.training_state_bytes_with_grads", tf.training_state_bytes_with_grads, TOPIC,
             conventions=("optimizer",)),
    Quantity("transformer.activation_bytes", tf.activation_bytes, TOPIC, conventions=("activations", "recompute")),
    _q("transformer.activation_bytes_no_remat", lambda: tf.activation_bytes("no_remat")),
    _q("transformer.activation_bytes_block_remat", lambda: tf.activation_bytes("block_remat")),
    _q("transformer.activation_bytes_big_matmuls", lambda: tf.activation_bytes("big_matmuls")),
    _q("transformer.activation_bytes_ffw_outputs", tf.activation_bytes_ffw_outputs),
    # Korthikanti et al. 2022, Table 2: each row by name
    *(_q(f"transformer.activation_bytes_korthikanti{suffix}",
         (lambda par=par, rec=rec: tf_memory.korthikanti_activation_bytes(par, rec)))
      for suffix, par, rec in (("", "none", "none"), ("_tp", "tp", "none"), ("_tp_sp", "tp_sp", "none"),
                               ("_tp_selective", "tp", "selective"), ("_tp_sp_selective", "tp_sp", "selective"),
                               ("_full", "none", "full"))),
    _q("transformer.kv_cache_bytes_per_token", tf.kv_cache_bytes_per_token),
    # the model's own counts, bound from --model (every tensor, active, Kaplan's non-embedding N, KV bytes)
    _q("transformer.model_params", model_params),
    _q("transformer.model_active_params", model_active_params),
    _q("transformer.non_embedding_params", non_embedding_params),
    _q("transformer.model_kv_bytes_per_token", model_kv_bytes_per_token),
    _q("transformer.kv_cache_bytes", tf.kv_cache_bytes),
    _q("transformer.moe_critical_batch", tf.moe_critical_batch, level=True),
    _q("transformer.attention_intensity", tf.attention_intensity),
    _q("transformer.attention_intensity_prefill", tf.attention_intensity_prefill),
    _q("transformer.attention_intensity_decode", tf.attention_intensity_decode),
    _q("transformer.attention_prefill_critical_T", tf.attention_prefill_critical_T, level=True),
)
