"""The collectives of a shard_map body, device by device in numpy (see :mod:`.shardmap_run`): each exchanges
blocks within its groups (the devices that differ only along the collective's axes, in order of position) and
records an :class:`Event` with the book's V.

``psum(1, axis)`` (the chapter's axis size) is no collective: jax sums a number written out while tracing.
AllGather's V is its result, AllReduce's and ReduceScatter's their operand, AllToAll's its operand times the
group, CollectivePermute's its operand (what each sending device moves).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shardmap_mesh import groups
from .shardmap_perm import axes_node
from .shardmap_syntax import COLLECTIVES

__all__ = ["Event", "collective"]


@dataclass(frozen=True)
class Event:
    """One collective as it ran: ``elements`` is the book's V in elements, ``bytes`` V in bytes; a ppermute's
    ``shift`` or ``perm`` (its (source, target) positions along the axes)."""

    statement: int
    call: str
    kind: str
    axes: tuple[str, ...]
    group: int
    elements: int
    bytes: int
    shift: int | None = None
    perm: tuple[tuple[int, int], ...] | None = None


def collective(self, stmt, i, f, args, kw) -> list:
    """A collective's values on every device (``self`` is the runner), its :class:`Event` recorded."""
    if not args or axes_node(args, kw.items()) is None:
        self.fail(stmt, f"{f} takes an array and the mesh axes, e.g. {f}(x, X) or {f}(x, axis_name='X')")
    tiled = kw.get("tiled", ("name", "True"))[1]
    if tiled not in ("True", 1, "False", 0):
        self.fail(stmt, f"{f}: tiled is True or False", kw["tiled"])
    tiled = tiled in ("True", 1)
    if not tiled and f not in ("all_gather", "psum_scatter", "all_to_all"):
        self.fail(stmt, f"{f} has no untiled form", kw["tiled"])
    axes = self.axes_of(stmt, axes_node(args, kw.items()))
    number = self.literal(args[0])
    if f in ("psum", "pmean") and number is not None:  # jax sums a number written out when it traces: no collective
        size = len(groups(self.mesh, axes)[0])
        value = number * size if f == "psum" else number
        return [np.asarray(value, dtype=np.int32 if isinstance(value, int) else np.float32)] * self.n
    vals = self.ev(stmt, i, args[0])
    ndim = vals[0].ndim
    nbytes = self.bytes_of(stmt, args[0])
    grps = groups(self.mesh, axes)
    size = len(grps[0])
    local = int(vals[0].size)
    out = [None] * self.n
    shift = perm = None

    def dim(value, name, rank=ndim):
        d = self.const(stmt, value, f"{f}'s {name}")
        if not -max(rank, 1) <= d < max(rank, 1):
            self.fail(stmt, f"{f}: {name} {d} out of range for rank {rank}", value)
        return d % max(rank, 1)

    def whole(axis, what):  # jax's untiled forms take one slice of size 1 per device along ``axis``
        if vals[0].shape[axis] != size:
            self.fail(stmt, f"{f} with tiled=False (jax's default for jax.lax.{f}): dimension {axis} "
                            f"({vals[0].shape[axis]}) must equal the {size} devices {what}; write tiled=True "
                            "for the book's form", args[0])

    if f in ("psum", "pmean"):
        for g in grps:
            total = sum(vals[d].astype(np.int64 if vals[d].dtype.kind in "iu" else vals[d].dtype) for d in g)
            total = total.astype(vals[g[0]].dtype) if f == "psum" else \
                (total / size).astype(np.float32 if vals[g[0]].dtype.kind in "iu" else vals[g[0]].dtype)
            for d in g:
                out[d] = total
        elements = local
    elif f == "all_gather":
        self.check_size(stmt, local * size)
        axis = dim(kw.get("axis", args[2] if len(args) > 2 else ("num", 0)), "axis", ndim + (not tiled))
        join = np.concatenate if tiled else np.stack  # untiled: a new axis of size N at ``axis``
        for g in grps:
            whole = join([vals[d] for d in g], axis=axis)
            for d in g:
                out[d] = whole
        elements = local * size
    elif f == "psum_scatter":
        axis = dim(kw.get("scatter_dimension", args[2] if len(args) > 2 else ("num", 0)), "scatter_dimension")
        if tiled and vals[0].shape[axis] % size:
            self.fail(stmt, f"psum_scatter: dimension {axis} ({vals[0].shape[axis]}) does not split {size} ways",
                      args[0])
        if not tiled:
            whole(axis, "it is scattered over")
        for g in grps:
            total = sum(vals[d] for d in g).astype(vals[g[0]].dtype)
            for k, piece in enumerate(np.split(total, size, axis=axis)):
                out[g[k]] = piece if tiled else np.squeeze(piece, axis=axis)  # untiled: the dimension goes
        elements = local
    elif f == "all_to_all":
        if len(args) < 4 and not {"split_axis", "concat_axis"} <= set(kw):
            self.fail(stmt, "all_to_all(x, axes, split_axis, concat_axis)")
        split = dim(kw.get("split_axis", args[2] if len(args) > 2 else None), "split_axis")
        concat = dim(kw.get("concat_axis", args[3] if len(args) > 3 else None), "concat_axis")
        if tiled and vals[0].shape[split] % size:
            self.fail(stmt, f"all_to_all: dimension {split} ({vals[0].shape[split]}) does not split {size} ways",
                      args[0])
        if not tiled:
            whole(split, "it is split over")
        for g in grps:
            pieces = {d: np.split(vals[d], size, axis=split) for d in g}
            for k, d in enumerate(g):
                if tiled:
                    out[d] = np.concatenate([pieces[src][k] for src in g], axis=concat)
                else:  # untiled: the split dimension goes, the N pieces stack at concat_axis
                    out[d] = np.stack([np.squeeze(pieces[src][k], axis=split) for src in g], axis=concat)
        elements = local * size
    elif f == "ppermute":
        if "perm" in kw:  # resolved when parsed (shardmap_perm): positions along the axes, as axis_index
            perm = kw["perm"][1]
            for g in grps:
                for k, d in enumerate(g):
                    out[d] = np.zeros_like(vals[d])  # jax: a device no pair sends to receives zeros
                for s, t in perm:
                    out[g[t]] = vals[g[s]]
        else:
            if len(axes) != 1:
                self.fail(stmt, "ppermute shifts along one mesh axis (over several, give perm=[(source, target), ...])")
            shift = self.const(stmt, kw.get("shift", args[2] if len(args) > 2 else ("num", 1)), "ppermute's shift")
            for g in grps:
                for k, d in enumerate(g):
                    out[g[(k + shift) % size]] = vals[d]
        elements = local
    self.events.append(Event(i, f, COLLECTIVES[f], axes, size, elements, elements * nbytes, shift, perm))
    return out

