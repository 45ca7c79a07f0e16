"""The share of attention in a layer's FLOPs (transformers.md, 'Fractional cost of attention with context
length'): attention over the matmuls, and the sequence lengths at which attention overtakes the matmuls or the
Q, K, V, O projections, in general and in the book's shape (F = 4D, NH = D, K = N).

>>> attention_crossover_T_book().expr
8*D
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, crossover
from .common import FRACTION, PROBLEMS, D, F, H, K, N, T, n_mlp


def _attention_side() -> sp.Expr:
    return 12 * T * N * H


def _matmul_side() -> sp.Expr:
    return 6 * (n_mlp * D * F + 2 * D * (N + K) * H)


_BOOK_SHAPE = {n_mlp: 3, F: 4 * D, K: N, H: D / N}


def _book_shape_steps() -> tuple[Step, ...]:
    return (Step("n_{\\mathrm{mlp}}", sp.Integer(3), "the book's gated MLP: three matrices", "1"),
            Step("F", 4 * D, "the book's shape: F = 4D", "element"),
            Step("N H", D, "the heads tile the model width: N·H = D", "element"),
            Step("K", N, "multi-head attention: as many key/value heads as query heads", "element"))


@functools.cache
def attention_to_matmul_ratio() -> Derivation:
    attn, mm = _attention_side(), _matmul_side()
    return Derivation("attention FLOPs over matmul FLOPs, per layer", (
        Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", attn, "dot-product attention per token, training", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", mm, "MLP and projections per token, training", "FLOP"),
        Step(r"\mathrm{ratio}", sp.factor(attn / mm), "the quotient", "1")), FRACTION)


@functools.cache
def attention_to_matmul_ratio_book() -> Derivation:
    attn, mm = _attention_side().subs(_BOOK_SHAPE), _matmul_side().subs(_BOOK_SHAPE)
    return Derivation("attention FLOPs over matmul FLOPs with F = 4D, NH = D, K = N", _book_shape_steps() + (
        Step(r"\mathrm{FLOPs}_{\mathrm{attn}}", attn, "12TNH with NH = D", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", mm, "6(3DF + 4DNH) = 6(12D² + 4D²)", "FLOP"),
        Step(r"\mathrm{ratio}", sp.cancel(attn / mm), "the quotient: T/(8D)", "1")), FRACTION)


@functools.cache
def attention_crossover_T() -> Derivation:
    """The sequence length above which dot-product attention costs more than the matmuls."""
    return crossover(_attention_side(), _matmul_side(), T,
                     title="sequence length at which attention FLOPs equal the matmul FLOPs", source=FRACTION,
                     lhs_label=r"\mathrm{FLOPs}_{\mathrm{attn}}", rhs_label=r"\mathrm{FLOPs}_{\mathrm{matmul}}",
                     side_unit="FLOP", label="T^*", unit="token",
                     why="solve 12TNH = 6(n_mlp·DF + 2D(N+K)H) for T; attention dominates above it")


@functools.cache
def attention_crossover_T_book() -> Derivation:
    return crossover(_attention_side().subs(_BOOK_SHAPE), _matmul_side().subs(_BOOK_SHAPE), T,
                     title="sequence length at which attention FLOPs equal the matmul FLOPs (F = 4D, NH = D, K = N)",
                     source=FRACTION, lhs_label=r"\mathrm{FLOPs}_{\mathrm{attn}}",
                     rhs_label=r"\mathrm{FLOPs}_{\mathrm{matmul}}", side_unit="FLOP", label="T^*", unit="token",
                     why="12TD = 96D²: attention dominates once T > 8D", lead=_book_shape_steps())


@functools.cache
def attention_projection_crossover_T() -> Derivation:
    """Where dot-product attention equals the Q, K, V, O projections: T = D(N+K)/N (2D for MHA)."""
    return crossover(_attention_side(), 12 * D * (N + K) * H, T,
                     title="sequence length at which attention FLOPs equal the QKVO projection FLOPs",
                     source=PROBLEMS, lhs_label=r"\mathrm{FLOPs}_{\mathrm{attn}}",
                     rhs_label=r"\mathrm{FLOPs}_{\mathrm{qkvo}}", side_unit="FLOP", label="T^*", unit="token",
                     why="12TNH = 12D(N+K)H; with K = N (MHA) this is T = 2D")
