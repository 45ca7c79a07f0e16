"""What every collective shares: the book's sections, the symbols of bytes, devices and bandwidths, the labels
of the times, and the rule that builds every AllReduce as a ReduceScatter followed by an AllGather.

``V`` follows the book: the bytes of the gathered array for an AllGather, of the unreduced per-device input for
a ReduceScatter or AllReduce, and of the whole array for an AllToAll.
"""

from __future__ import annotations

from ..derivation import Derivation, Step
from ..symbols import sym


CASE2 = "sharding.md, 'Case 2: one multiplicand has a sharded contracting dimension'"
CASE3 = "sharding.md, 'Case 3: both multiplicands have sharded contracting dimensions'"
ALLTOALL = "sharding.md, 'Our final communication primitive: the AllToAll'"
SUMMARY = "sharding.md, 'What Have We Learned?'"
RING_EXACT = "sharding.md, ring costs with the (N-1)/N factor kept (derived from the book's ring model)"
NO_WRAP = "sharding.md, Pop Quiz 2 (an axis without wraparound)"
INTRA = "gpus.md, 'Intra-node collectives'"
CROSS = "gpus.md, 'Cross-node collectives'"
QUIZ4 = "gpus.md, 'Quiz 4: Collectives'"
APPENDIX_B = "gpus.md, 'Appendix B: More networking details'"

V, N, N_axes = sym("V"), sym("N"), sym("N_axes")
X, Y, Z = sym("X"), sym("Y"), sym("Z")
W_ici, W_link, t_hop = sym("W_ici"), sym("W_link"), sym("t_hop")
W_gpu, W_node, W_su = sym("W_gpu"), sym("W_node"), sym("W_su")
D_node, D_leaf, D_spine, M = sym("D_node"), sym("D_leaf"), sym("D_spine"), sym("M_nodes")
eta, k_top, t_meas = sym("eta"), sym("k_top"), sym("t_meas")

T_AG, T_RS, T_AR, T_A2A = (r"T_{\mathrm{AG}}", r"T_{\mathrm{RS}}", r"T_{\mathrm{AR}}", r"T_{\mathrm{A2A}}")
_OPS = {"ag": ("AllGather", T_AG), "rs": ("ReduceScatter", T_RS)}


def _sum(rs: Derivation, ag: Derivation, title: str, source: str) -> Derivation:
    """An AllReduce as a ReduceScatter then an AllGather of the V/N shards: the two costs added."""
    return Derivation(title, (
        Step(T_RS, rs.expr, f"{rs.title}: sums the partials, leaving V/N bytes per device", "s"),
        Step(T_AG, ag.expr, f"{ag.title}: gathers the summed shards back into V bytes", "s"),
        Step(T_AR, rs.expr + ag.expr, "an AllReduce is a ReduceScatter followed by an AllGather", "s"),
    ), source)
