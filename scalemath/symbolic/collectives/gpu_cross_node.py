"""Collectives across GPU nodes (gpus.md, 'Cross-node collectives'): rings over a fat tree of nodes, its
levels and effective bandwidth, AllToAll between nodes, and the reduction of an array sharded inside nodes.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from .common import _OPS, CROSS, T_A2A, T_AG, T_AR, D_leaf, D_node, D_spine, M, V, W_gpu, W_node, W_su, Y, _sum


# -- GPUs across nodes -------------------------------------------------------------------------------

def _cross_node(op: str) -> Derivation:
    name, label = _OPS[op]
    inside = Step(r"T_{\mathrm{node}}", V / W_gpu, "every GPU still moves the bytes over NVLink", "s")
    outside = Step(r"T_{\mathrm{out}}", V / W_node,
                   "the full-bisection fat tree runs any ring over nodes at node egress speed", "s")
    return Derivation(f"{name} across nodes of a fat tree", (
        inside, outside, Step(label, sp.Max(inside.expr, outside.expr), "the slower level sets the time", "s"),
    ), CROSS)


@functools.cache
def gpu_all_gather_cross_node_time() -> Derivation:
    return _cross_node("ag")


@functools.cache
def gpu_reduce_scatter_cross_node_time() -> Derivation:
    return _cross_node("rs")


@functools.cache
def gpu_all_reduce_cross_node_time() -> Derivation:
    return _sum(gpu_reduce_scatter_cross_node_time(), gpu_all_gather_cross_node_time(),
                "AllReduce across nodes of a fat tree (no SHARP)", CROSS)


def _levels() -> tuple[tuple[str, sp.Symbol, sp.Symbol, str], ...]:
    return (("node", D_node, W_gpu, "GPUs in a node, each with W_gpu of NVLink egress"),
            ("leaf", D_leaf, W_node, "nodes under a leaf group, each with W_node of scale-out egress"),
            ("spine", D_spine, W_su, "leaf groups under the spine, each with W_su of uplink"))


@functools.cache
def gpu_fat_tree_time() -> Derivation:
    steps = tuple(Step(rf"T_{{\mathrm{{{level}}}}}", V * (d - 1) / (d * w),
                       f"a ring over the {why}: (D - 1)/D of the bytes through each child's link", "s")
                  for level, d, w, why in _levels())
    return Derivation("AllGather or ReduceScatter over a 3-level fat tree (node, leaf, spine)", steps + (
        Step(T_AG, sp.Max(*(s.expr for s in steps)), "the levels run pipelined; the slowest sets the time", "s"),
    ), CROSS)


@functools.cache
def gpu_fat_tree_bandwidth() -> Derivation:
    steps = tuple(Step(rf"W_{{\mathrm{{{level}}}}}^{{\mathrm{{eff}}}}", d * w / (d - 1),
                       f"bytes per second a ring over the {why} sustains (each degree must be at least 2)", "byte/s")
                  for level, d, w, why in _levels())
    return Derivation("effective AllGather/ReduceScatter bandwidth of a 3-level fat tree", steps + (
        Step(r"W_{\mathrm{eff}}", sp.Min(*(s.expr for s in steps)), "the narrowest level limits the collective",
             "byte/s"),
    ), CROSS)


@functools.cache
def gpu_all_to_all_cross_node_time() -> Derivation:
    return Derivation("AllToAll across nodes", (
        Step(r"\mathrm{chunk}", V / M**2, "each node holds V/M and sends a V/M^2 piece to every other node", "byte"),
        Step(T_A2A, V * (M - 1) / (M**2 * W_node), "M - 1 pieces leave each node through its scale-out egress", "s"),
    ), CROSS)


@functools.cache
def gpu_all_reduce_sharded_inner_time() -> Derivation:
    inside = Step(r"T_{\mathrm{node}}", V / (W_gpu * sp.Min(Y, D_node)),
                  "the Y shards reduce independently; inside a node they split the NVLink traffic", "s")
    outside = Step(r"T_{\mathrm{out}}", V * D_node / (W_node * sp.Max(D_node, Y)),
                   "above the node only Y > D_node helps, by the number of nodes one shard group spans", "s")
    return Derivation("reduction over X of an array sharded over an inner axis Y (the book's form)", (
        inside, outside, Step(T_AR, sp.Max(inside.expr, outside.expr), "the slower level sets the time", "s"),
    ), CROSS, note="As the book writes it; a ring AllReduce without SHARP moves twice these bytes.")
