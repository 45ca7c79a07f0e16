"""What serving costs: the decode step, the throughput per chip, and from a chip-hour's price the cost
of a million generated tokens; and the peak FLOPs a dollar buys on that chip (applied-inference.md,
'What's the LLaMA Serving Story?': "throughput per chip maps directly to cost per token").

Engine route: ``inference.decode.step_time`` and ``throughput_per_chip``, then
``inference.cost.per_million_tokens`` fed the engine's step time, and ``inference.cost.flops_per_dollar``,
with the price bound from the chip's catalog entry. Second route: plain fractions from the catalog's
raw price, rate and bandwidth and the state-dict counts: tokens per chip-hour, then cents per token.
"""

from __future__ import annotations

from ..draws import pick, pow2
from ..registry import Generator, register, reject_if
from .inference_common import (
    pick_kv, BYTES, ask, chips_for, context_ok, next_pow2, pick_serving, second_chip, second_kv_token, second_params
)

SOURCE = "applied-inference.md, 'What's the LLaMA Serving Story?' and 'Thinking about throughput'"
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
MAX_CHIPS = 256


def draw(rng):
    p = pick_serving(rng, needs=("price_cents_per_hour",))
    S = pick(rng, CONTEXTS)
    reject_if(not context_ok(p["model"], S), "the context must fit the model's maximum length and its local window")
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "B": pow2(rng, 3, 9), "S": S}
    n = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"], p["kv_dtype"], p["B"] * S)) * pick(rng, (1, 2))
    reject_if(n > MAX_CHIPS, f"a replica has at most {MAX_CHIPS} chips")
    return p | {"chips": n}


def solve(p):
    g = {"B": p["B"], "S": p["S"], "n_dev": p["chips"]}
    step = ask(p, "step", "decode step time", "inference.decode.step_time", g)
    return [
        step,
        ask(p, "per_chip", "decode throughput per chip", "inference.decode.throughput_per_chip", g),
        ask(p, "cost", "cost of a million generated tokens, in cents", "inference.cost.per_million_tokens",
            g | {"t_step": step.value}),
        ask(p, "flops_per_dollar", "peak FLOPs one dollar of chip time buys", "inference.cost.flops_per_dollar"),
    ]


def check(p):
    hw = second_chip(p["chip"], p["dtype"])
    P, kv = second_params(p["model"]), second_kv_token(p["model"], p["kv_dtype"])
    B, S, n = p["B"], p["S"], p["chips"]
    step = B * S * kv / (n * hw["W"]) + max(2 * B * P / (n * hw["C"]), P * BYTES[p["weight_dtype"]] / (n * hw["W"]))
    per_chip = B / (n * step)
    tokens_per_chip_hour = per_chip * 3600
    return {"step": step, "per_chip": per_chip, "cost": hw["price"] / tokens_per_chip_hour * 10**6,
            "flops_per_dollar": hw["C"] * 3600 / (hw["price"] / 100)}


register(Generator("inference_cost", "inference", "Cost per million tokens from a chip-hour price",
                   SOURCE, draw, solve, check))
