"""A mixture of experts' decode step that reads only the experts its batch touches.

The book prices a decode step as if every weight were read once per step (F7.11). For a mixture of experts
that holds at a large batch, but one token routes to only k of a layer's E experts: a step of B tokens reads,
in expectation, ``E·(1 − (1 − k/E)^B)`` of them (each expert is missed by one token with probability
1 − k/E, by all B, routed uniformly and independently, with (1 − k/E)^B). Every expert stays in HBM (the
memory forms are unchanged); only the bytes read per step shrink, to

    P_read = P − P_exp·(1 − k/E)^B

where ``P_exp`` is every MoE layer's routed experts (``Model.expert_param_count``): attention, routers, shared
experts, the MLPs of dense layers (DeepSeek-V3's first three) and the embeddings are read in full. A dense model
has P_exp = 0 and P_read = P. The forms here are the decode forms of :mod:`.decode` and
:mod:`scalemath.symbolic.decode_comms` (:func:`moe_routed`) with P_read in place of P in the weight loading; FLOPs (2·B·P_active)
and the cache are unchanged.

Sharded over n devices each device reads its share: with tensor parallelism 1/n of every expert touched
(exactly the expectation over the routing), with expert parallelism the touched ones among its own E/n
experts, whose expectation is (E/n)·(1 − (1 − k/E)^B). The step is priced at that expectation: the device
that happens to draw the most touched experts, which sets the step when the batch is small, is not modelled.

The exponent stops at ``B_sat = 40·ceil(E/k)``: there (1 − k/E)^B < e^−40 ≈ 4·10^−18, below a double's resolution,
so every expert is read to 17 digits, and the exact values stay a few thousand digits long at any batch.

>>> moe_experts_read().expr
E*(1 - (1 - k/E)**Min(B, 40*ceiling(E/k)))
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import _NOT_IN_BOOK, MOE_SERVING, T_W, B, P

__all__ = ["SATURATION", "moe_routed", "moe_experts_read", "moe_params_read", "moe_decode_t_weights",
           "moe_decode_step_time"]

E, k, P_exp = sym("E"), sym("k"), sym("P_exp")

#: B_sat = SATURATION·ceil(E/k): past it (1 − k/E)^B < e^−SATURATION
SATURATION = 40

_NOTE = (_NOT_IN_BOOK + " The book loads every expert at every step; this reads the expected experts touched under "
         "uniform, independent routing (real routers are balanced only on average by an auxiliary loss).")


def _miss() -> Step:
    saturated = sp.Min(B, SATURATION * sp.ceiling(E / k))
    return Step(r"p_{\mathrm{miss}}", (1 - k / E) ** saturated,
                "chance that none of the step's B tokens routes to a given expert, each token picking k of the E "
                "uniformly and independently of the others (the assumption); the exponent stops at "
                f"B_sat = {SATURATION}·ceil(E/k), where (1 − k/E)^B < e^−{SATURATION} ≈ 4·10^−18, below a double's "
                "resolution", "1")


def _touched() -> Step:
    return Step(r"E_{\mathrm{read}}", E * (1 - _miss().expr),
                "expected experts read per MoE layer: E times the chance that some token hits an expert "
                "(linearity of expectation); k at B = 1, all E once B >> E/k", "expert")


def _read() -> Step:
    return Step(r"P_{\mathrm{read}}", P - P_exp * _miss().expr,
                "parameters the step reads: all P but the expected unread routed experts, P_exp·p_miss (P_exp: every "
                "MoE layer's E routed experts); attention, routers, shared experts, dense layers' MLPs and the "
                "embeddings are read in full; n devices each read their share (with expert parallelism the touched "
                "ones among their own E/n experts: the expectation, not the unluckiest device)", "param")


@functools.cache
def moe_routed(d: Derivation, title: str) -> Derivation:
    """``d`` (a decode form over P: the step time, its weight loading, the step forms with collectives of
    :mod:`scalemath.symbolic.decode_comms`) with the expected parameters read, P_read, in place of P."""
    read = _read()
    whys = {r"\mathrm{bytes}_{\mathrm{w}}": "each weight the step's tokens touch is read once: P_read of "
                                            "them",
            T_W: "the weights read are sharded over the n chips; each reads its share at W"}
    steps = tuple(Step(s.label, s.expr.xreplace({P: read.expr}), whys.get(s.label, s.why), s.unit) for s in d.steps)
    return Derivation(title, (_miss(), _touched(), read, *steps), d.source, d.positive, _NOTE)


@functools.cache
def moe_experts_read() -> Derivation:
    """Experts a step of B tokens reads per MoE layer, as the serving forms count them (exponent saturated)."""
    return Derivation("experts one step reads per MoE layer (expected, uniform routing; serving's count)",
                      (_miss(), _touched()), MOE_SERVING, False, _NOTE)


@functools.cache
def moe_params_read() -> Derivation:
    return Derivation("parameters one decode step reads from HBM (a mixture: only the experts touched)",
                      (_miss(), _touched(), _read()), MOE_SERVING, False, _NOTE)


@functools.cache
def moe_decode_t_weights() -> Derivation:
    from .decode import decode_t_weights

    return moe_routed(decode_t_weights(), "decode step: time to load the weights (a mixture: only the experts touched)")


@functools.cache
def moe_decode_step_time() -> Derivation:
    from .decode import decode_step_time

    return moe_routed(decode_step_time(), "decode step time (a mixture: only the experts touched are read)")
