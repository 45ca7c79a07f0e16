"""AllToAll inside one NVLink node against the same AllToAll across M nodes (gpus.md, 'Cross-node collectives').

Inside a node each GPU sends V/N^2 bytes to each of the N - 1 others over NVLink; across M
nodes each node sends V/M^2 bytes to each of the M - 1 others through its scale-out egress
W_node (from the catalog: one NIC per GPU). Engine route: ``gpu.all_to_all.time`` and
``gpu.all_to_all.cross_node_time``, and their ratio as a derivation built from the two
results. Second route: plain Fractions.
"""

from __future__ import annotations

from fractions import Fraction

from ... import quantities
from ...cache import persistent
from ...catalog.hardware import get_chip
from ...symbolic import collectives as coll
from ...symbolic.derivation import Derivation, Step
from ..draws import MODEL_SHAPES, ask, pick, pow2
from ..model import Answer
from ..registry import Generator, register

SOURCE = "gpus.md, 'Intra-node collectives' and 'Cross-node collectives' (AllToAll across nodes)"
CHIPS = ("h100", "h100", "h200", "b200", "gb200")
NODES = (2, 2, 4, 8, 16, 32)


@persistent
def _slowdown() -> Derivation:
    inside, across = coll.gpu_all_to_all_time().result, coll.gpu_all_to_all_cross_node_time().result
    return Derivation("slowdown of an AllToAll that leaves the node", (
        Step(r"T_{\mathrm{node}}", inside.expr, "the AllToAll over the N GPUs of one node, on NVLink", "s"),
        Step(r"T_{\mathrm{cross}}", across.expr, "the same bytes over M nodes, through each node's egress", "s"),
        Step(r"T_{\mathrm{cross}} / T_{\mathrm{node}}", across.expr / inside.expr, "the ratio of the two times", "1"),
    ), SOURCE)


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    model, d, _ = pick(rng, MODEL_SHAPES)
    return {"chip": chip.key, "M": pick(rng, NODES), "model": model, "tokens": pow2(rng, 14, 18), "D": d}


def solve(p):
    v = 2 * p["tokens"] * p["D"]
    chip = get_chip(p["chip"])
    n = chip.nvlink_domain
    t_node = ask("t_node", "AllToAll inside one node", "gpu.all_to_all.time", chip=p["chip"], given={"V": v, "N": n})
    t_cross = ask("t_cross", "AllToAll across M nodes", "gpu.all_to_all.cross_node_time", chip=p["chip"],
                  given={"V": v, "M_nodes": p["M"]})
    d = _slowdown()
    ev = d.at(quantities.bind(quantities.get("gpu.all_to_all.time"), quantities.Context(chip=p["chip"]),
                              {"V": v, "N": n})
              | quantities.bind(quantities.get("gpu.all_to_all.cross_node_time"),
                                quantities.Context(chip=p["chip"]), {"V": v, "M_nodes": p["M"]}))
    return [t_node, t_cross, Answer("slowdown", "time across nodes over the time inside one node", ev.value, "1", ev)]


def check(p):
    chip = get_chip(p["chip"])
    v = 2 * p["tokens"] * p["D"]
    n, m = chip.nvlink_domain, p["M"]
    w_gpu = Fraction(chip.nvlink_bytes_per_s)
    w_node = Fraction(chip.nic_bytes_per_s * n)
    t_node = Fraction(v * (n - 1), n * n) / w_gpu   # N - 1 pieces of V/N^2 leave each GPU
    t_cross = Fraction(v * (m - 1), m * m) / w_node  # M - 1 pieces of V/M^2 leave each node
    return {"t_node": t_node, "t_cross": t_cross, "slowdown": t_cross / t_node}


register(Generator("gpu_cross_node_alltoall", "gpu", "AllToAll inside a node and across nodes",
                   SOURCE, draw, solve, check))
