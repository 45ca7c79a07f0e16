"""Sizing a DGX SuperPod-like cluster (gpus.md, 'Beyond the node level' and Quiz 3): for n GPUs, the NVLink
nodes, the leaf switches (half of each switch's ports facing the nodes, one cable per GPU), the spine
switches of a two-level fat tree with full bisection, the cables between each leaf and each spine, all
switches counted (NVSwitches in the nodes too), and one node's scale-out egress.

Cables are whole and the same for every leaf-spine pair, so when the spines do not divide a leaf's k/2 uplinks
(3 spines per unit: 8/3 cables, 2 of them) some uplinks stay empty and the tree falls short of full bisection:
the problem asks what share of it is kept (issue 28: it promised full bisection and rounded the cables down).
Switches and cables are counted as switches and cables (the engine's steps count "units").

Engine route: ``gpu.cluster.nodes``, ``gpu.cluster.leaf_switches``, ``gpu.cluster.spine_switches``,
``gpu.cluster.cables_per_leaf_spine``, ``gpu.cluster.switches`` and ``gpu.node.egress`` on the drawn chip, and
the share of full bisection as a derivation built on the cables' (cabled uplinks over k/2). Second route: the
hand count of Quiz 3 (ports of each leaf, uplinks shared over the spines) in integers.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ... import quantities
from ...cache import persistent
from ...catalog.hardware import default_catalog, get_chip
from ...symbolic.derivation import Derivation, Step
from ...symbolic.symbols import sym
from ..draws import ask, pick, relabelled, whole_from_engine
from ..model import Answer
from ..registry import Generator, register

SOURCE = "gpus.md, 'Beyond the node level' and 'Quiz 3: Beyond the node level'"
CHIPS = ("h100", "b200")
#: multiples of 128 GPUs (16 nodes of 8) up to 2048: two levels of 64-port switches reach 2048 GPUs at full
#: bisection; a cluster that is not a whole number of scalable units still gets whole units of leaf switches
SIZES = tuple(range(128, 2049, 128))


def draw(rng):
    return {"chip": pick(rng, CHIPS), "gpus": pick(rng, SIZES)}


#: What each step of the engine's sizing counts (its own steps say "unit"; scalable units stay units).
COUNTED = {r"n_{\mathrm{leaf/SU}}": "switch", r"n_{\mathrm{leaf}}": "switch", r"n_{\mathrm{spine}}": "switch",
           r"n_{\mathrm{switches}}": "switch", r"\mathrm{cables}": "cable"}
#: The egress step's reason, for any chip (the engine's names the GB200 NVL72's NICs, wrong beside a B200 node).
EGRESS_WHY = {r"W_{\mathrm{node}}": "one network card per GPU, D_node of them in each node"}


def _counted(answer):
    """A count the engine gives as a product or a sum of whole counts: already whole."""
    return dataclasses.replace(answer, kind="whole", rounding="up", unrounded=answer.value)


@persistent
def _bisection() -> Derivation:
    """The cables' derivation, then the uplinks of a leaf they use and that share of its k/2 uplinks: the share
    of full bisection bandwidth the tree keeps (1 when the spines divide the uplinks evenly)."""
    cables = quantities.get("gpu.cluster.cables_per_leaf_spine").derivation
    spines = next(st for st in cables.steps if st.label == r"n_{\mathrm{spine}}")
    used = Step(r"u_{\mathrm{leaf}}", cables.expr * spines.expr,
                "uplinks of each leaf that are cabled: the cables to each spine switch times the spine switches",
                "cable")
    return Derivation("share of full bisection bandwidth a two-level fat tree keeps with whole cables", cables.steps + (
        used, Step(r"f_{\mathrm{bisection}}", used.expr / (sym("k_sw") / 2),
                   "the cabled uplinks over each leaf's k/2: the share of full bisection bandwidth kept", "1")),
        SOURCE + "; the share kept: cabled uplinks over k/2")


def _share(chip: str, n: dict) -> Answer:
    given = quantities.bind(quantities.get("gpu.cluster.cables_per_leaf_spine"), quantities.Context(chip=chip), n)
    ev = _bisection().at(given)
    return relabelled(Answer("bisection", "share of full bisection bandwidth the whole cables keep", ev.value, "1",
                             ev), COUNTED)


def solve(p):
    chip, n = p["chip"], {"n_dev": p["gpus"]}

    def ask_counted(name, description, quantity):
        return relabelled(ask(name, description, quantity, chip=chip, given=n), COUNTED)

    return [whole_from_engine(ask("nodes", "NVLink nodes", "gpu.cluster.nodes", chip=chip, given=n), "up"),
            _counted(ask_counted("leaf", "leaf switches", "gpu.cluster.leaf_switches")),
            whole_from_engine(ask_counted("spine", "spine switches", "gpu.cluster.spine_switches"), "up"),
            whole_from_engine(ask_counted("cables", "cables between each leaf and each spine switch",
                                          "gpu.cluster.cables_per_leaf_spine"), "down"),
            _share(chip, n),
            _counted(ask_counted("switches", "switches in all, NVSwitches included", "gpu.cluster.switches")),
            relabelled(ask("egress", "scale-out egress of one node", "gpu.node.egress", chip=chip), whys=EGRESS_WHY)]


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
            "bisection": Fraction(cables * spine, ports - down),  # uplinks cabled over uplinks a leaf has
            "switches": nodes * c.nvswitches + leaf + spine, "switches.unrounded": nodes * c.nvswitches + leaf + spine,
            "egress": c.nvlink_domain * c.nic_bytes_per_s}


register(Generator("gpu_superpod", "gpu", "Sizing a SuperPod: nodes, leaf and spine switches, cables",
                   SOURCE, draw, solve, check))
