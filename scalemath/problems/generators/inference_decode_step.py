"""One decode step of a dense model served on a slice: the linear layers' compute time, the time to
load the weights and the KV caches, the step time and what bounds it, throughput per chip and the
time to generate a whole response (inference.md, 'Theoretical estimates for LLM latency and
throughput' and its pop quiz; applied-inference.md, 'What's the LLaMA Serving Story?').

The book's model: T_step = B·S·KV_tok/(n·W) + max(2·B·P/(n·C), P·b_w/(n·W)), weights and caches
sharded over all n chips. The draw keeps the weights and every cache inside the slice's HBM.

Engine route: ``inference.decode.t_math``, ``t_weights``, ``t_kv``, ``step_time``,
``throughput_per_chip`` and ``generation_time`` (fed the engine's step time), with P, kv_token, C
and W bound from the model, the dtypes and the chip. Second route: plain fractions from the catalog's
raw rate, bandwidth and the state-dict counts of the weights and of one token's cache.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import choice, pick, pow2
from ..registry import Generator, register, reject_if
from .inference_common import (
    pick_kv, BYTES, ask, chips_for, context_ok, next_pow2, pick_serving, second_chip, second_kv_token, second_params
)

SOURCE = ("inference.md, 'Theoretical estimates for LLM latency and throughput'; applied-inference.md, "
          "'What's the LLaMA Serving Story?'")
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
RESPONSES = (256, 512, 1024, 2048)
MAX_CHIPS = 256


def draw(rng):
    p = pick_serving(rng)
    S = pick(rng, CONTEXTS)
    reject_if(not context_ok(p["model"], S),
              "the context must fit the model's maximum length and its local-attention window")
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "B": pow2(rng, 0, 9), "S": S, "G": pick(rng, RESPONSES)}
    n = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"], p["kv_dtype"], p["B"] * S)) * pick(rng, (1, 2))
    reject_if(n > MAX_CHIPS, f"a replica has at most {MAX_CHIPS} chips")
    p |= {"chips": n}
    second = check(p)
    times = sorted(second[name] for name in PARTS)
    reject_if(times[-1] < times[-2] * Fraction(51, 50),
              "the largest of the three times must stand out by 2 percent (the question asks which it is)")
    return p


def _given(p):
    return {"B": p["B"], "S": p["S"], "n_dev": p["chips"]}


#: The three times of a decode step, and the choices of "which is the largest?"
PARTS = ("t_math", "t_weights", "t_kv")
LARGEST = ("computing the linear layers", "loading the weights", "loading the KV caches")


def solve(p):
    g = _given(p)
    step = ask(p, "step", "decode step time (the latency of each generated token)", "inference.decode.step_time", g)
    out = [
        ask(p, "t_math", "compute time of the linear layers per step", "inference.decode.t_math", g),
        ask(p, "t_weights", "time to load the weights per step", "inference.decode.t_weights", g),
        ask(p, "t_kv", "time to load the KV caches per step", "inference.decode.t_kv", g),
        step,
        None,
        ask(p, "per_chip", "decode throughput per chip", "inference.decode.throughput_per_chip", g),
        ask(p, "response", "time to generate the whole response", "inference.decode.generation_time",
            {"n_gen": p["G"], "t_step": step.value}),
    ]
    times = [out[i].value for i in range(3)]
    out[4] = choice("largest", "which of the three times is the largest?", LARGEST, times.index(max(times)))
    return out


def check(p):
    hw = second_chip(p["chip"], p["dtype"])
    P, kv = second_params(p["model"]), second_kv_token(p["model"], p["kv_dtype"])
    B, S, n = p["B"], p["S"], p["chips"]
    t_math = 2 * B * P / (n * hw["C"])
    t_weights = P * BYTES[p["weight_dtype"]] / (n * hw["W"])
    t_kv = B * S * kv / (n * hw["W"])
    step = t_kv + max(t_math, t_weights)
    times = [t_math, t_weights, t_kv]
    return {"t_math": t_math, "t_weights": t_weights, "t_kv": t_kv, "step": step,
            "largest": max(range(3), key=lambda i: times[i]), "per_chip": B / (n * step), "response": p["G"] * step}


register(Generator("inference_decode_step", "inference", "Decode step time, its bound, throughput and latency",
                   SOURCE, draw, solve, check))
