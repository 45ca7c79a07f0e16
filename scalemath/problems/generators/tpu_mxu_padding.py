"""A matmul whose weight dimensions are not multiples of the MXU's side (tpus.md, 'Key Takeaways': weights are
padded to 128, 256 on TPU v6e and later, in both dimensions), and the systolic array's fill bubble for the rows
streamed through it (Appendix B): the FLOPs the MXU runs, those wasted on padding, the useful share, and the
share of the array's cycles left after its fill.

Engine route: ``tpu.mxu.padded_flops``, ``tpu.mxu.wasted_flops``, ``tpu.mxu.padding_efficiency`` and
``tpu.systolic.fill_efficiency`` on the drawn chip (its MXU side from the catalog). Second route: the padding by
integer ceiling division and the bubble as 2(s - 1) cycles, in plain integers and fractions.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import ask, pick
from ..registry import Generator, register, reject_if

SOURCE = "tpus.md, 'Key Takeaways' (padding to the MXU's side) and Appendix B (the systolic array)"
CHIPS = ("tpu-v3", "tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x")
DIMS = (96, 200, 320, 576, 1000, 1536, 2304, 4000, 4160, 5120, 11008, 13824)
ROWS = (8, 16, 64, 256, 1024, 4096)


def draw(rng):
    p = {"chip": pick(rng, CHIPS), "D": pick(rng, DIMS), "F": pick(rng, DIMS), "B": pick(rng, ROWS)}
    s = get_chip(p["chip"]).mxu_side
    reject_if(p["D"] % s == 0 and p["F"] % s == 0, "at least one weight dimension needs padding")
    return p


def solve(p):
    g = {"B": p["B"], "D": p["D"], "F": p["F"]}
    return [ask("run", "FLOPs the MXU runs on the padded weights", "tpu.mxu.padded_flops", chip=p["chip"], given=g),
            ask("wasted", "FLOPs spent on the padding", "tpu.mxu.wasted_flops", chip=p["chip"], given=g),
            ask("useful", "share of the MXU's FLOPs that are useful", "tpu.mxu.padding_efficiency", chip=p["chip"],
                given=g),
            ask("fill", "share of the systolic array's cycles left after its fill bubble",
                "tpu.systolic.fill_efficiency", chip=p["chip"], given={"B": p["B"]})]


def check(p):
    s = get_chip(p["chip"]).mxu_side
    d_pad, f_pad = -(-p["D"] // s) * s, -(-p["F"] // s) * s
    run = 2 * p["B"] * d_pad * f_pad
    useful = 2 * p["B"] * p["D"] * p["F"]
    return {"run": run, "wasted": run - useful, "useful": Fraction(useful, run),
            "fill": Fraction(p["B"], p["B"] + 2 * (s - 1))}


register(Generator("tpu_mxu_padding", "tpu", "Padding a matmul to the MXU, and the systolic fill bubble",
                   SOURCE, draw, solve, check))
