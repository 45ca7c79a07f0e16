"""The KV cache and what fits in HBM when serving (inference.md, 'What about memory?').

A token adds ``kv_token`` bytes to the cache over all layers; a batch of B sequences of S tokens holds B·S of
them. What the weights leave of n chips' HBM bounds the batch, and the weights plus a batch's caches bound the
chip count.

>>> kv_cache_bytes_per_token().expr
2*H*K*L*b_kv
"""

from __future__ import annotations

import functools

import sympy as sp

from .. import transformer as tf
from ..derivation import Derivation, Step
from .common import (KV_SHARDING, KV_TOK, MEMORY, PROBLEMS, STORY, THROUGHPUT, B, H_chip, P, S, b_kv, b_w, b_x,
                     kv, n)


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
