"""The cost of a sharded-matmul plan: per-device compute time against collective time.

Each collective of a :class:`~scalemath.symbolic.sharding.Plan` is priced with the
collective costs of :mod:`scalemath.symbolic.collectives`: on a TPU torus, the
bidirectional ring over each mesh axis it spans (the bandwidth term with its (N-1)/N
factor, the latency term t_hop per hop); an axis without wraparound links is an open
line, whose end chip receives through one link (W_ici/2, twice the ring's time) and
whose far end is N - 1 hops away (the chip's rule says which axes wrap: v5e and v6e
only at 16 chips, v4p and v5p in whole 4x4x4 cubes). On GPUs: the NVLink ring inside a
node or the fat tree across nodes. A CollectivePermute (each device sends one block to one
other device) is jax.lax.ppermute's V/W_link. The result is a Derivation whose last step is the
lower bound max(T_math, T_comms).
"""

from __future__ import annotations

from typing import Mapping

import sympy as sp

from . import collectives as col
from .derivation import Derivation, Step
from .sharding import Collective, Plan
from .symbols import sym

__all__ = ["plan_cost", "collective_cost", "gpu_placement"]

SOURCE = "sharding.md, 'Computation With Sharded Arrays' and the collective costs"
V, N = sym("V"), sym("N")
W_ici, W_link, t_hop, C = sym("W_ici"), sym("W_link"), sym("t_hop"), sym("C")
W_gpu, W_node, D_node, M = sym("W_gpu"), sym("W_node"), sym("D_node"), sym("M_nodes")
X, Y, Z = sym("X"), sym("Y"), sym("Z")


def _rings(c: Collective, mesh: Mapping[str, int], wraps: Mapping[str, bool] | None) -> dict[str, bool]:
    """Which of ``c``'s axes are rings: those ``wraps`` says wrap (all of them by default, the book's
    assumption), except an axis of two chips, which one link joins: both directions of a "ring" of two would
    share that link, so it is priced as the open line it is (the profiling chapter's 2-way ReduceScatter on
    TPU v2, V/W_ici = 1.118 ms against 1.13 ms measured)."""
    return {a: mesh[a] > 2 and (True if wraps is None else wraps.get(a, True)) for a in c.axes}


def gpu_placement(axes, mesh: Mapping[str, int], node_size: int | None) -> tuple[int, int]:
    """(the most nodes a group over ``axes`` spans, the fewest GPUs it has in one of them) when the devices, numbered
    row-major with the last mesh axis innermost, fill NVLink nodes of ``node_size`` GPUs in order, as ``plan`` places
    axes innermost first. Without a node size every group is inside one node."""
    from .shardmap_mesh import groups

    if node_size is None:
        return 1, 0
    grps = groups(mesh, axes)
    nodes = max(len({d // node_size for d in g}) for g in grps)
    per_node = min(sum(1 for d in g if d // node_size == k) for g in grps for k in {d // node_size for d in g})
    return nodes, per_node


def collective_cost(c: Collective, mesh: Mapping[str, int], family: str = "tpu",
                    node_size: int | None = None, wraps: Mapping[str, bool] | None = None) -> tuple[sp.Expr, str]:
    """Seconds for one collective (an expression in W_ici, t_hop or W_gpu, W_node) and how it was priced.

    ``wraps`` says which TPU mesh axes are rings (default: all of them, the book's assumption)."""
    sizes = [mesh[a] for a in c.axes]
    n, m, v = sp.Integer(c.group), len(sizes), c.bytes
    if c.kind == "CollectivePermute":
        return _permute_cost(c, mesh, family, node_size, wraps)
    if family == "gpu":
        nodes, per_node = gpu_placement(c.axes, mesh, node_size)
        if nodes == 1:
            base = {"AllGather": col.gpu_all_gather_time, "ReduceScatter": col.gpu_reduce_scatter_time,
                    "AllReduce": col.gpu_all_reduce_time, "AllToAll": col.gpu_all_to_all_time}[c.kind]()
            return base.expr.xreplace({V: v, N: n}), f"NVLink ring inside a node of {node_size or 'N'} GPUs"
        # a group with g of a node's D_node GPUs has their g NICs: W_node g / D_node of the node's egress
        egress = {W_node: W_node * sp.Rational(per_node, node_size)}
        share = "" if per_node == node_size else f", {per_node} of a node's {node_size} GPUs and their NICs"
        if c.kind == "AllToAll":
            base = col.gpu_all_to_all_cross_node_time()
            return (base.expr.xreplace({V: v, M: sp.Integer(nodes)}).xreplace(egress),
                    f"AllToAll across {nodes} nodes{share}")
        base = {"AllGather": col.gpu_all_gather_cross_node_time, "ReduceScatter": col.gpu_reduce_scatter_cross_node_time,
                "AllReduce": col.gpu_all_reduce_cross_node_time}[c.kind]()
        return base.expr.xreplace({V: v}).xreplace(egress), f"fat tree across {nodes} nodes (node egress bound{share})"
    ring = _rings(c, mesh, wraps)
    open_axes = [a for a in c.axes if not ring[a]]
    # hops to the far side: half a ring, or the whole open line
    latency = t_hop * sp.Add(*(sp.Integer(mesh[a]) / 2 if ring[a] else sp.Integer(mesh[a] - 1) for a in c.axes))
    where = ", ".join(f"{a} ({'ring' if ring[a] else 'open line'})" for a in c.axes) if open_axes else \
        ", ".join(c.axes)
    if c.kind == "AllToAll":
        if m == 1:
            bw = col.all_to_all_time().expr.xreplace({V: v, N: n})
        else:
            dims = (sizes + [1, 1])[:3]
            # V here is what the whole group holds (the array as if gathered over the axes): the torus
            # form's V summed over all devices, so that one axis of N gives back V/(4 W_ici)
            bw = col.all_to_all_time_torus().expr.xreplace({V: v, X: dims[0], Y: dims[1], Z: dims[2]})
        if open_axes:  # an open line has half a ring's bisection links
            return sp.Max(latency, 2 * bw), f"AllToAll over {where}: an open axis halves the bisection, twice the time"
        return sp.Max(latency, bw), f"AllToAll on a {'ring' if m == 1 else f'{m}-axis torus'}"
    # each ring axis brings W_ici (both directions); an open axis W_ici/2 (the end chip's single link)
    bandwidth = W_ici * (m - sp.Rational(len(open_axes), 2))
    one = col.all_gather_time().expr.xreplace({V: v, N: n, W_ici: bandwidth})
    if open_axes:
        how = (f"over {where}: the end chip of an open line receives through one link, W_ici/2, and waits "
               "N - 1 hops for the far end")
    else:
        how = f"bidirectional ring{'s' if m > 1 else ''} with wraparound over {where}"
    if c.kind == "AllReduce":
        return 2 * sp.Max(latency, one), how + " (ReduceScatter + AllGather)"
    return sp.Max(latency, one), how


def _permute_cost(c: Collective, mesh, family, node_size, wraps) -> tuple[sp.Expr, str]:
    """A CollectivePermute: every device sends its V bytes to one other device at once (jax.lax.ppermute's
    V / W_link, the form of :func:`scalemath.symbolic.jax_collectives.ppermute_time`)."""
    from .jax_collectives import ppermute_time

    form = ppermute_time().expr
    if family == "gpu":
        if node_size is None or c.group <= node_size:
            return form.xreplace({V: c.bytes, W_link: W_gpu}), "point to point over NVLink at one GPU's W_gpu"
        return (form.xreplace({V: c.bytes * D_node, W_link: W_node}).xreplace({D_node: node_size}),
                "point to point across nodes: a node's GPUs share its egress W_node")
    ring = _rings(c, mesh, wraps)
    latency = t_hop * sp.Add(*(sp.Integer(mesh[a]) // 2 if ring[a] else sp.Integer(mesh[a] - 1) for a in c.axes))
    bw = form.xreplace({V: c.bytes, W_link: W_ici / 2})
    return sp.Max(latency, bw), (f"point to point over {', '.join(c.axes)}: V through one link one way, W_link = "
                                 "W_ici/2; the farthest pair half a ring (an open line's N - 1 hops) away per axis")


def _label(c: Collective) -> str:
    short = {"AllGather": "AG", "ReduceScatter": "RS", "AllReduce": "AR", "AllToAll": "A2A",
             "CollectivePermute": "CP"}[c.kind]
    return rf"T_{{\mathrm{{{short}}}_{{{''.join(c.axes)}}}({c.before.name})}}"


def plan_cost(plan: Plan, mesh: Mapping[str, int], family: str = "tpu", node_size: int | None = None,
              wraps: Mapping[str, bool] | None = None) -> Derivation:
    """Steps: FLOPs per device, T_math, every collective's V and time, T_comms, and the lower bound."""
    steps = [Step(r"\mathrm{FLOPs}_{\mathrm{dev}}", plan.flops,
                  f"2 × the local shapes multiplied: {plan.lhs} @ {plan.rhs}", "FLOP"),
             Step(r"T_{\mathrm{math}}", plan.flops / C, "per-device FLOPs at peak", "s")]
    times = []
    for c in plan.collectives:
        cost, how = collective_cost(c, mesh, family, node_size, wraps)
        steps.append(Step(rf"V_{{{len(times) + 1}}}", c.bytes, f"bytes of {c.kind} {c.before} -> {c.after}", "byte"))
        steps.append(Step(_label(c), cost, how, "s"))
        times.append(cost)
    comms = sp.Add(*times) if times else sp.Integer(0)
    steps.append(Step(r"T_{\mathrm{comms}}", comms, "the collectives one after another", "s"))
    steps.append(Step(r"T_{\mathrm{lower}}", sp.Max(steps[1].expr, comms),
                      "compute and communication overlapped perfectly", "s"))
    return Derivation(f"{plan.name}", tuple(steps), SOURCE)
