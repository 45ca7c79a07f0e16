"""Sharding a decode step's matmuls over chips: tensor parallelism with its weight-loading, compute and
collective times (inference.md, 'Distributing Inference Over Multiple Accelerators'), where hop latency takes
over (Appendix C), and 2D weight-stationary sharding against 1D (Appendix B, Worked Problem 7).
"""

from __future__ import annotations

import functools

import sympy as sp

from .. import collectives as coll
from .. import parallelism as par
from ..derivation import Derivation, Step, crossover, simplest
from .common import (_NOT_IN_BOOK, APPENDIX_B, APPENDIX_C, GENERATION, T_MATH, THROUGHPUT, B, C, D, F, M_Y, W, W_ici,
                     X, Y, b_w, b_x, n)


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
                     why="b_w·DF/(Y·W) = b_x·BD/W_ici: Y = (b_w/b_x)·F/(B·β) with β = W/W_ici (the book's F/(B·β) "
                         "when weights and activations share a dtype)")


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
