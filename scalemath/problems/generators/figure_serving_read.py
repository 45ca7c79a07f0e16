"""Read where a decode step's time goes off a plot of its parts against batch: loading the parameters, loading
the KV caches and the FLOPs (applied-inference.md and inference.md, 'Visualizing the Latency Throughput
Tradeoff').

The figure is the first panel of scalemath.plots.serving.breakdown_data (the engine's inference.decode.t_weights,
t_kv, t_math and step_time at batches 1, 2, 4, ... up to the largest that fits) without the critical batch's mark;
the key is read from the same exact data. The second route is plain arithmetic on raw catalog fields: the
parameters counted by listing every weight tensor, one token's cache tensors, the chip's HBM bandwidth and peak.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import choice, pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if
from .inference_common import BYTES, chips_for, context_ok, model_fields, next_pow2, second_kv_token, second_params

NAME = "figure_serving_read"
READ_TOL = Fraction(1, 10)
MODELS = ("llama3-8b", "llama2-13b", "gemma-27b", "llama3-70b", "llama2-70b")
CHIPS = ("tpu-v5e", "tpu-v5p", "h100", "a100", "b200")
CONTEXTS = (2048, 4096, 8192, 16384, 32768)
PARTS = ("loading the parameters", "loading the KV caches", "the FLOPs")


def _second(p) -> dict:
    chip = get_chip(p["chip"])
    W, C = Fraction(chip.hbm_bytes_per_s), Fraction(chip.flops_per_s["bf16"])
    P, kv = Fraction(second_params(p["model"])), second_kv_token(p["model"], p["weight_dtype"])
    n, S, bw = p["n_dev"], p["S"], BYTES[p["weight_dtype"]]
    largest = (n * Fraction(chip.hbm_bytes) - bw * P) // (S * kv)
    return {"W": W, "C": C, "P": P, "kv": kv, "n": n, "S": S, "bw": bw, "largest": largest}


def _parts(r: dict, batch: int) -> tuple[Fraction, Fraction, Fraction]:
    return (r["bw"] * r["P"] / (r["n"] * r["W"]), batch * r["S"] * r["kv"] / (r["n"] * r["W"]),
            2 * batch * r["P"] / (r["n"] * r["C"]))


def draw(rng):
    key, chip = pick(rng, MODELS), pick(rng, CHIPS)
    wd = pick(rng, ("bf16", "int8"))
    reject_if(wd not in get_chip(chip).flops_per_s, f"{chip} has no {wd} rate")
    S = pick(rng, CONTEXTS)
    reject_if(not context_ok(key, S), "the context is past the model's")
    n = next_pow2(chips_for(key, chip, wd)) * pick(rng, (1, 2, 4))
    p = dict(model_fields(key)) | {"chip": chip, "weight_dtype": wd, "n_dev": n, "S": S}
    largest = _second(p)["largest"]
    reject_if(not 16 <= largest <= 4096, "the plot spans 1 to 16 .. 4096 sequences")
    t_w, kv1, _ = _parts(_second(p), 1)
    reject_if(not 2 <= t_w / kv1 <= largest, "the KV caches must overtake the parameters inside the plot")
    top = largest.bit_length() - 1  # 2**top <= largest
    b = 2 ** rng.randint(2, top)
    parts = sorted(_parts(_second(p), b), reverse=True)
    reject_if(parts[0] < Fraction(5, 4) * parts[1], "two parts too close to tell apart on the plot")
    return p | {"B_asked": b}


def _kind(model: str, chip: str, weight_dtype: str, n: int, S: int):
    """The parts and the step time against batch, no critical-batch mark."""
    from ... import quantities as Q
    from ...plots import serving

    ctx = Q.Context(chip=chip, dtype="bf16", weight_dtype=weight_dtype, kv_dtype=weight_dtype, model=model)
    fig = serving.breakdown_data(ctx, n, S)
    panel = dataclasses.replace(fig.panels[0], marks=())
    title = f"{ctx.get_model().name} on {n} x {get_chip(chip).name}, context {S} (read the values off the axes)"
    return dataclasses.replace(fig, title=title, panels=(panel,),
                               note="the dotted grid marks 2, 3, ... 9 of each decade")


FIGURE_KINDS.setdefault("serving", _kind)


def figure(p) -> Spec:
    return Spec("serving", (p["model"], p["chip"], p["weight_dtype"], p["n_dev"], p["S"]),
                alt="A decode step's parameter, KV cache and FLOPs time and its total against batch, log axes")


def solve(p):
    meta = build(figure(p)).meta
    at = meta["batch"].index(p["B_asked"])
    names = ("inference.decode.t_weights", "inference.decode.t_kv", "inference.decode.t_math")
    parts = [meta["parts"][name][at] for name in names]
    t_w, kv1 = meta["parts"][names[0]][0], meta["parts"][names[1]][0] / meta["batch"][0]
    return [Answer("t_weights", "the time to load the parameters", t_w, "s", rel_tol=READ_TOL),
            Answer("step", "the step time at the asked batch", meta["step_time"][at], "s", rel_tol=READ_TOL),
            choice("largest", "which part takes longest at the asked batch", PARTS,
                   max(range(3), key=lambda i: parts[i])),
            Answer("kv_equals_weights", "the batch at which loading the KV caches takes as long as the parameters",
                   t_w / kv1, "1", rel_tol=READ_TOL)]


def check(p):
    r = _second(p)
    parts = _parts(r, p["B_asked"])
    t_w, kv1, _ = _parts(r, 1)
    return {"t_weights": t_w, "step": parts[1] + max(parts[0], parts[2]),
            "largest": max(range(3), key=lambda i: parts[i]), "kv_equals_weights": t_w / kv1}


register_figure(NAME, figure)
register(Generator(NAME, "inference", "Reading where a decode step's time goes off a plot",
                   "applied-inference.md, 'Visualizing the Latency Throughput Tradeoff'", draw, solve, check))
