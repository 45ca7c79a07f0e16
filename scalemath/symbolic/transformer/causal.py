"""Masked attention's FLOPs (transformers.md, 'Global FLOPs and Params Calculation' and 'Fractional cost of
attention with context length'): a causal mask leaves half of the T² query-key pairs useful, a sliding window of
w leaves about w·T − w²/2 of them, and only a kernel that skips the masked blocks saves the rest; local layers move
the sequence length at which attention overtakes the matmuls.

Pairs are counted as the book counts them: T² for a plain einsum, half of that under a causal mask (the diagonal's
T/2 is left out), the same continuous count ``Model.forward_flops_per_token(causal=True)`` uses.

>>> causal_attention_flops().expr
6*H*N*T**2
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, crossover
from ..symbols import sym
from .common import FRACTION, PARAMS_SRC, D, F, H, K, L, N, T, n_mlp

__all__ = ["causal_attention_flops", "causal_attention_saving", "windowed_attention_flops",
           "local_attention_crossover_T"]

w, L_loc = sym("w_win"), sym("L_loc")
_PER_PAIR = 12 * N * H
_PER_PAIR_WHY = ("12·N·H training FLOPs per query-key pair: 2·H for the score and 2·H for the value mix in each of N "
                 "query heads, forward, times 3 for training")


def _plain() -> tuple[Step, Step]:
    pairs = Step(r"n_{\mathrm{pairs}}", T ** 2, "a plain einsum scores every query against every key, then masks",
                 "1")
    return pairs, Step(r"\mathrm{FLOPs}_{\mathrm{einsum}}", _PER_PAIR * pairs.expr, _PER_PAIR_WHY, "FLOP")


def _causal() -> tuple[Step, Step]:
    pairs = Step(r"n_{\mathrm{pairs}}^{\mathrm{causal}}", T ** 2 / 2,
                 "a query sees only the keys before it: half of the T² pairs (the book's count; the diagonal adds "
                 "T/2 more)", "1")
    return pairs, Step(r"\mathrm{FLOPs}_{\mathrm{causal}}", _PER_PAIR * pairs.expr,
                       "only a masking-aware kernel (one that skips the blocks above the diagonal) does just these",
                       "FLOP")


@functools.cache
def causal_attention_flops() -> Derivation:
    return Derivation("training FLOPs of one layer's causal attention over a sequence of T tokens, masking-aware "
                      "kernel", _causal(), PARAMS_SRC)


@functools.cache
def causal_attention_saving() -> Derivation:
    plain, causal = _plain(), _causal()
    return Derivation("training FLOPs a masking-aware kernel saves on one layer's causal attention over T tokens", (
        *plain, *causal, Step(r"\Delta\mathrm{FLOPs}", plain[1].expr - causal[1].expr,
                              "the masked half: a plain einsum computes it and throws it away", "FLOP")),
        PARAMS_SRC)


@functools.cache
def windowed_attention_flops() -> Derivation:
    seen = sp.Min(T, w)
    pairs = Step(r"n_{\mathrm{pairs}}^{w}", seen * T - seen ** 2 / 2,
                 "a causal query sees at most the w keys before it: with m = min(T, w), the first m queries fill a "
                 "triangle of m²/2 pairs and the T − m after them m pairs each, m·T − m²/2 (T²/2 when the window "
                 "covers the sequence)", "1")
    return Derivation("training FLOPs of one layer's sliding-window attention over a sequence of T tokens", (
        pairs, Step(r"\mathrm{FLOPs}_{w}", _PER_PAIR * pairs.expr, _PER_PAIR_WHY + "; linear in T past "
                    "the window", "FLOP")), FRACTION,
        note="Not printed in the book: it names local attention; the count follows from its FLOPs per pair.")


@functools.cache
def local_attention_crossover_T() -> Derivation:
    """Where attention, averaged over global and local layers, equals the matmuls (every position counted)."""
    attn = 12 * N * H * ((L - L_loc) * T + L_loc * w) / L
    matmul = 6 * (n_mlp * D * F + 2 * D * (N + K) * H)
    lead = (Step(r"\mathrm{positions}", ((L - L_loc) * T + L_loc * w) / L,
                 "positions a token attends to, averaged over layers: T in the L − L_loc global layers, the window w "
                 "in the L_loc local ones (T ≥ w)", "token"),)
    return crossover(attn, matmul, T, title="sequence length at which attention FLOPs equal the matmul FLOPs with "
                     "L_loc local layers of window w", source=FRACTION, lhs_label=r"\mathrm{FLOPs}_{\mathrm{attn}}",
                     rhs_label=r"\mathrm{FLOPs}_{\mathrm{matmul}}", side_unit="FLOP", label=r"T^*_{w}", unit="token",
                     why="only the global layers keep growing with T: the crossover moves out by the local layers' "
                         "share (with no local layer it is the plain T*)", lead=lead)
