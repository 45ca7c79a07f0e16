"""The book's per-layer model of each training scheme (training.md), and the balance every threshold solves.

The book models each layer as an MLP only: In[B, D] · W_in[D, F] · W_out[F, D], with B the
*global* batch in tokens. Per layer the forward pass costs 4BDF FLOPs and the backward pass
8BDF; compute and communication overlap perfectly, so a scheme is compute-bound when its
T_math exceeds its T_comms. Every threshold of the package is that balance, solved with
:func:`~scalemath.symbolic.derivation.crossover` for the quantity it bounds (:func:`_balance`).

Bytes per element are kept as symbols (``b_w`` for weights and gradients, ``b_x`` for
activations) so that the units check; with bf16 (2 bytes) they give the book's numbers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from ..derivation import Derivation, Step, crossover, simplest
from .common import (DCN, DP, FSDP, MIXED, MIXED_V1, T_COMMS, T_FSDP, T_MATH, T_TP, TP, B, C, D, F, L, M_X, M_Y, W_dcn,
                     W_ici, X, Y, b_w, b_x, n_dev, n_slice)


PHASES = {"fwd": "forward", "bwd": "backward"}


# -- per-layer costs of each scheme ------------------------------------------------------------------

@dataclass(frozen=True)
class Comm:
    """One communication term of a pass: its time and what moves."""

    label: str
    time: sp.Expr
    why: str


@dataclass(frozen=True)
class Phase:
    """One pass (forward or backward) of one layer, per device."""

    flops: sp.Expr
    flops_why: str
    comms: tuple[Comm, ...]


@dataclass(frozen=True)
class Scheme:
    """A parallelism scheme: its sharding, per-layer passes and how its communications combine."""

    key: str
    name: str
    sharding: str
    source: str
    fwd: Phase | None
    bwd: Phase | None
    overlap: str = "max"  # how several communication terms of one pass combine: "max" or "sum"
    note: str = ""


def _schemes() -> dict[str, Scheme]:
    x_bw, y_bw = M_X * W_ici, M_Y * W_ici
    fwd_dp = Phase(4 * B * D * F / X, "two matmuls of 2(B/X)DF FLOPs on each device's share of the batch", ())
    bwd_dp = 8 * B * D * F / X
    bwd_dp_why = "four matmuls (dW_out, dTmp, dW_in, dIn) of 2(B/X)DF FLOPs each"
    fsdp_fwd = Comm(T_COMMS, 2 * b_w * D * F / x_bw,
                    "AllGather W_in and W_out (b_w·D·F bytes each) just before use, over the M_X axes of X")
    fsdp_bwd = Comm(T_COMMS, 4 * b_w * D * F / x_bw,
                    "AllGather both weights again and ReduceScatter both gradients: "
                    "four collectives of b_w·D·F bytes")
    tp_comm = Comm(T_COMMS, 2 * b_x * B * D / y_bw,
                   "an AllGather of the activations before W_in and a ReduceScatter after W_out, b_x·B·D bytes each")
    tp_bwd = Comm(T_COMMS, 2 * b_x * B * D / y_bw,
                  "AllGather dOut and ReduceScatter dIn (the forward AllGather of In is reused), b_x·B·D bytes each")
    xy = X * Y
    mixed_fwd = (
        Comm(T_FSDP, 2 * b_w * D * F / (Y * x_bw), "AllGather the weights over X: each is already split Y ways"),
        Comm(T_TP, 2 * b_x * B * D / (X * y_bw),
             "AllGather and ReduceScatter the activations over Y: each is split X ways"),
    )
    mixed_bwd = (
        Comm(T_FSDP, 4 * b_w * D * F / (Y * x_bw), "gather the weights again and ReduceScatter their gradients over X"),
        Comm(T_TP, 2 * b_x * B * D / (X * y_bw),
             "AllGather dOut and ReduceScatter dIn over Y "
             "(the algorithm's count; the book's summary table prints 8BD/X)"),
    )
    mixed_note = ("The backward TP term follows the algorithm (AllGather dOut, ReduceScatter dIn); the book's summary "
                  "table prints 8BD/X for it, which does not match its own 4BD for pure TP.")
    return {
        "dp": Scheme("dp", "data parallelism", "In[B_X, D] · W_in[D, F] · W_out[F, D]", DP,
                     fwd_dp, Phase(bwd_dp, bwd_dp_why, (Comm(
                         T_COMMS, 2 * (2 * b_w * D * F) / x_bw,
                         "AllReduce dW_in and dW_out (b_w·D·F bytes each); an AllReduce costs twice its bytes, "
                         "off the critical path"),))),
        "fsdp": Scheme("fsdp", "fully-sharded data parallelism (ZeRO-3)", "In[B_X, D] · W_in[D_X, F] · W_out[F, D_X]",
                       FSDP, Phase(fwd_dp.flops, fwd_dp.flops_why, (fsdp_fwd,)),
                       Phase(bwd_dp, bwd_dp_why, (fsdp_bwd,))),
        "tp": Scheme("tp", "tensor parallelism (Megatron)", "In[B, D_Y] · W_in[D, F_Y] · W_out[F_Y, D]", TP,
                     Phase(4 * B * D * F / Y, "two matmuls, each device holding F/Y of the hidden units", (tp_comm,)),
                     Phase(8 * B * D * F / Y, "four matmuls over F/Y of the hidden units", (tp_bwd,))),
        "fsdp_tp": Scheme("fsdp_tp", "FSDP + tensor parallelism, communications overlapped",
                          "In[B_X, D_Y] · W_in[D_X, F_Y] · W_out[F_Y, D_X]", MIXED,
                          Phase(4 * B * D * F / xy, "two matmuls split over all X·Y chips", mixed_fwd),
                          Phase(8 * B * D * F / xy, "four matmuls split over all X·Y chips", mixed_bwd),
                          "max", mixed_note),
        "fsdp_tp_sum": Scheme("fsdp_tp_sum", "FSDP + tensor parallelism, communications summed (older text)",
                              "In[B_X, D_Y] · W_in[D_X, F_Y] · W_out[F_Y, D_X]", MIXED_V1,
                              Phase(4 * B * D * F / xy, "two matmuls split over all X·Y chips", mixed_fwd),
                              Phase(8 * B * D * F / xy, "four matmuls split over all X·Y chips", mixed_bwd),
                              "sum", mixed_note),
        "dcn": Scheme("dcn", "data parallelism across slices over DCN", "pure DP over slices of n_slice chips", DCN,
                      None, Phase(8 * B * D * F / n_dev, "the backward matmuls split over all n_dev chips", (Comm(
                          T_COMMS, 4 * b_w * D * F / (n_slice * W_dcn),
                          "AllReduce both gradients across slices; each chip sends its 1/n_slice share, so the "
                          "slice's DCN bandwidth grows with its chips"),))),
    }


SCHEMES: dict[str, Scheme] = _schemes()


def _phase(key: str, phase: str) -> tuple[Scheme, Phase]:
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}")
    scheme = SCHEMES[key]
    ph = getattr(scheme, phase)
    if ph is None:
        raise ValueError(f"{scheme.name} has no {PHASES[phase]} costs in the book's model")
    return scheme, ph


def _comms_total(scheme: Scheme, ph: Phase) -> sp.Expr:
    times = [c.time for c in ph.comms]
    if not times:
        return sp.Integer(0)
    return (sp.Max if scheme.overlap == "max" else sp.Add)(*times)


def _comms_steps(scheme: Scheme, ph: Phase, phase: str) -> tuple[Step, ...]:
    steps = tuple(Step(c.label, c.time, c.why, "s") for c in ph.comms)
    if len(steps) > 1:
        why = ("the two kinds of collective run at once, so the slower one sets the time" if scheme.overlap == "max"
               else "the two kinds of collective run one after the other")
        steps += (Step(rf"{T_COMMS}^{{\mathrm{{{phase}}}}}", _comms_total(scheme, ph), why, "s"),)
    return steps


@functools.cache
def t_math(key: str, phase: str) -> Derivation:
    """Compute time of one layer's forward or backward pass, per device."""
    scheme, ph = _phase(key, phase)
    return Derivation(f"{scheme.name}: {PHASES[phase]} compute time per layer", (
        Step(r"\mathrm{FLOPs}", ph.flops, ph.flops_why, "FLOP"),
        Step(rf"{T_MATH}^{{\mathrm{{{phase}}}}}", ph.flops / C, "FLOPs over the chip's peak FLOPs/s", "s"),
    ), scheme.source)


@functools.cache
def t_comms(key: str, phase: str) -> Derivation:
    """Communication time of one layer's forward or backward pass, per device."""
    scheme, ph = _phase(key, phase)
    if not ph.comms:
        raise ValueError(f"{scheme.name} communicates nothing in the {PHASES[phase]} pass")
    return Derivation(f"{scheme.name}: {PHASES[phase]} communication time per layer",
                      _comms_steps(scheme, ph, phase), scheme.source, note=scheme.note)


@functools.cache
def t_step(key: str) -> Derivation:
    """One training step over all L layers: compute and communication, overlapped."""
    scheme = SCHEMES[key]
    passes = [getattr(scheme, p) for p in PHASES]
    if any(p is None for p in passes):
        raise ValueError(f"{scheme.name} does not model both passes")
    math_layer = sp.Add(*(p.flops for p in passes)) / C
    comms_layer = sp.Add(*(_comms_total(scheme, p) for p in passes))
    return Derivation(f"{scheme.name}: time of one training step", (
        Step(rf"{T_MATH}^{{\mathrm{{layer}}}}", math_layer, "forward plus backward FLOPs over the peak", "s"),
        Step(rf"{T_COMMS}^{{\mathrm{{layer}}}}", comms_layer, "forward plus backward communication", "s"),
        Step(rf"{T_MATH}^{{\mathrm{{step}}}}", L * math_layer, "every layer costs the same", "s"),
        Step(rf"{T_COMMS}^{{\mathrm{{step}}}}", L * comms_layer, "every layer communicates the same", "s"),
        Step(r"T_{\mathrm{step}}", sp.Max(L * math_layer, L * comms_layer),
             "compute and communication overlap perfectly, so the larger one sets the step time", "s"),
    ), scheme.source, note=scheme.note)


def _sides(key: str, phase: str) -> tuple[sp.Expr, sp.Expr, tuple[Step, ...]]:
    scheme, ph = _phase(key, phase)
    lead = (Step(r"\mathrm{FLOPs}", ph.flops, ph.flops_why, "FLOP"),) + _comms_steps(scheme, ph, phase)[:-1]
    return ph.flops / C, _comms_total(scheme, ph), lead


def _balance(key: str, phase: str, unknown: sp.Symbol, *, title: str, label: str, unit: str, why: str,
             source: str | None = None) -> Derivation:
    math, comms, steps = _sides(key, phase)
    return crossover(math, comms, unknown, title=title, source=source or SCHEMES[key].source,
                     lhs_label=rf"{T_MATH}^{{\mathrm{{{phase}}}}}", rhs_label=rf"{T_COMMS}^{{\mathrm{{{phase}}}}}",
                     side_unit="s", label=label, unit=unit, why=why, lead=steps)


def _per_device(d: Derivation, devices: sp.Expr, label: str, title: str, why: str) -> Derivation:
    return d.extend(Step(label, simplest(d.expr / devices), why, "token"), title=title)
