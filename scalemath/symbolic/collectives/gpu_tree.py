"""Two GPU collective forms the book states in words (gpus.md): the AllReduce done as a tree in pairs, which
pays log2 N latencies where a ring pays N - 1 ("same bandwidth cost"), and the general multi-level form of a
reduction over a fat tree when the array is also sharded over an inner axis Y (the book's F27, written for
three levels: node, leaf group, spine). Each level's link is its child's own (a GPU's W_gpu, a node's W_node,
a leaf group's W_su); per GPU below it that is the book's W_link i.

>>> from ..symbols import sym
>>> gpu_all_reduce_tree_time().at({sym("N"): 8, sym("V"): 0, sym("a_hop"): 1, sym("W_gpu"): 1}).value
Traceback (most recent call last):
...
scalemath.errors.BadValueError: V = 0 must be positive (sizes, rates and counts are > 0)
>>> gpu_all_reduce_tree_time().steps[0].expr
2*ceiling(log(N)/log(2))
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import CROSS, INTRA, QUIZ4, T_AR, D_leaf, D_node, D_spine, N, V, W_gpu, W_node, W_su, Y

__all__ = ["gpu_all_reduce_tree_time", "gpu_all_reduce_ring_latency_time", "gpu_sharded_reduction_levels",
           "sharp_bytes_received_per_gpu"]

a_hop = sym("a_hop")


def _bandwidth() -> Step:
    return Step(r"T_{\mathrm{bw}}", 2 * V * (N - 1) / (N * W_gpu),
                "the bytes of a ring AllReduce: a ReduceScatter and an AllGather, (N-1)/N of V each, at W_gpu", "s")


@functools.cache
def gpu_all_reduce_tree_time() -> Derivation:
    hops = Step(r"n_{\mathrm{hops}}", 2 * sp.ceiling(sp.log(N, 2)),
                "reduce up a binary tree in pairs (log2 N rounds), then send the sum back down (log2 N more)", "1")
    bw = _bandwidth()
    return Derivation("AllReduce as a tree in pairs: latency and bandwidth", (hops, bw, Step(
        T_AR, hops.expr * a_hop + bw.expr,
        "log2 N latencies each way instead of the ring's N - 1, the same bytes (the data pipelined in chunks)", "s"),
    ), INTRA)


@functools.cache
def gpu_all_reduce_ring_latency_time() -> Derivation:
    hops = Step(r"n_{\mathrm{hops}}", 2 * (N - 1), "a ring ReduceScatter then a ring AllGather: N - 1 sends each",
                "1")
    bw = _bandwidth()
    return Derivation("AllReduce as a ring: latency and bandwidth", (hops, bw, Step(
        T_AR, hops.expr * a_hop + bw.expr, "each send pays the fixed latency; the bytes are the ring's", "s"),
    ), INTRA)


@functools.cache
def gpu_sharded_reduction_levels() -> Derivation:
    """AllGather or ReduceScatter over a 3-level fat tree of an array sharded Y ways over an inner axis."""
    levels = (("node", D_node, W_gpu, sp.Integer(1), "GPUs in a node, each with W_gpu of NVLink egress"),
              ("leaf", D_leaf, W_node, D_node, "nodes under a leaf group, each with W_node of egress"),
              ("spine", D_spine, W_su, D_node * D_leaf, "leaf groups under the spine, each with W_su of uplink"))
    steps = tuple(Step(rf"T_{{\mathrm{{{name}}}}}", V * (d - 1) * below / (d * sp.Max(Y, below) * w),
                       f"a ring over the {why}; each child carries {below} GPUs' traffic, of which the Y "
                       f"shards leave {below}/max(Y, {below}) (Y spread over more GPUs splits it further)",
                       "s")
                  for name, d, w, below, why in levels)
    return Derivation("reduction over a 3-level fat tree of an array sharded Y ways inside it (general form)",
                      steps + (Step(r"T", sp.Max(*(s.expr for s in steps)),
                                    "the levels run pipelined; the slowest sets the time", "s"),),
                      CROSS, note="The book's general tree form (its F27, labelled an AllReduce but costed as an "
                                  "AllGather or ReduceScatter; a ring AllReduce without SHARP costs twice this).")


@functools.cache
def sharp_bytes_received_per_gpu() -> Derivation:
    """What one GPU takes in during a SHARP AllReduce (the book's ingress B/N, then B(N-1)/N)."""
    own = Step(r"\mathrm{bytes}_{\mathrm{own}}", V / N, "the switch sends back this GPU's reduced shard", "byte")
    multicast = Step(r"\mathrm{bytes}_{\mathrm{multicast}}", V * (N - 1) / N,
                     "then the other N - 1 reduced shards, multicast by the switch", "byte")
    return Derivation("bytes one GPU receives in an AllReduce with in-network reduction (SHARP)", (
        own, multicast, Step(r"\mathrm{bytes}_{\mathrm{in}}", own.expr + multicast.expr,
                             "the whole reduced array once: V, with no (N-1)/N factor", "byte")), INTRA + "; " + QUIZ4)
