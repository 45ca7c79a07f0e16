"""Local shape and memory of a sharded array: per device and over the whole mesh (sharding.md).

The engine route is :func:`scalemath.symbolic.sharding.local_shape` and ``array_bytes`` applied
to the drawn array with symbolic sizes (I, J) and mesh axes (X, Y, Z), so every step stays a
formula until :meth:`Derivation.at` substitutes the numbers. The second route parses the
sharding text itself and does the arithmetic with integers.
"""

from __future__ import annotations

import re
from fractions import Fraction

import sympy as sp

from ...cache import persistent
from ...catalog.hardware import dtype_bytes
from ...symbolic.derivation import Derivation, Step
from ...symbolic.notation import parse_array
from ...symbolic.sharding import array_bytes, local_shape
from ...symbolic.symbols import sym
from ..draws import pick, pow2
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = "sharding.md, 'A unified notation for sharding' (Pop Quiz)"
DTYPES = ("bf16", "bf16", "int8", "fp32")
AXES = ("X", "Y", "Z")
AXIS_SIZES = (2, 2, 4, 4, 8, 16)
DIMS = ("I", "J")


def _tex(text: str) -> str:
    """Sharding notation as LaTeX: ``A[I_XY, J]`` -> ``A[I_{XY}, J]``."""
    return re.sub(r"_([A-Za-z]+)", r"_{\1}", text)


def draw(rng):
    n_axes = pick(rng, (2, 3, 3))
    mesh = {a: pick(rng, AXIS_SIZES) for a in AXES[:n_axes]}
    owner = {a: pick(rng, ("I", "I", "J", "J", None)) for a in mesh}
    reject_if(all(o is None for o in owner.values()), "the array must be sharded over at least one mesh axis")
    reject_if(all(o is not None for o in owner.values()) and rng.random() < 0.5,
              "about half the arrays should be replicated over some axis")
    dims = {}
    for d in DIMS:
        axes = [a for a in mesh if owner[a] == d]
        rng.shuffle(axes)
        dims[d] = "".join(axes)
    sizes = {"I": pow2(rng, 6, 14), "J": pow2(rng, 8, 15)}
    for d in DIMS:
        parts = 1
        for a in dims[d]:
            parts *= mesh[a]
        reject_if(sizes[d] < parts, "each dimension must split evenly over its mesh axes")
    sharding = "A[" + ", ".join(d + (f"_{dims[d]}" if dims[d] else "") for d in DIMS) + "]"
    return {"dtype": pick(rng, DTYPES), "I": sizes["I"], "J": sizes["J"],
            "mesh": ",".join(f"{a}={n}" for a, n in mesh.items()),
            "mesh_tex": r",\ ".join(f"|{a}| = {n}" for a, n in mesh.items()),
            "devices": _product(mesh.values()),
            "sharding": sharding, "sharding_tex": _tex(sharding)}


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _mesh(p) -> dict[str, int]:
    return {k: int(v) for k, v in (part.split("=") for part in p["mesh"].split(","))}


@persistent
def _derivations(sharding: str, axes: tuple[str, ...], b: Fraction) -> dict[str, Derivation]:
    arr = parse_array(sharding)
    mesh = {a: sym(a) for a in axes}
    sizes = {d: sym(d) for d in DIMS}
    shape = local_shape(arr, mesh, sizes)
    used = [a for d in arr.dims for a in d.axes]
    unused = [a for a in axes if a not in used]

    def split(dim) -> str:
        if not dim.axes:
            return f"{dim.name} is not sharded: every device holds all of it"
        return f"{dim.name} is split over {' and '.join(dim.axes)}"

    local = [Step(rf"{d.name}_{{\mathrm{{local}}}}", s, split(d), "element") for d, s in zip(arr.dims, shape)]
    per_element = sp.Rational(b.numerator, b.denominator)
    per_dev = Step(r"\mathrm{bytes}_{\mathrm{dev}}", array_bytes(arr, mesh, sizes, per_element),
                   f"{b} bytes per element times the local shape", "byte")
    devices = Step(r"n_{\mathrm{dev}}", sp.Mul(*mesh.values()), "every device of the mesh holds one shard", "chip")
    total = Step(r"\mathrm{bytes}_{\mathrm{total}}", per_dev.expr * devices.expr,
                 "the shards of all devices added up", "byte")
    copies = Step(r"\mathrm{copies}", sp.Mul(*(mesh[a] for a in unused)),
                  ("the array is replicated along " + " and ".join(unused) + ", which the sharding does not use")
                  if unused else "every axis shards the array, so it is stored once", "1")
    title = f"memory of {sharding}"
    return {"local_I": Derivation(f"local size of I in {sharding}", (local[0],), SOURCE),
            "local_J": Derivation(f"local size of J in {sharding}", (local[1],), SOURCE),
            "bytes_dev": Derivation(f"bytes per device of {sharding}", (*local, per_dev), SOURCE),
            "bytes_total": Derivation(title, (*local, per_dev, devices, total), SOURCE),
            "copies": Derivation(f"copies of {sharding} over the mesh", (copies,), SOURCE)}


DESCRIPTIONS = {
    "local_I": ("local size of I", "element"),
    "local_J": ("local size of J", "element"),
    "bytes_dev": ("bytes per device", "byte"),
    "bytes_total": ("bytes over all devices", "byte"),
    "copies": ("number of full copies of the array", "1"),
}


def solve(p):
    mesh = _mesh(p)
    derivations = _derivations(p["sharding"], tuple(mesh), dtype_bytes(p["dtype"]))
    values = {sym(a): n for a, n in mesh.items()} | {sym("I"): p["I"], sym("J"): p["J"]}
    out = []
    for name, (description, unit) in DESCRIPTIONS.items():
        d = derivations[name]
        ev = d.at({s: v for s, v in values.items() if s in d.symbols})
        out.append(Answer(name, description, ev.value, unit, ev))
    return out


def check(p):
    mesh = _mesh(p)
    inside = p["sharding"][p["sharding"].index("[") + 1:p["sharding"].index("]")]
    local, used = {}, set()
    for part in inside.split(","):
        name, _, axes = part.strip().partition("_")
        parts = 1
        for a in axes:
            parts *= mesh[a]
            used.add(a)
        local[name] = Fraction(p[name], parts)
    b = {"bf16": 2, "fp32": 4, "int8": 1}[p["dtype"]]
    per_dev = b * local["I"] * local["J"]
    devices = 1
    for n in mesh.values():
        devices *= n
    copies = 1
    for a, n in mesh.items():
        if a not in used:
            copies *= n
    return {"local_I": local["I"], "local_J": local["J"], "bytes_dev": per_dev,
            "bytes_total": per_dev * devices, "copies": copies}


register(Generator("sharding_memory", "sharding", "Memory of a sharded array",
                   SOURCE, draw, solve, check))
