"""Attention in naive sampling: without a KV cache the pass for the i-th new token runs the T + i tokens so far
and scores every pair of them, so attention's FLOPs grow with the cube of the length; with the cache each new
token is one query against the keys before it, a square (inference.md, 'The Basics of Transformer Inference').

Engine route: ``inference.naive.attention_flops``, ``naive.cached_attention_flops``, ``naive.attention_ratio`` and
``naive.flops_with_attention`` with N, H, L and P_active bound from the model. Second route: a loop over the G
passes adding the pairs each one scores, and the tokens it runs, with the model's shapes and its state-dict
parameter count.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import pick
from ..registry import Generator, register, reject_if
from .inference_common import DENSE, ask, context_ok, model_fields, second_params

SOURCE = "inference.md, 'The Basics of Transformer Inference' (naive sampling: cubic in attention)"
PROMPTS = (16, 64, 128, 512, 1000, 2048)
GENERATED = (64, 256, 500, 1024, 2048, 4096)


def draw(rng):
    key = pick(rng, DENSE)
    T, G = pick(rng, PROMPTS), pick(rng, GENERATED)
    reject_if(not context_ok(key, T + G), "prompt and response must fit the model's context and window")
    return dict(model_fields(key)) | {"T": T, "G": G}


def solve(p):
    g = {"T": p["T"], "n_gen": p["G"]}
    return [
        ask(p, "naive", "attention FLOPs without a cache", "inference.naive.attention_flops", g),
        ask(p, "cached", "attention FLOPs with a KV cache", "inference.naive.cached_attention_flops", g),
        ask(p, "ratio", "how many times more attention FLOPs the naive loop does", "inference.naive.attention_ratio",
            g, use_model=False),
        ask(p, "total", "all FLOPs of the naive loop, attention included", "inference.naive.flops_with_attention", g),
    ]


def check(p):
    T, G, N, H, L = p["T"], p["G"], p["N"], p["H"], p["L"]
    per_pair = 4 * N * H * L  # forward FLOPs of one query-key pair in every layer
    naive_pairs = cached_pairs = tokens = 0
    for i in range(G):
        naive_pairs += (T + i) ** 2  # the pass reruns T + i tokens and scores all their pairs
        tokens += T + i
        cached_pairs += T * T if i == 0 else T + i  # prefill once, then one query against T + i keys
    return {"naive": per_pair * naive_pairs, "cached": per_pair * cached_pairs,
            "ratio": Fraction(naive_pairs, cached_pairs),
            "total": per_pair * naive_pairs + 2 * second_params(p["model"]) * tokens}


register(Generator("inference_naive_attention", "inference", "Sampling without a KV cache: attention's cubic cost",
                   SOURCE, draw, solve, check))
