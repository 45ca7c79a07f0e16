"""Sizing a DGX SuperPod-like cluster (gpus.md, 'Beyond the node level' and Quiz 3): for n GPUs, the NVLink
nodes, the leaf switches (half of each switch's ports facing the nodes, one cable per GPU), the spine
switches of a two-level fat tree with full bisection, the cables between each leaf and each spine, all
switches counted (NVSwitches in the nodes too), and one node's scale-out egress.

Engine route: ``gpu.cluster.nodes``, ``gpu.cluster.leaf_switches``, ``gpu.cluster.spine_switches``,
``gpu.cluster.cables_per_leaf_spine``, ``gpu.cluster.switches`` and ``gpu.node.egress`` on the drawn chip.
Second route: the hand count of Quiz 3 (ports of each leaf, uplinks shared over the spines) in integers.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ...catalog.hardware import default_catalog, get_chip
from ..draws import ask, pick, whole_from_engine
from ..registry import Generator, register

SOURCE = "gpus.md, 'Beyond the node level' and 'Quiz 3: Beyond the node level'"
CHIPS = ("h100", "b200")
#: multiples of 128 GPUs (16 nodes of 8) up to 2048: two levels of 64-port switches reach 2048 GPUs at full
#: bisection; a cluster that is not a whole number of scalable units still gets whole units of leaf switches
SIZES = tuple(range(128, 2049, 128))


def draw(rng):
    return {"chip": pick(rng, CHIPS), "gpus": pick(rng, SIZES)}


def _counted(answer):
    """A count the engine gives as a product or a sum of whole counts: already whole."""
    return dataclasses.replace(answer, kind="whole", rounding="up", unrounded=answer.value)


def solve(p):
    chip, n = p["chip"], {"n_dev": p["gpus"]}
    return [whole_from_engine(ask("nodes", "NVLink nodes", "gpu.cluster.nodes", chip=chip, given=n), "up"),
            _counted(ask("leaf", "leaf switches", "gpu.cluster.leaf_switches", chip=chip, given=n)),
            whole_from_engine(ask("spine", "spine switches", "gpu.cluster.spine_switches", chip=chip, given=n), "up"),
            whole_from_engine(ask("cables", "cables between each leaf and each spine switch",
                                  "gpu.cluster.cables_per_leaf_spine", chip=chip, given=n), "down"),
            _counted(ask("switches", "switches in all, NVSwitches included", "gpu.cluster.switches", chip=chip,
                         given=n)),
            ask("egress", "scale-out egress of one node", "gpu.node.egress", chip=chip)]


def check(p):
    c = get_chip(p["chip"])
    ports = default_catalog().switch(c.scaleout_switch).ports
    nodes = -(-p["gpus"] // c.nvlink_domain)
    units = -(-nodes // c.su_nodes)
    down = ports // 2  # a leaf gives half its ports to the nodes, one cable per GPU
    leaf_per_su = -(-(c.su_nodes * c.nvlink_domain) // down)
    leaf = units * leaf_per_su
    uplinks = leaf * (ports - down)
    spine = -(-uplinks // ports)
    cables = (ports - down) // spine  # a leaf's uplinks spread evenly over every spine
    return {"nodes": nodes, "nodes.unrounded": Fraction(p["gpus"], c.nvlink_domain),
            "leaf": leaf, "leaf.unrounded": leaf, "spine": spine,
            "spine.unrounded": Fraction(uplinks, ports),
            "cables": cables, "cables.unrounded": Fraction(ports - down, spine),
            "switches": nodes * c.nvswitches + leaf + spine, "switches.unrounded": nodes * c.nvswitches + leaf + spine,
            "egress": c.nvlink_domain * c.nic_bytes_per_s}


register(Generator("gpu_superpod", "gpu", "Sizing a SuperPod: nodes, leaf and spine switches, cables",
                   SOURCE, draw, solve, check))
