"""Which axes of a TPU slice wrap around, and how far apart can two chips be? (tpus.md, 'TPU Networking')."""

from __future__ import annotations

from ...catalog.hardware import get_chip
from ...symbolic import tpu
from ...symbolic.symbols import sym
from ..draws import ask, choice, pick
from ..model import Answer
from ..registry import Generator, register, reject_if

CHIPS = ("tpu-v5e", "tpu-v6e", "tpu-v4p", "tpu-v5p")
SIDES_2D = (2, 4, 8, 16)
#: 3D slices: small ones of 2s and 4s (open rings), and ones made of whole 4x4x4 cubes (multiples of 4)
SHAPES_3D = ((2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4), (2, 2, 8), (2, 4, 8), (2, 8, 8), (4, 4, 4), (4, 4, 8),
             (4, 8, 8), (8, 8, 8), (4, 4, 12), (8, 8, 12), (12, 12, 12), (4, 4, 16), (4, 8, 16), (8, 8, 16),
             (4, 16, 16), (8, 16, 16), (12, 16, 16), (16, 16, 16))


def _text(shape) -> str:
    return "x".join(str(n) for n in shape)


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    if chip.wraparound == "size16":
        shape = (pick(rng, SIDES_2D), pick(rng, SIDES_2D))
    elif rng.randrange(5) == 0:
        shape = chip.pod_shape
    else:
        shape = pick(rng, SHAPES_3D)
        reject_if(any(a > b for a, b in zip(sorted(shape), sorted(chip.pod_shape))),
                  "the slice must fit inside the pod")
    reject_if(max(shape) == 1, "a single chip has no links to cross")
    wraps = chip.wraps(tuple(shape))
    longest = max(range(len(shape)), key=lambda i: shape[i])
    return {"chip": chip.key, "shape": _text(shape), "rule": chip.wraparound,
            "wrapping": ", ".join("XYZ"[i] for i, w in enumerate(wraps) if w) or "none",
            "longest": shape[longest], "longest_wraps": int(wraps[longest])}


def wrap_choices(n_axes: int) -> tuple[str, ...]:
    """The choices of "which axes wrap around?": every set of the slice's axes, from none to all."""
    axes = "XYZ"[:n_axes]
    sets = [[a for i, a in enumerate(axes) if mask >> i & 1] for mask in range(2 ** n_axes)]
    sets.sort(key=lambda s: (len(s), s))
    return tuple("none" if not s else s[0] + " only" if len(s) == 1 else
                 ", ".join(s[:-1]) + " and " + s[-1] for s in sets)


def _wrap_index(wraps) -> int:
    """The index in wrap_choices of the axes that wrap."""
    chosen = [a for a, w in zip("XYZ", wraps) if w]
    text = "none" if not chosen else chosen[0] + " only" if len(chosen) == 1 else \
        ", ".join(chosen[:-1]) + " and " + chosen[-1]
    return wrap_choices(len(wraps)).index(text)


def solve(p):
    chip = get_chip(p["chip"])
    shape = tuple(int(n) for n in p["shape"].split("x"))
    wraps = chip.wraps(shape)
    values = {sym(axis): n for axis, n in zip("XYZ", shape)}
    wrapping = choice("wrapping", "which axes of the slice wrap around?", wrap_choices(len(shape)),
                      _wrap_index(wraps))
    diameter = tpu.torus_diameter(wraps).at(values)
    ring = "torus.max_hops_wraparound" if p["longest_wraps"] else "torus.max_hops_no_wraparound"
    return [wrapping,
            Answer("diameter", "largest hop count between two chips of the slice", diameter.value,
                   "hop", diameter),
            ask("longest_axis", "largest hop count along the longest axis", ring,
                given={"N": p["longest"]})]


def _axis_wraps(rule: str, shape: tuple[int, ...]) -> list[bool]:
    if rule == "size16":  # inference chips: a 16x16 pod is one torus; an axis wraps only at full length
        return [n == 16 for n in shape]
    # v4p, v5p: the optical switches close the rings only for slices made of whole 4x4x4 cubes
    whole = len(shape) == 3 and all(n % 4 == 0 for n in shape)
    return [whole] * len(shape)


def _listed(n_axes: int) -> list[str]:
    """The choices as the question lists them, written out by hand for two and three axes."""
    return {2: ["none", "X only", "Y only", "X and Y"],
            3: ["none", "X only", "Y only", "Z only", "X and Y", "X and Z", "Y and Z", "X, Y and Z"]}[n_axes]


def _hops(n: int, wraps: bool) -> int:
    # walk the ring both ways with wraparound; only one way along an open line
    return max(min(k, n - k) if wraps else k for k in range(n))


def check(p):
    chip = get_chip(p["chip"])
    shape = tuple(int(n) for n in p["shape"].split("x"))
    wraps = _axis_wraps(chip.wraparound, shape)
    longest = max(range(len(shape)), key=lambda i: shape[i])
    axes = "XYZ"[:len(shape)]
    wrapping = sorted((a for a, w in zip(axes, wraps) if w), key=axes.index)
    names = {0: "none", 1: "".join(wrapping) + " only"}.get(len(wrapping)) or \
        ", ".join(wrapping[:-1]) + " and " + wrapping[-1]
    return {"wrapping": _listed(len(shape)).index(names),
            "diameter": sum(_hops(n, w) for n, w in zip(shape, wraps)),
            "longest_axis": _hops(shape[longest], wraps[longest])}


register(Generator("tpu_torus_hops", "tpu", "Wraparound and hop counts in a TPU slice",
                   "tpus.md, 'TPU Networking'", draw, solve, check))
