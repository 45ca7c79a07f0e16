"""Read Pop Quiz 3 off a plot (gpus.md, 'Cross-node collectives'): a collective over X of bf16[D_X, F_Y] inside one
scalable unit of GPU nodes against Y, the inner axis that also shards the array. The time stays flat while the Y
shards only split the NVLink traffic inside a node, and falls as 1/Y once a shard group spans several nodes; the
student reads the flat time, the Y where the curve changes regime, the time at a larger Y and the speed-up.

Which of the book's two forms: the book answers Pop Quiz 3 with a two-level form (the node's NVLink term and the
scale-out term, ``gpu.all_reduce.sharded_inner_time``) whose node term stops falling at Y = D_node, so it would
flatten again from Y = 128 on an H100 SU, while the book's plot keeps falling. The figure here draws the book's
general tree form (``gpu.fat_tree.sharded_time``: each level a ring with its (D-1)/D, the levels' traffic
divided by max(Y, the GPUs below)), over one scalable unit (no spine), as ``scalemath plot sharded`` does; it
keeps falling like the book's plot, and its flat part is the worked 1.300 ms for D = 8192, F = 32768 on H100.

The figure is scalemath.plots.gpu_sharded.data's general-form series alone, without marks; the key is read from
the same exact data. The second route is the two levels by hand in fractions from the catalog's integers.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ..draws import pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if
from .figure_gpu_collective_read import _chips

NAME = "figure_sharded_read"
READ_TOL = Fraction(1, 10)  # read off log axes with a minor grid
WIDTHS = (4096, 8192, 16384)
RATIOS = (Fraction(2), Fraction(3), Fraction(7, 2), Fraction(4))  # F / D
NODES = (8, 16, 32)


def _usable(key: str) -> bool:
    chip = get_chip(key)
    n = chip.nvlink_domain
    return bool(chip.nic_bytes_per_s and n and n & (n - 1) == 0)  # Y is drawn at powers of two


def _levels(p, y: int) -> tuple[Fraction, Fraction]:
    """Second route: the node's and the leaf's ring times for the array sharded Y ways."""
    chip = get_chip(p["chip"])
    v, dn, m = 2 * p["D"] * p["F"], chip.nvlink_domain, p["nodes"]
    node = Fraction(v * (dn - 1), dn * y * chip.nvlink_bytes_per_s)
    leaf = Fraction(v * (m - 1) * dn, m * max(y, dn) * chip.nic_bytes_per_s * dn)
    return node, leaf


def draw(rng):
    chip = pick(rng, [c for c in _chips() if _usable(c)])
    d = pick(rng, WIDTHS)
    f = int(d * pick(rng, RATIOS))
    nodes = pick(rng, NODES)
    dn = get_chip(chip).nvlink_domain
    p = {"chip": chip, "D": d, "F": f, "nodes": nodes, "largest": dn * nodes}
    node, leaf = _levels(p, 1)
    reject_if(node > leaf, "the scale-out level must bind while Y stays inside a node")
    above = [dn * 2 ** j for j in range(1, nodes.bit_length())]
    y_read, y_big = rng.sample(above, 2)
    return {**p, "Y_read": y_read, "Y_big": y_big}


def _kind(chip: str, d: int, f: int, nodes: int):
    """The general tree form's time against Y = 1 .. the unit's GPUs, no mark at the node's size."""
    from ... import quantities as Q
    from ...plots import gpu_sharded
    from ...plots.common import Panel

    ctx = Q.Context(chip=chip)
    largest = get_chip(chip).nvlink_domain * nodes
    fig = gpu_sharded.data(ctx, d, f, largest, nodes=nodes)
    panel = fig.panels[0]
    general = dataclasses.replace(panel.series[3], label="collective time (general tree form)", color=0)
    panel = Panel(panel.xlabel, panel.ylabel, panel.xunit, panel.yunit, (general,), (), legend="lower left")
    title = f"A collective over X against Y on {nodes} x {get_chip(chip).name} nodes (read off the axes)"
    return dataclasses.replace(fig, title=title, panels=(panel,), note="the dotted grid marks 2, 3, ... 9 of each decade")


FIGURE_KINDS.setdefault("sharded", _kind)


def figure(p) -> Spec:
    return Spec("sharded", (p["chip"], p["D"], p["F"], p["nodes"]),
                alt="A collective's time against the inner sharding degree Y on log axes: flat, then falling")


def solve(p):
    meta = build(figure(p)).meta
    times = dict(zip(meta["Y"], meta["general"]))
    flat = times[1]
    corner = sp.Integer(max(y for y, t in times.items() if t == flat))
    return [Answer("flat", "the time while Y is small", flat, "s", rel_tol=READ_TOL),
            Answer("corner", "the largest Y at which the time has not started to fall", corner, "1",
                   rel_tol=Fraction(0)),
            Answer("t_read", "the time at the asked Y", times[p["Y_read"]], "s", rel_tol=READ_TOL),
            Answer("speedup", "how many times faster the collective is at the other Y than at Y = 1",
                   flat / times[p["Y_big"]], "1", rel_tol=READ_TOL)]


def check(p):
    def t(y):
        return max(_levels(p, y))

    ys = [2 ** j for j in range(p["largest"].bit_length()) if 2 ** j <= p["largest"]]
    corner = max(y for y in ys if t(y) == t(1))
    return {"flat": t(1), "corner": corner, "t_read": t(p["Y_read"]), "speedup": t(1) / t(p["Y_big"])}


register_figure(NAME, figure)
register(Generator(NAME, "gpu", "Reading Pop Quiz 3's collective time against the inner sharding off a plot",
                   "gpus.md, 'Cross-node collectives' (Pop Quiz 3)", draw, solve, check))
