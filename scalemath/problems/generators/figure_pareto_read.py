"""Read the latency-throughput trade-off off a Pareto plot (inference.md, 'Theoretical estimates for LLM latency and
throughput': the ESTI paper's PaLM figure: the chip count and the batch move the operating point along a
frontier). One model under 1D tensor parallelism on TPU slices of four sizes, each at batches 1, 2, 4, ... up to
the largest that fits, and the front no other point beats on both latency and throughput per chip. The
collectives make the trade-off: a larger slice divides the weights and caches further, but its AllGathers and
ReduceScatters cross more hops, so the fastest point need not sit on the largest slice, and the most throughput
per chip sits on a small one.

The figure is scalemath.plots.pareto.slices: every point priced exactly by the forms serve ranks with
(inference.decode.step_time_comms with inference.decode.t_comms). The key reads the same exact points: the
fastest step and its slice, and under a latency limit (shaded on the plot) the most throughput per chip and its
slice. The second route is plain arithmetic on raw catalog fields: the parameters counted by listing every
weight tensor, one token's cache tensors, the chip's HBM bytes and bandwidth, its bf16 peak, its ICI link
bandwidth (both directions of an axis) and hop latency, the hops and axes read off each slice's shape, and its
own front.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ..draws import pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if
from .inference_common import BYTES, EXACT, chips_for, context_ok, model_fields, second_kv_token, second_params

NAME = "figure_pareto_read"
READ_TOL = Fraction(1, 10)
#: Apart by at least this factor, two values read off log axes cannot be mistaken for each other.
APART = Fraction(23, 20)
MODELS = ("llama3-8b", "llama2-13b", "gemma-27b", "llama3-70b", "llama2-70b", "llama2-7b")
SLICES = {2: ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
          3: ("1x1x1", "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8")}
CHIPS = ("tpu-v5e", "tpu-v6e", "tpu-v5p", "tpu-v4p")
CONTEXTS = (2048, 4096, 8192)
#: Latency limits as the plot's axis shows them: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten.
NICE = (10, 12, 15, 20, 25, 30, 40, 50, 60, 80)


def _chips(name: str) -> int:
    n = 1
    for a in name.split("x"):
        n *= int(a)
    return n


def _second(p) -> dict:
    """Every plotted point's (step, throughput per chip) by plain arithmetic, and the front."""
    chip = get_chip(p["chip"])
    W, C, H = Fraction(chip.hbm_bytes_per_s), Fraction(chip.flops_per_s["bf16"]), Fraction(chip.hbm_bytes)
    W_axis, t_hop = 2 * Fraction(chip.ici_link_bytes_per_s), Fraction(chip.hop_latency_ns, 10**9)
    P, kv, bw = Fraction(second_params(p["model"])), second_kv_token(p["model"], p["weight_dtype"]), \
        BYTES[p["weight_dtype"]]
    S, D, L = p["S"], p["D"], p["L"]
    points = {}
    for name in p["topologies"]:
        axes = [int(a) for a in name.split("x") if int(a) > 1]
        n = _chips(name)
        hops = sum(a // 2 for a in axes)
        largest = (n * H - bw * P) // (S * kv)
        batch = [2 ** k for k in range(int(largest).bit_length()) if 2 ** k <= largest]
        for B in sorted(set(batch) | {int(largest)}):
            comms = 4 * L * max(hops * t_hop, Fraction(B * D * 2) / (len(axes) * W_axis)) if axes else 0
            step = B * S * kv / (n * W) + max(2 * B * P / (n * C), bw * P / (n * W)) + comms
            points[(name, B)] = (step, Fraction(B) / (n * step))
    front, best = [], Fraction(-1)
    for key in sorted(points, key=lambda k: (points[k][0], -points[k][1])):
        if points[key][1] > best:
            front.append(key)
            best = points[key][1]
    return {"points": points, "front": front}


def _nice_between(lo: Fraction, hi: Fraction) -> Fraction | None:
    """A round latency (:data:`NICE` times a power of ten) strictly between lo and hi, else None."""
    exp = -9
    while Fraction(10) ** exp * 100 <= lo:
        exp += 1
    for e in (exp - 1, exp, exp + 1):
        for m in NICE:
            v = m * Fraction(10) ** e
            if lo < v < hi:
                return v
    return None


def _fastest(r) -> tuple:
    return r["front"][0]


def _at_limit(r, limit) -> tuple:
    """The point with the most throughput per chip among those no slower than the limit."""
    return max((k for k, (t, _) in r["points"].items() if t <= limit), key=lambda k: r["points"][k][1])


def draw(rng):
    key, chip = pick(rng, MODELS), pick(rng, CHIPS)
    wd = pick(rng, ("bf16", "int8"))
    reject_if(wd not in get_chip(chip).flops_per_s, f"{chip} has no {wd} rate")
    fits = [S for S in CONTEXTS if context_ok(key, S)]  # drawn among the model's own contexts, not rejected after
    reject_if(not fits, "a context within the model's")
    S = pick(rng, fits)
    names = SLICES[get_chip(chip).torus_dims or 2]
    need = chips_for(key, chip, wd, wd, 8 * S)  # the weights and eight sequences' caches
    first = min(i for i, name in enumerate(names) if _chips(name) >= need) + rng.randint(0, 1)
    reject_if(first + 4 > len(names), "four slices the pod can form")
    p = dict(model_fields(key)) | {"chip": chip, "weight_dtype": wd, "S": S, "topologies": names[first:first + 4]}
    r = _second(p)
    front = r["front"]
    reject_if(len(front) < 4, "a front of at least four points")
    quickest = sorted(min(t for (name, _), (t, _) in r["points"].items() if name == s) for s in p["topologies"])
    reject_if(quickest[1] < APART * quickest[0], "the fastest slice stands apart from the next")
    # half the time a point past the fastest slice's own: where a smaller slice gives more per chip
    later = [i for i in range(1, len(front) - 1) if front[i][0] != front[0][0]]
    j = pick(rng, later) if later and rng.random() < 0.5 else rng.randint(1, len(front) - 2)
    t_j, t_next = r["points"][front[j]][0], r["points"][front[j + 1]][0]
    limit = _nice_between(APART * t_j, t_next)
    reject_if(limit is None, "a round latency limit between two points of the front")
    p |= {"limit_ns": int(limit * 10**9)}
    reject_if(Fraction(p["limit_ns"], 10**9) != limit, "a limit in whole nanoseconds")
    rate = r["points"][front[j]][1]
    reject_if(any(limit < t < APART * limit and v > rate for t, v in r["points"].values()),
              "no better point just past the limit")
    others = [v for (name, _), (t, v) in r["points"].items() if t <= limit and name != front[j][0]]
    reject_if(bool(others) and max(others) * APART > rate, "the best slice under the limit stands apart")
    return p


def _kind(model: str, chip: str, weight_dtype: str, S: int, topologies: tuple[str, ...], limit_ns: int):
    from ... import quantities as Q
    from ...plots import pareto

    ctx = Q.Context(chip=chip, dtype="bf16", weight_dtype=weight_dtype, kv_dtype=weight_dtype, model=model)
    return pareto.slices(ctx, list(topologies), S, Fraction(limit_ns, 10**9))


FIGURE_KINDS.setdefault("pareto_slices", _kind)


def figure(p) -> Spec:
    return Spec("pareto_slices", (p["model"], p["chip"], p["weight_dtype"], p["S"], tuple(p["topologies"]),
                                  p["limit_ns"]),
                alt="Throughput per chip against the time of a decode step for four slices and their batches, "
                    "the Pareto front dashed, steps past the latency limit shaded, log axes")


def _engine(p) -> dict:
    fig = build(figure(p))
    return {"points": fig.meta["points"], "front": fig.meta["front"]}


def _answers(r, p) -> dict:
    fast, best = _fastest(r), _at_limit(r, Fraction(p["limit_ns"], 10**9))
    return {"fastest": r["points"][fast][0], "fastest_chips": sp.Integer(_chips(fast[0])),
            "chips": sp.Integer(_chips(best[0])), "throughput": r["points"][best][1]}


def solve(p):
    v = _answers(_engine(p), p)
    return [Answer("fastest", "the shortest decode step on the plot", v["fastest"], "s", rel_tol=READ_TOL),
            Answer("fastest_chips", "the chips of the slice that gives it", v["fastest_chips"], "1", rel_tol=EXACT),
            Answer("chips", "the chips of the slice with the most throughput per chip within the limit", v["chips"],
                   "1", rel_tol=EXACT),
            Answer("throughput", "that throughput per chip", v["throughput"], "token/s", rel_tol=READ_TOL)]


def check(p):
    return _answers(_second(p), p)


register_figure(NAME, figure)
register(Generator(NAME, "inference", "Reading the latency-throughput trade-off off a Pareto plot",
                   "inference.md, 'Theoretical estimates for LLM latency and throughput' (the Pareto frontier)", draw, solve,
                   check))
