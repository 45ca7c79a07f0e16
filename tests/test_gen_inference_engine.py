"""The inference engine's forms (issue 29): naive sampling, paged and shared KV caches, prefix caching,
batch- and sequence-sharded caches, the expert layout [E_Z, D_X, F_Y] and the decode thresholds.

Three kinds of check. Hand-picked rows: the engine route (a generator's ``solve``) and its second route
(``check``) must both give the value worked out by hand in the row's comment. Book rows: the quantities at the
book's own inputs against its printed (or the worked record's derived) figures, the record id in the comment
and the tolerance the book's rounding needs. Properties: laws that hold for every input (a paged cache wastes
less than a page, the naive loop never beats the cache, a prefix saves (n − 1)·2·P·T_pre).

The TPU v5e figures are the catalog's: 1.97e14 bf16 FLOP/s, 8.2e11 B/s of HBM, 16e9 B of it, 4.5e10 B/s per
ICI link each way (W_ici = 9e10 per axis in both directions) and 1 us per hop.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath.problems import registry
from scalemath.problems.generators.inference_common import model_fields
from scalemath.quantities import Context, evaluate, get

NAMES = ("inference_naive_sampling", "inference_paged_kv", "inference_prefix_cache", "inference_sharded_kv",
         "inference_expert_layout", "inference_tp_limits")
P_8B, P_70B, P_PART7 = 8030257152, 70553698304, 18385731584
C_V5E, W_V5E, HBM_V5E, ICI_V5E, LINK_V5E = 197 * 10**12, 820 * 10**9, 16 * 10**9, 90 * 10**9, 45 * 10**9
# LLaMA-3 8B caches 2 x 32 layers x 8 heads x 128 = 65,536 elements a token; LLaMA-3 70B 2 x 80 x 8 x 128 = 163,840
KV_8B_BF16, KV_70B_INT8, KV_PART7_INT8 = 131072, 163840, 262144
# Mixtral 8x7B: 46,702,788,608 parameters (every expert), D = 4096, k = 2
P_MIXTRAL = 46702788608


def v5e(key, **extra):
    return dict(model_fields(key)) | {"chip": "tpu-v5e", "dtype": "bf16", "weight_dtype": "bf16"} | extra


ROWS = [
    # LLaMA-3 8B, prompt 1000, 500 generated, 1 v5e: the naive loop runs 500 x 1000 + 500 x 499 / 2 = 624,750 tokens,
    # the cached one 1000 + 499 = 1,499; FLOPs 2P times each; ratio 624,750 / 1,499 = 416.8; at peak 2P x 624,750
    # / 1.97e14 = 50.94 s
    ("naive-8b-1000-500", "inference_naive_sampling", v5e("llama3-8b", T=1000, G=500, chips=1),
     {"tokens": 624750, "naive": 2 * P_8B * 624750, "cached": 2 * P_8B * 1499, "ratio": Fr(624750, 1499),
      "t_naive": Fr(2 * P_8B * 624750, C_V5E)}),
    # LLaMA-3 70B, int8 weights and cache, 8 v5e, slots of 8192, a request of 3000 tokens in pages of 128:
    # ceil(3000 / 128) = 24 pages (3072 slots), 72 empty x 163,840 = 11,796,480 B wasted; padded 5192 x 163,840 =
    # 850,657,280 B. The weights leave 128e9 - 70,553,698,304 = 57,446,301,696 B: padded 57.4e9 / (8192 x 163,840)
    # = 42.8 -> 42 (the book's 43 with P = 70e9); paged 57.4e9 / (3072 x 163,840) = 114.1 -> 114; every 2 layers
    # sharing a cache halves the token's bytes: 85.6 -> 85
    ("paged-70b-3000", "inference_paged_kv",
     dict(model_fields("llama3-70b")) | {"chip": "tpu-v5e", "weight_dtype": "int8", "kv_dtype": "int8", "S": 3000,
                                         "S_max": 8192, "s_page": 128, "m_kv": 2, "chips": 8},
     {"pages": 24, "waste_paged": 72 * KV_70B_INT8, "waste_padded": 5192 * KV_70B_INT8, "batch_padded": 42,
      "batch_paged": 114, "batch_shared": 85}),
    # inference-ex-prefix-cache: 'I like dogs' cached, 'I like cats' needs (3 - 2) / 3 = 1/3 of the compute.
    # LLaMA-3 8B on one v5e at 40 percent: 2 requests of 3 tokens, 6 tokens prefilled without the cache and
    # 2 + 1 + 1 = 4 with it; saved 2 x 2P FLOPs, 4P / (0.4 x 1.97e14) s; the prefix's bf16 cache 2 x 131,072 B
    ("prefix-book-dogs-cats", "inference_prefix_cache",
     v5e("llama3-8b", kv_dtype="bf16", T=3, T_pre=2, n_req=2, mfu=40, chips=1),
     {"fraction": Fr(1, 3), "plain": 2 * P_8B * 6, "cached": 2 * P_8B * 4, "saved": 2 * P_8B * 2,
      "time": Fr(4 * P_8B, C_V5E) / Fr(2, 5), "bytes": 2 * KV_8B_BF16}),
    # a 4096-token system prompt of which 3584 are shared, 100 requests: saved 99 x 2P x 3584 FLOPs
    ("prefix-8b-system-prompt", "inference_prefix_cache",
     v5e("llama3-8b", kv_dtype="bf16", T=4096, T_pre=3584, n_req=100, mfu=50, chips=2),
     {"fraction": Fr(512, 4096), "plain": 2 * P_8B * 409600, "cached": 2 * P_8B * (3584 + 100 * 512),
      "saved": 2 * P_8B * 99 * 3584, "time": Fr(2 * P_8B * 99 * 3584, 2 * C_V5E) / Fr(1, 2),
      "bytes": 3584 * KV_8B_BF16}),
    # LLaMA-3 70B (N = 64, K = 8, H = 128, L = 80) on v5e, int8 cache, B = 32, S = 8192, Y = 8, Z = 4: each chip
    # 32 x 8192 x 163,840 / 32 = 1,342,177,280 B either way; one AllToAll 32 x 64 x 128 x 2 / 8 = 65,536 B, two a
    # layer at V / (4 W_ici): 160 x 65,536 / 3.6e11 = 29.13 us; sequence-sharded, an AllGather and a ReduceScatter of
    # the same bytes a layer: 80 x 2 x 65,536 / 9e10 = 116.5 us
    ("sharded-70b-y8-z4", "inference_sharded_kv", v5e("llama3-70b", kv_dtype="int8", S=8192, Y=8, Z=4, B=32),
     {"batch_chip": 1342177280, "a2a_bytes": 65536, "a2a_time": Fr(160 * 65536, 4 * ICI_V5E),
      "seq_time": Fr(160 * 65536, ICI_V5E)}),
    # Mixtral 8x7B in bf16 on v5e, Y = 2, Z = 8 (16 chips): 2 x 46,702,788,608 / 16 = 5,837,848,576 B a chip, read in
    # 7.119 ms, 10,162,151,424 B left; ceil(93.4e9 / 16e9) = 6 chips at least; B = 64: dispatch 64 x 2 x 4096 x 2
    # = 1,048,576 B, two AllToAlls at V / (4 W_ici) plus an AllReduce of V / 8 at 2V/W_ici: 5.825 + 2.913 us
    ("experts-mixtral-y2-z8", "inference_expert_layout", v5e("mixtral-8x7b", Y=2, Z=8, B=64),
     {"per_chip": Fr(2 * P_MIXTRAL, 16), "t_weights": Fr(2 * P_MIXTRAL, 16 * W_V5E),
      "free": HBM_V5E - Fr(2 * P_MIXTRAL, 16), "min_chips": 6,
      "t_ici": Fr(2 * 1048576, 4 * ICI_V5E) + Fr(2 * 1048576 // 8, ICI_V5E)}),
    # inference-ex-gen-tp-bound and -prefill-tp-bound with the part 7 model (F = 16384, D = 4096) at B = 32 in bf16:
    # F W_ici / (B W) = 16384 x 9e10 / (32 x 8.2e11) = 56.2 -> 56 (the book's 64 takes beta = 8; the record derives
    # 56); 2 F W_ici / (C b_x) = 7.485 -> 7 (the book's F / 2200 = 7.4); B D b_x / (W_link t_hop) = 262,144 / 45,000
    # = 5.825 -> 5;
    # S* = 2 P W / (C KV_tok) with the int8 cache: 2 x 18,385,731,584 x 8.2e11 / (1.97e14 x 262,144) = 583.9 -> 584
    ("limits-part7-b32", "inference_tp_limits", v5e("book-part7", kv_dtype="int8", B=32, M_Y=1),
     {"y_memory": 56, "y_compute": 7, "y_latency": 5, "s_star": 584}),
    # applied-q-sharding-4x8: LLaMA-3 70B (F = 28672) on a v5e 4x8, bf16, B = 64, two axes: F M_Y / 2200 = 26.2
    # -> 26 (book 26); F / (B beta) = 28672 x 9e10 / (64 x 8.2e11) = 49.2 -> 49 (the book's 56 takes beta = 8);
    # 64 x 8192 x 2 / 45,000 = 23.3 -> 23; S* with the bf16 cache 2 x 70,553,698,304 x 8.2e11 / (1.97e14 x 327,680)
    # = 1792.5 -> 1793
    ("limits-70b-4x8", "inference_tp_limits", v5e("llama3-70b", kv_dtype="bf16", B=64, M_Y=2),
     {"y_memory": 49, "y_compute": 26, "y_latency": 23, "s_star": 1793}),
]


@pytest.mark.parametrize("row_id, name, params, expected", ROWS, ids=[r[0] for r in ROWS])
def test_hand_picked(row_id, name, params, expected):
    gen = registry.get_generator(name)
    engine, second = registry.exact_routes(gen, params, expected)
    assert set(engine) == set(expected) == set(second)
    for answer, want in expected.items():
        want = sp.Rational(Fr(want))
        assert engine[answer] == want, (answer, engine[answer], want)
        assert sp.Rational(Fr(second[answer])) == want, (answer, second[answer], want)


def test_rows_cover_every_generator():
    assert {row[1] for row in ROWS} == set(NAMES)


# (id, quantity, context, given, the book's figure, relative tolerance covering its rounding)
V5E = Context(chip="tpu-v5e")
BOOK = [
    # inference-ex-prefix-cache: 'I like cats' after 'I like dogs' needs 1/3 of the compute
    ("prefix-1/3", "inference.prefix.fraction_needed", Context(), {"T": 3, "T_pre": 2}, Fr(1, 3), 0),
    # inference-q6-1 (derived answer): 212e9 parameters on a v5e 8x16 (Y = 8, Z = 16, X = 1) in int8: 2.02 ms to
    # load, 14.3 GB free a chip; in bf16 4.03 ms and 12.7 GB
    ("q6-int8-load", "inference.moe_layout.t_weights", Context(chip="tpu-v5e", weight_dtype="int8"),
     {"P": 212 * 10**9, "X": 1, "Y": 8, "Z": 16}, 2.02e-3, 0.001),
    ("q6-int8-free", "inference.moe_layout.free_hbm", Context(chip="tpu-v5e", weight_dtype="int8"),
     {"P": 212 * 10**9, "X": 1, "Y": 8, "Z": 16}, 14.3e9, 0.004),
    ("q6-bf16-load", "inference.moe_layout.t_weights", V5E, {"P": 212 * 10**9, "X": 1, "Y": 8, "Z": 16},
     4.03e-3, 0.003),  # 4.0396 ms: the record truncates
    ("q6-bf16-free", "inference.moe_layout.free_hbm", V5E, {"P": 212 * 10**9, "X": 1, "Y": 8, "Z": 16}, 12.7e9,
     0.002),
    # inference-ex-gen-tp-bound: F = 16384, B = 32 with the book's beta = 8: 64 ways (W_ici set to W_hbm / 8)
    ("gen-tp-64", "inference.tp.max_degree_memory_bound", Context(dtype="bf16"),
     {"F": 16384, "B": 32, "W": 8, "W_ici": 1}, 64, 0),
]


@pytest.mark.parametrize("row_id, name, ctx, given_, book, rel", BOOK, ids=[r[0] for r in BOOK])
def test_book_figures(row_id, name, ctx, given_, book, rel):
    got = evaluate(get(name), ctx, given_).value
    if rel == 0:
        assert got == sp.Rational(Fr(book))
    else:
        assert float(got) == pytest.approx(float(book), rel=rel)


def _value(name, ctx=Context(), **values):
    return evaluate(get(name), ctx, values).value


@settings(max_examples=40, deadline=None)
@given(S=st.integers(1, 200_000), page=st.integers(1, 1024), kv=st.integers(1, 10**6))
def test_a_paged_cache_wastes_less_than_one_page(S, page, kv):
    waste = _value("inference.paged.wasted_bytes", S=S, s_page=page, kv_token=kv)
    assert 0 <= waste < page * kv
    assert waste == (-(-S // page) * page - S) * kv  # integer ceiling, written out


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 10**5), G=st.integers(1, 10**4))
def test_the_naive_loop_never_beats_the_cache_and_grows_quadratically(T, G):
    ratio = _value("inference.naive.flops_ratio", T=T, n_gen=G)
    tokens = _value("inference.naive.tokens", T=T, n_gen=G)
    assert tokens == sum(range(T, T + G))
    assert ratio >= 1 and (ratio == 1) == (G == 1)


@settings(max_examples=40, deadline=None)
@given(T=st.integers(2, 10**5), share=st.fractions(0, 1), n_seq=st.integers(1, 10**4))
def test_a_cached_prefix_saves_it_n_minus_one_times(T, share, n_seq):
    T_pre = max(1, int(T * share))
    P = 10**9
    saved = _value("inference.prefix.flops_saved", P_active=P, T=T, T_pre=T_pre, n_seq=n_seq)
    plain = _value("inference.prefix.flops_uncached", P_active=P, T=T, n_seq=n_seq)
    cached = _value("inference.prefix.flops_cached", P_active=P, T=T, T_pre=T_pre, n_seq=n_seq)
    assert saved == 2 * P * T_pre * (n_seq - 1) == plain - cached


@settings(max_examples=30, deadline=None)
@given(L=st.integers(1, 128), m=st.integers(1, 16))
def test_sharing_a_cache_between_m_layers_keeps_one_cache_per_group(L, m):
    per_token = _value("inference.kv_share.bytes_per_token", L=L, m_kv=m, K=8, H=128, b_kv=2)
    assert per_token == 2 * (-(-L // m)) * 8 * 128 * 2


def test_sequence_sharding_costs_four_times_the_alltoalls_of_batch_sharding():
    given_ = {"B": 64, "N": 64, "H": 128, "L": 80, "Y": 4, "b_x": 2, "W_ici": 9 * 10**10}
    assert _value("inference.kv_seq.t_comms", **given_) == 4 * _value("inference.kv_batch.t_alltoall", **given_)


@pytest.mark.parametrize("name", NAMES)
def test_drawn_problems_render_and_agree(name):
    from scalemath.problems.render import render_problem

    gen = registry.get_generator(name)
    for seed in range(6):
        problem = registry.make_problem(gen, seed)
        for fmt in ("md", "html", "tex"):
            assert render_problem(problem, fmt, "solution")
