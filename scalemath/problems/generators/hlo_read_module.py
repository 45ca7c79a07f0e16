"""Reading a compiled HLO module: which sharding, which collective over which axes, its bytes and time.

The module is a real one: XLA's per-device HLO for a sharded matmul or a resharding, compiled with jax
on simulated CPU devices and shipped in :mod:`scalemath.xla.corpus` (so no jax is needed here). The
statement shows its relevant lines (the parameters, the matmul, the collective with its replica
groups, the result), with what would give the answer away removed: the parameters' ``sharding=``
annotations and the ``metadata`` that names the jax operation, and the ``HloModule`` line.

Engine route (the key): ``scalemath hlo``'s accounting of the shown text (:func:`scalemath.xla.analysis.analyse`
with the mesh and the chip): the collective's kind, the mesh axes its replica groups span, its bytes V
and its topology-aware time; the program is the choice whose per-device shapes are the shown
parameters' and result's.

Second route: the engine's own plan for the sharding the module was compiled from (the corpus index):
:func:`scalemath.symbolic.sharding.plans` (or :func:`~scalemath.symbolic.sharding.reshard`) gives
its collective, whose bytes and cost (:func:`scalemath.symbolic.sharded_cost.collective_cost` on the
slice's topology) must agree with what was read from the HLO.
"""

from __future__ import annotations

import re
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ...xla.corpus import entries, entry
from ...xla.corpus.listing import listing
from ...symbolic.derivation import Derivation, Step
from ..draws import choice, pick
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = ("jax-stuff.md and profiling.md (reading HLO: collectives and replica groups); sharding.md "
          "('Computation With Sharded Arrays', the collectives' costs)")
#: bytes per element and how the statement names the dtype
DTYPES = {"float32": (4, "f32 (4 bytes per element)"), "bfloat16": (2, "bf16 (2 bytes per element)")}
#: TPUs whose catalog says which axes wrap: a 4 x 2 or 2 x 4 slice of any of them is open lines
CHIPS = ("tpu-v4p", "tpu-v5p", "tpu-v5e", "tpu-v6e")
#: other programs the choices offer (the corpus's own patterns are offered too)
MATMULS = ("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "A[I, J_X] @ B[J, K] -> C[I, K]", "A[I, J_Y] @ B[J, K] -> C[I, K]",
           "A[I, J_X] @ B[J_X, K] -> C[I, K]", "A[I, J_X] @ B[J_X, K] -> C[I, K_X]", "A[I, J_Y] @ B[J_Y, K] -> C[I, K]",
           "A[I, J_Y] @ B[J_Y, K] -> C[I_Y, K]", "A[I, J_XY] @ B[J_XY, K] -> C[I, K]", "A[I_X, J] @ B[J, K_X] -> C[I_X, K]",
           "A[I_X, J] @ B[J, K_X] -> C[I, K_X]", "A[I_Y, J] @ B[J, K_Y] -> C[I_Y, K]", "A[I_X, J] @ B[J, K] -> C[I_X, K]",
           "A[I, J] @ B[J_X, K] -> C[I, K]", "A[I_X, J_Y] @ B[J_Y, K] -> C[I_X, K]")
RESHARDS = ("A[I_X, J] -> A[I, J_X]", "A[I_X, J] -> A[I, J]", "A[I_Y, J] -> A[I_X, J]", "A[I, J_Y] -> A[I_Y, J]",
            "A[I, J_X] -> A[I_X, J]", "A[I_Y, J] -> A[I, J]", "A[I, J_X] -> A[I, J]", "A[I_X, J] -> A[I, J_Y]",
            "A[I_XY, J] -> A[I, J]", "A[I, J_Y] -> A[I, J]")
KINDS = ("AllGather", "ReduceScatter", "AllReduce", "AllToAll", "CollectivePermute")
N_CHOICES = 4


def shown_hlo(name: str) -> str:
    """The lines of corpus module ``name`` the statement shows (:func:`scalemath.xla.corpus.listing.listing`)."""
    return listing(name)


# -- choices --------------------------------------------------------------------------------------------

def _shapes(pattern: str, mesh, sizes) -> tuple | None:
    """Per-device shapes of the program's arrays (inputs, then output), or None where it does not fit."""
    from ...symbolic.notation import parse_contraction, parse_reshard
    from ...symbolic.sharding import local_shape

    try:
        if "@" in pattern:
            c = parse_contraction(pattern, mesh)
            arrays = (c.lhs, c.rhs, c.out)
        else:
            arrays = parse_reshard(pattern, mesh)
    except Exception:  # noqa: BLE001 - a pattern that does not fit the mesh is no choice
        return None
    out = []
    if any(d.name not in sizes for arr in arrays for d in arr.dims):
        return None
    for arr in arrays:
        shape = local_shape(arr, mesh, {k: sp.Integer(v) for k, v in sizes.items()})
        if not all(s.is_Integer for s in shape):
            return None
        out.append(tuple(int(s) for s in shape))
    return tuple(out)


def words(pattern: str) -> str:
    """``A[I, J_X] @ B[J, K] -> C[I, K]`` in words: ``A split on J over X; B whole; C whole``."""
    parts = []
    for name, dims in re.findall(r"([A-Z])\[([^\]]*)\]", pattern):
        split = [(d.split("_")[0], " and ".join(d.split("_")[1])) for d in (x.strip() for x in dims.split(","))
                 if "_" in d]
        said = "; ".join(f"{dim} over {axes}" for dim, axes in split) or "whole on every device"
        parts.append(f"{name}: {said}")
    if "@" not in pattern:
        return f"A from ({parts[0].split(': ')[1]}) to ({parts[1].split(': ')[1]})"
    return ", ".join(parts)


def _collective_words(kind: str, axes: str) -> str:
    return f"{kind} over {' and '.join(axes)}"


def _program_choices(rng, e) -> list[str]:
    pool = MATMULS if e.program == "matmul" else RESHARDS
    pool = sorted(set(pool) | {x.pattern for x in entries() if x.program == e.program})
    truth = _shapes(e.pattern, e.mesh, e.sizes)
    seen, others = {truth}, []
    for pattern in pool:
        shapes = _shapes(pattern, e.mesh, e.sizes)
        if shapes is not None and shapes not in seen:  # every choice has other per-device shapes
            seen.add(shapes)
            others.append(pattern)
    rng.shuffle(others)
    chosen = others[:N_CHOICES - 1] + [e.pattern]
    rng.shuffle(chosen)
    return chosen


def _collective_choices(rng, kind: str, axes: str) -> list[list[str]]:
    options = [[k, a] for k in KINDS for a in ("X", "Y", "XY") if [k, a] != [kind, axes]]
    near = [o for o in options if o[0] == kind or o[1] == axes]
    if kind == "ReduceScatter":  # on a CPU the ReduceScatter is an all-reduce and a slice: offer the AllReduce
        near = [["AllReduce", axes]] + [o for o in near if o != ["AllReduce", axes]]
    else:
        rng.shuffle(near)
    chosen = near[:N_CHOICES - 1] + [[kind, axes]]
    rng.shuffle(chosen)
    return chosen


# -- draw, solve, check ---------------------------------------------------------------------------------

def draw(rng):
    from ...reports.shard import _wraps

    e = pick(rng, [x for x in entries() if len(x.collectives) == 1])
    # a module compiled for a TPU is priced on that TPU; a CPU one on any of the chips
    chip = get_chip("tpu-" + e.backend.split()[1].split(":")[0] if e.backend.startswith("tpu") else pick(rng, CHIPS))
    wraps, _ = _wraps(chip, e.mesh)
    reject_if(wraps is None or any(wraps.values()), "every mesh axis must be an open line on the chip's slice")
    observed = e.collectives[0]
    mesh = dict(e.mesh)
    return {"entry": e.name, "program": e.program, "chip": chip.key, "jax": e.jax,
            "backend": e.backend.split()[0], "dtype_text": DTYPES[e.dtype][1],
            "mesh": mesh, "mesh_tex": r",\ ".join(f"|{a}| = {n}" for a, n in mesh.items()),
            "slice": "x".join(str(n) for n in mesh.values()), "devices": _devices(mesh),
            "sizes": dict(e.sizes), "sizes_tex": r",\ ".join(f"|{d}| = {n}" for d, n in e.sizes.items()),
            "hlo": shown_hlo(e.name), "reading": _reading(shown_hlo(e.name), mesh),
            "program_choices": [words(x) for x in _program_choices(rng, e)],
            "collective_choices": [_collective_words(k, a)
                                   for k, a in _collective_choices(rng, observed["kind"], "".join(observed["axes"]))]}


def _reading(text: str, mesh) -> str:
    """How the collective's groups name its mesh axes, in words (the key's explanation)."""
    from ...xla.parse import parse_collectives

    [c] = parse_collectives(text, mesh)
    names = list(mesh)
    if c.kind == "CollectivePermute":
        moves = ", ".join(f"{s} to {t}" for s, t in c.groups if s != t)
        return (f"its source-target pairs send from device {moves} (the others keep their block): devices that differ "
                f"in {' and '.join(c.axes)}")
    groups = ", ".join("{" + ", ".join(map(str, g)) + "}" for g in c.groups)
    fixed = [a for a in names if a not in c.axes]
    return (f"its replica groups {groups} each hold {c.group_size} devices that differ only in "
            f"{' and '.join(c.axes)}" + (f" (each group has one value of {' and '.join(fixed)})" if fixed else ""))


def _devices(mesh) -> int:
    n = 1
    for v in mesh.values():
        n *= v
    return n


def _read(p) -> dict:
    """``scalemath hlo``'s accounting of the shown lines on the chip and mesh: its one collective."""
    from ...xla.analysis import analyse

    report = analyse(p["hlo"], get_chip(p["chip"]), dict(p["mesh"]), source=p["entry"])
    [c] = report["collectives"]
    return c


def _values(chip) -> dict:
    from ...reports.shard import _chip_values

    values, _, _ = _chip_values(chip, "bf16")
    return {k: sp.sympify(v) for k, v in values.items() if k.name in ("W_ici", "t_hop")}


def _time_derivation(kind, axes, v, p) -> Derivation:
    from ...reports.shard import _wraps
    from ...symbolic.sharded_cost import collective_cost

    chip = get_chip(p["chip"])
    mesh = dict(p["mesh"])
    wraps, _ = _wraps(chip, mesh)
    group = 1
    for a in axes:
        group *= mesh[a]
    stand_in = _Stand(kind, tuple(axes), group, v)
    cost, how = collective_cost(stand_in, mesh, "tpu", None, wraps)
    label = {"AllGather": "AG", "ReduceScatter": "RS", "AllReduce": "AR", "AllToAll": "A2A",
             "CollectivePermute": "CP"}[kind]
    return Derivation(f"{kind} over {''.join(axes)}", (
        Step("V", v, f"bytes of the {kind} in {p['dtype_text']}", "byte"),
        Step(rf"T_{{\mathrm{{{label}}}_{{{''.join(axes)}}}}}", cost, how, "s")), SOURCE)


class _Stand:
    """A collective as collective_cost reads it (kind, axes, group size, bytes), from the HLO."""

    def __init__(self, kind, axes, group, v):
        self.kind, self.axes, self.group, self.bytes = kind, axes, group, v


def _program_index(p) -> int:
    """The choice whose per-device shapes are the module's parameters and result (read from the text)."""
    from ...xla.parse import parse_module

    module = parse_module(p["hlo"])
    body = module.computations[module.entry]
    params = sorted((i for i in body if i.opcode == "parameter"), key=lambda i: int(i.args[0]))
    root = re.search(r"^ENTRY .*-> \w+\[([\d,]*)\] \{$", p["hlo"], re.MULTILINE).group(1)
    read = tuple(tuple(int(x) for x in re.search(r"\[([\d,]*)\]", i.shape).group(1).split(",")) for i in params)
    read += (tuple(int(x) for x in root.split(",")),)
    patterns = (MATMULS if p["program"] == "matmul" else RESHARDS) + tuple(y.pattern for y in entries())
    fits = {words(x) for x in patterns if _shapes(x, dict(p["mesh"]), p["sizes"]) == read}
    found = [i for i, w in enumerate(p["program_choices"]) if w in fits]
    if len(found) != 1:
        raise ValueError(f"{p['entry']}: {len(found)} choices fit the shapes {read}")
    return found[0]


def solve(p):
    c = _read(p)
    axes = "".join(c["axes"] or ())
    v = sp.Rational(c["bytes"].numerator, c["bytes"].denominator)
    ev = _time_derivation(c["kind"], axes, v, p).at(_values(get_chip(p["chip"])))
    if ev.value != sp.Rational(c["time"].numerator, c["time"].denominator):
        raise ValueError(f"{p['entry']}: the hlo accounting's time {c['time']} is not the derivation's {ev.value}")
    return [
        choice("program", "which sharded program was compiled", p["program_choices"], _program_index(p)),
        choice("collective", "which collective, over which mesh axes", p["collective_choices"],
               _collective_words(c["kind"], axes)),
        Answer("bytes", "the collective's V in bytes", v, "byte", ev.part(1)),
        Answer("time", f"the collective's time on {get_chip(p['chip']).name}", ev.value, "s", ev),
    ]


def check(p):
    """The engine's plan for the sharding the module was compiled from: its collective, bytes and cost."""
    from ...reports.shard import _wraps
    from ...symbolic.notation import parse_contraction, parse_reshard
    from ...symbolic.sharded_cost import collective_cost
    from ...symbolic.sharding import plans, reshard

    e = entry(p["entry"])
    mesh, sizes = dict(e.mesh), {k: sp.Integer(v) for k, v in e.sizes.items()}
    observed = e.collectives[0]  # recorded when the module was compiled: which plan XLA ran
    if e.program == "matmul":
        options = [pl.collectives for pl in plans(parse_contraction(e.pattern, mesh), mesh, sizes, DTYPES[e.dtype][0])]
    else:
        src, dst = parse_reshard(e.pattern, mesh)
        options = [reshard(src, dst, mesh, sizes, DTYPES[e.dtype][0])]
    ran = [cols for cols in options if [(c.kind, "".join(c.axes)) for c in cols] ==
           [(observed["kind"], "".join(observed["axes"]))]]
    if not ran:
        raise ValueError(f"{e.name}: no engine plan for {e.pattern} runs {observed['kind']} over {observed['axes']}")
    [col] = ran[0]
    chip = get_chip(p["chip"])
    wraps, _ = _wraps(chip, mesh)
    cost, _ = collective_cost(col, mesh, "tpu", None, wraps)
    seconds = cost.xreplace(_values(chip))
    return {"program": p["program_choices"].index(words(e.pattern)),
            "collective": p["collective_choices"].index(_collective_words(col.kind, "".join(col.axes))),
            "bytes": Fraction(int(col.bytes)), "time": seconds}


register(Generator("hlo_read_module", "sharding", "Reading a compiled HLO module", SOURCE, draw, solve, check))
