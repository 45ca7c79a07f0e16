"""Quantities for the transformer, inference and training ideas the book index had as partial or absent (issue 29):
causal and windowed attention FLOPs, Q2's replicated matmul, naive sampling's attention, local attention's cache,
replicated K/V projections, batched and interleaved prefill, the Pareto cost ratio and the cap of data parallelism
over whole sequences.

Each value is recomputed here in plain fractions (a loop over the pairs or tokens where the engine has a closed
sum), or from the catalog's own model counts, and held against the book's figure where it prints one.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from scalemath.catalog.models import get_model
from scalemath.quantities import Context, evaluate, get


def value(quantity, model=None, **given):
    return evaluate(get(quantity), Context(model=model), {k: str(v) for k, v in given.items()}).value


# -- causal and windowed attention -------------------------------------------------------------------------------

@pytest.mark.parametrize("N, H, T", [(32, 128, 4096), (64, 128, 8192), (8, 64, 1000)], ids=["8b", "70b", "odd"])
def test_causal_attention_flops(N, H, T):
    plain = 12 * N * H * T * T  # the book's 12·B·T²·N·H for one sequence
    assert value("transformer.causal_attention_flops", N=N, H=H, T=T) == plain // 2
    assert value("transformer.causal_attention_saving", N=N, H=H, T=T) == plain - plain // 2


@pytest.mark.parametrize("model, T", [("llama3-70b", 8192), ("llama3-8b", 2048)])
def test_causal_saving_matches_the_model_counts(model, T):
    # Model.forward_flops_per_token counts every position, or T/2 with causal=True; the difference over T tokens,
    # times 3 for training, over L layers, is one layer's saving
    m = get_model(model)
    per_token = m.forward_flops_per_token(T) - m.forward_flops_per_token(T, causal=True)
    assert value("transformer.causal_attention_saving", model, T=T) == Fraction(per_token) * T * 3 / m.L


@pytest.mark.parametrize("T, w", [(1024, 4096), (4096, 4096), (32768, 4096), (10_000, 128)],
                         ids=["inside", "at", "past", "narrow"])
def test_windowed_attention_flops(T, w):
    if T <= w:
        pairs = Fraction(T * T, 2)
    else:  # the first w queries fill a triangle, the rest a band of w keys each
        pairs = Fraction(w * w, 2) + (T - w) * w
    assert value("transformer.windowed_attention_flops", N=32, H=128, T=T, w_win=w) == 12 * 32 * 128 * pairs


def test_windowed_matches_gemma2_counts():
    # Gemma 2 27B past its window: global layers' causal attention plus local layers' windowed attention, as
    # positions attended per token, grows as the catalog's causal count does (4·N·H forward FLOPs a position)
    m, T = get_model("gemma2-27b"), 32768
    glob = value("transformer.causal_attention_flops", N=m.N, H=m.H, T=T)
    local = value("transformer.windowed_attention_flops", "gemma2-27b", T=T)
    positions = Fraction((m.L - m.local_layers) * glob + m.local_layers * local, 12 * m.N * m.H * T)
    growth = Fraction(m.forward_flops_per_token(T, causal=True)) - Fraction(m.forward_flops_per_token(1, causal=True))
    assert growth == 4 * m.N * m.H * (positions - Fraction(m.L, 2))


@pytest.mark.parametrize("model", ["gemma2-27b", "gemma3-27b", "gemma2-9b"])
def test_local_crossover(model):
    m = get_model(model)
    n_mlp = 3 if m.gated else 2
    matmul = 6 * (n_mlp * m.D * m.F + 2 * m.D * (m.N + m.K) * m.H)
    expected = (Fraction(m.L * matmul, 12 * m.N * m.H) - m.local_layers * m.sliding_window) / (m.L - m.local_layers)
    got = value("transformer.local_attention_crossover_T", model)
    assert got == expected and expected > m.sliding_window
    # at T*, attention averaged over the layers costs what the matmuls do
    positions = Fraction((m.L - m.local_layers) * expected + m.local_layers * m.sliding_window, m.L)
    assert 12 * m.N * m.H * positions == matmul


def test_local_crossover_without_local_layers_is_the_plain_one():
    assert value("transformer.local_attention_crossover_T", "llama3-70b") == \
        value("transformer.attention_crossover_T", "llama3-70b")


# -- Q2: a matmul replicated over Z ------------------------------------------------------------------------------

@pytest.mark.parametrize("B, D, F", [(1024, 8192, 32768), (4096, 4096, 16384)])
def test_replicated_matmul_q2(B, D, F):
    # transformers.md Q2 on {X: 4, Y: 8, Z: 4}: 2BDF/(XY) per device, 2BDF·Z summed
    mesh = dict(X=4, Y=8, Z=4)
    per_device = 2 * (B // 4) * (D // 8) * F
    assert value("transformer.replicated_matmul_flops_per_device", B=B, D=D, F=F, X=4, Y=8) == per_device
    assert per_device == Fraction(2 * B * D * F, 32)
    total = value("transformer.replicated_matmul_flops_total", B=B, D=D, F=F, **mesh)
    assert total == per_device * 4 * 8 * 4 == 2 * B * D * F * 4


# -- naive sampling's attention ----------------------------------------------------------------------------------

def _pairs_naive(T, G):
    return sum((T + i) ** 2 for i in range(G))


def _pairs_cached(T, G):
    return T * T + sum(T + i for i in range(1, G))


@pytest.mark.parametrize("T, G", [(1, 1), (8, 1), (100, 50), (8192, 4096), (3, 1000)])
def test_naive_attention(T, G):
    N, H, L = 64, 128, 80
    assert value("inference.naive.attention_flops", N=N, H=H, L=L, T=T, n_gen=G) == 4 * N * H * L * _pairs_naive(T, G)
    assert value("inference.naive.cached_attention_flops", N=N, H=H, L=L, T=T, n_gen=G) == \
        4 * N * H * L * _pairs_cached(T, G)
    assert value("inference.naive.attention_ratio", T=T, n_gen=G) == Fraction(_pairs_naive(T, G), _pairs_cached(T, G))
    linear = 2 * 70 * 10 ** 9 * sum(T + i for i in range(G))
    assert value("inference.naive.flops_with_attention", N=N, H=H, L=L, T=T, n_gen=G, P_active=70 * 10 ** 9) == \
        linear + 4 * N * H * L * _pairs_naive(T, G)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4000), st.integers(1, 300))
def test_naive_attention_ratio_for_all_lengths(T, G):
    ratio = value("inference.naive.attention_ratio", T=T, n_gen=G)
    assert ratio == Fraction(_pairs_naive(T, G), _pairs_cached(T, G))
    assert (ratio == 1) == (G == 1) and ratio >= 1


# -- local attention's cache -------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["gemma2-27b", "gemma3-27b", "llama4-scout", "mistral-7b", "llama3-70b"])
@pytest.mark.parametrize("S", [1024, 4096, 32768])
def test_local_kv_against_the_catalog(model, S):
    m = get_model(model)
    expected = m.kv_elements(S) * 2  # bf16
    assert value("inference.local.kv_bytes_per_sequence", model, S=S, b_kv=2) == expected
    assert value("inference.local.kv_fraction", model, S=S) == Fraction(m.kv_elements(S), m.kv_elements_per_token() * S)


def test_local_kv_fraction_gemma3():
    # Gemma 3 27B: 52 of 62 layers local with a 1024-token window; at 128k context the cache keeps
    # (10·131072 + 52·1024)/(62·131072) of an all-global one
    m = get_model("gemma3-27b")
    assert (m.L, m.local_layers, m.sliding_window) == (62, 52, 1024)
    assert value("inference.local.kv_fraction", "gemma3-27b", S=131072) == Fraction(10 * 131072 + 52 * 1024, 62 * 131072)


# -- replicated K/V projections ----------------------------------------------------------------------------------

@pytest.mark.parametrize("Y, held", [(4, Fraction(8, 4)), (8, 1), (16, 1), (64, 1)])
def test_kv_projection_bytes_per_chip(Y, held):
    D, H = 8192, 128  # LLaMA 3-70B: K = 8 KV heads
    assert value("inference.kv_proj.bytes_per_chip", D=D, H=H, K=8, Y=Y, b_w=1) == 2 * D * H * held


def test_kv_projection_llama3_70b():
    m, Y = get_model("llama3-70b"), 16
    extra = 2 * m.D * m.H - Fraction(2 * m.D * m.K * m.H, Y)
    assert value("inference.kv_proj.extra_bytes", "llama3-70b", Y=Y, b_w=1) == extra == 2 * 8192 * 128 // 2
    share = extra / Fraction(3 * m.D * m.F + 2 * m.D * (m.N + m.K) * m.H, Y)
    got = value("inference.kv_proj.extra_fraction", "llama3-70b", Y=Y)
    assert got == share == Fraction(2048, 104448)  # about 2 %: the projections are small


# -- batched and interleaved prefill -----------------------------------------------------------------------------

@pytest.mark.parametrize("B, T_max, T_avg", [(32, 8192, 2048), (1, 512, 512), (64, 4096, 3000)])
def test_batched_prefill(B, T_max, T_avg):
    P = 70 * 10 ** 9
    assert value("inference.batched_prefill.padding_flops", B=B, T_max=T_max, T_avg=T_avg, P_active=P) == \
        2 * P * (B * T_max - B * T_avg)
    assert value("inference.batched_prefill.padding_fraction", B=B, T_max=T_max, T_avg=T_avg) == \
        1 - Fraction(T_avg, T_max)
    C, n, mfu = 197 * 10 ** 12, 16, Fraction(2, 5)
    ttft = value("inference.batched_prefill.ttft", B=B, T_max=T_max, P_active=P, C=C, n_dev=n, MFU="0.4")
    assert ttft == Fraction(2 * P * B * T_max) / (n * C * mfu)
    assert value("inference.batched_prefill.ttft_ratio", B=B, T_max=T_max, T=T_avg) == Fraction(B * T_max, T_avg)


def test_interleaved_stall_book_figures():
    # applied-inference.md: LLaMA 3-70B prefills 8192 tokens in 0.91 s on 16 v5e at 40 % MFU; a step takes 19 ms
    given = dict(P_active=70 * 10 ** 9, T=8192, C=197 * 10 ** 12, n_dev=16, MFU="0.4")
    stall = value("inference.interleaved.stall_time", **given)
    assert stall == Fraction(2 * 70 * 10 ** 9 * 8192) / (16 * 197 * 10 ** 12 * Fraction(2, 5))
    assert round(float(stall), 2) == 0.91
    steps = value("inference.interleaved.stall_steps", t_step="0.019", **given)
    assert steps == stall / Fraction(19, 1000) and round(float(steps)) == 48


# -- the Pareto curve's cost ratio -------------------------------------------------------------------------------

PARETO = dict(P=70 * 10 ** 9, b_w=1, kv_token=163840, n_dev=16, W=819 * 10 ** 9)


@pytest.mark.parametrize("S, k", [(2048, 2), (8192, 2), (2048, 3)])
def test_pareto_cost_ratio(S, k):
    weights, cache = PARETO["P"] * PARETO["b_w"], S * PARETO["kv_token"]
    b_k = k + Fraction((k - 1) * weights, cache)
    assert value("inference.pareto.batch_at_latency", S=S, k_lat=k, **PARETO) == b_k.numerator // b_k.denominator
    ratio = value("inference.pareto.cost_ratio", S=S, k_lat=k, **PARETO)
    assert ratio == b_k / k
    # second route: the decode step time quantity at batch 1 and at B_k
    t1 = value("inference.decode.step_time_memory_bound", B=1, S=S, **PARETO)
    tk = value("inference.decode.step_time_memory_bound", B=b_k, S=S, **PARETO)
    assert tk == k * t1 and (t1 / 1) / (tk / b_k) == ratio


def test_pareto_doubling_latency_book():
    # applied-inference.md: "doubling the latency buys about 100x lower cost per token" (int8 LLaMA 3-70B,
    # 163,840 B of int8 KV per token, at a 2k context): 1 + 70e9/(2·2048·163840) = 105.3
    ratio = value("inference.pareto.cost_ratio", S=2048, k_lat=2, **PARETO)
    assert ratio == 1 + Fraction(70 * 10 ** 9, 2 * 2048 * 163840)
    assert 100 < ratio < 110


# -- data parallelism over whole sequences -----------------------------------------------------------------------

def test_sequence_dp_cap_book():
    # applied-training.md: 4M tokens in 4096-token sequences is 1024 sequences, so 1024 chips of 8960
    B = 4 * 1024 * 1024
    assert value("parallel.seq_dp.max_chips", B=B, T=4096) == 1024
    assert value("parallel.seq_dp.usable_fraction", B=B, T=4096, n_dev=8960) == Fraction(1024, 8960)
    assert value("parallel.seq_dp.usable_fraction", B=B, T=4096, n_dev=512) == 1
    # a batch that is not a whole number of sequences: only whole sequences get a chip
    assert value("parallel.seq_dp.max_chips", B=B + 100, T=4096) == 1024
    assert value("parallel.seq_dp.usable_fraction", B=3 * 4096 + 5, T=4096, n_dev=4) == Fraction(3, 4)


# -- the generator that asks them --------------------------------------------------------------------------------

def test_engine_schedule_generator_by_hand():
    from scalemath.problems import registry
    from scalemath.problems.generators.inference_common import model_fields

    # LLaMA-3 8B (8,030,257,152 parameters) on one v5e (1.97e14 FLOP/s) at 40 %: 32 prompts padded to 4096, 2048 on
    # average: half the 131,072 tokens run are padding, 2P x 65,536 FLOPs; TTFT 2P x 131,072 / 7.88e13 = 26.7 s;
    # a 256-token prompt waits 131,072 / 256 = 512 times as long; the 4096-token prefill alone stalls decoding
    # 2P x 4096 / 7.88e13 = 0.835 s, 41.7 steps of 20 ms
    P, rate = 8030257152, Fraction(197 * 10 ** 12) * Fraction(2, 5)
    p = dict(model_fields("llama3-8b")) | {"chip": "tpu-v5e", "dtype": "bf16", "weight_dtype": "bf16", "chips": 1,
                                           "B": 32, "T_max": 4096, "T_avg": 2048, "T_short": 256, "mfu": 40,
                                           "step_ms": 20}
    hand = {"share": Fraction(1, 2), "pad_flops": 2 * P * 65536, "ttft": 2 * P * 131072 / rate, "ratio": 512,
            "stall": 2 * P * 4096 / rate, "steps": 2 * P * 4096 / rate / Fraction(1, 50)}
    gen = registry.get_generator("inference_engine_schedule")
    engine = {a.name: a.value for a in gen.solve(p)}
    assert engine == hand and gen.check(p) == hand
    assert round(float(hand["stall"]), 3) == 0.835 and round(float(hand["steps"]), 1) == 41.7


def test_local_attention_generator_by_hand():
    from scalemath.problems import registry
    from scalemath.problems.generators.inference_common import model_fields

    # Gemma 2 9B (L = 42, 21 local within w = 4096; N = 16, K = 8, H = 256, D = 3584, F = 14,336), S = 7680, bf16:
    # 21 x 4096 + 21 x 7680 = 247,296 layer-tokens x 2 x 8 x 256 x 2 B = 2,025,848,832 B, 247,296 / (42 x 7680) of
    # an all-global cache; a local layer 12 x 16 x 256 x (4096 x 7680 - 4096^2 / 2) FLOPs, a global one
    # 12 x 16 x 256 x 7680^2 / 2; matmuls 6 x (3 x 3584 x 14,336 + 2 x 3584 x 24 x 256) = 1,189,085,184 a token
    # and layer, 24,192 positions' worth: all-global T* = 24,192, with the local layers (42 x 24,192 - 21 x 4096)
    # / 21 = 44,288
    p = dict(model_fields("gemma2-9b")) | {"S": 7680, "kv_dtype": "bf16", "dtype": "bf16", "L_loc": 21}
    hand = {"kv": 2025848832, "share": Fraction(247296, 42 * 7680),
            "local_flops": 12 * 16 * 256 * (4096 * 7680 - 4096 * 4096 // 2), "global_flops": 12 * 16 * 256 * 7680 ** 2 // 2,
            "crossover": 44288, "plain": 24192}
    gen = registry.get_generator("inference_local_attention")
    assert {a.name: a.value for a in gen.solve(p)} == hand and gen.check(p) == hand


def test_pareto_cost_generator_book_setup():
    from scalemath.problems import registry
    from scalemath.problems.generators.inference_common import model_fields

    # applied-inference.md's curve: LLaMA-3 70B (70,553,698,304 parameters by its tensors) in int8 with an int8
    # cache of 163,840 B a token on 16 v5e (8.2e11 B/s each), S = 2048, twice the latency: batch 1 reads
    # 70,553,698,304 + 2048 x 163,840 B in 5.403 ms (the book's 'about 5.5 ms'); B_2 = 2 + P / (2048 x 163,840) =
    # 212.3, so 212 sequences; a token 106.1 times cheaper (the book's 'about 100x')
    P, cache = 70553698304, 2048 * 163840
    p = dict(model_fields("llama3-70b")) | {"chip": "tpu-v5e", "dtype": "bf16", "weight_dtype": "int8",
                                            "kv_dtype": "int8", "S": 2048, "k": 2, "chips": 16}
    b_2 = 2 + Fraction(P, cache)
    hand = {"t1": Fraction(P + cache, 16 * 820 * 10 ** 9), "batch": 212, "ratio": b_2 / 2}
    gen = registry.get_generator("inference_pareto_cost")
    assert {a.name: a.value for a in gen.solve(p)} == hand and gen.check(p) == hand
    assert round(float(hand["t1"]) * 1000, 3) == 5.403 and round(float(hand["ratio"]), 1) == 106.1


def test_naive_attention_generator_by_hand():
    from scalemath.problems import registry
    from scalemath.problems.generators.inference_common import model_fields

    # LLaMA-3 8B (N = 32, H = 128, L = 32: 524,288 forward FLOPs a pair), prompt 1000, 500 generated: the naive
    # passes score 500 x 1000^2 + 1000 x 500 x 499 + 500 x 499 x 999 / 6 = 791,041,750 pairs, the cached loop
    # 1000^2 + 499 x 1000 + 500 x 499 / 2 = 1,623,750; the linear layers run 624,750 tokens (the naive_sampling row)
    p = dict(model_fields("llama3-8b")) | {"T": 1000, "G": 500}
    per_pair, P = 4 * 32 * 128 * 32, 8030257152
    hand = {"naive": per_pair * 791041750, "cached": per_pair * 1623750, "ratio": Fraction(791041750, 1623750),
            "total": per_pair * 791041750 + 2 * P * 624750}
    gen = registry.get_generator("inference_naive_attention")
    assert {a.name: a.value for a in gen.solve(p)} == hand and gen.check(p) == hand
