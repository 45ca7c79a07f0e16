"""shard_map programs as the JAX chapter writes them: a mesh, inputs with PartitionSpecs, a body, out specs.

The notation is parsed here by hand (never evaluated as Python). A program is

- a mesh, ``X=2,Y=4`` (axes in order, devices numbered row-major as ``jax.make_mesh`` does);
- inputs ``x: i32[512] P((X, Y))``: a name, an element type (f32, bf16, f16, i32), the global shape and
  the PartitionSpec (``P(X, None)``, ``P((X, Y))``; axis names may be quoted, as in Python);
- a body of assignments, one per line or separated by ``;``::

      y = pmean(x[:4], (X, Y))           psum, pmean, all_gather, psum_scatter, all_to_all over mesh axes
      z = ppermute(x, Y, shift=-1)       a ring shift: device j sends to j + shift (mod the axis size)
      z = ppermute(x, 'Y', perm=[(0, 1), (1, 2)])   explicit (source, target) pairs, or a comprehension
          [(j, (j - 1) % n) for j in range(n)] (see shardmap_perm); a device that receives nothing gets zeros
      i = axis_index(Y)                  each device's position along Y
      n = axis_size(Y)                   the number of devices along Y (as psum(1, Y)), known before the run
      r = roll(x, 1, axis=0) - x         jnp.roll within the shard; + - * between arrays and numbers
      o = einsum("bd,df->bf", a, w)      a local einsum (batch dimensions allowed)
      c = dynamic_slice_in_dim(w, (i + 1) % 4 * 2, 2, axis=0)   a block chosen per device; + - * % @ as in Python
      z = zeros_like(o)                  zeros of o's shape and type
      m = mean(x, axis=0, keepdims=1)    sum, mean, max, min within the shard (all of it without axis)

  ``all_gather(x, Y, axis=0)``, ``psum_scatter(x, Y, scatter_dimension=0)`` and
  ``all_to_all(x, Y, split_axis, concat_axis)`` are the book's collectives, i.e. jax's ``tiled=True``
  forms (concatenate or split along a dimension); spelled as jax spells them, ``jax.lax.all_gather(x, 'Y')``,
  they take jax's default ``tiled=False`` (stack a new axis; remove a dimension N long);
- outputs ``y: P(None)``, one per returned name.

Calls may be written as in Python, ``jax.lax.psum(x, axis_name='X')``, ``jnp.roll(...)``.

>>> p = parse_program("X=2,Y=4", ["x: i32[512] P((X, Y))"], "y = pmean(x[:4], (X, Y))", ["y: P(None)"])
>>> p.inputs[0].local_shape(p.mesh), p.body[0].target
((64,), 'y')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from .notation import NotationError, parse_mesh
from .shardmap_perm import resolve_perms
from .shardmap_syntax import COLLECTIVES, FUNCTIONS, MAX_STATEMENTS, REDUCTIONS, Spec, _P

__all__ = ["DTYPES", "Spec", "Input", "Output", "Statement", "Program", "parse_program", "parse_spec",
           "COLLECTIVES", "FUNCTIONS", "REDUCTIONS"]

#: element types: name -> (bytes per element, numpy dtype name)
DTYPES = {"f32": (4, "float32"), "float32": (4, "float32"), "bf16": (2, "float32"), "bfloat16": (2, "float32"),
          "f16": (2, "float16"), "float16": (2, "float16"), "i32": (4, "int32"), "s32": (4, "int32"),
          "int32": (4, "int32")}


@dataclass(frozen=True)
class Input:
    name: str
    dtype: str
    shape: tuple[int, ...]
    spec: Spec

    def local_shape(self, mesh: Mapping[str, int]) -> tuple[int, ...]:
        dims = self.spec.dims + ((),) * (len(self.shape) - len(self.spec.dims))
        out = []
        for n, axes in zip(self.shape, dims):
            k = 1
            for a in axes:
                k *= mesh[a]
            out.append(n // k)
        return tuple(out)


@dataclass(frozen=True)
class Output:
    name: str
    spec: Spec


@dataclass(frozen=True)
class Statement:
    """``target = expr``; ``expr`` is a tree of tuples: ("name", s), ("num", v), ("str", s), ("tuple", items),
    ("call", f, args, kwargs), ("bin", op, l, r), ("neg", e), ("index", e, slices)."""

    target: str
    expr: tuple
    text: str
    #: id(node) -> (node, start, end) in ``text``: where each operand is written, for an error's caret
    spans: dict = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Program:
    mesh: dict
    inputs: tuple[Input, ...]
    body: tuple[Statement, ...]
    outputs: tuple[Output, ...]

    @property
    def devices(self) -> int:
        n = 1
        for v in self.mesh.values():
            n *= v
        return n

def parse_spec(text: str) -> Spec:
    p = _P(text)
    s = p.spec()
    p.take(kind="end", what="the end of the spec")
    return s


def _check_spec(spec: Spec, mesh, rank: int | None, text: str) -> None:
    seen = set()
    for a in spec.axes:
        if a not in mesh:
            raise NotationError(f"unknown mesh axis {a!r} (the mesh has {', '.join(mesh)})", text, 0, len(text))
        if a in seen:
            raise NotationError(f"mesh axis {a} is used twice in one PartitionSpec", text, 0, len(text))
        seen.add(a)
    if rank is not None and len(spec.dims) > rank:
        raise NotationError(f"the PartitionSpec has {len(spec.dims)} entries for an array of rank {rank}", text, 0,
                            len(text))


def _input(text: str, mesh) -> Input:
    p = _P(text)
    name = p.take(kind="name", what="the input's name")[1]
    p.take(":", what="':' after the name (x: f32[8, 16] P(X, None))")
    dtype = p.take(kind="name", what="an element type (f32, bf16, f16, i32)")[1]
    if dtype not in DTYPES:
        raise NotationError(f"unknown element type {dtype!r}", text, p.toks[p.i - 1][2],
                            hint="f32, bf16, f16 or i32")
    p.take("[", what="'[' and the global shape")
    shape = []
    while True:
        kind, value, pos = p.take(kind="num", what="a dimension size")
        if "." in value or not 0 < int(value) <= 2 ** 31:
            raise NotationError("a dimension size is a whole number from 1 to 2^31", text, pos, pos + len(value))
        shape.append(int(value))
        if p.accept("]"):
            break
        p.take(",", what="',' or ']'")
    spec = p.spec() if p.peek()[0] != "end" else Spec(())
    p.take(kind="end", what="the end of the input")
    _check_spec(spec, mesh, len(shape), text)
    inp = Input(name, dtype, tuple(shape), spec)
    for n, axes in zip(shape, spec.dims):
        k = 1
        for a in axes:
            k *= mesh[a]
        if n % k:
            raise NotationError(f"{name}: a dimension of {n} does not split evenly over {'x'.join(axes)} ({k} ways)",
                                text, 0, len(text))
    return inp


def _statements(text: str) -> list[Statement]:
    out = []
    for line in re.split(r"[;\n]", text):
        if not line.strip() or line.strip().startswith("#"):
            continue
        p = _P(line)
        target = p.take(kind="name", what="a name to assign (y = ...)")[1]
        p.take("=", what="'=' after the name")
        expr = p.expr()
        p.take(kind="end", what="the end of the statement")
        off = len(line) - len(line.lstrip())
        out.append(Statement(target, expr, line.strip(), {k: (n, a - off, b - off) for k, (n, a, b) in p.spans.items()}))
        if len(out) > MAX_STATEMENTS:
            raise NotationError(f"the body has more than {MAX_STATEMENTS} statements", line, 0, len(line))
    return out


def parse_program(mesh_text: str, inputs: list[str] | tuple[str, ...], body: str | list[str],
                  outputs: list[str] | tuple[str, ...]) -> Program:
    """The program from its four parts (each as the user typed it); a fault raises :class:`NotationError`."""
    mesh = parse_mesh(mesh_text)
    if not inputs:
        raise NotationError("give at least one input, e.g. --in \"x: f32[8, 16] P(X, None)\"", "", 0)
    ins = tuple(_input(t, mesh) for t in inputs)
    names = [i.name for i in ins]
    if len(set(names)) != len(names):
        raise NotationError("two inputs share a name", ", ".join(names), 0)
    stmts = tuple(resolve_perms(_statements(body if isinstance(body, str) else "\n".join(body)), mesh))
    outs = []
    for t in outputs:
        p = _P(t)
        name = p.take(kind="name", what="the name of a result")[1]
        p.take(":", what="':' and its PartitionSpec (y: P(X, None))")
        spec = p.spec()
        p.take(kind="end", what="the end of the out spec")
        _check_spec(spec, mesh, None, t)
        outs.append(Output(name, spec))
    if not outs:
        raise NotationError("give at least one output, e.g. --out \"y: P(None)\"", "", 0)
    return Program(mesh, ins, stmts, tuple(outs))

