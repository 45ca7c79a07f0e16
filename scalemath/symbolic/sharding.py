"""Sharded matmuls: which case of the book's rules applies and which collectives it implies.

Given ``A[...] @ B[...] -> C[...]`` (batch dimensions, in both inputs and the output, allowed), a mesh and the dimension sizes, :func:`plans` returns
every plan the rules allow (gather an input, or multiply the local shards and reduce the
output), each with its collectives (kind, array, mesh axes, bytes per device) and the
FLOPs per device. Costs in seconds are added by :mod:`scalemath.symbolic.sharded_cost`.

>>> from scalemath.symbolic.notation import parse_contraction
>>> c = parse_contraction("A[I, J_X] @ B[J, K] -> C[I, K]", {"X": 4})
>>> [str(s) for s in plans(c, {"X": 4}, {"I": 8, "J": 16, "K": 4}, 2)[0].collectives]
['AllGather_X A[I, J_X] -> A[I, J]']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import sympy as sp

from .notation import Array, Contraction, Dim

__all__ = ["Collective", "Plan", "plans", "reshard", "local_shape", "array_bytes", "case_of"]


@dataclass(frozen=True)
class Collective:
    """One collective of a plan: ``kind_axes before -> after`` and the bytes V it moves."""

    kind: str
    axes: tuple[str, ...]
    before: Array
    after: Array
    bytes: sp.Expr
    group: int

    def __str__(self) -> str:
        return f"{self.kind}_{''.join(self.axes) if all(len(a) == 1 for a in self.axes) else ','.join(self.axes)} {self.before} -> {self.after}"


@dataclass(frozen=True)
class Plan:
    name: str
    case: str
    collectives: tuple[Collective, ...]
    lhs: Array
    rhs: Array
    local_out: Array
    out: Array
    flops: sp.Expr
    why: str


def local_shape(arr: Array, mesh: Mapping[str, int], sizes: Mapping[str, sp.Expr]) -> tuple[sp.Expr, ...]:
    """Per-device shape: each dimension divided by the sizes of its axes."""
    return tuple(sp.sympify(sizes[d.name]) / sp.prod([mesh[a] for a in d.axes]) for d in arr.dims)


def array_bytes(arr: Array, mesh, sizes, b) -> sp.Expr:
    """Bytes of the per-device shard of ``arr``."""
    return sp.sympify(b) * sp.prod(local_shape(arr, mesh, sizes))


def case_of(c: Contraction) -> str:
    """The book's case: 1 (no communication), 2 (one contracting side sharded), 3 (both on the
    same axis), 4 (a non-contracting dimension of each on the same axis)."""
    cases = set()
    for j in c.contracting:
        a_l, a_r = c.lhs.dim(j).axes, c.rhs.dim(j).axes
        if a_l and a_l == a_r:
            cases.add("3")
        elif a_l or a_r:
            cases.add("2")
    free_l = {a for n in c.lhs_free for a in c.lhs.dim(n).axes}
    free_r = {a for n in c.rhs_free for a in c.rhs.dim(n).axes}
    if free_l & free_r:
        cases.add("4")
    return "+".join(sorted(cases)) or "1"


def _gather(arr: Array, dim: str, keep: tuple[str, ...], mesh, sizes, b, out: list[Collective]) -> Array:
    """Gather ``dim`` so that it is sharded over ``keep`` (a subsequence of its axes).

    Blocks are numbered with the first axis major, so only a trailing run of axes can be
    gathered in place: from the first axis to remove, every later axis is gathered, and the
    axes to keep after it are sliced back out for free.
    """
    d = arr.dim(dim)
    first = next((i for i, a in enumerate(d.axes) if a not in keep), None)
    if first is None:
        return arr
    removed = d.axes[first:]
    gathered = arr.with_dim(dim, d.axes[:first])
    out.append(Collective("AllGather", removed, arr.plain(), gathered.plain(), array_bytes(gathered, mesh, sizes, b),
                          int(sp.prod([mesh[a] for a in removed]))))
    return arr.with_dim(dim, tuple(a for a in d.axes if a in keep))


def _prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _finish(name, case, why, c: Contraction, lhs: Array, rhs: Array, pre: list[Collective],
            mesh, sizes, b) -> Plan:
    collectives = list(pre)
    unreduced = ()
    for j in c.contracting:
        if lhs.dim(j).axes != rhs.dim(j).axes:
            raise ValueError("contracting shardings must agree before the local matmul")
        unreduced += lhs.dim(j).axes
    if any(lhs.dim(n).axes != rhs.dim(n).axes for n in c.batch):
        raise ValueError("batch shardings must agree before the local matmul")
    dims = tuple(Dim(n, lhs.dim(n).axes) for n in c.batch + c.lhs_free) + \
        tuple(Dim(n, rhs.dim(n).axes) for n in c.rhs_free)
    order = {n: i for i, n in enumerate(c.out.names)}
    local_out = Array(c.out.name, tuple(sorted(dims, key=lambda d: order[d.name])), unreduced)
    local_shapes = {n: s for arr in (lhs, rhs) for n, s in zip(arr.names, local_shape(arr, mesh, sizes))}
    flops = 2 * sp.prod([local_shapes[n] for n in c.batch + c.lhs_free]) * sp.prod(
        [local_shapes[j] for j in c.contracting]) * sp.prod([local_shapes[n] for n in c.rhs_free])
    want = c.out.plain()
    collectives += reshard(local_out, want, mesh, sizes, b)
    return Plan(name, case, tuple(collectives), lhs.plain(), rhs.plain(), local_out.plain(), want, flops, why)


def reshard(src: Array, want: Array, mesh, sizes, b) -> list[Collective]:
    """The collectives that turn ``src`` (possibly unreduced) into ``want``: zero-padding for a wanted
    unreduced axis, ReduceScatter or AllReduce of partial sums, AllToAll for axes that move to another
    dimension (one AllToAll over all the axes that move together), CollectivePermute for a dimension that
    changes to mesh axes no dimension holds (the book's ppermute: each device sends the block another
    needs), AllGather for an axis the result drops, free slicing for one it adds.

    >>> from scalemath.symbolic.notation import parse_array
    >>> [str(c) for c in reshard(parse_array("A[I_X, J]"), parse_array("A[I, J_X]"), {"X": 4}, {"I": 8, "J": 8}, 2)]
    ['AllToAll_X A[I_X, J] -> A[I, J_X]']
    """
    collectives: list[Collective] = []
    cur, unreduced = src.plain(), src.unreduced
    # 0. an output wanted unreduced over an axis the result is not unreduced over: every device puts
    #    its block into zeros (or all but one replica zero themselves), which moves no data
    for axis in want.unreduced:
        if axis not in cur.unreduced:
            holder = next((d for d in cur.dims if axis in d.axes), None)
            rest = tuple(a for a in holder.axes if a != axis) if holder is not None else ()
            if holder is not None and holder.axes[-1] == axis:
                cur = cur.with_dim(holder.name, rest)  # the block, padded with zeros
            elif holder is not None:  # a major axis: gather it (and the axes after it) first
                cur = _gather(cur, holder.name, rest, mesh, sizes, b, collectives)
            cur = cur.with_unreduced(cur.unreduced + (axis,))
    # 1. partial sums: keep, reduce-scatter onto a dimension the output shards on that axis, or all-reduce;
    #    in the order the output's dimensions list the axes, so each ReduceScatter appends to the last
    order = {a: w.axes.index(a) for w in want.dims for a in w.axes}
    to_all_reduce = []
    for axis in sorted(unreduced, key=lambda a: order.get(a, len(mesh))):
        if axis in want.unreduced:
            continue
        target = next((d for d in want.dims if axis in d.axes and axis not in cur.dim(d.name).axes), None)
        if target is not None and _can_append(cur.dim(target.name).axes, axis, target.axes):
            rest = tuple(a for a in cur.unreduced if a != axis)
            after = cur.with_dim(target.name, cur.dim(target.name).axes + (axis,)).with_unreduced(rest)
            collectives.append(Collective("ReduceScatter", (axis,), cur.plain(), after.plain(),
                                          array_bytes(cur, mesh, sizes, b), mesh[axis]))
            cur = after
        else:
            to_all_reduce.append(axis)
    if to_all_reduce:  # the partial sums left over, summed in one AllReduce over all their axes
        after = cur.with_unreduced(tuple(a for a in cur.unreduced if a not in to_all_reduce))
        collectives.append(Collective("AllReduce", tuple(to_all_reduce), cur.plain(), after.plain(),
                                      array_bytes(cur, mesh, sizes, b),
                                      int(sp.prod([mesh[a] for a in to_all_reduce]))))
        cur = after
    # 2. axes the output does not keep on a dimension: move a trailing run of them to the dimension the
    #    output wants them on (one AllToAll over the run's axes), swap them for axes no dimension holds
    #    (CollectivePermute; if the new axes are fewer devices, the old ones left trailing are then moved
    #    or gathered), gather the others
    for d in list(cur.dims):
        while True:
            axes = cur.dim(d.name).axes
            unwanted = [a for a in axes if a not in want.dim(d.name).axes]
            if not unwanted:
                break
            move = _movable_run(cur, d.name, want)
            if move is not None:
                run, dest = move
                moved = cur.with_dim(d.name, axes[: len(axes) - len(run)])
                after = moved.with_dim(dest, cur.dim(dest).axes + run)
                collectives.append(Collective("AllToAll", run, cur.plain(), after.plain(),
                                              array_bytes(moved, mesh, sizes, b),
                                              int(sp.prod([mesh[a] for a in run]))))
                cur = after
                continue
            swapped = _swap(cur, d.name, want, mesh, sizes, b)
            if swapped is not None:
                collectives.extend(swapped[0])
                cur = cur.with_dim(d.name, swapped[1])
                continue
            keep = tuple(a for a in axes if a in want.dim(d.name).axes)
            cur = _gather(cur, d.name, keep, mesh, sizes, b, collectives)
    # 3. axes the output adds: a device keeps its slice for free when what it holds is a prefix of
    #    what the output wants; otherwise gather down to the common prefix first
    #    (or, when what it holds names the right axes in another order, permute the blocks into place)
    for d in want.dims:
        have = cur.dim(d.name).axes
        if have != d.axes[: len(have)]:
            swapped = _swap(cur, d.name, want, mesh, sizes, b)
            if swapped is not None:
                collectives.extend(swapped[0])
                cur = cur.with_dim(d.name, swapped[1])
            else:
                cur = _gather(cur, d.name, _prefix(have, d.axes), mesh, sizes, b, collectives)
    return collectives


def _movable_run(cur: Array, name: str, want: Array) -> tuple[tuple[str, ...], str] | None:
    """The longest trailing run of ``name``'s axes that the output wants, in the same order, right after
    what another dimension already holds: ``(run, that dimension)``, moved there by one AllToAll."""
    axes = cur.dim(name).axes
    mine = want.dim(name).axes
    for k in range(len(axes)):
        run = axes[k:]
        if any(a in mine for a in run):
            continue
        dest = next((w.name for w in want.dims if run[0] in w.axes and w.name != name), None)
        if dest is not None and all(_can_append(cur.dim(dest).axes + run[:i], a, want.dim(dest).axes)
                                    for i, a in enumerate(run)):
            return run, dest
    return None


def _swap(cur: Array, name: str, want: Array, mesh, sizes, b) -> tuple[list[Collective], tuple[str, ...]] | None:
    """``name`` sharded over ``P + R`` where the output wants ``P + Q`` (R and Q may share axes in another
    order), with Q's other axes held by no dimension: a CollectivePermute to ``P + Q`` when each new block
    lies inside an old one (Q has a multiple of R's devices; V = the new block), else to ``P + Q + R'`` (R'
    the axes of R that Q lacks, left for the caller to move or gather): ``(collectives, the new axes)``, no
    collective when only axes of size 1 differ. None when an axis the output wants is in use, so the axes
    are gathered instead."""
    have, wanted = cur.dim(name).axes, want.dim(name).axes
    p = _prefix(have, wanted)
    r, q = have[len(p):], wanted[len(p):]
    if not r or not q:
        return None
    busy = (set(cur.axes) - set(r)) | set(cur.unreduced) | set(want.unreduced)
    if busy & set(q):
        return None
    n_r, n_q = int(sp.prod([mesh[a] for a in r])), int(sp.prod([mesh[a] for a in q]))
    if n_r == 1 or n_q == 1:
        return None
    def real(axes):
        return [a for a in axes if mesh[a] > 1]

    if real(q)[: len(real(r))] == real(r):
        return [], p + q  # axes of size 1 aside, each device slices the new block out of what it holds
    new = p + q + (() if n_q % n_r == 0 else tuple(a for a in r if a not in q))
    if real(new) == real(have):
        return [], new  # the same blocks on the same devices
    exchanged = tuple(a for a in mesh if a in r + q and mesh[a] > 1)
    after = cur.with_dim(name, new)
    return [Collective("CollectivePermute", exchanged, cur.plain(), after.plain(), array_bytes(after, mesh, sizes, b),
                       int(sp.prod([mesh[a] for a in exchanged])))], new


def _can_append(have: tuple[str, ...], axis: str, wanted: tuple[str, ...]) -> bool:
    return tuple(have) + (axis,) == tuple(wanted)[: len(have) + 1]


def _slice_free_dims(c: Contraction, lhs: Array, rhs: Array, why: list[str]) -> tuple[Array, Array]:
    """Shard a free dimension of an input as the output wants it when no input uses those axes:
    each device keeps its slice (no communication) and does 1/N of the FLOPs."""
    used = set(lhs.axes) | set(rhs.axes)
    for side in ("lhs", "rhs"):
        arr = lhs if side == "lhs" else rhs
        for n in (c.lhs_free if side == "lhs" else c.rhs_free):
            have, want = arr.dim(n).axes, c.out.dim(n).axes
            extra = want[len(have):]
            if want[: len(have)] == have and extra and not (set(extra) & used) and not (set(extra) & set(c.out.unreduced)):
                arr = arr.with_dim(n, want)
                used |= set(extra)
                why.append(f"slice {arr.name} along {n} as the output wants it (free)")
        lhs, rhs = (arr, rhs) if side == "lhs" else (lhs, arr)
    return lhs, rhs


def plans(c: Contraction, mesh: Mapping[str, int], sizes: Mapping[str, sp.Expr], b) -> list[Plan]:
    """Every plan the rules allow, the book's default first."""
    case = case_of(c)
    out: list[Plan] = []
    for choice in ("gather", "reduce"):
        for gather_side in ("lhs", "rhs"):
            lhs, rhs, pre = c.lhs.plain(), c.rhs.plain(), []
            why = []
            for n in c.batch:  # a batch dimension is split alike in both inputs: gather to what they share
                a_l, a_r = lhs.dim(n).axes, rhs.dim(n).axes
                longer, shorter = (lhs, rhs) if len(a_l) > len(a_r) else (rhs, lhs)
                extra = longer.dim(n).axes[len(shorter.dim(n).axes):]
                if a_l != a_r and longer.dim(n).axes[:len(shorter.dim(n).axes)] == shorter.dim(n).axes \
                        and not set(extra) & set(shorter.axes):
                    sliced = shorter.with_dim(n, longer.dim(n).axes)
                    lhs, rhs = (longer, sliced) if longer is lhs else (sliced, longer)
                    why.append(f"slice {shorter.name} along the batch dimension {n} to match (free)")
                elif a_l != a_r:
                    keep = _prefix(a_l, a_r)
                    lhs = _gather(lhs, n, keep, mesh, sizes, b, pre)
                    rhs = _gather(rhs, n, keep, mesh, sizes, b, pre)
                    why.append(f"gather the batch dimension {n} so both inputs shard it alike")
            for j in c.contracting:
                a_l, a_r = lhs.dim(j).axes, rhs.dim(j).axes
                if a_l == a_r:
                    continue
                if choice == "reduce" and (not a_l or not a_r):
                    sharded, other = (lhs, rhs) if a_l else (rhs, lhs)
                    axes = sharded.dim(j).axes
                    if set(axes) & set(other.axes):
                        break
                    other = other.with_dim(j, axes)
                    lhs, rhs = (sharded, other) if a_l else (other, sharded)
                    why.append(f"slice {other.name} along {j} to match (free), multiply the local shards "
                               f"and reduce the partial sums")
                    continue
                keep = _prefix(a_l, a_r)
                lhs = _gather(lhs, j, keep, mesh, sizes, b, pre)
                rhs = _gather(rhs, j, keep, mesh, sizes, b, pre)
                why.append(f"gather the contracting dimension {j} so both inputs shard it alike")
            else:
                free_l = {a: n for n in c.lhs_free for a in lhs.dim(n).axes}
                free_r = {a: n for n in c.rhs_free for a in rhs.dim(n).axes}
                for axis in sorted(set(free_l) & set(free_r)):
                    side = gather_side
                    if side == "lhs":
                        n = free_l[axis]
                        lhs = _gather(lhs, n, tuple(a for a in lhs.dim(n).axes if a != axis), mesh, sizes, b, pre)
                    else:
                        n = free_r[axis]
                        rhs = _gather(rhs, n, tuple(a for a in rhs.dim(n).axes if a != axis), mesh, sizes, b, pre)
                    why.append(f"axis {axis} shards a free dimension of both inputs: gather "
                               f"{(c.lhs if side == 'lhs' else c.rhs).name} over it")
                lhs, rhs = _slice_free_dims(c, lhs, rhs, why)
                plan = _finish("", case, "; ".join(why) or "multiply the local shards", c, lhs, rhs, pre,
                               mesh, sizes, b)
                label = ", then ".join(f"{x.kind}_{''.join(x.axes)} {x.before.name}" for x in plan.collectives)
                plan = Plan(label or "no communication", *tuple(vars(plan).values())[1:])
                if all(plan.collectives != p.collectives or plan.lhs != p.lhs for p in out):
                    out.append(plan)
    return out
