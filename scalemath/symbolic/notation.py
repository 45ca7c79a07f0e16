"""The book's sharding notation: arrays with named dimensions subscripted by mesh axes.

``A[I_X, J]`` shards I over mesh axis X; ``J_XY`` (or ``J_{XY}``, ``J_{X,Y}``) shards J over
X and Y; ``C[I, K]{U_X}`` holds partial sums still to be reduced over X. A contraction is
written ``A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]`` (``·``, ``*`` or ``,`` also separate the
operands); a dimension in both inputs and the output is a batch dimension, as in
``A[B_X, I, J] @ C[B_X, J, K] -> D[B_X, I, K]``. Parsing is by hand, with the position of every token, so that an error can put
a caret under the fault.

>>> c = parse_contraction("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", {"X": 4, "Y": 2})
>>> str(c), c.contracting
('A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]', ('J',))
>>> str(parse_array("C[I, K]{U_XY}"))
'C[I, K]{U_XY}'
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import ScalemathError

__all__ = ["parse_reshard", "NotationError", "Dim", "Array", "Contraction", "parse_array", "parse_contraction", "parse_mesh"]


class NotationError(ScalemathError, ValueError):
    """A pattern that does not parse or breaks a sharding rule; shows a caret under the fault."""

    exit_code = 2

    def __init__(self, reason: str, text: str, start: int, end: int | None = None, hint: str = ""):
        self.reason, self.text, self.start = reason, text, start
        shown, column, width = _display(text, start, end or start + 1)
        lines = [reason, "  " + shown, "  " + " " * column + "^" * width]
        if hint:
            lines.append("hint: " + hint)
        super().__init__("\n".join(lines))


_WINDOW = 100  # characters of a long pattern shown around the fault


def _display(text: str, start: int, end: int) -> tuple[str, int, int]:
    """``text`` as one printable line (at most about ``_WINDOW`` characters around the fault), and the
    column and width of the caret under ``text[start:end]``: control characters (a newline, a tab, a
    terminal escape) are shown as a space or ``?`` and wide characters take two columns.

    >>> _display("A[I,\tJ\x1b]", 6, 7)
    ('A[I, J?]', 6, 1)
    >>> _display("A[１, J]", 5, 6)
    ('A[１, J]', 6, 1)
    """
    lo, hi = 0, len(text)
    if hi > _WINDOW:
        lo = max(0, min(start - _WINDOW // 2, hi - _WINDOW))
        hi = lo + _WINDOW
    prefix, suffix = ("..." if lo else ""), ("..." if hi < len(text) else "")
    columns, chars, column = [], [], len(prefix)
    for c in text[lo:hi]:
        c = " " if c in "\t\n\r\v\f" else c if c.isprintable() else "?"
        columns.append(column)
        chars.append(c)
        column += 2 if unicodedata.east_asian_width(c) in "WF" else 1

    def at(i: int) -> int:  # the column of text[i] (past the end: after the last character shown)
        return columns[i - lo] if 0 <= i - lo < len(columns) else column

    first, last = at(max(start, lo)), at(min(max(end, lo), hi))
    return prefix + "".join(chars) + suffix, first, max(1, last - first)


def _axes_text(axes: tuple[str, ...]) -> str:
    if all(len(a) == 1 for a in axes):
        return "".join(axes)
    return "{" + ",".join(axes) + "}"


@dataclass(frozen=True)
class Dim:
    """A named dimension and the mesh axes it is sharded over (in traversal order)."""

    name: str
    axes: tuple[str, ...] = ()
    span: tuple[int, int] = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        return self.name + ("_" + _axes_text(self.axes) if self.axes else "")


@dataclass(frozen=True)
class Array:
    """A named array: its dimensions with their shardings and the axes it is unreduced over."""

    name: str
    dims: tuple[Dim, ...]
    unreduced: tuple[str, ...] = ()
    span: tuple[int, int] = field(default=(0, 0), compare=False, repr=False)

    def __str__(self) -> str:
        text = f"{self.name}[{', '.join(str(d) for d in self.dims)}]"
        return text + ("{U_" + _axes_text(self.unreduced) + "}" if self.unreduced else "")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    @property
    def axes(self) -> tuple[str, ...]:
        """Every mesh axis the array is sharded over."""
        return tuple(a for d in self.dims for a in d.axes)

    def dim(self, name: str) -> Dim:
        return next(d for d in self.dims if d.name == name)

    def with_dim(self, name: str, axes: tuple[str, ...]) -> "Array":
        return Array(self.name, tuple(Dim(d.name, axes) if d.name == name else Dim(d.name, d.axes)
                                      for d in self.dims), self.unreduced)

    def with_unreduced(self, axes: tuple[str, ...]) -> "Array":
        return Array(self.name, tuple(Dim(d.name, d.axes) for d in self.dims), axes)

    def plain(self) -> "Array":
        """The same array without positions (for comparisons and printing)."""
        return Array(self.name, tuple(Dim(d.name, d.axes) for d in self.dims), self.unreduced)


@dataclass(frozen=True)
class Contraction:
    """``lhs · rhs -> out``: dimensions in both inputs but not the output are summed over."""

    lhs: Array
    rhs: Array
    out: Array
    text: str = field(default="", compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.lhs} @ {self.rhs} -> {self.out}"

    @property
    def contracting(self) -> tuple[str, ...]:
        return tuple(n for n in self.lhs.names if n in self.rhs.names and n not in self.out.names)

    @property
    def batch(self) -> tuple[str, ...]:
        """Dimensions in both inputs and the output (an einsum's batch dimensions), in the lhs's order."""
        return tuple(n for n in self.lhs.names if n in self.rhs.names and n in self.out.names)

    @property
    def lhs_free(self) -> tuple[str, ...]:
        return tuple(n for n in self.lhs.names if n not in self.contracting and n not in self.batch)

    @property
    def rhs_free(self) -> tuple[str, ...]:
        return tuple(n for n in self.rhs.names if n not in self.contracting and n not in self.batch)


_TOKEN = re.compile(r"\s*(?:(?P<arrow>->|→)|(?P<op>@|·|\*|,)|(?P<name>[A-Za-z][A-Za-z0-9]*)|(?P<punct>[\[\]{}_])|(?P<bad>\S))")


def _tokens(text: str):
    pos = 0
    out = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            break
        kind = m.lastgroup
        value = m.group(kind)
        start = m.start(kind)
        if kind == "bad":
            raise NotationError(f"unexpected character {value!r}", text, start,
                                hint="write arrays like A[I_X, J] and join them with @ and ->")
        out.append((kind, value, start, m.end(kind)))
        pos = m.end()
    out.append(("end", "", len(text.rstrip()), len(text.rstrip()) + 1))
    return out


class _Parser:
    def __init__(self, text: str, mesh: Mapping[str, int] | None):
        if len(text) > 1000:
            raise NotationError("pattern is longer than 1000 characters", text[:60] + "...", 0)
        self.text, self.mesh = text, mesh
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def take(self, kind: str, value: str | None = None, what: str = ""):
        tok = self.peek()
        if tok[0] != kind or (value is not None and tok[1] != value):
            found = "the end" if tok[0] == "end" else repr(tok[1])
            raise NotationError(f"expected {what or repr(value) or kind}, found {found}", self.text, tok[2], tok[3])
        self.i += 1
        return tok

    def axes(self) -> list[tuple[str, int, int]]:
        """Axis names after an underscore: ``XY`` (single letters), ``{XY}`` or ``{data,model}``."""
        tok = self.peek()
        if tok[0] == "punct" and tok[1] == "{":
            self.i += 1
            names = []
            while True:
                t = self.take("name", what="a mesh axis name")
                names.append(t)
                if self.peek()[1] == ",":
                    self.i += 1
                    continue
                self.take("punct", "}", what="'}' to close the axes")
                break
            if len(names) == 1:  # {XY} = X and Y
                _, n, s, _ = names[0]
                return [(c, s + k, s + k + 1) for k, c in enumerate(n)]
            return [(t[1], t[2], t[3]) for t in names]
        t = self.take("name", what="mesh axes after '_' (e.g. I_X or J_XY)")
        return [(c, t[2] + k, t[2] + k + 1) for k, c in enumerate(t[1])]

    def check_axes(self, axes, seen: dict[str, int]):
        for name, s, e in axes:
            if self.mesh is not None and name not in self.mesh:
                known = ", ".join(sorted(self.mesh)) or "none"
                raise NotationError(f"unknown mesh axis {name!r}", self.text, s, e,
                                    hint=f"the mesh has axes {known}; give sizes with --mesh {name}=4")
            if name in seen:
                raise NotationError(f"mesh axis {name} is used twice in one array", self.text, s, e,
                                    hint="an axis shards at most one dimension of an array; once used it is spent")
            seen[name] = s

    def array(self, default_name: str) -> Array:
        start = self.peek()[2]
        name = default_name
        if self.peek()[0] == "name":
            name = self.take("name")[1]
        self.take("punct", "[", what="'[' to open the dimensions")
        dims, seen_axes, seen_dims = [], {}, {}
        while True:
            t = self.take("name", what="a dimension name")
            if t[1] in seen_dims:
                raise NotationError(f"dimension {t[1]} appears twice in {name}", self.text, t[2], t[3])
            seen_dims[t[1]] = t[2]
            axes = []
            if self.peek()[1] == "_":
                self.i += 1
                axes = self.axes()
                self.check_axes(axes, seen_axes)
            dims.append(Dim(t[1], tuple(a[0] for a in axes), (t[2], self.toks[self.i - 1][3])))
            if self.peek()[1] == ",":
                self.i += 1
                continue
            self.take("punct", "]", what="',' or ']'")
            break
        unreduced = ()
        if self.peek()[1] == "{":
            self.i += 1
            u = self.take("name", what="U_<axes> for unreduced axes")
            if not u[1].startswith("U"):
                raise NotationError("expected U_<axes> inside {...}", self.text, u[2], u[3],
                                    hint="C[I, K]{U_X} holds partial sums still to be reduced over X")
            rest = u[1][1:]
            if rest:
                raise NotationError("write the unreduced axes after an underscore, like {U_X}", self.text, u[2], u[3])
            self.take("punct", "_", what="'_' after U")
            axes = self.axes()
            self.check_axes(axes, dict(seen_axes))
            self.take("punct", "}", what="'}'")
            unreduced = tuple(a[0] for a in axes)
        return Array(name, tuple(dims), unreduced, (start, self.toks[self.i - 1][3]))


def parse_array(text: str, mesh: Mapping[str, int] | None = None) -> Array:
    """One array, such as ``A[I_X, J_Y]`` or ``C[I, K]{U_X}``."""
    p = _Parser(text, mesh)
    arr = p.array("A")
    p.take("end", what="the end of the array")
    return arr


def parse_reshard(text: str, mesh: Mapping[str, int] | None = None) -> tuple[Array, Array]:
    """``A[...] -> A[...]``: one array and the sharding it should end with (the same dimensions, in order)."""
    p = _Parser(text, mesh)
    src = p.array("A")
    p.take("arrow", what="'->' and the array as it should end")
    dst = p.array(src.name)
    p.take("end", what="the end of the pattern")
    if dst.names != src.names:
        raise NotationError(f"the result must have the same dimensions as {src.name}, in the same order "
                            f"({', '.join(src.names)})", text, *dst.span)
    if set(dst.unreduced) - set(src.unreduced):
        raise NotationError("an array cannot become unreduced over an axis by resharding", text, *dst.span)
    return src, dst


def parse_contraction(text: str, mesh: Mapping[str, int] | None = None) -> Contraction:
    """``LHS @ RHS -> OUT``, checked against the rules of sharded matmuls."""
    p = _Parser(text, mesh)
    lhs = p.array("A")
    if p.peek()[0] == "op":
        p.i += 1
    rhs = p.array("B")
    p.take("arrow", what="'->' and the output array")
    out = p.array("C")
    p.take("end", what="the end of the pattern")
    c = Contraction(lhs, rhs, out, text)
    _validate(c, text)
    return c


def _validate(c: Contraction, text: str) -> None:
    if not c.contracting:
        raise NotationError("no dimension is contracted: none appears in both inputs and not the output",
                            text, c.rhs.span[0], c.rhs.span[1],
                            hint="the contracting dimension must appear in both inputs, e.g. A[I, J] @ B[J, K]")
    for d in c.out.dims:
        if d.name not in c.lhs.names and d.name not in c.rhs.names:
            raise NotationError(f"output dimension {d.name} comes from nowhere", text, d.span[0], d.span[1],
                                hint=f"every output dimension must be a dimension of an input ({', '.join(c.lhs_free + c.rhs_free)})")
    for n in c.lhs_free + c.rhs_free:
        if n not in c.out.names:
            arr = c.lhs if n in c.lhs.names else c.rhs
            d = arr.dim(n)
            raise NotationError(f"dimension {n} of {arr.name} is missing from the output", text, d.span[0], d.span[1],
                                hint="a dimension in only one input must appear in the output")
    if c.lhs.unreduced or c.rhs.unreduced:
        arr = c.lhs if c.lhs.unreduced else c.rhs
        raise NotationError(f"input {arr.name} is unreduced; reduce it before the matmul", text, arr.span[0], arr.span[1])


MAX_MESH_AXES = 16


def parse_mesh(text: str) -> dict[str, int]:
    """``X=4,Y=2`` -> ``{"X": 4, "Y": 2}``.

    >>> parse_mesh("X=4, Y=2")
    {'X': 4, 'Y': 2}
    """
    mesh: dict[str, int] = {}
    if len(text) > 1000:
        raise NotationError("the mesh is longer than 1000 characters", text[:60] + "...", 0, hint="e.g. --mesh X=4,Y=2")
    parts = [s.strip() for s in text.split(",") if s.strip()]
    if len(parts) > MAX_MESH_AXES:
        raise NotationError(f"the mesh has {len(parts)} axes; at most {MAX_MESH_AXES}", text, 0, len(text))
    for part in parts:
        name, sep, size = part.partition("=")
        name, size = name.strip(), size.strip()
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name) or not (size.isascii() and size.isdigit()) or len(size) > 6:
            raise NotationError("cannot read the mesh; write NAME=SIZE pairs", text, text.find(part), text.find(part) + len(part),
                                hint="e.g. --mesh X=4,Y=2")
        if name in mesh:
            raise NotationError(f"mesh axis {name} is given twice", text, text.find(part), text.find(part) + len(part))
        if int(size) < 1:
            raise NotationError(f"mesh axis {name} must have a size of at least 1", text, text.find(part), text.find(part) + len(part))
        mesh[name] = int(size)
    if not mesh:
        raise NotationError("the mesh is empty", text, 0, hint="e.g. --mesh X=4,Y=2")
    return mesh
