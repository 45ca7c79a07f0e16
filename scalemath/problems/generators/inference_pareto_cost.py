"""Two points of the latency-throughput curve: while decode is memory-bound, a step reads the weights once and
each sequence's cache, so the batch can grow far before the step time doubles, and the cost of a token (chips ×
step time over the batch) falls by the batch over the latency factor: about 100 times for doubling the latency of
LLaMA 3-70B at a 2k context (applied-inference.md, 'Visualizing the Latency Throughput Tradeoff').

Engine route: ``inference.decode.step_time_memory_bound`` at batch 1, ``inference.pareto.batch_at_latency`` and
``inference.pareto.cost_ratio`` with P, kv_token, b_w and W bound from the model, dtypes and chip. Second route:
the state-dict parameter count, the cache tensors' bytes for one token and the catalog's HBM bandwidth in
fractions, the batch found by adding sequences one at a time until the step time passes k times batch 1's.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import pick
from ..registry import Generator, register, reject_if
from .inference_common import (BYTES, DENSE, ask, chips_for, context_ok, next_pow2, pick_kv, pick_serving,
                               second_chip, second_kv_token, second_params)

SOURCE = "applied-inference.md, 'Visualizing the Latency Throughput Tradeoff'"
CONTEXTS = (1024, 2048, 4096, 8192)
FACTORS = (2, 3, 4)
MAX_CHIPS = 256
MAX_BATCH = 4096


def draw(rng):
    p = pick_serving(rng, DENSE)
    S = pick(rng, CONTEXTS)
    reject_if(not context_ok(p["model"], S), "the context must fit the model's maximum length and window")
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "S": S, "k": pick(rng, FACTORS)}
    second = _second(p | {"chips": 1})
    reject_if(second["batch"] > MAX_BATCH, f"a decode batch of at most {MAX_BATCH} sequences")
    n = next_pow2(chips_for(p["model"], p["chip"], p["weight_dtype"], p["kv_dtype"], second["batch"] * S))
    reject_if(n > MAX_CHIPS, f"a replica has at most {MAX_CHIPS} chips")
    p |= {"chips": n}
    chip = second_chip(p["chip"], p["dtype"])
    # the larger batch must still be memory-bound: its FLOPs take no longer than its bytes
    reject_if(2 * second_params(p["model"]) * second["batch"] / chip["C"] > _second(p)["t1"] * p["k"] * n,
              "the larger batch must stay memory-bound (below the critical batch)")
    return p


def _second(p):
    P, kv = second_params(p["model"]), second_kv_token(p["model"], p["kv_dtype"])
    weights, cache = P * BYTES[p["weight_dtype"]], p["S"] * kv
    W = p["chips"] * second_chip(p["chip"])["W"]
    t1 = (weights + cache) / W
    batch = 1
    while (weights + (batch + 1) * cache) / W <= p["k"] * t1:  # one more sequence still within k times batch 1
        batch += 1
    exact = p["k"] + Fraction((p["k"] - 1) * weights, cache)
    return {"t1": t1, "batch": batch, "ratio": exact / p["k"]}


def solve(p):
    g = {"S": p["S"], "k_lat": p["k"], "n_dev": p["chips"], "B": 1}
    return [
        ask(p, "t1", "decode step time at batch 1", "inference.decode.step_time_memory_bound", g),
        ask(p, "batch", "largest batch within k times that step time", "inference.pareto.batch_at_latency", g),
        ask(p, "ratio", "how many times cheaper a token is at k times the latency",
            "inference.pareto.cost_ratio", g),
    ]


def check(p):
    return _second(p)


register(Generator("inference_pareto_cost", "inference", "Latency against cost: the batch a slower step buys",
                   SOURCE, draw, solve, check))
