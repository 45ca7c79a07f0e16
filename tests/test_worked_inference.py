"""The book's worked answers for inference.md and applied-inference.md, through the registry.

Each row names a registered quantity, the context and the values the question fixes, and
compares the exact result with the book's printed figure at the tolerance its rounding
allows. The figures are copied here (the tests read nothing outside the project); the comment
on each row cites the worked record's id, or the chapter section when the figure has no record
of its own. Where the book's figure is wrong, the corrected value is tested and the row says so.

The book's HBM bandwidth for a TPU v5e is 8.2e11 B/s, its HBM 16e9 B per chip and its ICI
4.5e10 B/s per link each way: the packaged catalog's numbers, so ``--chip tpu-v5e`` binds them.

The prefix-caching fraction (inference-ex-prefix-cache) and the expert layout's load time and free HBM
(inference-q6-1's derived answer) are rows of tests/test_gen_inference_engine.py. Not reproduced (no number
to compare, or no quantity computes it): the best speculation depth read off a figure
(inference-appD-spec-depth), the sharding plan of inference-q4 and the worked problems of
applied-inference.md (no answers in the book), the old MLP-only prefill estimate
(applied-legacy-prefill-ratio) and the old DF/KH rule (applied-legacy-attn-caveat).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic import inference as inf
from scalemath.symbolic.symbols import sym

R = sp.Rational
V5E = "tpu-v5e"
BF16 = Context(chip=V5E)                                    # bf16 weights, activations and FLOPs
INT8_W = Context(chip=V5E, weight_dtype="int8")             # int8 weights, bf16 FLOPs
INT8 = Context(chip=V5E, dtype="int8")                      # int8 weights, activations and OPs
GIB = 2**30

# LLaMA 2-13B tables: 26e9 B of weights (13e9 bf16 params) on 8 chips (n·W = 6.56e12 B/s)
L13 = {"P": 13 * 10**9, "b_w": 2, "n_dev": 8, "S": 8192}
L13_MHA = L13 | {"kv_token": Fraction(67 * 10**8, 8192)}     # 6.7 GB per 8k sequence
L13_GQA = L13 | {"kv_token": Fraction(134 * 10**7, 8192)}    # 1.34 GB: the 1:5 grouped cache
# LLaMA 3-70B on v5e, the book's round 70e9 parameters
L70 = {"P": 70 * 10**9}
# the invented model of inference.md's worked problems, int8 everywhere on a 4x4
PART7 = {"P": "18.4e9", "b_w": 1, "n_dev": 16}


def value(name, ctx=Context(), **given):
    return evaluate(get(name), ctx, given).value


def step_value(name, label, ctx=Context(), **given):
    ev = evaluate(get(name), ctx, given)
    return next(s.value for s in ev.steps if s.step.label == label)


def close(got, expected, rel) -> bool:
    expected = R(expected) if isinstance(expected, str) else sp.Rational(Fraction(expected))
    if rel == 0:
        return got == expected
    return abs(got - expected) <= R(str(rel)) * abs(expected)


# (id, quantity, context, given, expected, rel)
ROWS = [
    # inference-ex-bcrit-bf16: C/W = 1.97e14/8.2e11 = 240.2, the book's 240
    ("ex-bcrit-bf16", "inference.decode.critical_batch", BF16, {}, 240, 0.01),
    # applied-q-bcrit: int8 weights with bf16 FLOPs halve it
    ("bcrit-int8-weights", "inference.decode.critical_batch", INT8_W, {}, 120, 0.01),
    # inference-ex-bcrit-int8-int8: int8 weights and int8 OPs (3.94e14): 240 again
    ("ex-bcrit-int8-int8", "inference.decode.critical_batch", INT8, {}, 240, 0.01),
    # applied-legacy-bcrit-int4: int4 weights with bf16 FLOPs: 60
    ("legacy-bcrit-int4", "inference.decode.critical_batch", Context(chip=V5E, weight_dtype="int4"), {}, 60, 0.01),
    # inference-ex-bcrit-h100 CORRECTED: 9.9e14/3.35e12 = 295.5 (the book says "about 280")
    ("ex-bcrit-h100-corrected", "inference.decode.critical_batch", Context(chip="h100"), {}, 295, 0.01),
    # inference.md 'Linear operations': a prompt longer than about 240 tokens is compute-bound
    ("prefill-compute-bound", "inference.prefill.critical_tokens", BF16, {}, 240, 0.01),
    # inference-ex-attn-gen-intensity: decode attention (MHA, bf16) has intensity about 1
    ("ex-attn-gen-intensity", "inference.attention.intensity_decode", BF16, {"N": 32, "K": 32, "S": 8192}, 1,
     0.001),
    # inference.md 'What about attention?': prefill attention is compute-bound past T = 2·240 = 480 (MHA)
    ("prefill-attention-480", "inference.attention.prefill_critical_T", BF16, {"N": 32, "K": 32}, 480, 0.01),
    # inference-popquiz-latency-b4: 30B int8 weights, bf16 FLOPs, 4x4, 8k context, 100 kB/token: >= 2.5 ms
    ("popquiz-b4", "inference.decode.step_time", INT8_W,
     {"B": 4, "S": 8192, "kv_token": 10**5, "P": 30 * 10**9, "n_dev": 16}, "2.5e-3", 0.02),
    # the same pop quiz at batch 256 (no record of its own): the MLP is compute-bound, about 21 ms
    ("popquiz-b256", "inference.decode.step_time", INT8_W,
     {"B": 256, "S": 8192, "kv_token": 10**5, "P": 30 * 10**9, "n_dev": 16}, "21e-3", 0.01),
    # inference-ex-llama2-13b-params: 13e9 parameters
    ("ex-llama2-13b-params", "transformer.params", Context(model="llama2-13b"), {}, 13 * 10**9, 0.002),
    # inference-ex-llama2-13b-param-bytes: 26 GB in bf16
    ("ex-llama2-13b-param-bytes", "transformer.weights_bytes", Context(dtype="bf16"), {"P": 13 * 10**9},
     26 * 10**9, 0),
    # inference-ex-prefill-activation: an 8k prefill's [T, D] bf16 activation, book "80 MB" (83.9 MB)
    ("ex-prefill-activation", "inference.prefill.activation_bytes", Context(dtype="bf16"), {"T": 8192, "D": 5120},
     80 * 10**6, 0.05),
    # inference-ex-llama2-13b-kv: 6.7 GB per 8k sequence in bf16
    ("ex-llama2-13b-kv", "inference.kv_cache.bytes_per_sequence", Context(model="llama2-13b", dtype="bf16"),
     {"S": 8192}, "6.7e9", 0.002),
    # inference-ex-llama2-13b-max-batch: 128 GiB over 8 chips holds 16 MHA caches of 6.7 GB
    ("ex-llama2-13b-max-batch-mha", "inference.memory.max_batch", Context(),
     L13_MHA | {"H_chip": 16 * GIB}, 16, 0),
    # inference-ex-gen-tp-bound: F = 16384, B = 32, β = W_hbm/W_ici = 8: Y up to F/(Bβ) = 64
    ("ex-gen-tp-bound", "inference.tp.max_degree_memory_bound", Context(dtype="bf16"),
     {"F": 16384, "B": 32, "W": 8 * 9 * 10**10, "W_ici": 9 * 10**10}, 64, 0),
    # ... and with the v5e's own β = 8.2e11/9e10 (the record's derived note): 56
    ("ex-gen-tp-bound-v5e", "inference.tp.max_degree_memory_bound", BF16, {"F": 16384, "B": 32}, 56, 0.01),
    # inference-q1b: int8 KV per token of the part 7 model, 2·64·8·256 = 262,144 B
    ("q1b-kv-per-token", "inference.kv_cache.bytes_per_token", Context(model="book-part7", dtype="int8"), {},
     262_144, 0),
    # inference.md Worked Problem 1 (sheet item F7.17, no record of its own): 18.4e9 parameters, tied embeddings
    ("q1-params", "transformer.params", Context(model="book-part7"), {}, "18.4e9", 0.002),
    # inference-q2a: 4x4, int8, 128k context, the book's 262e3 B/token: 7 sequences
    ("q2a-max-batch", "inference.memory.max_batch", Context(chip=V5E),
     PART7 | {"S": 128_000, "kv_token": 262_000}, 7, 0),
    # inference-q2a again, the cache bound from the model (262,144 B/token, int8): still 7
    ("q2a-max-batch-model", "inference.memory.max_batch", Context(chip=V5E, model="book-part7", kv_dtype="int8"),
     PART7 | {"S": 128_000}, 7, 0),
    # inference-q2a's MQA variant (sheet item F7.19): K = 1 gives 56
    ("q2a-max-batch-mqa", "inference.memory.max_batch", Context(chip=V5E),
     PART7 | {"S": 128_000, "kv_token": 2 * 64 * 1 * 256}, 56, 0),
    # inference-q3: streaming 18.4 GB of int8 weights over 16 chips: 1.4 ms
    ("q3-param-load", "inference.decode.t_weights", Context(chip=V5E), PART7, "1.4e-3", 0.005),
    # inference-q5-2: the MoE (E = 16, k = 2) needs 240·16/2 = 1920 tokens
    ("q5-2-moe-bcrit", "inference.decode.critical_batch_moe", BF16, {"E": 16, "k": 2}, 1920, 0.005),
    # inference-q5-3: the MoE's KV cache per token is the dense one's, 262 kB in int8
    ("q5-3-moe-kv", "inference.kv_cache.bytes_per_token", Context(dtype="int8"), {"L": 64, "K": 8, "H": 256},
     262_000, 0.001),
    # inference-q5-4: forward FLOPs 2·P_active per token: 6.24e10 with 31.2e9 active parameters
    ("q5-4-moe-flops", "inference.prefill.flops", Context(), {"P": "31.2e9", "T": 1}, "6.24e10", 0),
    # inference-q7 CORRECTED: 2D weight-stationary beats 1D above 32·(F/D)·(3/4)² = 72 chips for F = 4D
    # (the first texts printed 81)
    ("q7-crossover-corrected", "inference.ws2d.min_chips", Context(), {"D": 1, "F": 4, "M_Y": 3}, 72, 0),
    # inference-appA-latency: "600M" bf16 parameters over 4 chips: 365 µs
    ("appA-latency", "inference.decode.t_weights", BF16, {"P": 600 * 10**6, "b_w": 2, "n_dev": 4}, "365e-6", 0.005),
    # inference-appA-latency CORRECTED: 2·8192·32768 = 537M parameters, 327 µs
    ("appA-latency-corrected", "inference.decode.t_weights", BF16, {"P": 2 * 8192 * 32768, "n_dev": 4},
     "327e-6", 0.002),
    # inference-appC-threshold: 8-way, 4.5e10 B/s per link, 1 µs per hop: 360 kB
    ("appC-threshold", "inference.tp.latency_bound_bytes", Context(chip=V5E), {"Y": 8}, 360_000, 0),
    # applied-q-kv-32k: one 32k int8 cache, book "5.3 GB" (exactly 5.37e9; 160e3·32768 = 5.24e9)
    ("q-kv-32k-sequence", "inference.kv_cache.bytes_per_sequence", Context(model="llama3-70b", dtype="int8"),
     {"S": 32768}, "5.3e9", 0.015),
    # applied-q-kv-32k: 240 of them, book "1.3 TB"
    ("q-kv-32k-batch", "inference.kv_cache.bytes_per_batch", Context(model="llama3-70b", dtype="int8"),
     {"S": 32768, "B": 240}, "1.3e12", 0.01),
    # applied-inference.md 'What's the LLaMA Serving Story?' (no record of its own): batch 32 at 8k, int8,
    # the book's 160e3 B/token: 41.9 GB of cache, 112 GB in all
    ("bs32-bytes", "inference.decode.bytes", INT8_W, L70 | {"B": 32, "S": 8192, "kv_token": 160_000},
     112 * 10**9, 0.002),
    # ... at least 112/16 = 7 chips
    ("bs32-min-chips", "inference.memory.min_chips", INT8_W, L70 | {"B": 32, "S": 8192, "kv_token": 160_000}, 7, 0),
    # applied-q-bs32-latency: on a 4x2, memory-bound: 17 ms
    ("q-bs32-step", "inference.decode.step_time", INT8_W,
     L70 | {"B": 32, "S": 8192, "kv_token": 160_000, "n_dev": 8}, "17e-3", 0.005),
    # applied-q-bs32-latency: 1882 tokens/s from the rounded 17 ms (1875 exactly)
    ("q-bs32-throughput", "inference.decode.throughput", INT8_W,
     L70 | {"B": 32, "S": 8192, "kv_token": 160_000, "n_dev": 8}, 1882, 0.005),
    # applied-q-bs32-latency: 235 tokens/s per chip
    ("q-bs32-per-chip", "inference.decode.throughput_per_chip", INT8_W,
     L70 | {"B": 32, "S": 8192, "kv_token": 160_000, "n_dev": 8}, 235, 0.005),
    # applied-q-bs32-latency: 2 axes of tensor parallelism stay compute-bound up to 2·F/2200 = 26
    # (26.2 with the catalog's C/W_ici = 2189; the book rounds α_ici to 2200)
    ("q-bs32-ici-bound", "inference.tp.max_degree_compute_bound", BF16, {"F": 28672, "M_Y": 2}, 26, 0.01),
    # applied-q-bs32-latency: on a 4x4, 8.5 ms
    ("q-bs32-step-4x4", "inference.decode.step_time", INT8_W,
     L70 | {"B": 32, "S": 8192, "kv_token": 160_000, "n_dev": 16}, "8.5e-3", 0.005),
    # applied-q-full-hbm-latency: a full HBM read per step, book "19 ms" (19.5)
    ("q-full-hbm-step", "inference.decode.step_time_full_hbm", BF16, {}, "19e-3", 0.03),
    # applied-q-full-hbm-latency CORRECTED: a 512-token response takes 512·19.5 ms = 10 s (the book says about 9)
    ("q-full-hbm-decode-512-corrected", "inference.decode.generation_time", Context(),
     {"n_gen": 512, "t_step": Fraction(16 * 10**9, 820 * 10**9)}, 10, 0.002),
    # applied-q-full-hbm-latency: int4 weights alone on a 2x2, "about 10 ms" (10.7)
    ("q-full-hbm-int4-weights", "inference.decode.t_weights", Context(chip=V5E, weight_dtype="int4"),
     L70 | {"n_dev": 4}, "10e-3", 0.07),
    # applied-q-qps-per-chip: 43/(0.019·512·n): bf16 on 16 chips 0.27, int8 on 8 0.55, int4 on 4 1.11
    ("q-qps-bf16", "inference.decode.queries_per_s_per_chip", Context(),
     {"B": 43, "t_step": "0.019", "n_gen": 512, "n_dev": 16}, "0.27", 0.025),
    ("q-qps-int8", "inference.decode.queries_per_s_per_chip", Context(),
     {"B": 43, "t_step": "0.019", "n_gen": 512, "n_dev": 8}, "0.55", 0.01),
    ("q-qps-int4", "inference.decode.queries_per_s_per_chip", Context(),
     {"B": 43, "t_step": "0.019", "n_gen": 512, "n_dev": 4}, "1.11", 0.01),
    # applied-inference.md 'Thinking about throughput' (no record): bf16 on a 4x8 leaves 372 GB for the cache ...
    ("bf16-4x8-budget", "inference.memory.kv_budget", BF16, L70 | {"n_dev": 32}, 372 * 10**9, 0),
    # ... 140 caches of 8k at the book's 324 kB/token ...
    ("bf16-4x8-batch", "inference.memory.max_batch", BF16, L70 | {"n_dev": 32, "S": 8192, "kv_token": 324_000},
     140, 0),
    # ... and 14.39/n queries per second per chip: bf16 4x8 0.44 (0.4497, the book truncates), int8 4x4 0.90,
    # int4 2x4 1.80
    ("qps-bf16-4x8", "inference.decode.queries_per_s_per_chip", Context(),
     {"B": 140, "t_step": "0.019", "n_gen": 512, "n_dev": 32}, "0.44", 0.025),
    ("qps-int8-4x4", "inference.decode.queries_per_s_per_chip", Context(),
     {"B": 140, "t_step": "0.019", "n_gen": 512, "n_dev": 16}, "0.90", 0.005),
    ("qps-int4-2x4", "inference.decode.queries_per_s_per_chip", Context(),
     {"B": 140, "t_step": "0.019", "n_gen": 512, "n_dev": 8}, "1.80", 0.005),
    # applied-q-sharding-4x8: at large batch the 2-axis limit is F·M_Y/2200 = 26
    ("q-sharding-compute-limit", "inference.tp.max_degree_compute_bound", BF16, {"F": 28672, "M_Y": 2}, 26, 0.01),
    # applied-q-sharding-4x8: memory-bound at B = 64, F/(8B) = 56 with β = 8
    ("q-sharding-memory-limit", "inference.tp.max_degree_memory_bound", Context(dtype="bf16"),
     {"F": 28672, "B": 64, "W": 8 * 9 * 10**10, "W_ici": 9 * 10**10}, 56, 0),
    # applied-q-sharding-4x8: per matmul on a 4x8 (Y = 32) at B = 64 in bf16: T_ici 11 µs, T_hbm 18 µs, T_math 4 µs
    # (the book truncates 11.65 and 4.77; the record accepts 25%)
    ("q-sharding-t-ici", "inference.tp.t_ici", BF16, {"B": 64, "D": 8192}, "11e-6", 0.25),
    ("q-sharding-t-hbm", "inference.tp.t_weights", BF16, {"D": 8192, "F": 28672, "Y": 32}, "18e-6", 0.01),
    ("q-sharding-t-math", "inference.tp.t_math", BF16, {"B": 64, "D": 8192, "F": 28672, "Y": 32}, "4e-6", 0.25),
    # applied-legacy-serve-4x8: the older constant 2550 (v5p's C/W_ici) gave 22
    ("legacy-serve-4x8", "inference.tp.max_degree_compute_bound", Context(chip="tpu-v5p"), {"F": 28672, "M_Y": 2},
     22, 0.025),
    # applied-q-prefill-time: an 8k prefill of 70e9 parameters on 16 chips at 40% MFU: 0.91 s
    ("q-prefill-time", "inference.prefill.time", BF16, L70 | {"T": 8192, "n_dev": 16, "MFU": "0.4"}, "0.91", 0.005),
    # applied-inference.md 'What about prefill?' (no record): B = 32, 8k prompts, 4k responses: 96 tokens per step
    ("evictions", "inference.serving.tokens_freed_per_step", Context(), {"B": 32, "T": 8192, "n_gen": 4096}, 96, 0),
    # applied-inference.md 'What about prefill?' (no record): about 3 prefill servers per generate server
    ("disagg-ratio", "inference.serving.prefill_to_generate_ratio", Context(),
     {"B": 32, "t_prefill": "0.91", "t_step": "0.019", "n_gen": 512}, 3, 0.01),
    # ... CORRECTED to the batch of 43 the previous answer found: about 4
    ("disagg-ratio-b43-corrected", "inference.serving.prefill_to_generate_ratio", Context(),
     {"B": 43, "t_prefill": "0.91", "t_step": "0.019", "n_gen": 512}, 4, 0.01),
    # applied-ex-pareto-latency-range: loading 70e9 int8 weights over 16 chips, 5.34 ms ...
    ("pareto-param-load", "inference.decode.t_weights", INT8_W, L70 | {"n_dev": 16}, "5.34e-3", 0.001),
    # ... and the smallest step, batch 1 at 8k with an int8 cache, about 5.5 ms
    ("pareto-min-latency", "inference.decode.step_time", Context(chip=V5E, weight_dtype="int8", kv_dtype="int8",
                                                                 model="llama3-70b"),
     L70 | {"B": 1, "S": 8192, "n_dev": 16}, "5.5e-3", 0.02),
    # ... the largest batch at 8k runs about 20 ms per step
    ("pareto-max-latency", "inference.decode.step_time", Context(chip=V5E, weight_dtype="int8", kv_dtype="int8",
                                                                 model="llama3-70b"),
     L70 | {"B": 138, "S": 8192, "n_dev": 16}, "20e-3", 0.02),
    # applied-ex-pareto-plateau: at 2k context and B = 120, around 1 token/ms/chip (0.89)
    ("pareto-plateau", "inference.decode.throughput_per_chip", Context(chip=V5E, weight_dtype="int8",
                                                                      kv_dtype="int8", model="llama3-70b"),
     L70 | {"B": 120, "S": 2048, "n_dev": 16}, 1000, 0.15),
    # applied-inference.md 'What's the LLaMA Serving Story?' (no record): peak FLOPs per dollar, H100 3.3e17,
    # v5p 3.9e17
    ("flops-per-dollar-h100", "inference.cost.flops_per_dollar", Context(chip="h100"), {}, "3.3e17", 0.01),
    ("flops-per-dollar-v5p", "inference.cost.flops_per_dollar", Context(chip="tpu-v5p"), {}, "3.9e17", 0.01),
    # ... v5e CORRECTED: 1.97e14·3600/1.2 = 5.91e17 (the book prints 5.8e17, about 2% low)
    ("flops-per-dollar-v5e-corrected", "inference.cost.flops_per_dollar", Context(chip=V5E), {}, "5.91e17", 0.001),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_worked_answer(row):
    _, name, ctx, given, expected, rel = row
    got = value(name, ctx, **given)
    assert got.is_number, got
    assert close(got, expected, rel), f"{name}: {sp.N(got, 8)} vs the book's {expected}"


# -- tables and answers that need more than one number ---------------------------------------------------

# inference.md 'Modeling throughput and latency for LLaMA 2-13B' (no record of its own): the MHA table
MHA_TABLE = [(1, "4.98", "200.61"), (8, "12.13", "659.30"), (16, "20.30", "787.99"), (32, "36.65", "873.21"),
             (64, "69.33", "923.13"), (240, "249.09", "963.53")]
# inference-ex-llama2-13b-gqa-table: the 1:5 grouped cache
GQA_TABLE = [(1, "4.17", "239.94"), (8, "5.60", "1429.19"), (16, "7.23", "2212.48"), (32, "10.50", "3047.62"),
             (64, "17.04", "3756.62"), (240, "52.99", "4529.34")]


@pytest.mark.parametrize("cache,rows", [(L13_MHA, MHA_TABLE), (L13_GQA, GQA_TABLE)], ids=["mha", "gqa"])
def test_llama2_13b_tables(cache, rows):
    for batch, step_ms, tokens in rows:
        step = value("inference.decode.step_time_memory_bound", BF16, **cache, B=batch)
        assert close(step * 1000, step_ms, 0.002), (batch, sp.N(step))
        assert close(value("inference.decode.throughput_memory_bound", BF16, **cache, B=batch), tokens, 0.002)


def test_llama2_13b_largest_tabulated_batch():
    # inference-ex-llama2-13b-max-batch: of the tabulated batches, 16 fit with MHA and 64 with the 1:5 cache
    batches = [1, 8, 16, 32, 64, 240]
    for cache, book in ((L13_MHA, 16), (L13_GQA, 64)):
        largest = value("inference.memory.max_batch", **cache, H_chip=16 * GIB)
        assert max(b for b in batches if b <= largest) == book
    # the record's continuous maxima: 16 and 83
    assert value("inference.memory.max_batch", **L13_GQA, H_chip=16 * GIB) == 83


def test_llama2_13b_four_caches_exceed_the_weights():
    # inference-ex-llama2-13b-kv: "just 4 of these" outweigh the 26 GB of parameters
    ctx = Context(model="llama2-13b", dtype="bf16")
    weights = 26 * 10**9
    assert value("inference.kv_cache.bytes_per_batch", ctx, S=8192, B=4) > weights
    assert value("inference.kv_cache.bytes_per_batch", ctx, S=8192, B=3) < weights


def test_popquiz_small_batch_is_weight_bound_and_large_batch_compute_bound():
    # inference-popquiz-latency-b4: at B = 4 the weights set the time; at B = 256 the MLP's FLOPs do
    given = {"S": 8192, "kv_token": 10**5, "P": 30 * 10**9, "n_dev": 16}
    for batch, compute_bound in ((4, False), (256, True)):
        t_math = value("inference.decode.t_math", INT8_W, B=batch, P=given["P"], n_dev=16)
        t_weights = value("inference.decode.t_weights", INT8_W, P=given["P"], n_dev=16)
        assert (t_math > t_weights) == compute_bound


def test_bs32_is_memory_bound_because_32_is_below_120():
    # applied-q-bs32-latency: B = 32 < B_crit = 120, so the general step is the memory-bound one
    assert value("inference.decode.critical_batch", INT8_W) > 32
    given = L70 | {"B": 32, "S": 8192, "kv_token": 160_000, "n_dev": 8}
    assert value("inference.decode.step_time", INT8_W, **given) == \
        value("inference.decode.step_time_memory_bound", INT8_W, **given)


@pytest.mark.parametrize("weights,chips,left,raw_chips", [
    ("bf16", 16, 116 * 10**9, "8.75"), ("int8", 8, 58 * 10**9, "4.375"), ("int4", 4, 29 * 10**9, "2.1875")])
def test_smallest_slices_hold_43_caches_whatever_the_dtype(weights, chips, left, raw_chips):
    # applied-inference.md 'Thinking about throughput' (no record): weights alone need P·b_w/16e9 chips (the
    # book's int4 "2.81" CORRECTED to 2.19); the slice leaves 116/58/29 GB, room for 43 caches of 8k tokens
    ctx = Context(chip=V5E, weight_dtype=weights, kv_dtype=weights, model="llama3-70b")
    assert step_value("inference.memory.min_chips_weights", r"n_{\mathrm{raw}}", ctx, **L70) == R(raw_chips)
    assert value("inference.memory.kv_budget", ctx, **L70, n_dev=chips) == left
    assert value("inference.memory.max_batch", ctx, **L70, n_dev=chips, S=8192) == 43


def test_kv_32k_needs_about_86_chips():
    # applied-q-kv-32k: (70e9 + 1.3e12)/16e9 = 86 chips (85.6 from the rounded cache; 84.9 exactly)
    ctx = Context(chip=V5E, weight_dtype="int8", kv_dtype="int8", model="llama3-70b")
    raw = step_value("inference.memory.min_chips", r"n_{\mathrm{raw}}", ctx, **L70, B=240, S=32768)
    assert close(raw, 86, 0.015)
    assert value("inference.kv_cache.bytes_per_sequence", Context(model="llama3-70b", dtype="int8"),
                 S=32768) == 163_840 * 32768


def test_q7_2d_weight_stationary_forms():
    # inference-q7: T_math = 4BDF/(nC); with F = 4D and bf16, X* = sqrt(n/8), T_2D* = sqrt(128)·BD/(sqrt(n)·W_ici),
    # and 1D over three axes costs 4BD/(3·W_ici)
    B, D, F, C, n, W = (sym(s) for s in ("B", "D", "F", "C", "n_dev", "W_ici"))
    book = {F: 4 * D, sym("b_x"): 2, sym("M_Y"): 3}
    assert inf.ws2d_t_math().expr == 4 * B * D * F / (n * C)
    assert sp.simplify(inf.ws2d_x_opt().expr.subs(book) - sp.sqrt(n / 8)) == 0
    assert sp.simplify(inf.ws2d_t_comms_opt().expr.subs(book) - sp.sqrt(128) * B * D / (sp.sqrt(n) * W)) == 0
    assert inf.tp_t_comms_1d().expr.subs(book) == 4 * B * D / (3 * W)
    # the general crossover, 32·(F/D)·(3/4)²
    assert inf.ws2d_min_chips().expr.subs(sym("M_Y"), 3) == 32 * (F / D) * R(3, 4) ** 2


def test_prefill_tp_rule_is_f_over_2200_per_axis():
    # inference-ex-prefill-tp-bound: model-shard up to about F/α_ici per axis, α_ici = C/W_ici (2200 on a v5e)
    F, C, W_ici = sym("F"), sym("C"), sym("W_ici")
    assert inf.tp_max_degree_compute_bound().expr.subs({sym("b_x"): 2, sym("M_Y"): 1}) == F * W_ici / C
    assert close(value("inference.tp.max_degree_compute_bound", BF16, F=16384, M_Y=1), 16384 / 2200, 0.01)


def test_appC_small_activations_are_latency_bound():
    # inference-appC-threshold: BS = 16, D = 8192 in int8 is 131 kB, under 360 kB: latency-bound at 8 ways,
    # since Y > B·D/45,000 = 2.9
    ctx = Context(chip=V5E, dtype="int8")
    degree = value("inference.tp.latency_bound_degree", ctx, B=16, D=8192)
    assert degree == R(16 * 8192, 45_000) and degree < 8
    # and the latency-aware AllGather is the hop latency there, not the bandwidth
    t = value("inference.tp.t_ici_latency_aware", ctx, B=16, D=8192, Y=8)
    assert t == 8 * R(1, 10**6) / 2
