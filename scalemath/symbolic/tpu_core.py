"""Inside a TPU core (tpus.md, 'Key Takeaways', Appendix A and Appendix B): the MXU's padding of a matmul's
weight dimensions to its side, the systolic array's fill bubble, and the vector unit's reductions along its
sublanes and across its lanes.

The book states the rules ("weight matrices need to be padded to at least size 128 (256 on TPU v6) in both
dimensions"; "an initial pipeline bubble"; a sublane reduction is 3 shuffles and 3 adds, a lane reduction
needs the slower cross-lane unit) but counts none of them; the counts here are the plain models behind them:
padding to the next multiple of the side, a skewed weight-stationary array that needs 2(s - 1) cycles before
its last cell is busy, and a log2 tree of shuffle-and-add steps.

>>> mxu_padding_efficiency().at({sym("D"): 200, sym("F"): 128, sym("s_mxu"): 128}).value
25/32
>>> systolic_fill().at({sym("B"): 8, sym("s_mxu"): 128}).value
4/131
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step
from .symbols import sym

__all__ = ["mxu_padded_flops", "mxu_wasted_flops", "mxu_padding_efficiency", "systolic_fill", "systolic_cycles",
           "vpu_sublane_reduce_ops", "vpu_lane_reduce_ops"]

TAKEAWAYS = "tpus.md, 'Key Takeaways' (weights padded to the MXU's side) and Appendix B"
SYSTOLIC = "tpus.md, Appendix B: 'How does a systolic array work?'"
VPU = "tpus.md, Appendix A: 'More on TPU internals' (the VPU and its reductions)"

B, D, F, s = sym("B"), sym("D"), sym("F"), sym("s_mxu")
n_sub, n_lane = sym("n_sublane"), sym("n_vlane")


def _padding_steps() -> tuple[Step, ...]:
    d_pad = Step(r"D_{\mathrm{pad}}", s * sp.ceiling(D / s),
                 "the contracting dimension padded up to a whole number of MXU sides", "element")
    f_pad = Step(r"F_{\mathrm{pad}}", s * sp.ceiling(F / s),
                 "the output dimension padded the same way: the weight tile fills the s x s array in both", "element")
    run = Step(r"\mathrm{FLOPs}_{\mathrm{run}}", 2 * B * d_pad.expr * f_pad.expr,
               "the MXU multiplies the padded weights: 2 B D_pad F_pad", "FLOP")
    return d_pad, f_pad, run


@functools.cache
def mxu_padded_flops() -> Derivation:
    """FLOPs the MXU runs for X[B, D] · W[D, F] once W is padded to whole s x s tiles."""
    return Derivation("FLOPs an MXU runs for a matmul with padded weights", _padding_steps(), TAKEAWAYS)


@functools.cache
def mxu_wasted_flops() -> Derivation:
    steps = _padding_steps()
    return Derivation("FLOPs an MXU wastes on padding", steps + (
        Step(r"\mathrm{FLOPs}_{\mathrm{useful}}", 2 * B * D * F, "the matmul itself: 2 B D F", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{wasted}}", steps[-1].expr - 2 * B * D * F,
             "multiplications by the padding's zeros", "FLOP"),
    ), TAKEAWAYS)


@functools.cache
def mxu_padding_efficiency() -> Derivation:
    steps = _padding_steps()
    return Derivation("share of an MXU's FLOPs that do useful work on a padded matmul", steps + (
        Step(r"\eta_{\mathrm{pad}}", D * F / (steps[0].expr * steps[1].expr),
             "useful over run: 2BDF / (2B D_pad F_pad), the batch cancels", "1"),
    ), TAKEAWAYS)


def _cycles() -> tuple[Step, ...]:
    fill = Step(r"c_{\mathrm{fill}}", 2 * (s - 1),
                "inputs enter skewed, one row a cycle: the first row needs s - 1 cycles to cross the array and its "
                "partial sums s - 1 more to flow down, so the last cell starts 2(s - 1) cycles late", "cycle")
    total = Step(r"c_{\mathrm{total}}", B + fill.expr,
                 "then one LHS row a cycle: B rows through the weights already held", "cycle")
    return fill, total


@functools.cache
def systolic_cycles() -> Derivation:
    return Derivation("cycles of an s x s systolic array to stream B rows through one weight tile", _cycles(),
                      SYSTOLIC)


@functools.cache
def systolic_fill() -> Derivation:
    fill, total = _cycles()
    return Derivation("share of a systolic array's cycles doing useful work after the fill bubble", (fill, total, Step(
        r"\eta_{\mathrm{fill}}", B / total.expr,
        "B useful cycles out of B + 2(s - 1): the bubble is paid once, so long streams (large B, tiles chained "
        "without a new bubble) hide it", "1")), SYSTOLIC)


@functools.cache
def vpu_sublane_reduce_ops() -> Derivation:
    """Vector ops to sum an fp32 array [B, D] over its B rows, held as (8, 128) registers."""
    blocks = Step(r"n_{\mathrm{col}}", D / n_lane, "column blocks of 128 lanes: one register wide each", "unit")
    adds = Step(r"n_{\mathrm{add}}", blocks.expr * (B / n_sub - 1),
                "whole registers added elementwise: B/8 registers per column block down to one", "unit")
    tree = Step(r"n_{\mathrm{shuffle}}", blocks.expr * 2 * sp.ceiling(sp.log(n_sub, 2)),
                "inside the last register, log2(8) = 3 sublane shuffles (by 4, 2, 1) and 3 adds", "unit")
    return Derivation("VPU operations to reduce [B, D] over B (the sublane axis)", (blocks, adds, tree, Step(
        r"n_{\mathrm{ops}}", adds.expr + tree.expr, "all on the VPU: a sublane reduction is cheap", "unit")), VPU)


@functools.cache
def vpu_lane_reduce_ops() -> Derivation:
    """Vector ops to sum an fp32 array [B, D] over its D columns (the lane axis)."""
    rows = Step(r"n_{\mathrm{row}}", B / n_sub, "row blocks of 8 sublanes: one register tall each", "unit")
    adds = Step(r"n_{\mathrm{add}}", rows.expr * (D / n_lane - 1),
                "whole registers added elementwise: D/128 registers per row block down to one", "unit")
    xlu = Step(r"n_{\mathrm{XLU}}", rows.expr * sp.ceiling(sp.log(n_lane, 2)),
               "inside the last register, log2(128) = 7 cross-lane rotate-and-add steps, on the XLU (slow)", "unit")
    return Derivation("VPU and XLU operations to reduce [B, D] over D (the lane axis)", (rows, adds, xlu, Step(
        r"n_{\mathrm{ops}}", adds.expr + xlu.expr, "the VPU's adds and the XLU's cross-lane steps", "unit")), VPU)
