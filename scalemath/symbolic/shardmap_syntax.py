"""The notation of shard_map bodies, read by hand (never evaluated as Python): tokens, PartitionSpecs and
expressions, as :mod:`scalemath.symbolic.shardmap` takes them.

An expression is a tree of tuples, each starting with its kind: ("name", s), ("num", v), ("str", s),
("tuple", items), ("list", items), ("comp", element, variable, range arguments) for a list comprehension
``[(i, (i + 1) % n) for i in range(n)]``, ("call", f, args, kwargs, position), ("bin", op, l, r), ("neg", e),
("index", e, slices). Calls may be written ``jax.lax.psum``, ``lax.psum`` or ``jnp.roll``; other dotted names are
refused.

>>> _P("ppermute(x, 'Y', perm=[(0, 1), (1, 0)])").expr()[3]
(('perm', ('list', (('tuple', (('num', 0), ('num', 1))), ('tuple', (('num', 1), ('num', 0)))))),)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .notation import NotationError

__all__ = ["UNTILED_BY_DEFAULT", "COLLECTIVES", "REDUCTIONS", "FUNCTIONS", "MAX_NESTING", "MAX_TEXT", "MAX_STATEMENTS", "Spec"]

#: the collectives of the body, with their book names
COLLECTIVES = {"psum": "AllReduce", "pmean": "AllReduce", "all_gather": "AllGather",
               "psum_scatter": "ReduceScatter", "all_to_all": "AllToAll", "ppermute": "CollectivePermute"}
REDUCTIONS = {"sum", "mean", "max", "min"}
#: spelled as jax spells them (``jax.lax.all_gather``), these take jax's default ``tiled=False``; the short
#: form (``all_gather``) is the book's tiled collective unless ``tiled=False`` is written
UNTILED_BY_DEFAULT = ("all_gather", "psum_scatter", "all_to_all")
FUNCTIONS = set(COLLECTIVES) | REDUCTIONS | {"axis_index", "axis_size", "roll", "einsum", "dynamic_slice_in_dim",
                                               "zeros_like"}
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



_TOK = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
                  r"|(?P<str>'[^']*'|\"[^\"]*\")|(?P<op>[-+*%@=:,()\[\]]))")


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
        self.spans: dict[int, tuple] = {}  # id(node) -> (node, start, end) of each operand, for error carets

    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def fail(self, what: str, hint: str = ""):
        kind, value, pos = self.peek()
        found = "the end" if kind == "end" else repr(value)
        raise NotationError(f"expected {what}, found {found}", self.text, pos, pos + max(1, len(value)), hint=hint)

    def take(self, value=None, kind=None, what=""):
        t = self.peek()
        if (value is not None and t[1] != value) or (kind is not None and t[0] != kind) or t[0] == "end" and value \
                or kind == "name" and "." in t[1]:
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
            left = self._spanned(("bin", op, left, self.term()), left)
        return left

    def term(self):
        left = self.factor()
        while self.peek()[1] in ("*", "%", "@") and self.peek()[0] == "op":
            op = self.take()[1]
            left = self._spanned(("bin", op, left, self.factor()), left)
        return left

    def _spanned(self, node, first):
        """``node``, its span recorded from where ``first`` starts to the last token taken."""
        if id(first) in self.spans:
            last = self.toks[self.i - 1]
            self.spans[id(node)] = (node, self.spans[id(first)][1], last[2] + len(last[1]))
        return node

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
        elif kind == "op" and value == "[":
            node = self.listed(pos)
        elif kind == "name":
            self.i += 1
            if self.peek()[1] == "(" and self.peek()[0] == "op":
                node = self.call(value, pos)
            elif "." in value:
                raise NotationError(f"{value!r}: a dotted name is only a call such as jax.lax.psum(x, 'X')",
                                    self.text, pos, pos + len(value))
            else:
                node = ("name", value)
        else:
            self.fail("a name, a number or a call")
        while self.peek()[1] == "[" and self.peek()[0] == "op":
            self.i += 1
            node = ("index", node, self.slices())
        last = self.toks[self.i - 1]
        self.spans[id(node)] = (node, pos, last[2] + len(last[1]))
        return node

    def whole(self, value: str, pos: int) -> int:
        """A whole number written out: at most 2^31 - 1, jax's int32."""
        if "." in value or len(value) > 10 or int(value) > 2 ** 31 - 1:
            raise NotationError("a whole number here is at most 2^31 - 1 (jax's int32)", self.text, pos,
                                pos + len(value))
        return int(value)

    def listed(self, pos: int):
        """``[a, b, ...]`` or ``[element for name in range(stop)]`` (also ``range(start, stop)``)."""
        self.i += 1
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise NotationError(f"too deeply nested (more than {MAX_NESTING} brackets)", self.text, pos, pos + 1)
        items = []
        while not self.accept("]"):
            items.append(self.expr())
            if len(items) == 1 and self.peek()[:2] == ("name", "for"):
                self.i += 1
                var = self.take(kind="name", what="the comprehension's variable")[1]
                if self.peek()[:2] != ("name", "in") or self.peek(1)[:2] != ("name", "range"):
                    self.fail("'in range(...)': a comprehension here runs over range(n) only")
                self.i += 2
                self.take("(", what="'(' after range")
                bounds = [self.expr()]
                if self.accept(","):
                    bounds.append(self.expr())
                self.take(")", what="')' closing range(...)")
                self.take("]", what="']' closing the comprehension")
                self.depth -= 1
                return ("comp", items[0], var, tuple(bounds))
            if not self.accept(","):
                self.take("]", what="',' or ']'")
                break
        self.depth -= 1
        return ("list", tuple(items))

    def call(self, fname: str, pos: int):
        spelled = fname
        for prefix in ("jax.lax.", "lax.", "jax.numpy.", "jnp."):
            if fname.startswith(prefix) and "." not in fname[len(prefix):]:
                fname = fname[len(prefix):]
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
        if fname in UNTILED_BY_DEFAULT and spelled != fname and "tiled" not in kwargs:
            kwargs["tiled"] = ("name", "False")  # jax's own default: the untiled form
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
