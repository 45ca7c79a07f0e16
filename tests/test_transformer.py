"""Transformer accounting, checked two ways: the closed forms against a state dict of real tensors.

``scalemath.symbolic.transformer`` writes the book's formulas; ``scalemath.catalog.statedict`` lists
every weight tensor and every matmul a token passes through, the way a framework would.
For each model of the catalog the two must agree exactly, up to the tensors the book's
closed form leaves out on purpose:

* the final norm after the last layer: D parameters (every model);
* a mixture of experts' router: E·D parameters and 2·E·D forward FLOPs per MoE layer.

Models whose layout the book's letters cannot describe (latent attention, shared experts,
leading dense layers: DeepSeek-V3) are compared with the catalog's own count instead.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath.catalog import models, statedict
from scalemath.errors import BadValueError
from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic import transformer as tf
from scalemath.symbolic.symbols import sym
from scalemath.symbolic.transformer import attention_fraction

D, F, N, K, H, L, T = (sym(n) for n in ("D", "F", "N", "K", "H", "L", "T"))
V, E, k = sym("V_vocab"), sym("E"), sym("k")

CATALOG = models.default_models()
ALL = [m.key for m in CATALOG]


def book_expressible(m) -> bool:
    """Whether the book's letters describe every tensor of ``m`` (no latent attention, no shared
    experts, no leading dense layers, and a gated MLP when it is a mixture of experts)."""
    return (not m.is_mla and not m.shared_experts and not m.dense_layers and (m.gated or not m.is_moe))


EXPRESSIBLE = [m.key for m in CATALOG if book_expressible(m)]
OUTSIDE = [m.key for m in CATALOG if not book_expressible(m)]


def params_quantity(m, active: bool = False) -> str:
    """The registered parameter count for a model's flags (gating, tied embeddings, experts)."""
    if m.is_moe:
        return f"transformer.{'active_params' if active else 'moe_params'}"
    return "transformer.params"  # gating and tying are bound from the model (n_mlp, n_emb)


def value(name, model=None, given=None, **ctx):
    return evaluate(get(name), Context(model=model, **ctx), dict(given or {})).value


def left_out(m) -> int:
    """Parameters of the state dict the closed form does not count: final norm (a position table, an embedding
    norm), routers."""
    return m.outside_layers_params() + (m.L * m.E * m.D if m.is_moe else 0)


# -- (1) the closed form equals the state dict, model by model ---------------------------------------

@pytest.mark.parametrize("key", EXPRESSIBLE)
def test_closed_form_params_equal_state_dict(key):
    m = CATALOG[key]
    name = params_quantity(m)
    given = {s.name: v for s, v in evaluate(get(name), Context(model=key)).given.items()}
    assert (given["n_mlp"], given["n_emb"]) == (3 if m.gated else 2, 1 if m.tied else 2)
    closed = value(name, key)
    assert closed.is_Integer
    assert int(closed) + left_out(m) == statedict.count_params(statedict.weight_shapes(m))


@pytest.mark.parametrize("key", [m.key for m in CATALOG if m.is_moe and book_expressible(m)])
def test_closed_form_active_params_equal_state_dict(key):
    m = CATALOG[key]
    closed = value(params_quantity(m, active=True), key)
    # every token runs the router too, so the same tensors are left out
    assert int(closed) + left_out(m) == statedict.count_params(statedict.active_shapes(m))


@pytest.mark.parametrize("key", ALL)
def test_state_dict_equals_catalog_count(key):
    # a third route: models.Model.param_count follows the book (no final norm) and counts routers
    m = CATALOG[key]
    assert statedict.count_params(statedict.weight_shapes(m)) == m.param_count() + m.outside_layers_params()
    assert statedict.count_params(statedict.active_shapes(m)) == m.param_count(active=True) + m.outside_layers_params()


@pytest.mark.parametrize("key", OUTSIDE)
def test_closed_form_does_not_pretend_for_other_layouts(key):
    # with latent attention, shared experts or dense leading layers the book's letters miss tensors
    # the registry refuses rather than answer with letters that do not describe the model
    with pytest.raises(BadValueError, match="latent attention|shared experts|dense"):
        value(params_quantity(CATALOG[key]), key)


def test_layer_parts_add_up():
    layer = tf.params_per_layer().expr
    assert sp.expand(layer - tf.mlp_params().expr - tf.attention_params().expr - tf.norm_params().expr
                     - sym("P_extra")) == 0
    assert sp.expand(tf.params().expr - L * layer - tf.embedding_params().expr) == 0


def test_moe_with_one_expert_is_dense():
    dense = tf.params().expr
    assert sp.expand(tf.params(experts="total").expr.subs(E, 1) - dense) == 0
    assert sp.expand(tf.params(experts="active").expr.subs(k, 1) - dense) == 0


# -- (2) published counts ---------------------------------------------------------------------------

# (key, published total, published active or None, rel): the published figures are rounded; the
# notes say what the catalog's fields leave out
PUBLISHED = [
    ("llama3-8b", 8.03e9, None, 0.001),
    ("llama3-70b", 70.6e9, None, 0.001),        # exact 70,553,706,496 (the book's sum of rounded terms: 70.4e9)
    ("llama3-405b", 405.8e9, None, 0.001),      # exact 405,853,388,800
    ("llama2-13b", 13.0e9, None, 0.002),        # exact 13,015,864,320
    ("gpt3-175b", 175e9, None, 0.005),          # 174.57e9: biases and learned position embeddings not in the catalog
    ("mixtral-8x7b", 46.7e9, 12.9e9, 0.002),    # exact 46,702,792,704 and 12,879,925,248
    ("deepseek-v3", 671e9, 37e9, 0.02),         # 671.03e9 and 37.55e9 (embeddings counted as active)
]


@pytest.mark.parametrize("key,total,active,rel", PUBLISHED, ids=[r[0] for r in PUBLISHED])
def test_published_parameter_counts(key, total, active, rel):
    if key not in CATALOG.models:
        pytest.skip(f"{key} is not in the catalog")
    m = CATALOG[key]
    assert statedict.count_params(statedict.weight_shapes(m)) == pytest.approx(total, rel=rel)
    if book_expressible(m):
        assert float(value(params_quantity(m), key)) == pytest.approx(total, rel=rel)
    if active is not None:
        assert statedict.count_params(statedict.active_shapes(m)) == pytest.approx(active, rel=rel)
        if book_expressible(m):
            assert float(value(params_quantity(m, active=True), key)) == pytest.approx(active, rel=rel)


# -- (3) FLOPs per token: counting every matmul's shapes equals the closed form --------------------

def flops_quantity(m, forward: bool) -> str:
    if m.is_moe:
        return f"transformer.moe_{'forward_' if forward else ''}flops_per_token"
    return f"transformer.{'forward_' if forward else ''}flops_per_token"


@pytest.mark.parametrize("key", EXPRESSIBLE)
@pytest.mark.parametrize("seq", [1, 2048, 4096])
def test_flops_per_token_equal_matmul_count(key, seq):
    m = CATALOG[key]
    if m.local_layers and seq > m.sliding_window:
        # past the window the closed form (every layer attends to all T) would count too much: refused
        with pytest.raises(BadValueError, match="keep only the last"):
            value(flops_quantity(m, forward=False), key, {"T": seq})
        return
    router = 2 * m.L * m.E * m.D if m.is_moe else 0    # the router's [1,D]·[D,E] per MoE layer
    training = value(flops_quantity(m, forward=False), key, {"T": seq})
    assert int(training) + 3 * router == statedict.training_flops_per_token(m, seq)
    if not m.is_moe:
        forward = value(flops_quantity(m, forward=True), key, {"T": seq})
        assert int(forward) == statedict.matmul_flops_per_token(m, seq)


@pytest.mark.parametrize("key", [m.key for m in CATALOG if m.local_layers and book_expressible(m)])
def test_sliding_window_layers_see_only_the_window(key):
    m = CATALOG[key]
    name = flops_quantity(m, forward=True)
    # up to the window every layer sees all T tokens: the closed form is exact
    at_window = value(name, key, {"T": m.sliding_window})
    if not m.is_moe:
        assert int(at_window) == statedict.matmul_flops_per_token(m, m.sliding_window)
    # beyond it the local layers stop growing: the closed form refuses, the model's own count does not
    with pytest.raises(BadValueError, match="keep only the last"):
        value(name, key, {"T": 4 * m.sliding_window})
    assert m.forward_flops_per_token(4 * m.sliding_window) == statedict.matmul_flops_per_token(m, 4 * m.sliding_window)


@pytest.mark.parametrize("key", [m.key for m in CATALOG if not m.is_mla])
def test_kv_cache_bytes_equal_cache_shapes(key):
    m = CATALOG[key]
    assert value("transformer.kv_cache_bytes_per_token", key, dtype="bf16") == \
        statedict.kv_cache_bytes_per_token(m, 2) == 2 * m.kv_elements_per_token()


def test_latent_attention_cache_is_the_latent():
    for m in CATALOG:
        if m.is_mla:
            assert statedict.kv_cache_bytes_per_token(m, 1) == m.L * (m.kv_lora_rank + m.qk_rope_head_dim)


def test_training_is_three_forwards():
    for experts in ("dense", "active"):
        assert sp.expand(tf.flops_per_token(experts).expr - 3 * tf.forward_flops_per_token(experts).expr) == 0
    total = tf.flops_per_token().expr
    parts = tf.matmul_flops_per_token().expr + tf.attention_flops_per_token().expr + 6 * D * V
    assert sp.expand(total - parts) == 0


def test_six_flops_per_parameter():
    # the layers' matmul FLOPs are 6 x their matmul parameters: total params minus norms and embeddings
    params = tf.params().expr.subs(sym("n_emb"), 1) - L * (2 * D + sym("P_extra")) - D * V
    assert sp.expand(tf.matmul_flops_per_token().expr - 6 * params) == 0


def test_moe_flops_scale_with_k_not_e():
    moe = tf.flops_per_token("active").expr
    assert E not in moe.free_symbols
    assert sp.expand(moe.subs(k, 1) - tf.flops_per_token().expr) == 0


# -- the book's shapes and crossovers -----------------------------------------------------------------

BOOK_SHAPE = {sym("n_mlp"): 3, F: 4 * D, K: N, H: D / N}  # the book's gated MLP


def test_book_ratio_is_t_over_8d():
    assert sp.simplify(tf.attention_to_matmul_ratio().expr.subs(BOOK_SHAPE) - T / (8 * D)) == 0
    assert tf.attention_to_matmul_ratio_book().expr == T / (8 * D)


def test_general_crossover_reduces_to_8d():
    assert sp.simplify(tf.attention_crossover_T().expr.subs(BOOK_SHAPE) - 8 * D) == 0
    assert tf.attention_crossover_T_book().expr == 8 * D


def test_projection_crossover_is_2d_for_mha():
    assert sp.simplify(tf.attention_projection_crossover_T().expr.subs(K, N) - 2 * D) == 0


def test_attention_intensity_limits():
    b_x, S = sym("b_x"), sym("S")
    ai = tf.attention_intensity().expr.subs(b_x, 2)
    G = sp.Symbol("G", positive=True)
    assert sp.simplify(ai.subs(N, G * K) - T * S * G / (T * G + S)) == 0
    assert sp.simplify(tf.attention_intensity_prefill().expr.subs(b_x, 2) - ai.subs(S, T)) == 0
    assert sp.simplify(tf.attention_intensity_decode().expr.subs(b_x, 2) - ai.subs(T, 1)) == 0
    # decoding tends to G = N/K however long the context
    assert sp.limit(tf.attention_intensity_decode().expr.subs(b_x, 2), S, sp.oo) == N / K


def test_checkpoint_policies():
    B, b_x, n_ckpt = sym("B"), sym("b_x"), sym("n_ckpt")
    general = tf.activation_bytes().expr
    for policy, (count, _) in tf.CHECKPOINT_POLICIES.items():
        assert tf.activation_bytes(policy).expr == general.subs(n_ckpt, count)
    assert tf.activation_bytes_ffw_outputs().expr == b_x * L * B * (D + 2 * F)
    assert tf.training_flops_remat().expr / tf.training_flops().expr == Fraction(8, 6)


def test_training_state_is_ten_bytes_per_param_for_bf16_and_adam():
    assert value("transformer.training_state_bytes", given={"P": 1, "b_opt": 8}, weight_dtype="bf16") == 10


def test_mfu_and_training_time_are_inverse():
    given_ = {"P": 70 * 10**9, "tokens": 15 * 10**12, "n_dev": 8960, "C": 459 * 10**12}
    t = value("parallel.training_time", given=given_ | {"MFU": Fraction(2, 5)})
    assert value("transformer.mfu", given=given_ | {"t_run": t}) == Fraction(2, 5)


# -- (5) properties -------------------------------------------------------------------------------------

sizes = st.integers(min_value=1, max_value=2**16)


@settings(max_examples=60, deadline=None)
@given(d=sizes, f=sizes, n=st.integers(1, 256), kv=st.integers(1, 256), h=st.integers(1, 512),
       n_mlp=st.sampled_from([2, 3]))
def test_attention_crossover_root_balances_and_flips(d, f, n, kv, h, n_mlp):
    values = {D: d, F: f, N: n, K: kv, H: h, sym("n_mlp"): n_mlp}
    root = tf.attention_crossover_T().at(values).value
    attn, mm = attention_fraction._attention_side(), attention_fraction._matmul_side()
    assert attn.subs(values | {T: root}) == mm.subs(values)
    for t, attention_smaller in ((root * sp.Rational(99, 100), True), (root * sp.Rational(101, 100), False)):
        assert (attn.subs(values | {T: t}) < mm.subs(values)) == attention_smaller
    # the ratio is exactly 1 at the root
    assert tf.attention_to_matmul_ratio().expr.subs(values | {T: root}) == 1


@settings(max_examples=40, deadline=None)
@given(d=sizes)
def test_book_crossover_flips_at_8d(d):
    root = tf.attention_crossover_T_book().at({D: d}).value
    assert root == 8 * d
    ratio = tf.attention_to_matmul_ratio_book().expr
    assert ratio.subs({D: d, T: root - 1}) < 1 < ratio.subs({D: d, T: root + 1})


@settings(max_examples=40, deadline=None)
@given(ai=st.integers(1, 10**4), n=st.integers(1, 128), g=st.integers(1, 16))
def test_prefill_critical_length_balances(ai, n, g):
    b_x, C, W = sym("b_x"), sym("C"), sym("W")
    values = {C: ai, W: 1, b_x: 2, N: n * g, K: n}
    root = tf.attention_prefill_critical_T().at(values).value
    assert tf.attention_intensity_prefill().expr.subs(values | {T: root}) == ai


DIMS = (D, F, N, K, H, L, V)


@settings(max_examples=60, deadline=None)
@given(vals=st.tuples(*([st.integers(1, 2**14)] * 7)), which=st.integers(0, 6),
       n_mlp=st.sampled_from([2, 3]), n_emb=st.sampled_from([1, 2]))
def test_params_are_monotone_in_every_dimension(vals, which, n_mlp, n_emb):
    values = dict(zip(DIMS, vals))
    expr = tf.params().expr.subs({sym("n_mlp"): n_mlp, sym("n_emb"): n_emb})
    bigger = values | {DIMS[which]: values[DIMS[which]] + 1}
    assert expr.subs(bigger) > expr.subs(values)
    # and symbolically: every partial derivative is a positive expression
    assert sp.diff(expr, DIMS[which]).is_positive


@settings(max_examples=30, deadline=None)
@given(c=st.integers(10**12, 10**16), w=st.integers(10**9, 10**13), e=st.integers(1, 512), kk=st.integers(1, 64),
       bw=st.sampled_from([Fraction(1, 2), 1, 2]))
def test_moe_critical_batch_balances(c, w, e, kk, bw):
    C, W, b_w, B = sym("C"), sym("W"), sym("b_w"), sym("B")
    values = {C: c, W: w, E: e, k: kk, b_w: bw}
    root = tf.moe_critical_batch().at(values).value
    steps = tf.moe_critical_batch().steps
    flops, nbytes = steps[0].expr, steps[1].expr
    at = values | {B: root, D: 7, F: 11}
    assert flops.subs(at) / nbytes.subs(at) == sp.Rational(c, w)


def test_crossover_refuses_non_positive_values():
    with pytest.raises(BadValueError, match="must be positive"):
        tf.attention_crossover_T().at({D: 0, F: 1, N: 1, K: 1, H: 1})


# -- the state dict itself --------------------------------------------------------------------------------

def test_state_dict_names_like_a_framework():
    m = CATALOG["llama3-70b"]
    shapes = statedict.weight_shapes(m)
    assert shapes["layers.0.attn.q_proj.weight"] == (8192, 8192)
    assert shapes["layers.0.attn.k_proj.weight"] == (1024, 8192)
    assert shapes["layers.79.mlp.down_proj.weight"] == (8192, 28672)
    assert shapes["lm_head.weight"] == (128256, 8192)
    assert len([n for n in shapes if n.endswith("norm.weight")]) == 2 * 80 + 1


def test_tied_model_has_no_lm_head_but_still_unembeds():
    tied = [m for m in CATALOG if m.tied]
    assert tied, "the catalog has no tied model"
    m = tied[0]
    assert "lm_head.weight" not in statedict.weight_shapes(m)
    names = [name for name, *_ in statedict.matmuls_per_token(m, 1)]
    assert names[-1] == "embed_tokens.weight"


def test_moe_state_dict_has_every_expert_and_a_router():
    moe = [m for m in CATALOG if m.is_moe and not m.dense_layers]
    if not moe:
        pytest.skip("no mixture of experts in the catalog")
    m = moe[0]
    shapes = statedict.weight_shapes(m)
    assert shapes["layers.0.moe.router.weight"] == (m.E, m.D)
    assert f"layers.0.moe.experts.{m.E - 1}.down_proj.weight" in shapes
    active = statedict.active_shapes(m)
    assert f"layers.0.moe.experts.{m.k}.down_proj.weight" not in active
    assert f"layers.0.moe.experts.{m.k - 1}.down_proj.weight" in active
