"""The book's worked answers for transformers.md (and the transformer sums of training.md and
applied-training.md), reproduced through the quantity registry.

Each numeric row names a registered quantity, the context and the values the question fixes,
and compares the exact result with the book's printed figure at the tolerance its rounding
allows. The figures are copied here (the tests read nothing outside the project); the comment
on each row cites the worked record's id, or the chapter item when the figure has no record of
its own. Where a record carries a corrected value, the corrected value is tested and the row
says so. Symbolic answers are compared as expressions.

The book's B counts sequences in transformers.md; the engine's B counts tokens, so the book's
``B·T`` is the engine's ``B`` and its ``12BT²NH`` is the engine's ``12·B·T·N·H``.

Not reproduced here (no transformer quantity computes them): transformers-ex2 and
transformers-q3 (FLOPs of a general einsum), the element counts of transformers-ex1 (the
engine's matmul bytes also store the output, the book's count does not).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic import transformer as tf
from scalemath.symbolic.symbols import sym

V5E, V5P = "tpu-v5e", "tpu-v5p"
R = sp.Rational
D, F, N, K, H, L, T, S = (sym(n) for n in ("D", "F", "N", "K", "H", "L", "T", "S"))
B = sym("B")
Bseq = sp.Symbol("B_seq", positive=True)   # the book's B in transformers.md: sequences

BF16, INT8 = Context(dtype="bf16"), Context(dtype="int8")
# transformers.md Q1's model: D = 4096, F = 4D, V = 32000, L = 64, NH = D (MHA; any N·H = 4096)
Q1 = {"D": 4096, "F": 16384, "V_vocab": 32000, "L": 64, "N": 32, "K": 32, "H": 128}
# the gradient-checkpointing example: BT = 4M tokens (4e6), L = 64, D = 8192, bf16
REMAT = {"B": 4 * 10**6, "L": 64, "D": 8192}
DEEPSEEK_T_RUN = R(2_790_000 * 3600, 2048)    # 2.79M H800-hours on 2048 chips, in seconds per chip

# (id, quantity, context, given, expected, rel)
ROWS = [
    # transformers-ex1: FLOPs of x·y (P = 4096), A[N,P]·x and A[N,P]·B[P,M] as matmuls: 2P, 2NP, 2NPM
    ("ex1-dot", "matmul.flops", Context(), {"B": 1, "D": 4096, "F": 1}, 2 * 4096, 0),
    ("ex1-matvec", "matmul.flops", Context(), {"B": 1, "D": 4096, "F": 1024}, 2 * 1024 * 4096, 0),
    ("ex1-matmul", "matmul.flops", Context(), {"B": 1024, "D": 4096, "F": 512}, 2 * 1024 * 4096 * 512, 0),
    # transformers-ex8: F = 4D, NH = D, K = N, D = 8192: attention dominates past 8D = 65,536 (book "~64K")
    ("ex8-crossover-book", "transformer.attention_crossover_T_book", Context(), {"D": 8192}, 64000, 0.05),
    ("ex8-crossover-exact", "transformer.attention_crossover_T_book", Context(), {"D": 8192}, 65536, 0),
    # transformers-ex8 again, through the general crossover with the same shape written out
    ("ex8-crossover-general", "transformer.attention_crossover_T", Context(),
     {"D": 8192, "F": 32768, "N": 64, "K": 64, "H": 128}, 65536, 0),
    # transformers-ex9: Gemma-27B, D = 4608: 8D = 36,864, book "~37k" (V0-V2's "32k" was wrong)
    ("ex9-gemma-crossover", "transformer.attention_crossover_T_book", Context(), {"D": 4608}, 37000, 0.03),
    ("ex9-gemma-crossover-exact", "transformer.attention_crossover_T_book", Context(), {"D": 4608}, 36864, 0),
    # transformers-ex13: block remat keeps one [BT, D] bf16 tensor per layer: 4.19e12 B, book 4.2 TB
    ("ex13-block-remat-bytes", "transformer.activation_bytes_block_remat", BF16, REMAT, 4.2e12, 0.02),
    ("ex13-block-remat-exact", "transformer.activation_bytes_block_remat", BF16, REMAT, 4_194_304_000_000, 0),
    # transformers-ex13: training FLOPs go from 6 to about 8 x params x tokens
    ("ex13-remat-multiplier", "transformer.training_flops_remat", Context(), {"P": 1, "tokens": 1}, 8, 0),
    ("ex13-no-remat-multiplier", "transformer.training_flops", Context(), {"P": 1, "tokens": 1}, 6, 0),
    # transformers.md 'Gradient checkpointing' (item P4-24, no record of its own): ~20 tensors per layer,
    # 2·20·BT·D·L = 8.39e13 B, book "84 TB" with 4M = 4e6
    ("P4-24-no-remat", "transformer.activation_bytes_no_remat", BF16, REMAT, 84e12, 0.005),
    # erratum E4-8: with 4M = 4·2^20 tokens it is 88 TB
    ("P4-24-no-remat-binary", "transformer.activation_bytes_no_remat", BF16, REMAT | {"B": 4 * 2**20}, 88e12, 0.001),
    # transformers-ex14 (engine-derived figure for the same setting): 7 saved tensors per layer, 2.936e13 B
    ("ex14-big-matmuls", "transformer.activation_bytes_big_matmuls", BF16, REMAT, 29.36e12, 0.001),
    # transformers-q1a CORRECTED: L(3DF + 4D² + 2D) + 2DV = 17,442,537,472 (the book prints 16e9 from
    # inputs rounded to 4e3 and 16e3; erratum E4-1)
    ("q1a-params-corrected", "transformer.params", Context(), Q1, 17_442_537_472, 0),
    ("q1a-params-any-heads", "transformer.params", Context(), Q1 | {"N": 64, "K": 64, "H": 64}, 17_442_537_472, 0),
    # transformers-q1c: int8 KV cache per token, L = 64, K·H = 4096: 2·64·4096 = 524,288 B = 512 KiB
    ("q1c-kv-per-token", "transformer.kv_cache_bytes_per_token", INT8, {"L": 64, "K": 32, "H": 128}, 524288, 0),
    # transformers.md 'Key-Value (KV) caching' (item P4-29): S = 8192, L = 64, KH = 8192, int8: 8 GiB
    ("P4-29-kv-sequence", "transformer.kv_cache_bytes", INT8, {"S": 8192, "L": 64, "K": 64, "H": 128}, 8 * 2**30, 0),
    # transformers-q4 CORRECTED: prefill is compute-bound on v5e when TG/(G+1) > 240.2, T > 480 for MHA (G = 1)
    ("q4-prefill-mha-v5e", "transformer.attention_prefill_critical_T", Context(chip=V5E, dtype="bf16"),
     {"N": 32, "K": 32}, 480, 0.002),
    # transformers-q4: the book's "S = 240" is the G -> infinity limit of the same threshold
    ("q4-prefill-large-g", "transformer.attention_prefill_critical_T", Context(chip=V5E, dtype="bf16"),
     {"N": 10**6, "K": 1}, 240, 0.002),
    # transformers-q4: decoding tends to G = N/K; with S = 8192 and G = 8 it is 8192·8/8200 = 7.99
    ("q4-decode-tends-to-g", "transformer.attention_intensity_decode", BF16, {"S": 8192, "N": 64, "K": 8}, 8, 0.001),
    # transformers-q7 CORRECTED: 6·37e9·14.8e12 / (2.79e6 h · 3600 · 1.513e15) = 21.62% (book 21.7%)
    ("q7-deepseek-mfu-corrected", "transformer.mfu", Context(),
     {"P": 37 * 10**9, "tokens": 148 * 10**11, "n_dev": 2048, "t_run": DEEPSEEK_T_RUN, "C": 1513 * 10**12},
     0.2162, 0.001),
    ("q7-deepseek-mfu-book", "transformer.mfu", Context(),
     {"P": 37 * 10**9, "tokens": 148 * 10**11, "n_dev": 2048, "t_run": DEEPSEEK_T_RUN, "C": 1513 * 10**12},
     0.217, 0.01),
    # transformers-q7: FLOPs used, 6·P_active·tokens = 3.2856e24 (book 3.3e24)
    ("q7-used-flops", "transformer.training_flops", Context(), {"P": 37 * 10**9, "tokens": 148 * 10**11},
     3.3e24, 0.01),
    # transformers.md Q8 (item P4-23, no record of its own): DeepSeek E = 256, k = 8, int8 weights, bf16
    # FLOPs on v5e: B > 120·E/k = 3840 (exact 3843.9 with 1.97e14 / 8.2e11)
    ("q8-moe-batch", "transformer.moe_critical_batch", Context(chip=V5E, dtype="bf16", weight_dtype="int8"),
     {"E": 256, "k": 8}, 3840, 0.002),
    ("q8-moe-batch-model", "transformer.moe_critical_batch",
     Context(chip=V5E, dtype="bf16", weight_dtype="int8", model="deepseek-v3"), {}, 3840, 0.002),
    # transformers.md Q5 (item P4-19): attention equals the QKVO projections at T = 2D = 8192 for D = 4096 (MHA)
    ("q5-projection-crossover", "transformer.attention_projection_crossover_T", Context(),
     {"D": 4096, "N": 32, "K": 32}, 8192, 0),
    # training-q1: LLaMA-2-13B, 3LDF + 4DNHL + 2VD = 13.0e9 (exact 13,015,449,600 without norms;
    # the engine's count adds the 2D·L = 409,600 norm parameters)
    ("training-q1-total", "transformer.params", Context(model="llama2-13b"), {}, 13.0e9, 0.02),
    ("training-q1-total-exact", "transformer.params", Context(model="llama2-13b"), {}, 13_015_449_600 + 409_600, 0),
    ("training-q1-vocab", "transformer.embedding_params", Context(model="llama2-13b"), {}, 327_680_000, 0),
    # training-q2: (2 + 8)·13e9 = 130 GB of bf16 weights and fp32 Adam moments
    ("training-q2-state", "transformer.training_state_bytes", Context(weight_dtype="bf16"),
     {"P": 13 * 10**9, "b_opt": 8}, 130 * 10**9, 0),
    # training-q2: checkpoints after the three FFW matmuls, B = 16M tokens: 2·L·B·(D + 2F) = 41.9e12 (book 42 TB)
    ("training-q2-activations", "transformer.activation_bytes_ffw_outputs", Context(model="llama2-13b", dtype="bf16"),
     {"B": 16 * 10**6}, 42e12, 0.002),
    ("training-q2-activations-exact", "transformer.activation_bytes_ffw_outputs",
     Context(model="llama2-13b", dtype="bf16"), {"B": 16 * 10**6}, 41_943_040_000_000, 0),
    # training-q3b: the same with B = 3M: 7.86e12 B
    ("training-q3b-activations", "transformer.activation_bytes_ffw_outputs",
     Context(model="llama2-13b", dtype="bf16"), {"B": 3 * 10**6}, 7_864_320_000_000, 0),
    # training.md Q3 (item P5-24): step time 6·3e6·13e9/(4096·4.6e14·0.4) = 0.31 s
    ("P5-24-step-time", "parallel.training_time", Context(),
     {"P": 13 * 10**9, "tokens": 3 * 10**6, "n_dev": 4096, "C": 46 * 10**13, "MFU": R(2, 5)}, 0.31, 0.01),
    # applied-training.md 'Counting parameters and FLOPs' (item P6-01): LLaMA-3-70B, book 70.4e9 from
    # rounded terms, exact 70.55e9
    ("P6-01-llama70b", "transformer.params", Context(model="llama3-70b"), {}, 70.4e9, 0.005),
    ("P6-01-llama70b-exact", "transformer.params", Context(model="llama3-70b"), {}, 70_553_698_304, 0),
    ("P6-01-llama70b-vocab", "transformer.embedding_params", Context(model="llama3-70b"), {}, 2.1e9, 0.01),
    # applied-training-pq2: 6·70e9 = 4.2e11 FLOPs per token; on one v5p at 100%: 0.915 ms (book "1 ms")
    ("pq2-flops-per-token", "transformer.training_flops", Context(), {"P": 70 * 10**9, "tokens": 1}, 42 * 10**10, 0),
    ("pq2-seconds-per-token", "parallel.training_time", Context(chip=V5P, dtype="bf16"),
     {"P": 70 * 10**9, "tokens": 1, "n_dev": 1, "MFU": 1}, 0.001, 0.1),
    # applied-training.md (item P6-03): 15T tokens: 6.3e24 FLOPs
    ("P6-03-total-flops", "transformer.training_flops", Context(), {"P": 70 * 10**9, "tokens": 15 * 10**12},
     63 * 10**23, 0),
    # applied-training-pq4: full v5p pod (8960 chips) at 40% MFU: 3.83e6 s (book 3.8e6 s, 44 days)
    ("pq4-pod-seconds", "parallel.training_time", Context(chip=V5P, dtype="bf16"),
     {"P": 70 * 10**9, "tokens": 15 * 10**12, "n_dev": 8960, "MFU": R(2, 5)}, 3.8e6, 0.02),
    ("pq4-pod-seconds-exact", "parallel.training_time", Context(chip=V5P, dtype="bf16"),
     {"P": 70 * 10**9, "tokens": 15 * 10**12, "n_dev": 8960, "MFU": R(2, 5)}, 3_829_657, 1e-6),
    # applied-training.md (item P6-05, V3 text): bf16 weights 140 GB, Adam 560 GB, c = 2 checkpoints: 10.5 TB
    ("P6-05-weights", "transformer.weights_bytes", Context(weight_dtype="bf16"), {"P": 70 * 10**9}, 140 * 10**9, 0),
    ("P6-05-adam", "transformer.optimizer_bytes", Context(), {"P": 70 * 10**9, "b_opt": 8}, 560 * 10**9, 0),
    ("P6-05-activations", "transformer.activation_bytes", Context(model="llama3-70b", dtype="bf16"),
     {"B": 4 * 10**6, "n_ckpt": 2}, 10.5e12, 0.005),
    # applied-training-wp2a (engine-derived): LLaMA-3.1-405B, 405.85e9 params (the record also counts the
    # final norm, D = 16384 more); 6·P = 2.435e12 FLOPs per token and 3.65e25 for 15T tokens
    ("wp2a-405b-params", "transformer.params", Context(model="llama3-405b"), {}, 405_853_388_800 - 16384, 0),
    ("wp2a-405b-params-rounded", "transformer.params", Context(model="llama3-405b"), {}, 405.85e9, 0.001),
    ("wp2a-405b-flops-per-token", "transformer.training_flops", Context(), {"P": 405_853_388_800, "tokens": 1},
     2.435e12, 0.001),
    ("wp2a-405b-total-flops", "transformer.training_flops", Context(),
     {"P": 405_853_388_800, "tokens": 15 * 10**12}, 3.65e25, 0.002),
]


@pytest.mark.parametrize("quantity,ctx,given,expected,rel", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_worked_value(quantity, ctx, given, expected, rel):
    got = evaluate(get(quantity), ctx, given).value
    if rel == 0:
        assert got == sp.Rational(Fraction(expected))
    else:
        assert float(got) == pytest.approx(expected, rel=rel)


def symbolic(quantity, given):
    """A quantity with symbolic values put in (the book's sequence batch, its shapes)."""
    return sp.expand(evaluate(get(quantity), Context(), given).value)


def test_ex4_gated_mlp():
    # transformers-ex4: 3DF params and 18BTDF training FLOPs (ungated: 2DF and 12BTDF)
    assert symbolic("transformer.mlp_params", {}) == 3 * D * F  # the book's gated MLP without a model
    assert symbolic("transformer.mlp_params", {"n_mlp": 2}) == 2 * D * F
    assert symbolic("transformer.mlp_flops", {"B": Bseq * T}) == 18 * Bseq * T * D * F
    assert symbolic("transformer.mlp_flops", {"B": Bseq * T, "n_mlp": 2}) == 12 * Bseq * T * D * F


def test_ex7_six_times_tokens_times_params():
    # transformers-ex7: (18BTDF + 12BTD(N+K)H)·L = 6·(BT)·(3DF + 2D(N+K)H)·L
    per_token = symbolic("transformer.matmul_flops_per_token", {})  # the book's gated MLP: n_mlp = 3
    assert sp.expand(per_token * Bseq * T - (18 * Bseq * T * D * F + 12 * Bseq * T * D * (N + K) * H) * L) == 0


def test_ex8_ratio():
    # transformers-ex8: with F = 4D, NH = D and N = K the ratio of attention to matmul FLOPs is T/(8D)
    assert get("transformer.attention_to_matmul_ratio_book").derivation.expr == T / (8 * D)


def test_ex14_seven_saved_tensors():
    # transformers-ex14: the big-matmuls-only policy keeps 7 tensors per layer instead of 20
    assert tf.CHECKPOINT_POLICIES["big_matmuls"][0] == 7
    assert tf.CHECKPOINT_POLICIES["no_remat"][0] == 20
    assert tf.CHECKPOINT_POLICIES["block_remat"][0] == 1


def test_q1a_attention_fraction():
    # transformers-q1a (E4-1): the attention share is exactly 1/4 per layer and 0.246 with embeddings
    values = {sym(k): v for k, v in Q1.items()} | {sym("n_mlp"): 3, sym("n_emb"): 2, sym("P_extra"): 0}  # gated, untied, no biases
    attn = get("transformer.attention_params").derivation.expr.subs(values)
    layer = get("transformer.params_per_layer").derivation.expr.subs(values)
    total = get("transformer.params").derivation.expr.subs(values)
    assert float(attn / (layer - 2 * 4096)) == 0.25
    assert float(64 * attn / total) == pytest.approx(0.246, abs=0.0005)


def test_q4_intensity_closed_forms():
    # transformers-q4: bytes 4BTNH + 4BSKH and FLOPs 4BTSNH for B sequences (bf16); AI = TSG/(TG + S)
    steps = evaluate(get("transformer.attention_intensity"), BF16).steps
    flops, nbytes, ai = (s.value for s in steps)
    assert sp.expand(Bseq * nbytes - (4 * Bseq * T * N * H + 4 * Bseq * S * K * H)) == 0
    assert sp.expand(Bseq * flops - 4 * Bseq * T * S * N * H) == 0
    G = sp.Symbol("G", positive=True)
    assert sp.simplify(ai.subs(N, G * K) - T * S * G / (T * G + S)) == 0
    prefill = evaluate(get("transformer.attention_intensity_prefill"), BF16).value
    decode = evaluate(get("transformer.attention_intensity_decode"), BF16).value
    assert sp.simplify(prefill.subs(N, G * K) - T * G / (G + 1)) == 0
    assert sp.simplify(decode.subs(N, G * K) - S * G / (S + G)) == 0


def test_q6_remat_extra_flops():
    # transformers-q6: saving only the 7 matmul outputs recomputes 4BT²NH per layer (B sequences)
    assert symbolic("transformer.remat_extra_flops", {"B": Bseq * T}) == 4 * Bseq * T**2 * N * H


def test_q7_available_flops():
    # transformers-q7: 2.79e6 h · 3600 · 1.513e15 = 1.5197e25 FLOPs available (book 1.52e25)
    ev = evaluate(get("transformer.mfu"), Context(),
                  {"P": 37 * 10**9, "tokens": 148 * 10**11, "n_dev": 2048, "t_run": DEEPSEEK_T_RUN,
                   "C": 1513 * 10**12})
    assert float(ev.steps[1].value) == pytest.approx(1.5196572e25, rel=1e-9)
    assert float(ev.steps[1].value) == pytest.approx(1.52e25, rel=0.01)


def test_P6_05_total_and_chips():
    # applied-training.md (item P6-05, V3): 140 GB + 560 GB + 10.5 TB = 11.2 TB, 117 v5p chips of 96 GB
    state = evaluate(get("transformer.training_state_bytes"), Context(weight_dtype="bf16"),
                     {"P": 70 * 10**9, "b_opt": 8}).value
    acts = evaluate(get("transformer.activation_bytes"), Context(model="llama3-70b", dtype="bf16"),
                    {"B": 4 * 10**6, "n_ckpt": 2}).value
    total = state + acts
    assert float(total) == pytest.approx(11.2e12, rel=0.005)
    assert sp.ceiling(total / (96 * 10**9)) == 117
