"""Cross-check the sharding engine against the real XLA compiler (optional: needs the ``xla`` extra).

Three steps, usable separately:

1. :func:`compile_hlo` turns a contraction in the book's notation into a ``jax.jit`` program
   with the matching ``NamedSharding``\\ s on simulated CPU devices and returns XLA's compiled,
   per-device HLO text (the text in which the collectives appear).
2. :func:`parse_collectives` reads the collectives out of HLO text: their kind (in the book's
   names), the mesh axes they run over (found by matching ``replica_groups`` against the groups
   each set of mesh axes would form), and the shapes and element counts of their operands and
   results. It needs no jax, so it also reads HLO saved from elsewhere (a TPU compile, a dump).
3. :func:`compare` holds one of the engine's plans up against what XLA did.

jax is imported inside the functions that need it, so this module imports without it.
Simulated devices must be requested before jax starts: set
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (or call
``jax.config.update("jax_num_cpu_devices", 8)``) before the first ``jax.devices()``.

What the CPU backend does differently from a TPU, and how it is handled here:

- A ReduceScatter is not an opcode on CPU: XLA writes an ``all-reduce`` whose only use is a
  ``dynamic-slice`` (usually inside a fusion) that keeps this device's block, 1/group of the
  array (or a finer block, when a further local slice of the output was fused into the same
  dynamic-slice). Such a pair is reported as one ReduceScatter. (A TPU writes a ``fusion``
  calling ``%all-reduce-scatter``, also recognised, as is a native ``reduce-scatter``.)
- An AllToAll is a tuple ``all-to-all`` with one operand per peer on CPU; it is one AllToAll.
- bf16 arithmetic is promoted to f32 on CPU, so bytes may double. Compare element counts.

The reading of step 2 (the three spellings of ``replica_groups``, shapes, fusions) lives in
:mod:`scalemath.xla.parse`, which needs no jax.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np
import sympy as sp

# 2. (parsing the collectives out of HLO text) lives in scalemath.xla.parse, which needs no jax
from .parse import KINDS, ObservedCollective, _axes_label, mesh_groups, parse_collectives  # noqa: F401
from ..symbolic.notation import Array, Contraction, parse_contraction

__all__ = [
    "ObservedCollective",
    "JittedContraction",
    "jit_contraction",
    "compile_hlo",
    "parse_collectives",
    "mesh_groups",
    "compare",
    "compare_plans",
    "COST_WEIGHT",
    "jit_reshard",
    "compile_reshard_hlo",
    "reshard_matches",
]

# --------------------------------------------------------------------------------------------
# 1. Building and compiling the sharded program
# --------------------------------------------------------------------------------------------


@dataclass
class JittedContraction:
    """A contraction as a jitted jax function with its shardings (see :func:`jit_contraction`)."""

    contraction: Contraction
    mesh: object  # jax.sharding.Mesh
    equation: str
    fn: object  # the jitted function of (a, b)
    shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    shardings: tuple[object, object, object]  # NamedSharding of lhs, rhs, out
    dtype: object

    def args(self):
        """``jax.ShapeDtypeStruct`` stand-ins for the two inputs, carrying their shardings."""
        import jax

        return tuple(jax.ShapeDtypeStruct(s, self.dtype, sharding=sh)
                     for s, sh in zip(self.shapes[:2], self.shardings[:2]))

    def lower(self):
        return self.fn.lower(*self.args())


def _spec(arr: Array):
    from jax.sharding import PartitionSpec

    return PartitionSpec(*[None if not d.axes else d.axes[0] if len(d.axes) == 1 else tuple(d.axes)
                           for d in arr.dims])


def _as_contraction(contraction, mesh: Mapping[str, int]) -> Contraction:
    return parse_contraction(contraction, mesh) if isinstance(contraction, str) else contraction


def jit_contraction(contraction: Contraction | str, mesh: Mapping[str, int], sizes: Mapping[str, object],
                    dtype="float32", constrain_output: bool = True) -> JittedContraction:
    """``A @ B -> C`` as ``jax.jit(einsum)`` on the first prod(mesh) CPU devices.

    ``mesh`` maps axis names to sizes in order (``{"X": 4, "Y": 2}``); ``sizes`` maps dimension
    names to sizes. With ``constrain_output=False`` the output sharding is left to XLA.
    An unreduced output (``{U_X}``) cannot be asked of ``jax.jit`` and raises ValueError.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding

    c = _as_contraction(contraction, mesh)
    if c.out.unreduced:
        raise ValueError(f"{c.out} is unreduced over {', '.join(c.out.unreduced)}: jax.jit cannot be asked for "
                         "an unreduced (partial-sum) output; drop the {U_...} part to compile it")
    names = tuple(mesh)
    n = int(np.prod([mesh[a] for a in names], dtype=np.int64))
    devices = jax.devices("cpu")
    if len(devices) < n:
        raise RuntimeError(f"the mesh needs {n} devices but jax has {len(devices)} CPU device(s); set "
                           f"XLA_FLAGS=--xla_force_host_platform_device_count={n} (or "
                           f"jax.config.update('jax_num_cpu_devices', {n})) before jax initialises")
    kwargs = {}
    axis_type = getattr(jax.sharding, "AxisType", None)
    if axis_type is not None:  # jax.make_mesh defaults to Explicit axes; the book's rules need Auto
        kwargs["axis_types"] = (axis_type.Auto,) * len(names)
    jmesh = Mesh(np.array(devices[:n]).reshape([mesh[a] for a in names]), names, **kwargs)

    letters = {}
    for arr in (c.lhs, c.rhs, c.out):
        for d in arr.names:
            letters.setdefault(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[len(letters)])
    equation = ",".join("".join(letters[d] for d in arr.names) for arr in (c.lhs, c.rhs)) + "->" + \
        "".join(letters[d] for d in c.out.names)
    shapes = []
    for arr in (c.lhs, c.rhs, c.out):
        shape = []
        for d in arr.dims:
            size = int(sizes[d.name])
            shards = int(np.prod([mesh[a] for a in d.axes], dtype=np.int64))
            if size % shards:
                raise ValueError(f"{d.name} = {size} does not divide evenly over {''.join(d.axes)} ({shards} shards)")
            shape.append(size)
        shapes.append(tuple(shape))
    shardings = tuple(NamedSharding(jmesh, _spec(arr)) for arr in (c.lhs, c.rhs, c.out))

    def f(a, b):
        return jnp.einsum(equation, a, b)

    fn = jax.jit(f, out_shardings=shardings[2]) if constrain_output else jax.jit(f)
    return JittedContraction(c, jmesh, equation, fn, tuple(shapes), shardings, jnp.dtype(dtype))


def compile_hlo(contraction: Contraction | str, mesh: Mapping[str, int], sizes: Mapping[str, object],
                dtype="float32", constrain_output: bool = True) -> str:
    """XLA's optimised per-device HLO for the sharded contraction (``lower().compile().as_text()``).

    Nothing is allocated: the inputs are ``jax.ShapeDtypeStruct``\\ s carrying their shardings.
    """
    return jit_contraction(contraction, mesh, sizes, dtype, constrain_output).lower().compile().as_text()


# --------------------------------------------------------------------------------------------
# 3. Comparing with the engine (2, the parser, is scalemath.xla.parse)
# --------------------------------------------------------------------------------------------

#: The book's time formulas as multiples of V/W: an AllGather or ReduceScatter costs V/W, an
#: AllReduce 2V/W, an AllToAll V/(4W) with V the gathered array. "Data moved" below is the sum of
#: weight x elements over a plan's collectives.
COST_WEIGHT = {"AllGather": 1, "ReduceScatter": 1, "AllReduce": 2, "AllToAll": sp.Rational(1, 4)}


def _weight(kind: str):
    return COST_WEIGHT.get(kind, 1)


@dataclass(frozen=True)
class _Step:
    kind: str
    axes: tuple[str, ...]
    elements: int
    note: str = ""

    def key(self):
        return (self.kind, tuple(sorted(self.axes)) if self.kind == "AllReduce" else self.axes, self.elements)

    def __str__(self):
        return f"{self.kind}_{_axes_label(self.axes)} ({self.elements} elements){self.note}"


def _changed_dim(col) -> str | None:
    changed = [a.name for a, b in zip(col.before.dims, col.after.dims) if a.axes != b.axes]
    return changed[0] if len(changed) == 1 else None


def _engine_steps(plan, bytes_per_element) -> tuple[list[_Step], list[_Step], list[str]]:
    """The plan's collectives as steps (raw) and with successive same-kind reductions merged."""
    raw, merged, notes = [], [], []
    prev_dim = None
    for col in plan.collectives:
        value = sp.nsimplify(sp.sympify(col.bytes) / sp.sympify(bytes_per_element))
        if not value.is_Integer:
            raise ValueError(f"{col}: {col.bytes} bytes / {bytes_per_element} is not a whole number of elements; "
                             "compute the plans with numeric sizes and pass their bytes per element")
        step = _Step(col.kind, tuple(col.axes), int(value))
        raw.append(step)
        prev = merged[-1] if merged else None
        if prev is not None and col.kind == prev.kind == "AllReduce" and step.elements == prev.elements:
            merged[-1] = _Step("AllReduce", prev.axes + step.axes, prev.elements)
            notes.append(f"successive AllReduces over {_axes_label(prev.axes)} and {_axes_label(step.axes)} "
                         "taken as one over both")
        elif (prev is not None and col.kind == prev.kind == "ReduceScatter" and prev_dim is not None
              and _changed_dim(col) == prev_dim):
            merged[-1] = _Step("ReduceScatter", prev.axes + step.axes, prev.elements)
            notes.append(f"successive ReduceScatters over {_axes_label(prev.axes)} and {_axes_label(step.axes)} "
                         f"onto {prev_dim} taken as one over both")
        else:
            merged.append(step)
        prev_dim = _changed_dim(col) if col.kind == "ReduceScatter" else None
    return raw, merged, notes


def _cost(steps) -> sp.Expr:
    return sum((_weight(s.kind) * s.elements for s in steps), sp.Integer(0))


def compare(plan, observed: Iterable[ObservedCollective], bytes_per_element=1) -> tuple[bool, str]:
    """Does XLA's HLO carry out ``plan`` (one of :func:`~scalemath.symbolic.sharding.plans`)?

    True if XLA's collectives have the same kinds, mesh axes and element counts as the plan's
    (in any order; successive AllReduces of one array, or ReduceScatters onto one dimension, may
    be fused into one collective over several axes), or, failing that, if XLA chose a different
    plan that moves no more data in total (weighted by :data:`COST_WEIGHT`). The report says which.
    Element counts are the plan's bytes divided by ``bytes_per_element``: compute the plans with
    ``bytes_per_element=1`` and the default works.
    """
    observed = list(observed)
    raw, merged, notes = _engine_steps(plan, bytes_per_element)
    seen = [_Step(o.kind, o.axes if o.axes is not None else ("?",), o.elements) for o in observed]
    lines = [f"engine plan {plan.name!r}:"]
    lines += [f"  {s}" for s in raw] or ["  (no collectives)"]
    lines.append("XLA:")
    lines += [f"  {o}  [{o.opcode} %{o.name}]" for o in observed] or ["  (no collectives)"]
    key = lambda steps: sorted(s.key() for s in steps)
    if key(seen) == key(raw):
        lines.append("verdict: exact match (same kinds, axes and element counts)")
        return True, "\n".join(lines)
    if key(seen) == key(merged):
        lines.append("verdict: exact match after merging: " + "; ".join(notes))
        return True, "\n".join(lines)
    unknown = [o for o in observed if o.axes is None and o.kind != "CollectivePermute"]
    mine, theirs = _cost(raw), _cost(seen)
    detail = (f"data moved (book-weighted elements): XLA {theirs} vs engine {mine}"
              + (f"; {len(unknown)} XLA collective(s) over groups that match no mesh axes" if unknown else ""))
    if theirs <= mine:
        lines.append(f"verdict: XLA chose a different plan that moves no more data ({detail})")
        return True, "\n".join(lines)
    lines.append(f"verdict: mismatch, XLA's plan moves more data ({detail})")
    return False, "\n".join(lines)


def compare_plans(plans, observed: Iterable[ObservedCollective], bytes_per_element=1):
    """Compare against every plan; ``(ok, plan, report)`` for the first exact match, else the first
    plan XLA does no worse than, else ``(False, None, reports of all plans)``."""
    observed = list(observed)
    results = [(plan, *compare(plan, observed, bytes_per_element)) for plan in plans]
    for plan, ok, report in results:
        if ok and "exact match" in report:
            return True, plan, report
    for plan, ok, report in results:
        if ok:
            return True, plan, report
    return False, None, "\n\n".join(r for _, _, r in results)


# --------------------------------------------------------------------------------------------
# 4. Resharding one array (the ``shard "A[I_X, J] -> A[I, J_X]"`` form)
# --------------------------------------------------------------------------------------------


def _cpu_mesh(mesh: Mapping[str, int]):
    """A jax Mesh of Auto axes over the first prod(mesh) CPU devices."""
    import jax
    from jax.sharding import Mesh

    names = tuple(mesh)
    n = int(np.prod([mesh[a] for a in names], dtype=np.int64))
    devices = jax.devices("cpu")
    if len(devices) < n:
        raise RuntimeError(f"the mesh needs {n} devices but jax has {len(devices)} CPU device(s); set "
                           f"XLA_FLAGS=--xla_force_host_platform_device_count={n} before jax initialises")
    kwargs = {}
    axis_type = getattr(jax.sharding, "AxisType", None)
    if axis_type is not None:
        kwargs["axis_types"] = (axis_type.Auto,) * len(names)
    return Mesh(np.array(devices[:n]).reshape([mesh[a] for a in names]), names, **kwargs)


def jit_reshard(pattern: str, mesh: Mapping[str, int], sizes: Mapping[str, object], dtype="float32",
                how: str = "constraint"):
    """``A[...] -> A[...]`` as a jitted program that takes the array in the first layout and returns it in
    the second: ``jax.lax.with_sharding_constraint`` inside ``jax.jit`` (``how="constraint"``) or
    ``jax.device_put`` to the target ``NamedSharding`` inside it (``how="device_put"``).

    Returns ``(fn, arg)``: the jitted function and a ``jax.ShapeDtypeStruct`` of the input carrying its
    sharding, so ``fn.lower(arg).compile().as_text()`` is XLA's per-device HLO.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from ..symbolic.notation import parse_reshard

    if how not in ("constraint", "device_put"):
        raise ValueError(f"how = {how!r}: 'constraint' or 'device_put'")
    src, dst = parse_reshard(pattern, mesh)
    shape = []
    for d in src.dims:
        size = int(sizes[d.name])
        for arr in (src, dst):
            axes = next(x.axes for x in arr.dims if x.name == d.name)
            shards = int(np.prod([mesh[a] for a in axes], dtype=np.int64))
            if size % shards:
                raise ValueError(f"{d.name} = {size} does not divide evenly over {''.join(axes)} ({shards} shards)")
        shape.append(size)
    jmesh = _cpu_mesh(mesh)
    before, after = NamedSharding(jmesh, _spec(src)), NamedSharding(jmesh, _spec(dst))

    def move(a):
        if how == "constraint":
            return jax.lax.with_sharding_constraint(a, after)
        return jax.device_put(a, after)

    fn = jax.jit(move, in_shardings=before, out_shardings=after)
    return fn, jax.ShapeDtypeStruct(tuple(shape), jnp.dtype(dtype), sharding=before)


def compile_reshard_hlo(pattern: str, mesh: Mapping[str, int], sizes: Mapping[str, object], dtype="float32",
                        how: str = "constraint") -> str:
    """XLA's optimised per-device HLO for resharding one array (see :func:`jit_reshard`)."""
    fn, arg = jit_reshard(pattern, mesh, sizes, dtype, how)
    return fn.lower(arg).compile().as_text()


def reshard_matches(report: Mapping, observed: Iterable[ObservedCollective], mesh: Mapping[str, int],
                    bytes_per_element) -> tuple[bool, str]:
    """Do XLA's collectives equal what ``shard`` lists for a reshard (``shard.reshard_report``)?

    Each listed collective must have an XLA collective of the same kind, over the same mesh axes, with
    the same bytes (elements x ``bytes_per_element``) and the replica groups those axes form
    (:func:`mesh_groups`; a CollectivePermute's source-target pairs, each device a target at most once);
    nothing else may be in the HLO. The report lists both sides.
    """
    observed = list(observed)
    listed = [(c["kind"], tuple(c["axes"]), sp.sympify(c["_bytes"])) for c in report.get("collectives", [])]
    seen = [(o.kind, o.axes, sp.Integer(o.elements) * sp.sympify(bytes_per_element)) for o in observed]
    lines = ["shard:"] + [f"  {k}_{_axes_label(a)}: {b} bytes" for k, a, b in listed] + ["XLA:"]
    lines += [f"  {o}  [{o.opcode} %{o.name}]" for o in observed] or ["  (no collectives)"]
    ok = sorted(listed, key=str) == sorted(seen, key=str)
    n = int(np.prod(list(mesh.values()), dtype=np.int64))
    groups_ok = all(o.axes is not None and (
        # a permute's groups are (source, target) pairs: every device the target of at most one
        len({t for _, t in o.groups}) == len(o.groups) <= n if o.kind == "CollectivePermute" else
        {frozenset(g) for g in o.groups} ==
        {frozenset(g) for g in mesh_groups(tuple(mesh.values()), tuple(mesh), o.axes)})
        for o in observed)
    ok = ok and groups_ok
    lines.append("verdict: " + ("same kinds, axes, bytes and replica groups" if ok else "mismatch"))
    return ok, "\n".join(lines)
