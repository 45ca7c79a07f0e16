"""The fake device mesh of the sharding simulation (:mod:`.simulate`): every device holds shards of random
integer arrays with the global indices of each dimension, reaches a layout by a free slice, and runs the
collectives as they run on hardware (ring AllGather and ReduceScatter, AllReduce as both, point-to-point
AllToAll and CollectivePermute), counting the bytes each device sends and receives."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

import numpy as np

from ..errors import BadValueError, CheckFailedError
from ..symbolic.notation import Array
from ..symbolic.sharding import Collective

__all__ = ["PlanMismatchError"]

Coord = tuple[int, ...]


class PlanMismatchError(CheckFailedError):
    """A plan step that the simulated devices cannot carry out as written, or a wrong product."""


@dataclass
class _Shard:
    data: np.ndarray
    idx: tuple[np.ndarray, ...]  # global indices held along each dimension


@dataclass
class _State:
    arr: Array  # the notation the data is believed to follow
    shards: dict[Coord, _Shard]


def _num(x: Fraction) -> int | Fraction:
    return int(x) if x.denominator == 1 else x


class _Sim:
    def __init__(self, mesh: Mapping[str, int], sizes: Mapping[str, int], bpe, strict: bool):
        self.names = tuple(mesh)
        self.n = {a: int(mesh[a]) for a in mesh}
        self.pos = {a: i for i, a in enumerate(self.names)}
        self.devices: list[Coord] = list(itertools.product(*(range(self.n[a]) for a in self.names)))
        self.sizes = sizes
        self.bpe = Fraction(str(bpe))
        self.strict = strict
        self.problems: list[str] = []
        self.recv = dict.fromkeys(self.devices, Fraction(0))
        self.sent = dict.fromkeys(self.devices, Fraction(0))

    # -- mesh geometry ------------------------------------------------------------------------
    def rank(self, coord: Coord, axes) -> int:
        r = 0
        for a in axes:
            r = r * self.n[a] + coord[self.pos[a]]
        return r

    def group(self, coord: Coord, axes) -> list[Coord]:
        """The devices that differ from ``coord`` only along ``axes``, in rank order (first axis major)."""
        out = []
        for combo in itertools.product(*(range(self.n[a]) for a in axes)):
            c = list(coord)
            for a, v in zip(axes, combo):
                c[self.pos[a]] = v
            out.append(tuple(c))
        return out

    def leaders(self, axes) -> list[Coord]:
        return [d for d in self.devices if all(d[self.pos[a]] == 0 for a in axes)]

    def block(self, dim: str, axes, coord: Coord) -> np.ndarray:
        size, parts = self.sizes[dim], math.prod(self.n[a] for a in axes)
        if size % parts:
            raise BadValueError(f"dimension {dim} of size {size} does not split into {parts} equal blocks "
                                f"over {''.join(axes)}")
        s = size // parts
        b = self.rank(coord, axes)
        return np.arange(b * s, (b + 1) * s)

    def expected(self, arr: Array, coord: Coord) -> tuple[np.ndarray, ...]:
        return tuple(self.block(d.name, d.axes, coord) for d in arr.dims)

    def send(self, src: Coord, dst: Coord, piece: np.ndarray) -> None:
        nbytes = self.bpe * piece.size
        self.sent[src] += nbytes
        self.recv[dst] += nbytes

    # -- bookkeeping ----------------------------------------------------------------------------
    def fail(self, message: str) -> None:
        if self.strict:
            raise PlanMismatchError(message)
        self.problems.append(message)

    def check_layout(self, st: _State, step: str) -> None:
        for dev, sh in st.shards.items():
            for d, have, want in zip(st.arr.dims, sh.idx, self.expected(st.arr, dev)):
                if not np.array_equal(have, want):
                    self.fail(f"{step}: device {dev} holds indices {_ranges(have)} of {d.name}, "
                              f"but {st.arr} names {_ranges(want)}")
                    return

    def same_idx(self, members: list[_Shard], skip: int | None, what: str) -> None:
        for k in range(len(members[0].idx)):
            if k != skip and any(not np.array_equal(m.idx[k], members[0].idx[k]) for m in members[1:]):
                raise PlanMismatchError(f"{what}: the devices of a group hold different blocks of dimension {k}")

    def reslice(self, st: _State, target: Array, step: str) -> _State:
        """Reach ``target`` without communication: drop data, write a block into zeros, or zero the
        replicas that become partial sums."""
        target = target.plain()
        if [d.name for d in target.dims] != [d.name for d in st.arr.dims]:
            raise PlanMismatchError(f"{step}: {st.arr} and {target} have different dimensions")
        if set(st.arr.unreduced) - set(target.unreduced):
            raise PlanMismatchError(f"{step}: {st.arr} -> {target} needs a reduction, not a free slice")
        new_u = [a for a in target.unreduced if a not in st.arr.unreduced]
        # an axis that leaves a dimension to become unreduced: each device writes its block into zeros
        filled = {a for cur, want in zip(st.arr.dims, target.dims) for a in cur.axes
                  if a not in want.axes and a in new_u}
        shards = {}
        for dev, sh in st.shards.items():
            data, idx = sh.data, list(sh.idx)
            for k, (cur, want) in enumerate(zip(st.arr.dims, target.dims)):
                if cur.axes == want.axes:
                    continue
                need = self.block(want.name, want.axes, dev)
                where = {int(g): p for p, g in enumerate(idx[k])}
                if any(int(g) not in where for g in need):
                    if not set(cur.axes) - set(want.axes) <= filled:
                        raise PlanMismatchError(f"{step}: {st.arr} -> {target} is not a free slice: device {dev} "
                                                f"holds {_ranges(idx[k])} of {want.name} but needs {_ranges(need)}")
                    shape = list(data.shape)
                    shape[k] = len(need)
                    grown = np.zeros(shape, dtype=data.dtype)
                    for p, g in enumerate(need):
                        if int(g) in where:
                            src = [slice(None)] * data.ndim
                            dst = [slice(None)] * data.ndim
                            src[k], dst[k] = where[int(g)], p
                            grown[tuple(dst)] = data[tuple(src)]
                    data = grown
                else:
                    data = np.take(data, [where[int(g)] for g in need], axis=k)
                idx[k] = need
            if any(dev[self.pos[a]] for a in new_u if a not in filled):  # a summed replica becomes a zero partial
                data = np.zeros_like(data)
            shards[dev] = _Shard(data, tuple(idx))
        return _State(target, shards)

    # -- collectives ----------------------------------------------------------------------------
    def ring_all_gather(self, group: list[Coord], pieces: list[np.ndarray]) -> list[list[np.ndarray]]:
        """Bidirectional ring: piece o travels n//2 hops one way and the rest the other way."""
        n = len(group)
        have = [{m: pieces[m]} for m in range(n)]
        for o in range(n):
            for step, hops in ((1, n // 2), (-1, n - 1 - n // 2)):
                at = o
                for _ in range(hops):
                    nxt = (at + step) % n
                    have[nxt][o] = have[at][o].copy()
                    self.send(group[at], group[nxt], have[at][o])
                    at = nxt
        return [[have[m][o] for o in range(n)] for m in range(n)]

    def ring_reduce_scatter(self, group: list[Coord], chunks: list[list[np.ndarray]]) -> list[np.ndarray]:
        """Unidirectional ring: at step s device p passes its running sum of chunk p-s-1 to p+1."""
        n = len(group)
        acc = [list(c) for c in chunks]
        for s in range(n - 1):
            msgs = []
            for p in range(n):
                c, q = (p - s - 1) % n, (p + 1) % n
                msgs.append((q, c, acc[p][c].copy()))
                self.send(group[p], group[q], acc[p][c])
            for q, c, m in msgs:
                acc[q][c] = acc[q][c] + m
        return [acc[p][p] for p in range(n)]

    def collective(self, st: _State, col: Collective) -> _State:
        st = self.reslice(st, col.before, f"before {col}")
        before, after = col.before.plain(), col.after.plain()
        changed = [k for k, (b, a) in enumerate(zip(before.dims, after.dims)) if b.axes != a.axes]
        shards: dict[Coord, _Shard] = {}
        if col.kind == "AllGather":
            (k,) = changed
            axes = tuple(a for a in before.dims[k].axes if a not in after.dims[k].axes)
            if set(axes) != set(col.axes):
                raise PlanMismatchError(f"{col}: the axes removed are not the collective's axes")
            for lead in self.leaders(axes):
                grp = self.group(lead, axes)
                members = [st.shards[d] for d in grp]
                self.same_idx(members, k, str(col))
                data = self.ring_all_gather(grp, [m.data for m in members])
                for d, m, pieces in zip(grp, members, data):
                    idx = list(m.idx)
                    idx[k] = np.concatenate([o.idx[k] for o in members])
                    shards[d] = _Shard(np.concatenate(pieces, axis=k), tuple(idx))
        elif col.kind in ("ReduceScatter", "AllReduce"):
            axes = tuple(col.axes)
            if not set(axes) <= set(before.unreduced) or set(after.unreduced) != set(before.unreduced) - set(axes):
                raise PlanMismatchError(f"{col}: the unreduced axes do not match the collective")
            k = None
            if col.kind == "ReduceScatter":
                (k,) = changed
                axes = tuple(a for a in after.dims[k].axes if a not in before.dims[k].axes)  # chunk order
                if set(axes) != set(col.axes):
                    raise PlanMismatchError(f"{col}: the axes added are not the collective's axes")
            elif changed:
                raise PlanMismatchError(f"{col}: an AllReduce does not change the sharding")
            for lead in self.leaders(axes):
                grp = self.group(lead, axes)
                members = [st.shards[d] for d in grp]
                self.same_idx(members, None, str(col))
                n = len(grp)
                if k is not None:
                    if members[0].data.shape[k] % n:
                        raise BadValueError(f"{col}: dimension {after.dims[k].name} does not split into {n} blocks")
                    chunks = [np.split(m.data, n, axis=k) for m in members]
                    for r, (d, m, part) in enumerate(zip(grp, members, self.ring_reduce_scatter(grp, chunks))):
                        idx = list(m.idx)
                        idx[k] = np.split(m.idx[k], n)[r]
                        shards[d] = _Shard(part, tuple(idx))
                else:
                    chunks = [np.array_split(m.data.ravel(), n) for m in members]
                    summed = self.ring_reduce_scatter(grp, chunks)
                    full = self.ring_all_gather(grp, summed)
                    for d, m, pieces in zip(grp, members, full):
                        shards[d] = _Shard(np.concatenate(pieces).reshape(m.data.shape), m.idx)
        elif col.kind == "AllToAll":
            src = [k for k in changed if len(after.dims[k].axes) < len(before.dims[k].axes)]
            dst = [k for k in changed if len(after.dims[k].axes) > len(before.dims[k].axes)]
            if len(src) != 1 or len(dst) != 1:
                raise PlanMismatchError(f"{col}: an AllToAll moves axes from one dimension to another")
            s, t = src[0], dst[0]
            axes_t = tuple(a for a in after.dims[t].axes if a not in before.dims[t].axes)
            axes_s = tuple(a for a in before.dims[s].axes if a in axes_t)
            if set(axes_t) != set(col.axes) or len(axes_s) != len(axes_t):
                raise PlanMismatchError(f"{col}: the axes moved are not the collective's axes")
            for lead in self.leaders(axes_t):
                grp = self.group(lead, axes_t)  # rank = which piece of t a device keeps
                n = len(grp)
                members = [st.shards[d] for d in grp]
                self.same_idx(members, s, str(col))
                if members[0].data.shape[t] % n:
                    raise BadValueError(f"{col}: dimension {after.dims[t].name} does not split into {n} blocks")
                pieces = [np.split(m.data, n, axis=t) for m in members]
                senders = sorted(range(n), key=lambda p: self.rank(grp[p], axes_s))  # order along s
                for r, d in enumerate(grp):
                    for p in range(n):
                        if p != r:
                            self.send(grp[p], d, pieces[p][r])
                    idx = list(members[r].idx)
                    idx[s] = np.concatenate([members[p].idx[s] for p in senders])
                    idx[t] = np.split(members[r].idx[t], n)[r]
                    shards[d] = _Shard(np.concatenate([pieces[p][r] for p in senders], axis=s), tuple(idx))
        elif col.kind == "CollectivePermute":
            if len(changed) != 1:
                raise PlanMismatchError(f"{col}: a CollectivePermute changes the axes of one dimension")
            (k,) = changed
            moved = {a for a in set(before.dims[k].axes) ^ set(after.dims[k].axes) if self.n[a] > 1}
            if not moved <= set(col.axes):
                raise PlanMismatchError(f"{col}: the axes exchanged are not the collective's axes")
            load = dict.fromkeys(self.devices, 0)  # blocks each device has sent in this permute
            for d in self.devices:
                need = self.block(after.dims[k].name, after.dims[k].axes, d)
                holders = [s for s in self.devices if set(need.tolist()) <= set(st.shards[s].idx[k].tolist())
                           and all(s[self.pos[a]] == d[self.pos[a]] for a in before.unreduced)  # same partial sum
                           and all(np.array_equal(st.shards[s].idx[j], st.shards[d].idx[j])
                                   for j in range(len(before.dims)) if j != k)]
                if not holders:
                    raise PlanMismatchError(f"{col}: no device holds the block device {d} needs")
                # d itself if it holds the block, else the least busy holder, then the nearest
                src = d if d in holders else min(holders, key=lambda s: (load[s], sum(x != y for x, y in zip(s, d)), s))
                where = {int(g): p for p, g in enumerate(st.shards[src].idx[k])}
                piece = np.take(st.shards[src].data, [where[int(g)] for g in need], axis=k)
                if src != d:
                    self.send(src, d, piece)
                    load[src] += 1
                idx = list(st.shards[d].idx)
                idx[k] = need
                shards[d] = _Shard(piece, tuple(idx))
        else:
            raise PlanMismatchError(f"unknown collective kind {col.kind!r}")
        out = _State(after, shards)
        self.check_layout(out, f"after {col}")
        return out


def _ranges(idx: np.ndarray) -> str:
    """Global indices as compact ranges: ``0:4,8:12``."""
    parts, start = [], None
    for k, g in enumerate(idx):
        if start is None:
            start = prev = int(g)
        elif int(g) != prev + 1:
            parts.append(f"{start}:{prev + 1}")
            start = int(g)
        prev = int(g)
        if k == len(idx) - 1:
            parts.append(f"{start}:{prev + 1}")
    return ",".join(parts) or "nothing"
