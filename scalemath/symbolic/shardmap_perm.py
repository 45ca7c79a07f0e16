"""``ppermute``'s permutations as the chapter writes them, resolved when the program is parsed (never evaluated as
Python): a list of (source, target) pairs, ``perm=[(0, 1), (1, 2), (2, 3), (3, 0)]``, or a comprehension over
``range``, ``perm=[(j, (j - 1) % axis_size) for j in range(axis_size)]``.

The numbers in a permutation are known before the program runs (jax needs them when it traces): whole numbers
written out, the comprehension's variable, and names an earlier statement bound to a whole number, to the
chapter's ``axis_size = psum(1, 'Y')`` or to ``axis_size('Y')`` (the size of the axes). They are combined with + - * and % as Python
does (``(0 - 1) % 4`` is 3). Positions are along the ppermute's axes, as ``axis_index`` numbers them; every
source and every target at most once, each from 0 to the axis size - 1.

:func:`resolve_perms` replaces each ``perm=`` by ``("perm", pairs)``.

>>> from scalemath.symbolic.shardmap_syntax import _P
>>> node = _P("ppermute(x, 'Y', perm=[(j, (j - 1) % n) for j in range(n)])").expr()
>>> resolve_node(node, {"Y": 4}, {"n": 4}, "")[3]
(('perm', ('perm', ((0, 3), (1, 0), (2, 1), (3, 2)))),)
"""

from __future__ import annotations

from typing import Mapping

from .notation import NotationError

__all__ = ["static_value", "perm_pairs", "resolve_node", "resolve_perms", "axes_node", "moved_axes"]

#: bound on a static number's size (jax's int32)
LIMIT = 2 ** 31


def _fail(text: str, reason: str):
    raise NotationError(reason, text, 0, max(len(text), 1))


def static_value(node, statics: Mapping[str, int], text: str) -> int:
    """The whole number ``node`` writes, from literals and the names in ``statics``."""
    kind = node[0]
    if kind == "num" and isinstance(node[1], int):
        value = node[1]
    elif kind == "name" and node[1] in statics:
        value = statics[node[1]]
    elif kind == "neg":
        value = -static_value(node[1], statics, text)
    elif kind == "bin" and node[1] in "+-*%":
        a, b = static_value(node[2], statics, text), static_value(node[3], statics, text)
        if node[1] == "%" and b == 0:
            _fail(text, "a permutation's number is taken modulo 0")
        value = {"+": a + b, "-": a - b, "*": a * b, "%": a % b if node[1] == "%" else 0}[node[1]]
    else:
        what = repr(node[1]) if kind == "name" else "this"
        _fail(text, f"{what} is not a number known before the program runs: a permutation holds whole numbers "
                    "written out, the comprehension's variable, or names bound to a whole number, psum(1, axis) or "
                    "axis_size(axis)")
    if abs(value) >= LIMIT:
        _fail(text, "a number in the permutation is larger than 2^31 (jax's int32)")
    return value


def _pair(node, statics, text) -> tuple[int, int]:
    if node[0] != "tuple" or len(node[1]) != 2:
        _fail(text, "each entry of perm is a pair (source, target)")
    return static_value(node[1][0], statics, text), static_value(node[1][1], statics, text)


def perm_pairs(node, size: int, statics: Mapping[str, int], text: str) -> tuple[tuple[int, int], ...]:
    """The (source, target) pairs of a ``perm=`` on axes of ``size`` devices, checked."""
    if node[0] == "list":
        if len(node[1]) > size:
            _fail(text, f"perm lists {len(node[1])} pairs for {size} devices: a source would repeat")
        pairs = tuple(_pair(item, statics, text) for item in node[1])
    elif node[0] == "comp":
        _, element, var, bounds = node
        values = [static_value(b, statics, text) for b in bounds]
        start, stop = (0, values[0]) if len(values) == 1 else values
        if stop - start > size:
            _fail(text, f"perm's range gives {stop - start} pairs for {size} devices: a source would repeat")
        pairs = tuple(_pair(element, {**statics, var: v}, text) for v in range(start, stop))
    else:
        _fail(text, "perm is a list of (source, target) pairs, e.g. perm=[(0, 1), (1, 0)], or "
                    "[(i, (i + 1) % n) for i in range(n)]")
    for s, t in pairs:
        if not (0 <= s < size and 0 <= t < size):
            _fail(text, f"perm pair ({s}, {t}) is out of range: positions run from 0 to {size - 1}")
    for k, what in ((0, "source"), (1, "target")):
        seen = [p[k] for p in pairs]
        twice = sorted({x for x in seen if seen.count(x) > 1})
        if twice:
            _fail(text, f"perm names {what} {twice[0]} twice: each device sends at most once and receives at most "
                        "once")
    return pairs


def axes_node(args, kwargs):
    """The node naming a collective's axes: its second argument or ``axis_name=``."""
    kw = dict(kwargs)
    return args[1] if len(args) > 1 else kw.get("axis_name")


def _axes(node, mesh, text) -> tuple[str, ...]:
    if node is not None and node[0] in ("name", "str"):
        axes = (node[1],)
    elif node is not None and node[0] == "tuple" and all(x[0] in ("name", "str") for x in node[1]):
        axes = tuple(x[1] for x in node[1])
    else:
        _fail(text, "a collective's axes are a mesh axis name or a tuple of them, e.g. (X, Y)")
    for a in axes:
        if a not in mesh:
            _fail(text, f"unknown mesh axis {a!r} (the mesh has {', '.join(mesh)})")
    return axes


def _size(axes, mesh) -> int:
    n = 1
    for a in axes:
        n *= mesh[a]
    return n


def resolve_node(node, mesh: Mapping[str, int], statics: Mapping[str, int], text: str):
    """``node`` with each ppermute's ``perm=`` replaced by ``("perm", pairs)``; a part nothing changed in is
    the same object (the statement's spans for error carets are keyed by the nodes themselves)."""
    new = _resolve(node, mesh, statics, text)
    return node if new == node else new


def _resolve(node, mesh, statics, text):
    if not isinstance(node, tuple) or not node or not isinstance(node[0], str):
        return node
    if node[0] == "call":
        _, f, args, kwargs, pos = node
        args = tuple(resolve_node(a, mesh, statics, text) for a in args)
        kw = dict(kwargs)
        if f == "ppermute" and len(args) == 3 and args[2][0] in ("list", "comp") and "perm" not in kw:
            args, kw["perm"] = args[:2], args[2]  # jax's ppermute(x, axis_name, perm)
        if f == "ppermute" and "perm" in kw:
            if "shift" in kw or len(args) > 2:
                _fail(text, "ppermute takes perm= or a shift, not both")
            size = _size(_axes(axes_node(args, kwargs), mesh, text), mesh)
            kw["perm"] = ("perm", perm_pairs(kw["perm"], size, statics, text))
        kw = {k: v if k == "perm" and f == "ppermute" else resolve_node(v, mesh, statics, text) for k, v in kw.items()}
        return ("call", f, args, tuple(sorted(kw.items())), pos)
    if node[0] in ("tuple", "list"):
        return (node[0], tuple(resolve_node(x, mesh, statics, text) for x in node[1]))
    if node[0] == "bin":
        return ("bin", node[1], *(resolve_node(x, mesh, statics, text) for x in node[2:4]))
    if node[0] == "neg":
        return ("neg", resolve_node(node[1], mesh, statics, text))
    if node[0] == "index":
        return ("index", resolve_node(node[1], mesh, statics, text), node[2])
    return node


def _static_of(expr, mesh, statics) -> int | None:
    """The whole number a statement binds, if known before the program runs: a number, or psum(k, axes) of one."""
    if expr[0] == "call" and expr[1] == "axis_size":
        node = expr[2][0] if expr[2] else dict(expr[3]).get("axis_name")
        try:
            return _size(_axes(node, mesh, ""), mesh)
        except NotationError:
            return None
    if expr[0] == "call" and expr[1] == "psum" and expr[2]:
        inner = _static_of(expr[2][0], mesh, statics)
        node = axes_node(expr[2], expr[3])
        try:
            return None if inner is None else inner * _size(_axes(node, mesh, ""), mesh)
        except NotationError:
            return None
    try:
        return static_value(expr, statics, "")
    except NotationError:
        return None


def resolve_perms(statements, mesh: Mapping[str, int]):
    """The statements with every ppermute's ``perm=`` resolved (see :func:`resolve_node`)."""
    from dataclasses import replace

    statics: dict[str, int] = {}
    out = []
    for stmt in statements:
        expr = resolve_node(stmt.expr, mesh, statics, stmt.text)
        out.append(replace(stmt, expr=expr))
        value = _static_of(expr, mesh, statics)
        if value is None:
            statics.pop(stmt.target, None)
        else:
            statics[stmt.target] = value
    return out


def moved_axes(pairs, axes, mesh: Mapping[str, int]) -> tuple[str, ...]:
    """The axes (of ``axes``) along which some pair moves data: positions unravelled major first."""
    moved = set()
    for s, t in pairs:
        for a in reversed(axes):
            if s % mesh[a] != t % mesh[a]:
                moved.add(a)
            s, t = s // mesh[a], t // mesh[a]
    return tuple(a for a in axes if a in moved)
