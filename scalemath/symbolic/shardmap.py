"""shard_map programs as the JAX chapter writes them: a mesh, inputs with PartitionSpecs, a body, out specs.

The notation is parsed here by hand (never evaluated as Python). A program is

- a mesh, ``X=2,Y=4`` (axes in order, devices numbered row-major as ``jax.make_mesh`` does);
- inputs ``x: i32[512] P((X, Y))``: a name, an element type (f32, bf16, f16, i32), the global shape and
  the PartitionSpec (``P(X, None)``, ``P((X, Y))``; axis names may be quoted, as in Python);
- a body of assignments, one per line or separated by ``;``::

      y = pmean(x[:4], (X, Y))           psum, pmean, all_gather, psum_scatter, all_to_all over mesh axes
      z = ppermute(x, Y, shift=-1)       a ring shift: device j sends to j + shift (mod the axis size)
      i = axis_index(Y)                  each device's position along Y
      r = roll(x, 1, axis=0) - x         jnp.roll within the shard; + - * between arrays and numbers
      o = einsum("bd,df->bf", a, w)      a local einsum (batch dimensions allowed)
      c = dynamic_slice_in_dim(w, (i + 1) % 4 * 2, 2, axis=0)   a block chosen per device; + - * % @ as in Python
      z = zeros_like(o)                  zeros of o's shape and type
      m = mean(x, axis=0, keepdims=1)    sum, mean, max, min within the shard (all of it without axis)

  ``all_gather(x, Y, axis=0)``, ``psum_scatter(x, Y, scatter_dimension=0)`` and
  ``all_to_all(x, Y, split_axis, concat_axis)`` are the book's collectives, i.e. jax's ``tiled=True``
  forms (concatenate or split along a dimension);
- outputs ``y: P(None)``, one per returned name.

>>> p = parse_program("X=2,Y=4", ["x: i32[512] P((X, Y))"], "y = pmean(x[:4], (X, Y))", ["y: P(None)"])
>>> p.inputs[0].local_shape(p.mesh), p.body[0].target
((64,), 'y')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from .notation import NotationError, parse_mesh

__all__ = ["DTYPES", "Spec", "Input", "Output", "Statement", "Program", "parse_program", "parse_spec",
           "COLLECTIVES", "FUNCTIONS"]

#: element types: name -> (bytes per element, numpy dtype name)
DTYPES = {"f32": (4, "float32"), "float32": (4, "float32"), "bf16": (2, "float32"), "bfloat16": (2, "float32"),
          "f16": (2, "float16"), "float16": (2, "float16"), "i32": (4, "int32"), "s32": (4, "int32"),
          "int32": (4, "int32")}

#: the collectives of the body, with their book names
COLLECTIVES = {"psum": "AllReduce", "pmean": "AllReduce", "all_gather": "AllGather",
               "psum_scatter": "ReduceScatter", "all_to_all": "AllToAll", "ppermute": "CollectivePermute"}
REDUCTIONS = {"sum", "mean", "max", "min"}
FUNCTIONS = set(COLLECTIVES) | REDUCTIONS | {"axis_index", "roll", "einsum", "dynamic_slice_in_dim", "zeros_like"}
MAX_NESTING = 100  # parentheses in a body's expression
MAX_TEXT = 4000
MAX_STATEMENTS = 256


@dataclass(frozen=True)
class Spec:
    """A PartitionSpec: per dimension, the mesh axes it is split over (major first); () = replicated."""

    dims: tuple[tuple[str, ...], ...]

    def __str__(self) -> str:
        def one(axes):
            return "None" if not axes else axes[0] if len(axes) == 1 else "(" + ", ".join(axes) + ")"
        return "P(" + ", ".join(one(a) for a in self.dims) + ")"

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(a for d in self.dims for a in d)


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


_TOK = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<str>'[^']*'|\"[^\"]*\")"
                  r"|(?P<op>[-+*%@=:,()\[\]]))")


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOK.match(text, pos)
        if not m:
            bad = len(text) - len(text[pos:].lstrip())
            raise NotationError(f"unexpected character {text[bad]!r}", text, bad,
                                hint="write e.g. y = psum(x, X); see scalemath shardmap --help")
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    out.append(("end", "", len(text)))
    return out


class _P:
    def __init__(self, text: str):
        if len(text) > MAX_TEXT:
            raise NotationError(f"longer than {MAX_TEXT} characters", text[:60] + "...", 0)
        self.text, self.toks, self.i, self.depth = text, _tokens(text), 0, 0

    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def fail(self, what: str, hint: str = ""):
        kind, value, pos = self.peek()
        found = "the end" if kind == "end" else repr(value)
        raise NotationError(f"expected {what}, found {found}", self.text, pos, pos + max(1, len(value)), hint=hint)

    def take(self, value=None, kind=None, what=""):
        t = self.peek()
        if (value is not None and t[1] != value) or (kind is not None and t[0] != kind) or t[0] == "end" and value:
            self.fail(what or repr(value))
        self.i += 1
        return t

    def accept(self, value) -> bool:
        if self.peek()[1] == value and self.peek()[0] in ("op", "name"):
            self.i += 1
            return True
        return False

    # -- PartitionSpecs ---------------------------------------------------------------------------------
    def axis(self) -> str:
        kind, value, _ = self.peek()
        if kind == "name" and value != "None":
            self.i += 1
            return value
        if kind == "str":
            self.i += 1
            return value[1:-1]
        self.fail("a mesh axis name")

    def spec(self) -> Spec:
        if self.peek()[1] not in ("P", "PartitionSpec"):
            self.fail("a PartitionSpec such as P(X, None)")
        self.i += 1
        self.take("(", what="'(' after P")
        dims = []
        while not self.accept(")"):
            if self.accept("None"):
                dims.append(())
            elif self.accept("("):
                axes = [self.axis()]
                while self.accept(","):
                    if self.peek()[1] == ")":
                        break
                    axes.append(self.axis())
                self.take(")", what="')' closing the axes")
                dims.append(tuple(axes))
            else:
                dims.append((self.axis(),))
            if not self.accept(","):
                self.take(")", what="',' or ')'")
                break
        return Spec(tuple(dims))

    # -- expressions ------------------------------------------------------------------------------------
    def expr(self):
        left = self.term()
        while self.peek()[1] in ("+", "-") and self.peek()[0] == "op":
            op = self.take()[1]
            left = ("bin", op, left, self.term())
        return left

    def term(self):
        left = self.factor()
        while self.peek()[1] in ("*", "%", "@") and self.peek()[0] == "op":
            op = self.take()[1]
            left = ("bin", op, left, self.factor())
        return left

    def factor(self):
        kind, value, pos = self.peek()
        if kind == "op" and value == "-":
            self.i += 1
            return ("neg", self.factor())
        if kind == "num":
            self.i += 1
            node = ("num", float(value) if "." in value else self.whole(value, pos))
        elif kind == "str":
            self.i += 1
            node = ("str", value[1:-1])
        elif kind == "op" and value == "(":
            self.i += 1
            self.depth += 1
            if self.depth > MAX_NESTING:  # a bound of our own: the interpreter's recursion limit varies
                raise NotationError(f"too deeply nested (more than {MAX_NESTING} parentheses)", self.text, pos,
                                    pos + 1)
            first = self.expr()
            if self.accept(","):
                items = [first]
                while self.peek()[1] != ")":
                    items.append(self.expr())
                    if not self.accept(","):
                        break
                self.take(")", what="')'")
                node = ("tuple", tuple(items))
            else:
                self.take(")", what="')'")
                node = first
            self.depth -= 1
        elif kind == "name":
            self.i += 1
            if self.peek()[1] == "(" and self.peek()[0] == "op":
                node = self.call(value, pos)
            else:
                node = ("name", value)
        else:
            self.fail("a name, a number or a call")
        while self.peek()[1] == "[" and self.peek()[0] == "op":
            self.i += 1
            node = ("index", node, self.slices())
        return node

    def whole(self, value: str, pos: int) -> int:
        """A whole number written out: at most 2^31 - 1, jax's int32."""
        if "." in value or len(value) > 10 or int(value) > 2 ** 31 - 1:
            raise NotationError("a whole number here is at most 2^31 - 1 (jax's int32)", self.text, pos,
                                pos + len(value))
        return int(value)

    def call(self, fname: str, pos: int):
        if fname.startswith(("jax.lax.", "jnp.")):
            fname = fname.split(".")[-1]
        if fname not in FUNCTIONS:
            raise NotationError(f"unknown function {fname!r}", self.text, pos, pos + len(fname),
                                hint="known: " + ", ".join(sorted(FUNCTIONS)))
        self.take("(")
        args, kwargs = [], {}
        while not self.accept(")"):
            if self.peek()[0] == "name" and self.peek(1)[1] == "=":
                key = self.take()[1]
                self.i += 1
                kwargs[key] = self.expr()
            else:
                args.append(self.expr())
            if not self.accept(","):
                self.take(")", what="',' or ')'")
                break
        return ("call", fname, tuple(args), tuple(sorted(kwargs.items())), pos)

    def slices(self):
        out = []
        while True:
            parts, cur = [], None
            while self.peek()[1] not in (",", "]") or self.peek()[0] != "op":
                if self.accept(":"):
                    parts.append(cur)
                    cur = None
                else:
                    sign = -1 if self.accept("-") else 1
                    _, value, pos = self.take(kind="num", what="an integer index or ':'")
                    cur = sign * self.whole(value, pos)
            parts.append(cur)
            if len(parts) > 3:
                self.fail("at most start:stop:step")
            out.append(tuple(parts) if len(parts) > 1 else parts[0])
            if self.accept("]"):
                return tuple(out)
            self.take(",", what="',' or ']'")


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
        out.append(Statement(target, expr, line.strip()))
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
    stmts = tuple(_statements(body if isinstance(body, str) else "\n".join(body)))
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

