"""Prefill: running a prompt of T tokens at once and writing its keys and values to the cache
(applied-inference.md, 'What about prefill?'), and the intensity of attention in prefill and in decode.

A prompt is prefill's token batch: prefill is compute-bound past the same critical length as decode's critical
batch.
"""

from __future__ import annotations

import functools

import sympy as sp

from .. import transformer as tf
from ..derivation import Derivation, Step, crossover
from .common import (ATTENTION, ESTIMATES, LINEAR, MEMORY, PREFILL, PROBLEMS, T_MATH, T_W, C, D, MFU, P_act, T, W,
                     b_x, kv, n)
from .decode import _dense, _t_weights, _weight_bytes


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
