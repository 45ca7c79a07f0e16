"""Reading HLO text: instructions, shapes and layouts, and the collectives in the book's terms.

No jax here (only numpy), so ``scalemath hlo`` and the cross-checks read HLO saved from anywhere:
``jax.jit(f).lower(...).compile().as_text()``, an XLA dump, a TPU compile.

``replica_groups`` comes in three spellings, all read here::

    replica_groups={{0,2,4,6},{1,3,5,7}}                      explicit
    replica_groups=[2,4]<=[4,2]T(1,0)                         iota: reshape, transpose, regroup
    replica_groups=mesh['axis_0'=4,'axis_1'=2] {'axis_0'}     the devices varying along axis_0

The mesh form names the axes of XLA's own tile assignment (``axis_0``...), not the user's, and
may carry ``device_ids=(...)`` and sub-axes ``'a':(pre)size``; the axes are therefore always
recovered by comparing device groups, never by name.

>>> hlo = '''
... ENTRY %main (p: f32[256,128]) -> f32[256,512] {
...   %p = f32[256,128]{1,0} parameter(0)
...   ROOT %ag = f32[256,512]{1,0} all-gather(%p), replica_groups=[2,4]<=[4,2]T(1,0), dimensions={1}
... }'''
>>> [str(c) for c in parse_collectives(hlo, (4, 2), ("X", "Y"))]
['AllGather_X f32[256,128] -> f32[256,512] (V = 131072 elements)']
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .groups import (
    MAX_DEVICES, _balanced, _devices, _ints, _match_axes, _permute_axes, _split_top, mesh_groups, replica_groups
)

__all__ = ["KINDS", "HloModule", "ObservedCollective", "mesh_groups", "parse_collectives", "parse_module",
           "strip_comments"]

KINDS = {
    "all-gather": "AllGather",
    "all-reduce": "AllReduce",
    "reduce-scatter": "ReduceScatter",
    "all-to-all": "AllToAll",
    "ragged-all-to-all": "RaggedAllToAll",
    "collective-permute": "CollectivePermute",
    "collective-broadcast": "CollectiveBroadcast",
}


@dataclass(frozen=True)
class ObservedCollective:
    """One collective found in HLO, in the book's terms.

    ``axes`` are the user's mesh axes, in the order the groups run over them (None if the groups
    match no set of mesh axes, e.g. half of an axis; () if every group is a single device). For a
    CollectivePermute, ``groups`` holds the (source, target) pairs and ``axes`` the mesh axes along
    which some pair moves. ``elements`` is the book's V in elements, with the engine's conventions:
    an AllGather's result, a ReduceScatter's or AllReduce's operand, and for an AllToAll the
    per-device array times the group size (the array as if gathered over the axis, which is what
    the engine's bytes count). A CPU ReduceScatter's result is the block the device keeps, which
    can be finer than 1/group when XLA fused a further local slice into the same dynamic-slice.
    """

    kind: str
    opcode: str
    name: str
    axes: tuple[str, ...] | None
    groups: tuple[tuple[int, ...], ...]
    operand_shapes: tuple[tuple[int, ...], ...]
    result_shapes: tuple[tuple[int, ...], ...]
    dtype: str
    dimensions: tuple[int, ...] = ()
    computation: str = field(default="", compare=False)

    @property
    def group_size(self) -> int:
        if self.kind == "CollectivePermute":
            return 1
        return len(self.groups[0]) if self.groups else 1

    @property
    def operand_elements(self) -> int:
        return sum(int(np.prod(s, dtype=np.int64)) for s in self.operand_shapes)

    @property
    def result_elements(self) -> int:
        return sum(int(np.prod(s, dtype=np.int64)) for s in self.result_shapes)

    @property
    def elements(self) -> int:
        if self.kind == "AllGather":
            return self.result_elements
        if self.kind == "AllToAll":
            return self.operand_elements * self.group_size
        return self.operand_elements

    def __str__(self) -> str:
        axes = "?" if self.axes is None else _axes_label(self.axes)
        shape = lambda shapes: ", ".join(f"{self.dtype}[{','.join(map(str, s))}]" for s in shapes)
        ops = shape(self.operand_shapes) if len(self.operand_shapes) < 3 else \
            f"{len(self.operand_shapes)} x {shape(self.operand_shapes[:1])}"
        res = shape(self.result_shapes) if len(self.result_shapes) < 3 else \
            f"{len(self.result_shapes)} x {shape(self.result_shapes[:1])}"
        return f"{self.kind}_{axes} {ops} -> {res} (V = {self.elements} elements)"


def _axes_label(axes: Sequence[str]) -> str:
    return "".join(axes) if all(len(a) == 1 for a in axes) else "{" + ",".join(axes) + "}"


@dataclass
class _Instr:
    name: str
    shape: str
    opcode: str
    args: list[str]
    attrs: str
    computation: str
    arg_shapes: list[str]


_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,\s]*)\]")
_INSTR_HEAD = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")
_COMP_HEAD = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\b[^=]*\{\s*$")


def strip_comments(text: str) -> str:
    """``text`` without its ``/* ... */`` comments (XLA's ``/*index=5*/``), each within one line, in one pass.

    The same as ``re.sub(r"/\\*.*?\\*/", "", text)`` but linear: a ``/*`` whose line has no ``*/`` after it
    stops the search for that line, where the regex would scan the rest of the line again from every ``/*``.

    >>> strip_comments("a /*index=1*/ b /* c\\n/**/d */ e")
    'a  b /* c\\nd */ e'
    """
    out, i, eol = [], 0, -1
    while (start := text.find("/*", i)) >= 0:
        if start > eol:
            eol = text.find("\n", start)
            eol = len(text) if eol < 0 else eol
        end = text.find("*/", start + 2, eol)
        out.append(text[i:start if end >= 0 else eol])
        i = end + 2 if end >= 0 else eol
    out.append(text[i:])
    return "".join(out)


def _arrays(shape_text: str) -> list[tuple[str, tuple[int, ...]]]:
    return [(m.group(1), tuple(int(x) for x in m.group(2).replace(" ", "").split(",") if x))
            for m in _ARRAY.finditer(shape_text) if m.group(1) != "mesh"]


def _parse_instr(line: str, computation: str) -> _Instr | None:
    m = _INSTR_HEAD.match(line)
    if not m:
        return None
    pos = m.end()
    if pos < len(line) and line[pos] == "(":
        end = _balanced(line, pos)
    else:
        end = pos
        while end < len(line) and not line[end].isspace():
            if line[end] == "{":
                end = _balanced(line, end, "{", "}")
                continue
            end += 1
    shape = line[pos:end]
    om = re.compile(r"\s*([\w\-]+)\(").match(line, end)
    if not om:
        return None
    op_open = om.end() - 1
    op_close = _balanced(line, op_open)
    arg_texts = _split_top(line[op_open + 1:op_close - 1])
    args, arg_shapes = [], []
    for a in arg_texts:
        nm = re.search(r"%?([\w.\-]+)\s*$", a)
        args.append(nm.group(1) if nm else a)
        arg_shapes.append(a[:nm.start()] if nm else "")
    return _Instr(m.group(1), shape, om.group(1), args, line[op_close:], computation, arg_shapes)


def _parse_module(text: str) -> tuple[dict[str, _Instr], dict[str, list[_Instr]]]:
    text = strip_comments(text)
    instrs: dict[str, _Instr] = {}
    comps: dict[str, list[_Instr]] = {}
    current = ""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith(("HloModule", "//", "#")):
            continue
        if line.strip() == "}":
            current = ""
            continue
        if " = " not in line.split("{", 1)[0] and _COMP_HEAD.match(line):
            current = _COMP_HEAD.match(line).group(1)
            comps.setdefault(current, [])
            continue
        if not current:
            continue
        try:
            ins = _parse_instr(line, current)
        except ValueError:  # a line this reader does not understand holds no collective it could use
            continue
        if ins is not None:
            instrs[ins.name] = ins
            comps[current].append(ins)
    return instrs, comps


@dataclass(frozen=True)
class HloModule:
    """A module's computations and instructions (names are unique across an HLO module)."""

    name: str | None
    entry: str | None
    instructions: Mapping[str, _Instr]
    computations: Mapping[str, list[_Instr]]
    num_partitions: int | None
    bare: bool = False  # the text was bare instruction lines, read as one entry computation


def parse_module(text: str) -> HloModule:
    """Read every computation of an HLO module. Lines outside any computation (the book's listings
    print bare instructions) are read as one entry computation when the text has no computation."""
    instrs, comps = _parse_module(text)
    entry = re.search(r"^\s*ENTRY\s+%?([\w.\-]+)", text, re.MULTILINE)
    bare = not comps
    if bare:
        instrs, comps = _parse_module("ENTRY %main {\n" + text + "\n}\n")
        entry_name = "main" if comps.get("main") else None
    else:
        entry_name = entry.group(1) if entry else (next(iter(comps)) if len(comps) == 1 else None)
    name = re.search(r"^\s*HloModule\s+([\w.\-]+)", text, re.MULTILINE)
    parts = re.search(r"\bnum_partitions=(\d+)", text)
    return HloModule(name.group(1) if name else None, entry_name, instrs, comps,
                     int(parts.group(1)) if parts else None, bare and entry_name is not None)


def _attr(attrs: str, key: str) -> str | None:
    m = re.search(r"(?:^|[\s,])" + re.escape(key) + r"=", attrs)
    if not m:
        return None
    i = m.end()
    mesh_form = re.compile(r"mesh\[[^\]]*\](?:\s*,\s*device_ids=\((?:[^()]|\([^()]*\))*\))?\s*(?:\{[^}]*\})?")
    if attrs.startswith("mesh", i):
        mm = mesh_form.match(attrs, i)
        if mm:
            return mm.group(0).strip()
    if i < len(attrs) and attrs[i] == "{":
        return attrs[i:_balanced(attrs, i, "{", "}")]
    j = i
    while j < len(attrs) and attrs[j] not in ",":
        if attrs[j] in "([{":
            j = _balanced(attrs, j, attrs[j], {"(": ")", "[": "]", "{": "}"}[attrs[j]])
            continue
        j += 1
    return attrs[i:j].strip()


_PASS_THROUGH = {"convert", "copy", "bitcast", "reshape"}


def _slice_after(instr: _Instr, instrs, comps, consumers) -> tuple[int, ...] | None:
    """If ``instr``'s only use (through converts/copies/bitcasts) is a dynamic-slice of it,
    possibly inside a fusion, the sliced shape; else None."""
    cur, seen = instr, 0
    while seen < 8:
        seen += 1
        users = consumers.get(cur.name, [])
        if len(users) != 1:
            return None
        user = users[0]
        if user.opcode == "dynamic-slice" and user.args[0] == cur.name:
            arrs = _arrays(user.shape)
            return arrs[0][1] if arrs else None
        if user.opcode in _PASS_THROUGH:
            cur = user
            continue
        if user.opcode == "fusion":
            called = re.search(r"calls=%?([\w.\-]+)", user.attrs)
            if not called or called.group(1) not in comps or user.args.count(cur.name) != 1:
                return None
            k = user.args.index(cur.name)
            body = comps[called.group(1)]
            param = next((i for i in body if i.opcode == "parameter" and i.args and i.args[0] == str(k)), None)
            inner_users: dict[str, list[_Instr]] = {}
            for i in body:
                for a in i.args:
                    inner_users.setdefault(a, []).append(i)
            node = param
            for _ in range(8):
                if node is None:
                    return None
                us = inner_users.get(node.name, [])
                if len(us) != 1:
                    return None
                u = us[0]
                if u.opcode == "dynamic-slice" and u.args[0] == node.name:
                    arrs = _arrays(u.shape)
                    return arrs[0][1] if arrs else None
                if u.opcode not in _PASS_THROUGH:
                    return None
                node = u
            return None
        return None
    return None


def _keeps_a_slice(before: tuple[int, ...], sliced: tuple[int, ...], group: int) -> bool:
    """Does ``sliced`` keep 1/group of ``before`` (or a finer block: a further local slice)?"""
    whole, part = int(np.prod(before, dtype=np.int64)), int(np.prod(sliced, dtype=np.int64))
    if part == 0 or whole % part or (whole // part) % group:
        return False
    if len(before) != len(sliced):  # reshaped on the way: the element count is all there is to check
        return True
    return all(s and b % s == 0 for b, s in zip(before, sliced))


def parse_collectives(hlo_text: str, mesh_shape: Sequence[int] | Mapping[str, int],
                      axis_names: Sequence[str] | None = None, *,
                      module: HloModule | None = None) -> list[ObservedCollective]:
    """Every collective in the HLO module, in text order, with kinds in the book's names.

    ``mesh_shape`` and ``axis_names`` describe the mesh the program was compiled for (devices
    numbered row-major); a mapping ``{"X": 4, "Y": 2}`` gives both at once. Every computation is
    searched (fusions, async wrappers, loop bodies; a loop body's collective is listed once).
    ``module``, the text already read by :func:`parse_module`, saves reading it again.
    """
    if isinstance(mesh_shape, Mapping):
        axis_names = tuple(mesh_shape) if axis_names is None else tuple(axis_names)
        mesh_shape = tuple(mesh_shape[a] for a in axis_names)
    if axis_names is None:
        raise TypeError("axis_names is required when mesh_shape is a sequence")
    mesh_shape, axis_names = tuple(int(s) for s in mesh_shape), tuple(axis_names)
    num_devices = _devices(mesh_shape)
    instrs, comps = (module.instructions, module.computations) if module is not None else _parse_module(hlo_text)
    consumers: dict[str, list[_Instr]] = {}
    for ins in instrs.values():
        for a in set(ins.args):
            consumers.setdefault(a, []).append(ins)

    # TPU spelling of a ReduceScatter: fusion(kind=kCustom, calls=%all-reduce-scatter...)
    rs_fusions = {}
    for ins in instrs.values():
        called = re.search(r"calls=%?([\w.\-]+)", ins.attrs)
        if ins.opcode == "fusion" and called and called.group(1).startswith("all-reduce-scatter"):
            rs_fusions[ins.name] = called.group(1)
    inside_rs = set(rs_fusions.values())

    out, seen_groups = [], {}
    for comp, body in comps.items():
        for ins in body:
            opcode = ins.opcode
            base = opcode.removesuffix("-start")
            if ins.name in rs_fusions:
                inner = next((i for i in comps.get(rs_fusions[ins.name], [])
                              if i.opcode.startswith("all-reduce")), None)
                kind, attrs = "ReduceScatter", inner.attrs if inner else ins.attrs
            elif base in KINDS and not opcode.endswith("-done") and comp not in inside_rs:
                kind, attrs = KINDS[base], ins.attrs
            else:
                continue
            operand_shapes, dtype = [], ""
            for a, inline in zip(ins.args, ins.arg_shapes):
                source = inline if _arrays(inline) else (instrs[a].shape if a in instrs else "")
                for dt, s in _arrays(source):
                    operand_shapes.append(s)
                    dtype = dtype or dt
            results = _arrays(ins.shape)
            if opcode.endswith("-start") and len(results) > len(operand_shapes) and operand_shapes:
                results = results[len(operand_shapes):2 * len(operand_shapes)]  # (operands, results, ...)
            result_shapes = [s for _, s in results]
            dtype = dtype or (results[0][0] if results else "")
            spelled = _attr(attrs, "replica_groups")
            if spelled not in seen_groups:  # a module repeats a few group lists: read and match each once
                found = replica_groups(spelled, num_devices)
                seen_groups[spelled] = (found, _match_axes(found, mesh_shape, axis_names) if found else None)
            groups, axes = seen_groups[spelled]
            if kind == "AllReduce" and groups and len(operand_shapes) == 1:
                sliced = _slice_after(ins, instrs, comps, consumers)
                g = len(groups[0])
                before = operand_shapes[0]
                if sliced is not None and g > 1 and _keeps_a_slice(before, sliced, g):
                    kind, result_shapes = "ReduceScatter", [sliced]
            if base == "collective-permute":
                text = _attr(attrs, "source_target_pairs") or ""
                pairs = [tuple(p) for p in (_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", text)) if len(p) == 2]
                groups, axes = tuple(pairs), _permute_axes(pairs, mesh_shape, axis_names)
            dims = _attr(attrs, "dimensions")
            out.append(ObservedCollective(kind, opcode, ins.name, axes, tuple(groups or ()),
                                          tuple(operand_shapes), tuple(result_shapes), dtype,
                                          tuple(_ints(dims)) if dims else (), comp))
    return out
