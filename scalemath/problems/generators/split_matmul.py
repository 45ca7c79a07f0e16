"""Two chips split a matmul along D and swap partial sums over ICI (roofline.md, network rooflines)."""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import MODEL_SHAPES, ask, pick, pick_chip, pow2, whole, whole_check
from ..registry import Generator, register

DTYPE = "bf16"
PARTIAL_BYTES = 2   # the partial sums travel in bf16


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=["ici_link_bytes_per_s"], dtypes=[DTYPE])
    model, d, f = pick(rng, MODEL_SHAPES)
    return {"chip": chip.key, "model": model, "B": pow2(rng, 4, 14), "D": d, "F": f}


def solve(p):
    kw = dict(chip=p["chip"], dtype=DTYPE)
    return [
        ask("t_math", "compute time per chip", "network.split_matmul.t_math",
            given={"B": p["B"], "D": p["D"], "F": p["F"]}, **kw),
        ask("t_comms", "time to swap the partial sums", "network.split_matmul.t_comms",
            given={"B": p["B"], "F": p["F"]}, **kw),
        whole(ask("critical_d", "smallest whole D for which the split is compute-bound",
                  "network.split_matmul.critical_d", **kw), "up"),
    ]


def check(p):
    chip = get_chip(p["chip"])
    c, link = Fraction(chip.flops_per_s[DTYPE]), Fraction(chip.ici_link_bytes_per_s)
    b, d, f = p["B"], p["D"], p["F"]
    t_math = Fraction(2 * b * d * f, 2) / c        # each chip does half of the 2BDF FLOPs
    t_comms = PARTIAL_BYTES * b * f / link          # both directions at once: each side sends its Z[B,F]
    # BDF/c = 2BF/link  <=>  D = 2c/link
    return {"t_math": t_math, "t_comms": t_comms, **whole_check("critical_d", PARTIAL_BYTES * c / link, "up")}


register(Generator("split_matmul", "roofline", "Two chips splitting a matmul: when does the network matter?",
                   "roofline.md, 'Network communication rooflines'", draw, solve, check))
