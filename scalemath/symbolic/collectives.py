"""Collectives (book parts 3 and 12): AllGather, ReduceScatter, AllReduce and AllToAll.

TPU costs are for rings and tori of ICI links (``W_ici`` is the bidirectional
bandwidth of one axis, ``W_link`` one link in one direction); GPU costs are for an
NVLink node behind switches (``W_gpu``) and a fat tree of nodes (``W_node``).

``V`` follows the book: the bytes of the gathered array for an AllGather, of the
unreduced per-device input for a ReduceScatter or AllReduce, and of the whole
array for an AllToAll. Every AllReduce is built as the sum of a ReduceScatter and
an AllGather, so AllReduce = ReduceScatter + AllGather holds by construction.

>>> all_gather_time().expr
V*(N - 1)/(N*W_ici)
>>> all_gather_time().at({sym("N"): 1, sym("V"): 10**6, sym("W_ici"): 9 * 10**10}).value
0
>>> all_reduce_time_approx().expr
2*V/W_ici
>>> gpu_all_to_all_time().at({sym("N"): 8, sym("V"): 64, sym("W_gpu"): 7}).value
1
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step, simplest
from .symbols import sym

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


# -- AllGather and ReduceScatter on a TPU axis ----------------------------------------------------
#
# A ReduceScatter is the AllGather run backwards (partial sums travel instead of shards and are
# added on the way), so each variant below has one cost, with words that fit the operation.

def _shard() -> Step:
    return Step(r"\mathrm{shard}", V / N, "V split evenly over the N devices of the axis", "byte")


def _ring_exact(op: str) -> Derivation:
    name, label = _OPS[op]
    moved = ("every device must receive the N - 1 shards it lacks" if op == "ag" else
             "every device must pass on the N - 1 partial shards it does not keep")
    return Derivation(f"{name} on a bidirectional ring with wraparound (exact)", (
        _shard(),
        Step(r"\mathrm{bytes}_{\mathrm{dev}}", V * (N - 1) / N, moved, "byte"),
        Step(label, V * (N - 1) / (N * W_ici),
             "the traffic splits evenly over both directions, W_ici/2 each; an axis of one device moves nothing",
             "s"),
    ), RING_EXACT)


def _ring_approx(op: str) -> Derivation:
    name, label = _OPS[op]
    hop = Step(r"T_{\mathrm{hop}}", 2 * V / (N * W_ici),
               "each hop moves V/N bytes each way, 2V/N in all, at the bidirectional bandwidth", "s")
    return Derivation(f"{name} on a bidirectional ring (the book's bandwidth-bound cost)", (
        hop,
        Step(r"\mathrm{hops}", N / 2, "a shard needs about N/2 hops to reach the far side of the ring", "hop"),
        Step(label, hop.expr * N / 2, "hop time times hops: the axis size cancels", "s"),
    ), CASE2 if op == "ag" else CASE3)


def _multi_axis(op: str) -> Derivation:
    name, label = _OPS[op]
    return Derivation(f"{name} over several mesh axes at once (bandwidth-bound)", (
        Step(r"W_{\mathrm{total}}", W_ici * N_axes, "each extra axis adds its own links in both directions",
             "byte/s"),
        Step(label, V / (W_ici * N_axes), "the same bytes over N_axes times the bandwidth", "s"),
    ), SUMMARY)


def _no_wraparound(op: str) -> Derivation:
    name, label = _OPS[op]
    at_end = ("the chip at an end of the line has one link, through which the N - 1 other shards arrive"
              if op == "ag" else
              "the chip at an end of the line has one link, through which N - 1 partial shards must pass")
    return Derivation(f"{name} on an axis without wraparound", (
        _shard(),
        Step(r"\mathrm{bytes}_{\mathrm{end}}", V * (N - 1) / N, at_end, "byte"),
        Step(label, V * (N - 1) / (N * W_link), "one link, one direction: the one-way link bandwidth", "s"),
    ), NO_WRAP)


def _unidirectional(op: str) -> Derivation:
    name, label = _OPS[op]
    return Derivation(f"{name} on a unidirectional ring", (
        _shard(),
        Step(r"\mathrm{hops}", N - 1, "shards move one way only, so the last one is N - 1 hops away", "hop"),
        Step(label, (N - 1) * (V / N) / W_link, "N - 1 hops of one V/N shard at the one-way link bandwidth", "s"),
    ), SUMMARY)


@functools.cache
def all_gather_time() -> Derivation:
    return _ring_exact("ag")


@functools.cache
def all_gather_time_approx() -> Derivation:
    return _ring_approx("ag")


@functools.cache
def all_gather_time_multi_axis() -> Derivation:
    return _multi_axis("ag")


@functools.cache
def all_gather_time_no_wraparound() -> Derivation:
    return _no_wraparound("ag")


@functools.cache
def all_gather_time_unidirectional() -> Derivation:
    return _unidirectional("ag")


@functools.cache
def reduce_scatter_time() -> Derivation:
    return _ring_exact("rs")


@functools.cache
def reduce_scatter_time_approx() -> Derivation:
    return _ring_approx("rs")


@functools.cache
def reduce_scatter_time_multi_axis() -> Derivation:
    return _multi_axis("rs")


@functools.cache
def reduce_scatter_time_no_wraparound() -> Derivation:
    return _no_wraparound("rs")


@functools.cache
def reduce_scatter_time_unidirectional() -> Derivation:
    return _unidirectional("rs")


@functools.cache
def all_gather_latency_aware() -> Derivation:
    latency = Step(r"T_{\mathrm{latency}}", t_hop * N / 2, "about N/2 hops, each at least t_hop", "s")
    bandwidth = Step(r"T_{\mathrm{bw}}", V / W_ici, "the bandwidth-bound ring cost", "s")
    return Derivation("AllGather on a bidirectional ring, with hop latency", (
        latency, bandwidth,
        Step(T_AG, sp.Max(latency.expr, bandwidth.expr), "whichever bound is larger sets the time", "s"),
    ), CASE2)


@functools.cache
def all_gather_latency_aware_axes(n_axes: int) -> Derivation:
    """AllGather over the first ``n_axes`` of the axes X, Y, Z at once, with hop latency."""
    if n_axes not in (2, 3):
        raise ValueError("n_axes must be 2 or 3 (one axis: all_gather_latency_aware)")
    axes = (X, Y, Z)[:n_axes]
    names = " + ".join(a.name for a in axes)
    latency = Step(r"T_{\mathrm{latency}}", t_hop * sp.Add(*axes) / 2,
                   f"the longest path crosses ({names})/2 hops, each at least t_hop", "s")
    bandwidth = Step(r"T_{\mathrm{bw}}", V / (W_ici * n_axes),
                     f"{n_axes} axes carry the bytes at once, each at W_ici", "s")
    return Derivation(f"AllGather over {n_axes} mesh axes, with hop latency", (
        latency, bandwidth,
        Step(T_AG, sp.Max(latency.expr, bandwidth.expr), "whichever bound is larger sets the time", "s"),
    ), CASE2)


@functools.cache
def all_gather_latency_aware_no_wraparound() -> Derivation:
    chunk = Step(r"T_{\mathrm{chunk}}", V / (N * W_link), "one V/N shard over one link, one way", "s")
    per_hop = Step(r"T_{\mathrm{hop}}", sp.Max(t_hop, chunk.expr), "a hop costs at least its latency", "s")
    return Derivation("AllGather on an axis without wraparound, with hop latency", (
        chunk, per_hop,
        Step(T_AG, (N - 1) * per_hop.expr, "N - 1 hops in a row reach the chip at the end of the line", "s"),
    ), NO_WRAP)


@functools.cache
def latency_threshold() -> Derivation:
    return Derivation("chunk size below which an ICI hop is latency-bound", (
        Step(r"\mathrm{bytes}^*", W_link * t_hop,
             "a chunk smaller than one hop latency's worth of one-way bandwidth waits on latency", "byte"),
    ), CASE2)


# -- AllReduce = ReduceScatter + AllGather ----------------------------------------------------------

def _sum(rs: Derivation, ag: Derivation, title: str, source: str) -> Derivation:
    """An AllReduce as a ReduceScatter then an AllGather of the V/N shards: the two costs added."""
    return Derivation(title, (
        Step(T_RS, rs.expr, f"{rs.title}: sums the partials, leaving V/N bytes per device", "s"),
        Step(T_AG, ag.expr, f"{ag.title}: gathers the summed shards back into V bytes", "s"),
        Step(T_AR, rs.expr + ag.expr, "an AllReduce is a ReduceScatter followed by an AllGather", "s"),
    ), source)


@functools.cache
def all_reduce_time() -> Derivation:
    return _sum(reduce_scatter_time(), all_gather_time(),
                "AllReduce on a bidirectional ring with wraparound (exact)", RING_EXACT)


@functools.cache
def all_reduce_time_approx() -> Derivation:
    return _sum(reduce_scatter_time_approx(), all_gather_time_approx(),
                "AllReduce on a bidirectional ring (the book's bandwidth-bound cost)", CASE3)


@functools.cache
def all_reduce_time_multi_axis() -> Derivation:
    return _sum(reduce_scatter_time_multi_axis(), all_gather_time_multi_axis(),
                "AllReduce over several mesh axes at once (bandwidth-bound)", SUMMARY)


@functools.cache
def all_reduce_time_no_wraparound() -> Derivation:
    return _sum(reduce_scatter_time_no_wraparound(), all_gather_time_no_wraparound(),
                "AllReduce on an axis without wraparound", NO_WRAP)


@functools.cache
def all_reduce_time_unidirectional() -> Derivation:
    return _sum(reduce_scatter_time_unidirectional(), all_gather_time_unidirectional(),
                "AllReduce on a unidirectional ring", SUMMARY)


# -- AllToAll on a TPU axis or torus -----------------------------------------------------------------

@functools.cache
def all_to_all_time_approx() -> Derivation:
    chunk = Step(r"\mathrm{chunk}", V / N**2, "each device sends a V/N^2 piece of its shard to every device", "byte")
    load = Step(r"\mathrm{hops}_{\mathrm{chunk}}", N**2 / 4,
                "about N^2/4 chunk-hops per device in all, half of them each way round", "1")
    return Derivation("AllToAll on a bidirectional ring (the book's cost)", (
        chunk, load,
        Step(T_A2A, load.expr * chunk.expr / W_ici,
             "V/4 bytes per device over both directions: a quarter of an AllGather", "s"),
    ), ALLTOALL)


@functools.cache
def all_to_all_time() -> Derivation:
    chunk = Step(r"\mathrm{chunk}", V / N**2, "each device sends a V/N^2 piece of its shard to every device", "byte")
    load = Step(r"\mathrm{hops}_{\mathrm{dir}}", sp.floor(N**2 / 2) / 4,
                "per direction and device, the sum of the shortest distances min(d, N - d)/2 over d = 1..N-1, "
                "the chunk to the opposite device split between both ways: N^2/8 (even N), (N^2-1)/8 (odd N)", "1")
    return Derivation("AllToAll on a bidirectional ring with wraparound (exact)", (
        chunk, load,
        Step(T_A2A, 2 * load.expr * chunk.expr / W_ici,
             "each link direction carries that load at W_ici/2; V/(4 W_ici) for every even N", "s"),
    ), RING_EXACT)


@functools.cache
def all_to_all_time_unidirectional() -> Derivation:
    chunk = Step(r"\mathrm{chunk}", V / N**2, "each device sends a V/N^2 piece of its shard to every device", "byte")
    load = Step(r"\mathrm{hops}_{\mathrm{chunk}}", N * (N - 1) / 2, "distances 1 + 2 + ... + (N - 1) per device, one way only",
                "1")
    return Derivation("AllToAll on a unidirectional ring", (
        chunk, load,
        Step(T_A2A, load.expr * chunk.expr / W_link, "every link carries that load at the one-way bandwidth", "s"),
    ), RING_EXACT)


@functools.cache
def all_to_all_time_torus() -> Derivation:
    n = Step(r"n_{\mathrm{chips}}", X * Y * Z, "the devices of the X × Y × Z torus", "chip")
    return Derivation("AllToAll on a 3-D torus (a 2-D one with Z = 1)", (
        n,
        Step(r"W_{\mathrm{cut}}", n.expr * W_ici / sp.Max(X, Y, Z),
             "the narrowest cut runs across the longest axis: 2N/max links, wraparound counted", "byte/s"),
        Step(T_A2A, V * sp.Max(X, Y, Z) / (4 * n.expr * W_ici),
             "half the devices send V/4 bytes across that cut at its one-way bandwidth", "s"),
    ), ALLTOALL)


def _bidirectional_speedup(op: str, uni: Derivation, bidi: Derivation) -> Derivation:
    t_uni = Step(r"T_{\mathrm{uni}}", uni.expr, f"the {op} on a unidirectional ring, at W_link", "s")
    t_bidi = Step(r"T_{\mathrm{bidi}}", bidi.expr.xreplace({W_ici: 2 * W_link}),
                  "on the bidirectional ring both directions of each link carry traffic: W_ici = 2 W_link", "s")
    return Derivation(f"{op}: speed-up of a bidirectional ring over a unidirectional one", (
        t_uni, t_bidi,
        Step(r"T_{\mathrm{uni}}/T_{\mathrm{bidi}}", simplest(t_uni.expr / t_bidi.expr),
             "the same bytes; the bidirectional ring halves the bandwidth term and, for an AllToAll, the distances",
             "1"),
    ), "sharding.md, 'What Have We Learned?' and Q10")


@functools.cache
def all_gather_bidirectional_speedup() -> Derivation:
    return _bidirectional_speedup("AllGather", all_gather_time_unidirectional(), all_gather_time())


@functools.cache
def all_to_all_bidirectional_speedup() -> Derivation:
    return _bidirectional_speedup("AllToAll", all_to_all_time_unidirectional(), all_to_all_time())


# -- GPUs inside one NVLink node ------------------------------------------------------------------------

def _gpu_ring(op: str) -> Derivation:
    name, label = _OPS[op]
    return Derivation(f"{name} inside an NVLink node", (
        Step(r"T_{\mathrm{hop}}", V / (N * W_gpu), "each step sends one V/N shard at the GPU's egress bandwidth", "s"),
        Step(label, V * (N - 1) / (N * W_gpu), "N - 1 steps: every GPU sends its shard to the N - 1 others", "s"),
    ), INTRA)


@functools.cache
def gpu_all_gather_time() -> Derivation:
    return _gpu_ring("ag")


@functools.cache
def gpu_reduce_scatter_time() -> Derivation:
    return _gpu_ring("rs")


@functools.cache
def gpu_all_gather_time_approx() -> Derivation:
    return Derivation("AllGather inside an NVLink node, many GPUs", (
        Step(T_AG, sp.limit(gpu_all_gather_time().expr, N, sp.oo),
             "(N - 1)/N tends to 1: the bytes over one GPU's egress", "s"),
    ), INTRA)


@functools.cache
def gpu_all_reduce_time() -> Derivation:
    return _sum(gpu_reduce_scatter_time(), gpu_all_gather_time(), "AllReduce inside an NVLink node (no SHARP)", INTRA)


@functools.cache
def gpu_all_reduce_sharp_time() -> Derivation:
    return Derivation("AllReduce inside an NVLink node with in-switch reduction (SHARP)", (
        Step(r"\mathrm{bytes}_{\mathrm{out}}", V * (N - 1) / N + V / N,
             "each GPU sends its N - 1 foreign partial shards, then its own summed shard", "byte"),
        Step(T_AR, V / W_gpu, "the switch adds and multicasts: exactly V bytes leave each GPU", "s"),
    ), QUIZ4)


@functools.cache
def gpu_sharp_speedup() -> Derivation:
    ring, sharp = gpu_all_reduce_time().result, gpu_all_reduce_sharp_time().result
    return Derivation("predicted speed-up of a SHARP AllReduce over a ring AllReduce", (
        Step(r"T_{\mathrm{ring}}", ring.expr, "ReduceScatter then AllGather over NVLink", "s"),
        Step(r"T_{\mathrm{SHARP}}", sharp.expr, "the switches reduce in the network", "s"),
        Step(r"\mathrm{speedup}", sp.factor(sp.cancel(ring.expr / sharp.expr)), "the ratio of the two times", "1"),
    ), INTRA)


@functools.cache
def gpu_all_to_all_time() -> Derivation:
    return Derivation("AllToAll inside an NVLink node", (
        Step(r"\mathrm{chunk}", V / N**2, "each GPU holds V/N and sends a V/N^2 piece to every other GPU", "byte"),
        Step(T_A2A, V * (N - 1) / (N**2 * W_gpu), "N - 1 pieces leave each GPU directly through the switch", "s"),
    ), INTRA)


@functools.cache
def gpu_ragged_all_to_all_time() -> Derivation:
    frac = Step(r"f_{\mathrm{dest}}", sp.Min(k_top / N, 1),
                "at most k of the N destinations receive anything from a token", "1")
    return Derivation("ragged (top-k) AllToAll inside an NVLink node (the book's approximation)", (
        frac,
        Step(T_A2A, frac.expr * V * (N - 1) / (N**2 * W_gpu),
             "the dense AllToAll cost scaled by the share of destinations in use", "s"),
    ), INTRA)


@functools.cache
def gpu_ragged_all_to_all_time_exact() -> Derivation:
    """The expected cost when each token picks k of N destinations at random.

    Not registered: its exponent k is a symbol, which the unit checker does not accept.
    """
    frac = Step(r"f_{\mathrm{dest}}", 1 - ((N - 1) / N) ** k_top,
                "expected share of destinations a token reaches with k random picks out of N", "1")
    return Derivation("ragged (top-k) AllToAll inside an NVLink node (expected cost)", (
        frac,
        Step(T_A2A, frac.expr * V * (N - 1) / (N**2 * W_gpu),
             "the dense AllToAll cost scaled by the expected share of destinations", "s"),
    ), APPENDIX_B)


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


# -- measured bandwidth and nccl-tests bus bandwidth -----------------------------------------------------

@functools.cache
def gpu_all_reduce_time_measured() -> Derivation:
    w_eff = Step(r"W_{\mathrm{eff}}", eta * W_gpu, "the share of the advertised NVLink bandwidth really reached",
                 "byte/s")
    ring = gpu_all_reduce_time().expr.subs(W_gpu, w_eff.expr)
    return Derivation("AllReduce inside an NVLink node at the measured bandwidth", (
        w_eff, Step(T_AR, ring, "the ring AllReduce at the effective bandwidth", "s"),
    ), INTRA)


def _bus(factor: sp.Expr, why: str, title: str) -> Derivation:
    algo = Step(r"\mathrm{algBW}", V / t_meas, "bytes per device over the measured time", "byte/s")
    return Derivation(title, (
        algo, Step(r"\mathrm{busBW}", factor * algo.expr, why, "byte/s"),
    ), INTRA)


@functools.cache
def gpu_all_reduce_bus_bandwidth() -> Derivation:
    return _bus(2 * (N - 1) / N, "nccl-tests scales by 2(N - 1)/N, the bytes a ring AllReduce sends per byte",
                "nccl-tests bus bandwidth of an AllReduce")


@functools.cache
def gpu_all_gather_bus_bandwidth() -> Derivation:
    return _bus((N - 1) / N, "nccl-tests scales by (N - 1)/N, the share of the gathered array that travels",
                "nccl-tests bus bandwidth of an AllGather")
