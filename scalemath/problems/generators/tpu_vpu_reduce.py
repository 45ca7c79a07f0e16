"""Reducing an fp32 array held in a TPU core's vector registers (tpus.md, Appendix A): a register is 8 sublanes
by 128 lanes; summing over the sublane axis is whole-register adds and then 3 cheap sublane shuffles and adds,
while summing over the lane axis ends in 7 rotate-and-add steps on the slower cross-lane unit (XLU).

Engine route: ``tpu.vpu.sublane_reduce_ops`` or ``tpu.vpu.lane_reduce_ops`` on a chip whose VPU shape the
catalog gives, for the drawn array, and the other axis's count for comparison. Second route: the registers laid
out and counted by hand (rows/8 by columns/128 registers), log2 8 and log2 128 steps inside the last one.
"""

from __future__ import annotations

from ..draws import ask, pick
from ..registry import Generator, register

SOURCE = "tpus.md, Appendix A: 'More on TPU internals' (the VPU, its sublanes and lanes, the XLU)"
CHIPS = ("tpu-v4p", "tpu-v5p")
ROWS = (8, 16, 32, 64, 128, 256, 512, 1024)
COLS = (128, 256, 512, 1024, 2048, 4096, 8192)


def draw(rng):
    return {"chip": pick(rng, CHIPS), "B": pick(rng, ROWS), "D": pick(rng, COLS), "axis": pick(rng, ("rows", "cols"))}


def solve(p):
    g = {"B": p["B"], "D": p["D"]}
    sub = ask("over_rows", "operations to sum over the rows (the sublane axis)", "tpu.vpu.sublane_reduce_ops",
              chip=p["chip"], given=g)
    lane = ask("over_cols", "operations to sum over the columns (the lane axis)", "tpu.vpu.lane_reduce_ops",
               chip=p["chip"], given=g)
    return [sub, lane] if p["axis"] == "rows" else [lane, sub]


def check(p):
    regs_down, regs_across = p["B"] // 8, p["D"] // 128
    over_rows = regs_across * (regs_down - 1) + regs_across * (3 + 3)  # then shuffles by 4, 2, 1 and their adds
    over_cols = regs_down * (regs_across - 1) + regs_down * 7  # then 7 cross-lane steps on the XLU
    return {"over_rows": over_rows, "over_cols": over_cols}


register(Generator("tpu_vpu_reduce", "tpu", "Summing an array on the VPU: sublanes against lanes", SOURCE, draw,
                   solve, check))
