"""Disaggregated serving: prefill servers and generate servers are separate slices, and prefill must
keep up with the requests the generate servers finish. From the prefill time of one prompt and the
decode step of the generate server, the number of prefill servers per generate server, and the KV-cache
tokens a generate server frees per step under continuous batching (applied-inference.md, 'What about
prefill?'; inference.md, 'Designing an Effective Inference Engine').

Two kinds of draw. In one the generate server runs a stated batch and its step follows the book's
step model; in the other (the book's own reasoning) it runs the largest batch that fits, so each step
reads its whole HBM and takes H_chip/W. Every sequence's context is taken at its longest, T + G.

Engine route: ``inference.prefill.time``, ``inference.memory.max_batch``, ``inference.decode.step_time``
or ``step_time_full_hbm``, then ``inference.serving.prefill_to_generate_ratio`` and
``tokens_freed_per_step`` fed the engine's values. Second route: requests per second of each kind of
server from plain fractions of the catalog's raw numbers and the state-dict counts, and their ratio.
"""

from __future__ import annotations

import dataclasses

from fractions import Fraction

from ...catalog.hardware import get_chip
from ...catalog.models import get_model
from ..draws import pick, pow2, relabelled, whole, whole_check
from ..registry import Generator, register, reject_if
from .inference_common import (
    pick_kv, BYTES, EXACT, ask, chips_for, context_ok, next_pow2, pick_serving, second_chip, second_kv_token,
    second_params
)

SOURCE = "applied-inference.md, 'What about prefill?'; inference.md, 'Designing an Effective Inference Engine'"
PROMPTS = (1024, 2048, 4096, 8192)
RESPONSES = (256, 512, 1024, 2048, 4096)
MFUS = (30, 40, 50, 60)
MAX_CHIPS = 256


#: Generate servers in the fleet that part (3) provisions prefill servers for.
FLEETS = (4, 8, 16, 32)


def draw(rng):
    p = pick_serving(rng)
    T, G = pick(rng, PROMPTS), pick(rng, RESPONSES)
    reject_if(not context_ok(p["model"], T + G),
              "prompt and response must fit the model's maximum length and its local window")
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "T": T, "G": G, "mfu": pick(rng, MFUS),
          "full": int(rng.random() < 0.5), "fleet": pick(rng, FLEETS)}
    p["n_p"] = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"], p["kv_dtype"], T)) * pick(rng, (1, 2))
    if p["full"]:
        p["n_g"] = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"])) * pick(rng, (2, 4))
        left = p["n_g"] * get_chip(p["chip"]).hbm_bytes - get_model(p["model"]).param_count() * BYTES[p["weight_dtype"]]
        reject_if(left < (T + G) * get_model(p["model"]).kv_elements_per_token() * BYTES[p["kv_dtype"]],
                  "the generate server must hold at least one sequence's cache beside the weights")
    else:
        p["B"] = pow2(rng, 3, 8)
        p["n_g"] = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"], p["kv_dtype"],
                                       p["B"] * (T + G))) * pick(rng, (1, 2))
    reject_if(max(p["n_p"], p["n_g"]) > MAX_CHIPS, f"a server has at most {MAX_CHIPS} chips")
    if p["full"]:
        hw, B = second_chip(p["chip"], p["dtype"]), check(p)["batch"]
        reject_if(2 * B * second_params(p["model"]) / (p["n_g"] * hw["C"]) > hw["H_chip"] / hw["W"],
                  "with its HBM full the generate server must stay memory-bound, so that reading HBM sets the step")
    return p


def solve(p):
    S = p["T"] + p["G"]
    prefill = ask(p, "t_prefill", "prefill time of one prompt on a prefill server", "inference.prefill.time",
                  {"T": p["T"], "n_dev": p["n_p"], "MFU": Fraction(p["mfu"], 100)})
    out = [prefill]
    if p["full"]:
        held = ask(p, "batch", "largest number of sequences the generate server holds", "inference.memory.max_batch",
                   {"S": S, "n_dev": p["n_g"]}, rel_tol=EXACT)
        batch = relabelled(held, {held.evaluated.steps[-1].step.label: "sequence"})
        B = batch.value
        step = ask(p, "t_step", "decode step time of the generate server with its HBM full",
                   "inference.decode.step_time_full_hbm")
        out.append(batch)
    else:
        B = p["B"]
        step = ask(p, "t_step", "decode step time of the generate server", "inference.decode.step_time",
                   {"B": B, "S": S, "n_dev": p["n_g"]})
    ratio = ask(p, "ratio", "prefill servers needed per generate server, as a ratio",
                "inference.serving.prefill_to_generate_ratio",
                {"B": B, "n_gen": p["G"], "t_prefill": prefill.value, "t_step": step.value})
    fleet = dataclasses.replace(ratio, name="prefill_servers", unit="server", value=ratio.value * p["fleet"],
                                description=f"fewest whole prefill servers for {p['fleet']} generate servers")
    out += [
        step, ratio, whole(fleet, "up"),
        ask(p, "freed", "KV-cache tokens freed per decode step", "inference.serving.tokens_freed_per_step",
            {"B": B, "T": p["T"], "n_gen": p["G"]}),
    ]
    return out


def check(p):
    hw = second_chip(p["chip"], p["dtype"])
    P, kv = second_params(p["model"]), second_kv_token(p["model"], p["kv_dtype"])
    T, G = p["T"], p["G"]
    weights = P * BYTES[p["weight_dtype"]]
    t_prefill = 2 * P * T / (p["n_p"] * hw["C"] * Fraction(p["mfu"], 100))
    out = {"t_prefill": t_prefill}
    if p["full"]:
        B = (p["n_g"] * hw["H_chip"] - weights) // ((T + G) * kv)
        t_step = hw["H_chip"] / hw["W"]
        out["batch"] = B
    else:
        B, n = p["B"], p["n_g"]
        t_step = B * (T + G) * kv / (n * hw["W"]) + max(2 * B * P / (n * hw["C"]), weights / (n * hw["W"]))
    prefill_rate = 1 / t_prefill           # requests per second, one prefill server
    generate_rate = B / (G * t_step)       # requests per second, one generate server: B slots, G steps each
    ratio = generate_rate / prefill_rate
    return out | {"t_step": t_step, "ratio": ratio, "freed": Fraction(B * (T + G), G),
                  **whole_check("prefill_servers", p["fleet"] * ratio, "up")}


register(Generator("inference_disaggregated", "inference", "Prefill servers per generate server",
                   SOURCE, draw, solve, check))
