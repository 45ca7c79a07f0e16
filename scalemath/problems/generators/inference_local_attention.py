"""Local (sliding-window) attention: layers that attend only to the last w tokens cache at most w of them, do
about w·T − w²/2 query-key pairs' work instead of T²/2, and move out the sequence length at which attention
overtakes the matmuls (inference.md, 'Tricks for Improving Generation Throughput and Latency'; transformers.md,
'Fractional cost of attention with context length').

Engine route: ``inference.local.kv_bytes_per_sequence`` and ``kv_fraction``, ``transformer.windowed_attention_flops``,
``transformer.causal_attention_flops``, ``transformer.local_attention_crossover_T`` and
``transformer.attention_crossover_T`` with L, L_loc, w and the
shapes bound from the catalog model. Second route: loops over the layers (tokens each one caches) and over the
queries (the positions each one sees, half its own counted, as the book's T²/2 does), and the crossover from the
per-token counts in fractions.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.models import get_model
from ..draws import pick
from ..registry import Generator, register
from .inference_common import BYTES, ask, model_fields

SOURCE = ("inference.md, 'Tricks for Improving Generation Throughput and Latency' (local attention); "
          "transformers.md, 'Fractional cost of attention with context length'")
#: Dense catalog models with both local and global layers, and contexts past their window (within their maximum).
CONTEXTS = {
    "gemma2-27b": tuple(range(4352, 8193, 256)),
    "gemma2-9b": tuple(range(4352, 8193, 256)),
    "gemma3-27b": (2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072),
}
KV_DTYPES = ("bf16", "int8", "fp8")


def draw(rng):
    key = pick(rng, tuple(CONTEXTS))
    return dict(model_fields(key)) | {"S": pick(rng, CONTEXTS[key]), "kv_dtype": pick(rng, KV_DTYPES),
                                      "dtype": "bf16", "L_loc": _local(key)}


def _local(key: str) -> int:
    return get_model(key).local_layers


def solve(p):
    g = {"S": p["S"], "T": p["S"]}
    return [
        ask(p, "kv", "KV cache bytes of one sequence", "inference.local.kv_bytes_per_sequence", g),
        ask(p, "share", "share of an all-global cache it keeps", "inference.local.kv_fraction", g),
        ask(p, "local_flops", "training FLOPs of one local layer's attention over the sequence",
            "transformer.windowed_attention_flops", g),
        ask(p, "global_flops", "training FLOPs of one global layer's causal attention over the sequence",
            "transformer.causal_attention_flops", g | {"N": p["N"], "H": p["H"]}, use_model=False),
        ask(p, "crossover", "sequence length where attention overtakes the matmuls",
            "transformer.local_attention_crossover_T", {}),
        ask(p, "plain", "the same if every layer attended globally", "transformer.attention_crossover_T", {}),
    ]


def check(p):
    S, w, L, L_loc = p["S"], p["window"], p["L"], p["L_loc"]
    N, H, K, D, F = p["N"], p["H"], p["K"], p["D"], p["F"]
    layer_tokens = 0
    for layer in range(L):  # which layers are local does not matter, only how many
        layer_tokens += min(S, w) if layer < L_loc else S
    half_pairs = 0  # twice the pairs: query i sees min(i + 1/2, w) positions
    for i in range(S):
        half_pairs += min(2 * i + 1, 2 * w)
    per_pair = 12 * N * H  # training FLOPs of one query-key pair
    matmul = 6 * (3 * D * F + 2 * D * (N + K) * H)  # per token and layer, gated MLP
    crossover = (Fraction(L * matmul, per_pair) - L_loc * w) / (L - L_loc)
    return {"kv": 2 * K * H * BYTES[p["kv_dtype"]] * layer_tokens, "share": Fraction(layer_tokens, L * S),
            "local_flops": per_pair * Fraction(half_pairs, 2), "global_flops": per_pair * Fraction(S * S, 2),
            "crossover": crossover, "plain": Fraction(matmul, per_pair)}


register(Generator("inference_local_attention", "inference", "Local attention: a capped cache, fewer FLOPs",
                   SOURCE, draw, solve, check))
