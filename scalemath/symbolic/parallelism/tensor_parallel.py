"""Tensor parallelism, alone and combined with FSDP (training.md): the largest compute-bound degree, and the
FSDP degree, batch and chip count where the mixed scheme communicates least, with the communications
overlapped (the book's text) or summed (its older text).

>>> tp_max_degree().expr
2*F*M_Y*W_ici/(C*b_x)
>>> fsdp_tp_x_opt().expr
sqrt(B)*sqrt(M_X)*sqrt(n_dev)/(sqrt(F)*sqrt(M_Y))
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, crossover, simplest
from .common import MIXED, MIXED_V1, T_COMMS, T_FSDP, T_MATH, T_TP, B, C, F, X, Y, b_w, b_x, n_dev
from .schemes import SCHEMES, _balance, _per_device


# -- tensor parallelism --------------------------------------------------------------------------------------

@functools.cache
def tp_max_degree() -> Derivation:
    return _balance("tp", "fwd", Y, title="tensor parallelism: largest degree that stays compute-bound",
                    label="Y^*", unit="chip",
                    why="the batch cancels: Y < 2·M_Y·F·W_ici/(b_x·C) whatever the batch (the book's M_Y·F·W_ici/C with "
                        "bf16 activations)")


@functools.cache
def tp_min_f() -> Derivation:
    return _balance("tp", "fwd", F, title="tensor parallelism: smallest MLP width a Y-way split keeps compute-bound",
                    label="F^*", unit="element", why="F must exceed b_x·Y·C/(2·M_Y·W_ici) (the book's Y·C/(M_Y·W_ici) with bf16 "
                        "activations)")


# -- FSDP + tensor parallelism ---------------------------------------------------------------------------------

def _mixed_terms() -> tuple[sp.Expr, sp.Expr, sp.Expr, tuple[Step, ...]]:
    """Forward T_math, T_FSDP and T_TP with Y = n_dev/X and one dtype for weights and activations."""
    one_dtype = Step("b_w", b_x, "weights in the activations' dtype (bf16 for both in the book)", "byte")
    y = n_dev / X
    fwd = SCHEMES["fsdp_tp"].fwd
    t_fsdp = fwd.comms[0].time.subs({Y: y, b_w: b_x})
    t_tp = fwd.comms[1].time.subs({Y: y})
    math = (fwd.flops / C).subs({Y: y})
    return math, t_fsdp, t_tp, (one_dtype, Step(r"Y", y, "all n_dev chips are used: X·Y = n_dev", "chip"))


@functools.cache
def fsdp_tp_x_opt() -> Derivation:
    _, t_fsdp, t_tp, lead = _mixed_terms()
    return crossover(t_fsdp, t_tp, X, title="FSDP + TP: the FSDP degree that minimises communication",
                     source=MIXED, lhs_label=T_FSDP, rhs_label=T_TP, side_unit="s", label=r"X_{\mathrm{opt}}",
                     unit="chip", lead=lead,
                     why="FSDP time grows with X and TP time shrinks with it; their maximum is least where they meet")


@functools.cache
def fsdp_tp_y_opt() -> Derivation:
    d = fsdp_tp_x_opt()
    return d.extend(Step(r"Y_{\mathrm{opt}}", n_dev / d.expr, "the remaining factor of the chip count", "chip"),
                    title="FSDP + TP: the tensor-parallel degree at the optimum")


def _mixed_min_batch(policy: str, unknown: sp.Symbol) -> Derivation:
    math, t_fsdp, t_tp, lead = _mixed_terms()
    x_opt = (fsdp_tp_x_opt() if policy == "max" else fsdp_tp_x_opt_sum_policy()).expr
    at_opt = (sp.Max(t_fsdp, t_tp) if policy == "max" else t_fsdp + t_tp).subs(X, x_opt)
    at_opt = simplest(at_opt)
    lead = lead[:1] + (Step(r"X_{\mathrm{opt}}", x_opt, "the FSDP degree with the least communication", "chip"),)
    what = ("the two communications overlap: their common value at X_opt" if policy == "max"
            else "the two communications add: twice either one at X_opt")
    return crossover(math.subs(X, x_opt), at_opt, unknown,
                     title=(f"FSDP + TP ({'overlapped' if policy == 'max' else 'summed'} communication): "
                            + ("smallest global batch that stays compute-bound" if unknown == B
                               else "most chips a batch keeps compute-bound")),
                     source=MIXED if policy == "max" else MIXED_V1,
                     lhs_label=T_MATH, rhs_label=T_COMMS, side_unit="s",
                     label="B^*" if unknown == B else r"n_{\mathrm{dev}}^*", unit="token" if unknown == B else "chip",
                     why=f"compute equals the least communication ({what})", lead=lead)


@functools.cache
def fsdp_tp_min_batch() -> Derivation:
    return _mixed_min_batch("max", B)


@functools.cache
def fsdp_tp_min_batch_per_chip() -> Derivation:
    return _per_device(fsdp_tp_min_batch(), n_dev, r"B^*/n_{\mathrm{dev}}",
                       "FSDP + TP: smallest per-chip batch (communication overlapped)",
                       "α²/(M_X·M_Y·F) with α = C/W_ici and bf16: far below pure FSDP's α/M_X")


@functools.cache
def fsdp_tp_max_chips() -> Derivation:
    return _mixed_min_batch("max", n_dev)


@functools.cache
def fsdp_tp_x_opt_sum_policy() -> Derivation:
    _, t_fsdp, t_tp, lead = _mixed_terms()
    grow, shrink = sp.diff(t_fsdp, X), -sp.diff(t_tp, X)
    return crossover(grow, shrink, X, title="FSDP + TP (summed communication): the FSDP degree that minimises it",
                     source=MIXED_V1, lhs_label=r"\partial T_{\mathrm{FSDP}}/\partial X",
                     rhs_label=r"-\partial T_{\mathrm{TP}}/\partial X", side_unit="s/chip", label=r"X_{\mathrm{opt}}",
                     unit="chip", lead=lead,
                     why="the sum is least where a step in X adds as much FSDP time as it saves TP time: "
                         "the same X as the overlapped policy")


@functools.cache
def fsdp_tp_min_batch_sum_policy() -> Derivation:
    return _mixed_min_batch("sum", B)


@functools.cache
def fsdp_tp_min_batch_per_chip_sum_policy() -> Derivation:
    return _per_device(fsdp_tp_min_batch_sum_policy(), n_dev, r"B^*/n_{\mathrm{dev}}",
                       "FSDP + TP (summed communication): smallest per-chip batch",
                       "4α²/(M_X·M_Y·F) with bf16: four times the overlapped policy's threshold")
