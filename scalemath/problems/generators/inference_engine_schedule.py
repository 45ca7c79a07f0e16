"""Scheduling prefill against generation: a batched prefill pads every prompt to the longest and makes every user
wait for the whole batch; an interleaved engine prefills one prompt at a time and stalls every user's decode steps
meanwhile (inference.md, 'Designing an Effective Inference Engine').

Engine route: ``inference.batched_prefill.padding_fraction``, ``padding_flops``, ``ttft`` and ``ttft_ratio``,
``inference.interleaved.stall_time`` and ``stall_steps`` with P_active and C bound from the model, the compute dtype
and the chip. Second route: a plain loop over the batch's prompts adding the tokens run and the tokens used, the
state-dict parameter count and the catalog's raw peak rate.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import pick
from ..registry import Generator, register, reject_if
from .inference_common import DENSE, ask, chips_for, context_ok, next_pow2, pick_serving, second_chip, second_params

SOURCE = "inference.md, 'Designing an Effective Inference Engine' (batched, interleaved prefill)"
BATCHES = (4, 8, 16, 32)
LONGEST = (2048, 4096, 8192, 16384)
MEAN_SHARES = (Fraction(1, 8), Fraction(1, 4), Fraction(3, 8), Fraction(1, 2), Fraction(3, 4))
SHORT = (64, 128, 256)
MFUS = (40, 50, 60)
STEP_MS = (10, 15, 20, 25, 30)
MAX_CHIPS = 256


def draw(rng):
    p = pick_serving(rng, DENSE)
    T_max = pick(rng, LONGEST)
    reject_if(not context_ok(p["model"], T_max), "the longest prompt must fit the model's context and window")
    p |= {"B": pick(rng, BATCHES), "T_max": T_max, "T_avg": int(T_max * pick(rng, MEAN_SHARES)),
          "T_short": pick(rng, SHORT), "mfu": pick(rng, MFUS), "step_ms": pick(rng, STEP_MS)}
    n = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"])) * pick(rng, (1, 2, 4))
    reject_if(n > MAX_CHIPS, f"a server has at most {MAX_CHIPS} chips")
    return p | {"chips": n}


def solve(p):
    g = {"B": p["B"], "T_max": p["T_max"], "T_avg": p["T_avg"], "n_dev": p["chips"],
         "MFU": Fraction(p["mfu"], 100), "t_step": Fraction(p["step_ms"], 1000)}
    return [
        ask(p, "share", "share of the batched prefill's FLOPs spent on padding",
            "inference.batched_prefill.padding_fraction", g, use_model=False),
        ask(p, "pad_flops", "FLOPs the batched prefill spends on padding", "inference.batched_prefill.padding_flops",
            g),
        ask(p, "ttft", "time to first token of every prompt in the batch", "inference.batched_prefill.ttft", g),
        ask(p, "ratio", "how many times longer a short prompt waits than alone",
            "inference.batched_prefill.ttft_ratio", g | {"T": p["T_short"]}),
        ask(p, "stall", "pause in generation while the longest prompt is prefilled alone",
            "inference.interleaved.stall_time", g | {"T": p["T_max"]}),
        ask(p, "steps", "decode steps every user loses to that prefill", "inference.interleaved.stall_steps",
            g | {"T": p["T_max"]}),
    ]


def check(p):
    P = second_params(p["model"])
    rate = p["chips"] * second_chip(p["chip"], p["dtype"])["C"] * Fraction(p["mfu"], 100)
    run = used = 0
    for _ in range(p["B"]):  # every prompt runs padded to the longest; on average T_avg of it is real
        run += p["T_max"]
        used += p["T_avg"]
    ttft = 2 * P * run / rate
    stall = 2 * P * p["T_max"] / rate
    return {"share": Fraction(run - used, run), "pad_flops": 2 * P * (run - used), "ttft": ttft,
            "ratio": ttft / (2 * P * p["T_short"] / rate), "stall": stall,
            "steps": stall / Fraction(p["step_ms"], 1000)}


register(Generator("inference_engine_schedule", "inference", "Batched or interleaved prefill: padding, TTFT, stalls",
                   SOURCE, draw, solve, check))
