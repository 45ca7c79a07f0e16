"""Collectives (book parts 3 and 12): AllGather, ReduceScatter, AllReduce and AllToAll, by where they run.

TPU costs are for rings and tori of ICI links (``W_ici`` is the bidirectional bandwidth of one axis, ``W_link``
one link in one direction); GPU costs are for an NVLink node behind switches (``W_gpu``) and a fat tree of nodes
(``W_node``). The package holds AllGather, ReduceScatter and AllReduce on a TPU axis (:mod:`.tpu_ring`), AllToAll
on a TPU ring or torus and the gain of a bidirectional ring (:mod:`.tpu_all_to_all`), collectives inside an
NVLink node with measured and bus bandwidths (:mod:`.gpu_node`) and across nodes (:mod:`.gpu_cross_node`); the
sections, the symbols (``V`` the book's bytes, ``N`` the devices) and the rule that every AllReduce is a
ReduceScatter plus an AllGather, so that AllReduce = ReduceScatter + AllGather holds by construction, are in
:mod:`.common`.
"""

from __future__ import annotations

from .common import (ALLTOALL, APPENDIX_B, CASE2, CASE3, CROSS, INTRA, NO_WRAP, QUIZ4, RING_EXACT, SUMMARY, T_A2A,
                     T_AG, T_AR, T_RS, D_leaf, D_node, D_spine, M, N, N_axes, V, W_gpu, W_ici, W_link, W_node, W_su,
                     X, Y, Z, eta, k_top, t_hop, t_meas)
from .gpu_cross_node import (gpu_all_gather_cross_node_time, gpu_all_reduce_cross_node_time,
                             gpu_all_reduce_sharded_inner_time, gpu_all_to_all_cross_node_time,
                             gpu_fat_tree_bandwidth, gpu_fat_tree_time, gpu_reduce_scatter_cross_node_time)
from .gpu_node import (gpu_all_gather_bus_bandwidth, gpu_all_gather_time, gpu_all_gather_time_approx,
                       gpu_all_reduce_bus_bandwidth, gpu_all_reduce_sharp_time, gpu_all_reduce_time,
                       gpu_all_reduce_time_measured, gpu_all_to_all_time, gpu_ragged_all_to_all_time,
                       gpu_ragged_all_to_all_time_exact, gpu_reduce_scatter_time, gpu_sharp_speedup)
from .tpu_all_to_all import (all_gather_bidirectional_speedup, all_to_all_bidirectional_speedup, all_to_all_time,
                             all_to_all_time_approx, all_to_all_time_torus, all_to_all_time_unidirectional)
from .tpu_ring import (all_gather_latency_aware, all_gather_latency_aware_axes,
                       all_gather_latency_aware_no_wraparound, all_gather_time, all_gather_time_approx,
                       all_gather_time_multi_axis, all_gather_time_no_wraparound, all_gather_time_unidirectional,
                       all_reduce_time, all_reduce_time_approx, all_reduce_time_multi_axis,
                       all_reduce_time_no_wraparound, all_reduce_time_unidirectional, latency_threshold,
                       reduce_scatter_time, reduce_scatter_time_approx, reduce_scatter_time_multi_axis,
                       reduce_scatter_time_no_wraparound, reduce_scatter_time_unidirectional)

__all__ = [
    # TPU rings and tori
    "all_gather_time", "all_gather_time_approx", "all_gather_time_multi_axis", "all_gather_time_no_wraparound",
    "all_gather_time_unidirectional", "all_gather_latency_aware", "all_gather_latency_aware_axes",
    "all_gather_latency_aware_no_wraparound",
    "reduce_scatter_time", "reduce_scatter_time_approx", "reduce_scatter_time_multi_axis",
    "reduce_scatter_time_no_wraparound", "reduce_scatter_time_unidirectional",
    "all_reduce_time", "all_reduce_time_approx", "all_reduce_time_multi_axis", "all_reduce_time_no_wraparound",
    "all_reduce_time_unidirectional",
    "all_to_all_time", "all_to_all_time_approx", "all_to_all_time_torus", "all_to_all_time_unidirectional",
    "latency_threshold", "all_gather_bidirectional_speedup", "all_to_all_bidirectional_speedup",
    # GPUs
    "gpu_all_gather_time", "gpu_all_gather_time_approx", "gpu_reduce_scatter_time", "gpu_all_reduce_time",
    "gpu_all_reduce_sharp_time", "gpu_sharp_speedup", "gpu_all_to_all_time", "gpu_ragged_all_to_all_time",
    "gpu_ragged_all_to_all_time_exact",
    "gpu_all_gather_cross_node_time", "gpu_reduce_scatter_cross_node_time", "gpu_all_reduce_cross_node_time",
    "gpu_fat_tree_time", "gpu_fat_tree_bandwidth", "gpu_all_to_all_cross_node_time",
    "gpu_all_reduce_sharded_inner_time", "gpu_all_reduce_time_measured",
    "gpu_all_reduce_bus_bandwidth", "gpu_all_gather_bus_bandwidth",
]
