"""Collectives' quantities, in three chapters: AllGather, ReduceScatter, AllReduce and AllToAll on TPU rings
and tori (sharding.md, topic ``collectives``); shard_map's collectives under their ``jax.lax`` names and the
collective matmul (jax-stuff.md, topic ``jax``); the same collectives on GPUs, in an NVLink node, across nodes
and over a fat tree (gpus.md, topic ``gpu``).
"""

from __future__ import annotations

from ..symbolic import collectives as coll
from ..symbolic import jax_collective_matmuls as jcm
from ..symbolic import jax_collectives as jc
from ..symbolic.collectives import gpu_tree, tpu_ideas
from .registry import Quantity

__all__ = ["ENTRIES"]


#: In the registry's order.
ENTRIES: tuple[Quantity, ...] = (
    # collectives on TPU rings and tori (sharding.md)
    Quantity("collective.all_gather.time", coll.all_gather_time, "collectives"),
    Quantity("collective.all_gather.time_approx", coll.all_gather_time_approx, "collectives"),
    Quantity("collective.all_gather.time_multi_axis", coll.all_gather_time_multi_axis, "collectives"),
    Quantity("collective.all_gather.time_no_wraparound", coll.all_gather_time_no_wraparound, "collectives"),
    Quantity("collective.all_gather.time_unidirectional", coll.all_gather_time_unidirectional, "collectives"),
    Quantity("collective.all_gather.latency_aware", coll.all_gather_latency_aware, "collectives"),
    Quantity("collective.all_gather.latency_aware_xy", lambda: coll.all_gather_latency_aware_axes(2), "collectives"),
    Quantity("collective.all_gather.latency_aware_xyz", lambda: coll.all_gather_latency_aware_axes(3), "collectives"),
    Quantity("collective.all_gather.latency_aware_no_wraparound", coll.all_gather_latency_aware_no_wraparound,
             "collectives"),
    Quantity("collective.reduce_scatter.time", coll.reduce_scatter_time, "collectives"),
    Quantity("collective.reduce_scatter.time_approx", coll.reduce_scatter_time_approx, "collectives"),
    Quantity("collective.reduce_scatter.time_multi_axis", coll.reduce_scatter_time_multi_axis, "collectives"),
    Quantity("collective.reduce_scatter.time_no_wraparound", coll.reduce_scatter_time_no_wraparound, "collectives"),
    Quantity("collective.reduce_scatter.time_unidirectional", coll.reduce_scatter_time_unidirectional, "collectives"),
    Quantity("collective.all_reduce.time", coll.all_reduce_time, "collectives"),
    Quantity("collective.all_reduce.time_approx", coll.all_reduce_time_approx, "collectives"),
    Quantity("collective.all_reduce.time_multi_axis", coll.all_reduce_time_multi_axis, "collectives"),
    Quantity("collective.all_reduce.time_no_wraparound", coll.all_reduce_time_no_wraparound, "collectives"),
    Quantity("collective.all_reduce.time_unidirectional", coll.all_reduce_time_unidirectional, "collectives"),
    Quantity("collective.all_to_all.time", coll.all_to_all_time, "collectives"),
    Quantity("collective.all_to_all.time_approx", coll.all_to_all_time_approx, "collectives"),
    Quantity("collective.all_to_all.time_torus", coll.all_to_all_time_torus, "collectives"),
    Quantity("collective.all_to_all.time_unidirectional", coll.all_to_all_time_unidirectional, "collectives"),
    Quantity("collective.latency_threshold", coll.latency_threshold, "collectives"),
    Quantity("collective.all_gather.idle_axis_time", tpu_ideas.idle_axis_time, "collectives"),
    Quantity("collective.all_gather.idle_axis_speedup", tpu_ideas.idle_axis_speedup, "collectives"),
    Quantity("collective.all_gather.achieved_fraction", tpu_ideas.achieved_fraction, "collectives"),
    Quantity("collective.all_gather.size_for_fraction", tpu_ideas.size_for_fraction, "collectives"),
    Quantity("collective.all_gather.bidirectional_speedup", coll.all_gather_bidirectional_speedup, "collectives"),
    Quantity("collective.all_to_all.bidirectional_speedup", coll.all_to_all_bidirectional_speedup, "collectives"),
    # the JAX chapter (jax-stuff.md): shard_map's collectives under their jax.lax names, the collective matmul
    *(Quantity(f"jax.{name}.{form}", getattr(jc, f"{name}_{fn}"), "jax")
      for name in ("psum", "all_gather", "psum_scatter", "all_to_all")
      for form, fn in (("time", "time"), ("time_exact", "time_exact"))),
    Quantity("jax.ppermute.time", jc.ppermute_time, "jax"),
    Quantity("jax.ppermute.time_latency", jc.ppermute_time_latency, "jax"),
    Quantity("jax.collective_matmul.flops", jc.collective_matmul_flops, "jax"),
    Quantity("jax.collective_matmul.t_chunk", jc.collective_matmul_chunk_math, "jax"),
    Quantity("jax.collective_matmul.t_ppermute", jc.collective_matmul_chunk_comms, "jax"),
    Quantity("jax.collective_matmul.time", jc.collective_matmul_time, "jax"),
    Quantity("jax.collective_matmul.time_bidirectional", jc.collective_matmul_time_bidirectional, "jax"),
    Quantity("jax.collective_matmul.time_naive", jc.collective_matmul_time_naive, "jax"),
    Quantity("jax.collective_matmul.speedup", jc.collective_matmul_speedup, "jax"),
    Quantity("jax.collective_matmul.critical_f", jc.collective_matmul_critical_f, "jax"),
    Quantity("jax.collective_matmul.critical_f_bidirectional", jc.collective_matmul_critical_f_bidirectional, "jax"),
    # the chapter's Problems 3 and 4: the ReduceScatter and AllReduce collective matmuls and a whole block
    Quantity("jax.rs_collective_matmul.t_chunk", jcm.rs_collective_matmul_chunk_math, "jax"),
    Quantity("jax.rs_collective_matmul.t_ppermute", jcm.rs_collective_matmul_chunk_comms, "jax"),
    Quantity("jax.rs_collective_matmul.time", jcm.rs_collective_matmul_time, "jax"),
    Quantity("jax.rs_collective_matmul.time_bidirectional", jcm.rs_collective_matmul_time_bidirectional, "jax"),
    Quantity("jax.rs_collective_matmul.time_naive", jcm.rs_collective_matmul_time_naive, "jax"),
    Quantity("jax.rs_collective_matmul.critical_f", jcm.rs_collective_matmul_critical_f, "jax"),
    Quantity("jax.ar_collective_matmul.time", jcm.ar_collective_matmul_time, "jax"),
    Quantity("jax.ar_collective_matmul.time_naive", jcm.ar_collective_matmul_time_naive, "jax"),
    Quantity("jax.collective_block.time", jcm.block_collective_time, "jax"),
    Quantity("jax.collective_block.time_bidirectional", jcm.block_collective_time_bidirectional, "jax"),
    Quantity("jax.collective_block.time_naive", jcm.block_collective_time_naive, "jax"),
    Quantity("jax.collective_block.speedup", jcm.block_collective_speedup, "jax"),
    # collectives on GPUs: NVLink nodes and fat trees (gpus.md)
    Quantity("gpu.all_gather.time", coll.gpu_all_gather_time, "gpu"),
    Quantity("gpu.all_gather.time_approx", coll.gpu_all_gather_time_approx, "gpu"),
    Quantity("gpu.reduce_scatter.time", coll.gpu_reduce_scatter_time, "gpu"),
    Quantity("gpu.all_reduce.time", coll.gpu_all_reduce_time, "gpu"),
    Quantity("gpu.all_reduce.sharp_time", coll.gpu_all_reduce_sharp_time, "gpu"),
    Quantity("gpu.all_reduce.sharp_speedup", coll.gpu_sharp_speedup, "gpu"),
    Quantity("gpu.all_reduce.time_measured", coll.gpu_all_reduce_time_measured, "gpu"),
    Quantity("gpu.all_reduce.bus_bandwidth", coll.gpu_all_reduce_bus_bandwidth, "gpu"),
    Quantity("gpu.all_gather.bus_bandwidth", coll.gpu_all_gather_bus_bandwidth, "gpu"),
    Quantity("gpu.all_to_all.time", coll.gpu_all_to_all_time, "gpu"),
    Quantity("gpu.all_to_all.ragged_time", coll.gpu_ragged_all_to_all_time, "gpu"),
    Quantity("gpu.all_to_all.ragged_time_exact", coll.gpu_ragged_all_to_all_time_exact, "gpu"),
    Quantity("gpu.all_gather.cross_node_time", coll.gpu_all_gather_cross_node_time, "gpu"),
    Quantity("gpu.reduce_scatter.cross_node_time", coll.gpu_reduce_scatter_cross_node_time, "gpu"),
    Quantity("gpu.all_reduce.cross_node_time", coll.gpu_all_reduce_cross_node_time, "gpu"),
    Quantity("gpu.fat_tree.time", coll.gpu_fat_tree_time, "gpu"),
    Quantity("gpu.fat_tree.bandwidth", coll.gpu_fat_tree_bandwidth, "gpu"),
    Quantity("gpu.all_to_all.cross_node_time", coll.gpu_all_to_all_cross_node_time, "gpu"),
    Quantity("gpu.all_reduce.sharded_inner_time", coll.gpu_all_reduce_sharded_inner_time, "gpu"),
    Quantity("gpu.fat_tree.sharded_time", gpu_tree.gpu_sharded_reduction_levels, "gpu"),
    Quantity("gpu.all_reduce.tree_time", gpu_tree.gpu_all_reduce_tree_time, "gpu"),
    Quantity("gpu.all_reduce.ring_latency_time", gpu_tree.gpu_all_reduce_ring_latency_time, "gpu"),
    Quantity("gpu.sharp.bytes_received_per_gpu", gpu_tree.sharp_bytes_received_per_gpu, "gpu"),
)
