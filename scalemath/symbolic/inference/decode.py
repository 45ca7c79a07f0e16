"""One decode step: its FLOPs and bytes, its time, and what follows from it (inference.md, 'Theoretical
estimates for LLM latency and throughput').

A step with a batch of B sequences reads every weight once, reads each sequence's cache of S tokens, and does
2·B·P_active FLOPs. On n chips (weights and cache fully sharded):

    T_step = B·S·KV_tok/(n·W)  +  max(2·B·P_active/(n·C), P·b_w/(n·W))

The first term is attention, always bandwidth-bound (each sequence brings its own cache, so batching cannot
amortise it); the second is the linear layers, which turn compute-bound above the critical batch ``C·b_w/(2·W)``
(240 for bf16 on a TPU v5e) for a dense model, and ``P/P_active`` times later for a mixture of experts, which
loads every expert but computes with the k its tokens are routed to.

>>> decode_step_time().expr
B*S*kv_token/(W*n_dev) + Max(2*B*P_active/(C*n_dev), P*b_w/(W*n_dev))
>>> decode_critical_batch().expr
C*b_w/(2*W)
"""

from __future__ import annotations

import functools

import sympy as sp

from .. import transformer as tf
from ..derivation import Derivation, Step, crossover, simplest
from ..symbols import sym
from .common import (_NOT_IN_BOOK, ESTIMATES, LINEAR, MOE_SERVING, PARETO, PROBLEMS, T_KV, T_MATH, T_STEP, T_W,
                     THROUGHPUT, B, C, H_chip, P, P_act, S, W, b_w, kv, n)


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
