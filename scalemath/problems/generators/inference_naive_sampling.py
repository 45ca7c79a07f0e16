"""Sampling without a KV cache: the naive loop reruns the whole prefix for every generated token, so its
linear layers run G·T + G(G−1)/2 tokens to generate G after a prompt of T, against T + G − 1 with the cache
(inference.md, 'The Basics of Transformer Inference').

Engine route: ``inference.naive.tokens``, ``naive.flops``, ``naive.cached_flops``, ``naive.flops_ratio`` and
``naive.t_math`` with P_active and C bound from the model, the compute dtype and the chip. Second route: a
plain loop over the G forward passes, adding the tokens each one runs, times the state-dict parameter count,
over the catalog's raw peak rate.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import pick
from ..registry import Generator, register, reject_if
from .inference_common import DENSE, ask, chips_for, context_ok, next_pow2, pick_serving, second_chip, second_params

SOURCE = "inference.md, 'The Basics of Transformer Inference' (naive sampling and the KV cache)"
PROMPTS = (16, 128, 512, 1000, 2048, 4096)
GENERATED = (64, 256, 500, 1024, 2048, 8192)
MAX_CHIPS = 256


def draw(rng):
    p = pick_serving(rng, DENSE)
    T, G = pick(rng, PROMPTS), pick(rng, GENERATED)
    reject_if(not context_ok(p["model"], T + G), "prompt and response must fit the model's context and window")
    n = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"])) * pick(rng, (1, 2))
    reject_if(n > MAX_CHIPS, f"a replica has at most {MAX_CHIPS} chips")
    return p | {"T": T, "G": G, "chips": n}


def solve(p):
    g = {"T": p["T"], "n_gen": p["G"], "n_dev": p["chips"]}
    return [
        ask(p, "tokens", "tokens run through the model without a cache", "inference.naive.tokens", g,
            use_model=False),
        ask(p, "naive", "linear-layer FLOPs without a cache", "inference.naive.flops", g),
        ask(p, "cached", "linear-layer FLOPs with a KV cache", "inference.naive.cached_flops", g),
        ask(p, "ratio", "how many times more FLOPs the naive loop does", "inference.naive.flops_ratio", g,
            use_model=False),
        ask(p, "t_naive", "least time of the naive loop (compute only)", "inference.naive.t_math", g),
    ]


def check(p):
    T, G, n = p["T"], p["G"], p["chips"]
    P = second_params(p["model"])
    tokens = 0
    for i in range(G):  # pass i reruns the prompt and the i tokens generated so far
        tokens += T + i
    cached = T + (G - 1)
    return {"tokens": tokens, "naive": 2 * P * tokens, "cached": 2 * P * cached,
            "ratio": Fraction(tokens, cached),
            "t_naive": 2 * P * tokens / (n * second_chip(p["chip"], p["dtype"])["C"])}


register(Generator("inference_naive_sampling", "inference", "Sampling without a KV cache: the quadratic cost",
                   SOURCE, draw, solve, check))
