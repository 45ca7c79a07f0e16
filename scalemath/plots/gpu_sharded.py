"""gpus.md, 'Cross-node collectives', Pop Quiz 3: a collective over X of bf16[D_X, F_Y] when Y, the inner axis,
also shards the array, against Y. Inside a node the Y shards split the NVLink traffic; above it only a Y larger
than the node helps, by the number of nodes one shard group spans. The engine's form is
``gpu.all_reduce.sharded_inner_time`` (the book's per-level form, which its Pop Quiz 3 AllGather uses too:
each level's bytes over its bandwidth, without the (D-1)/D of a ring).
"""

from __future__ import annotations

import sympy as sp

from .. import quantities as Q
from ..errors import BadValueError
from ..values.printing import with_unit
from .common import Figure, Mark, Panel, Series
from .gpu_collective import gpu_chip

__all__ = ["QUANTITY", "data"]

QUANTITY = "gpu.all_reduce.sharded_inner_time"
#: the book's general tree form (its F27): each level's ring with its (D-1)/D, every level divided by max(Y, the
#: GPUs below it); drawn over one scalable unit (no spine: D_spine = 1 leaves that level no traffic)
GENERAL = "gpu.fat_tree.sharded_time"


def data(ctx: Q.Context, d: int = 8192, f: int = 32768, largest: int = 256, dtype_bytes: int = 2,
         nodes: int = 32) -> Figure:
    """T_node, T_out and their max against Y = 1, 2, 4, ... ``largest`` for V = dtype_bytes x D x F bytes, and the
    general tree form over one scalable unit of ``nodes`` nodes."""
    chip = gpu_chip(ctx)
    if largest < 2:
        raise BadValueError("--largest: give at least 2 shards")
    ys = tuple(1 << k for k in range(largest.bit_length()) if 1 << k <= largest)
    v = dtype_bytes * d * f
    node, out, total, general = [], [], [], []
    for y in ys:
        ev = Q.evaluate(Q.get(QUANTITY), ctx, {"V": v, "Y": y})
        if not ev.is_numeric:
            missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
            raise BadValueError(f"{QUANTITY} still depends on {missing} on {ctx.chip}")
        a, b, t = (sp.sympify(s.value) for s in ev.steps)
        node.append(a)
        out.append(b)
        total.append(t)
        tree = Q.evaluate(Q.get(GENERAL), ctx, {"V": v, "Y": y, "D_leaf": nodes, "D_spine": 1, "W_su": 1})
        general.append(sp.sympify(tree.value))
    series = (Series("inside the node (T_node)", ys, tuple(node), kind="dashed", color=3),
              Series("above the node (T_out)", ys, tuple(out), kind="dashed", color=4),
              Series(f"time ({QUANTITY})", ys, tuple(total), color=0),
              Series(f"general tree form over {nodes} nodes ({GENERAL})", ys, tuple(general), color=1))
    d_node = chip.nvlink_domain
    marks = ()
    if d_node in ys:
        marks = (Mark(f"Y = {d_node}: the node's GPUs", d_node, total[ys.index(d_node)], color=8, kind="ridge"),)
    panel = Panel("Y, the inner sharding degree", "time", "1", "s", series, marks, legend="lower left")
    return Figure("sharded", f"Pop Quiz 3: bf16[{d}_X, {f}_Y] over X on {chip.name} nodes, against Y", (panel,),
                  note=f"V = {with_unit(v, 'byte')}; up to the node's {d_node} GPUs, Y only splits the NVLink traffic "
                       "(not the bottleneck); above, the scale-out time falls as 1/Y. The book's two-level form "
                       "stops dividing the node term at Y = D_node, so it binds from Y = 128; the general form "
                       "(with the rings' (D-1)/D) keeps falling, as the book's plot does",
                  meta={"Y": ys, "node": tuple(node), "out": tuple(out), "time": tuple(total),
                        "general": tuple(general), "bytes": v})
