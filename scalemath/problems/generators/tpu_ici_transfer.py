"""Sending an array from one chip to another over ICI: latency plus bulk time (tpus.md, Q5)."""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ...symbolic import tpu
from ...symbolic.derivation import Derivation
from ...symbolic.symbols import sym
from ..draws import pick, pow2
from ..model import Answer
from ..registry import Generator, register, reject_if

CHIPS = ("tpu-v5e", "tpu-v5e", "tpu-v6e", "tpu-v4p", "tpu-v5p")
#: slices with no wraparound, so the shortest path is the plain mesh distance
SIDES_2D = (2, 4, 8)
SHAPES_3D = ((2, 2, 2), (2, 2, 4), (2, 4, 4))


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    if chip.wraparound == "size16":
        shape = (pick(rng, SIDES_2D), pick(rng, SIDES_2D))
    else:
        shape = pick(rng, SHAPES_3D)
    dst = tuple(rng.randrange(n) for n in shape)
    reject_if(not any(dst), "the destination must be another chip")
    dims = (pow2(rng, 0, 5), pow2(rng, 7, 10), pow2(rng, 10, 14))
    return {"chip": chip.key, "slice": "x".join(map(str, shape)), "dst": ", ".join(map(str, dst)),
            "src": ", ".join("0" for _ in shape), "dims": "x".join(map(str, dims)),
            "hops": sum(dst), "links": sum(1 for k in dst if k)}


def _bytes(p) -> int:
    out = 2  # bf16
    for n in p["dims"].split("x"):
        out *= int(n)
    return out


def solve(p):
    chip = get_chip(p["chip"])
    full = tpu.p2p_time()
    values = {sym("bytes"): _bytes(p), sym("hops"): p["hops"], sym("links"): p["links"],
              sym("W_link"): chip.ici_link_bytes_per_s, sym("t_hop"): chip.hop_latency_s}
    answers = []
    # one answer per step of the engine's derivation: latency, bulk, and their sum
    for step, (name, description) in zip(full.steps, (
            ("latency", "time for the first byte to arrive"),
            ("bulk", "time to stream every byte over the links"),
            ("total", "total transfer time"))):
        ev = Derivation(description, (step,), full.source).at(values)
        answers.append(Answer(name, description, ev.value, "s", ev))
    return answers


def check(p):
    chip = get_chip(p["chip"])
    dst = [int(k) for k in p["dst"].split(", ")]
    hops = sum(dst)                      # no wraparound: walk each axis from 0 to its coordinate
    links = sum(1 for k in dst if k)     # one outgoing link per axis the message travels along
    latency = hops * Fraction(chip.hop_latency_ns, 10**9)
    bulk = Fraction(_bytes(p), links * chip.ici_link_bytes_per_s)
    return {"latency": latency, "bulk": bulk, "total": latency + bulk}


register(Generator("tpu_ici_transfer", "tpu", "A point-to-point transfer over ICI",
                   "tpus.md, 'Worked Problems' (Q5)", draw, solve, check))
