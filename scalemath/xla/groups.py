"""Device groups in HLO: the three spellings of ``replica_groups``, and the mesh axes a group spans.

``replica_groups`` comes in three spellings, all read here::

    replica_groups={{0,2,4,6},{1,3,5,7}}                      explicit
    replica_groups=[2,4]<=[4,2]T(1,0)                         iota: reshape, transpose, regroup
    replica_groups=mesh['axis_0'=4,'axis_1'=2] {'axis_0'}     the devices varying along axis_0

Device ids are positions in the mesh, numbered row-major as jax's ``Mesh(devices.reshape(...))``
lays them out; the axes a group spans are found by comparing it with the groups each set of mesh
axes forms (:func:`mesh_groups`). Also the bracket helpers the HLO reader shares.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np

__all__ = ["MAX_DEVICES", "mesh_groups", "replica_groups"]


def _balanced(text: str, start: int, open_: str = "(", close: str = ")") -> int:
    """Index just past the bracket that closes the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced {open_}{close} in HLO: {text[start:start + 80]!r}")


def _split_top(text: str) -> list[str]:
    """Split on commas outside any brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


MAX_DEVICES = 1 << 20  # devices a replica-group list or mesh may name (the largest pods have ~10^4-10^5)


def _devices(sizes: Sequence[int]) -> int:
    """The number of devices in a mesh or iota list of these sizes, refusing absurd ones."""
    total = 1
    for n in sizes:
        total *= int(n)
    if total > MAX_DEVICES or any(int(n) < 0 for n in sizes):
        raise ValueError(f"a device list of {'x'.join(map(str, sizes))} devices; at most {MAX_DEVICES}")
    return total


def _iota(text: str) -> np.ndarray:
    """``[4,2]<=[8]``, ``[2,4]<=[4,2]T(1,0)`` or ``[4,2]T(1,0)`` as an id array of the first shape."""
    m = re.fullmatch(r"\s*\[([\d,\s]*)\](?:\s*<=\s*\[([\d,\s]*)\])?\s*(?:T\(([\d,\s]*)\))?\s*", text)
    if not m:
        raise ValueError(f"cannot read the iota device list {text!r}")
    dims = _ints(m.group(1))
    reshape = _ints(m.group(2)) if m.group(2) is not None else dims
    ids = np.arange(_devices(reshape)).reshape(reshape)
    if m.group(3):
        ids = ids.transpose(_ints(m.group(3)))
    return ids.reshape(dims) if m.group(2) is not None else ids


def _mesh_form_groups(text: str) -> list[tuple[int, ...]]:
    """``mesh['a'=4,'b'=2](, device_ids=(...))? {'a', 'b':(pre)size, ...}``."""
    m = re.match(r"\s*mesh\[([^\]]*)\]", text)
    if not m:
        raise ValueError(f"cannot read replica_groups {text!r}")
    axes = [(n, int(s)) for n, s in re.findall(r"'?([^'=,\s]+)'?\s*=\s*(\d+)", m.group(1))]
    names = [a for a, _ in axes]
    sizes = [s for _, s in axes]
    rest = text[m.end():]
    total = _devices(sizes)
    ids = np.arange(total)
    dm = re.match(r"\s*,\s*device_ids\s*=\s*\(", rest)
    if dm:
        close = _balanced(rest, dm.end() - 1)
        inner = rest[dm.end():close - 1]
        ids = _iota(inner).reshape(-1) if "[" in inner else np.array(_ints(inner))
        rest = rest[close:]
    bm = re.search(r"\{([^}]*)\}", rest)
    refs = []
    for item in _split_top(bm.group(1)) if bm else []:
        im = re.fullmatch(r"'?([^':]+)'?(?::\((\d+)\)(\d+))?", item.strip())
        if not im:
            raise ValueError(f"cannot read the mesh axis {item!r} in {text!r}")
        axis = names.index(im.group(1))
        pre, size = (int(im.group(2)), int(im.group(3))) if im.group(2) else (1, sizes[axis])
        refs.append((axis, pre, size))
    if any(n < 1 for n in sizes) or any(p < 1 or s < 1 for _, p, s in refs):
        raise ValueError(f"a mesh axis of size 0 in replica_groups {text!r}")
    # split every mesh axis at the cut points its sub-axes need, major to minor
    cuts = {i: {1, sizes[i]} for i in range(len(sizes))}
    for axis, pre, size in refs:
        cuts[axis] |= {pre, pre * size}
    factors, index = [], {}
    for i in range(len(sizes)):
        cs = sorted(cuts[i])
        for lo, hi in itertools.pairwise(cs):
            index[(i, lo)] = len(factors)
            factors.append(hi // lo)
        if len(cs) == 1:  # a size-1 axis
            index[(i, 1)] = len(factors)
            factors.append(1)
    grid = ids.reshape(factors)
    chosen = []
    for axis, pre, size in refs:
        cs = sorted(cuts[axis])
        chosen += [index[(axis, lo)] for lo, hi in itertools.pairwise(cs) if pre <= lo and hi <= pre * size]
    others = [i for i in range(len(factors)) if i not in chosen]
    group = int(np.prod([factors[i] for i in chosen], dtype=np.int64))
    return [tuple(int(x) for x in g) for g in grid.transpose(others + chosen).reshape(-1, group)]


def replica_groups(text: str | None, num_devices: int) -> list[tuple[int, ...]] | None:
    """The device groups a ``replica_groups=`` value spells (None for None), in any of the three spellings.

    >>> replica_groups("[2,4]<=[4,2]T(1,0)", 8)
    [(0, 2, 4, 6), (1, 3, 5, 7)]
    >>> replica_groups("{}", 4)
    [(0, 1, 2, 3)]
    """
    if text is None:
        return None
    text = text.strip()
    if text.startswith("{"):
        groups = [tuple(_ints(g)) for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])]
        groups = [g for g in groups if g]
        return groups or [tuple(range(num_devices))]  # {} = all devices in one group
    if text.startswith("["):
        ids = _iota(text)
        return [tuple(int(x) for x in row) for row in ids.reshape(ids.shape[0], -1)]
    if text.startswith("mesh"):
        return _mesh_form_groups(text)
    raise ValueError(f"cannot read replica_groups={text}")


def mesh_groups(mesh_shape: Sequence[int], axis_names: Sequence[str], axes: Sequence[str]) -> list[tuple[int, ...]]:
    """Device groups of a collective over ``axes`` (in that order) on a row-major device mesh.

    >>> mesh_groups((4, 2), ("X", "Y"), ("X",))
    [(0, 2, 4, 6), (1, 3, 5, 7)]
    """
    ids = np.arange(int(np.prod(mesh_shape, dtype=np.int64))).reshape(mesh_shape)
    chosen = [list(axis_names).index(a) for a in axes]
    others = [i for i in range(len(mesh_shape)) if i not in chosen]
    group = int(np.prod([mesh_shape[i] for i in chosen], dtype=np.int64))
    return [tuple(int(x) for x in g) for g in ids.transpose(others + chosen).reshape(-1, group)]


def _match_axes(groups, mesh_shape, axis_names) -> tuple[str, ...] | None:
    if all(len(g) == 1 for g in groups):
        return ()
    n = _devices(mesh_shape)
    if any(not 0 <= x < n for g in groups for x in g):
        return None
    # only the axes along which the first group's devices vary can form it: try their orders
    coords = np.unravel_index(np.array(groups[0]), mesh_shape)
    varying = [axis_names[i] for i in range(len(mesh_shape)) if len(set(coords[i].tolist())) > 1]
    ordered = frozenset(groups)
    unordered = frozenset(frozenset(g) for g in groups)
    fallback = None
    orders = itertools.permutations(varying) if len(varying) <= 6 else [tuple(varying)]
    for perm in orders:
        expected = mesh_groups(mesh_shape, axis_names, perm)
        if frozenset(expected) == ordered:
            return perm
        if fallback is None and frozenset(frozenset(g) for g in expected) == unordered:
            fallback = perm
    return fallback


def _permute_axes(pairs, mesh_shape, axis_names) -> tuple[str, ...] | None:
    """The mesh axes along which a collective-permute moves data (those whose coordinate changes)."""
    n = int(np.prod(mesh_shape, dtype=np.int64))
    if any(not (0 <= s < n and 0 <= t < n) for s, t in pairs):
        return None
    moved = set()
    for s, t in pairs:
        cs, ct = np.unravel_index(s, mesh_shape), np.unravel_index(t, mesh_shape)
        moved |= {axis_names[i] for i in range(len(mesh_shape)) if cs[i] != ct[i]}
    return tuple(a for a in axis_names if a in moved)
