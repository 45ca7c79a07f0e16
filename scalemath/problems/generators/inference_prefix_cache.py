"""Prefix caching: requests that start with the same T_pre tokens (a system prompt, few-shot examples, the turns
of a chat so far) need that prefix prefilled once; each then prefills only its own T − T_pre tokens
(inference.md, 'Prefix Caching': 'I like cats' after 'I like dogs' needs a third of the compute).

Engine route: ``inference.prefix.fraction_needed``, ``prefix.flops_uncached``, ``prefix.flops_cached``,
``prefix.flops_saved``, ``prefix.time_saved`` and ``prefix.cache_bytes`` with P_active, kv_token and C bound
from the model, the dtypes and the chip. Second route: a loop over the requests adding the tokens each one
prefills, times 2 and the state-dict parameter count, over the catalog's raw peak rate at the stated
utilisation; the prefix's cache from the state-dict count of one token's cache tensors.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import pick
from ..registry import Generator, register, reject_if
from .inference_common import (DENSE, ask, chips_for, context_ok, next_pow2, pick_kv, pick_serving, second_chip,
                               second_kv_token, second_params)

SOURCE = "inference.md, 'Prefix Caching'"
PROMPTS = (1024, 2048, 4096, 8192)
SHARES = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(7, 8), Fraction(15, 16))
REQUESTS = (2, 8, 16, 100, 1000)
MFUS = (40, 50, 60)
MAX_CHIPS = 256


def draw(rng):
    p = pick_serving(rng, DENSE)
    T = pick(rng, PROMPTS)
    reject_if(not context_ok(p["model"], T), "the prompt must fit the model's context and window")
    T_pre = int(T * pick(rng, SHARES))
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "T": T, "T_pre": T_pre, "n_req": pick(rng, REQUESTS),
          "mfu": pick(rng, MFUS)}
    n = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"], p["kv_dtype"], T)) * pick(rng, (1, 2))
    reject_if(n > MAX_CHIPS, f"a prefill server has at most {MAX_CHIPS} chips")
    return p | {"chips": n}


def solve(p):
    g = {"T": p["T"], "T_pre": p["T_pre"], "n_seq": p["n_req"], "n_dev": p["chips"],
         "MFU": Fraction(p["mfu"], 100)}
    return [
        ask(p, "fraction", "share of one request's prefill compute still needed", "inference.prefix.fraction_needed",
            g, use_model=False),
        ask(p, "plain", "prefill FLOPs of all the requests without a prefix cache",
            "inference.prefix.flops_uncached", g),
        ask(p, "cached", "prefill FLOPs of all the requests with the prefix cached", "inference.prefix.flops_cached",
            g),
        ask(p, "saved", "prefill FLOPs the cache saves", "inference.prefix.flops_saved", g),
        ask(p, "time", "prefill time the cache saves", "inference.prefix.time_saved", g),
        ask(p, "bytes", "KV cache bytes the cached prefix holds", "inference.prefix.cache_bytes", g),
    ]


def check(p):
    T, T_pre, n_req = p["T"], p["T_pre"], p["n_req"]
    P = second_params(p["model"])
    plain = cached = 0
    for i in range(n_req):  # the first request computes the prefix; the others find it in the cache
        plain += T
        cached += T if i == 0 else T - T_pre
    rate = p["chips"] * second_chip(p["chip"], p["dtype"])["C"] * Fraction(p["mfu"], 100)
    return {"fraction": Fraction(T - T_pre, T), "plain": 2 * P * plain, "cached": 2 * P * cached,
            "saved": 2 * P * (plain - cached), "time": 2 * P * (plain - cached) / rate,
            "bytes": T_pre * second_kv_token(p["model"], p["kv_dtype"])}


register(Generator("inference_prefix_cache", "inference", "Prefix caching: prefill FLOPs and time saved",
                   SOURCE, draw, solve, check))
