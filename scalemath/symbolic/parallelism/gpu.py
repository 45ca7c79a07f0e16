"""The GPU chapter's LLM rooflines (gpus.md, 'Rooflines for LLM Scaling on GPUs'): data, tensor and expert
parallelism inside an NVLink node and across the fat tree.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, crossover
from .common import (GPU_DP, GPU_EP, GPU_EX, GPU_TP, T_COMMS, T_MATH, B, C, D, D_node, E, F, M_nodes, W_gpu, W_node,
                     X, Y, Z, b_w, b_x, k, n_dev)
from .schemes import _per_device


# -- GPUs: data parallelism --------------------------------------------------------------------------------

def _gpu_dp_sides(bandwidth: sp.Expr, devices: sp.Expr, *, experts: bool = False) -> tuple[sp.Expr, sp.Expr]:
    if experts:
        return (8 * k * B * D * F / (devices * C), 4 * b_w * E * D * F / bandwidth)
    return 8 * B * D * F / (devices * C), 4 * b_w * D * F / bandwidth


def _gpu_dp(bandwidth: sp.Expr, title: str, why: str, *, devices: sp.Expr = X, per_device: bool = True,
            experts: bool = False, lead: tuple[Step, ...] = ()) -> Derivation:
    math, comms = _gpu_dp_sides(bandwidth, devices, experts=experts)
    d = crossover(math, comms, B, title=title, source=GPU_DP, lhs_label=rf"{T_MATH}^{{\mathrm{{bwd}}}}",
                  rhs_label=rf"{T_COMMS}^{{\mathrm{{bwd}}}}", side_unit="s", label="B^*", unit="token",
                  why="backward compute equals the gradient reduction (ReduceScatter + AllGather, no SHARP)", lead=lead)
    if not per_device:
        return d
    return _per_device(d, devices, "B^*/N", title, why)


@functools.cache
def gpu_dp_min_batch_per_gpu(level: str) -> Derivation:
    """Per-GPU batch for DP/ZeRO: inside one NVLink node (``level="node"``) or across the fat tree."""
    bandwidth = {"node": W_gpu, "cross_node": W_node}[level]
    where = "inside an NVLink node" if level == "node" else "across nodes of the fat tree"
    return _gpu_dp(bandwidth, f"GPU data parallelism {where}: smallest per-GPU batch",
                   f"C/{'W_gpu' if level == 'node' else 'W_node'} with bf16 gradients")


@functools.cache
def gpu_dp_min_batch_per_gpu_sharp(level: str) -> Derivation:
    """Per-GPU batch for DP/ZeRO when the switches reduce (SHARP): the AllReduce moves each byte once each way."""
    bandwidth = {"node": W_gpu, "cross_node": W_node}[level]
    where = "inside an NVLink node" if level == "node" else "across nodes of the fat tree"
    title = f"GPU data parallelism with in-network reduction (SHARP) {where}: smallest per-GPU batch"
    math, comms = 8 * B * D * F / (X * C), 2 * b_w * D * F / bandwidth
    d = crossover(math, comms, B, title=title, source=GPU_DP, lhs_label=rf"{T_MATH}^{{\mathrm{{bwd}}}}",
                  rhs_label=rf"{T_COMMS}^{{\mathrm{{bwd}}}}", side_unit="s", label="B^*", unit="token",
                  why="backward compute equals the gradient AllReduce done in the switches: each GPU sends and "
                      "receives the gradient bytes once, half of a ring's ReduceScatter + AllGather")
    return _per_device(d, X, "B^*/N", title, "C/(2W) with bf16 gradients: in theory half the threshold without "
                       "SHARP (the book measures about 30 % less time, not 50 %)")


@functools.cache
def gpu_dp_min_batch() -> Derivation:
    return _gpu_dp(W_node, "GPU data parallelism across nodes: smallest global batch", "", per_device=False)


@functools.cache
def gpu_dp_min_batch_per_gpu_moe() -> Derivation:
    return _gpu_dp(W_node, "GPU data parallelism of a mixture of experts across nodes: smallest per-GPU batch",
                   "(E/k)·C/W_node: every expert's weights are reduced but each token uses only k of them",
                   experts=True)


@functools.cache
def gpu_dp_min_batch_per_gpu_few_nodes() -> Derivation:
    gpus = Step("N", D_node * M_nodes, "M nodes of D_node GPUs", "chip")
    math = 8 * B * D * F / (gpus.expr * C)
    comms = 4 * b_w * D * F * (M_nodes - 1) / (M_nodes * W_node)
    d = crossover(math, comms, B, title="GPU data parallelism over a few nodes: smallest global batch", source=GPU_DP,
                  lhs_label=rf"{T_MATH}^{{\mathrm{{bwd}}}}", rhs_label=rf"{T_COMMS}^{{\mathrm{{bwd}}}}",
                  side_unit="s", label="B^*", unit="token",
                  why="a ring over M nodes sends (M - 1)/M of the bytes through each node's egress", lead=(gpus,))
    return _per_device(d, gpus.expr, "B^*/N", "GPU data parallelism over a few nodes: smallest per-GPU batch",
                       "C/W_node·(M - 1)/M: two-way DP halves the threshold")


@functools.cache
def gpu_dp_min_batch_per_gpu_model_sharded() -> Derivation:
    nodes = Step(r"\mathrm{nodes}_Y", sp.Max(D_node, Y) / D_node,
                 "nodes one model replica spans (at least one): Y GPUs of model parallelism", "node")
    math = 8 * B * D * F / (n_dev * C)
    comms = 4 * b_w * D * F / (nodes.expr * W_node)
    d = crossover(math, comms, B, title="GPU data parallelism outside model parallelism: smallest global batch",
                  source=GPU_EX, lhs_label=rf"{T_MATH}^{{\mathrm{{bwd}}}}", rhs_label=rf"{T_COMMS}^{{\mathrm{{bwd}}}}",
                  side_unit="s", label="B^*", unit="token", lead=(nodes,),
                  why="each node holds 1/nodes_Y of the gradients, so the reduction leaves through that many "
                      "nodes' egress at once (the GPUs of a node reduce with other nodes, not each other)")
    return _per_device(d, n_dev, r"B^*/n_{\mathrm{dev}}",
                       "GPU data parallelism outside Y-way model parallelism: smallest per-GPU batch",
                       "C/W_node divided by the nodes a model replica spans")


# -- GPUs: tensor parallelism ---------------------------------------------------------------------------------

def _gpu_tp_sides(comms_factor: sp.Expr, bandwidth: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    return 4 * B * D * F / (Y * C), 2 * b_x * B * D * comms_factor / bandwidth


@functools.cache
def gpu_tp_max_degree(level: str) -> Derivation:
    """Largest compute-bound TP degree, inside a node (W_gpu) or across nodes (W_node)."""
    bandwidth = {"node": W_gpu, "cross_node": W_node}[level]
    math, comms = _gpu_tp_sides(sp.Integer(1), bandwidth)
    where = "inside a node" if level == "node" else "across nodes"
    return crossover(math, comms, Y, title=f"GPU tensor parallelism {where}: largest compute-bound degree",
                     source=GPU_TP, lhs_label=rf"{T_MATH}^{{\mathrm{{fwd}}}}",
                     rhs_label=rf"{T_COMMS}^{{\mathrm{{fwd}}}}", side_unit="s", label="Y^*", unit="chip",
                     why="an AllGather and a ReduceScatter of the activations per layer: Y < F·W/C with bf16")


@functools.cache
def gpu_tp_max_degree_two_nodes() -> Derivation:
    share = Step(r"f_{\mathrm{out}}", (Y - D_node) / Y, "the share of the activations that must leave the node", "1")
    math, comms = _gpu_tp_sides(share.expr, W_node)
    return crossover(math, comms, Y, title="GPU tensor parallelism spanning two nodes: largest compute-bound degree",
                     source=GPU_TP, lhs_label=rf"{T_MATH}^{{\mathrm{{fwd}}}}",
                     rhs_label=rf"{T_COMMS}^{{\mathrm{{fwd}}}}", side_unit="s", label="Y^*", unit="chip", lead=(share,),
                     why="F > (C/W_node)·(Y - D_node) with bf16: Y < D_node + F·W_node/C (for Y above D_node)")


# -- GPUs: expert parallelism ---------------------------------------------------------------------------------

def _ep_share() -> Step:
    return Step(r"f_{\mathrm{dest}}", sp.Min(D_node * k / Z, 1),
                "a token's k experts fall on at most k of the Z/D_node nodes", "1")


def _ep_terms(share: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    return (4 * B * k * D * F / (Z * C),
            2 * b_x * B * D * (Z - D_node) / (Z * W_node) * share)


@functools.cache
def gpu_ep_t_math() -> Derivation:
    return Derivation("GPU expert parallelism: forward compute time per MoE layer", (
        Step(r"\mathrm{FLOPs}", 4 * B * k * D * F / Z, "each token runs k experts' two matmuls; Z GPUs share them",
             "FLOP"),
        Step(rf"{T_MATH}^{{\mathrm{{fwd}}}}", _ep_terms(1)[0], "FLOPs over the peak", "s"),
    ), GPU_EP)


@functools.cache
def gpu_ep_t_comms() -> Derivation:
    share = _ep_share()
    return Derivation("GPU expert parallelism: forward AllToAll time per MoE layer", (
        share,
        Step(rf"{T_COMMS}^{{\mathrm{{fwd}}}}", _ep_terms(share.expr)[1],
             "dispatch and combine AllToAlls of b_x·B·D bytes; (Z - D_node)/Z of them leave the node", "s"),
    ), GPU_EP)


def _ep_min_f(share: sp.Expr, title: str, why: str) -> Derivation:
    math, comms = _ep_terms(share)
    return crossover(math, comms, F, title=title, source=GPU_EP, lhs_label=rf"{T_MATH}^{{\mathrm{{fwd}}}}",
                     rhs_label=rf"{T_COMMS}^{{\mathrm{{fwd}}}}", side_unit="s", label="F^*", unit="element", why=why)


@functools.cache
def gpu_ep_min_f_few_nodes() -> Derivation:
    return _ep_min_f(sp.Integer(1), "GPU expert parallelism with k ≥ Z/D_node: smallest compute-bound MLP width",
                     "every node receives from every token: F > (C/W_node)·(Z - D_node)/k with bf16")


@functools.cache
def gpu_ep_min_f_many_nodes() -> Derivation:
    return _ep_min_f(D_node * k / Z, "GPU expert parallelism with k < Z/D_node: smallest compute-bound MLP width",
                     "only k of the nodes receive a token, so k cancels: "
                     "F > D_node·(C/W_node)·(Z - D_node)/Z with bf16")


@functools.cache
def gpu_ep_min_f_limit() -> Derivation:
    d = gpu_ep_min_f_many_nodes()
    return d.extend(Step(r"\lim_{Z\to\infty} F^*", sp.limit(d.expr, Z, sp.oo),
                         "wide expert parallelism: F > 8·C/W_node on 8-GPU nodes with bf16", "element"),
                    title="GPU expert parallelism over many nodes: the MLP width it needs")
