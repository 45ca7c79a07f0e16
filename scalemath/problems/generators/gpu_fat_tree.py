"""Per-level bandwidth of a SuperPod-like fat tree and an AllGather across it (gpus.md, 'Cross-node collectives').

Three levels: the NVLink node (D_node GPUs at W_gpu each), the leaf level of a scalable unit
(D_leaf nodes at the node egress W_node, from the catalog: one NIC per GPU) and the spine
(D_spine scalable units at the uplink W_su of their leaf switches). A ring at each level moves
(D - 1)/D of the bytes through each child's link, so a level sustains D W / (D - 1); the
levels run pipelined and the narrowest one sets the AllGather time.

Engine route: ``gpu.fat_tree.bandwidth`` (each level's step and the minimum) and
``gpu.fat_tree.time``, with W_su from a one-step derivation (uplink ports times the 400 Gbps
port rate). Second route: plain Fractions.
"""

from __future__ import annotations

from fractions import Fraction

from ... import quantities
from ...catalog.hardware import get_chip
from ...symbolic.derivation import Derivation, Step
from ...symbolic.symbols import sym
from ..draws import MODEL_SHAPES, ask, choice, pick
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = "gpus.md, 'Beyond the node level', 'Quiz 3' and 'Cross-node collectives'"
CHIPS = ("h100", "h100", "h200", "b200", "gb200")
PORT_BYTES_PER_S = 50 * 10**9  # one InfiniBand NDR port, 400 Gbps, each direction
SWITCH_PORTS = 64               # an NDR switch
LEVELS = ("node", "leaf", "spine")
#: The choices of "which level is the bottleneck?", in the order of LEVELS
BOTTLENECKS = ("the node level (NVLink inside each node)", "the leaf level (the nodes' network cards)",
               "the spine level (the scalable units' uplinks)")

W_SU = Derivation("uplink bandwidth of one scalable unit to the spine", (
    Step(r"W_{\mathrm{su}}", sym("links") * sym("W_link"),
         "every uplink port of every leaf switch is one cable to a spine switch at W_link each way", "byte/s"),),
    "gpus.md, 'Quiz 3: Beyond the node level'")


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    d_leaf = pick(rng, (2, 4, 8) if chip.nvlink_domain > 8 else (2, 4, 8, 16, 32, 32))
    leaves = pick(rng, (2, 4, 8, 8))
    uplinks = pick(rng, (8, 16, 16, 32))
    nics = d_leaf * chip.nvlink_domain  # one NIC per GPU, each cabled to a leaf switch
    reject_if(nics % leaves, "the nodes' NICs must spread evenly over the leaf switches")
    reject_if(nics // leaves + uplinks > SWITCH_PORTS, "a leaf switch has only 64 ports for nodes and uplinks")
    model, d, f = pick(rng, MODEL_SHAPES)
    p = {"chip": chip.key, "D_leaf": d_leaf, "D_spine": pick(rng, (2, 4, 4, 8)), "leaves": leaves,
            "uplinks": uplinks, "down": nics // leaves, "model": model, "D": d, "F": f}
    bw = [check(p)[f"bw_{level}"] for level in LEVELS]
    reject_if(bw.count(min(bw)) > 1, "two levels tie as the bottleneck: the question asks for one")
    return p


def solve(p):
    ev_su = W_SU.at({sym("links"): p["leaves"] * p["uplinks"], sym("W_link"): PORT_BYTES_PER_S})
    w_su = ev_su.value
    tree = {"D_leaf": p["D_leaf"], "D_spine": p["D_spine"], "W_su": w_su}
    q = quantities.get("gpu.fat_tree.bandwidth")
    values = quantities.bind(q, quantities.Context(chip=p["chip"]), tree)
    out = [Answer("w_su", "uplink of one scalable unit", w_su, "byte/s", ev_su)]
    for level, step in zip(LEVELS, q.derivation.steps):
        ev = Derivation(f"{level} level", (step,), q.source).at(values)
        out.append(Answer(f"bw_{level}", f"bandwidth the {level} level sustains", ev.value, "byte/s", ev))
    out.append(ask("bw_eff", "bandwidth of the whole tree", "gpu.fat_tree.bandwidth", chip=p["chip"], given=tree))
    levels = [a.value for a in out[1:4]]
    out.append(choice("bottleneck", "which level is the bottleneck?", BOTTLENECKS, levels.index(min(levels))))
    out.append(ask("t", "AllGather time across the tree", "gpu.fat_tree.time", chip=p["chip"],
                   given=tree | {"V": 2 * p["D"] * p["F"]}))
    return out


def check(p):
    chip = get_chip(p["chip"])
    w_su = Fraction(p["leaves"] * p["uplinks"] * PORT_BYTES_PER_S)
    levels = [(chip.nvlink_domain, Fraction(chip.nvlink_bytes_per_s)),
              (p["D_leaf"], Fraction(chip.nic_bytes_per_s * chip.nvlink_domain)),
              (p["D_spine"], w_su)]
    bw = [d * w / (d - 1) for d, w in levels]
    v = 2 * p["D"] * p["F"]
    return {"w_su": w_su, "bw_node": bw[0], "bw_leaf": bw[1], "bw_spine": bw[2], "bw_eff": min(bw),
            "bottleneck": min(range(3), key=lambda i: bw[i]), "t": max(v / b for b in bw)}


register(Generator("gpu_fat_tree", "gpu", "Bandwidth of a fat tree of GPU nodes",
                   SOURCE, draw, solve, check))
