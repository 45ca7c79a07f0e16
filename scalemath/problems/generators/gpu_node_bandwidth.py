"""Peak and bisection bandwidth of an NVLink node from its switches, ports and links (gpus.md, Quiz 2).

No registered quantity covers a node's capacity, so the derivation is built here from existing
symbols: ``links`` (NVLink ports per GPU), ``W_link`` (one link, one direction) and ``D_node``
(GPUs per node); the switches' port count enters as a number. The node's peak is the smaller of
what its switches can carry and what its GPUs can send; the bisection bandwidth counts both
halves sending across the cut at full egress. Second route: plain Fractions on the catalog fields.

Ports per NVSwitch chip are not in the catalog: 64 for the third-generation NVSwitch of H100 and
H200 nodes (the book's figure), 36 for the second generation (A100) and 72 for the NVLink 5
switch chip of B200 and GB200 systems (vendor figures, consistent with 8 x 18 = 2 x 72 and
72 x 18 = 18 x 72 GPU links).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...cache import persistent
from ...catalog.hardware import get_chip
from ...symbolic.derivation import Derivation, Step
from ...symbolic.symbols import sym
from ..draws import pick
from ..model import Answer
from ..registry import Generator, register

SOURCE = "gpus.md, 'At the node level' and 'Quiz 2: GPU nodes'"
CHIPS = ("h100", "h100", "h200", "a100", "b200", "gb200")
PORTS = {"a100": 36, "h100": 64, "h200": 64, "b200": 72, "gb200": 72}
links, W_link, D_node = sym("links"), sym("W_link"), sym("D_node")


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    return {"chip": chip.key, "switches": chip.nvswitches, "ports": PORTS[chip.key]}


@persistent
def _derivations(switches: int, ports: int) -> dict[str, Derivation]:
    w_gpu = Step(r"W_{\mathrm{gpu}}", links * W_link, "a GPU's NVLink ports, each one link at W_link one way", "byte/s")
    gpus = Step(r"W_{\mathrm{GPUs}}", D_node * links * W_link, "every GPU of the node sending at full egress", "byte/s")
    switch = Step(r"W_{\mathrm{switches}}", sp.Integer(switches * ports) * W_link,
                  f"{switches} NVSwitches of {ports} ports, every port one link at W_link", "byte/s")
    peak = Step(r"W_{\mathrm{peak}}", sp.Min(gpus.expr, switch.expr),
                "all traffic leaves a GPU and crosses a switch: the smaller capacity limits the node", "byte/s")
    half = Step(r"W_{\mathrm{half}}", D_node / 2 * links * W_link,
                "cut the node into two halves: the D_node/2 GPUs of one half send across the cut at full egress",
                "byte/s")
    bisection = Step(r"W_{\mathrm{bisection}}", 2 * half.expr, "the other half sends as much the other way", "byte/s")
    return {"w_gpu": Derivation("NVLink egress of one GPU", (w_gpu,), SOURCE),
            "gpu_cap": Derivation("egress of all the node's GPUs", (w_gpu, gpus), SOURCE),
            "switch_cap": Derivation("capacity of the node's NVSwitches", (switch,), SOURCE),
            "peak": Derivation("peak bandwidth of the node", (gpus, switch, peak), SOURCE),
            "bisection": Derivation("bisection bandwidth of the node, both directions", (half, bisection), SOURCE)}


DESCRIPTIONS = {"w_gpu": "NVLink egress of one GPU", "gpu_cap": "egress of all GPUs together",
                "switch_cap": "capacity of all NVSwitches", "peak": "peak bandwidth of the node",
                "bisection": "bisection bandwidth, both directions"}


def solve(p):
    chip = get_chip(p["chip"])
    values = {links: chip.nvlink_links, W_link: chip.nvlink_link_bytes_per_s, D_node: chip.nvlink_domain}
    out = []
    for name, d in _derivations(p["switches"], p["ports"]).items():
        ev = d.at(values)
        out.append(Answer(name, DESCRIPTIONS[name], ev.value, "byte/s", ev))
    return out


def check(p):
    chip = get_chip(p["chip"])
    link = Fraction(chip.nvlink_link_bytes_per_s)
    w_gpu = chip.nvlink_links * link
    gpus = chip.nvlink_domain * w_gpu
    switches = chip.nvswitches * PORTS[chip.key] * link
    return {"w_gpu": w_gpu, "gpu_cap": gpus, "switch_cap": switches, "peak": min(gpus, switches),
            "bisection": 2 * (chip.nvlink_domain // 2) * w_gpu}


#: the answers depend on the chip alone, and H100 and H200 nodes have the same links and switches: 4 variants
register(Generator("gpu_node_bandwidth", "gpu", "Peak and bisection bandwidth of an NVLink node",
                   SOURCE, draw, solve, check, variants=4))
