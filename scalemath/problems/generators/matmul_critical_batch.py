"""Batch size at which a matmul becomes compute-bound, approximate and exact (roofline.md, Q1-Q3, Q5)."""

from __future__ import annotations

from fractions import Fraction

from ...errors import NoCrossoverError
from ...catalog.hardware import get_chip
from ..draws import MODEL_SHAPES, ask, chip_dtypes, pick, pick_chip, whole, whole_check
from ..registry import Generator, Reject, register
from .matmul_bounds import ELEMENT_BYTES, MIXES


def draw(rng):
    chip = pick_chip(rng, dtypes=["bf16"])
    usable = [mix for mix in MIXES if len(chip_dtypes(chip, mix)) == len(set(mix))]  # weights in a dtype it has
    dtype, weight_dtype = pick(rng, usable)
    model, d, f = pick(rng, MODEL_SHAPES)
    p = {"chip": chip.key, "dtype": dtype, "weight_dtype": weight_dtype, "model": model, "D": d, "F": f}
    try:
        _exact(p)
    except NoCrossoverError:
        raise Reject("the matmul must become compute-bound at some batch (the exact crossover exists)") from None
    return p


def _exact(p):
    return ask("critical_batch", "exact critical batch, every byte counted", "matmul.critical_batch",
               chip=p["chip"], dtype=p["dtype"], weight_dtype=p["weight_dtype"],
               given={"D": p["D"], "F": p["F"]})


def solve(p):
    return [
        whole(ask("critical_batch_approx", "smallest whole batch that is compute-bound when B is much smaller "
                  "than D and F", "matmul.critical_batch_approx", chip=p["chip"], dtype=p["dtype"],
                  weight_dtype=p["weight_dtype"]), "up"),
        whole(_exact(p), "up", "smallest whole batch that is compute-bound, every byte counted"),
    ]


def check(p):
    chip = get_chip(p["chip"])
    c, w = Fraction(chip.flops_per_s[p["dtype"]]), Fraction(chip.hbm_bytes_per_s)
    act, wt = ELEMENT_BYTES[p["dtype"]], ELEMENT_BYTES[p["weight_dtype"]]
    d, f = p["D"], p["F"]
    # Approximate: only the weights count, so FLOPs/bytes = 2BDF / (wt D F) = 2B/wt; set it equal to c/w.
    approx = c * wt / (2 * w)
    # Exact: 2BDF/c = (act B D + wt D F + act B F)/w, linear in B:
    #   B (2 D F w - c act (D + F)) = c wt D F.
    slope = 2 * d * f * w - c * act * (d + f)
    exact = c * wt * d * f / slope
    return whole_check("critical_batch_approx", approx, "up") | whole_check("critical_batch", exact, "up")


register(Generator("matmul_critical_batch", "roofline", "Batch size at which a matmul becomes compute-bound",
                   "roofline.md, 'Matrix multiplication' and 'A Few Problems to Work' (Q1-Q3, Q5)",
                   draw, solve, check))
