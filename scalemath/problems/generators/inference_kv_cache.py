"""KV cache of a real model while it is served: bytes per token in the cache's own dtype, per
sequence, per decode batch, and per chip once the batch's caches are sharded over a slice
(inference.md, 'What about memory?', 'Sharding the KV cache' and Worked Problem 1; applied-inference.md,
'What's the LLaMA Serving Story?').

Engine route: ``inference.kv_cache.bytes_per_token``, ``bytes_per_sequence`` and ``bytes_per_batch``
with the model's L, K, H and the cache dtype bound from the context, and ``bytes_per_chip`` with the
engine's ``kv_token`` binding. Second route: :func:`scalemath.catalog.statedict.kv_cache_shapes` lists one
token's key and value tensors in every layer; their elements times the element size, times S, B and
over n, are the bytes.

DeepSeek-V3 is left out: ``inference.kv_cache.bytes_per_token`` prices standard attention (2·L·K·H)
even for a latent-attention model, whose cache is the latent (see the report to the lead).
"""

from __future__ import annotations

from ..draws import pick, pow2
from ..registry import Generator, register, reject_if
from .inference_common import DENSE, KV_DTYPES, ask, context_ok, model_fields, second_kv_token

SOURCE = ("inference.md, 'What about memory?', 'Sharding the KV cache' and 'Worked Problems' (Q1); "
          "applied-inference.md, 'What's the LLaMA Serving Story?'")
MODELS = DENSE + ("mixtral-8x7b",)
LENGTHS = (2048, 4096, 8192, 32768, 131072)
SLICES = (4, 8, 16, 32, 64)


def draw(rng):
    key = pick(rng, MODELS)
    S = pick(rng, LENGTHS)
    reject_if(not context_ok(key, S),
              "the context must fit the model's maximum length and its local-attention window")
    return dict(model_fields(key)) | {"kv_dtype": pick(rng, KV_DTYPES), "S": S, "B": pow2(rng, 0, 8),
                                      "chips": pick(rng, SLICES)}


def solve(p):
    given = {"S": p["S"], "B": p["B"], "n_dev": p["chips"]}
    return [
        ask(p, "per_token", "KV cache bytes one token adds", "inference.kv_cache.bytes_per_token", given),
        ask(p, "per_seq", "KV cache bytes of one sequence", "inference.kv_cache.bytes_per_sequence", given),
        ask(p, "per_batch", "KV cache bytes of the whole batch", "inference.kv_cache.bytes_per_batch", given),
        ask(p, "per_chip", "KV cache bytes on each chip, sharded over the slice",
            "inference.kv_cache.bytes_per_chip", given),
    ]


def check(p):
    token = second_kv_token(p["model"], p["kv_dtype"])
    return {"per_token": token, "per_seq": token * p["S"], "per_batch": token * p["S"] * p["B"],
            "per_chip": token * p["S"] * p["B"] / p["chips"]}


register(Generator("inference_kv_cache", "inference", "KV cache of a served model: per token, sequence, batch and chip",
                   SOURCE, draw, solve, check))
