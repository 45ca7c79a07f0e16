"""Hand-picked parameters for each "transformer" generator: the engine route (solve) and the second
route (check) must both give the value worked out by hand in the row's comment. Rows that reproduce
a worked answer of transformers.md, training.md or applied-training.md cite the record id (or the
formula tag where the figure has no record of its own); where the book rounds its inputs, the row
states which exact inputs it uses and the test of the printed figure allows the book's rounding.

Generators are looked up through the registry and their own ``solve`` and ``check`` are called
directly, so no drawing is involved. At the end every generator is rendered for seeds 0..60 in
every format.
"""

from __future__ import annotations

from fractions import Fraction as Fr
from math import ceil

import pytest
import sympy as sp

from scalemath.problems import registry
from scalemath.problems.generators.transformer_params import model_params

NAMES = ("transformer_params", "transformer_flops", "transformer_memory", "transformer_kv_cache", "transformer_moe",
         "transformer_mfu", "transformer_attention")
G, T = 10**9, 10**12


def shape(name, D, F, N, K, H, L, V, gated=1, tied=0, **extra):
    return {"model": name, "D": D, "F": F, "N": N, "K": K, "H": H, "L": L, "V": V, "gated": gated, "tied": tied} | extra


# The model of transformers.md Q1: D = 4096, F = 4D, MHA with NH = D (N = K = 32, H = 128), L = 64, V = 32000
Q1 = shape("Q1 model", 4096, 16384, 32, 32, 128, 64, 32000)
LLAMA3_70B, LLAMA2_13B = model_params("llama3-70b"), model_params("llama2-13b")


def flops(p, T_, tokens):
    return p | {"T": T_, "tokens": tokens, "f_is_4d": int(p["F"] == 4 * p["D"]),
                "heads_tile": int(p["N"] * p["H"] == p["D"]), "mha": int(p["K"] == p["N"])}


def memory(name, P, D, F, L, B, policy, chip, n):
    return {"model": name, "P": P, "D": D, "F": F, "L": L, "n_seq": 1, "seq_len": B, "B": B, "policy": policy,
            "chip": chip, "n": n}


def kv(p, variant, K, dtype, S):
    return p | {"variant": variant, "K_used": K, "dtype": dtype, "S": S}


def moe(p, E, k, chip, weight_dtype, extended=1):
    return p | {"E": E, "k": k, "extended": extended, "chip": chip, "weight_dtype": weight_dtype}


def mfu(P, tokens, chip, dtype, n, hours, moe=0):
    return {"model": "m", "moe": moe, "P": P, "tokens": tokens, "chip": chip, "dtype": dtype, "n": n, "hours": hours}


def attention(N, K, H, chip, T_, S, n_seq):
    return {"model": "m", "N": N, "K": K, "H": H, "chip": chip, "T": T_, "S": S, "n_seq": n_seq, "B": n_seq * T_}


# (id, generator, params, {answer: exact expected value})
ROWS = [
    # -- transformer_params ----------------------------------------------------------------------------------
    # training-q1 (LLaMA-2-13B): MLP 3DF = 3 x 5120 x 13824 = 212,336,640, x 40 layers = 8.49e9; attention
    # 4DNH = 104,857,600, x 40 = 4.19e9; vocabulary 2VD = 327,680,000; total with 2D of norms per layer:
    # 40 x (212,336,640 + 104,857,600 + 10,240) + 327,680,000 = 13,015,859,200 (the book's 13.0e9 leaves the norms out)
    ("params-llama2-13b-q1", "transformer_params", LLAMA2_13B,
     {"mlp": 212336640, "attn": 104857600, "embed": 327680000, "total": 13015859200,
      "mlp_share": Fr(40 * 212336640, 13015859200), "attn_share": Fr(40 * 104857600, 13015859200),
      "embed_share": Fr(327680000, 13015859200)}),
    # transformers-q1a, corrected: 64 x (3 x 4096 x 16384 + 4 x 4096^2 + 2 x 4096) + 2 x 4096 x 32000 = 17,442,537,472
    # (the book's 16e9 rounds its inputs); attention is 64 x 67,108,864 / 17.44e9 = 0.246 of it
    ("params-q1a-17.44e9", "transformer_params", Q1,
     {"mlp": 201326592, "attn": 67108864, "embed": 262144000, "total": 17442537472,
      "mlp_share": Fr(64 * 201326592, 17442537472), "attn_share": Fr(64 * 67108864, 17442537472),
      "embed_share": Fr(262144000, 17442537472)}),
    # P6-01 (LLaMA-3 70B): FFW 80 x 3 x 8192 x 28672 = 56.37e9; attention 80 x 2 x 8192 x 72 x 128 = 12.08e9;
    # vocabulary 2 x 128256 x 8192 = 2.10e9; total 70,553,698,304 (the book: 70.4e9 from rounded terms)
    ("params-llama3-70b-p6-01", "transformer_params", LLAMA3_70B,
     {"mlp": 704643072, "attn": 150994944, "embed": 2101346304, "total": 70553698304,
      "mlp_share": Fr(80 * 704643072, 70553698304), "attn_share": Fr(80 * 150994944, 70553698304),
      "embed_share": Fr(2101346304, 70553698304)}),
    # GPT-3 175B, ungated (2DF) and tied (one DV): MLP 2 x 12288 x 49152 = 1,207,959,552; attention
    # 4 x 12288 x 96 x 128 = 603,979,776; embedding 12288 x 50257 = 617,558,016;
    # total 96 x (1,207,959,552 + 603,979,776 + 24,576) + 617,558,016 = 174,566,092,800
    ("params-gpt3-ungated-tied", "transformer_params", model_params("gpt3-175b"),
     {"mlp": 1207959552, "attn": 603979776, "embed": 617558016, "total": 174566092800,
      "mlp_share": Fr(96 * 1207959552, 174566092800), "attn_share": Fr(96 * 603979776, 174566092800),
      "embed_share": Fr(617558016, 174566092800)}),

    # -- transformer_flops -----------------------------------------------------------------------------------
    # LLaMA-3 70B at T = 8192: per layer 18DF + 12D(N+K)H = 4,227,858,432 + 905,969,664 = 5,133,828,096 of matmuls
    # and 12TNH = 805,306,368 of attention; x 80 layers plus 6DV = 6,304,038,912 of unembedding = 481,434,796,032;
    # a third forward. 6PD over 15T tokens: 6 x 70,553,698,304 x 15e12 = 6.35e24 (applied-training-pq2/P6-03 with
    # P rounded to 70e9: 6.3e24). Ratio 805,306,368 / 5,133,828,096 = 8/51; crossover
    # 3DF/(2HN) + DK/N + D = 43008 + 1024 + 8192 = 52,224; the book's 8D = 65,536 (transformers-ex8)
    ("flops-llama3-70b", "transformer_flops", flops(LLAMA3_70B, 8192, 15 * T),
     {"params": 70553698304, "flops_per_token": 481434796032, "fwd_flops_per_token": 160478265344,
      "total_flops": 6 * 70553698304 * 15 * T, "attn_ratio": Fr(8, 51), "crossover_T": 52224,
      "crossover_book": 65536}),
    # The Q1 model has the book's shape (F = 4D, NH = D, K = N), so the crossover is exactly 8D = 32,768 and the
    # ratio at T = 4096 is T/(8D) = 1/8 (transformers-ex8). Per layer 18DF = 1,207,959,552, 24DNH = 402,653,184,
    # 12TNH = 201,326,592; x 64 plus 6DV = 786,432,000: 116,750,548,992 per token, 38,916,849,664 forward
    ("flops-q1-book-shape", "transformer_flops", flops(Q1, 4096, T),
     {"params": 17442537472, "flops_per_token": 116750548992, "fwd_flops_per_token": 38916849664,
      "total_flops": 6 * 17442537472 * T, "attn_ratio": Fr(1, 8), "crossover_T": 32768, "crossover_book": 32768}),
    # Gemma 2 27B (D = 4608) at its 4096-token window: the book's shortcut 8D = 36,864, "about 37k"
    # (transformers-ex9); the real shape: 3 x 4608 x 36864 / (2 x 128 x 32) + 4608 x 16/32 + 4608 = 69,120
    ("flops-gemma-37k", "transformer_flops", flops(model_params("gemma-27b"), 4096, 2 * T),
     # parameters 46 x (3DF + 2D(N+K)H + 2D) + DV (tied) = 46 x 566,240,256 + 1,179,648,000 = 27,226,699,776
     {"params": 27226699776,
      # 46 x (18DF + 12D(N+K)H + 12TNH) + 6DV: 46 x (3,057,647,616 + 339,738,624 + 201,326,592) + 7,077,888,000
      "flops_per_token": 46 * (3057647616 + 339738624 + 201326592) + 7077888000,
      "fwd_flops_per_token": Fr(46 * (3057647616 + 339738624 + 201326592) + 7077888000, 3),
      "total_flops": 6 * 27226699776 * 2 * T, "attn_ratio": Fr(201326592, 3057647616 + 339738624),
      "crossover_T": 69120, "crossover_book": 36864}),

    # -- transformer_memory ----------------------------------------------------------------------------------
    # P6-05 (newest text, 2 checkpoints per layer), LLaMA-3 70B with P = 70e9 and B = 4e6: weights 2P = 140 GB,
    # Adam 8P = 560 GB, activations 2 x 2 x 4e6 x 8192 x 80 = 10.49 TB; total 11.19 TB / 96e9 = 116.5 chips
    # (the book: 117); on 8960 chips 11.19e12 / 8960 = 1.248 GB each (P6-06: 1.25 GB)
    ("memory-p6-05-117-chips", "transformer_memory",
     memory("LLaMA-3 70B", 70 * G, 8192, 28672, 80, 4 * 10**6, "two", "tpu-v5p", 8960),
     {"weights": 140 * G, "optimizer": 560 * G, "activations": 10485760000000,
      "per_chip": Fr(700 * G + 10485760000000, 8960), "min_chips": ceil(Fr(700 * G + 10485760000000, 96 * G))}),
    # training-q2: LLaMA-2 13B (P = 13e9), 16M tokens, outputs of the three FFW matmuls kept:
    # 2 x 40 x 16e6 x (5120 + 2 x 13824) = 41.94 TB (book 42 TB); weights plus Adam 26 + 104 = 130 GB
    ("memory-q2-42TB", "transformer_memory",
     memory("LLaMA-2 13B", 13 * G, 5120, 13824, 40, 16 * 10**6, "ffw", "tpu-v5p", 4096),
     {"weights": 26 * G, "optimizer": 104 * G, "activations": 41943040000000,
      "per_chip": Fr(130 * G + 41943040000000, 4096), "min_chips": ceil(Fr(130 * G + 41943040000000, 96 * G))}),
    # training-q3b, corrected: with 3M tokens the activations are 7.86 TB, and over 4096 chips
    # (130e9 + 7.864e12) / 4096 = 1.95 GB per chip
    ("memory-q3b-1.95GB", "transformer_memory",
     memory("LLaMA-2 13B", 13 * G, 5120, 13824, 40, 3 * 10**6, "ffw", "tpu-v5p", 4096),
     {"weights": 26 * G, "optimizer": 104 * G, "activations": 7864320000000,
      "per_chip": Fr(130 * G + 7864320000000, 4096), "min_chips": ceil(Fr(130 * G + 7864320000000, 96 * G))}),
    # P4-24: no rematerialisation, 20 tensors: 2 x 20 x 4e6 x 8192 x 64 = 83.9 TB ("84 TB")
    ("memory-p4-24-84TB", "transformer_memory",
     memory("book", 70 * G, 8192, 28672, 64, 4 * 10**6, "none", "tpu-v5p", 8960),
     {"weights": 140 * G, "optimizer": 560 * G, "activations": 83886080000000,
      "per_chip": Fr(700 * G + 83886080000000, 8960), "min_chips": ceil(Fr(700 * G + 83886080000000, 96 * G))}),
    # transformers-ex13: block remat, one tensor: 2 x 4e6 x 8192 x 64 = 4.19 TB ("4.2 TB"); on H100s (80 GB)
    ("memory-ex13-4.2TB", "transformer_memory",
     memory("book", 70 * G, 8192, 28672, 64, 4 * 10**6, "block", "h100", 1024),
     {"weights": 140 * G, "optimizer": 560 * G, "activations": 4194304000000,
      "per_chip": Fr(700 * G + 4194304000000, 1024), "min_chips": ceil(Fr(700 * G + 4194304000000, 80 * G))}),
    # P4-26 (derived): big matmuls only, 7 tensors: 2 x 7 x 4e6 x 8192 x 64 = 29.4 TB
    ("memory-p4-26-29TB", "transformer_memory",
     memory("book", 70 * G, 8192, 28672, 64, 4 * 10**6, "big", "tpu-v5p", 8960),
     {"weights": 140 * G, "optimizer": 560 * G, "activations": 29360128000000,
      "per_chip": Fr(700 * G + 29360128000000, 8960), "min_chips": ceil(Fr(700 * G + 29360128000000, 96 * G))}),

    # -- transformer_kv_cache ----------------------------------------------------------------------------------
    # transformers-q1c: int8, 2 x L x K x H = 2 x 64 x 32 x 128 = 524,288 B = 512 KiB per token; a 8192-token
    # sequence is 4 GiB, and the model is already MHA
    ("kv-q1c-512KiB", "transformer_kv_cache", kv(Q1, "published", 32, "int8", 8192),
     {"per_token": 524288, "per_seq": 524288 * 8192, "per_seq_mha": 524288 * 8192}),
    # P4-29: S = 8192, L = 64, K x H = 8192 in int8: 2 x 8192 x 64 x 8192 = 8 GiB
    ("kv-p4-29-8GiB", "transformer_kv_cache", kv(shape("m", 8192, 32768, 64, 64, 128, 64, 32000), "published", 64,
                                                 "int8", 8192),
     {"per_token": 2 * 64 * 8192, "per_seq": 2**33, "per_seq_mha": 2**33}),
    # LLaMA-3 70B in bf16: 2 x 80 x 8 x 128 x 2 = 327,680 B per token; 8192 tokens: 2.68 GB; with K = N = 64: 21.5 GB
    ("kv-llama3-70b-gqa", "transformer_kv_cache", kv(LLAMA3_70B, "published", 8, "bf16", 8192),
     {"per_token": 327680, "per_seq": 327680 * 8192, "per_seq_mha": 8 * 327680 * 8192}),
    # a multi-query variant of LLaMA-2 7B (K = 1) in bf16: 2 x 32 x 128 x 2 = 16 KiB per token, 64 MiB for
    # 4096 tokens, against 2 GiB with its published MHA
    ("kv-llama2-7b-mqa", "transformer_kv_cache", kv(model_params("llama2-7b"), "mqa", 1, "bf16", 4096),
     {"per_token": 16384, "per_seq": 2**26, "per_seq_mha": 2**31}),
    # int4 halves a byte: LLaMA-3 8B, 2 x 32 x 8 x 128 x 1/2 = 32 KiB per token
    ("kv-llama3-8b-int4", "transformer_kv_cache", kv(model_params("llama3-8b"), "published", 8, "int4", 8192),
     {"per_token": 32768, "per_seq": 32768 * 8192, "per_seq_mha": 4 * 32768 * 8192}),

    # -- transformer_moe ---------------------------------------------------------------------------------------
    # Mixtral 8x7B: experts 8 x 3 x 4096 x 14336 = 1,409,286,144 per layer, 2 of them active = 352,321,536;
    # total 32 x (1,409,286,144 + 41,943,040 + 8192) + 2 x 32000 x 4096 = 46,701,740,032 (46.7B, routers left out);
    # active 32 x (352,321,536 + 41,943,040 + 8192) + 262,144,000 = 12,878,872,576 (12.9B). On an H100 with bf16
    # weights: B* = C E b_w / (2 W k) = 990e12 x 8 x 2 / (2 x 3.35e12 x 2) = 1182.1 tokens
    ("moe-mixtral-h100", "transformer_moe", moe(model_params("mixtral-8x7b"), 8, 2, "h100", "bf16", extended=0),
     {"mlp_total": 1409286144, "mlp_active": 352321536, "total": 46701740032, "active": 12878872576,
      "critical_batch": Fr(990 * T * 8 * 2, 2 * 3350 * G * 2)}),
    # transformers-q8 (P4-23): E = 256, k = 8, int8 weights, bf16 compute on TPU v5e: B > (C/W)(b_w/2)(E/k)
    # = (1.97e14 / 8.2e11) x 1/2 x 32 = 3843.9 (the book rounds C/W to 240: 3840). Here on the LLaMA-3 8B shape:
    # experts 256 x 3 x 4096 x 14336 = 45,097,156,608 per layer, 8 active = 1,409,286,144;
    # total 32 x (45,097,156,608 + 41,943,040 + 8192) + 1,050,673,152 = 1,445,502,124,032;
    # active 32 x (1,409,286,144 + 41,943,040 + 8192) + 1,050,673,152 = 47,490,269,184
    ("moe-q8-3840", "transformer_moe", moe(model_params("llama3-8b"), 256, 8, "tpu-v5e", "int8"),
     {"mlp_total": 45097156608, "mlp_active": 1409286144, "total": 1445502124032, "active": 47490269184,
      "critical_batch": Fr(197 * T * 256, 2 * 820 * G * 8)}),

    # -- transformer_attention ---------------------------------------------------------------------------------
    # transformers-q4 (corrected) with the Q1 model (MHA, G = 1) on TPU v5e: with bf16 the intensity is
    # TSG/(TG + S); prefill (S = T = 4096): TG/(G + 1) = 2048; decoding against 8192 keys: SG/(S + G) = 8192/8193;
    # prefill is compute-bound once TG/(G+1) > C/W = 1.97e14 / 8.2e11 = 240.2, T > 480.5 (the book says "240", the
    # G -> infinity limit). transformers-q6: redoing QK^T and softmax.V costs 4BT^2NH = 4 x (16 x 4096) x 4096 x 4096
    # = 2^42 FLOPs per layer for 16 sequences of 4096 tokens
    ("attn-q4-480", "transformer_attention", attention(32, 32, 128, "tpu-v5e", 4096, 8192, 16),
     {"ai_prefill": 2048, "ai_decode": Fr(8192, 8193), "critical_T": Fr(2 * 197 * T, 820 * G),
      "remat_flops": 4 * 16 * 4096 * 4096 * 4096}),
    # LLaMA-3 70B (G = 8) on TPU v5p: prefill 4096 x 8 / 9 = 3641; decoding against 2048 keys 2048 x 8 / 2056 = 7.97,
    # below G; compute-bound from T = (C/W)(G + 1)/G = (4.59e14 / 2.8e12) x 9/8 = 184.4
    ("attn-llama3-70b-gqa", "transformer_attention", attention(64, 8, 128, "tpu-v5p", 4096, 2048, 16),
     {"ai_prefill": Fr(4096 * 8, 9), "ai_decode": Fr(2048 * 8, 2056), "critical_T": Fr(459 * T * 9, 2800 * G * 8),
      "remat_flops": 4 * 16 * 4096 * 4096 * 64 * 128}),

    # -- transformer_mfu ---------------------------------------------------------------------------------------
    # transformers-q7 set-up: 37e9 active parameters, 14.8e12 tokens: 6 x 37e9 x 14.8e12 = 3.2856e24 FLOPs (exact
    # as the record). The book's H800 (1.513e15 fp8) is not in the catalog; on 2048 H100s in fp8 (1.98e15) for
    # 1362 hours the chips offer 2048 x 1.98e15 x 1362 x 3600 = 1.988e25, an MFU of 16.5 percent
    ("mfu-deepseek-setup", "transformer_mfu", mfu(37 * G, 148 * 10**11, "h100", "fp8", 2048, 1362, moe=1),
     {"used": 32856 * 10**20, "available": 2048 * 198 * 10**13 * 1362 * 3600,
      "mfu": Fr(32856 * 10**20, 2048 * 198 * 10**13 * 1362 * 3600)}),
    # applied-training-pq4 read backwards: 70e9 parameters, 15e12 tokens on 8960 v5p chips in 1064 hours
    # (44.3 days) is 6.3e24 / (8960 x 4.59e14 x 1064 x 3600) = 40.0 percent
    ("mfu-llama3-70b-40pct", "transformer_mfu", mfu(70 * G, 15 * T, "tpu-v5p", "bf16", 8960, 1064),
     {"used": 63 * 10**23, "available": 8960 * 459 * T * 1064 * 3600,
      "mfu": Fr(63 * 10**23, 8960 * 459 * T * 1064 * 3600)}),
]


@pytest.mark.parametrize("name, params, expected", [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_hand_picked(name, params, expected):
    gen = registry.get_generator(name)
    engine, second = registry.exact_routes(gen, params, expected)
    assert sorted(engine) == sorted(second) == sorted(expected)
    for answer, value in expected.items():
        exact = sp.Rational(Fr(value).numerator, Fr(value).denominator)
        assert engine[answer] == exact, (answer, engine[answer], value)
        assert Fr(second[answer]) == Fr(value), (answer, second[answer], value)


# Printed figures that the exact values above round to: (row id, answer, book value, relative tolerance).
PRINTED = [
    ("params-llama2-13b-q1", "total", 13.0e9, 0.002),
    ("params-q1a-17.44e9", "attn_share", 0.246, 0.002),
    ("params-llama3-70b-p6-01", "total", 70.4e9, 0.003),
    ("flops-llama3-70b", "total_flops", 6.3e24, 0.01),
    ("flops-gemma-37k", "crossover_book", 37000, 0.005),
    ("memory-p6-05-117-chips", "min_chips", 117, 0.005),
    ("memory-p6-05-117-chips", "per_chip", 1.25e9, 0.002),
    ("memory-p6-05-117-chips", "activations", 10.5e12, 0.002),
    ("memory-q2-42TB", "activations", 42e12, 0.002),
    ("memory-q3b-1.95GB", "per_chip", 1.95e9, 0.001),
    ("memory-p4-24-84TB", "activations", 84e12, 0.002),
    ("memory-ex13-4.2TB", "activations", 4.2e12, 0.002),
    ("moe-q8-3840", "critical_batch", 3840, 0.002),
    ("moe-mixtral-h100", "total", 46.7e9, 0.001),
    ("moe-mixtral-h100", "active", 12.9e9, 0.002),
    ("mfu-llama3-70b-40pct", "mfu", 0.40, 0.001),
    ("attn-q4-480", "critical_T", 480, 0.002),
]


@pytest.mark.parametrize("row_id, answer, book, rel", PRINTED, ids=[f"{r[0]}:{r[1]}" for r in PRINTED])
def test_printed_figures(row_id, answer, book, rel):
    _, name, params, _ = next(row for row in ROWS if row[0] == row_id)
    a = {a.name: a for a in registry.get_generator(name).solve(params)}[answer]
    # a whole answer's printed figure is either the book's exact threshold or its whole count
    shown = [a.value] + ([a.unrounded] if a.kind == "whole" else [])
    assert any(float(v) == pytest.approx(book, rel=rel) for v in shown), (shown, book)


def test_rows_cover_every_generator():
    assert {row[1] for row in ROWS} == set(NAMES)


def test_kv_cache_variants_change_the_model():
    gen = registry.get_generator("transformer_kv_cache")
    for seed in range(60):
        p = registry.make_problem(gen, seed).params
        if p["variant"] == "mqa":
            assert p["K_used"] == 1 < p["K"]
        elif p["variant"] == "mha":
            assert p["K_used"] == p["N"] > p["K"]
        else:
            assert p["K_used"] == p["K"]


def test_moe_active_is_below_total_and_threshold_scales_with_sparsity():
    gen = registry.get_generator("transformer_moe")
    for seed in range(40):
        problem = registry.make_problem(gen, seed)
        a, p = problem.by_name, problem.params
        assert a["active"].value < a["total"].value
        assert a["mlp_active"].value * p["E"] == a["mlp_total"].value * p["k"]


def test_flops_forward_is_a_third():
    gen = registry.get_generator("transformer_flops")
    for seed in range(30):
        a = registry.make_problem(gen, seed).by_name
        assert 3 * a["fwd_flops_per_token"].value == a["flops_per_token"].value
