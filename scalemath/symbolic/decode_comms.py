"""The collectives of a model-parallel decode step, and the step time that counts them.

inference.md prices a decode step by its HBM traffic and FLOPs (F7.11) and treats the
activation collectives of model parallelism separately: F7.14 compares them with the
weight loading of one sharded matmul, Appendix B (F7.22) prices 2D weight-stationary
sharding and Appendix C (F7.23, F7.24) gives the latency floor of a small collective.
Here those pieces become the collective time of one whole decode step, ``t_comms``, for
each way of sharding a replica:

* **1D tensor parallelism** (Megatron, the book's "model parallelism"): per layer an
  AllGather of the [B, D] activations before, and a ReduceScatter after, the attention
  projections, and the same around the MLP: 4 collectives of b_x·B·D bytes. On a TPU slice
  each costs F7.23's ``max(t_hop·hops, V/(M_Y·W_ici))``: about |X|/2 hops per axis (the
  search passes the sum over the slice's axes), the bytes over the M_Y axes at once. On
  GPUs an engine AllReduces the activations after attention and after the MLP, two ring
  AllReduces per layer over NVLink, each at least ``t_coll`` (the catalog has no hop
  latency for GPUs: the search assumes 8 µs, llm-analysis's minimum message latency of
  an H100/A100 node).
* **2D weight-stationary** (Appendix B, F7.22): weights split over D along X and over F
  along YZ; per MLP one collective of [B, D/X] over YZ and two of [B, F/YZ] over X, and
  attention the same with N·H in place of F.
* **Expert parallelism** for a mixture of experts: attention (and any dense layer's MLP)
  tensor-parallel as in 1D, each MoE layer two AllToAlls (dispatch and combine) of the
  B·k routed copies of the [D] activations.

How the collectives combine with the rest of the step is a modelling choice the book
leaves open: its F8.11 check compares T_ICI with T_HBM per matmul, as if collective
matmuls hid one behind the other, while Appendix C warns that small collectives are
bound by latency, which nothing hides. Two step forms are registered:
:func:`decode_step_time_comms` puts the collectives on the critical path (each layer
waits for its activations; what ``scalemath serve`` uses by default) and
:func:`decode_step_time_overlap` is the book's overlap model, a lower bound.

>>> decode_step_time_comms().expr
B*S*kv_token/(W*n_dev) + t_comms + Max(2*B*P_active/(C*n_dev), P*b_w/(W*n_dev))
"""

from __future__ import annotations

import functools

import sympy as sp

from . import collectives as coll
from . import inference as inf
from .derivation import Derivation, Step
from .symbols import sym

__all__ = ["decode_t_comms", "decode_t_comms_gpu", "decode_t_comms_2d", "decode_t_comms_ep",
           "decode_t_comms_ep_gpu", "decode_step_time_comms", "decode_step_time_overlap", "prefill_servers",
           "cost_per_million_tokens_disaggregated"]

B, D, F, N, H, L, k = sym("B"), sym("D"), sym("F"), sym("N"), sym("H"), sym("L"), sym("k")
L_moe, n, b_x = sym("L_moe"), sym("n_dev"), sym("b_x")
W_ici, t_hop, hops, M_Y = sym("W_ici"), sym("t_hop"), sym("hops"), sym("M_Y")
W_gpu, W_node, D_node, t_coll = sym("W_gpu"), sym("W_node"), sym("D_node"), sym("t_coll")
X, Y, Z = sym("X"), sym("Y"), sym("Z")
t_comms, t_step, t_prefill, G = sym("t_comms"), sym("t_step"), sym("t_prefill"), sym("n_gen")
price, t_hour = sym("price"), sym("t_hour")

APPENDIX_B = inf.APPENDIX_B
APPENDIX_C = inf.APPENDIX_C
GENERATION = inf.GENERATION
T_COMMS = r"T_{\mathrm{comms}}"
_NOTE = ("Not printed in the book as a step total: it sums the book's per-collective costs (F7.14, F7.22, F7.23) "
         "over the layers of one decode step.")


def _activations() -> Step:
    return Step(r"V", b_x * B * D, "the [B, D] activations of one layer: one token of each of the B sequences, in "
                "the activations' dtype", "byte")


def _tpu_collective(volume: sp.Expr, label: str = r"T_{\mathrm{coll}}") -> tuple[Step, ...]:
    latency = Step(r"T_{\mathrm{lat}}", t_hop * hops,
                   "F7.23's latency floor T_min·|X|/2: about half of each axis in hops, summed over the axes the "
                   "collective spans, each hop at least t_hop", "s")
    bandwidth = Step(r"T_{\mathrm{bw}}", volume / (M_Y * W_ici),
                     "F7.23's bytes/W_ici: a bidirectional ring on each of the M_Y axes at once", "s")
    return latency, bandwidth, Step(label, sp.Max(latency.expr, bandwidth.expr),
                                    "Appendix C: whichever bound is larger sets the time of one collective", "s")


def _gpu_all_reduce(volume: sp.Expr) -> tuple[Step, ...]:
    inside = volume * (n - 1) / (n * W_gpu)
    outside = volume * (n - D_node) / (n * W_node)
    bandwidth = Step(r"T_{\mathrm{bw}}", 2 * sp.Max(inside, outside),
                     "a ring AllReduce is a ReduceScatter and an AllGather, each sending (n−1)/n of V at W_gpu over "
                     "NVLink; past one node the (n − D_node)/n of V from other nodes also crosses the node's egress "
                     "W_node (negative, so ignored, inside a node)", "s")
    return bandwidth, Step(r"T_{\mathrm{AR}}", sp.Max(t_coll, bandwidth.expr),
                           "at least t_coll however small the message (launch and synchronisation; assumed, the "
                           "catalog has no GPU hop latency)", "s")


@functools.cache
def decode_t_comms() -> Derivation:
    """1D tensor parallelism on a TPU slice: 4 collectives of the activations per layer."""
    v = _activations()
    steps = _tpu_collective(v.expr)
    return Derivation("decode step: tensor-parallel collectives over a TPU slice (1D, all layers)", (
        v, *steps, Step(T_COMMS, 4 * L * steps[-1].expr,
                        "per layer an AllGather before and a ReduceScatter after attention's projections, and the "
                        "same around the MLP (F7.14's pair per sharded matmul pair): 4 per layer, L layers", "s"),
    ), APPENDIX_C, note=_NOTE)


@functools.cache
def decode_t_comms_gpu() -> Derivation:
    """1D tensor parallelism on GPUs: two AllReduces of the activations per layer."""
    v = _activations()
    steps = _gpu_all_reduce(v.expr)
    return Derivation("decode step: tensor-parallel AllReduces over NVLink (1D, all layers)", (
        v, *steps, Step(T_COMMS, 2 * L * steps[-1].expr,
                        "one AllReduce after attention's output projection and one after the MLP, per layer", "s"),
    ), GENERATION, note=_NOTE + " The GPU latency floor t_coll is an assumption (8 µs in scalemath serve, after "
                                "llm-analysis's H100 configuration).")


@functools.cache
def decode_t_comms_2d() -> Derivation:
    """F7.22 per MLP, and the same for attention with N·H in place of F, each collective with its floor."""
    yz = Step(r"YZ", n / X, "the chips not on X: weights split over D along X and over F (or heads) along YZ",
              "chip")
    d_term = Step(r"T_{D}", sp.Max(t_hop * hops, b_x * B * D / (X * W_ici)),
                  "F7.22's [B, D/X] collective over the YZ chips, at least t_hop·hops (F7.23; hops over YZ's axes)",
                  "s")
    f_term = Step(r"T_{F}", 2 * sp.Max(t_hop * X / 2, b_x * B * F / (yz.expr * W_ici)),
                  "F7.22's two [B, F/YZ] collectives over X, each at least t_hop·X/2", "s")
    a_term = Step(r"T_{NH}", 2 * sp.Max(t_hop * X / 2, b_x * B * N * H / (yz.expr * W_ici)),
                  "attention's projections the same way with N·H (query heads × head size) in place of F "
                  "(Appendix B)", "s")
    return Derivation("decode step: 2D weight-stationary collectives (all layers)", (
        yz, d_term, f_term, a_term,
        Step(T_COMMS, L * (2 * d_term.expr + f_term.expr + a_term.expr),
             "per layer the MLP's T_D + T_F and attention's T_D + T_NH, one after the other (the book's count)",
             "s")), APPENDIX_B, note=_NOTE)


def _ep_steps(attention: Step, a2a_bw: sp.Expr, floor: sp.Expr, per_layer_tp: int) -> tuple[Step, ...]:
    routed = Step(r"V_{\mathrm{A2A}}", b_x * B * k * D,
                  "each of the B tokens is sent to its k experts: B·k copies of its [D] activations", "byte")
    a2a = Step(r"T_{\mathrm{A2A}}", sp.Max(floor, a2a_bw.subs(coll.V, routed.expr)),
               "one AllToAll of the routed copies over the n chips, at least the latency floor", "s")
    total = Step(T_COMMS, (2 * L - L_moe) * per_layer_tp * attention.expr / 2 + 2 * L_moe * a2a.expr,
                 "attention's tensor-parallel collectives in every layer and the dense MLPs' in the L − L_MoE dense "
                 "layers, plus a dispatch and a combine AllToAll in each of the L_MoE expert layers", "s")
    return routed, a2a, total


@functools.cache
def decode_t_comms_ep() -> Derivation:
    """Expert parallelism on a TPU slice X × Y × Z (Z = 1 on a 2D torus)."""
    v = _activations()
    steps = _tpu_collective(v.expr)
    torus = coll.all_to_all_time_torus().expr.subs(coll.X * coll.Y * coll.Z, n)
    return Derivation("decode step: expert-parallel collectives over a TPU slice (all layers)", (
        v, *steps, *_ep_steps(steps[-1], torus, t_hop * hops, 4)), APPENDIX_C, note=_NOTE + (
        " The AllToAll is the book's torus cost V·max(X, Y, Z)/(4·n·W_ici) with the slice's axes."))


@functools.cache
def decode_t_comms_ep_gpu() -> Derivation:
    """Expert parallelism on GPUs: AllReduces for attention, AllToAlls for the experts."""
    v = _activations()
    steps = _gpu_all_reduce(v.expr)
    inside = coll.V * (n - 1) / (n**2 * W_gpu)
    outside = coll.V * D_node * (n - D_node) / (n**2 * W_node)
    return Derivation("decode step: expert-parallel collectives over NVLink (all layers)", (
        v, *steps, *_ep_steps(steps[-1], sp.Max(inside, outside), t_coll, 2)), GENERATION, note=_NOTE + (
        " The AllToAll sends (n−1)/n² of V from each GPU over NVLink (gpus.md); past one node a node's D_node GPUs "
        "also send D_node·(n − D_node)/n² of V out through W_node."))


def _decode_parts() -> tuple[Step, Step, Step]:
    steps = {s.label: s for s in inf.decode_step_time().steps}
    return steps[inf.T_MATH], steps[inf.T_W], steps[inf.T_KV]


@functools.cache
def decode_step_time_comms() -> Derivation:
    math, weights, kv = _decode_parts()
    comms = Step(T_COMMS, t_comms, "the step's collectives (inference.decode.t_comms and its variants)", "s")
    return Derivation("decode step time with the model-parallel collectives on the critical path", (
        *inf.decode_step_time().steps[:-1], comms,
        Step(inf.T_STEP, kv.expr + sp.Max(math.expr, weights.expr) + comms.expr,
             "F7.11's KV loading plus the larger of compute and weight loading, plus the collectives: each layer "
             "waits for its gathered or reduced activations before its next matmul, and latency-bound collectives "
             "(Appendix C) cannot hide behind anything; an upper bound where collective matmuls overlap them",
             "s")), inf.ESTIMATES, note="The book's F7.11 has no collective term; this adds F7.23's collectives in "
                                        "series. inference.decode.step_time_overlap is the overlapped bound.")


@functools.cache
def decode_step_time_overlap() -> Derivation:
    math, weights, kv = _decode_parts()
    comms = Step(T_COMMS, t_comms, "the step's collectives (inference.decode.t_comms and its variants)", "s")
    return Derivation("decode step time with the collectives overlapped (the book's roofline for sharded matmuls)", (
        *inf.decode_step_time().steps[:-1], comms,
        Step(inf.T_STEP, kv.expr + sp.Max(math.expr, weights.expr, comms.expr),
             "F8.11's comparison made a step model: collective matmuls hide the collectives behind compute and "
             "weight loading, so the largest of the three sets the linear layers' time; a lower bound", "s")),
        inf.GENERATION, note="The book compares T_ICI with T_HBM per matmul (F7.14, F8.11); summing both over a "
                             "step is this project's.")


@functools.cache
def prefill_servers() -> Derivation:
    ratio = inf.prefill_to_generate_ratio()
    return ratio.extend(Step(r"n_{\mathrm{P}}", sp.ceiling(ratio.expr),
                             "whole prefill servers for one generate server: rounded up, since fewer would let "
                             "requests queue for their prefill", "1"),
                        title="fewest whole prefill servers that keep one generate server busy (disaggregated)")


@functools.cache
def cost_per_million_tokens_disaggregated() -> Derivation:
    ratio = inf.prefill_to_generate_ratio().result
    servers = Step(r"n_{\mathrm{P}}", sp.ceiling(ratio.expr), "whole prefill servers that keep one generate server "
                   "busy: B·T_prefill/(T_step·G), rounded up", "1")
    chips = Step(r"n_{\mathrm{chips}}", n * (1 + servers.expr),
                 "the generate server and its prefill servers, each of n chips", "chip")
    rate = Step(r"\mathrm{tokens/s}", B / t_step, "B generated tokens per decode step", "token/s")
    per_m = Step(r"\mathrm{cost}_{10^6}", 10**6 * price * chips.expr / (t_hour * rate.expr),
                 "every chip's price for the hours a million tokens take", "cent")
    return Derivation("cost per million generated tokens, prefill servers included (disaggregated), in cents",
                      (ratio, servers, chips, rate, per_m), inf.PREFILL,
                      note="The book says only that throughput per chip maps directly to cost per token; counting "
                           "the whole prefill servers is this project's.")
