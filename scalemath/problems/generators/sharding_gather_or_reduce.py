"""Gather the weights or reduce the output? The book's Q4 on a real TPU axis (sharding.md).

``X[B, D] · Y[D_X, F] -> Z[B, F]``: strategy 1 gathers Y over X and multiplies on every chip;
strategy 2 slices X to match (free), multiplies the local shards into ``Z[B, F]{U_X}`` and
AllReduces. The engine pieces are ``roofline.matmul_t_math`` and the book's bandwidth-bound
``all_gather_time_approx`` and ``all_reduce_time_approx``, with V set to the bytes of Y and of Z;
each strategy takes the larger of its compute and communication times. The crossover D* above
which strategy 2 wins is min(2 b_o B / b_w, b_o C / W_ici): strategy 2 stays comms-bound there,
and strategy 1 is comms-bound below B = b_w C / (2 W_ici) and compute-bound above.
The second route is plain Fraction arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...cache import persistent
from ...catalog.hardware import get_chip
from ...symbolic import collectives as coll
from ...symbolic import roofline
from ...symbolic.derivation import Derivation, Step
from ...symbolic.symbols import sym
from ..draws import MODEL_SHAPES, choice, pick, pow2, whole, whole_check
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = "sharding.md, 'Some Problems to Work' (Q4) and the rules for when to gather or reduce"
CHIPS = ("tpu-v5p", "tpu-v5p", "tpu-v5e", "tpu-v6e", "tpu-v4p")
AXIS = (4, 8, 16)
B, D, F, C = sym("B"), sym("D"), sym("F"), sym("C")
V, W_ici, X = sym("V"), sym("W_ici"), sym("X")
b_w, b_o = sym("b_w"), sym("b_o")


def draw(rng):
    model, d, f = pick(rng, MODEL_SHAPES)
    b = pow2(rng, 7, 14)
    reject_if(d == 2 * b, "with D = 2B both strategies are comms-bound at the same time: a tie")
    p = {"chip": pick(rng, CHIPS), "X": pick(rng, AXIS), "model": model, "D": d, "F": f, "B": b}
    reject_if(check(p)["ratio"] == 1, "the two strategies take the same time: the question asks which is faster")
    return p


@persistent
def _derivations() -> dict[str, Derivation]:
    t_math = roofline.matmul_t_math().expr  # 2 B D F / C
    gather_math = Step(r"T_{\mathrm{math}}^{(1)}", t_math,
                       "every chip multiplies the whole of X by the whole of Y", "s")
    gather_comms = Step(r"T_{\mathrm{AG}_{X}(Y)}", coll.all_gather_time_approx().expr.xreplace({V: b_w * D * F}),
                        "AllGather of Y over X: V is all of Y, b_w D F bytes", "s")
    gather = Step(r"T_{\mathrm{gather}}", sp.Max(gather_math.expr, gather_comms.expr),
                  "compute and communication overlapped: the larger sets the time", "s")
    reduce_math = Step(r"T_{\mathrm{math}}^{(2)}", t_math.xreplace({D: D / X}),
                       "each chip multiplies only its D/X slice of the contraction", "s")
    reduce_comms = Step(r"T_{\mathrm{AR}_{X}(Z)}", coll.all_reduce_time_approx().expr.xreplace({V: b_o * B * F}),
                        "AllReduce of the partial sums Z[B, F]{U_X}: V = b_o B F bytes", "s")
    reduce = Step(r"T_{\mathrm{reduce}}", sp.Max(reduce_math.expr, reduce_comms.expr),
                  "compute and communication overlapped: the larger sets the time", "s")
    ratio = Step(r"T_{\mathrm{gather}} / T_{\mathrm{reduce}}", gather.expr / reduce.expr,
                 "above 1 the reduce strategy is faster", "1")
    small = Step(r"D^{*}_{\mathrm{comms}}", 2 * b_o * B / b_w,
                 "strategy 1 comms-bound: b_w D F / W_ici = 2 b_o B F / W_ici", "element")
    large = Step(r"D^{*}_{\mathrm{math}}", b_o * C / W_ici,
                 "strategy 1 compute-bound: 2 B D F / C = 2 b_o B F / W_ici", "element")
    cross = Step(r"D^{*}", sp.Min(small.expr, large.expr),
                 "strategy 1 takes the larger of its two times, so it meets strategy 2 at the smaller crossover; "
                 "strategy 2 is still comms-bound there, and above D* it wins", "element")
    return {
        "t_gather": Derivation("strategy 1: AllGather Y, then multiply", (gather_math, gather_comms, gather), SOURCE),
        "t_reduce": Derivation("strategy 2: multiply the shards, then AllReduce Z", (reduce_math, reduce_comms, reduce),
                               SOURCE),
        "ratio": Derivation("gather time over reduce time", (gather, reduce, ratio), SOURCE),
        "d_star": Derivation("model width above which the reduce strategy wins", (small, large, cross), SOURCE),
    }


DESCRIPTIONS = {"t_gather": ("time of strategy 1 (gather Y)", "s"),
                "t_reduce": ("time of strategy 2 (multiply, then AllReduce)", "s"),
                "ratio": ("time of strategy 1 over the time of strategy 2", "1"),
                "d_star": ("crossover model width D*", "element")}


def solve(p):
    chip = get_chip(p["chip"])
    values = {B: p["B"], D: p["D"], F: p["F"], X: p["X"], C: chip.flops("bf16"), W_ici: chip.bandwidth("ici"),
              b_w: 2, b_o: 2}
    out = []
    for name, d in _derivations().items():
        ev = d.at(values)
        description, unit = DESCRIPTIONS[name]
        answer = Answer(name, description, ev.value, unit, ev)
        out.append(whole(answer, "down", "largest whole model width at which strategy 1 still wins or ties")
                   if name == "d_star" else answer)
        if name == "ratio":
            out.append(choice("faster", "which strategy is faster here?", STRATEGIES, 1 if ev.value > 1 else 0))
    return out


#: The choices of "which strategy is faster?"
STRATEGIES = ("strategy 1: gather the weights", "strategy 2: multiply the shards, then AllReduce")


def check(p):
    chip = get_chip(p["chip"])
    c = Fraction(chip.flops_per_s["bf16"])
    w = Fraction(2 * chip.ici_link_bytes_per_s)
    b, d, f, x = p["B"], p["D"], p["F"], p["X"]
    flops = 2 * b * d * f
    t1 = max(flops / c, 2 * d * f / w)          # gather Y (bf16: 2DF bytes) over the ring
    t2 = max(flops / x / c, 2 * 2 * b * f / w)  # AllReduce Z (2BF bytes) costs twice its bytes
    return {"t_gather": t1, "t_reduce": t2, "ratio": t1 / t2, "faster": 0 if t1 < t2 else 1,
            **whole_check("d_star", min(Fraction(2 * b), 2 * c / w), "down")}


register(Generator("sharding_gather_or_reduce", "sharding", "Gather the weights or reduce the output",
                   SOURCE, draw, solve, check))
