"""Arithmetic intensity (transformers.md): of an MoE layer's matmuls, all experts loaded, and of dot-product
attention in general, in prefill (S = T) and in decode (T = 1), with the batch or length where each becomes
compute-bound.

>>> moe_critical_batch().expr
C*E*b_w/(2*W*k)
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, crossover
from .common import MOE, PROBLEMS, B, C, D, E, F, H, K, N, S, T, W, b_w, b_x, k


# -- intensity -----------------------------------------------------------------------------------

@functools.cache
def moe_critical_batch() -> Derivation:
    """The token batch above which an MoE layer's matmuls are compute-bound, all experts loaded."""
    flops = Step(r"\mathrm{FLOPs}", 2 * k * B * D * F, "B tokens, each through k experts' [D,F] matrix", "FLOP")
    nbytes = Step(r"\mathrm{bytes}", b_w * E * D * F, "every expert's [D,F] weight is loaded", "byte")
    ai = Step(r"\mathrm{AI}", 2 * k * B / (b_w * E), "FLOPs over weight bytes", "FLOP/byte")
    return crossover(ai.expr, C / W, B, title="token batch at which an MoE layer becomes compute-bound",
                     source=MOE, lhs_label=r"\mathrm{AI}", rhs_label=r"\mathrm{AI}^*", side_unit="FLOP/byte",
                     label="B^*", unit="token", why="(C/W · b_w / 2) · E/k: the dense threshold times the sparsity",
                     lead=(flops, nbytes))


def _intensity_steps(s: sp.Expr, t: sp.Expr, note: str) -> tuple[Step, ...]:
    flops = 4 * t * s * N * H
    nbytes = b_x * (2 * t * N * H + 2 * s * K * H)
    return (
        Step(r"\mathrm{FLOPs}", flops, f"QK^T and the mix with V, forward, one sequence{note}", "FLOP"),
        Step(r"\mathrm{bytes}", nbytes,
             "read Q and write O ([T,N,H] each), read K and V ([S,K,H] each), once (a flash kernel)", "byte"),
        Step(r"\mathrm{AI}", sp.factor(flops / nbytes),
             "with b_x = 2 and G = N/K this is TSG/(TG + S); the batch cancels", "FLOP/byte"),
    )


@functools.cache
def attention_intensity() -> Derivation:
    return Derivation("arithmetic intensity of dot-product attention", _intensity_steps(S, T, ""), PROBLEMS)


@functools.cache
def attention_intensity_prefill() -> Derivation:
    return Derivation("arithmetic intensity of self-attention (prefill or training, S = T)",
                      _intensity_steps(T, T, " with S = T"), PROBLEMS)


@functools.cache
def attention_intensity_decode() -> Derivation:
    return Derivation("arithmetic intensity of attention while decoding (T = 1)",
                      _intensity_steps(S, sp.Integer(1), " with T = 1"), PROBLEMS)


@functools.cache
def attention_prefill_critical_T() -> Derivation:
    steps = _intensity_steps(T, T, " with S = T")
    return crossover(steps[-1].expr, C / W, T, title="sequence length at which self-attention becomes compute-bound",
                     source=PROBLEMS, lhs_label=r"\mathrm{AI}", rhs_label=r"\mathrm{AI}^*", side_unit="FLOP/byte",
                     label="T^*", unit="token",
                     why="TG/(G+1) = C/W for bf16: T = (C/W)(G+1)/G, 2C/W for MHA", lead=steps[:2])
