"""Derive a switch's byte accounting in an AllReduce with in-network reduction (gpus.md, 'Intra-node
collectives', SHARP, and Quiz 4): what each GPU sends, what passes through the NVSwitch, and how much less a GPU
sends than in a ring AllReduce.

Framing drawn: the array's name, its two dimension names, element type and the letter of the GPU count. Key: the
engine's ``gpu.sharp.bytes_per_gpu`` (its ring step and its SHARP step) and ``gpu.sharp.switch_bytes`` in the
problem's names. Second route: the shards counted by hand (each GPU sends its G - 1 foreign partial shards of
V/G to the switch and its own reduced shard back out for the multicast; the switch takes in every GPU's partials
and the reduced shards, and sends as much out), and a ring's ReduceScatter plus AllGather, (G - 1)/G of V each.
"""

from __future__ import annotations

import sympy as sp

from ...symbolic.derivation import Derivation, Step
from ..draws import pick
from ..registry import Generator, register
from .derive_common import DIM_PAIRS, DTYPES, engine_form, formula, name

SOURCE = "gpus.md, 'Intra-node collectives' (SHARP) and 'Quiz 4: Collectives'"
ARRAYS = ("Grad", "A", "Out", "Act")
GPUS = ("G", "P", "R")


def draw(rng):
    d1, d2 = pick(rng, DIM_PAIRS)
    dtype = pick(rng, tuple(DTYPES))
    return {"array": pick(rng, ARRAYS), "d1": d1, "d2": d2, "dtype": dtype, "bytes": DTYPES[dtype],
            "gpus": pick(rng, GPUS)}


def _symbols(p):
    return ((p["d1"], f"size of dimension {p['d1']} of {p['array']}"),
            (p["d2"], f"size of dimension {p['d2']} of {p['array']}"),
            (p["gpus"], "GPUs in the node, all on one NVSwitch fabric"))


def _V(p):
    return p["bytes"] * name(p["d1"]) * name(p["d2"])


def solve(p):
    subs = {"V": _V(p), "N": name(p["gpus"])}
    gpu = engine_form("gpu.sharp.bytes_per_gpu", subs)
    switch = engine_form("gpu.sharp.switch_bytes", subs)
    ring, sharp = gpu.steps[0], gpu.steps[-1]
    ratio = Derivation("bytes a GPU sends: ring over SHARP", (ring, sharp, Step(
        r"\mathrm{ratio}", sp.cancel(ring.expr / sharp.expr),
        "a ring sends each byte twice less the GPU's own shard; SHARP sends each once", "1")), gpu.source)
    return [formula("gpu_bytes", "bytes each GPU sends to the switch", gpu, _symbols(p)),
            formula("switch_bytes", "bytes the switch takes in (and sends out)", switch, _symbols(p)),
            formula("ratio", "bytes a GPU sends in a ring AllReduce over those it sends with SHARP", ratio,
                    _symbols(p))]


def check(p):
    V, G = _V(p), name(p["gpus"])
    shard = V / G
    gpu = (G - 1) * shard + shard  # foreign partials in, then its own reduced shard out for the multicast
    switch = G * (G - 1) * shard + G * shard  # every GPU's partials, then every reduced shard
    ring = 2 * (G - 1) * shard  # ReduceScatter then AllGather
    return {"gpu_bytes": sp.expand(gpu), "switch_bytes": sp.expand(switch), "ratio": sp.cancel(ring / gpu)}


register(Generator("derive_switch_bytes", "gpu", "Derive: the bytes through a switch in a SHARP AllReduce",
                   SOURCE, draw, solve, check))
