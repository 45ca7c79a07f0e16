"""KV cache of a real model, or of its multi-query or multi-head variant: bytes per token and per
sequence, and what full multi-head attention would cost (transformers.md, 'Key-Value (KV) caching'
and 'A Few Problems to Work' Q1).

Engine route: ``transformer.kv_cache_bytes_per_token`` and ``transformer.kv_cache_bytes``.
Second route: :func:`scalemath.catalog.statedict.kv_cache_shapes` lists every layer's key and value cache
tensors for the tokens cached; their elements times the element size are the bytes.
"""

from __future__ import annotations

from ...catalog.hardware import dtype_bytes
from ...catalog.models import get_model
from ...catalog.statedict import count_params, kv_cache_shapes
from ..draws import pick
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, ELEMENT_BYTES, engine, model_params, namespace

SOURCE = "transformers.md, 'Key-Value (KV) caching' and 'A Few Problems to Work' (Q1)"
MODELS = DENSE + ("mixtral-8x7b",)
VARIANTS = ("published", "published", "mqa", "mha")
DTYPES = ("bf16", "bf16", "int8", "fp8", "int4")
LENGTHS = (2048, 4096, 8192, 32768, 131072)


def draw(rng):
    key = pick(rng, MODELS)
    p = model_params(key)
    variant = pick(rng, VARIANTS)
    reject_if(variant == "mqa" and p["K"] == 1, "a multi-query variant must change the model")
    reject_if(variant == "mha" and p["K"] == p["N"], "a multi-head variant must change the model")
    S = pick(rng, LENGTHS)
    limit = get_model(key).max_context
    reject_if(limit is not None and S > limit, "the sequence must fit the model's maximum context length")
    reject_if("window" in p and S > p["window"],
              "with a sliding window the sequence must fit the window, so that every layer caches every token")
    K = {"published": p["K"], "mqa": 1, "mha": p["N"]}[variant]
    return p | {"variant": variant, "K_used": K, "dtype": pick(rng, DTYPES), "S": S}


def solve(p):
    values = {"L": p["L"], "K": p["K_used"], "H": p["H"], "S": p["S"], "b_x": dtype_bytes(p["dtype"])}
    return [
        engine("per_token", "KV cache bytes per token", "transformer.kv_cache_bytes_per_token", values),
        engine("per_seq", "KV cache bytes of one sequence", "transformer.kv_cache_bytes", values),
        engine("per_seq_mha", "KV cache bytes of one sequence with multi-head attention (K = N)",
               "transformer.kv_cache_bytes", values | {"K": p["N"]}),
    ]


def check(p):
    b = ELEMENT_BYTES[p["dtype"]]
    model = namespace(p, K=p["K_used"])
    return {"per_token": count_params(kv_cache_shapes(model, 1)) * b,
            "per_seq": count_params(kv_cache_shapes(model, p["S"])) * b,
            "per_seq_mha": count_params(kv_cache_shapes(namespace(p, K=p["N"]), p["S"])) * b}


register(Generator("transformer_kv_cache", "transformer", "KV cache per token and per sequence",
                   SOURCE, draw, solve, check))
