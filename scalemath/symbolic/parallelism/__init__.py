"""Parallelism for training (book parts 5 and 6, and the GPU chapter's LLM rooflines), by concern.

The book models each layer as an MLP only, In[B, D] · W_in[D, F] · W_out[F, D] with B the global batch in
tokens, and calls a scheme compute-bound when its compute time exceeds its communication time. The package holds
that per-layer model of each scheme and the balance every threshold solves (:mod:`.schemes`), data parallelism
and FSDP within a pod and across pods (:mod:`.data_parallel`), tensor parallelism alone and with FSDP
(:mod:`.tensor_parallel`), pipelining (:mod:`.pipeline`), the GPU chapter's data, tensor and expert parallelism
(:mod:`.gpu`), the time of a step and of a run (:mod:`.run_time`) and memory per device (:mod:`.memory`); their
sections and symbols are in :mod:`.common`. Axes: X is the data / FSDP degree, Y the tensor-parallel degree, Z
the pipeline (or expert) degree, ``n_dev`` all chips; ``M_X`` and ``M_Y`` count the hardware mesh axes X and Y
span. The book gives no pipeline-bubble formula, so none is offered here.
"""

from __future__ import annotations

from .common import (APPLIED, DCN, DP, FSDP, GPU_DP, GPU_EP, GPU_EX, GPU_PP, GPU_TP, MIXED, MIXED_V1, PIPE, PROBLEMS,
                     SCALING, T_COMMS, T_FSDP, T_MATH, T_TP, TP)
from .data_parallel import (dcn_min_batch, dcn_min_batch_per_slice, dp_max_devices, dp_max_params, dp_min_batch,
                            dp_min_batch_per_device, fsdp_max_devices, fsdp_min_batch, fsdp_min_batch_per_device)
from .gpu import (gpu_dp_min_batch, gpu_dp_min_batch_per_gpu, gpu_dp_min_batch_per_gpu_few_nodes,
                  gpu_dp_min_batch_per_gpu_sharp,
                  gpu_dp_min_batch_per_gpu_model_sharded, gpu_dp_min_batch_per_gpu_moe, gpu_ep_min_f_few_nodes,
                  gpu_ep_min_f_limit, gpu_ep_min_f_many_nodes, gpu_ep_t_comms, gpu_ep_t_math, gpu_tp_max_degree,
                  gpu_tp_max_degree_two_nodes)
from .memory import memory_per_device, min_chips_memory
from .pipeline import pipeline_t_comms, pipeline_t_comms_hop
from .run_time import batch_per_device, chip_hours, run_cost, step_time, training_time
from .schemes import PHASES, SCHEMES, Comm, Phase, Scheme, t_comms, t_math, t_step
from .tensor_parallel import (fsdp_tp_max_chips, fsdp_tp_min_batch, fsdp_tp_min_batch_per_chip,
                              fsdp_tp_min_batch_per_chip_sum_policy, fsdp_tp_min_batch_sum_policy, fsdp_tp_x_opt,
                              fsdp_tp_x_opt_sum_policy, fsdp_tp_y_opt, tp_max_degree, tp_min_f)

__all__ = [
    "SCHEMES", "PHASES", "Scheme", "Phase", "Comm", "t_math", "t_comms", "t_step",
    "dp_min_batch", "dp_min_batch_per_device", "dp_max_devices", "dp_max_params",
    "fsdp_min_batch", "fsdp_min_batch_per_device", "fsdp_max_devices",
    "tp_max_degree", "tp_min_f",
    "fsdp_tp_x_opt", "fsdp_tp_y_opt", "fsdp_tp_min_batch", "fsdp_tp_min_batch_per_chip", "fsdp_tp_max_chips",
    "fsdp_tp_x_opt_sum_policy", "fsdp_tp_min_batch_sum_policy", "fsdp_tp_min_batch_per_chip_sum_policy",
    "dcn_min_batch", "dcn_min_batch_per_slice",
    "pipeline_t_comms_hop", "pipeline_t_comms",
    "gpu_dp_min_batch_per_gpu", "gpu_dp_min_batch", "gpu_dp_min_batch_per_gpu_moe",
    "gpu_dp_min_batch_per_gpu_few_nodes", "gpu_dp_min_batch_per_gpu_model_sharded", "gpu_dp_min_batch_per_gpu_sharp",
    "gpu_tp_max_degree", "gpu_tp_max_degree_two_nodes",
    "gpu_ep_t_math", "gpu_ep_t_comms", "gpu_ep_min_f_few_nodes", "gpu_ep_min_f_many_nodes", "gpu_ep_min_f_limit",
    "step_time", "training_time", "chip_hours", "run_cost", "batch_per_device", "memory_per_device",
    "min_chips_memory",
]
