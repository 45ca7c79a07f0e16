"""Parallelism for training (book parts 5 and 6, and the GPU chapter's LLM rooflines).

The book models each layer as an MLP only: In[B, D] · W_in[D, F] · W_out[F, D], with B the
*global* batch in tokens. Per layer the forward pass costs 4BDF FLOPs and the backward pass
8BDF; compute and communication overlap perfectly, so a scheme is compute-bound when its
T_math exceeds its T_comms. Every threshold below is that balance, solved with
:func:`~scalemath.symbolic.derivation.crossover` for the quantity it bounds.

Bytes per element are kept as symbols (``b_w`` for weights and gradients, ``b_x`` for
activations) so that the units check; with bf16 (2 bytes) they give the book's numbers:

>>> dp_min_batch_per_device().expr
C*b_w/(2*M_X*W_ici)
>>> dp_min_batch_per_device().at({sym("C"): 459 * 10**12, sym("W_ici"): 18 * 10**10,
...                               sym("b_w"): 2, sym("M_X"): 3}).value
850
>>> fsdp_tp_x_opt().expr
sqrt(B)*sqrt(M_X)*sqrt(n_dev)/(sqrt(F)*sqrt(M_Y))
>>> tp_max_degree().expr
2*F*M_Y*W_ici/(C*b_x)

Axes: X is the data / FSDP degree, Y the tensor-parallel degree, Z the pipeline (or expert)
degree, ``n_dev`` all chips; ``M_X`` and ``M_Y`` count the hardware mesh axes X and Y span.
The book gives no pipeline-bubble formula, so none is offered here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy as sp

from .derivation import Derivation, Step, crossover, simplest
from .symbols import sym

__all__ = [
    "SCHEMES", "PHASES", "Scheme", "Phase", "Comm", "t_math", "t_comms", "t_step",
    "dp_min_batch", "dp_min_batch_per_device", "dp_max_devices", "dp_max_params",
    "fsdp_min_batch", "fsdp_min_batch_per_device", "fsdp_max_devices",
    "tp_max_degree", "tp_min_f",
    "fsdp_tp_x_opt", "fsdp_tp_y_opt", "fsdp_tp_min_batch", "fsdp_tp_min_batch_per_chip", "fsdp_tp_max_chips",
    "fsdp_tp_x_opt_sum_policy", "fsdp_tp_min_batch_sum_policy", "fsdp_tp_min_batch_per_chip_sum_policy",
    "dcn_min_batch", "dcn_min_batch_per_slice",
    "pipeline_t_comms_hop", "pipeline_t_comms",
    "gpu_dp_min_batch_per_gpu", "gpu_dp_min_batch", "gpu_dp_min_batch_per_gpu_moe",
    "gpu_dp_min_batch_per_gpu_few_nodes", "gpu_dp_min_batch_per_gpu_model_sharded",
    "gpu_tp_max_degree", "gpu_tp_max_degree_two_nodes",
    "gpu_ep_t_math", "gpu_ep_t_comms", "gpu_ep_min_f_few_nodes", "gpu_ep_min_f_many_nodes", "gpu_ep_min_f_limit",
    "step_time", "training_time", "batch_per_device", "memory_per_device", "min_chips_memory",
]

SCALING = "training.md, 'What Do We Mean By Scaling?'"
DP = "training.md, 'Data Parallelism'"
FSDP = "training.md, 'Fully-Sharded Data Parallelism (FSDP)'"
TP = "training.md, 'Tensor Parallelism'"
MIXED = "training.md, 'Combining FSDP and Tensor Parallelism'"
MIXED_V1 = "training.md (Feb 2025 text), 'Combining FSDP and Tensor Parallelism': communication times summed"
PIPE = "training.md, 'Pipelining'"
DCN = "training.md, 'Scaling Across Pods'"
PROBLEMS = "training.md, 'Some Problems to Work'"
APPLIED = "applied-training.md, 'Counting parameters and FLOPs'"
GPU_DP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Data Parallelism'"
GPU_TP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Tensor Parallelism'"
GPU_EP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Expert Parallelism'"
GPU_PP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Pipeline Parallelism'"
GPU_EX = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Examples' and 'Quiz 5'"

B, D, F, L, P = sym("B"), sym("D"), sym("F"), sym("L"), sym("P")
C, W = sym("C"), sym("W")
W_ici, W_dcn, W_gpu, W_node = sym("W_ici"), sym("W_dcn"), sym("W_gpu"), sym("W_node")
X, Y, Z = sym("X"), sym("Y"), sym("Z")
M_X, M_Y = sym("M_X"), sym("M_Y")
n_dev, n_slice, n_mb = sym("n_dev"), sym("n_slice"), sym("n_mb")
b_x, b_w, b_opt = sym("b_x"), sym("b_w"), sym("b_opt")
E, k = sym("E"), sym("k")
D_node, M_nodes = sym("D_node"), sym("M_nodes")
H_chip, MFU, tokens, A_act, n_ckpt = sym("H_chip"), sym("MFU"), sym("tokens"), sym("A_act"), sym("n_ckpt")

T_MATH, T_COMMS = r"T_{\mathrm{math}}", r"T_{\mathrm{comms}}"
T_FSDP, T_TP = r"T_{\mathrm{FSDP}}", r"T_{\mathrm{TP}}"
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


# -- data parallelism and FSDP ------------------------------------------------------------------------------

def _per_device(d: Derivation, devices: sp.Expr, label: str, title: str, why: str) -> Derivation:
    return d.extend(Step(label, simplest(d.expr / devices), why, "token"), title=title)


@functools.cache
def dp_min_batch() -> Derivation:
    return _balance("dp", "bwd", B, title="data parallelism: smallest global batch that stays compute-bound",
                    label="B^*", unit="token",
                    why="backward compute equals the gradient AllReduces; a larger batch is compute-bound")


@functools.cache
def dp_min_batch_per_device() -> Derivation:
    return _per_device(dp_min_batch(), X, r"B^*/X", "data parallelism: smallest per-device batch (compute-bound)",
                       "the global threshold shared by the X replicas: C/(M_X·W_ici) with bf16 gradients")


@functools.cache
def dp_max_devices() -> Derivation:
    return _balance("dp", "bwd", X, title="data parallelism: most replicas a batch keeps compute-bound",
                    label="X^*", unit="chip",
                    why="more replicas shrink each one's compute below the fixed AllReduce time")


@functools.cache
def dp_max_params() -> Derivation:
    per_param = Step(r"\mathrm{bytes}/P", b_w + b_opt, "bf16 parameters plus the optimizer's fp32 moments",
                     "byte/param")
    return crossover(P * per_param.expr, H_chip, P, title="data parallelism: largest model one chip holds (Adam)",
                     source=DP, lhs_label=r"\mathrm{bytes}", rhs_label=r"M_{\mathrm{chip}}", side_unit="byte",
                     label=r"P_{\max}", unit="param",
                     why="every replica keeps all parameters and optimizer state; activations and gradients ignored",
                     lead=(per_param,))


@functools.cache
def fsdp_min_batch() -> Derivation:
    return _balance("fsdp", "fwd", B, title="FSDP: smallest global batch that stays compute-bound",
                    label="B^*", unit="token",
                    why="forward compute equals the weight AllGathers (the backward pass gives the same ratio)")


@functools.cache
def fsdp_min_batch_per_device() -> Derivation:
    return _per_device(fsdp_min_batch(), X, r"B^*/X", "FSDP: smallest per-device batch (compute-bound)",
                       "the same per-device threshold as data parallelism")


@functools.cache
def fsdp_max_devices() -> Derivation:
    return _balance("fsdp", "fwd", X, title="FSDP: most chips a batch keeps compute-bound",
                    label="X^*", unit="chip", why="the global batch over the smallest per-device batch")


# -- tensor parallelism --------------------------------------------------------------------------------------

@functools.cache
def tp_max_degree() -> Derivation:
    return _balance("tp", "fwd", Y, title="tensor parallelism: largest degree that stays compute-bound",
                    label="Y^*", unit="chip",
                    why="the batch cancels: Y < M_Y·F·W_ici/C with bf16 activations, whatever the batch")


@functools.cache
def tp_min_f() -> Derivation:
    return _balance("tp", "fwd", F, title="tensor parallelism: smallest MLP width a Y-way split keeps compute-bound",
                    label="F^*", unit="element", why="F must exceed Y·C/(M_Y·W_ici) with bf16 activations")


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


# -- across pods over DCN --------------------------------------------------------------------------------------

@functools.cache
def dcn_min_batch() -> Derivation:
    return _balance("dcn", "bwd", B, title="DP across slices over DCN: smallest global batch that stays compute-bound",
                    label="B^*", unit="token",
                    why="backward compute equals the cross-slice gradient AllReduce over DCN")


@functools.cache
def dcn_min_batch_per_slice() -> Derivation:
    d = dcn_min_batch()
    return d.extend(Step(r"B^* n_{\mathrm{slice}}/n_{\mathrm{dev}}", simplest(d.expr * n_slice / n_dev),
                         "the batch each slice processes: C/W_dcn with bf16 gradients", "token"),
                    title="DP across slices over DCN: smallest per-slice batch")


# -- pipelining ----------------------------------------------------------------------------------------------

@functools.cache
def pipeline_t_comms_hop() -> Derivation:
    micro = Step(r"B/N_{\mathrm{MB}}", B / n_mb, "the batch cut into microbatches", "token")
    return Derivation("pipeline: one stage-to-stage transfer of a microbatch's activations", (
        micro,
        Step(r"\mathrm{bytes}", b_x * micro.expr * D, "one microbatch's [B/N_MB, D] activations", "byte"),
        Step(r"T_{\mathrm{hop}}", b_x * micro.expr * D / W,
             "sent point to point to the next stage over one hop (W from the level crossed)", "s"),
    ), GPU_PP, note="The book gives no bubble formula; none is modelled here.")


@functools.cache
def pipeline_t_comms() -> Derivation:
    hop = pipeline_t_comms_hop()
    hops = Step(r"\mathrm{hops}", n_mb + Z - 2, "N_MB + Z - 2 transfers in sequence through Z stages", "hop")
    return hop.extend(hops, Step(r"T_{\mathrm{PP}}", hop.expr * hops.expr,
                                 "hop time times the number of hops on the critical path", "s"),
                      title="pipeline: activation transfers of one forward pass")


# -- GPUs: data parallelism --------------------------------------------------------------------------------

def _gpu_dp_sides(bandwidth: sp.Expr, devices: sp.Expr, *, experts: bool = False) -> tuple[sp.Expr, sp.Expr]:
    if experts:
        return (8 * k * B * D * F / (devices * C), 4 * b_w * E * D * F / bandwidth)
    return 8 * B * D * F / (devices * C), 4 * b_w * D * F / bandwidth


def _gpu_dp(bandwidth: sp.Expr, title: str, why: str, *, devices: sp.Expr = X, per_device: bool = True,
            experts: bool = False, lead: tuple[Step, ...] = ()) -> Derivation:
    math, comms = _gpu_dp_sides(bandwidth, devices, experts=experts)
    d = crossover(math, comms, B, title=title, source=GPU_DP, lhs_label=rf"{T_MATH}^{{\mathrm{{bwd}}}}",
                  rhs_label=rf"{T_COMMS}^{{\mathrm{{bwd}}}}", side_unit="s", label="B^*", unit="token",
                  why="backward compute equals the gradient reduction (ReduceScatter + AllGather, no SHARP)", lead=lead)
    if not per_device:
        return d
    return _per_device(d, devices, "B^*/N", title, why)


@functools.cache
def gpu_dp_min_batch_per_gpu(level: str) -> Derivation:
    """Per-GPU batch for DP/ZeRO: inside one NVLink node (``level="node"``) or across the fat tree."""
    bandwidth = {"node": W_gpu, "cross_node": W_node}[level]
    where = "inside an NVLink node" if level == "node" else "across nodes of the fat tree"
    return _gpu_dp(bandwidth, f"GPU data parallelism {where}: smallest per-GPU batch",
                   f"C/{'W_gpu' if level == 'node' else 'W_node'} with bf16 gradients")


@functools.cache
def gpu_dp_min_batch() -> Derivation:
    return _gpu_dp(W_node, "GPU data parallelism across nodes: smallest global batch", "", per_device=False)


@functools.cache
def gpu_dp_min_batch_per_gpu_moe() -> Derivation:
    return _gpu_dp(W_node, "GPU data parallelism of a mixture of experts across nodes: smallest per-GPU batch",
                   "(E/k)·C/W_node: every expert's weights are reduced but each token uses only k of them",
                   experts=True)


@functools.cache
def gpu_dp_min_batch_per_gpu_few_nodes() -> Derivation:
    gpus = Step("N", D_node * M_nodes, "M nodes of D_node GPUs", "chip")
    math = 8 * B * D * F / (gpus.expr * C)
    comms = 4 * b_w * D * F * (M_nodes - 1) / (M_nodes * W_node)
    d = crossover(math, comms, B, title="GPU data parallelism over a few nodes: smallest global batch", source=GPU_DP,
                  lhs_label=rf"{T_MATH}^{{\mathrm{{bwd}}}}", rhs_label=rf"{T_COMMS}^{{\mathrm{{bwd}}}}",
                  side_unit="s", label="B^*", unit="token",
                  why="a ring over M nodes sends (M - 1)/M of the bytes through each node's egress", lead=(gpus,))
    return _per_device(d, gpus.expr, "B^*/N", "GPU data parallelism over a few nodes: smallest per-GPU batch",
                       "C/W_node·(M - 1)/M: two-way DP halves the threshold")


@functools.cache
def gpu_dp_min_batch_per_gpu_model_sharded() -> Derivation:
    nodes = Step(r"\mathrm{nodes}_Y", sp.Max(D_node, Y) / D_node,
                 "nodes one model replica spans (at least one): Y GPUs of model parallelism", "node")
    math = 8 * B * D * F / (n_dev * C)
    comms = 4 * b_w * D * F / (nodes.expr * W_node)
    d = crossover(math, comms, B, title="GPU data parallelism outside model parallelism: smallest global batch",
                  source=GPU_EX, lhs_label=rf"{T_MATH}^{{\mathrm{{bwd}}}}", rhs_label=rf"{T_COMMS}^{{\mathrm{{bwd}}}}",
                  side_unit="s", label="B^*", unit="token", lead=(nodes,),
                  why="each node holds 1/nodes_Y of the gradients, so the reduction leaves through that many "
                      "nodes' egress at once (the GPUs of a node reduce with other nodes, not each other)")
    return _per_device(d, n_dev, r"B^*/n_{\mathrm{dev}}",
                       "GPU data parallelism outside Y-way model parallelism: smallest per-GPU batch",
                       "C/W_node divided by the nodes a model replica spans")


# -- GPUs: tensor parallelism ---------------------------------------------------------------------------------

def _gpu_tp_sides(comms_factor: sp.Expr, bandwidth: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    return 4 * B * D * F / (Y * C), 2 * b_x * B * D * comms_factor / bandwidth


@functools.cache
def gpu_tp_max_degree(level: str) -> Derivation:
    """Largest compute-bound TP degree, inside a node (W_gpu) or across nodes (W_node)."""
    bandwidth = {"node": W_gpu, "cross_node": W_node}[level]
    math, comms = _gpu_tp_sides(sp.Integer(1), bandwidth)
    where = "inside a node" if level == "node" else "across nodes"
    return crossover(math, comms, Y, title=f"GPU tensor parallelism {where}: largest compute-bound degree",
                     source=GPU_TP, lhs_label=rf"{T_MATH}^{{\mathrm{{fwd}}}}",
                     rhs_label=rf"{T_COMMS}^{{\mathrm{{fwd}}}}", side_unit="s", label="Y^*", unit="chip",
                     why="an AllGather and a ReduceScatter of the activations per layer: Y < F·W/C with bf16")


@functools.cache
def gpu_tp_max_degree_two_nodes() -> Derivation:
    share = Step(r"f_{\mathrm{out}}", (Y - D_node) / Y, "the share of the activations that must leave the node", "1")
    math, comms = _gpu_tp_sides(share.expr, W_node)
    return crossover(math, comms, Y, title="GPU tensor parallelism spanning two nodes: largest compute-bound degree",
                     source=GPU_TP, lhs_label=rf"{T_MATH}^{{\mathrm{{fwd}}}}",
                     rhs_label=rf"{T_COMMS}^{{\mathrm{{fwd}}}}", side_unit="s", label="Y^*", unit="chip", lead=(share,),
                     why="F > (C/W_node)·(Y - D_node) with bf16: Y < D_node + F·W_node/C (for Y above D_node)")


# -- GPUs: expert parallelism ---------------------------------------------------------------------------------

def _ep_share() -> Step:
    return Step(r"f_{\mathrm{dest}}", sp.Min(D_node * k / Z, 1),
                "a token's k experts fall on at most k of the Z/D_node nodes", "1")


def _ep_terms(share: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    return (4 * B * k * D * F / (Z * C),
            2 * b_x * B * D * (Z - D_node) / (Z * W_node) * share)


@functools.cache
def gpu_ep_t_math() -> Derivation:
    return Derivation("GPU expert parallelism: forward compute time per MoE layer", (
        Step(r"\mathrm{FLOPs}", 4 * B * k * D * F / Z, "each token runs k experts' two matmuls; Z GPUs share them",
             "FLOP"),
        Step(rf"{T_MATH}^{{\mathrm{{fwd}}}}", _ep_terms(1)[0], "FLOPs over the peak", "s"),
    ), GPU_EP)


@functools.cache
def gpu_ep_t_comms() -> Derivation:
    share = _ep_share()
    return Derivation("GPU expert parallelism: forward AllToAll time per MoE layer", (
        share,
        Step(rf"{T_COMMS}^{{\mathrm{{fwd}}}}", _ep_terms(share.expr)[1],
             "dispatch and combine AllToAlls of b_x·B·D bytes; (Z - D_node)/Z of them leave the node", "s"),
    ), GPU_EP)


def _ep_min_f(share: sp.Expr, title: str, why: str) -> Derivation:
    math, comms = _ep_terms(share)
    return crossover(math, comms, F, title=title, source=GPU_EP, lhs_label=rf"{T_MATH}^{{\mathrm{{fwd}}}}",
                     rhs_label=rf"{T_COMMS}^{{\mathrm{{fwd}}}}", side_unit="s", label="F^*", unit="element", why=why)


@functools.cache
def gpu_ep_min_f_few_nodes() -> Derivation:
    return _ep_min_f(sp.Integer(1), "GPU expert parallelism with k ≥ Z/D_node: smallest compute-bound MLP width",
                     "every node receives from every token: F > (C/W_node)·(Z - D_node)/k with bf16")


@functools.cache
def gpu_ep_min_f_many_nodes() -> Derivation:
    return _ep_min_f(D_node * k / Z, "GPU expert parallelism with k < Z/D_node: smallest compute-bound MLP width",
                     "only k of the nodes receive a token, so k cancels: "
                     "F > D_node·(C/W_node)·(Z - D_node)/Z with bf16")


@functools.cache
def gpu_ep_min_f_limit() -> Derivation:
    d = gpu_ep_min_f_many_nodes()
    return d.extend(Step(r"\lim_{Z\to\infty} F^*", sp.limit(d.expr, Z, sp.oo),
                         "wide expert parallelism: F > 8·C/W_node on 8-GPU nodes with bf16", "element"),
                    title="GPU expert parallelism over many nodes: the MLP width it needs")


# -- step and training time -------------------------------------------------------------------------------

def _cluster() -> Step:
    return Step(r"C_{\mathrm{eff}}", n_dev * C * MFU, "all chips at the achieved share of their peak", "FLOP/s")


@functools.cache
def step_time() -> Derivation:
    return Derivation("time of one training step", (
        Step(r"\mathrm{FLOPs}", 6 * P * B, "6 FLOPs per parameter per token of the batch (2 forward, 4 backward)",
             "FLOP"),
        _cluster(),
        Step(r"T_{\mathrm{step}}", 6 * P * B / (n_dev * C * MFU), "the batch's FLOPs at the achieved rate", "s"),
    ), PROBLEMS)


@functools.cache
def training_time() -> Derivation:
    return Derivation("time of the whole training run", (
        Step(r"\mathrm{FLOPs}/\mathrm{token}", 6 * P, "2 FLOPs per parameter forward, 4 backward", "FLOP/token"),
        Step(r"\mathrm{FLOPs}", 6 * P * tokens, "FLOPs per token times the tokens of the run", "FLOP"),
        _cluster(),
        Step(r"T_{\mathrm{train}}", 6 * P * tokens / (n_dev * C * MFU), "the run's FLOPs at the achieved rate", "s"),
    ), APPLIED)


@functools.cache
def batch_per_device() -> Derivation:
    return Derivation("batch per device", (
        Step(r"B/n_{\mathrm{dev}}", B / n_dev, "the global batch in tokens over all devices", "token"),), SCALING)


# -- memory ----------------------------------------------------------------------------------------------------
#
# The activation bytes A_act come from the transformer quantities (checkpoints per layer, or the three
# FFW outputs); here they are only divided among the devices.

def _state() -> Step:
    return Step(r"\mathrm{bytes}_{\mathrm{state}}", (b_w + b_opt) * P,
                "parameters (b_w each) and optimizer state (b_opt each: 8 for Adam's fp32 moments)", "byte")


_SHARDS = {
    "dp": (X, "parameters and optimizer state replicated, activations split over the X replicas", False),
    "fsdp": (X, "parameters, optimizer state and activations all split over X", True),
    "tp": (Y, "parameters, optimizer state and activations all split over Y", True),
    "fsdp_tp": (X * Y, "everything split over the X·Y chips; nothing is stored twice", True),
    "pipeline": (Z, "each of the Z stages holds its layers' parameters, state and activations", True),
}


@functools.cache
def memory_per_device(key: str) -> Derivation:
    shards, why, sharded_state = _SHARDS[key]
    state = _state()
    total = state.expr / shards if sharded_state else state.expr
    return Derivation(f"memory per device: {key.replace('_', ' + ')}", (
        state,
        Step(r"\mathrm{bytes}_{\mathrm{dev}}", total + A_act / shards, why, "byte"),
    ), {"dp": DP, "fsdp": FSDP, "tp": TP, "fsdp_tp": MIXED, "pipeline": PIPE}[key])


@functools.cache
def min_chips_memory() -> Derivation:
    state = _state()
    total = Step(r"\mathrm{bytes}", state.expr + A_act, "state plus activations, sharded with nothing repeated", "byte")
    exact = crossover(total.expr / n_dev, H_chip, n_dev, title="fewest chips whose memory holds the training state",
                      source="applied-training.md, 'Counting parameters and FLOPs'",
                      lhs_label=r"\mathrm{bytes}_{\mathrm{dev}}", rhs_label=r"M_{\mathrm{chip}}", side_unit="byte",
                      label=r"n_{\mathrm{dev}}^*", unit="chip", lead=(state, total),
                      why="per-device bytes equal the chip's HBM (a fraction of a chip in general)")
    return exact.extend(Step(r"n_{\mathrm{dev}}", sp.ceiling(exact.expr), "whole chips: round up", "chip"))
