"""Serving's quantities (inference.md, applied-inference.md), all named ``inference.*``: the KV cache, memory
and the chips it takes, decode and prefill bounds, attention's intensity, model parallelism (tensor and 2D
weight-stationary), decode's communication and disaggregated serving, cost, and speculative decoding. Topic
``inference``: B is the decode batch (sequences, one token each per step), S the context, T a prompt;
``kv_token`` is bound from ``--model`` and the cache's dtype.
"""

from __future__ import annotations

from typing import Callable

from ..symbolic import decode_comms as dc
from ..symbolic import inference as inf
from ..symbolic.inference import ws2d_layout as ws2d
from ..symbolic.inference import engine_schedules, kv_projection, local_kv, naive_attention, pareto_cost
from ..symbolic.derivation import Derivation
from .registry import Quantity

__all__ = ["ENTRIES"]

TOPIC = "inference"


def _q(name: str, build: Callable[[], Derivation], *, level: bool = False) -> Quantity:
    return Quantity(f"inference.{name}", build, TOPIC, level)


#: In the registry's order.
ENTRIES: tuple[Quantity, ...] = (
    _q("kv_cache.bytes_per_token", inf.kv_cache_bytes_per_token),
    _q("kv_cache.bytes_per_sequence", inf.kv_cache_bytes_per_sequence),
    _q("kv_cache.bytes_per_batch", inf.kv_cache_bytes_per_batch),
    _q("kv_cache.bytes_per_chip", inf.kv_cache_bytes_per_chip),
    _q("memory.kv_budget", inf.kv_budget),
    _q("memory.max_batch", inf.max_batch),
    _q("memory.min_chips", inf.min_chips),
    _q("memory.min_chips_weights", inf.min_chips_weights),
    _q("decode.flops", inf.decode_flops),
    _q("decode.bytes", inf.decode_bytes),
    _q("decode.t_math", inf.decode_t_math),
    _q("decode.t_weights", inf.decode_t_weights, level=True),
    _q("decode.t_kv", inf.decode_t_kv, level=True),
    _q("decode.step_time", inf.decode_step_time, level=True),
    _q("decode.step_time_memory_bound", inf.decode_step_time_memory_bound, level=True),
    _q("decode.step_time_full_hbm", inf.decode_step_time_full_hbm, level=True),
    _q("decode.token_latency", inf.decode_token_latency, level=True),
    _q("decode.throughput", inf.decode_throughput, level=True),
    _q("decode.throughput_per_chip", inf.decode_throughput_per_chip, level=True),
    _q("decode.throughput_memory_bound", inf.decode_throughput_memory_bound, level=True),
    _q("decode.critical_batch", inf.decode_critical_batch, level=True),
    _q("decode.critical_batch_moe", inf.decode_critical_batch_moe, level=True),
    _q("moe.experts_touched", inf.moe_experts_touched),
    _q("moe.expert_bytes_loaded", inf.moe_weight_bytes_loaded),
    _q("moe.experts_read", inf.moe_experts_read),
    _q("moe.params_read", inf.moe_params_read),
    _q("moe.t_weights", inf.moe_decode_t_weights, level=True),
    _q("moe.step_time", inf.moe_decode_step_time, level=True),
    _q("moe.step_time_comms", lambda: inf.moe_routed(dc.decode_step_time_comms(), "decode step time with the "
       "collectives on the critical path (a mixture: only the experts touched are read)"), level=True),
    _q("moe.step_time_overlap", lambda: inf.moe_routed(dc.decode_step_time_overlap(), "decode step time with the "
       "collectives overlapped (a mixture: only the experts touched are read)"), level=True),
    _q("decode.kv_weights_batch", inf.decode_kv_weights_batch),
    _q("decode.kv_math_context", inf.decode_kv_math_context, level=True),
    _q("decode.generation_time", inf.generation_time),
    _q("decode.queries_per_s_per_chip", inf.queries_per_s_per_chip),
    _q("prefill.flops", inf.prefill_flops),
    _q("prefill.flops_with_attention", inf.prefill_flops_with_attention),
    _q("prefill.bytes", inf.prefill_bytes),
    _q("prefill.t_math", inf.prefill_t_math),
    _q("prefill.t_lower", inf.prefill_t_lower, level=True),
    _q("prefill.time", inf.prefill_time),
    _q("prefill.critical_tokens", inf.prefill_critical_tokens, level=True),
    _q("prefill.activation_bytes", inf.prefill_activation_bytes),
    _q("attention.intensity", inf.attention_intensity),
    _q("attention.intensity_prefill", inf.attention_intensity_prefill),
    _q("attention.intensity_decode", inf.attention_intensity_decode),
    _q("attention.prefill_critical_T", inf.attention_prefill_critical_T, level=True),
    _q("tp.t_math", inf.tp_t_math),
    _q("tp.t_weights", inf.tp_t_weights, level=True),
    _q("tp.t_ici", inf.tp_t_ici),
    _q("tp.t_ici_latency_aware", inf.tp_t_ici_latency_aware),
    _q("tp.max_degree_memory_bound", inf.tp_max_degree_memory_bound, level=True),
    _q("tp.max_degree_compute_bound", inf.tp_max_degree_compute_bound),
    _q("tp.t_comms_1d", inf.tp_t_comms_1d),
    _q("tp.latency_bound_bytes", inf.tp_latency_bound_bytes),
    _q("tp.latency_bound_degree", inf.tp_latency_bound_degree),
    _q("ws2d.t_math", inf.ws2d_t_math),
    _q("ws2d.t_comms", inf.ws2d_t_comms),
    _q("ws2d.x_opt", inf.ws2d_x_opt),
    _q("ws2d.t_comms_opt", inf.ws2d_t_comms_opt),
    _q("ws2d.min_chips", inf.ws2d_min_chips),
    _q("ws2d.weight_bytes_per_chip", ws2d.ws2d_weight_bytes_per_chip),
    _q("ws2d.collectives", ws2d.ws2d_collectives),
    _q("ws2d.max_chips_compute_bound", ws2d.ws2d_max_chips_compute_bound),
    _q("serving.prefill_to_generate_ratio", inf.prefill_to_generate_ratio),
    _q("serving.tokens_freed_per_step", inf.tokens_freed_per_step),
    _q("serving.kv_transfer_time", inf.kv_transfer_time),
    _q("cost.per_million_tokens", inf.cost_per_million_tokens),
    _q("cost.flops_per_dollar", inf.flops_per_dollar),
    _q("decode.t_comms", dc.decode_t_comms),
    _q("decode.t_comms_gpu", dc.decode_t_comms_gpu),
    _q("decode.t_comms_2d", dc.decode_t_comms_2d),
    _q("decode.t_comms_ep", dc.decode_t_comms_ep),
    _q("decode.t_comms_ep_gpu", dc.decode_t_comms_ep_gpu),
    _q("decode.step_time_comms", dc.decode_step_time_comms, level=True),
    _q("decode.step_time_overlap", dc.decode_step_time_overlap, level=True),
    _q("serving.prefill_servers", dc.prefill_servers),
    _q("cost.per_million_tokens_disaggregated", dc.cost_per_million_tokens_disaggregated),
    _q("speculative.speedup", inf.speculative_speedup_measured),
    *(_q(f"speculative.speedup_draft{g}", (lambda g=g: inf.speculative_speedup(g)))
      for g in inf.SPECULATIVE_DRAFTS),
    _q("naive.tokens", inf.naive_tokens),
    _q("naive.flops", inf.naive_flops),
    _q("naive.cached_flops", inf.naive_cached_flops),
    _q("naive.flops_ratio", inf.naive_flops_ratio),
    _q("naive.t_math", inf.naive_t_math),
    _q("naive.attention_flops", naive_attention.naive_attention_flops),
    _q("naive.cached_attention_flops", naive_attention.cached_attention_flops),
    _q("naive.attention_ratio", naive_attention.naive_attention_ratio),
    _q("naive.flops_with_attention", naive_attention.naive_flops_with_attention),
    _q("local.kv_bytes_per_sequence", local_kv.local_kv_bytes_per_sequence),
    _q("local.kv_fraction", local_kv.local_kv_fraction),
    _q("kv_proj.bytes_per_chip", kv_projection.kv_projection_bytes_per_chip),
    _q("kv_proj.extra_bytes", kv_projection.kv_projection_extra_bytes),
    _q("kv_proj.extra_fraction", kv_projection.kv_projection_extra_fraction),
    _q("batched_prefill.padding_flops", engine_schedules.batched_prefill_padding_flops),
    _q("batched_prefill.padding_fraction", engine_schedules.batched_prefill_padding_fraction),
    _q("batched_prefill.ttft", engine_schedules.batched_prefill_ttft),
    _q("batched_prefill.ttft_ratio", engine_schedules.batched_prefill_ttft_ratio),
    _q("interleaved.stall_time", engine_schedules.interleaved_stall_time),
    _q("interleaved.stall_steps", engine_schedules.interleaved_stall_steps),
    _q("pareto.batch_at_latency", pareto_cost.pareto_batch_at_latency),
    _q("pareto.cost_ratio", pareto_cost.pareto_cost_ratio),
    _q("kv_share.bytes_per_token", inf.shared_kv_bytes_per_token),
    _q("kv_share.bytes_per_batch", inf.shared_kv_bytes_per_batch),
    _q("kv_share.max_batch", inf.shared_kv_max_batch),
    _q("paged.pages_per_sequence", inf.paged_pages_per_sequence),
    _q("paged.bytes_per_sequence", inf.paged_bytes_per_sequence),
    _q("paged.wasted_bytes", inf.paged_wasted_bytes),
    _q("paged.padded_wasted_bytes", inf.padded_wasted_bytes),
    _q("paged.max_batch", inf.paged_max_batch),
    _q("prefix.flops_uncached", inf.prefix_flops_uncached),
    _q("prefix.flops_cached", inf.prefix_flops_cached),
    _q("prefix.flops_saved", inf.prefix_flops_saved),
    _q("prefix.fraction_needed", inf.prefix_fraction_needed),
    _q("prefix.time_saved", inf.prefix_time_saved),
    _q("prefix.cache_bytes", inf.prefix_cache_bytes),
    _q("kv_batch.alltoall_bytes", inf.kv_batch_alltoall_bytes),
    _q("kv_batch.t_alltoall", inf.kv_batch_t_alltoall),
    _q("kv_batch.bytes_per_chip", inf.kv_batch_bytes_per_chip),
    _q("kv_seq.bytes_per_chip", inf.kv_seq_bytes_per_chip),
    _q("kv_seq.t_comms", inf.kv_seq_t_comms),
    _q("moe_layout.bytes_per_chip", inf.moe_layout_bytes_per_chip),
    _q("moe_layout.t_weights", inf.moe_layout_t_weights, level=True),
    _q("moe_layout.free_hbm", inf.moe_layout_free_hbm),
    _q("moe_layout.t_ici", inf.moe_layout_t_ici),
)
