"""AllToAll inside one NVLink node against the same AllToAll across M nodes (gpus.md, 'Cross-node collectives').

The AllToAll is the dispatch of expert parallelism, so the model is drawn from the catalog's mixtures of
experts (``Model.is_moe``; a dense model has no experts to spread), with its own width D and experts per token
k (each token's activations go to k experts: the AllToAll moves k copies), and with at least one expert per
device in both layouts (N <= E and M N <= E). The answer ``ratio`` is the time across nodes over the time
inside one node: above 1 in most draws (a node's egress is shared by its GPUs), below 1 when many nodes' egress
together outrun one node's NVLink; the key says which.

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
from ...catalog.models import default_models, get_model
from ..draws import ask, pick, pow2
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = "gpus.md, 'Intra-node collectives' and 'Cross-node collectives' (AllToAll across nodes)"
CHIPS = ("h100", "h100", "h200", "b200", "gb200")
NODES = (2, 2, 4, 8, 16, 32)


def moe_models() -> tuple[str, ...]:
    """The catalog's mixtures of experts (keys, catalog order): the only models with experts to spread."""
    return tuple(m.key for m in default_models() if m.is_moe)


@persistent
def _ratio() -> Derivation:
    inside, across = coll.gpu_all_to_all_time().result, coll.gpu_all_to_all_cross_node_time().result
    return Derivation("time of an AllToAll across nodes over its time inside one node", (
        Step(r"T_{\mathrm{node}}", inside.expr, "the AllToAll over the N GPUs of one node, on NVLink", "s"),
        Step(r"T_{\mathrm{cross}}", across.expr, "the same bytes over M nodes, through each node's egress", "s"),
        Step(r"T_{\mathrm{cross}} / T_{\mathrm{node}}", across.expr / inside.expr, "the ratio of the two times", "1"),
    ), SOURCE)


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    model = get_model(pick(rng, moe_models()))
    nodes = [m for m in NODES if m * chip.nvlink_domain <= model.E]
    reject_if(chip.nvlink_domain > model.E or not nodes,
              f"{model.name}'s {model.E} experts must give every device at least one, inside a node and across nodes")
    return {"chip": chip.key, "M": pick(rng, nodes), "model": model.name, "E": model.E, "k": model.k,
            "tokens": pow2(rng, 14, 18), "D": model.D}


def _bytes(p) -> int:
    """V: bf16 activations of every token, one copy for each of the k experts it is routed to."""
    return 2 * p["tokens"] * p.get("k", 1) * p["D"]


def solve(p):
    v = _bytes(p)
    chip = get_chip(p["chip"])
    n = chip.nvlink_domain
    t_node = ask("t_node", "AllToAll inside one node", "gpu.all_to_all.time", chip=p["chip"], given={"V": v, "N": n})
    t_cross = ask("t_cross", "AllToAll across M nodes", "gpu.all_to_all.cross_node_time", chip=p["chip"],
                  given={"V": v, "M_nodes": p["M"]})
    d = _ratio()
    ev = d.at(quantities.bind(quantities.get("gpu.all_to_all.time"), quantities.Context(chip=p["chip"]),
                              {"V": v, "N": n})
              | quantities.bind(quantities.get("gpu.all_to_all.cross_node_time"),
                                quantities.Context(chip=p["chip"]), {"V": v, "M_nodes": p["M"]}))
    return [t_node, t_cross, Answer("ratio", "time across nodes over the time inside one node",
                                    ev.value, "1", ev)]


def check(p):
    chip = get_chip(p["chip"])
    v = 2 * p["tokens"] * p.get("k", 1) * p["D"]
    n, m = chip.nvlink_domain, p["M"]
    w_gpu = Fraction(chip.nvlink_bytes_per_s)
    w_node = Fraction(chip.nic_bytes_per_s * n)
    t_node = Fraction(v * (n - 1), n * n) / w_gpu   # N - 1 pieces of V/N^2 leave each GPU
    t_cross = Fraction(v * (m - 1), m * m) / w_node  # M - 1 pieces of V/M^2 leave each node
    return {"t_node": t_node, "t_cross": t_cross, "ratio": t_cross / t_node}


register(Generator("gpu_cross_node_alltoall", "gpu", "AllToAll inside a node and across nodes",
                   SOURCE, draw, solve, check))
