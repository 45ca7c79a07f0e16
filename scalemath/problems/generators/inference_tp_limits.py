"""How far a decode step can be model-sharded, and the context where the caches outweigh the math: four of the
serving chapters' thresholds (inference.md, 'Generation', 'Appendix C: Latency bound communications';
applied-inference.md, 'Thinking about throughput' and 'Visualizing the Latency Throughput Tradeoff').

At a small batch decode is bound by loading the weights, so tensor parallelism can go until the activation
collectives outlast it, Y = F/(B·β) with β = W_hbm/W_ici (the book's 16384/(32·8) = 64); at a large batch it
is bound by compute, and the training chapter's limit F·M_Y/2200 (on a v5e in bf16) holds; past
B·D·b_x/(W_link·t_hop) chips each shard is so small that hop latency sets the collective's time (the book's
BD/45,000 in int8); and at S* = 2·P·W/(C·KV_tok) tokens of context, reading a sequence's cache takes as long as
its share of the linear layers' compute, whatever the batch.

Engine route: ``inference.tp.max_degree_memory_bound``, ``tp.max_degree_compute_bound``,
``tp.latency_bound_degree`` and ``inference.decode.kv_math_context`` with D, F, P, kv_token, b_w, b_x, C, W,
W_ici, W_link and t_hop bound from the model, the dtypes and the chip. Second route: the catalog's raw figures
(W_ici twice the one-way link) and the state-dict counts, in the closed forms the book writes.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import pick, pow2, whole, whole_check
from ..registry import Generator, register, reject_if
from .inference_common import BYTES, DENSE, ask, pick_kv, pick_serving, second_chip, second_kv_token, second_params

SOURCE = ("inference.md, 'Generation' and 'Appendix C: Latency bound communications'; applied-inference.md, "
          "'Thinking about throughput' and 'Visualizing the Latency Throughput Tradeoff'")
MIXES = (("bf16", "bf16"), ("bf16", "int8"), ("int8", "int8"), ("bf16", "int4"), ("fp8", "fp8"))


def draw(rng):
    p = pick_serving(rng, DENSE, needs=("ici_link_bytes_per_s", "hop_latency_s"), mixes=MIXES)
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "B": pow2(rng, 2, 8), "M_Y": pick(rng, (1, 2))}
    reject_if(check(p)["y_latency"] < 2, "two-way sharding must not already be latency-bound")
    reject_if(min(check(p)[k] for k in ("y_memory", "y_compute")) < 1, "one chip must be within both limits")
    return p


def solve(p):
    g = {"B": p["B"], "M_Y": p["M_Y"]}
    return [
        whole(ask(p, "y_memory", "largest whole tensor-parallel degree before the collectives outlast weight "
                  "loading", "inference.tp.max_degree_memory_bound", g), "down"),
        whole(ask(p, "y_compute", "largest whole tensor-parallel degree that stays compute-bound at a large batch",
                  "inference.tp.max_degree_compute_bound", g), "down"),
        whole(ask(p, "y_latency", "largest whole tensor-parallel degree whose activation collectives are still "
                  "bandwidth-bound", "inference.tp.latency_bound_degree", g), "down"),
        whole(ask(p, "s_star", "shortest whole context at which loading a sequence's cache takes at least as long "
                  "as its compute", "inference.decode.kv_math_context", g), "up"),
    ]


def check(p):
    chip = get_chip(p["chip"])
    hw = second_chip(p["chip"], p["dtype"])
    link = Fraction(chip.ici_link_bytes_per_s)
    b_x, b_w = BYTES[p["dtype"]], BYTES[p["weight_dtype"]]
    beta = hw["W"] / (2 * link)          # the book's β = W_hbm/W_ici, with its bf16 for both sides
    return {**whole_check("y_memory", p["F"] / (p["B"] * beta) * b_w / b_x, "down"),
            **whole_check("y_compute", p["F"] * p["M_Y"] * 2 * link / (hw["C"] * b_x / 2), "down"),
            **whole_check("y_latency", p["B"] * p["D"] * b_x / (link * Fraction(chip.hop_latency_s)), "down"),
            **whole_check("s_star", 2 * second_params(p["model"]) * hw["W"]
                          / (hw["C"] * second_kv_token(p["model"], p["kv_dtype"])), "up")}


register(Generator("inference_tp_limits", "inference",
                   "How far decode can be model-sharded, and where the caches outweigh the math",
                   SOURCE, draw, solve, check))
