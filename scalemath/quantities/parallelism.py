"""Parallelism for training (training.md, applied-training.md, gpus.md 'Rooflines for LLM Scaling on GPUs'):
each scheme's per-layer compute and communication, forward and backward, and its step; the batch and degree
bounds of data, fully sharded, tensor, pipeline and cross-pod parallelism, on TPUs and on GPUs (expert
parallelism too); memory per device; and one whole training configuration, as ``scalemath plan`` searches
them. Topic ``parallelism``.
"""

from __future__ import annotations

from typing import Callable

from ..symbolic import parallelism as par
from ..symbolic.parallelism import mesh_round, offload, sequence_cap
from ..symbolic import training_config as tcfg
from ..symbolic import training_run as trun
from ..symbolic.derivation import Derivation
from .registry import Quantity

__all__ = ["ENTRIES"]

TOPIC = "parallelism"


def _q(name: str, build: Callable[..., Derivation], *, level: bool = False,
       conventions: tuple[str, ...] = ()) -> Quantity:
    return Quantity(name, build, TOPIC, level, conventions)


def _layer_costs() -> list[Quantity]:
    """Per-layer compute and communication of each parallelism scheme, forward and backward, and per step."""
    out = []
    for name, key, tail in (("dp", "dp", ""), ("fsdp", "fsdp", ""), ("tp", "tp", ""), ("fsdp_tp", "fsdp_tp", ""),
                            ("fsdp_tp", "fsdp_tp_sum", "_sum_policy"), ("dcn", "dcn", "")):
        scheme = par.SCHEMES[key]
        for phase in par.PHASES:
            ph = getattr(scheme, phase)
            if ph is None:
                continue
            if not tail:
                out.append(_q(f"parallel.{name}.t_math_{phase}", (lambda k=key, p=phase: par.t_math(k, p))))
            if ph.comms:
                out.append(_q(f"parallel.{name}.t_comms_{phase}{tail}", (lambda k=key, p=phase: par.t_comms(k, p))))
        if scheme.fwd is not None and scheme.bwd is not None:
            out.append(_q(f"parallel.{name}.t_step{tail}", (lambda k=key: par.t_step(k))))
    return out


#: In the registry's order.
ENTRIES: tuple[Quantity, ...] = (
    *_layer_costs(),
    _q("parallel.dp.min_batch", par.dp_min_batch),
    _q("parallel.dp.min_batch_per_device", par.dp_min_batch_per_device),
    _q("parallel.dp.max_devices", par.dp_max_devices),
    _q("parallel.dp.max_params", par.dp_max_params),
    _q("parallel.fsdp.min_batch", par.fsdp_min_batch),
    _q("parallel.fsdp.min_batch_per_device", par.fsdp_min_batch_per_device),
    _q("parallel.fsdp.max_devices", par.fsdp_max_devices),
    _q("parallel.seq_dp.max_chips", sequence_cap.sequence_dp_max_chips),
    _q("parallel.seq_dp.usable_fraction", sequence_cap.sequence_dp_usable_fraction),
    _q("parallel.tp.max_degree", par.tp_max_degree),
    _q("parallel.tp.min_f", par.tp_min_f),
    _q("parallel.fsdp_tp.x_opt", par.fsdp_tp_x_opt),
    _q("parallel.fsdp_tp.y_opt", par.fsdp_tp_y_opt),
    _q("parallel.fsdp_tp.min_batch", par.fsdp_tp_min_batch),
    _q("parallel.fsdp_tp.min_batch_per_chip", par.fsdp_tp_min_batch_per_chip),
    _q("parallel.fsdp_tp.max_chips", par.fsdp_tp_max_chips),
    _q("parallel.fsdp_tp.x_mesh", mesh_round.fsdp_tp_x_mesh),
    _q("parallel.fsdp_tp.y_mesh", mesh_round.fsdp_tp_y_mesh),
    _q("parallel.fsdp_tp.mesh_chips", mesh_round.fsdp_tp_mesh_chips),
    _q("parallel.fsdp_tp.mesh_penalty", mesh_round.fsdp_tp_mesh_penalty),
    _q("parallel.fsdp_tp.x_opt_sum_policy", par.fsdp_tp_x_opt_sum_policy),
    _q("parallel.fsdp_tp.min_batch_sum_policy", par.fsdp_tp_min_batch_sum_policy),
    _q("parallel.fsdp_tp.min_batch_per_chip_sum_policy", par.fsdp_tp_min_batch_per_chip_sum_policy),
    _q("parallel.dcn.min_batch", par.dcn_min_batch),
    _q("parallel.dcn.min_batch_per_slice", par.dcn_min_batch_per_slice),
    _q("parallel.pipeline.t_comms_hop", par.pipeline_t_comms_hop, level=True),
    _q("parallel.pipeline.t_comms", par.pipeline_t_comms, level=True),
    _q("parallel.gpu.dp.min_batch_per_gpu_in_node", lambda: par.gpu_dp_min_batch_per_gpu("node")),
    _q("parallel.gpu.dp.min_batch_per_gpu", lambda: par.gpu_dp_min_batch_per_gpu("cross_node")),
    _q("parallel.gpu.dp.min_batch", par.gpu_dp_min_batch),
    _q("parallel.gpu.dp.min_batch_per_gpu_moe", par.gpu_dp_min_batch_per_gpu_moe),
    _q("parallel.gpu.dp.min_batch_per_gpu_few_nodes", par.gpu_dp_min_batch_per_gpu_few_nodes),
    _q("parallel.gpu.dp.min_batch_per_gpu_model_sharded", par.gpu_dp_min_batch_per_gpu_model_sharded),
    _q("parallel.gpu.dp.min_batch_per_gpu_sharp_in_node", lambda: par.gpu_dp_min_batch_per_gpu_sharp("node")),
    _q("parallel.gpu.dp.min_batch_per_gpu_sharp", lambda: par.gpu_dp_min_batch_per_gpu_sharp("cross_node")),
    _q("parallel.gpu.tp.max_degree_in_node", lambda: par.gpu_tp_max_degree("node")),
    _q("parallel.gpu.tp.max_degree", lambda: par.gpu_tp_max_degree("cross_node")),
    _q("parallel.gpu.tp.max_degree_two_nodes", par.gpu_tp_max_degree_two_nodes),
    _q("parallel.gpu.ep.t_math", par.gpu_ep_t_math),
    _q("parallel.gpu.ep.t_comms", par.gpu_ep_t_comms),
    _q("parallel.gpu.ep.min_f_few_nodes", par.gpu_ep_min_f_few_nodes),
    _q("parallel.gpu.ep.min_f_many_nodes", par.gpu_ep_min_f_many_nodes),
    _q("parallel.gpu.ep.min_f_limit", par.gpu_ep_min_f_limit),
    _q("parallel.step_time", par.step_time, conventions=("attention", "recompute", "utilisation")),
    _q("parallel.training_time", par.training_time, conventions=("attention", "recompute", "utilisation")),
    _q("parallel.chip_hours", par.chip_hours),
    _q("parallel.run_cost", par.run_cost),
    _q("parallel.batch_per_device", par.batch_per_device),
    *(Quantity(f"parallel.memory_per_device.{key}", (lambda key=key, **c: par.memory_per_device(key, **c)), TOPIC,
               conventions=("optimizer", "zero") if key in ("dp", "fsdp", "fsdp_tp") else ("optimizer",))
      for key in ("dp", "fsdp", "tp", "fsdp_tp", "pipeline")),
    Quantity("parallel.min_chips_memory", par.min_chips_memory, TOPIC, conventions=("optimizer",)),
    # one whole training configuration, as scalemath plan searches them
    Quantity("parallel.config.memory_per_device", tcfg.memory_per_device, TOPIC, conventions=("optimizer",)),
    _q("parallel.config.step_time", tcfg.step_time),
    _q("parallel.config.training_time", tcfg.training_time),
    # the same, priced as runs are measured (achievable rates, exposed collectives, schedules, context parallelism)
    Quantity("parallel.run.memory_per_device", trun.memory_per_device, TOPIC, conventions=("optimizer", "activations")),
    _q("parallel.run.step_time", trun.step_time),
    # host offload, the fourth memory saver
    _q("parallel.offload.transfer_time", offload.offload_transfer_time),
    _q("parallel.offload.hidden_bytes", offload.offload_hidden_bytes),
    _q("parallel.offload.hidden_fraction", offload.offload_hidden_fraction),
    _q("parallel.offload.exposed_time", offload.offload_exposed_time),
)
