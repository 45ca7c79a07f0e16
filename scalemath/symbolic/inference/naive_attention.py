"""Attention's part of naive sampling (inference.md, 'The Basics of Transformer Inference'): without a KV cache
the pass for the i-th generated token runs T + i tokens, and its attention scores every one of them against every
other, so attention's FLOPs grow with the cube of the length; with the cache each new token scores one query
against the T + i keys before it, so they grow with the square.

Pairs are counted as the book counts attention (4·N·H forward FLOPs per query-key pair and layer, every pair of a
pass counted); the linear layers are :mod:`.kv_engine`'s ``naive_flops`` and ``naive_cached_flops``.

>>> sp.factor(naive_attention_flops().expr)
2*H*L*N*n_gen*(6*T**2 + 6*T*n_gen - 6*T + 2*n_gen**2 - 3*n_gen + 1)/3
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import H, L, T
from .kv_engine import BASICS, G, naive_flops

N = sym("N")

__all__ = ["naive_attention_flops", "cached_attention_flops", "naive_attention_ratio", "naive_flops_with_attention"]

_PAIR = 4 * N * H * L
_PAIR_WHY = "4·N·H forward FLOPs per query-key pair in each of the L layers (2·H to score, 2·H to mix the value)"
_NOTE = ("Not printed in the book: it says O(n³) in attention without the cache and O(n²) with it; the sums follow "
         "from its FLOPs per pair.")


def _naive_pairs() -> Step:
    return Step(r"\sum_i (T+i)^2", sp.expand(G * T ** 2 + T * G * (G - 1) + G * (G - 1) * (2 * G - 1) / 6),
                "the pass for the i-th token (i = 0 ... G−1) runs T + i tokens and scores all (T + i)² pairs: "
                "G·T² + T·G(G−1) + G(G−1)(2G−1)/6, cubic in G", "1")


def _cached_pairs() -> Step:
    return Step(r"T^2 + \sum_{i \ge 1} (T+i)", sp.expand(T ** 2 + (G - 1) * T + G * (G - 1) / 2),
                "prefill scores the prompt's T² pairs once; each of the other G−1 tokens is one query against the "
                "T + i cached keys: T² + (G−1)·T + G(G−1)/2, quadratic in G", "1")


@functools.cache
def naive_attention_flops() -> Derivation:
    pairs = _naive_pairs()
    return Derivation("attention FLOPs of generating G tokens without a KV cache (naive sampling)", (
        pairs, Step(r"\mathrm{FLOPs}^{\mathrm{attn}}_{\mathrm{naive}}", _PAIR * pairs.expr, _PAIR_WHY,
                    "FLOP")), BASICS, note=_NOTE)


@functools.cache
def cached_attention_flops() -> Derivation:
    pairs = _cached_pairs()
    return Derivation("attention FLOPs of generating G tokens with a KV cache", (
        pairs, Step(r"\mathrm{FLOPs}^{\mathrm{attn}}_{\mathrm{cached}}", _PAIR * pairs.expr, _PAIR_WHY,
                    "FLOP")), BASICS, note=_NOTE)


@functools.cache
def naive_attention_ratio() -> Derivation:
    naive, cached = _naive_pairs(), _cached_pairs()
    return Derivation("how many times more attention FLOPs naive sampling takes than sampling with a KV cache", (
        naive, cached, Step(r"r^{\mathrm{attn}}_{\mathrm{naive}}", naive.expr / cached.expr,
                            "the FLOPs per pair cancel: a ratio of pairs scored, about G/3 when G is much larger "
                            "than T", "1")), BASICS, note=_NOTE)


@functools.cache
def naive_flops_with_attention() -> Derivation:
    linear, attn = naive_flops().result, naive_attention_flops()
    return Derivation("FLOPs of generating G tokens without a KV cache, attention included", (
        *attn.steps, linear, Step(r"\mathrm{FLOPs}_{\mathrm{naive}}^{\mathrm{all}}", linear.expr + attn.expr,
                                  "the linear layers' 2·P_active per token run (quadratic in G) plus attention "
                                  "(cubic in G)", "FLOP")), BASICS, note=_NOTE)

