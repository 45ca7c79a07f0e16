"""What a shard_map program does, device by device, in numpy (no jax): the engine's semantics.

Every device of the mesh holds its local block of each input (default values: ``arange`` of the global
shape, as the chapter's example); the body runs statement by statement on all devices at once, each
collective exchanging blocks within its groups (the devices that differ only along the collective's axes).
:func:`run` returns, per statement, every device's value, and per collective its kind, axes, group size and
the book's V in elements (an AllGather's result, an AllReduce's or ReduceScatter's operand, an AllToAll's
operand times the group, a CollectivePermute's operand), then the outputs assembled by their out specs.

>>> from scalemath.symbolic.shardmap import parse_program
>>> p = parse_program("X=2,Y=4", ["x: i32[512] P((X, Y))"], "y = pmean(x[:4], (X, Y))", ["y: P(None)"])
>>> r = run(p)
>>> r.outputs["y"].tolist(), r.events[0].kind, r.events[0].elements
([224.0, 225.0, 226.0, 227.0], 'AllReduce', 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .notation import NotationError
from .shardmap import DTYPES, REDUCTIONS, Program, Spec
from .shardmap_collectives import Event, collective
from .shardmap_mesh import _block, _position, device_coords, groups

#: elements one statement may hold over all devices together (the program runs in this process's memory)
MAX_ELEMENTS = 1 << 25

__all__ = ["MAX_ELEMENTS", "live_statements", "Event", "StepResult", "RunResult", "run", "device_coords", "groups"]


@dataclass(frozen=True)
class StepResult:
    target: str
    text: str
    shape: tuple[int, ...]
    dtype: str
    values: tuple[np.ndarray, ...]  # one per device, in device order
    flops: int = 0  # the statement's matmul FLOPs on one device (einsum and @: 2 x every index's size)

    @property
    def same_everywhere(self) -> bool:
        return all(np.array_equal(self.values[0], v) for v in self.values[1:])


@dataclass(frozen=True)
class RunResult:
    program: Program
    inputs: dict
    steps: tuple[StepResult, ...]
    events: tuple[Event, ...]
    outputs: dict


def _jax_type(result, x, y):
    """numpy widens int32 with a float (or a Python float) to float64; jax keeps the float operand's type, or
    float32 (its default) when that operand is a number written out."""
    result = np.asarray(result)
    if result.dtype != np.float64:
        return result
    floats = [np.asarray(v).dtype for v in (x, y) if isinstance(v, np.ndarray) and v.dtype.kind == "f"]
    return result.astype(floats[0] if floats else np.float32)


class _Runner:
    def __init__(self, program: Program, given: Mapping[str, np.ndarray] | None):
        self.p, self.mesh = program, program.mesh
        self.coords = device_coords(self.mesh)
        self.n = len(self.coords)
        self.env: dict[str, list] = {}
        self.bytes: dict[str, int] = {}
        self.events: list[Event] = []
        self.flops = 0  # of the statement being run, on one device
        self.inputs = {}
        for inp in program.inputs:
            nbytes, np_dtype = DTYPES[inp.dtype]
            glob = given.get(inp.name) if given else None
            if glob is None:
                glob = np.arange(int(np.prod(inp.shape)), dtype=np.int64).reshape(inp.shape)
            glob = np.asarray(glob).astype(np_dtype)
            self.inputs[inp.name] = glob
            self.env[inp.name] = [_block(glob, inp.spec, c, self.mesh) for c in self.coords]
            self.bytes[inp.name] = nbytes
        #: names whose declared type is bf16 (numpy has none: their values are float32 here)
        self.bf16 = {inp.name for inp in program.inputs if inp.dtype in ("bf16", "bfloat16")}

    def fail(self, stmt, reason: str, node=None):
        """One line naming what is wrong, the caret under ``node`` where it is written (else the statement)."""
        span = stmt.spans.get(id(node)) if node is not None else None
        start, end = (span[1], span[2]) if span is not None and span[0] is node else (0, len(stmt.text))
        raise NotationError(reason, stmt.text, start, end)

    def axes_of(self, stmt, node) -> tuple[str, ...]:
        if node[0] in ("name", "str"):
            axes = (node[1],)
        elif node[0] == "tuple" and all(x[0] in ("name", "str") for x in node[1]):
            axes = tuple(x[1] for x in node[1])
        else:
            self.fail(stmt, "a collective's axes are a mesh axis name or a tuple of them, e.g. (X, Y)", node)
        for a in axes:
            if a not in self.mesh:
                self.fail(stmt, f"unknown mesh axis {a!r} (the mesh has {', '.join(self.mesh)})", node)
        if len(set(axes)) != len(axes):
            self.fail(stmt, "a mesh axis is named twice", node)
        return axes

    @staticmethod
    def literal(node):
        """The number a node writes out (``2``, ``-0.5``), else None."""
        if node[0] == "num":
            return node[1]
        if node[0] == "neg" and node[1][0] == "num":
            return -node[1][1]
        return None

    def const(self, stmt, node, what: str) -> int:
        if node[0] == "num" and isinstance(node[1], int):
            return node[1]
        if node[0] == "neg" and node[1][0] == "num" and isinstance(node[1][1], int):
            return -node[1][1]
        self.fail(stmt, f"{what} must be a whole number written out", node)

    def ev(self, stmt, i: int, node) -> list:
        kind = node[0]
        if kind == "name":
            if node[1] not in self.env:
                self.fail(stmt, f"{node[1]!r} is not defined (inputs and earlier statements: {', '.join(self.env)})",
                          node)
            return self.env[node[1]]
        if kind == "num":  # jax's default 32-bit types
            return [np.asarray(node[1], dtype=np.int32 if isinstance(node[1], int) else np.float32)] * self.n
        if kind == "neg":
            return [-v for v in self.ev(stmt, i, node[1])]
        if kind == "bin":
            # a number written out stays a Python number: it takes the array's type, as a weak type does in jax
            a, b = (self.literal(n) if self.literal(n) is not None else self.ev(stmt, i, n) for n in node[2:4])
            a = [a] * self.n if not isinstance(a, list) else a
            b = [b] * self.n if not isinstance(b, list) else b
            if node[1] == "@" and np.ndim(a[0]) >= 1 and np.ndim(b[0]) >= 1:
                k = a[0].shape[-1]
                try:
                    self.flops += 2 * k * int(np.prod(np.matmul(a[0], b[0]).shape, dtype=np.int64))
                except ValueError as e:
                    self.fail(stmt, f"shapes do not multiply: {e}")
            try:
                op = {"+": np.add, "-": np.subtract, "*": np.multiply, "%": np.mod, "@": np.matmul}[node[1]]
                return [_jax_type(op(x, y), x, y) for x, y in zip(a, b)]
            except ValueError as e:
                self.fail(stmt, f"shapes do not broadcast: {e}")
        if kind == "index":
            vals = self.ev(stmt, i, node[1])
            key = tuple(slice(*s) if isinstance(s, tuple) else s for s in node[2])
            if len(key) > vals[0].ndim:
                self.fail(stmt, f"{len(key)} indices for an array of rank {vals[0].ndim}")
            try:
                return [v[key] for v in vals]
            except IndexError as e:
                self.fail(stmt, f"index out of range: {e}")
        if kind == "call":
            return self.call(stmt, i, node)
        self.fail(stmt, "a string or tuple cannot stand alone here")

    def call(self, stmt, i, node) -> list:
        _, f, args, kwargs, _ = node
        kw = dict(kwargs)
        if f in ("axis_index", "axis_size"):
            if len(args) + len(kw) != 1 or set(kw) - {"axis_name"}:
                self.fail(stmt, f"{f} takes one argument: the mesh axes")
            axes = self.axes_of(stmt, args[0] if args else kw["axis_name"])
            if f == "axis_size":  # known when jax traces: no collective
                return [np.asarray(len(groups(self.mesh, axes)[0]), dtype=np.int32)] * self.n
            return [np.asarray(_position(c, axes, self.mesh), dtype=np.int32) for c in self.coords]
        if f == "einsum":
            if len(args) < 2 or args[0][0] != "str":
                self.fail(stmt, 'einsum takes a spec string and arrays: einsum("bd,df->bf", a, w)')
            ops = [self.ev(stmt, i, a) for a in args[1:]]
            spec = args[0][1].replace(" ", "")
            if "->" in spec and "." not in spec:
                dims = {c: n for letters, o in zip(spec.split("->")[0].split(","), ops)
                        for c, n in zip(letters, np.shape(o[0]))}
                self.check_size(stmt, int(np.prod([dims.get(c, 1) for c in spec.split("->")[1]], dtype=np.int64)))
            try:
                out = [np.einsum(args[0][1], *(o[d] for o in ops)) for d in range(self.n)]
            except ValueError as e:
                self.fail(stmt, f"einsum {args[0][1]!r}: {e}")
            sizes = {}
            for letters, o in zip(args[0][1].replace(" ", "").split("->")[0].split(","), ops):
                if "." not in letters:
                    sizes.update(zip(letters, o[0].shape))
            if len(ops) == 2 and len(sizes) == len(set("".join(args[0][1].split("->")[0].split(",")))):
                self.flops += 2 * int(np.prod(list(sizes.values()), dtype=np.int64))
            return out
        if f in REDUCTIONS:
            if len(args) != 1 or set(kw) - {"axis", "keepdims"}:
                self.fail(stmt, f"{f}(x, axis=0, keepdims=0): one array, an optional axis")
            vals = self.ev(stmt, i, args[0])
            axis = self.const(stmt, kw["axis"], f"{f}'s axis") if "axis" in kw else None
            keep = bool(self.const(stmt, kw.get("keepdims", ("num", 0)), "keepdims (0 or 1)"))
            if axis is not None and not -vals[0].ndim <= axis < vals[0].ndim:
                self.fail(stmt, f"{f}: axis {axis} out of range for rank {vals[0].ndim}", kw["axis"])
            if f in ("max", "min") and vals[0].size == 0:
                self.fail(stmt, f"{f} of an empty array")
            reduce = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[f]
            out = []
            for v in vals:  # jax keeps int32 sums in int32 and means in float32
                r = np.asarray(reduce(v, axis=axis, keepdims=keep))
                out.append(r.astype(v.dtype) if f != "mean" or v.dtype.kind == "f" else r.astype(np.float32))
            return out
        if f == "zeros_like":
            if len(args) != 1:
                self.fail(stmt, "zeros_like takes one array")
            return [np.zeros_like(v) for v in self.ev(stmt, i, args[0])]
        if f == "dynamic_slice_in_dim":
            if len(args) != 3:
                self.fail(stmt, "dynamic_slice_in_dim(x, start, size, axis=0)")
            vals, starts = self.ev(stmt, i, args[0]), self.ev(stmt, i, args[1])
            size = self.const(stmt, args[2], "the slice's size")
            axis = self.const(stmt, kw.get("axis", ("num", 0)), "the slice's axis")
            if not 0 <= axis < vals[0].ndim or not 0 < size <= vals[0].shape[axis] or starts[0].ndim:
                self.fail(stmt, "dynamic_slice_in_dim: a scalar start, 0 < size <= the dimension, a valid axis")
            out = []
            for v, s in zip(vals, starts):  # jax clamps the start so the slice stays inside the array
                s = min(max(int(s), 0), v.shape[axis] - size)
                out.append(np.take(v, range(s, s + size), axis=axis))
            return out
        if f == "roll":
            if len(args) != 2:
                self.fail(stmt, "roll takes an array and a shift: roll(x, 1, axis=0)")
            shift = self.const(stmt, args[1], "roll's shift")
            axis = self.const(stmt, kw.get("axis", ("num", 0)), "roll's axis")
            vals = self.ev(stmt, i, args[0])
            if not -vals[0].ndim <= axis < max(1, vals[0].ndim):
                self.fail(stmt, f"roll: axis {axis} out of range for rank {vals[0].ndim}", kw.get("axis"))
            return [np.roll(v, shift, axis=axis) for v in vals]
        return self.collective(stmt, i, f, args, kw)

    def collective(self, stmt, i, f, args, kw) -> list:
        return collective(self, stmt, i, f, args, kw)

    def check_size(self, stmt, per_device: int) -> None:
        if per_device * self.n > MAX_ELEMENTS:
            self.fail(stmt, f"this statement would hold {per_device} elements on each of {self.n} devices, more "
                            f"than the {MAX_ELEMENTS} shardmap runs (the cost does not depend on the values: scale "
                            "the shapes down)")

    def bytes_of(self, stmt, node) -> int:
        """Bytes per element of an expression: those of the first input it mentions (4 for a bare number)."""
        if node[0] == "name":
            return self.bytes.get(node[1], 4)
        for child in node[1:]:
            if isinstance(child, tuple) and child and isinstance(child[0], str):
                found = self.bytes_of(stmt, child)
                if found:
                    return found
            elif isinstance(child, tuple):
                for c in child:
                    if isinstance(c, tuple) and c and isinstance(c[0], str):
                        found = self.bytes_of(stmt, c)
                        if found:
                            return found
        return 0 if node[0] != "num" else 4


def _assemble(r: _Runner, name: str, spec: Spec, text: str) -> np.ndarray:
    vals = r.env[name]
    ndim = vals[0].ndim
    if len(spec.dims) > ndim:
        raise NotationError(f"out spec {spec} has more entries than {name} has dimensions ({ndim})", text, 0, len(text))
    dims = spec.dims + ((),) * (ndim - len(spec.dims))
    used = set(spec.axes)
    shape = [n * int(np.prod([r.mesh[a] for a in axes])) for n, axes in zip(vals[0].shape, dims)]
    result = np.zeros(shape, dtype=vals[0].dtype)
    written: dict[tuple, np.ndarray] = {}
    for d, c in enumerate(r.coords):
        key = tuple(_position(c, axes, r.mesh) for axes in dims)
        if key in written and not np.array_equal(written[key], vals[d]):
            varying = [a for a in r.mesh if a not in used]
            raise NotationError(f"{name} differs between devices along {', '.join(varying)}, which its out spec "
                                f"{spec} does not split: shard it over them or reduce it first", text, 0, len(text))
        written[key] = vals[d]
        idx = tuple(slice(k * n, (k + 1) * n) for k, n in zip(key, vals[0].shape))
        result[idx] = vals[d]
    return result


def _names(node) -> set[str]:
    """Every name an expression tree reads (its nodes are tuples that start with their kind)."""
    if isinstance(node, tuple) and node and node[0] == "name":
        return {node[1]}
    if isinstance(node, tuple):
        return set().union(*(_names(child) for child in node if isinstance(child, tuple)))
    return set()


def live_statements(program: Program) -> set[int]:
    """The statements whose values reach an output (XLA drops the others, collectives included)."""
    wanted = {o.name for o in program.outputs}
    live = set()
    for i in range(len(program.body) - 1, -1, -1):
        stmt = program.body[i]
        if stmt.target in wanted:
            live.add(i)
            wanted.discard(stmt.target)
            wanted |= _names(stmt.expr)
    return live


def run(program: Program, values: Mapping[str, np.ndarray] | None = None) -> RunResult:
    """Run ``program`` on every device (inputs: ``values`` by name, default ``arange`` of each global shape)."""
    r = _Runner(program, values)
    steps = []
    for i, stmt in enumerate(program.body):
        r.flops = 0
        vals = [np.asarray(v) for v in r.ev(stmt, i, stmt.expr)]
        r.check_size(stmt, vals[0].size)
        # jax's type: bf16 when every float it reads is bf16 (ints and numbers written out take its type)
        floats = [n for n in _names(stmt.expr) if n in r.env and np.asarray(r.env[n][0]).dtype.kind == "f"]
        bf16 = vals[0].dtype == np.float32 and bool(floats) and all(n in r.bf16 for n in floats)
        (r.bf16.add if bf16 else r.bf16.discard)(stmt.target)
        r.env[stmt.target] = vals
        r.bytes[stmt.target] = r.bytes_of(stmt, stmt.expr) or 4
        steps.append(StepResult(stmt.target, stmt.text, vals[0].shape, "bfloat16" if bf16 else str(vals[0].dtype),
                                tuple(vals), r.flops))
    outputs = {}
    for out in program.outputs:
        if out.name not in r.env:
            raise NotationError(f"output {out.name!r} is never assigned", str(out.spec), 0)
        outputs[out.name] = _assemble(r, out.name, out.spec, f"{out.name}: {out.spec}")
    return RunResult(program, r.inputs, tuple(steps), tuple(r.events), outputs)
