"""Serving a transformer (book parts 7 and 8, inference.md and applied-inference.md).

Inference has two phases. **Prefill** runs the whole prompt of T tokens at once, like a
training forward pass, and writes the keys and values into the KV cache. **Decode** (the
book's "generation") then makes one token per sequence per step: a step with a batch of
B sequences reads every weight once, reads each sequence's cache of S tokens, and does
2·B·P_active FLOPs. The book's model of a decode step on n chips (weights and cache fully
sharded):

    T_step = B·S·KV_tok/(n·W)  +  max(2·B·P_active/(n·C), P·b_w/(n·W))

The first term is attention, always bandwidth-bound (each sequence brings its own cache,
so batching cannot amortise it); the second is the linear layers, which turn compute-bound
above the critical batch ``C·b_w/(2·W)`` (240 for bf16 on a TPU v5e) for a dense model, and
``P/P_active`` times later for a mixture of experts, which loads every expert but computes
with the k its tokens are routed to.

Conventions:

* ``B`` is the decode batch: sequences in flight, one token each per step (the engine's
  token batch). ``S`` is the context each sequence attends to, ``T`` a prompt's length.
* ``P`` is the parameter count and ``P_active`` the parameters one token goes through (the
  same for a dense model: without ``--model``, ``P_active`` takes ``P``'s value), ``b_w`` bytes per weight (``--weight-dtype``), ``b_kv``
  bytes per cache element and ``kv_token`` the cache bytes one token adds over all layers:
  ``inference.kv_cache.bytes_per_token`` derives it for standard attention, and the engine
  binds it from ``--model`` (latent attention included) and the cache dtype.
* ``C`` is the chip's rate in the compute dtype (``--dtype``), ``W`` the HBM bandwidth
  (``--level``), ``n_dev`` the chips serving one model replica, ``Y`` its tensor-parallel
  degree.
* Quantities downstream of the step time (queries per second, cost, the prefill:generate
  server ratio) take ``t_step`` as an input, so any step model (this one, the full-HBM
  bound, a measurement) can feed them.

>>> decode_step_time().expr
B*S*kv_token/(W*n_dev) + Max(2*B*P_active/(C*n_dev), P*b_w/(W*n_dev))
>>> decode_critical_batch().expr
C*b_w/(2*W)
>>> kv_cache_bytes_per_token().expr
2*H*K*L*b_kv
"""

from __future__ import annotations

import functools

import sympy as sp

from . import collectives as coll
from . import parallelism as par
from . import transformer as tf
from .derivation import Derivation, Step, crossover, simplest
from .symbols import sym

__all__ = [
    "kv_cache_bytes_per_token", "kv_cache_bytes_per_sequence", "kv_cache_bytes_per_batch", "kv_cache_bytes_per_chip",
    "kv_budget", "max_batch", "min_chips", "min_chips_weights",
    "decode_flops", "decode_bytes", "decode_t_math", "decode_t_weights", "decode_t_kv", "decode_step_time",
    "decode_step_time_memory_bound", "decode_step_time_full_hbm", "decode_token_latency", "decode_throughput",
    "decode_throughput_per_chip", "decode_throughput_memory_bound", "decode_critical_batch",
    "decode_critical_batch_moe", "decode_kv_weights_batch", "decode_kv_math_context", "generation_time",
    "queries_per_s_per_chip",
    "prefill_flops", "prefill_flops_with_attention", "prefill_bytes", "prefill_t_math", "prefill_t_lower",
    "prefill_time", "prefill_critical_tokens", "prefill_activation_bytes",
    "attention_intensity", "attention_intensity_prefill", "attention_intensity_decode",
    "attention_prefill_critical_T",
    "tp_t_math", "tp_t_weights", "tp_t_ici", "tp_t_ici_latency_aware", "tp_max_degree_memory_bound",
    "tp_max_degree_compute_bound", "tp_t_comms_1d", "tp_latency_bound_bytes", "tp_latency_bound_degree",
    "ws2d_t_math", "ws2d_t_comms", "ws2d_x_opt", "ws2d_t_comms_opt", "ws2d_min_chips",
    "prefill_to_generate_ratio", "tokens_freed_per_step", "cost_per_million_tokens", "flops_per_dollar",
    "speculative_speedup", "speculative_speedup_measured", "SPECULATIVE_DRAFTS",
]

LINEAR = "inference.md, 'Linear operations: what bottlenecks us?'"
ATTENTION = "inference.md, 'What about attention?'"
ESTIMATES = "inference.md, 'Theoretical estimates for LLM latency and throughput'"
MEMORY = "inference.md, 'What about memory?'"
GENERATION = "inference.md, 'Distributing Inference Over Multiple Accelerators': 'Generation'"
KV_SHARDING = "inference.md, 'Sharding the KV cache'"
PROBLEMS = "inference.md, 'Worked Problems'"
APPENDIX_B = "inference.md, 'Appendix B: 2D Weight Stationary sharding' and Worked Problem 7"
APPENDIX_C = "inference.md, 'Appendix C: Latency bound communications'"
APPENDIX_D = "inference.md, 'Appendix D: Speculative Sampling'"
STORY = "applied-inference.md, 'What's the LLaMA Serving Story?'"
THROUGHPUT = "applied-inference.md, 'Thinking about throughput'"
PREFILL = "applied-inference.md, 'What about prefill?'"
PARETO = "applied-inference.md, 'Visualizing the Latency Throughput Tradeoff'"
MOE_SERVING = "transformers.md, 'Sparsity and Mixture-of-Experts'"

#: Draft lengths with a registered speculative-decoding speed-up (the symbolic length is refused
#: by the unit checker, which accepts only numeric exponents).
SPECULATIVE_DRAFTS = tuple(range(1, 9))

_NOT_IN_BOOK = "Not printed in the book: it follows from the book's step-time model."

B, S, T = sym("B"), sym("S"), sym("T")
D, F, K, H, L = sym("D"), sym("F"), sym("K"), sym("H"), sym("L")
P, P_act, C, W, n = sym("P"), sym("P_active"), sym("C"), sym("W"), sym("n_dev")
W_ici, W_link, t_hop = sym("W_ici"), sym("W_link"), sym("t_hop")
b_w, b_x, b_kv, kv = sym("b_w"), sym("b_x"), sym("b_kv"), sym("kv_token")
H_chip, MFU = sym("H_chip"), sym("MFU")
X, Y, M_Y = sym("X"), sym("Y"), sym("M_Y")
G, t_step, t_prefill = sym("n_gen"), sym("t_step"), sym("t_prefill")
price, t_hour = sym("price"), sym("t_hour")
alpha, gamma, c_draft, tau = sym("a_acc"), sym("n_draft"), sym("r_draft"), sym("n_emit")

KV_TOK = r"\mathrm{KV}_{\mathrm{tok}}"
T_MATH, T_W, T_KV = r"T_{\mathrm{math}}", r"T_{\mathrm{weights}}", r"T_{\mathrm{KV}}"
T_STEP = r"T_{\mathrm{step}}"


# -- the KV cache ---------------------------------------------------------------------------------

def _kv_token_step() -> Step:
    """The transformer chapter's 2·L·K·H per token, in the cache's own dtype."""
    per_token = tf.kv_cache_bytes_per_token().result
    return Step(KV_TOK, per_token.expr.subs(b_x, b_kv),
                "a key and a value of K heads × H per layer, in the cache's dtype (bf16 2, int8/fp8 1, int4 1/2); "
                "K = N is MHA, 1 < K < N GQA, K = 1 MQA", "byte")


@functools.cache
def kv_cache_bytes_per_token() -> Derivation:
    return Derivation("KV cache bytes per token", (_kv_token_step(),), MEMORY)


@functools.cache
def kv_cache_bytes_per_sequence() -> Derivation:
    tok = _kv_token_step()
    return Derivation("KV cache bytes of one sequence with S cached tokens", (tok, Step(
        r"\mathrm{KV}_{\mathrm{seq}}", S * tok.expr, "S cached tokens: cache[2, L, S, K, H]", "byte")), MEMORY)


@functools.cache
def kv_cache_bytes_per_batch() -> Derivation:
    seq = kv_cache_bytes_per_sequence()
    return seq.extend(Step(r"\mathrm{KV}_{\mathrm{batch}}", B * seq.expr,
                           "B sequences, each with its own cache (nothing is shared between them)", "byte"),
                      title="KV cache bytes of a decode batch of B sequences with S cached tokens each")


@functools.cache
def kv_cache_bytes_per_chip() -> Derivation:
    return Derivation("KV cache bytes per chip, the cache sharded over every chip", (
        Step(r"\mathrm{KV}_{\mathrm{batch}}", B * S * kv, "B sequences of S cached tokens", "byte"),
        Step(r"\mathrm{KV}_{\mathrm{chip}}", B * S * kv / n,
             "sharded over KV heads first, then over the batch (KV[2, B_Z, S, K_Y, H]), never replicated", "byte"),
    ), KV_SHARDING)


# -- memory: what fits ------------------------------------------------------------------------------

def _budget_steps() -> tuple[Step, ...]:
    total = Step(r"M_{\mathrm{total}}", n * H_chip, "the HBM of the n chips", "byte")
    weights = Step(r"\mathrm{bytes}_{\mathrm{w}}", P * b_w, "one copy of the weights: no gradients or optimizer "
                   "state in inference", "byte")
    left = Step(r"M_{\mathrm{KV}}", total.expr - weights.expr,
                "what is left for the KV cache (activations and working memory ignored, as in the book)", "byte")
    return total, weights, left


@functools.cache
def kv_budget() -> Derivation:
    return Derivation("HBM left for the KV cache after the weights", _budget_steps(), THROUGHPUT, positive=True)


@functools.cache
def max_batch() -> Derivation:
    """The book's B_max = floor((n·HBM − P·b_w)/(S·KV_tok)): whole sequences of context S."""
    total, weights, left = _budget_steps()
    seq = Step(r"\mathrm{KV}_{\mathrm{seq}}", S * kv, "the cache of one sequence of S tokens", "byte")
    return Derivation("largest decode batch whose KV caches fit in HBM", (
        total, weights, left, seq,
        Step(r"B_{\max}", sp.floor(left.expr / seq.expr), "whole caches that fit in what is left", "token"),
    ), PROBLEMS, positive=True)


@functools.cache
def min_chips() -> Derivation:
    weights = Step(r"\mathrm{bytes}_{\mathrm{w}}", P * b_w, "one copy of the weights", "byte")
    cache = Step(r"\mathrm{KV}_{\mathrm{batch}}", B * S * kv, "B caches of S tokens", "byte")
    raw = Step(r"n_{\mathrm{raw}}", (weights.expr + cache.expr) / H_chip, "bytes over one chip's HBM", "chip")
    return Derivation("fewest chips whose HBM holds the weights and a batch's KV caches", (
        weights, cache, raw, Step(r"n_{\min}", sp.ceiling(raw.expr), "whole chips; then round up to a topology",
                                  "chip")), STORY)


@functools.cache
def min_chips_weights() -> Derivation:
    weights = Step(r"\mathrm{bytes}_{\mathrm{w}}", P * b_w, "one copy of the weights", "byte")
    raw = Step(r"n_{\mathrm{raw}}", weights.expr / H_chip, "bytes over one chip's HBM (the KV cache neglected)",
               "chip")
    return Derivation("fewest chips whose HBM holds the weights alone", (
        weights, raw, Step(r"n_{\min}", sp.ceiling(raw.expr), "whole chips; then round up to a topology", "chip"),
    ), THROUGHPUT)


# -- decode: the components of a step ---------------------------------------------------------------

def _decode_flops() -> Step:
    return Step(r"\mathrm{FLOPs}", 2 * B * P_act,
                "each of the B new tokens goes through every active parameter (all of them for a dense model, "
                "k of E experts for a mixture): a multiply and an add (attention's dot products are left out, "
                "as in the book)", "FLOP")


def _weight_bytes() -> Step:
    return Step(r"\mathrm{bytes}_{\mathrm{w}}", P * b_w, "every weight is read once per step, whatever the batch",
                "byte")


def _kv_bytes() -> Step:
    return Step(r"\mathrm{bytes}_{\mathrm{KV}}", B * S * kv, "each of the B sequences reads its own S cached tokens",
                "byte")


def _t_math() -> Step:
    return Step(T_MATH, 2 * B * P_act / (n * C), "the FLOPs over the n chips' peak", "s")


def _t_weights() -> Step:
    return Step(T_W, P * b_w / (n * W), "the weights are sharded over the n chips; each reads its share at W", "s")


def _t_kv() -> Step:
    return Step(T_KV, B * S * kv / (n * W), "the cache is sharded over the n chips too; each reads its share at W",
                "s")


def _step_time() -> Step:
    return Step(T_STEP, _t_kv().expr + sp.Max(_t_math().expr, _t_weights().expr),
                "attention only loads its cache (it never reaches the FLOPs roofline); the linear layers take the "
                "larger of their compute and their weight loading", "s")


def _decode_steps() -> tuple[Step, ...]:
    return (_decode_flops(), _weight_bytes(), _kv_bytes(), _t_math(), _t_weights(), _t_kv(), _step_time())


@functools.cache
def decode_flops() -> Derivation:
    return Derivation("FLOPs of one decode step", (_decode_flops(),), ESTIMATES)


@functools.cache
def decode_bytes() -> Derivation:
    w, c = _weight_bytes(), _kv_bytes()
    return Derivation("HBM bytes read by one decode step", (
        w, c, Step(r"\mathrm{bytes}", w.expr + c.expr, "weights plus every sequence's cache", "byte")), ESTIMATES)


@functools.cache
def decode_t_math() -> Derivation:
    return Derivation("decode step: compute time of the linear layers", (_decode_flops(), _t_math()), ESTIMATES)


@functools.cache
def decode_t_weights() -> Derivation:
    return Derivation("decode step: time to load the weights", (_weight_bytes(), _t_weights()), ESTIMATES)


@functools.cache
def decode_t_kv() -> Derivation:
    return Derivation("decode step: time to load the KV cache", (_kv_bytes(), _t_kv()), ESTIMATES)


@functools.cache
def decode_step_time() -> Derivation:
    """The book's general step time: KV loading plus the larger of weight loading and compute."""
    return Derivation("decode step time", _decode_steps(), ESTIMATES)


@functools.cache
def decode_step_time_memory_bound() -> Derivation:
    w, c = _weight_bytes(), _kv_bytes()
    return Derivation("decode step time at small batch (memory-bound everywhere)", (w, c, Step(
        T_STEP, (w.expr + c.expr) / (n * W), "every byte of weights and cache read once at n·W", "s")), ESTIMATES)


@functools.cache
def decode_step_time_full_hbm() -> Derivation:
    return Derivation("decode step time when the batch fills HBM", (
        Step(r"\mathrm{bytes}_{\mathrm{chip}}", H_chip,
             "weights and caches fill each chip's HBM, and a step reads all of it", "byte"),
        Step(T_STEP, H_chip / W, "one chip's HBM over its bandwidth, whatever the dtype or the chip count", "s"),
    ), THROUGHPUT)


@functools.cache
def decode_token_latency() -> Derivation:
    return decode_step_time().extend(Step(
        r"T_{\mathrm{token}}", _step_time().expr, "each sequence gets one new token per step", "s"),
        title="latency per generated token (decode)", source=ESTIMATES)


@functools.cache
def decode_throughput() -> Derivation:
    return decode_step_time().extend(Step(
        r"\mathrm{tokens/s}", B / _step_time().expr, "B tokens per step, over all n chips", "token/s"),
        title="decode throughput of one replica", source=ESTIMATES)


@functools.cache
def decode_throughput_per_chip() -> Derivation:
    return decode_step_time().extend(Step(
        r"\mathrm{tokens/s/chip}", B / (n * _step_time().expr), "B tokens per step, shared by the n chips",
        "token/s"), title="decode throughput per chip", source=ESTIMATES)


@functools.cache
def decode_throughput_memory_bound() -> Derivation:
    step = decode_step_time_memory_bound()
    return step.extend(Step(r"\mathrm{tokens/s}", simplest(B / step.expr),
                            "B tokens per memory-bound step: it rises with B until the caches dominate the bytes",
                            "token/s"), title="decode throughput at small batch (memory-bound everywhere)")


def _dense(step: Step) -> Step:
    """``step`` for a dense model, whose tokens go through every parameter (P_active = P)."""
    return Step(step.label, step.expr.subs(P_act, P), step.why.replace("every active parameter", "every parameter"),
                step.unit)


@functools.cache
def decode_critical_batch() -> Derivation:
    """Where a dense model's linear layers' compute equals their weight loading: C·b_w/(2W).

    C is the rate of the compute dtype and b_w the weights' bytes: 240 for bf16 on a v5e, 120 with
    int8 weights and bf16 FLOPs, 240 again with int8 FLOPs (the rate doubles), 60 with int4 weights.
    A mixture of experts has its own threshold (:func:`decode_critical_batch_moe`).
    """
    return crossover(_dense(_t_math()).expr, _t_weights().expr, B,
                     title="decode batch at which a dense model's linear layers become compute-bound",
                     source=LINEAR, lhs_label=T_MATH, rhs_label=T_W, side_unit="s", label=r"B_{\mathrm{crit}}",
                     unit="token", why="2BP/C = P·b_w/W: the parameter count and the chips cancel, leaving C·b_w/(2W)",
                     lead=(_dense(_decode_flops()), _weight_bytes()))


@functools.cache
def decode_critical_batch_moe() -> Derivation:
    """The transformer chapter's MoE threshold: the dense one times E/k (every expert loaded)."""
    moe = tf.moe_critical_batch()
    return Derivation("decode batch at which a mixture-of-experts layer becomes compute-bound", moe.steps,
                      PROBLEMS, positive=True)


@functools.cache
def moe_experts_touched() -> Derivation:
    """Distinct experts a decode batch of B tokens reaches in one MoE layer, each token routing to k of E.

    Assumes routing uniform and independent across tokens (real routers are balanced by an auxiliary
    loss, so this is the expectation under that idealisation): an expert is missed by one token with
    probability 1 - k/E, by all B with (1 - k/E)^B.
    """
    E, k = sym("E"), sym("k")
    missed = Step(r"p_{\mathrm{miss}}", (1 - k / E) ** B,
                  "chance that none of the B tokens routes to a given expert (uniform, independent routing)", "1")
    return Derivation("experts one decode step loads from an MoE layer (expected, uniform routing)", (
        missed, Step(r"E_{\mathrm{touched}}", E * (1 - missed.expr),
                     "expected distinct experts: E times the chance an expert is hit; k at B = 1, close to E for "
                     "B >> E/k", "expert")), MOE_SERVING, False,
        _NOT_IN_BOOK + " The book assumes every expert is loaded; this is the expectation under uniform routing.")


@functools.cache
def moe_weight_bytes_loaded() -> Derivation:
    """Bytes a decode step reads from the expert weights of one MoE layer: the experts touched."""
    E, F, D = sym("E"), sym("F"), sym("D")
    touched = moe_experts_touched()
    per_expert = Step(r"\mathrm{bytes}_{\mathrm{expert}}", sym("n_mlp") * D * F * b_w,
                      "one expert's n_mlp matrices of D·F weights", "byte")
    return touched.extend(per_expert, Step(r"\mathrm{bytes}_{\mathrm{experts}}", touched.expr * per_expert.expr,
                                          "only the experts some token was routed to are read", "byte"),
                          title="expert weight bytes one decode step reads from an MoE layer (uniform routing)")


@functools.cache
def decode_kv_weights_batch() -> Derivation:
    d = crossover(_t_kv().expr, _t_weights().expr, B, title="decode batch at which loading the caches costs as much "
                  "as loading the weights", source=ESTIMATES, lhs_label=T_KV, rhs_label=T_W, side_unit="s",
                  label=r"B_{\mathrm{KV}}", unit="token",
                  why="B·S·KV_tok = P·b_w; past it extra batch buys less and less throughput",
                  lead=(_weight_bytes(), _kv_bytes()))
    return Derivation(d.title, d.steps, d.source, True, _NOT_IN_BOOK)


@functools.cache
def decode_kv_math_context() -> Derivation:
    d = crossover(_t_kv().expr, _t_math().expr, S, title="context length at which loading the caches takes as long "
                  "as the linear layers' compute", source=PARETO, lhs_label=T_KV, rhs_label=T_MATH, side_unit="s",
                  label=r"S^*", unit="token",
                  why="S·KV_tok/W = 2·P_active/C: the batch cancels; longer contexts are dominated by KV loading",
                  lead=(_decode_flops(), _kv_bytes()))
    return Derivation(d.title, d.steps, d.source, True, _NOT_IN_BOOK)


@functools.cache
def generation_time() -> Derivation:
    return Derivation("time to generate a response of G tokens", (
        Step(r"T_{\mathrm{gen}}", G * t_step, "one token per step: G steps", "s"),), THROUGHPUT)


@functools.cache
def queries_per_s_per_chip() -> Derivation:
    return Derivation("requests served per second per chip", (
        Step(r"T_{\mathrm{gen}}", G * t_step, "each request stays in the batch for G steps", "s"),
        Step(r"\mathrm{QPS}/\mathrm{chip}", B / (G * t_step * n),
             "B requests finish every G steps, over n chips (the book expects about half in practice)", "1/s"),
    ), THROUGHPUT)


# -- prefill --------------------------------------------------------------------------------------

def _prefill_flops() -> Step:
    return Step(r"\mathrm{FLOPs}", 2 * P_act * T,
                "T prompt tokens through every active parameter (attention's dot products left out, as in the "
                "book)", "FLOP")


def _prefill_t_math() -> Step:
    return Step(T_MATH, 2 * P_act * T / (n * C), "the FLOPs over the n chips' peak", "s")


@functools.cache
def prefill_flops() -> Derivation:
    return Derivation("FLOPs of prefilling a prompt of T tokens", (_prefill_flops(),), PROBLEMS)


@functools.cache
def prefill_flops_with_attention() -> Derivation:
    """T times the transformer chapter's forward FLOPs per token (each token attends to all T positions)."""
    fwd = tf.forward_flops_per_token()
    return fwd.extend(Step(r"\mathrm{FLOPs}_{\mathrm{prefill}}", T * fwd.expr,
                           "T tokens, each attending to all T positions (a causal mask would halve the attention "
                           "term; the transformer chapter counts it whole)", "FLOP"),
                      title="FLOPs of prefilling a prompt of T tokens, attention included", source=PROBLEMS)


@functools.cache
def prefill_bytes() -> Derivation:
    w = _weight_bytes()
    cache = Step(r"\mathrm{bytes}_{\mathrm{KV}}", T * kv, "the T new keys and values written to the cache", "byte")
    return Derivation("HBM bytes of prefilling a prompt of T tokens", (
        w, cache, Step(r"\mathrm{bytes}", w.expr + cache.expr, "weights read once, cache written once", "byte")),
        ESTIMATES)


@functools.cache
def prefill_t_math() -> Derivation:
    return Derivation("prefill: compute time", (_prefill_flops(), _prefill_t_math()), PREFILL)


@functools.cache
def prefill_t_lower() -> Derivation:
    nbytes = prefill_bytes().result
    t_mem = Step(r"T_{\mathrm{mem}}", nbytes.expr / (n * W), "the bytes over the n chips' bandwidth", "s")
    return Derivation("prefill time, lower bound", (
        _prefill_flops(), nbytes, _prefill_t_math(), t_mem,
        Step(r"T_{\mathrm{prefill}}", sp.Max(_prefill_t_math().expr, t_mem.expr),
             "compute and memory overlap perfectly: the larger one sets the time", "s")), ESTIMATES)


@functools.cache
def prefill_time() -> Derivation:
    return Derivation("prefill time (time to first token) at a given FLOPs utilisation", (
        _prefill_flops(),
        Step(r"T_{\mathrm{prefill}}", 2 * P_act * T / (n * C * MFU),
             "prefill is compute-bound: the FLOPs over the achieved FLOPs/s of n chips", "s")), PREFILL)


@functools.cache
def prefill_critical_tokens() -> Derivation:
    return crossover(_dense(_prefill_t_math()).expr, _t_weights().expr, T,
                     title="prompt length above which a dense model's prefill is compute-bound", source=LINEAR,
                     lhs_label=T_MATH, rhs_label=T_W, side_unit="s", label=r"T_{\mathrm{crit}}", unit="token",
                     why="the prompt is prefill's token batch: the same C·b_w/(2W) as decode's critical batch",
                     lead=(_dense(_prefill_flops()), _weight_bytes()))


@functools.cache
def prefill_activation_bytes() -> Derivation:
    return Derivation("bytes of one residual-stream activation of a prefill", (
        Step(r"\mathrm{bytes}_{\mathrm{act}}", b_x * T * D, "one [T, D] activation: small next to the KV cache",
             "byte"),), MEMORY)


# -- attention (the transformer chapter's intensities, named for serving) ----------------------------

def _renamed(d: Derivation, title: str, source: str) -> Derivation:
    return Derivation(title, d.steps, source, d.positive, d.note)


@functools.cache
def attention_intensity() -> Derivation:
    return _renamed(tf.attention_intensity(), "arithmetic intensity of attention: T queries against S cached "
                    "tokens", ATTENTION)


@functools.cache
def attention_intensity_prefill() -> Derivation:
    return _renamed(tf.attention_intensity_prefill(), "arithmetic intensity of attention in prefill (S = T)",
                    ATTENTION)


@functools.cache
def attention_intensity_decode() -> Derivation:
    return _renamed(tf.attention_intensity_decode(), "arithmetic intensity of attention in decode (T = 1): about 1 "
                    "for MHA, about N/K with GQA, whatever the batch", ATTENTION)


@functools.cache
def attention_prefill_critical_T() -> Derivation:
    return _renamed(tf.attention_prefill_critical_T(), "prompt length above which prefill attention is "
                    "compute-bound", ATTENTION)


# -- model parallelism for decode --------------------------------------------------------------------

def _tp_math() -> Step:
    return Step(T_MATH, 2 * B * D * F / (Y * C), "one [B, D]·[D, F/Y] matmul on each of the Y chips", "s")


def _tp_weights() -> Step:
    return Step(r"T_{\mathrm{HBM}}", b_w * D * F / (Y * W), "each chip reads its [D, F/Y] slice of the weight", "s")


def _tp_ici() -> Step:
    gather = coll.all_gather_time_approx().expr.subs(coll.V, b_x * B * D)
    return Step(r"T_{\mathrm{ICI}}", gather,
                "one AllGather (or ReduceScatter) of the [B, D] activations, at the ring's bandwidth-bound cost", "s")


@functools.cache
def tp_t_math() -> Derivation:
    return Derivation("tensor-parallel decode: compute time of one sharded matmul", (_tp_math(),), THROUGHPUT)


@functools.cache
def tp_t_weights() -> Derivation:
    return Derivation("tensor-parallel decode: weight-loading time of one sharded matmul", (_tp_weights(),),
                      GENERATION)


@functools.cache
def tp_t_ici() -> Derivation:
    return Derivation("tensor-parallel decode: activation collective time of one sharded matmul", (_tp_ici(),),
                      GENERATION)


@functools.cache
def tp_t_ici_latency_aware() -> Derivation:
    base = coll.all_gather_latency_aware()
    subs = {coll.V: b_x * B * D, coll.N: Y}
    steps = tuple(Step(s.label, s.expr.subs(subs), s.why, s.unit) for s in base.steps)
    return Derivation("tensor-parallel decode: activation AllGather over Y chips, with hop latency",
                      (Step(r"V", b_x * B * D, "the [B, D] activations gathered", "byte"),) + steps, APPENDIX_C)


@functools.cache
def tp_max_degree_memory_bound() -> Derivation:
    return crossover(_tp_weights().expr, _tp_ici().expr, Y,
                     title="tensor-parallel decode at small batch: largest degree before ICI outlasts weight loading",
                     source=GENERATION, lhs_label=r"T_{\mathrm{HBM}}", rhs_label=r"T_{\mathrm{ICI}}", side_unit="s",
                     label=r"Y_{\max}", unit="chip",
                     why="b_w·DF/(Y·W) = b_x·BD/W_ici: Y = F/(B·β) with β = W/W_ici and bf16 throughout")


@functools.cache
def tp_max_degree_compute_bound() -> Derivation:
    """The training chapter's tensor-parallel limit, which the book reuses for decode at large batch."""
    d = par.tp_max_degree()
    return Derivation("tensor-parallel decode at large batch: largest degree that stays compute-bound", d.steps,
                      GENERATION, positive=True)


@functools.cache
def tp_t_comms_1d() -> Derivation:
    one = coll.all_gather_time_multi_axis().expr.subs({coll.V: b_x * B * D, coll.N_axes: M_Y})
    return Derivation("1D weight-stationary (Megatron) decode: activation collectives per MLP", (
        Step(r"T_{\mathrm{AG}}", one, "AllGather the [B, D] activations before W_in, over the M_Y axes at once", "s"),
        Step(r"T_{\mathrm{1D}}", 2 * one, "and ReduceScatter them after W_out: 4BD/(3·W_ici) in bf16 over 3 axes",
             "s"),
    ), APPENDIX_B)


def _latency_chunk() -> Step:
    return coll.latency_threshold().result


@functools.cache
def tp_latency_bound_bytes() -> Derivation:
    chunk = _latency_chunk()
    return Derivation("activation bytes below which a Y-way collective is latency-bound", (
        chunk, Step(r"\mathrm{bytes}^*", Y * chunk.expr,
                    "the buffer is split Y ways; each shard below W_link·t_hop waits on the hop latency", "byte"),
    ), APPENDIX_C)


@functools.cache
def tp_latency_bound_degree() -> Derivation:
    return crossover(b_x * B * D / Y, _latency_chunk().expr, Y,
                     title="tensor-parallel degree above which the activation collectives are latency-bound",
                     source=APPENDIX_C, lhs_label=r"\mathrm{shard}", rhs_label=r"\mathrm{bytes}^*_{\mathrm{hop}}",
                     side_unit="byte", label=r"Y_{\mathrm{lat}}", unit="chip",
                     why="b_x·BD/Y = W_link·t_hop: in int8 on a v5e, Y > BD/45,000")


# -- 2D weight-stationary sharding (Appendix B, Worked Problem 7) ------------------------------------

def _ws2d_terms() -> tuple[sp.Expr, sp.Expr]:
    return (b_x * B * D / (X * W_ici), 2 * b_x * B * F * X / (n * W_ici))


@functools.cache
def ws2d_t_math() -> Derivation:
    return Derivation("2D weight-stationary decode: compute time per MLP", (Step(
        T_MATH, 4 * B * D * F / (n * C), "two [B, D]·[D, F] matmuls split over all n = X·YZ chips", "s"),),
        APPENDIX_B)


def _ws2d_comms_steps() -> tuple[Step, ...]:
    d_term, f_term = _ws2d_terms()
    return (
        Step(r"YZ", n / X, "the chips not on X: the weights are split over D along X and over F along YZ", "chip"),
        Step(r"T_{D}", d_term, "collectives of the [B, D] activations, of which each chip keeps a 1/X share", "s"),
        Step(r"T_{F}", f_term, "two collectives of the [B, F] hidden activations split YZ ways", "s"),
        Step(r"T_{\mathrm{2D}}", d_term + f_term, "both, one after the other (the book's count)", "s"),
    )


@functools.cache
def ws2d_t_comms() -> Derivation:
    return Derivation("2D weight-stationary decode: activation collectives per MLP", _ws2d_comms_steps(), APPENDIX_B)


@functools.cache
def ws2d_x_opt() -> Derivation:
    d_term, f_term = _ws2d_terms()
    d = crossover(d_term, f_term, X, title="2D weight-stationary decode: the X that minimises communication",
                  source=APPENDIX_B, lhs_label=r"T_{D}", rhs_label=r"T_{F}", side_unit="s", label=r"X^*",
                  unit="chip", why="one term falls with X and the other grows: their sum is least where they are "
                  "equal, X = sqrt(n/8) for F = 4D")
    return Derivation(d.title, d.steps, d.source, True, _NOT_IN_BOOK + " (the optimum in general F)")


@functools.cache
def ws2d_t_comms_opt() -> Derivation:
    x_opt = ws2d_x_opt().result
    total = simplest((_ws2d_terms()[0] + _ws2d_terms()[1]).subs(X, x_opt.expr))
    return Derivation("2D weight-stationary decode: least activation-collective time per MLP", (
        x_opt, Step(r"T_{\mathrm{2D}}^*", total,
                    "both terms at the best X: sqrt(128)·BD/(sqrt(n)·W_ici) in bf16 with F = 4D", "s")), APPENDIX_B)


@functools.cache
def ws2d_min_chips() -> Derivation:
    best, one_d = ws2d_t_comms_opt().result, tp_t_comms_1d().result
    return crossover(best.expr, one_d.expr, n,
                     title="chip count above which 2D weight-stationary sharding communicates less than 1D",
                     source=APPENDIX_B, lhs_label=r"T_{\mathrm{2D}}^*", rhs_label=r"T_{\mathrm{1D}}", side_unit="s",
                     label=r"n^*", unit="chip",
                     why="2D falls as 1/sqrt(n), 1D does not: n = 2·F·M_Y²/D, 72 chips for F = 4D over 3 axes")


# -- serving: prefill and generate servers, cost ------------------------------------------------------

@functools.cache
def prefill_to_generate_ratio() -> Derivation:
    prefill_rate = Step(r"r_{\mathrm{P}}", 1 / t_prefill, "requests one prefill server finishes per second", "1/s")
    generate_rate = Step(r"r_{\mathrm{G}}", B / (t_step * G),
                         "requests one generate server finishes per second: B slots, G steps each", "1/s")
    return Derivation("prefill servers per generate server (disaggregated serving)", (
        prefill_rate, generate_rate,
        Step(r"n_{\mathrm{P}}/n_{\mathrm{G}}", generate_rate.expr / prefill_rate.expr,
             "prefill must keep up with the requests the generate servers finish", "1"),
    ), PREFILL)


@functools.cache
def tokens_freed_per_step() -> Derivation:
    return Derivation("KV-cache tokens freed per decode step (continuous batching)", (
        Step(r"\mathrm{done}", B / G, "each slot finishes a request every G steps: B/G requests per step", "1"),
        Step(r"\mathrm{tokens}", B * (T + G) / G, "each finished request frees its T prompt and G generated tokens",
             "token"),
    ), PREFILL)


@functools.cache
def cost_per_million_tokens() -> Derivation:
    rate = Step(r"\mathrm{tokens/s/chip}", B / (n * t_step), "B tokens per step over n chips", "token/s")
    per_token = Step(r"\mathrm{cost}_{\mathrm{token}}", price / (t_hour * rate.expr),
                     "a chip-hour's price over the tokens one chip makes in an hour", "cent")
    d = Derivation("cost per million generated tokens, in cents", (rate, per_token, Step(
        r"\mathrm{cost}_{10^6}", 10**6 * per_token.expr, "a million tokens", "cent")), STORY)
    return Derivation(d.title, d.steps, d.source, False,
                      "The book says only that throughput per chip maps directly to cost per token.")


@functools.cache
def flops_per_dollar() -> Derivation:
    hour = Step(r"\mathrm{FLOPs}_{\mathrm{hour}}", C * t_hour, "peak FLOPs of one chip over an hour", "FLOP")
    return Derivation("peak FLOPs one dollar buys", (hour, Step(
        r"\mathrm{FLOPs}/\$", 100 * hour.expr / price, "per chip-hour price in cents, 100 cents to the dollar",
        "FLOP")), STORY)


# -- speculative decoding (Appendix D) -----------------------------------------------------------------

def _round_step(draft: sp.Expr) -> Step:
    return Step(r"T_{\mathrm{round}}/T_{\mathrm{step}}", 1 + draft * c_draft,
                "γ draft steps of relative cost c, then one target pass over the γ + 1 positions, which costs "
                "about one ordinary step because decoding is memory-bound", "1")


@functools.cache
def speculative_speedup_measured() -> Derivation:
    """Speed-up from a measured mean τ of tokens emitted per verification round."""
    rnd = _round_step(gamma)
    return Derivation("speculative decoding: speed-up over plain decoding from the tokens per round", (
        rnd, Step(r"\mathrm{speedup}", tau / rnd.expr,
                  "τ tokens per round against one token per plain step", "1")), APPENDIX_D,
        note="The book gives the idea; the ratio is Leviathan et al.'s (2023) walltime model.")


@functools.cache
def speculative_speedup(draft: int | None = None) -> Derivation:
    """Expected speed-up when each drafted token is accepted independently with probability α.

    ``draft`` fixes the draft length γ (the registered forms); ``None`` keeps γ symbolic, whose
    ``α^(γ+1)`` the unit checker refuses, so that form is for direct use only.

    >>> speculative_speedup(2).expr
    (a_acc**2 + a_acc + 1)/(2*r_draft + 1)
    """
    if draft is None:
        tokens = (1 - alpha ** (gamma + 1)) / (1 - alpha)
        length: sp.Expr = gamma
    else:
        if draft < 1:
            raise ValueError("the draft length must be at least 1")
        tokens = sp.Add(*(alpha**i for i in range(draft + 1)))
        length = sp.Integer(draft)
    expected = Step(r"\mathrm{E}[\tau]", tokens,
                    "draft i is kept only if it and all before it are accepted; the target always adds a token "
                    "of its own: 1 + α + ... + α^γ = (1 − α^(γ+1))/(1 − α)", "token")
    rnd = _round_step(length)
    title = "speculative decoding: expected speed-up" + ("" if draft is None else f" with {draft} drafted tokens")
    return Derivation(title, (expected, rnd, Step(r"\mathrm{speedup}", expected.expr / rnd.expr,
                                                  "expected tokens per round over the round's cost in plain steps",
                                                  "1")), APPENDIX_D,
                      note="The book gives the idea; the expectation assumes i.i.d. acceptance "
                           "(Leviathan et al. 2023).")
