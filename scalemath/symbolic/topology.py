"""Around the GPU (book part 12, 'Networking' and 'Beyond the node level'): the NVLink node, the scale-out fat
tree (scalable units, leaf, spine and core switches, cables), clusters in nodes and racks, and what model
parallelism and SHARP do to a reduction's bandwidth.

The fat tree is NVIDIA's DGX SuperPod as the book describes it: one NIC (one cable) per GPU, a leaf switch
gives half its ports to the nodes and half to the spines, every leaf reaches every spine, so the tree has
full bisection bandwidth. Counts of whole things round up (the fewest switches that do the job), with the
exact value kept as the step before.

>>> spine_switches().at({sym("n_dev"): 1024, sym("D_node"): 8, sym("D_leaf"): 32, sym("k_sw"): 64}).value
16
>>> node_capacity().at({sym("n_nvs"): 4, sym("k_nvs"): 64, sym("W_nvl"): 25, sym("D_node"): 8,
...                     sym("W_gpu"): 450}).value
3600
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step
from .symbols import sym

__all__ = [
    "nvlink_egress", "node_gpu_links", "node_switch_ports", "node_switch_capacity", "node_gpu_capacity",
    "node_capacity", "node_bisection", "node_egress",
    "cluster_nodes", "cluster_racks", "su_gpus", "su_leaf_switches", "scalable_units", "leaf_switches",
    "spine_switches", "cables_per_leaf_spine", "switches_total", "max_gpus_two_level",
    "three_level_spine_switches", "three_level_core_switches",
    "switch_capacity", "su_node_capacity", "su_leaf_capacity", "su_uplink", "spine_capacity",
    "spine_capacity_per_node", "dp_effective_bandwidth",
    "sharp_bytes_per_gpu", "sharp_switch_bytes", "sharp_sharded_switch_bytes", "sharp_sharded_time",
    "all_gather_node_switch_bytes", "all_gather_node_switch_time", "all_gather_top_switch_bytes",
    "all_gather_top_switch_time",
]

NETWORKING = "gpus.md, 'Networking'"
NODE = "gpus.md, 'At the node level'"
QUIZ2 = "gpus.md, 'Quiz 2: GPU nodes'"
BEYOND = "gpus.md, 'Beyond the node level'"
QUIZ3 = "gpus.md, 'Quiz 3: Beyond the node level'"
APPENDIX_B = "gpus.md, 'Appendix B: More networking details'"
DP = "gpus.md, 'Data Parallelism' and 'Examples' (DeepSeek-V3, LLaMA-3)"
QUIZ4 = "gpus.md, 'Quiz 4: Collectives'"

n_dev, D_node, D_leaf = sym("n_dev"), sym("D_node"), sym("D_leaf")
n_nvl, n_nvs, k_nvs, k_sw = sym("n_nvl"), sym("n_nvs"), sym("k_nvs"), sym("k_sw")
W_nvl, W_gpu, W_nic, W_node, W_port = sym("W_nvl"), sym("W_gpu"), sym("W_nic"), sym("W_node"), sym("W_port")
n_rack, X, Y, N, V = sym("n_rack"), sym("X"), sym("Y"), sym("N"), sym("V")


# -- one NVLink node ---------------------------------------------------------------------------------------

@functools.cache
def nvlink_egress() -> Derivation:
    return Derivation("NVLink egress of one GPU, one direction", (Step(
        r"W_{\mathrm{gpu}}", n_nvl * W_nvl, "links times one link's bandwidth each way", "byte/s"),), NODE)


@functools.cache
def node_gpu_links() -> Derivation:
    return Derivation("NVLink links from the GPUs of one node into its switches", (Step(
        r"\mathrm{links}_{\mathrm{node}}", D_node * n_nvl, "every GPU's links (H100: 5 + 4 + 4 + 5 = 18)", "link"),),
        NODE)


@functools.cache
def node_switch_ports() -> Derivation:
    return Derivation("NVLink ports of every NVSwitch in one node", (Step(
        r"\mathrm{ports}_{\mathrm{node}}", n_nvs * k_nvs, "switches times ports per switch", "unit"),), NODE)


def _switches() -> Step:
    return Step(r"W_{\mathrm{switches}}", n_nvs * k_nvs * W_nvl, "every port of every NVSwitch at link speed",
                "byte/s")


def _gpus() -> Step:
    return Step(r"W_{\mathrm{GPUs}}", D_node * W_gpu, "every GPU sending at its NVLink egress", "byte/s")


@functools.cache
def node_switch_capacity() -> Derivation:
    return Derivation("NVSwitch capacity of one node, one direction", (_switches(),), NODE)


@functools.cache
def node_gpu_capacity() -> Derivation:
    return Derivation("NVLink egress of all GPUs of one node, one direction", (_gpus(),), QUIZ2)


@functools.cache
def node_capacity() -> Derivation:
    return Derivation("peak NVLink bandwidth of one node", (_switches(), _gpus(), Step(
        r"W_{\mathrm{node}}^{\mathrm{NVLink}}", sp.Min(_switches().expr, _gpus().expr),
        "the switches or the GPUs, whichever is smaller", "byte/s")), QUIZ2)


@functools.cache
def node_bisection() -> Derivation:
    half = Step(r"W_{\mathrm{half}}", D_node / 2 * W_gpu, "half the GPUs send to the other half, one direction",
                "byte/s")
    return Derivation("bisection bandwidth of one node, both directions counted", (half, Step(
        r"W_{\mathrm{bisection}}", 2 * half.expr, "each half sends to the other at once", "byte/s")), QUIZ2)


@functools.cache
def node_egress() -> Derivation:
    return Derivation("scale-out egress of one node, one direction", (Step(
        r"W_{\mathrm{node}}", D_node * W_nic, "one NIC per GPU (GB200 NVL72: 4 x 18 x 400 Gb/s)", "byte/s"),),
        BEYOND)


# -- chips into nodes, racks, scalable units and switches ----------------------------------------------------------

def _whole(label: str, exact: sp.Expr, why: str, unit: str) -> tuple[Step, Step]:
    return (Step(label + r"^{\mathrm{exact}}", exact, why, unit),
            Step(label, sp.ceiling(exact), "rounded up to whole ones", unit))


def _nodes() -> tuple[Step, Step]:
    return _whole(r"n_{\mathrm{nodes}}", n_dev / D_node, "GPUs over GPUs per NVLink node", "node")


def _units() -> tuple[Step, ...]:
    nodes = _nodes()
    return nodes + _whole(r"n_{\mathrm{SU}}", nodes[-1].expr / D_leaf, "nodes over nodes per scalable unit", "unit")


def _leaves_per_su() -> tuple[Step, Step]:
    return _whole(r"n_{\mathrm{leaf/SU}}", D_leaf * D_node / (k_sw / 2),
                  "one cable per GPU, half of each leaf switch's ports facing the nodes", "unit")


def _leaves() -> tuple[Step, ...]:
    units, per_su = _units(), _leaves_per_su()
    return units + per_su + (Step(r"n_{\mathrm{leaf}}", units[-1].expr * per_su[-1].expr,
                                  "leaf switches per scalable unit times units", "unit"),)


def _spines() -> tuple[Step, ...]:
    leaves = _leaves()
    return leaves + _whole(r"n_{\mathrm{spine}}", leaves[-1].expr * (k_sw / 2) / k_sw,
                           "every leaf's other half of ports go up; each spine switch takes k_sw of them", "unit")


@functools.cache
def cluster_nodes() -> Derivation:
    return Derivation("NVLink nodes for a number of GPUs", _nodes(), NETWORKING)


@functools.cache
def cluster_racks() -> Derivation:
    return Derivation("racks for a number of chips", _whole(
        r"n_{\mathrm{racks}}", n_dev / n_rack, "chips over chips per rack", "unit"), BEYOND)


@functools.cache
def su_gpus() -> Derivation:
    return Derivation("GPUs in one scalable unit", (Step(
        r"n_{\mathrm{GPU/SU}}", D_leaf * D_node, "nodes per unit times GPUs per node", "chip"),), BEYOND)


@functools.cache
def su_leaf_switches() -> Derivation:
    return Derivation("leaf switches of one scalable unit", _leaves_per_su(), BEYOND)


@functools.cache
def scalable_units() -> Derivation:
    return Derivation("scalable units for a number of GPUs", _units(), BEYOND)


@functools.cache
def leaf_switches() -> Derivation:
    return Derivation("leaf switches for a number of GPUs", _leaves(), BEYOND)


@functools.cache
def spine_switches() -> Derivation:
    return Derivation("spine switches of a two-level fat tree for a number of GPUs", _spines(), BEYOND)


@functools.cache
def cables_per_leaf_spine() -> Derivation:
    spines = _spines()
    return Derivation("cables between each leaf and each spine switch", spines + (
        Step(r"\mathrm{cables}^{\mathrm{exact}}", (k_sw / 2) / spines[-1].expr,
             "a leaf's uplinks shared evenly over every spine", "unit"),
        Step(r"\mathrm{cables}", sp.floor((k_sw / 2) / spines[-1].expr),
             "whole cables, rounded down; below 1 the tree needs a third level", "unit")), QUIZ3)


@functools.cache
def switches_total() -> Derivation:
    spines = _spines()
    nodes, leaves = spines[1], spines[-3]
    return Derivation("switches of a two-level fat tree and its nodes' NVSwitches", spines + (Step(
        r"n_{\mathrm{switches}}", nodes.expr * sym("n_nvs") + leaves.expr + spines[-1].expr,
        "NVSwitches in every node, plus leaf and spine switches", "unit"),), BEYOND)


@functools.cache
def max_gpus_two_level() -> Derivation:
    spines = Step(r"n_{\mathrm{spine}}^{\max}", k_sw / 2, "a leaf has k_sw/2 uplinks and must reach every spine",
                  "unit")
    leaves = Step(r"n_{\mathrm{leaf}}^{\max}", spines.expr * k_sw / (k_sw / 2),
                  "the spines' ports over each leaf's uplinks", "unit")
    return Derivation("most GPUs a two-level fat tree joins at full bisection", (spines, leaves, Step(
        r"n_{\mathrm{GPU}}^{\max}", leaves.expr * k_sw / 2, "half of each leaf's ports face GPUs", "chip")), QUIZ3)


@functools.cache
def three_level_spine_switches() -> Derivation:
    return Derivation("middle-level (spine) switches of a three-level fat tree", _whole(
        r"n_{\mathrm{spine}}", n_dev / (k_sw / 2), "each spine switch has k_sw/2 ports down and k_sw/2 up, "
        "and the level carries one cable per GPU", "unit"), QUIZ3)


@functools.cache
def three_level_core_switches() -> Derivation:
    return Derivation("top-level (core) switches of a three-level fat tree", _whole(
        r"n_{\mathrm{core}}", n_dev / k_sw, "one cable per GPU arrives at the top, k_sw per core switch", "unit"),
        QUIZ3)


# -- capacity of each level ------------------------------------------------------------------------------------

@functools.cache
def switch_capacity() -> Derivation:
    return Derivation("capacity of one scale-out switch, one direction", (Step(
        r"W_{\mathrm{switch}}", k_sw * W_port, "every port at once", "byte/s"),), BEYOND)


@functools.cache
def su_node_capacity() -> Derivation:
    return Derivation("scale-out bandwidth of the nodes of one scalable unit", (Step(
        r"W_{\mathrm{SU}}^{\mathrm{nodes}}", D_leaf * W_node, "every node's egress", "byte/s"),), QUIZ3)


@functools.cache
def su_leaf_capacity() -> Derivation:
    leaves = _leaves_per_su()
    return Derivation("switch capacity of one scalable unit's leaf switches", leaves + (Step(
        r"W_{\mathrm{SU}}^{\mathrm{switches}}", leaves[-1].expr * k_sw * W_port, "every port of every leaf", "byte/s"),),
        BEYOND)


@functools.cache
def su_uplink() -> Derivation:
    leaves = _leaves_per_su()
    return Derivation("uplink of one scalable unit to the spine, one direction", leaves + (Step(
        r"W_{\mathrm{su}}", leaves[-1].expr * (k_sw / 2) * W_port, "the upward half of every leaf's ports",
        "byte/s"),), QUIZ3)


def _spine_capacity() -> Step:
    return Step(r"W_{\mathrm{spine}}", _spines()[-1].expr * k_sw * W_port, "every port of every spine switch", "byte/s")


@functools.cache
def spine_capacity() -> Derivation:
    return Derivation("switch capacity of the spine of a two-level fat tree", _spines() + (_spine_capacity(),), QUIZ3)


@functools.cache
def spine_capacity_per_node() -> Derivation:
    spines = _spines()
    return Derivation("spine capacity per node (full bisection when it reaches the node's egress)", spines + (
        _spine_capacity(), Step(r"W_{\mathrm{spine/node}}", _spine_capacity().expr / spines[1].expr,
                                "shared by every node", "byte/s")), QUIZ3)


# -- reductions above the node: model parallelism and SHARP --------------------------------------------------------

@functools.cache
def dp_effective_bandwidth() -> Derivation:
    nodes = Step(r"\mathrm{nodes}_Y", sp.Max(D_node, Y) / D_node,
                 "nodes one model replica spans: each reduces its own share of the gradients", "node")
    ring = Step(r"f_{\mathrm{ring}}", X / (X - 1), "a ring over X replicas sends (X - 1)/X of the bytes", "1")
    return Derivation("effective bandwidth of a data-parallel reduction across nodes", (nodes, ring, Step(
        r"W_{\mathrm{DP}}^{\mathrm{eff}}", W_node * nodes.expr * ring.expr,
        "every node of a replica sends at its egress at once, and only (X - 1)/X of the bytes travel", "byte/s")),
        DP, note="The book's examples: LLaMA-3's 16-way pipeline spans 16 nodes (16x); DeepSeek-V3's 2-way data "
                 "parallelism gives 2/(2 - 1) = 2x.")


@functools.cache
def sharp_bytes_per_gpu() -> Derivation:
    ring = Step(r"\mathrm{bytes}_{\mathrm{ring}}", 2 * V * (N - 1) / N,
                "a ring AllReduce: ReduceScatter then AllGather, (N - 1)/N of V each", "byte")
    return Derivation("bytes one GPU sends in an AllReduce with in-network reduction (SHARP)", (ring, Step(
        r"\mathrm{bytes}_{\mathrm{SHARP}}", V * (N - 1) / N + V / N,
        "N - 1 foreign partial shards to the switch, then its own reduced shard: V in all", "byte")), QUIZ4)


@functools.cache
def sharp_switch_bytes() -> Derivation:
    ingress = Step(r"\mathrm{bytes}_{\mathrm{in}}", V * (N - 1) + V,
                   "every GPU's partial shards, then the reduced shards", "byte")
    return Derivation("bytes through the NVSwitch in a SHARP AllReduce of one node", (ingress, Step(
        r"\mathrm{bytes}_{\mathrm{out}}", V + V * (N - 1), "one shard back to each GPU, then the multicast", "byte")),
        QUIZ4)


@functools.cache
def sharp_sharded_switch_bytes() -> Derivation:
    return Derivation("NVSwitch traffic of a SHARP AllReduce of an array sharded Y ways on another axis", (Step(
        r"\mathrm{bytes}_{\mathrm{switch}}", N * V / Y, "each GPU's traffic is V/Y; N GPUs", "byte"),), QUIZ4)


@functools.cache
def sharp_sharded_time() -> Derivation:
    traffic = Step(r"\mathrm{bytes}_{\mathrm{switch}}", N * V / Y, "each GPU's traffic is V/Y; N GPUs", "byte")
    return Derivation("SHARP AllReduce of an array sharded Y ways on another axis, inside one node", (traffic, Step(
        r"T_{\mathrm{AR}}", traffic.expr / (N * W_gpu), "the switch's traffic over every GPU's link at once", "s")),
        QUIZ4)


# -- byte accounting of an AllGather over one scalable unit (Quiz 4 Q1) ------------------------------------------

M_nodes = sym("M_nodes")


def _node_switch() -> tuple[Step, Step]:
    ingress = Step(r"\mathrm{bytes}_{\mathrm{in}}^{\mathrm{node}}", V / M_nodes + V * (M_nodes - 1) / M_nodes,
                   "the node's own GPUs hand in their shards (V/M together) and the other M - 1 nodes' shards "
                   "come down from the leaf", "byte")
    egress = Step(r"\mathrm{bytes}_{\mathrm{out}}^{\mathrm{node}}", D_node * V,
                  "V/M goes up to the leaf, and each of the node's D_node GPUs receives every shard but its own: "
                  "V/M + D_node(V - V/(M D_node)) = D_node V", "byte")
    return ingress, egress


@functools.cache
def all_gather_node_switch_bytes() -> Derivation:
    return Derivation("bytes into and out of one node's NVSwitches in an AllGather of V bytes over M nodes",
                      _node_switch(), QUIZ4)


@functools.cache
def all_gather_node_switch_time() -> Derivation:
    ingress, egress = _node_switch()
    return Derivation("time at the node level of an AllGather over M nodes (egress-bound)", (ingress, egress, Step(
        r"T_{\mathrm{node}}", egress.expr / (D_node * W_gpu),
        "the switches send D_node V bytes down D_node GPU links of W_gpu each: V/W_gpu, whatever M", "s")), QUIZ4)


def _top_switch() -> tuple[Step, Step]:
    ingress = Step(r"\mathrm{bytes}_{\mathrm{in}}^{\mathrm{top}}", V, "each of the M nodes sends up its V/M",
                   "byte")
    egress = Step(r"\mathrm{bytes}_{\mathrm{out}}^{\mathrm{top}}", V * (M_nodes - 1),
                  "each node receives the other nodes' shards, V(M - 1)/M, M times over", "byte")
    return ingress, egress


@functools.cache
def all_gather_top_switch_bytes() -> Derivation:
    return Derivation("bytes into and out of the top switch of one scalable unit in an AllGather of V bytes over M "
                      "nodes", _top_switch(), QUIZ4)


@functools.cache
def all_gather_top_switch_time() -> Derivation:
    ingress, egress = _top_switch()
    return Derivation("time at the top switch of an AllGather over M nodes (egress-bound)", (ingress, egress, Step(
        r"T_{\mathrm{top}}", egress.expr / (M_nodes * W_node),
        "each node's link takes in V(M - 1)/M at the node's scale-out bandwidth", "s")), QUIZ4)
