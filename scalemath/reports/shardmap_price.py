"""What each collective of a shard_map program costs: over TPU ICI, or over a GPU's NVLink and its NIC.

TPU (the book's JAX chapter and sharding.md): a collective over one mesh axis is the chapter's single-axis form
(psum 2V/W_ici, all_gather and psum_scatter V/W_ici, all_to_all V/(4 W_ici)); over k axes at once the book's
multi-axis form (W_ici times k). A ppermute moves each block along its shortest path on the torus (every axis a
ring): a shift by s on a ring of n is min(|s|, n - |s|) hops of V/W_link (each link carries that many blocks one
way); a permutation whose pairs are all neighbours costs one hop; otherwise the longest path is priced.

GPU (gpus.md): devices are numbered row-major (the last mesh axis innermost) and fill NVLink nodes of D_node GPUs
in order, as ``plan`` places axes innermost first: an axis lies inside a node when it and the axes after it span
a number of GPUs that divides D_node. A collective whose groups stay in one node is the book's intra-node ring
(AllGather and ReduceScatter V(N-1)/(N W_gpu), AllReduce twice that, AllToAll V(N-1)/(N^2 W_gpu)); one whose
groups span M nodes is the book's cross-node form with W_node the NICs the group has in one node (g GPUs per
node, each with its NIC). A ppermute sends each block straight to its target: V/W_gpu through the NVLink switch,
or V/W_nic when a pair crosses nodes.
"""

from __future__ import annotations

import sympy as sp

from ..catalog import hardware
from ..errors import BadValueError
from ..symbolic import jax_collectives as jc
from ..symbolic.collectives import gpu_cross_node as gx
from ..symbolic.collectives import gpu_node as gn
from ..symbolic.collectives import tpu_ring
from ..symbolic.shardmap_mesh import groups
from ..symbolic.symbols import sym

__all__ = ["price", "gpu_networks", "gpu_rule", "require_gpu_links", "torus_hops"]

_TPU = {  # kind -> (one axis, several axes)
    "AllReduce": (jc.psum_time, tpu_ring.all_reduce_time_multi_axis),
    "AllGather": (jc.all_gather_time, tpu_ring.all_gather_time_multi_axis),
    "ReduceScatter": (jc.psum_scatter_time, tpu_ring.reduce_scatter_time_multi_axis),
    "AllToAll": (jc.all_to_all_time, jc.all_to_all_time),
}
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


def torus_hops(s: int, t: int, axes, mesh) -> int:
    """Hops from position ``s`` to ``t`` (along ``axes``, major first) on a torus: each axis a ring."""
    hops = 0
    for a in reversed(axes):
        d = abs(s % mesh[a] - t % mesh[a])
        hops += min(d, mesh[a] - d)
        s, t = s // mesh[a], t // mesh[a]
    return hops


def _tpu_permute(event, mesh) -> tuple[sp.Expr, str]:
    if event.perm is None:
        n, s = event.group, abs(event.shift) % event.group
        hops = min(s, n - s)
        return hops * jc.ppermute_time().expr, f"shift {event.shift} on a ring of {n}: {hops} hop(s) of V/W_link"
    hops, (s, t) = max(((torus_hops(s, t, event.axes, mesh), (s, t)) for s, t in event.perm), key=lambda h: h[0],
                       default=(0, (0, 0)))
    if hops == 0:
        return sp.Integer(0), "every pair sends to itself: nothing moves"
    if hops == 1:
        return jc.ppermute_time().expr, "every pair neighbours on the torus: one hop of V/W_link"
    return hops * jc.ppermute_time().expr, (f"the longest path, {s} -> {t}, is {hops} hops: {hops} x V/W_link "
                                           "(more if paths share a link)")


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
    spans = [len({d // node for d in g}) for g in grps]
    m = max(spans)
    inside, across = _GPU[event.kind]
    if m == 1:
        d = inside()
        expr = d.expr.xreplace({sym("N"): event.group, sym("W_gpu"): nvlink})
        return expr, f"{d.title}, N = {event.group}"
    per_node = min(min(sum(1 for d in g if d // node == k) for k in {d // node for d in g}) for g in grps)
    d = across()
    expr = d.expr.xreplace({sym("W_gpu"): nvlink, sym("W_node"): per_node * nic, sym("M_nodes"): m})
    return expr, f"{d.title}: groups span {m} nodes, {per_node} GPU(s) in each, W_node = {per_node} x W_nic"


def price(event, mesh, chip: hardware.Chip | None) -> tuple[sp.Expr, str]:
    """The collective's time: the form (symbols) or, with a chip, its value in seconds; and how."""
    if event.group == 1:
        return sp.Integer(0), "a group of one device moves nothing"
    if chip is not None and chip.family == "gpu":
        require_gpu_links(chip)
        expr, how = _gpu(event, mesh, chip)
        return sp.nsimplify(expr.xreplace({sym("V"): event.bytes})), how
    real_axes = [a for a in event.axes if mesh[a] > 1]
    if event.kind == "CollectivePermute":
        expr, how = _tpu_permute(event, mesh)
    else:
        one, several = _TPU[event.kind]
        derivation = one() if len(real_axes) == 1 or event.kind == "AllToAll" else several()
        expr = derivation.expr.xreplace({sym("N_axes"): len(real_axes)})
        how = derivation.title
    expr = expr.xreplace({sym("V"): event.bytes})
    if chip is not None:
        expr = expr.xreplace({sym("W_ici"): chip.bandwidth("ici"), sym("W_link"): chip.bandwidth("ici-link")})
    return sp.nsimplify(expr), how
