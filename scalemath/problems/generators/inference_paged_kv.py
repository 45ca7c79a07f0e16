"""The KV cache's memory tricks on a served model: a padded cache allocates S_max tokens to every sequence, a
paged one whole pages of s_page tokens, so a sequence wastes less than one page; and sharing one cache between
every m_KV layers divides what each token costs (inference.md, 'Tricks for Improving Generation Throughput and
Latency': 'Using ragged HBM reads and Paged Attention' and 'Sharing KVs across layers').

Engine route: ``inference.paged.pages_per_sequence``, ``paged.wasted_bytes``, ``paged.padded_wasted_bytes``,
``paged.max_batch``, ``inference.memory.max_batch`` at S = S_max (the padded batch) and
``inference.kv_share.max_batch``, with P, kv_token, L, K, H and H_chip bound from the model, the dtypes and the
chip. Second route: integer page arithmetic on the state-dict count of one token's cache tensors and of the
weights, the catalog's raw HBM size, and Python's floor division.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.models import get_model
from ..draws import pick, pick_chip, whole_from_engine
from ..registry import Generator, register, reject_if
from .inference_common import (BYTES, EXACT, ask, ceil_div, chips_for, context_ok, model_fields, next_pow2,
                               pick_kv, second_chip, second_kv_token, second_params)

SOURCE = ("inference.md, 'Tricks for Improving Generation Throughput and Latency' (paged attention, "
          "sharing KVs across layers)")
#: Models whose every layer caches every token at these lengths (no latent attention: its cache has no K·H).
MODELS = ("llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b",
          "book-part7", "mixtral-8x7b")
SLOTS = (4096, 8192, 32768)
PAGES = (16, 32, 64, 128, 256)
WEIGHTS = ("bf16", "int8", "fp8")


def draw(rng):
    key = pick(rng, MODELS)
    S_max = pick(rng, SLOTS)
    reject_if(not context_ok(key, S_max), "the slot must fit the model's maximum context and window")
    S = rng.randint(S_max // 16, S_max - 1)
    s_page = pick(rng, PAGES)
    reject_if(S % s_page == 0, "the sequence should end inside a page")
    L = get_model(key).L
    m_kv = pick(rng, [m for m in (2, 3, 4, 6, 8) if L % m == 0] or [2])
    reject_if(L % m_kv, "the layers must fall into whole sharing groups")
    chip = pick_chip(rng)
    weights = pick(rng, [w for w in WEIGHTS if w in chip.flops_per_s] or ["fp16"])
    kv_dtype = pick_kv(rng, chip.key)
    n = next_pow2(chips_for(key, chip.key, weights, kv_dtype, S_max)) * pick(rng, (1, 2, 4))
    reject_if(n > 512, "a replica has at most 512 chips")
    return dict(model_fields(key)) | {"chip": chip.key, "weight_dtype": weights, "kv_dtype": kv_dtype, "S": S,
                                      "S_max": S_max, "s_page": s_page, "m_kv": m_kv, "chips": n}


def solve(p):
    g = {"S": p["S"], "S_max": p["S_max"], "s_page": p["s_page"], "n_dev": p["chips"], "m_kv": p["m_kv"]}
    return [
        whole_from_engine(ask(p, "pages", "pages one sequence takes", "inference.paged.pages_per_sequence", g,
                              rel_tol=EXACT), "up"),
        ask(p, "waste_paged", "bytes the paged cache wastes on one sequence", "inference.paged.wasted_bytes", g),
        ask(p, "waste_padded", "bytes the padded cache wastes on one sequence", "inference.paged.padded_wasted_bytes",
            g),
        whole_from_engine(ask(p, "batch_padded", "largest batch with every slot padded to S_max",
                              "inference.memory.max_batch", g | {"S": p["S_max"]}, rel_tol=EXACT), "down",
                          unit="sequence"),
        whole_from_engine(ask(p, "batch_paged", "largest batch of such sequences with the paged cache",
                              "inference.paged.max_batch", g, rel_tol=EXACT), "down", unit="sequence"),
        whole_from_engine(ask(p, "batch_shared", "largest padded batch if every m_KV layers shared one cache",
                              "inference.kv_share.max_batch", g | {"S": p["S_max"]}, rel_tol=EXACT), "down",
                          unit="sequence"),
    ]


def check(p):
    S, S_max, page, n = p["S"], p["S_max"], p["s_page"], p["chips"]
    token = second_kv_token(p["model"], p["kv_dtype"])
    left = n * second_chip(p["chip"])["H_chip"] - second_params(p["model"]) * BYTES[p["weight_dtype"]]
    pages = ceil_div(Fraction(S), page)
    shared_token = token / p["m_kv"]  # whole groups: each group keeps one layer's keys and values
    out = {"pages": pages, "pages.unrounded": Fraction(S, page),
           "waste_paged": (pages * page - S) * token, "waste_padded": (S_max - S) * token}
    for name, per_seq in (("batch_padded", S_max * token), ("batch_paged", pages * page * token),
                          ("batch_shared", S_max * shared_token)):
        out[name] = Fraction(left // per_seq)
        out[name + ".unrounded"] = left / per_seq
    return out


register(Generator("inference_paged_kv", "inference", "Paged, padded and shared KV caches: waste and batch",
                   SOURCE, draw, solve, check))
