"""Which axes of a TPU slice wrap around, and what an AllGather costs along an open axis and along a ring
(tpus.md, 'TPU networking' and the wraparound rules; sharding.md, the AllGather's cost).

Engine route: :meth:`scalemath.catalog.hardware.Chip.wraps` says which axes of the slice are rings (v5e and v6e
only at 16 chips, v4p and v5p in whole 4x4x4 cubes); the AllGather of one array sharded along an axis is
priced by :func:`scalemath.symbolic.sharded_cost.collective_cost` with that wraparound: a bidirectional
ring, or an open line whose end chip receives through a single link and waits N - 1 hops. The axis's
time with the other kind of link (what wraparound buys, or what its absence costs) comes from the same
function with the wraparound flipped.

Second route: the bytes on the busiest link, counted by hand. On a ring the array's halves travel around
two opposite unidirectional rings, so each link carries (N - 1) chunks of V/(2N) in each direction; on a
line the end chip must receive every other chip's shard, (N - 1)V/N bytes, through its one link. The time
is that count over the raw one-way link bandwidth of the catalog, or the hops to the farthest chip (N/2 on
a ring, N - 1 on a line) times the hop latency, whichever is larger.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ...symbolic.derivation import Derivation, Step
from ...symbolic.notation import parse_array
from ...symbolic.sharded_cost import collective_cost
from ...symbolic.sharding import Collective
from ...symbolic.symbols import sym
from ..draws import MODEL_SHAPES, choice, pick
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = ("tpus.md, 'TPU networking' (wraparound links, slices of whole cubes, v5e's 16-chip axes); "
          "sharding.md, 'Our first communication primitive: the AllGather'")
#: (chip, slice shapes): the generations whose catalog entry states a wraparound rule
SLICES = (
    ("tpu-v5e", ((4, 8), (8, 4), (8, 16), (16, 8), (4, 16), (16, 4))),
    ("tpu-v6e", ((4, 8), (8, 16), (16, 8), (16, 4))),
    ("tpu-v5p", ((4, 8, 8), (8, 4, 4), (4, 8, 2), (8, 4, 2), (4, 16, 4), (8, 16, 16), (16, 8, 4))),
    ("tpu-v4p", ((4, 8, 8), (8, 4, 4), (4, 8, 2), (8, 4, 2), (16, 8, 8))),
)
AXES = ("X", "Y", "Z")
WRAP = ("wraps around (a ring)", "open (a line with two ends)")
BYTES = 2  # bf16


def draw(rng):
    chip_key, shapes = pick(rng, SLICES)
    shape = pick(rng, shapes)
    reject_if(shape[0] < 4 or shape[1] < 4, "the two axes asked about have at least 4 chips")
    reject_if(shape[0] == shape[1], "the two axes asked about differ in length")
    model, d, f = pick(rng, MODEL_SHAPES)
    chip = get_chip(chip_key)
    return {"chip": chip_key, "rule": chip.wraparound, "slice": "x".join(map(str, shape)), "dims": len(shape),
            "model": model, "D": d, "F": f, "V": BYTES * d * f,
            "x_wraps": int(chip.wraps(shape)[0])}


def _shape(p) -> tuple[int, ...]:
    return tuple(int(n) for n in p["slice"].split("x"))


def _time(p, axis: str, ring: bool, title: str) -> Derivation:
    """The AllGather of the [D, F] weight sharded along ``axis``, priced as a ring or an open line."""
    shape = _shape(p)
    mesh = dict(zip(AXES, shape))
    before = parse_array(f"W[D_{axis}, F]", mesh)
    after = parse_array("W[D, F]", mesh)
    c = Collective("AllGather", (axis,), before, after, sym("V"), mesh[axis])
    cost, how = collective_cost(c, mesh, "tpu", None, {axis: ring})
    steps = (Step(rf"T_{{\mathrm{{AG}},{axis}}}", cost, how, "s"),)
    return Derivation(title, steps, SOURCE)


def _values(p) -> dict:
    chip = get_chip(p["chip"])
    return {sym("V"): p["V"], sym("W_ici"): chip.bandwidth("ici"), sym("t_hop"): chip.hop_latency_s}


def solve(p):
    chip = get_chip(p["chip"])
    shape = _shape(p)
    rings = chip.wraps(shape)
    values = _values(p)
    out = [choice(f"wrap_{a}", f"does axis {a} ({n} chips) wrap around?", WRAP, 0 if ring else 1)
           for a, n, ring in zip(AXES, shape, rings)]
    parts = (("t_X", "X", rings[0], "AllGather along X as the slice is wired"),
             ("t_Y", "Y", rings[1], "AllGather along Y as the slice is wired"),
             ("t_X_other", "X", not rings[0],
              "AllGather along X with the other kind of axis (" + ("an open line" if rings[0] else "a ring") + ")"))
    for name, axis, ring, description in parts:
        ev = _time(p, axis, ring, description).at(values)
        out.append(Answer(name, description, ev.value, "s", ev))
    return out


# -- second route: the busiest link's bytes, counted by hand --------------------------------------------

def _by_hand(p, n: int, ring: bool) -> Fraction:
    chip = get_chip(p["chip"])
    link = Fraction(chip.ici_link_bytes_per_s)      # one link, one direction
    hop = Fraction(chip.hop_latency_ns, 10**9)
    v = Fraction(p["V"])
    if ring:   # two opposite rings, each moving half of the array: every link passes n - 1 chunks of V/(2n)
        busiest, hops = (n - 1) * v / (2 * n), Fraction(n, 2)
    else:      # the end chip receives the n - 1 other shards through its single link
        busiest, hops = (n - 1) * v / n, Fraction(n - 1)
    return max(busiest / link, hops * hop)


def _wraps_by_hand(rule: str, shape) -> list[bool]:
    if rule == "size16":   # an axis of a v5e/v6e slice wraps only when it spans the pod's 16 chips
        return [n == 16 for n in shape]
    whole = all(n % 4 == 0 for n in shape)  # v4p/v5p: whole 4x4x4 cubes wrap on every axis
    return [whole] * len(shape)


def check(p):
    shape = _shape(p)
    rings = _wraps_by_hand(p["rule"], shape)
    out = {f"wrap_{a}": 0 if ring else 1 for a, ring in zip(AXES, rings)}
    out["t_X"] = _by_hand(p, shape[0], rings[0])
    out["t_Y"] = _by_hand(p, shape[1], rings[1])
    out["t_X_other"] = _by_hand(p, shape[0], not rings[0])
    return out


register(Generator("tpu_wraparound_cost", "tpu", "Which axes wrap, and what an open axis costs an AllGather",
                   SOURCE, draw, solve, check))
