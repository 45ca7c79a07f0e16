"""Memory when serving: the fewest chips whose HBM holds the weights, then the weights and a batch's KV
caches, and on a given slice the HBM left for the caches and the largest batch that fits
(applied-inference.md, 'What's the LLaMA Serving Story?' and 'Thinking about throughput';
inference.md, 'Worked Problems' Q2).

Inference keeps one copy of the weights and no optimizer state; activations and working memory are
ignored, as in the book. A mixture of experts stores all its experts; DeepSeek-V3 caches its latent.

Engine route: ``inference.memory.min_chips_weights``, ``min_chips``, ``kv_budget`` and ``max_batch``
with P, kv_token and H_chip bound from the model, the dtypes and the chip. Second route: the state-dict
counts of the weights and of one token's cache, the catalog's raw HBM size, and integer ceiling and
floor division.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.models import get_model
from ..draws import pick, pick_chip, pow2, whole_from_engine
from ..registry import Generator, register, reject_if
from .inference_common import (
    pick_kv, BYTES, EXACT, SERVING_MODELS, ask, ceil_div, chips_for, context_ok, model_fields, next_pow2,
    second_chip, second_kv_token, second_params
)

SOURCE = ("applied-inference.md, 'What's the LLaMA Serving Story?' and 'Thinking about throughput'; "
          "inference.md, 'Worked Problems' (Q2)")
WEIGHTS = ("bf16", "bf16", "int8", "fp8", "int4")
CONTEXTS = (2048, 4096, 8192, 32768, 131072)
MAX_CHIPS = 1024


def draw(rng):
    key = pick(rng, SERVING_MODELS)
    S = pick(rng, CONTEXTS)
    reject_if(not context_ok(key, S), "the context must fit the model's maximum length and its local-attention window")
    chip = pick_chip(rng)
    weights = pick(rng, [w for w in WEIGHTS if w in chip.flops_per_s] or ["fp16"])  # a dtype the chip has
    p = dict(model_fields(key)) | {"chip": chip.key, "weight_dtype": weights,
                                   "kv_dtype": pick_kv(rng, chip.key), "S": S, "B": pow2(rng, 0, 8)}
    n = next_pow2(chips_for(key, chip.key, p["weight_dtype"])) * pick(rng, (1, 2, 4))
    reject_if(n > MAX_CHIPS, f"the slice has at most {MAX_CHIPS} chips")
    left = n * chip.hbm_bytes - get_model(key).param_count() * BYTES[p["weight_dtype"]]
    reject_if(left < S * get_model(key).kv_elements_per_token() * BYTES[p["kv_dtype"]],
              "the slice must hold at least one sequence's cache beside the weights")
    return p | {"chips": n}


def solve(p):
    g = {"B": p["B"], "S": p["S"], "n_dev": p["chips"]}
    return [
        whole_from_engine(ask(p, "weights_chips", "fewest chips whose HBM holds the weights",
                              "inference.memory.min_chips_weights", g, rel_tol=EXACT), "up"),
        whole_from_engine(ask(p, "min_chips", "fewest chips whose HBM holds the weights and the batch's caches",
                              "inference.memory.min_chips", g, rel_tol=EXACT), "up"),
        ask(p, "budget", "HBM left for the KV cache on the given slice", "inference.memory.kv_budget", g),
        whole_from_engine(ask(p, "max_batch", "largest number of sequences whose whole caches fit on the given slice",
                              "inference.memory.max_batch", g, rel_tol=EXACT), "down", unit="sequence"),
    ]


def check(p):
    hbm = second_chip(p["chip"])["H_chip"]
    weights = second_params(p["model"]) * BYTES[p["weight_dtype"]]
    seq = p["S"] * second_kv_token(p["model"], p["kv_dtype"])
    budget = p["chips"] * hbm - weights
    return {"weights_chips": ceil_div(weights, hbm), "weights_chips.unrounded": weights / hbm,
            "min_chips": ceil_div(weights + p["B"] * seq, hbm), "min_chips.unrounded": (weights + p["B"] * seq) / hbm,
            "budget": budget, "max_batch": Fraction(budget // seq), "max_batch.unrounded": budget / seq}


register(Generator("inference_min_topology", "inference", "Fewest chips for weights and KV cache, largest batch",
                   SOURCE, draw, solve, check))
