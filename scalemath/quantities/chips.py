"""Inside a chip and around it (gpus.md, tpus.md): a GPU's SMs, registers, shared memory, Tensor and CUDA
cores and the ratios between its levels; the NVLink node, the scale-out fat tree and SHARP (topic ``gpu``);
the TPU's vector unit, its ICI egress, a slice's HBM bandwidth and the ratios between its levels (topic
``tpu``). Their symbols are bound from the chip's catalog fields and switches by
:data:`~scalemath.quantities.binders.HARDWARE_BINDERS`; a missing field is an error naming the chip and the
field.
"""

from __future__ import annotations

from ..symbolic import chip_ideas as ideas
from ..symbolic import chip_internals as ci
from ..symbolic import topology as topo
from ..symbolic import tpu_core as core
from .registry import Quantity

__all__ = ["ENTRIES"]


#: In the registry's order: the GPU's, then the TPU's.
ENTRIES: tuple[Quantity, ...] = (
    Quantity("gpu.sm.cuda_cores", ci.sm_cuda_cores, "gpu"),
    Quantity("gpu.cuda_cores", ci.cuda_cores, "gpu"),
    Quantity("gpu.warp_schedulers", ci.warp_schedulers, "gpu"),
    Quantity("gpu.tensor_cores", ci.tensor_cores, "gpu"),
    Quantity("gpu.sm.register_bytes", ci.sm_register_bytes, "gpu"),
    Quantity("gpu.register_bytes", ci.register_bytes, "gpu"),
    Quantity("gpu.smem_bytes", ci.smem_bytes, "gpu"),
    Quantity("gpu.onchip_bytes", ci.onchip_bytes, "gpu"),
    Quantity("gpu.sm.l2_bytes", ci.sm_l2_bytes, "gpu"),
    Quantity("gpu.sm.resident_warps", ci.resident_warps, "gpu"),
    Quantity("gpu.sm.tensor_flops_per_s", ci.sm_tensor_flops, "gpu"),
    Quantity("gpu.tensor_core.flops_per_cycle", ci.tensor_core_flops_per_cycle, "gpu"),
    Quantity("gpu.tensor_core.implied_clock", ci.tensor_core_implied_clock, "gpu"),
    Quantity("gpu.vector.flops_per_s", ci.vector_flops, "gpu"),
    Quantity("gpu.vector.flops_per_s_boost", lambda: ci.vector_flops("boost"), "gpu"),
    Quantity("gpu.vector.fma_flops_per_s", lambda: ci.vector_flops("boost", fma=True), "gpu"),
    Quantity("gpu.vector.fma_flops_per_s_base", lambda: ci.vector_flops("base", fma=True), "gpu"),
    Quantity("gpu.vector.implied_clock", ci.vector_implied_clock, "gpu"),
    Quantity("gpu.vector.tensor_ratio", ci.tensor_to_vector_ratio, "gpu"),
    Quantity("gpu.vector.tensor_ratio_no_fma", ci.tensor_to_vector_ratio_no_fma, "gpu"),
    Quantity("gpu.vector.hbm_intensity_no_fma", ci.vector_critical_intensity_no_fma, "gpu"),
    *(Quantity(f"gpu.ratio.{r}", (lambda r=r: ci.bandwidth_ratio(r)), "gpu")
      for r in ("l2_to_hbm", "hbm_to_nvlink", "nvlink_to_nic")),
    # the NVLink node
    Quantity("gpu.nvlink.egress", topo.nvlink_egress, "gpu"),
    Quantity("gpu.node.gpu_links", topo.node_gpu_links, "gpu"),
    Quantity("gpu.node.switch_ports", topo.node_switch_ports, "gpu"),
    Quantity("gpu.node.switch_capacity", topo.node_switch_capacity, "gpu"),
    Quantity("gpu.node.gpu_capacity", topo.node_gpu_capacity, "gpu"),
    Quantity("gpu.node.capacity", topo.node_capacity, "gpu"),
    Quantity("gpu.node.bisection", topo.node_bisection, "gpu"),
    Quantity("gpu.node.egress", topo.node_egress, "gpu"),
    # the scale-out fat tree
    Quantity("gpu.cluster.nodes", topo.cluster_nodes, "gpu"),
    Quantity("cluster.racks", topo.cluster_racks, "gpu"),
    Quantity("gpu.su.gpus", topo.su_gpus, "gpu"),
    Quantity("gpu.su.leaf_switches", topo.su_leaf_switches, "gpu"),
    Quantity("gpu.su.node_capacity", topo.su_node_capacity, "gpu"),
    Quantity("gpu.su.leaf_capacity", topo.su_leaf_capacity, "gpu"),
    Quantity("gpu.su.uplink", topo.su_uplink, "gpu"),
    Quantity("gpu.cluster.units", topo.scalable_units, "gpu"),
    Quantity("gpu.cluster.leaf_switches", topo.leaf_switches, "gpu"),
    Quantity("gpu.cluster.spine_switches", topo.spine_switches, "gpu"),
    Quantity("gpu.cluster.cables_per_leaf_spine", topo.cables_per_leaf_spine, "gpu"),
    Quantity("gpu.cluster.switches", topo.switches_total, "gpu"),
    Quantity("gpu.cluster.max_gpus_two_level", topo.max_gpus_two_level, "gpu"),
    Quantity("gpu.cluster.spine_switches_three_level", topo.three_level_spine_switches, "gpu"),
    Quantity("gpu.cluster.core_switches_three_level", topo.three_level_core_switches, "gpu"),
    Quantity("gpu.switch.capacity", topo.switch_capacity, "gpu"),
    Quantity("gpu.cluster.spine_capacity", topo.spine_capacity, "gpu"),
    Quantity("gpu.cluster.spine_capacity_per_node", topo.spine_capacity_per_node, "gpu"),
    Quantity("gpu.dp.effective_bandwidth", topo.dp_effective_bandwidth, "gpu"),
    Quantity("gpu.sharp.bytes_per_gpu", topo.sharp_bytes_per_gpu, "gpu"),
    Quantity("gpu.sharp.switch_bytes", topo.sharp_switch_bytes, "gpu"),
    Quantity("gpu.all_gather.node_switch_bytes", topo.all_gather_node_switch_bytes, "gpu"),
    Quantity("gpu.all_gather.node_switch_time", topo.all_gather_node_switch_time, "gpu"),
    Quantity("gpu.all_gather.top_switch_bytes", topo.all_gather_top_switch_bytes, "gpu"),
    Quantity("gpu.all_gather.top_switch_time", topo.all_gather_top_switch_time, "gpu"),
    Quantity("gpu.sharp.sharded_switch_bytes", topo.sharp_sharded_switch_bytes, "gpu"),
    Quantity("gpu.sharp.sharded_time", topo.sharp_sharded_time, "gpu"),
    Quantity("gpu.sharp.spine_time", ideas.sharp_spine_time, "gpu"),
    Quantity("gpu.sharp.spine_ring_time", ideas.sharp_spine_ring_time, "gpu"),
    Quantity("gpu.sharp.spine_speedup", ideas.sharp_spine_speedup, "gpu"),
    # SIMT: a warp that diverges; a small elementwise op's SMs
    Quantity("gpu.warp.divergent_cycles", ideas.divergent_cycles, "gpu"),
    Quantity("gpu.warp.divergence_efficiency", ideas.divergence_efficiency, "gpu"),
    Quantity("gpu.warp.divergence_slowdown", ideas.divergence_slowdown, "gpu"),
    Quantity("gpu.elementwise.warps", ideas.elementwise_warps, "gpu"),
    Quantity("gpu.elementwise.sms_used", ideas.elementwise_sms, "gpu"),
    Quantity("gpu.elementwise.compute_slowdown", ideas.elementwise_compute_slowdown, "gpu"),
    # the TPU's vector unit, ICI and levels
    Quantity("tpu.vpu.alus_per_core", ci.vpu_alus_per_core, "tpu"),
    Quantity("tpu.vpu.alus", ci.vpu_alus, "tpu"),
    Quantity("tpu.vpu.flops_per_s_per_core", ci.vpu_flops_per_core, "tpu"),
    Quantity("tpu.vpu.flops_per_s", ci.vpu_flops, "tpu"),
    Quantity("tpu.vpu.mxu_ratio", ci.vpu_mxu_ratio, "tpu"),
    Quantity("tpu.vpu.hbm_intensity", ci.vpu_hbm_intensity, "tpu"),
    Quantity("tpu.vpu.sublane_reduce_ops", core.vpu_sublane_reduce_ops, "tpu"),
    Quantity("tpu.vpu.lane_reduce_ops", core.vpu_lane_reduce_ops, "tpu"),
    Quantity("tpu.mxu.padded_flops", core.mxu_padded_flops, "tpu"),
    Quantity("tpu.mxu.wasted_flops", core.mxu_wasted_flops, "tpu"),
    Quantity("tpu.mxu.padding_efficiency", core.mxu_padding_efficiency, "tpu"),
    Quantity("tpu.systolic.cycles", core.systolic_cycles, "tpu"),
    Quantity("tpu.systolic.fill_efficiency", core.systolic_fill, "tpu"),
    Quantity("tpu.ici.egress", ci.ici_egress, "tpu"),
    Quantity("pod.hbm_bytes_per_s", ci.slice_hbm_bandwidth, "tpu"),
    # prefetching a layer's weights into VMEM
    Quantity("tpu.vmem.layers_held", ideas.vmem_layers_held, "tpu"),
    Quantity("tpu.vmem.prefetch_hidden_fraction", ideas.vmem_prefetch_hidden_fraction, "tpu"),
    Quantity("tpu.vmem.prefetch_exposed_time", ideas.vmem_prefetch_exposed_time, "tpu"),
    # the scalar core's DMA requests
    Quantity("tpu.scalar.dma_requests_per_s", ideas.dma_requests_per_s, "tpu"),
    Quantity("tpu.scalar.min_dma_bytes", ideas.min_dma_bytes, "tpu"),
    # traffic in proportion to each channel's speed
    Quantity("tpu.balance.dcn_share", ideas.balanced_dcn_share, "tpu"),
    Quantity("tpu.balance.split_time", ideas.split_time, "tpu"),
    Quantity("tpu.balance.balanced_time", ideas.balanced_time, "tpu"),
    *(Quantity(f"tpu.ratio.{r}", (lambda r=r: ci.bandwidth_ratio(r)), "tpu")
      for r in ("vmem_to_hbm", "hbm_to_ici", "hbm_to_ici_egress", "ici_to_dcn", "ici_to_pcie",
                "hbm_to_pcie")),
)
