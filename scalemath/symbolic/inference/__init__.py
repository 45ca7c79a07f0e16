"""Serving a transformer (book parts 7 and 8, inference.md and applied-inference.md), by concern.

Inference has two phases: **prefill** runs a whole prompt at once and writes its keys and values into the KV
cache; **decode** then makes one token per sequence per step, reading every weight and each sequence's cache.
The package holds the KV cache and what fits in HBM (:mod:`.memory`), the decode step, its time, throughput and
critical batches (:mod:`.decode`; a mixture's step that reads only the experts its batch touches in
:mod:`.moe_decode`), prefill and the intensity of attention (:mod:`.prefill`), tensor-parallel and
2D weight-stationary decode (:mod:`.model_parallel`), what follows from a step time: servers, requests and cost
(:mod:`.serving`), speculative decoding (:mod:`.speculative`), what an engine does with the cache (naive
sampling, cross-layer sharing, paging, prefix caching: :mod:`.kv_engine`) and where caches and experts live on a
mesh (:mod:`.kv_layouts`); their sections and symbols are in
:mod:`.common`. Conventions: ``B`` is the decode batch (sequences in flight, one token each per step), ``S`` the
context each sequence attends to, ``T`` a prompt's length; ``P`` the parameter count and ``P_active`` the
parameters one token goes through (without ``--model``, ``P_active`` takes ``P``'s value), ``b_w`` bytes per
weight (``--weight-dtype``), ``b_kv`` bytes per cache element and ``kv_token`` the cache bytes one token adds
over all layers (``inference.kv_cache.bytes_per_token`` derives it for standard attention; the engine binds it
from ``--model``, latent attention included, and the cache dtype); ``C`` the chip's rate in the compute dtype
(``--dtype``), ``W`` the HBM bandwidth (``--level``), ``n_dev`` the chips serving one model replica and ``Y``
its tensor-parallel degree.
"""

from __future__ import annotations

from .common import (APPENDIX_B, APPENDIX_C, APPENDIX_D, ATTENTION, ESTIMATES, GENERATION, KV_SHARDING, KV_TOK,
                     LINEAR, MEMORY, MOE_SERVING, PARETO, PREFILL, PROBLEMS, STORY, T_KV, T_MATH, T_STEP, T_W,
                     THROUGHPUT)
from .decode import (decode_bytes, decode_critical_batch, decode_critical_batch_moe, decode_flops,
                     decode_kv_math_context, decode_kv_weights_batch, decode_step_time, decode_step_time_full_hbm,
                     decode_step_time_memory_bound, decode_t_kv, decode_t_math, decode_t_weights, decode_throughput,
                     decode_throughput_memory_bound, decode_throughput_per_chip, decode_token_latency,
                     moe_experts_touched, moe_weight_bytes_loaded)
from .moe_decode import moe_decode_step_time, moe_decode_t_weights, moe_experts_read, moe_params_read, moe_routed
from .memory import (kv_budget, kv_cache_bytes_per_batch, kv_cache_bytes_per_chip, kv_cache_bytes_per_sequence,
                     kv_cache_bytes_per_token, max_batch, min_chips, min_chips_weights)
from .model_parallel import (tp_latency_bound_bytes, tp_latency_bound_degree, tp_max_degree_compute_bound,
                             tp_max_degree_memory_bound, tp_t_comms_1d, tp_t_ici, tp_t_ici_latency_aware, tp_t_math,
                             tp_t_weights, ws2d_min_chips, ws2d_t_comms, ws2d_t_comms_opt, ws2d_t_math, ws2d_x_opt)
from .prefill import (attention_intensity, attention_intensity_decode, attention_intensity_prefill,
                      attention_prefill_critical_T, prefill_activation_bytes, prefill_bytes, prefill_critical_tokens,
                      prefill_flops, prefill_flops_with_attention, prefill_t_lower, prefill_t_math, prefill_time)
from .serving import (cost_per_million_tokens, flops_per_dollar, generation_time, kv_transfer_time,
                      prefill_to_generate_ratio, queries_per_s_per_chip, tokens_freed_per_step)
from .speculative import SPECULATIVE_DRAFTS, speculative_speedup, speculative_speedup_measured
from .kv_engine import (naive_cached_flops, naive_flops, naive_flops_ratio, naive_t_math, naive_tokens,
                        padded_wasted_bytes, paged_bytes_per_sequence, paged_max_batch, paged_pages_per_sequence,
                        paged_wasted_bytes, prefix_cache_bytes, prefix_flops_cached, prefix_flops_saved,
                        prefix_flops_uncached, prefix_fraction_needed, prefix_time_saved, shared_kv_bytes_per_batch,
                        shared_kv_bytes_per_token, shared_kv_max_batch)
from .kv_layouts import (kv_batch_alltoall_bytes, kv_batch_bytes_per_chip, kv_batch_t_alltoall, kv_seq_bytes_per_chip,
                         kv_seq_t_comms, moe_layout_bytes_per_chip, moe_layout_free_hbm, moe_layout_t_ici,
                         moe_layout_t_weights)

__all__ = [
    "kv_cache_bytes_per_token", "kv_cache_bytes_per_sequence", "kv_cache_bytes_per_batch", "kv_cache_bytes_per_chip",
    "kv_budget", "max_batch", "min_chips", "min_chips_weights",
    "decode_flops", "decode_bytes", "decode_t_math", "decode_t_weights", "decode_t_kv", "decode_step_time",
    "decode_step_time_memory_bound", "decode_step_time_full_hbm", "decode_token_latency", "decode_throughput",
    "decode_throughput_per_chip", "decode_throughput_memory_bound", "decode_critical_batch",
    "decode_critical_batch_moe", "moe_experts_touched", "moe_weight_bytes_loaded", "moe_experts_read",
    "moe_params_read", "moe_decode_t_weights", "moe_decode_step_time", "moe_routed", "decode_kv_weights_batch",
    "decode_kv_math_context", "generation_time",
    "queries_per_s_per_chip",
    "prefill_flops", "prefill_flops_with_attention", "prefill_bytes", "prefill_t_math", "prefill_t_lower",
    "prefill_time", "prefill_critical_tokens", "prefill_activation_bytes",
    "attention_intensity", "attention_intensity_prefill", "attention_intensity_decode",
    "attention_prefill_critical_T",
    "tp_t_math", "tp_t_weights", "tp_t_ici", "tp_t_ici_latency_aware", "tp_max_degree_memory_bound",
    "tp_max_degree_compute_bound", "tp_t_comms_1d", "tp_latency_bound_bytes", "tp_latency_bound_degree",
    "ws2d_t_math", "ws2d_t_comms", "ws2d_x_opt", "ws2d_t_comms_opt", "ws2d_min_chips",
    "prefill_to_generate_ratio", "tokens_freed_per_step", "kv_transfer_time", "cost_per_million_tokens",
    "flops_per_dollar",
    "speculative_speedup", "speculative_speedup_measured", "SPECULATIVE_DRAFTS",
    "naive_tokens", "naive_flops", "naive_cached_flops", "naive_flops_ratio", "naive_t_math",
    "shared_kv_bytes_per_token", "shared_kv_bytes_per_batch", "shared_kv_max_batch",
    "paged_pages_per_sequence", "paged_bytes_per_sequence", "paged_wasted_bytes", "padded_wasted_bytes",
    "paged_max_batch", "prefix_flops_uncached", "prefix_flops_cached", "prefix_flops_saved",
    "prefix_fraction_needed", "prefix_time_saved", "prefix_cache_bytes",
    "kv_batch_alltoall_bytes", "kv_batch_t_alltoall", "kv_batch_bytes_per_chip", "kv_seq_bytes_per_chip",
    "kv_seq_t_comms", "moe_layout_bytes_per_chip", "moe_layout_t_weights", "moe_layout_free_hbm",
    "moe_layout_t_ici",
]
