"""What each collective of a shard_map program costs: over TPU ICI, or over a GPU's NVLink and its NIC.

TPU: every collective but ppermute is priced by the code ``scalemath shard`` uses
(:func:`scalemath.symbolic.sharded_cost.collective_cost` with the chip's wraparound rule, read by
:func:`scalemath.reports.shard._wraps`): a ring axis brings W_ici, an open line W_ici/2, and the time is the larger
of the bandwidth time and the hop latency to the far side, so both commands give the same value for the same
collective. A ppermute is tpus.md's point-to-point transfer (Question 5): each block streams cut-through along its
shortest path, V/W_link plus t_hop per hop of the longest path (ring axes go either way round, open lines only
along); when paths share links that is a lower bound (a link carrying k blocks takes k V/W_link).

GPU (gpus.md): devices are numbered row-major (the last mesh axis innermost) and fill NVLink nodes of D_node GPUs
in order, as ``plan`` places axes innermost first: an axis lies inside a node when it and the axes after it span
a number of GPUs that divides D_node. A collective whose groups stay in one node is the book's intra-node ring
(AllGather and ReduceScatter V(N-1)/(N W_gpu), AllReduce twice that, AllToAll V(N-1)/(N^2 W_gpu)); one whose
groups span M nodes is the book's cross-node form with W_node the NICs the group has in one node (g GPUs per
node, each with its NIC). A ppermute sends each block straight to its target: V/W_gpu through the NVLink switch,
or V/W_nic when a pair crosses nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..catalog import hardware
from ..errors import BadValueError
from ..symbolic.collectives import gpu_cross_node as gx
from ..symbolic.collectives import gpu_node as gn
from ..symbolic.sharded_cost import collective_cost, gpu_placement
from ..symbolic.shardmap_mesh import groups
from ..symbolic.symbols import sym
from ..symbolic.tpu import p2p_time
from .shard import _chip_values, _wraps

__all__ = ["price", "gpu_networks", "gpu_rule", "require_gpu_links", "torus_hops", "topology"]

_GPU = {  # kind -> (inside one node, across nodes)
    "AllReduce": (gn.gpu_all_reduce_time, gx.gpu_all_reduce_cross_node_time),
    "AllGather": (gn.gpu_all_gather_time, gx.gpu_all_gather_cross_node_time),
    "ReduceScatter": (gn.gpu_reduce_scatter_time, gx.gpu_reduce_scatter_cross_node_time),
    "AllToAll": (gn.gpu_all_to_all_time, gx.gpu_all_to_all_cross_node_time),
}


def _pairs(event) -> tuple[tuple[int, int], ...]:
    if event.perm is not None:
        return event.perm
    n = event.group
    return tuple((k, (k + event.shift) % n) for k in range(n))


@dataclass(frozen=True)
class _Collective:
    """What :func:`collective_cost` reads of a collective: its kind, axes, bytes V and group size."""

    kind: str
    axes: tuple[str, ...]
    bytes: sp.Expr
    group: int


def topology(chip: hardware.Chip | None, mesh, slice_text: str | None = None) -> tuple[dict | None, str]:
    """Which mesh axes wrap on the chip's slice and the sentence saying so: ``scalemath shard``'s own rule."""
    return _wraps(chip, mesh, slice_text)


def torus_hops(s: int, t: int, axes, mesh, wraps=None) -> int:
    """Hops from position ``s`` to ``t`` (along ``axes``, major first): a ring axis either way round (the
    default), an axis ``wraps`` calls open only along the line."""
    hops = 0
    for a in reversed(axes):
        d = abs(s % mesh[a] - t % mesh[a])
        hops += min(d, mesh[a] - d) if wraps is None or wraps.get(a, True) else d
        s, t = s // mesh[a], t // mesh[a]
    return hops


def _tpu_permute(event, mesh, wraps) -> tuple[sp.Expr, str]:
    moving = [(s, t) for s, t in _pairs(event) if s != t]
    if not moving:
        return sp.Integer(0), "every pair sends to itself: nothing moves"
    hops, (s, t) = max(((torus_hops(s, t, event.axes, mesh, wraps), (s, t)) for s, t in moving), key=lambda h: h[0])
    form = p2p_time().result.expr.xreplace({sym("bytes"): sym("V"), sym("links"): 1, sym("hops"): hops})
    if event.perm is None:
        ring = wraps is None or wraps.get(event.axes[0], True)
        what = f"shift {event.shift} on {'a ring' if ring else 'an open line'} of {event.group}: the longest path"
    else:
        what = "the longest path"
    how = (f"{what}, {s} -> {t}, is {hops} hop(s): cut-through, V/W_link + {hops} x t_hop (tpus.md's "
           "point-to-point transfer)")
    if hops > 1 and len(moving) > 1:
        how += ("; other blocks move at the same time: where paths share a link this is a lower bound (a link "
                "carrying k blocks takes k x V/W_link)")
    return form, how


def require_gpu_links(chip: hardware.Chip) -> None:
    if chip.nvlink_bytes_per_s is None or chip.nic_bytes_per_s is None or chip.nvlink_domain is None:
        raise BadValueError(f"{chip.key} has no NVLink bandwidth, NIC bandwidth or NVLink domain in the catalog; "
                            "add nvlink_bytes_per_s, nic_bytes_per_s and nvlink_domain with --hardware-file")


def gpu_networks(mesh, chip: hardware.Chip) -> dict[str, str]:
    """Each mesh axis's network on a GPU: "NVLink" when it and the axes after it fit a node exactly, else "NIC"."""
    node = chip.nvlink_domain or 1
    out, inner = {}, 1
    for a in reversed(list(mesh)):
        inner *= mesh[a]
        out[a] = "NVLink" if node % inner == 0 else "NIC"
    return {a: out[a] for a in mesh}


def gpu_rule(chip: hardware.Chip) -> str:
    node = chip.nvlink_domain or 1
    return (f"devices fill {node}-GPU NVLink nodes in row-major order, the last axis innermost, as plan places axes; "
            f"an axis is inside a node when it and the axes after it span a divisor of {node} GPUs")


def _gpu(event, mesh, chip) -> tuple[sp.Expr, str]:
    node = chip.nvlink_domain or 1
    grps = groups(mesh, event.axes)
    nvlink, nic = sp.Integer(chip.nvlink_bytes_per_s), sp.Integer(chip.nic_bytes_per_s)
    if event.kind == "CollectivePermute":
        moves = [(g[s], g[t]) for g in grps for s, t in _pairs(event) if s != t]
        if not moves:
            return sp.Integer(0), "every pair sends to itself: nothing moves"
        if any(a // node != b // node for a, b in moves):
            return sym("V") / nic, "a pair crosses nodes: each block goes straight to its target, V/W_nic"
        return sym("V") / nvlink, "each block goes straight to its target through the NVLink switch, V/W_gpu"
    m, per_node = gpu_placement(event.axes, mesh, node)  # the placement shard prices with
    inside, across = _GPU[event.kind]
    if m == 1:
        d = inside()
        expr = d.expr.xreplace({sym("N"): event.group, sym("W_gpu"): nvlink})
        return expr, f"{d.title}, N = {event.group}"
    d = across()
    expr = d.expr.xreplace({sym("W_gpu"): nvlink, sym("W_node"): per_node * nic, sym("M_nodes"): m})
    return expr, f"{d.title}: groups span {m} nodes, {per_node} GPU(s) in each, W_node = {per_node} x W_nic"


def price(event, mesh, chip: hardware.Chip | None, wraps: dict | None = None) -> tuple[sp.Expr, str]:
    """The collective's time: the form (symbols) or, with a chip, its value in seconds; and how. ``wraps``
    (from :func:`topology`) says which TPU axes are rings (all of them when None, the book's assumption)."""
    if event.group == 1:
        return sp.Integer(0), "a group of one device moves nothing"
    if chip is not None and chip.family == "gpu":
        require_gpu_links(chip)
        expr, how = _gpu(event, mesh, chip)
        return sp.nsimplify(expr.xreplace({sym("V"): event.bytes})), how
    real_axes = tuple(a for a in event.axes if mesh[a] > 1)
    if event.kind == "CollectivePermute":
        expr, how = _tpu_permute(event, mesh, wraps)
        expr = expr.xreplace({sym("V"): event.bytes})
    else:  # the very code shard prices its collectives with
        expr, how = collective_cost(_Collective(event.kind, real_axes, sp.Integer(event.bytes), event.group), mesh,
                                    "tpu", None, wraps)
    if chip is not None:
        values = _chip_values(chip, "bf16")[0]
        values[sym("W_link")] = chip.bandwidth("ici-link")
        expr = expr.xreplace({k: sp.sympify(v) for k, v in values.items()})
    return expr, how
