"""Prefill of one prompt: its FLOPs, the roofline lower bound on its time, the time to first token at a
given FLOPs utilisation, and the prompt length above which prefill's linear layers are compute-bound
(applied-inference.md, 'What about prefill?'; inference.md, 'Linear operations: what bottlenecks us?'
and 'Theoretical estimates for LLM latency and throughput').

The prompt is prefill's token batch, so its critical length is decode's critical batch C·b_w/(2W).

Engine route: ``inference.prefill.flops``, ``t_lower``, ``time`` and ``critical_tokens`` with P,
kv_token, C and W bound from the model, the dtypes and the chip. Second route: plain fractions from
the catalog's raw rate and bandwidth and the state-dict counts.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import pick, whole, whole_check
from ..registry import Generator, register, reject_if
from .inference_common import (
    pick_kv, BYTES, ask, chips_for, context_ok, next_pow2, pick_serving, second_chip, second_kv_token, second_params
)

SOURCE = ("applied-inference.md, 'What about prefill?'; inference.md, 'Linear operations: what bottlenecks us?' "
          "and 'Theoretical estimates for LLM latency and throughput'")
PROMPTS = (128, 512, 1024, 2048, 4096, 8192, 16384, 32768)
MFUS = (30, 40, 50, 60)
MAX_CHIPS = 256


def draw(rng):
    p = pick_serving(rng)
    T = pick(rng, PROMPTS)
    reject_if(not context_ok(p["model"], T), "the prompt must fit the model's maximum length and its local window")
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "T": T, "mfu": pick(rng, MFUS)}
    n = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"], p["kv_dtype"], T)) * pick(rng, (1, 2, 4))
    reject_if(n > MAX_CHIPS, f"a prefill server has at most {MAX_CHIPS} chips")
    p["chips"] = n
    second = check(p)
    reject_if(second["ttft"] < second["t_lower"],
              "at the stated utilisation the prefill must take no less than its roofline bound")
    return p


def solve(p):
    g = {"T": p["T"], "n_dev": p["chips"], "MFU": Fraction(p["mfu"], 100)}
    return [
        ask(p, "flops", "FLOPs of the prefill", "inference.prefill.flops", g),
        ask(p, "t_lower", "lower bound on the prefill time (roofline)", "inference.prefill.t_lower", g),
        ask(p, "ttft", "prefill time at the given FLOPs utilisation (time to first token)",
            "inference.prefill.time", g),
        whole(ask(p, "critical", "shortest whole prompt for which prefill's linear layers are compute-bound",
                  "inference.prefill.critical_tokens", g, use_model=False), "up"),
    ]


def check(p):
    hw = second_chip(p["chip"], p["dtype"])
    P, kv = second_params(p["model"]), second_kv_token(p["model"], p["kv_dtype"])
    T, n = p["T"], p["chips"]
    flops = 2 * P * T
    t_math = flops / (n * hw["C"])
    t_mem = (P * BYTES[p["weight_dtype"]] + T * kv) / (n * hw["W"])
    return {"flops": flops, "t_lower": max(t_math, t_mem), "ttft": t_math / Fraction(p["mfu"], 100),
            **whole_check("critical", hw["C"] * BYTES[p["weight_dtype"]] / (2 * hw["W"]), "up")}


register(Generator("inference_prefill", "inference", "Prefill time and the prompt length where it is compute-bound",
                   SOURCE, draw, solve, check))
