"""Serving quantities (``inference.*``), each checked by a second route.

* KV bytes: the closed form 2·L·K·H·b_kv against the cache tensors of ``statedict``, model by
  model, and the ``kv_token`` binder (latent attention included) against the same tensors.
* The decode step time: each component bound computed in plain Fractions, then combined as the
  book does (KV loading plus the larger of compute and weight loading).
* Crossovers (critical batch, KV/weights batch, S*, tensor-parallel limits, 2D sharding): the
  root substituted back balances the two sides, and probing just below and above flips the side
  that wins.
* The largest batch and the fewest chips: a direct search over whole sequences and chips.
* Speculative decoding: the expected tokens per round by summing over every acceptance outcome.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath.catalog import hardware, models, statedict
from scalemath import quantities
from scalemath.errors import BadValueError, NoCrossoverError
from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic import inference as inf
from scalemath.symbolic import parallelism as par
from scalemath.symbolic import transformer as tf
from scalemath.symbolic.symbols import sym

CATALOG = models.default_models()
STANDARD = [m.key for m in CATALOG if not m.is_mla]
KV_DTYPES = ["bf16", "fp8", "int8", "int4"]
INFERENCE = sorted(n for n in quantities.QUANTITIES if n.startswith("inference."))


def value(name, ctx=Context(), **given):
    return evaluate(get(name), ctx, given).value


def frac(x) -> Fraction:
    x = sp.Rational(x)
    return Fraction(int(x.p), int(x.q))


# -- the registry ------------------------------------------------------------------------------------

def test_inference_quantities_are_registered_under_their_topic():
    assert len(INFERENCE) >= 60
    assert all(get(n).topic == "inference" for n in INFERENCE)


@pytest.mark.parametrize("name", INFERENCE)
def test_quantities_that_read_the_bandwidth_follow_the_level(name):
    q = get(name)
    assert q.uses_level == (sym("W") in q.derivation.free_symbols)


# -- KV cache: closed form against the cache tensors ---------------------------------------------------

@pytest.mark.parametrize("dtype", KV_DTYPES)
@pytest.mark.parametrize("key", STANDARD)
def test_kv_bytes_equal_cache_tensors(key, dtype):
    m = CATALOG[key]
    per_element = hardware.dtype_bytes(dtype)
    ctx = Context(model=key, kv_dtype=dtype)
    per_token = statedict.kv_cache_bytes_per_token(m, per_element)
    assert value("inference.kv_cache.bytes_per_token", ctx) == per_token
    for seq in (1, 2048, 8192):
        if m.local_layers and seq > m.sliding_window:
            # past the window the local layers stop growing: the closed form refuses, the model counts
            with pytest.raises(BadValueError, match="keep only the last"):
                value("inference.kv_cache.bytes_per_sequence", ctx, S=seq)
            windowed = statedict.count_params(statedict.kv_cache_shapes(m, seq, windowed=True))
            assert windowed == m.kv_elements(seq) < per_token * seq / per_element
            continue
        cache = statedict.count_params(statedict.kv_cache_shapes(m, seq)) * per_element
        assert value("inference.kv_cache.bytes_per_sequence", ctx, S=seq) == cache == per_token * seq
        assert value("inference.kv_cache.bytes_per_batch", ctx, S=seq, B=48) == 48 * cache


def test_llama3_70b_cache_is_2_80_8_128_elements_per_token():
    ctx = Context(model="llama3-70b", kv_dtype="int8")
    assert value("inference.kv_cache.bytes_per_token", ctx) == 2 * 80 * 8 * 128 == 163_840


@pytest.mark.parametrize("key", [m.key for m in CATALOG])
def test_kv_token_binder_equals_cache_tensors_for_every_model(key):
    # the binder reads the model, so latent attention (DeepSeek-V3) is counted as its latent
    m = CATALOG[key]
    bound = quantities.bind(get("inference.decode.t_kv"), Context(model=key, dtype="bf16"))
    assert bound[sym("kv_token")] == statedict.kv_cache_bytes_per_token(m, 2)


def test_cache_dtype_defaults_to_the_activations_and_can_differ():
    q = get("inference.kv_cache.bytes_per_token")
    assert quantities.bind(q, Context(dtype="bf16"))[sym("b_kv")] == 2
    assert quantities.bind(q, Context(chip="tpu-v5e"))[sym("b_kv")] == 2
    assert quantities.bind(q, Context(dtype="bf16", kv_dtype="int4"))[sym("b_kv")] == Fraction(1, 2)
    assert sym("b_kv") not in quantities.bind(q, Context())


def test_cache_quantities_reuse_the_transformer_chapter():
    closed = tf.kv_cache_bytes_per_token().expr.subs(sym("b_x"), sym("b_kv"))
    assert inf.kv_cache_bytes_per_token().expr == closed
    assert value("transformer.kv_cache_bytes_per_token", Context(dtype="bf16"), L=80, K=8, H=128) == \
        value("inference.kv_cache.bytes_per_token", Context(dtype="bf16"), L=80, K=8, H=128)


# -- the decode step, component by component ------------------------------------------------------------

positive = st.integers(1, 10**6)
rates = st.integers(10**12, 10**16)
bandwidths = st.integers(10**9, 10**13)
byte_sizes = st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(2), Fraction(4)])
params = st.integers(10**6, 10**12)


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 4096), s=positive, kv=st.integers(1, 10**6), p=params, bw=byte_sizes,
       n=st.integers(1, 512), c=rates, w=bandwidths)
def test_step_time_is_kv_plus_the_larger_of_compute_and_weights(b, s, kv, p, bw, n, c, w):
    t_math = Fraction(2 * b * p, n * c)
    t_weights = p * bw / (n * w)
    t_kv = Fraction(b * s * kv, n * w)
    book = t_kv + max(t_math, t_weights)
    given_ = {"B": b, "S": s, "kv_token": kv, "P": p, "P_active": p, "b_w": bw, "n_dev": n, "C": c, "W": w}

    def at(name):
        names = {p.name for p in get(name).params}
        return frac(value(name, **{k: v for k, v in given_.items() if k in names}))

    assert at("inference.decode.t_math") == t_math
    assert at("inference.decode.t_weights") == t_weights
    assert at("inference.decode.t_kv") == t_kv
    assert at("inference.decode.step_time") == book
    assert at("inference.decode.token_latency") == book
    assert at("inference.decode.throughput") == b / book
    assert at("inference.decode.throughput_per_chip") == b / (n * book)
    assert at("inference.decode.step_time_memory_bound") == t_kv + t_weights
    assert at("inference.decode.throughput_memory_bound") == b / (t_kv + t_weights)
    assert at("inference.decode.flops") == 2 * b * p
    assert at("inference.decode.bytes") == p * bw + b * s * kv


def test_step_time_uses_the_model_and_chip_from_the_context():
    ctx = Context(chip="tpu-v5e", weight_dtype="int8", kv_dtype="int8", model="llama3-70b")
    got = value("inference.decode.step_time", ctx, B=32, S=8192, P=70 * 10**9, n_dev=8)
    kv = 32 * 8192 * 163_840
    t_math = Fraction(2 * 32 * 70 * 10**9, 8 * 197 * 10**12)
    t_weights = Fraction(70 * 10**9, 8 * 820 * 10**9)
    assert frac(got) == Fraction(kv, 8 * 820 * 10**9) + max(t_math, t_weights)


# -- critical batch ---------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(c=rates, w=bandwidths, bw=byte_sizes, p=params, n=st.integers(1, 512))
def test_critical_batch_balances_compute_and_weights(c, w, bw, p, n):
    root = value("inference.decode.critical_batch", C=c, W=w, b_w=bw)
    assert root == sp.Rational(c) * sp.Rational(bw) / (2 * w)
    values = {"P": p, "b_w": bw, "n_dev": n, "C": c, "W": w}

    def sides(b):
        return (value("inference.decode.t_math", **{k: v for k, v in values.items() if k != "W" and k != "b_w"}, B=b),
                value("inference.decode.t_weights", **{k: v for k, v in values.items() if k != "C"}))

    t_math, t_weights = sides(root)
    assert t_math == t_weights
    below, above = sides(root * sp.Rational(99, 100)), sides(root * sp.Rational(101, 100))
    assert below[0] < below[1] and above[0] > above[1]
    # at the root the step time is the same whichever bound one takes
    step = value("inference.decode.step_time", **values, B=root, S=1, kv_token=1)
    assert step == t_math + root / (n * sp.Rational(w))


@pytest.mark.parametrize("chip,dtype,weights,expected", [
    ("tpu-v5e", "bf16", "bf16", Fraction(197 * 10**12 * 2, 2 * 820 * 10**9)),
    ("tpu-v5e", "bf16", "int8", Fraction(197 * 10**12, 2 * 820 * 10**9)),
    ("tpu-v5e", "int8", "int8", Fraction(394 * 10**12, 2 * 820 * 10**9)),
    ("tpu-v5e", "bf16", "int4", Fraction(197 * 10**12, 4 * 820 * 10**9)),
    ("tpu-v5e", "bf16", "fp8", Fraction(197 * 10**12, 2 * 820 * 10**9)),
    ("h100", "bf16", "bf16", Fraction(990 * 10**12, 3350 * 10**9)),
    ("h100", "fp8", "fp8", Fraction(1980 * 10**12, 2 * 3350 * 10**9)),
])
def test_critical_batch_per_dtype_combination(chip, dtype, weights, expected):
    ctx = Context(chip=chip, dtype=dtype, weight_dtype=weights)
    assert frac(value("inference.decode.critical_batch", ctx)) == expected
    # prefill's prompt is its token batch: the same threshold
    assert frac(value("inference.prefill.critical_tokens", ctx)) == expected


@pytest.mark.parametrize("experts,active", [(8, 2), (16, 2), (256, 8)])
def test_moe_critical_batch_is_the_dense_one_times_e_over_k(experts, active):
    ctx = Context(chip="tpu-v5e")
    dense = value("inference.decode.critical_batch", ctx)
    assert value("inference.decode.critical_batch_moe", ctx, E=experts, k=active) == dense * experts / active


# -- other crossovers of the step-time model ------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(p=params, bw=byte_sizes, s=positive, kv=st.integers(1, 10**6), c=rates, w=bandwidths)
def test_kv_crossovers_balance_their_sides(p, bw, s, kv, c, w):
    b_star = value("inference.decode.kv_weights_batch", P=p, b_w=bw, S=s, kv_token=kv)
    assert b_star * s * kv == p * sp.Rational(bw)
    s_star = value("inference.decode.kv_math_context", P=p, W=w, C=c, kv_token=kv)
    # at S* loading the caches takes as long as the compute, for any batch
    assert s_star * kv / sp.Integer(w) == 2 * sp.Integer(p) / c


@settings(max_examples=40, deadline=None)
@given(d=st.integers(64, 65536), f=st.integers(64, 262144), b=st.integers(1, 4096), bw=byte_sizes, bx=byte_sizes,
       w=bandwidths, wi=st.integers(10**9, 10**12))
def test_tp_memory_bound_limit_balances_hbm_and_ici(d, f, b, bw, bx, w, wi):
    y = value("inference.tp.max_degree_memory_bound", F=f, W_ici=wi, b_w=bw, B=b, W=w, b_x=bx)
    t_hbm = lambda y_: value("inference.tp.t_weights", D=d, F=f, b_w=bw, W=w, Y=y_)  # noqa: E731
    t_ici = value("inference.tp.t_ici", B=b, D=d, b_x=bx, W_ici=wi)
    assert t_hbm(y) == t_ici
    assert t_hbm(y * sp.Rational(99, 100)) > t_ici > t_hbm(y * sp.Rational(101, 100))


def test_tp_compute_bound_limit_is_the_training_chapters():
    assert inf.tp_max_degree_compute_bound().expr == par.tp_max_degree().expr
    assert inf.tp_max_degree_compute_bound().steps == par.tp_max_degree().steps


@settings(max_examples=30, deadline=None)
@given(d=st.integers(256, 32768), ratio=st.integers(1, 8), n=st.integers(2, 4096), b=st.integers(1, 1024))
def test_2d_x_opt_minimises_the_communication(d, ratio, n, b):
    f = ratio * d
    given_ = {"D": d, "F": f, "n_dev": n, "B": b, "b_x": 2, "W_ici": 9 * 10**10}
    x = value("inference.ws2d.x_opt", D=d, F=f, n_dev=n)
    comms = lambda x_: value("inference.ws2d.t_comms", **given_, X=x_)  # noqa: E731
    best = comms(x)
    assert sp.simplify(best - value("inference.ws2d.t_comms_opt", **given_)) == 0
    assert comms(x * sp.Rational(9, 10)) > best < comms(x * sp.Rational(11, 10))


@settings(max_examples=30, deadline=None)
@given(d=st.integers(256, 32768), ratio=st.integers(1, 8), axes=st.integers(1, 3))
def test_2d_beats_1d_above_the_crossover(d, ratio, axes):
    f = ratio * d
    n_star = value("inference.ws2d.min_chips", D=d, F=f, M_Y=axes)
    assert n_star == sp.Rational(2 * f * axes**2, d)
    common = {"D": d, "F": f, "B": 16, "b_x": 2, "W_ici": 9 * 10**10}
    one_d = value("inference.tp.t_comms_1d", **{k: v for k, v in common.items() if k != "F"}, M_Y=axes)
    two_d = lambda n: value("inference.ws2d.t_comms_opt", **common, n_dev=n)  # noqa: E731
    assert sp.simplify(two_d(n_star) - one_d) == 0
    assert two_d(n_star * sp.Rational(9, 10)) > one_d > two_d(n_star * sp.Rational(11, 10))


@settings(max_examples=30, deadline=None)
@given(b=st.integers(1, 1024), d=st.integers(256, 32768), bx=byte_sizes)
def test_latency_bound_degree_splits_the_activations_into_hop_sized_chunks(b, d, bx):
    ctx = Context(chip="tpu-v5e")
    y = value("inference.tp.latency_bound_degree", ctx, B=b, D=d, b_x=bx)
    assert value("inference.tp.latency_bound_bytes", ctx, Y=y) == b * d * sp.Rational(bx)
    # the latency-aware AllGather: latency wins for small messages, bandwidth for large ones
    t = value("inference.tp.t_ici_latency_aware", ctx, B=b, D=d, b_x=bx, Y=8)
    assert t == max(sp.Rational(8, 2) / 10**6, b * d * sp.Rational(bx) / (9 * 10**10))


# -- what fits: direct search ------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 64), hbm=st.integers(10**9, 10**11), p=st.integers(10**6, 10**11), bw=byte_sizes,
       s=st.integers(1, 10**5), kv=st.integers(10**3, 10**6))
def test_max_batch_is_the_largest_that_fits(n, hbm, p, bw, s, kv):
    total, weights, seq = n * hbm, p * bw, s * kv
    try:
        got = value("inference.memory.max_batch", n_dev=n, H_chip=hbm, P=p, b_w=bw, S=s, kv_token=kv)
    except NoCrossoverError:
        assert weights + seq > total      # not even one sequence fits
        return
    # direct search, no division: double until a batch no longer fits, then bisect between the last
    # batch that fits and the first that does not
    def fits(b):
        return weights + b * seq <= total

    lo, hi = 1, 2
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    assert fits(got) and not fits(got + 1)
    assert got == lo


@settings(max_examples=60, deadline=None)
@given(hbm=st.integers(10**9, 10**11), p=st.integers(10**6, 10**12), bw=byte_sizes, b=st.integers(1, 512),
       s=st.integers(1, 10**5), kv=st.integers(10**3, 10**6))
def test_min_chips_is_the_fewest_that_hold_it(hbm, p, bw, b, s, kv):
    need = p * bw + b * s * kv
    got = value("inference.memory.min_chips", H_chip=hbm, P=p, b_w=bw, B=b, S=s, kv_token=kv)
    chips = 1
    while chips * hbm < need:
        chips += 1
    assert got == chips
    alone = value("inference.memory.min_chips_weights", H_chip=hbm, P=p, b_w=bw)
    chips = 1
    while chips * hbm < p * bw:
        chips += 1
    assert alone == chips


def test_weights_that_do_not_fit_are_a_clear_error():
    with pytest.raises(NoCrossoverError, match="largest decode batch"):
        value("inference.memory.max_batch", n_dev=1, H_chip=16 * 10**9, P=70 * 10**9, b_w=1, S=8192, kv_token=10**5)
    with pytest.raises(NoCrossoverError):
        value("inference.memory.kv_budget", n_dev=1, H_chip=16 * 10**9, P=70 * 10**9, b_w=1)


# -- prefill ------------------------------------------------------------------------------------------

DENSE = [m.key for m in CATALOG if not m.is_moe and not m.is_mla and m.gated and not m.sliding_window]


@pytest.mark.parametrize("key", DENSE)
def test_prefill_flops_with_attention_equal_the_matmul_count(key):
    m = CATALOG[key]
    for prompt in (1, 512, 4096):
        got = value("inference.prefill.flops_with_attention", Context(model=key), T=prompt)
        assert got == prompt * statedict.matmul_flops_per_token(m, prompt)


def test_prefill_time_bound_is_the_larger_of_compute_and_memory():
    ctx = Context(chip="tpu-v5e", weight_dtype="int8", kv_dtype="int8", model="llama3-70b")
    for prompt in (16, 120, 121, 8192):
        t_math = Fraction(2 * 70 * 10**9 * prompt, 16 * 197 * 10**12)
        t_mem = Fraction(70 * 10**9 + prompt * 163_840, 16 * 820 * 10**9)
        got = value("inference.prefill.t_lower", ctx, P=70 * 10**9, T=prompt, n_dev=16)
        assert frac(got) == max(t_math, t_mem)


def test_attention_quantities_are_the_transformer_chapters():
    for mine, theirs in ((inf.attention_intensity, tf.attention_intensity),
                         (inf.attention_intensity_prefill, tf.attention_intensity_prefill),
                         (inf.attention_intensity_decode, tf.attention_intensity_decode),
                         (inf.attention_prefill_critical_T, tf.attention_prefill_critical_T)):
        assert mine().steps == theirs().steps


# -- serving, cost, speculative decoding -------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 512), tp=st.integers(1, 10**4), ts=st.integers(1, 10**3), g=st.integers(1, 8192))
def test_prefill_servers_keep_up_with_generate_servers(b, tp, ts, g):
    t_prefill, t_step = Fraction(tp, 1000), Fraction(ts, 10**5)
    ratio = frac(value("inference.serving.prefill_to_generate_ratio", B=b, t_prefill=str(t_prefill),
                       t_step=str(t_step), n_gen=g))
    # requests per second: what ratio·n_G prefill servers start equals what n_G generate servers finish
    assert ratio / t_prefill == Fraction(b) / (t_step * g)


def test_cost_per_million_tokens_from_the_chip_price():
    ctx = Context(chip="tpu-v5e")
    got = value("inference.cost.per_million_tokens", ctx, B=32, n_dev=8, t_step="0.017")
    tokens_per_chip_hour = Fraction(32, 8) / Fraction(17, 1000) * 3600
    assert frac(got) == 120 * Fraction(10**6) / tokens_per_chip_hour
    assert frac(value("inference.cost.flops_per_dollar", ctx)) == Fraction(197 * 10**12 * 3600 * 100, 120)


def test_a_chip_without_a_price_asks_for_one():
    with pytest.raises(BadValueError, match="price_cents_per_hour"):
        value("inference.cost.flops_per_dollar", Context(chip="tpu-v3"))


def expected_tokens_by_outcome(a: Fraction, draft: int) -> Fraction:
    """Sum over how many drafts are accepted: j < γ with probability a^j(1 − a), all γ with a^γ;
    the target adds one token either way."""
    out = sum(((j + 1) * a**j * (1 - a) for j in range(draft)), Fraction(0))
    return out + (draft + 1) * a**draft


@pytest.mark.parametrize("draft", inf.SPECULATIVE_DRAFTS)
@pytest.mark.parametrize("a", [Fraction(1, 10), Fraction(1, 2), Fraction(4, 5), Fraction(1)])
def test_speculative_speedup_sums_every_acceptance_outcome(draft, a):
    cost = Fraction(1, 20)
    got = frac(value(f"inference.speculative.speedup_draft{draft}", a_acc=str(a), r_draft=str(cost)))
    tokens = expected_tokens_by_outcome(a, draft)
    assert got == tokens / (1 + draft * cost)
    measured = frac(value("inference.speculative.speedup", n_emit=str(tokens), n_draft=draft, r_draft=str(cost)))
    assert measured == got
    if a != 1:   # the closed geometric form, with the draft length kept symbolic
        general = inf.speculative_speedup().expr.subs({sym("n_draft"): draft, sym("a_acc"): sp.Rational(a),
                                                       sym("r_draft"): sp.Rational(cost)})
        assert frac(general) == got


def test_speculative_draft_length_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        inf.speculative_speedup(0)


# -- MoE: experts a decode step touches (uniform routing) -----------------------------------------------

def _touched_by_counting(e: int, kk: int, b: int) -> Fraction:
    """A second route: the expectation summed expert by expert, P(hit) = 1 - C(E-1, k)/C(E, k) per token."""
    from math import comb

    miss_one = Fraction(comb(e - 1, kk), comb(e, kk))  # one token's k choices all avoid this expert
    return sum(1 - miss_one**b for _ in range(e))


@pytest.mark.parametrize("model,b", [("mixtral-8x7b", 1), ("mixtral-8x7b", 4), ("mixtral-8x7b", 64),
                                     ("deepseek-v3", 32), ("qwen3-235b-a22b", 16), ("gpt-oss-120b", 256)],
                         ids=["mixtral-1", "mixtral-4", "mixtral-64", "deepseek-32", "qwen3-16", "gpt-oss-256"])
def test_experts_touched_equals_counting(model, b):
    m = CATALOG[model]
    got = value("inference.moe.experts_touched", Context(model=model), B=b)
    assert frac(got) == _touched_by_counting(m.E, m.k, b)


@settings(max_examples=40, deadline=None)
@given(e=st.integers(2, 512), kk=st.integers(1, 16), b=st.integers(1, 64))
def test_experts_touched_grows_from_k_towards_e(e, kk, b):
    kk = min(kk, e)
    touched = lambda n: frac(value("inference.moe.experts_touched", E=e, k=kk, B=n))  # noqa: E731
    assert touched(1) == kk
    assert touched(b) <= touched(b + 1) <= e
