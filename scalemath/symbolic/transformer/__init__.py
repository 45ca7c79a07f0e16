"""Transformer accounting (book part 4, transformers.md): parameters, FLOPs, memory, intensity, by concern.

Symbols are the book's (D model width, F MLP width, N query heads, K key/value heads, H head dimension, L layers,
``V_vocab`` vocabulary, E experts and k experts per token), with two conventions of the engine: ``B`` counts
tokens, so the book's ``B·T`` with ``B`` sequences is ``B`` here and its ``12BT²NH`` attention cost is
``12·B·T·N·H``; and FLOPs "per token" are for the whole model unless the title says "one layer". The
architecture enters as symbols that ``--model`` binds: ``n_mlp`` weight matrices per MLP (3 for a gated MLP
such as SwiGLU, 2 for a plain one) and ``n_emb`` embedding matrices (2, or 1 when the unembedding is tied), so
one closed form serves GPT-3 and LLaMA alike; without a model they take the book's 3 and 2. FLOPs of training
and serving use ``P_active``, the parameters one token goes through (``P`` for a dense model, the k routed
experts' share for a mixture of experts). The package holds parameters (:mod:`.params`), FLOPs (:mod:`.flops`),
the share of attention in them (:mod:`.attention_fraction`), the bytes of training state, activations and KV
cache (:mod:`.memory`) and arithmetic intensity (:mod:`.intensity`); the sections and symbols are in
:mod:`.common`.
"""

from __future__ import annotations

from .attention_fraction import (attention_crossover_T, attention_crossover_T_book, attention_projection_crossover_T,
                                 attention_to_matmul_ratio, attention_to_matmul_ratio_book)
from .common import APPLIED, ARCH, FRACTION, KV, MOE, PARAMS_SRC, PROBLEMS, REMAT, RULE, TRAINING
from .flops import (attention_flops, attention_flops_per_token, flops_per_token, forward_flops_per_token,
                    matmul_flops_per_token, mfu, mlp_flops, projection_flops, remat_extra_flops, training_flops,
                    training_flops_remat, unembedding_flops)
from .intensity import (attention_intensity, attention_intensity_decode, attention_intensity_prefill,
                        attention_prefill_critical_T, moe_critical_batch)
from .memory import (CHECKPOINT_POLICIES, activation_bytes, activation_bytes_ffw_outputs, gradient_bytes,
                     kv_cache_bytes, kv_cache_bytes_per_token, optimizer_bytes, training_state_bytes,
                     training_state_bytes_with_grads, weights_bytes)
from .published import (kaplan_forward_flops_per_token, megatron_iteration_flops, pf_days,
                        utilisation_from_achieved, utilisation_from_throughput)
from .params import (attention_params, embedding_params, mlp_params, moe_mlp_params, norm_params, params,
                     params_per_layer)

__all__ = [
    "mlp_params", "attention_params", "norm_params", "embedding_params", "params_per_layer", "params",
    "moe_mlp_params",
    "mlp_flops", "projection_flops", "attention_flops", "unembedding_flops",
    "flops_per_token", "forward_flops_per_token", "matmul_flops_per_token", "attention_flops_per_token",
    "attention_to_matmul_ratio", "attention_to_matmul_ratio_book", "attention_crossover_T",
    "attention_crossover_T_book", "attention_projection_crossover_T",
    "training_flops", "training_flops_remat", "remat_extra_flops", "mfu",
    "megatron_iteration_flops", "kaplan_forward_flops_per_token", "utilisation_from_achieved",
    "utilisation_from_throughput", "pf_days",
    "weights_bytes", "gradient_bytes", "optimizer_bytes", "training_state_bytes",
    "training_state_bytes_with_grads", "activation_bytes", "activation_bytes_ffw_outputs",
    "kv_cache_bytes_per_token", "kv_cache_bytes", "moe_critical_batch",
    "attention_intensity", "attention_intensity_prefill", "attention_intensity_decode",
    "attention_prefill_critical_T", "CHECKPOINT_POLICIES",
]
