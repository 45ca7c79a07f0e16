"""One training configuration priced as runs are measured: memory per chip and step time from achievable rates.

:mod:`.training_config` prices a configuration the book's way: compute at the peak, every collective hidden
under it, the whole step then divided by an MFU the user gives. Here nothing is divided by an MFU; the step is
built from figures a catalog can source, so that MFU is what comes out:

- the matmuls run at ``C_mm``, or as fast as each micro-batch can read the device's weights from HBM, the FLOPs/s a chip achieves on large GEMMs (measured, below the peak ``C``), and
  they include attention's dot products over the causal positions, ``(6 + 2r)·L·N·H·T`` per token (a causal
  kernel computes the lower triangle only);
- each collective moves ``(n - 1)/n`` of its bytes through each chip at the achievable bandwidth of the network
  it crosses, plus ``α`` per ring step;
- tensor-parallel collectives are exposed (added to the compute, Megatron-LM's default) unless ``o_TP = 1``
  (overlapped); expert AllToAlls likewise with ``o_EP`` (DeepSeek-V3's DualPipe overlaps them);
- context parallelism splits each sequence over ``n_CP`` chips and passes keys and values around them (ring
  attention, or the all-gather the Llama 3 paper uses: the same bytes), hidden under the attention compute;
- the pipeline's fill and drain is ``f_bubble·(n_PP - 1)/v`` micro-batch slots with ``v`` virtual stages per
  device (Narayanan et al. 2021, Section 2.2.2: the interleaved schedule divides the bubble by v), and each
  micro-batch then crosses ``v`` times as many stage boundaries;
- the device that sets the pace is the fullest (whole layers, the split rounded up), or the last, which alone
  computes the output projection's logits; the split's spare layer slots are left on the last device (the Llama 3
  paper, Section 3.3.2, takes a layer off its first and last stages).

The gradient reduction across the ``n_DP·n_CP`` ranks holding the same weights overlaps only the last
micro-batch's backward pass, as in the book's model; with ZeRO the AllGather of the updated weights follows the
optimizer step, exposed unless ``o_PG = 1`` overlaps it with the next step's first forward pass.
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step
from .symbols import sym
from .training_config import WORKING_SET, _micro_batch, _params_per_device, _share
from .transformer.memory import element_bytes

__all__ = ["memory_per_device", "step_time", "korthikanti_bytes"]

SOURCE = ("Narayanan et al. 2021 (Megatron-LM, SC21), Sections 2.2 and 3; Korthikanti et al. 2022, Section 4.2.3; "
          "the Llama 3 paper (Dubey et al. 2024), Section 3.3.2; DeepSeek-V3 technical report, Section 3.2; "
          "training.md and gpus.md of the book for the rest")

B, D, L, P, P_active, k, T = sym("B"), sym("D"), sym("L"), sym("P"), sym("P_active"), sym("k"), sym("T")
N, H, kv_cp = sym("N"), sym("H_att"), sym("kv_cp")
C_mm, C_attn, W_hbm = sym("C_mm"), sym("C_attn"), sym("W_hbm")
b_x, b_w, b_g, b_opt = sym("b_x"), sym("b_w"), sym("b_g"), sym("b_opt")
n_dp, n_fsdp, n_tp, n_pp, n_ep, n_cp = (sym(n) for n in ("n_dp", "n_fsdp", "n_tp", "n_pp", "n_ep", "n_cp"))
n_zero, n_mb, n_ckpt, r, f_bubble, n_v = (sym(n) for n in ("n_zero", "n_mb", "n_ckpt", "r_remat", "f_bubble", "n_v"))
s_gpipe, o_tp, o_ep, o_dp, u = sym("s_gpipe"), sym("o_tp"), sym("o_ep"), sym("o_dp"), sym("u_attn")
o_pg = sym("o_pg")
F, n_mlp, s_sp, d, z2, q_sel = sym("F"), sym("n_mlp"), sym("s_sp"), sym("d_drop"), sym("z_2"), sym("q_sel")
m_route = sym("m_route")
V_vocab = sym("V_vocab")
P_exp, L_moe = sym("P_exp"), sym("L_moe")
W_tp, W_cp, W_fsdp, W_dp, W_ep, W_pp = (sym(n) for n in ("W_tp", "W_cp", "W_fsdp", "W_dp", "W_ep", "W_pp"))
a_tp, a_cp, a_fsdp, a_dp, a_ep, a_pp = (sym(n) for n in ("a_tp", "a_cp", "a_fsdp", "a_dp", "a_ep", "a_pp"))

_P_DENSE = P - P_exp


def _chips() -> Step:
    return Step(r"n_{\mathrm{dev}}", n_dp * n_fsdp * n_tp * n_pp * n_cp,
                "replicas × FSDP × TP × context-parallel × pipeline stages", "chip")


def _layers_per_device() -> Step:
    return Step(r"L_{\mathrm{dev}}", n_v * sp.ceiling(L / (n_pp * n_v)),
                "v virtual stages of whole layers per device: the fullest sets the pace", "layer")


def korthikanti_bytes() -> sp.Expr:
    """Bytes per token of one layer's saved activations after Korthikanti et al. 2022 (16-bit, Section 4): without
    recomputation s·b·h·(34 + 5·a·s/h), of which 10 + 24/t stay whole on each TP rank without sequence parallelism
    (Equation 2) and all is split over t with it (Equation 4); selective recomputation (q_sel = 1) drops the
    5·a·s/h of attention's scores (Section 5); full recomputation (r = 1) keeps the layer's input, 2·s·b·h (split
    over t with sequence parallelism). Without dropout the two hidden masks (2 of the 34) and the attention
    dropout's mask and output (3 of the 5) are not kept; a fused attention kernel keeps no scores at all."""
    dense = 34 - 2 * (1 - d)
    kept = D * (s_sp * dense / n_tp + (1 - s_sp) * (10 + (dense - 10) / n_tp)) \
        + u * (1 - q_sel) * (2 + 3 * d) * N * T / n_tp
    return (1 - r) * kept + r * 2 * D * (s_sp / n_tp + 1 - s_sp)


@functools.cache
def memory_per_device(optimizer: str = "book", activations: str = "book") -> Derivation:
    """Memory per chip of a run's configuration: the book's terms (see :func:`.training_config.memory_per_device`),
    gradients split over the replicas too with ZeRO-2, the activations also split over the n_CP chips of a sequence,
    and the micro-batches in flight as the schedule keeps them: all N_MB for GPipe, min(n_PP, N_MB) for 1F1B, and
    (1 + (n_PP - 1)/(n_PP·v)) times that on the first device with v > 1 interleaved stages (Korthikanti et al. 2022,
    Section 4.2.3). Under the ``activations`` convention "korthikanti" each layer keeps Korthikanti et al.'s bytes for
    the checkpointing policy (:func:`korthikanti_bytes`) instead of the book's c saved tensors."""
    grad_b, opt_b, opt_why = element_bytes(optimizer)
    opt_why = "" if optimizer == "book" else f" ({opt_why})"
    p_dev, mb, layers = _params_per_device(), _micro_batch(), _layers_per_device()
    weights = Step(r"\mathrm{bytes}_{w}", b_w * p_dev.expr / n_fsdp, "weights, split n_FSDP ways", "byte")
    grads = Step(r"\mathrm{bytes}_{g}",
                 grad_b * (_P_DENSE / (1 + z2 * (n_zero - 1)) + P_exp / sp.Max(n_ep, 1 + z2 * (n_zero - 1)))
                 / (n_tp * n_pp * n_fsdp),
                 "gradients, split like the weights and, with ZeRO-2, over the replicas like the optimizer state"
                 + opt_why, "byte")
    state = Step(r"\mathrm{bytes}_{\mathrm{opt}}",
                 opt_b * (_P_DENSE / n_zero + P_exp / sp.Max(n_ep, n_zero)) / (n_tp * n_pp * n_fsdp),
                 "optimizer state, split like the weights and, with ZeRO-1, over the n_Z1 replicas too" + opt_why,
                 "byte")
    interleaved = 1 + sp.Min(1, n_v - 1) * (n_pp - 1) / (n_pp * n_v)
    flight = Step(r"N_{\mathrm{flight}}", s_gpipe * n_mb + (1 - s_gpipe) * sp.Min(n_pp, n_mb) * interleaved,
                  "micro-batches whose activations the first device keeps: all of them (GPipe), min(n_PP, N_MB) "
                  "(1F1B), times 1 + (n_PP - 1)/(n_PP·v) when interleaved", "1")
    if activations == "korthikanti":
        per_layer = korthikanti_bytes()
        whole = per_layer.subs({r: 0, q_sel: 0})  # one layer's activations while it is recomputed
        acts = Step(r"\mathrm{bytes}_{\mathrm{act}}",
                    mb.expr / n_cp * (per_layer * layers.expr * flight.expr + r * whole),
                    "Korthikanti et al. 2022's bytes per token of each layer's activations under the checkpointing "
                    "policy (split over the TP ranks as sequence parallelism allows), for the device's layers and "
                    "the micro-batches in flight, over the n_CP chips of a sequence; with full recomputation, plus "
                    "one layer's whole activations while it is recomputed", "byte")
    else:
        acts = Step(r"\mathrm{bytes}_{\mathrm{act}}",
                    b_x * D * mb.expr / (n_tp * n_cp) * (n_ckpt * layers.expr * flight.expr + WORKING_SET * r),
                    "c saved [B_mb, D] tensors per layer of the device, split over the TP ranks (sequence "
                    "parallelism) and the n_CP chips of a sequence, for the micro-batches in flight; plus the "
                    f"{WORKING_SET} intermediates of the layer being recomputed when r = 1", "byte")
    total = Step(r"\mathrm{bytes}_{\mathrm{dev}}", weights.expr + grads.expr + state.expr + acts.expr,
                 "weights + gradients + optimizer state + activations", "byte")
    return Derivation("memory per chip of one training run's configuration",
                      (p_dev, weights, grads, state, mb, layers, flight, acts, total), SOURCE)


def _time_steps() -> tuple[Step, ...]:
    chips, p_dev, mb, layers = _chips(), _params_per_device(), _micro_batch(), _layers_per_device()
    per_chip = B / (n_dp * n_fsdp * n_cp)  # tokens of the step one TP group handles
    flops = Step(r"F_{\mathrm{tok}}", (6 + 2 * r) * (P_active + (1 + u) * L * N * H * T),
                 "FLOPs per token the chips run: 6·P_active for the matmuls and 6·L·N·H·T for attention's causal "
                 "dot products (a fused causal kernel skips the upper triangle; unfused, every position is "
                 "multiplied, twice that), a third more of each with rematerialisation", "FLOP")
    per_layer = (P_active - D * V_vocab) / (L * C_mm) + (1 + u) * N * H * T / C_attn  # one layer, per token and pass
    last = sp.Max(layers.expr - (n_pp * layers.expr - L), 0)  # the last device's layers: the split's spare slots
    math = Step(r"T_{\mathrm{math}}",
                (6 + 2 * r) * B * n_pp / chips.expr
                * sp.Max(layers.expr * per_layer, last * per_layer + D * V_vocab / C_mm, evaluate=False),
                "the weights' matmuls at the rate large GEMMs achieve and attention's dot products at the rate its "
                "kernel achieves, over the chips, on the device that sets the pace: the fullest device's L_dev "
                "layers, or the last device's (the split's spare slots left on it) with the output projection's "
                "D·V logits, which only the last stage computes, whichever takes longer", "s")
    weights = Step(r"T_{\mathrm{HBM}}",
                   n_mb * ((2 + r) * b_w + 2 * b_g) * p_dev.expr / W_hbm,
                   "each micro-batch reads the device's weights from HBM in the forward and backward passes (and the "
                   "recomputation) and adds into its gradients (a read and a write): the matmuls cannot run faster "
                   "than these bytes arrive (the book's roofline, applied per micro-batch)", "s")
    elementwise = Step(r"T_{\mathrm{elem}}",
                       (3 + r) * b_x * per_chip * layers.expr / W_hbm
                       * ((10 + 5 * d) * D * (s_sp / n_tp + 1 - s_sp)
                          + (k * n_mlp * F + u * (4 + 5 * d / 2) * N * T) / n_tp),
                       "the memory-bound operations between the matmuls, per token and layer: two norms (read and "
                       "write D each), two residual adds (read 2D, write D) and with dropout two hidden dropouts "
                       "(read D, write D and a 1-byte mask), split over the TP ranks only with sequence parallelism; "
                       "the MLP's activation (read and write n_mlp·F over the k experts a token visits) and, "
                       "unfused, the attention scores (written, read and written by the softmax, read: 4 per head "
                       "and position, 2.5 more with attention dropout), split over the TP ranks by heads; the "
                       "backward pass moves twice the forward's bytes, a recomputation once more; at the HBM "
                       "bandwidth", "s")
    compute = Step(r"T_{\mathrm{compute}}", sp.Max(math.expr, weights.expr, evaluate=False) + elementwise.expr,
                   "the matmuls at their achievable rate (or the weight traffic if it takes longer), then the "
                   "memory-bound operations", "s")
    ring = lambda n, a: n_mb * layers.expr * (n - 1) * a  # noqa: E731  one ring step per chip per collective
    tp = Step(r"T_{\mathrm{TP}}",
              (8 + 4 * r) * (b_x * D * per_chip * layers.expr * _share(n_tp) / W_tp + ring(n_tp, a_tp)),
              "per layer an AllGather and a ReduceScatter of the [tokens, D] activations around attention and "
              "around the MLP, forward and backward (and again when recomputing), at the achievable bandwidth "
              "plus α per ring step", "s")
    ep = Step(r"T_{\mathrm{EP}}",
              (4 + 2 * r) * (sp.Min(k, m_route) * b_x * D * per_chip / n_tp * _share(n_ep) * L_moe / n_pp / W_ep
                             + n_mb * L_moe / n_pp * (n_ep - 1) * a_ep),
              "per MoE layer a dispatch and a combine AllToAll of each token's k copies (at most M_route over the "
              "network the expert axis crosses when routing is limited to M_route nodes, the rest forwarded inside "
              "a node), forward and backward", "s")
    cp = Step(r"T_{\mathrm{CP}}",
              (3 + r) * (kv_cp * b_x * per_chip * n_cp / n_tp * layers.expr * _share(n_cp) / W_cp
                         + ring(n_cp, a_cp)),
              "per layer each chip receives the rest of its sequence's keys and values (n_CP - 1 of n_CP "
              "shards), again in the backward pass with their gradients: passed while attention computes", "s")
    fsdp = Step(r"T_{\mathrm{FSDP}}",
                n_mb * ((2 + r) * b_w + b_g) * p_dev.expr * _share(n_fsdp) / W_fsdp + (3 + r) * ring(n_fsdp, a_fsdp),
                "per micro-batch the weights are gathered for the forward and backward passes (and the "
                "recomputation) and the gradients reduce-scattered", "s")
    hops = (n_v * n_mb + n_pp - 2) * sp.Min(1, n_pp - 1)
    pp = Step(r"T_{\mathrm{PP}}", 2 * hops * (b_x * D * mb.expr / (n_tp * n_cp) / W_pp + a_pp),
              "each micro-batch's activations (forward) and their gradients (backward) hop stage to stage, "
              "v times per device when interleaved: v·N_MB + n_PP - 2 hops on the critical path", "s")
    replicas = n_dp * n_cp
    zero = sp.Min(1, n_zero - 1)  # 1 when the optimizer state is split over the replicas (ZeRO-1 or 2)
    one_pass = lambda b: (b * (_P_DENSE * _share(replicas) + P_exp / n_ep * (replicas - n_ep) / replicas)  # noqa: E731
                          / (n_tp * n_pp * n_fsdp * W_dp) + (replicas - 1) * a_dp)
    reduction = (2 - zero + z2 * (n_mb - 1)) * one_pass(b_g)
    gather = zero * one_pass(b_w)
    dp = Step(r"T_{\mathrm{DP}}", reduction + gather,
              "an AllReduce of each chip's gradient shard across the n_DP·n_CP ranks holding the same weights, once "
              "per step; with ZeRO-1 a ReduceScatter of the gradients and an AllGather of the updated weights (in "
              "their own dtype); with ZeRO-2 the ReduceScatter every micro-batch", "s")
    attention = (6 + 2 * r) * (1 + u) * L * N * H * T / C_attn * B / chips.expr * layers.expr * n_pp / L
    exposed = Step(r"T_{\mathrm{exposed}}",
                   (1 - o_tp) * tp.expr + (1 - o_ep) * ep.expr + sp.Max(cp.expr, attention, evaluate=False) - attention,
                   "the tensor-parallel collectives and expert AllToAlls that do not overlap compute wait for it, and "
                   "the key/value passes for what attention's own compute does not cover", "s")
    comms = Step(r"T_{\mathrm{comms}}",
                 sp.Max(o_tp * tp.expr, o_ep * ep.expr, fsdp.expr, pp.expr, evaluate=False),
                 "the overlapped collectives of different axes run at once: the slowest of them", "s")
    busy = Step(r"T_{\mathrm{busy}}", sp.Max(compute.expr + exposed.expr, comms.expr, evaluate=False),
                "the compute and the exposed collectives, or the overlapped collectives if they take longer", "s")
    pipe = Step(r"T_{\mathrm{pipe}}", busy.expr * (n_mb + f_bubble * (n_pp - 1) / n_v) / n_mb,
                "the pipeline fills and drains once per step: (n_PP - 1)/v idle micro-batch slots (none with a "
                "zero-bubble schedule)", "s")
    last_backward = math.expr * (4 + 2 * r) / ((6 + 2 * r) * n_mb) * (1 + z2 * (n_mb - 1))  # ZeRO-2: every one
    first_forward = math.expr * 2 / ((6 + 2 * r) * n_mb)
    dp_exposed = Step(r"T_{\mathrm{DP}}^{\mathrm{exposed}}",
                      o_dp * (sp.Max(reduction, last_backward, evaluate=False) - last_backward) + (1 - o_dp) * reduction
                      + o_pg * (sp.Max(gather, first_forward, evaluate=False) - first_forward) + (1 - o_pg) * gather,
                      "the gradient reduction overlaps only the last micro-batch's backward pass (with ZeRO-2, each "
                      "micro-batch's), what it takes beyond that is exposed; with o_DP = 0 it waits for the backward "
                      "pass to end. ZeRO's AllGather of the updated weights waits for the optimizer step: it is "
                      "exposed, or with o_PG = 1 overlaps the next step's first forward pass (Megatron-LM's "
                      "--overlap-param-gather, FSDP's prefetch)", "s")
    step = Step(r"T_{\mathrm{step}}", pipe.expr + dp_exposed.expr,
                "the pipelined passes plus the exposed reduction: no MFU is assumed", "s")
    return (chips, layers, flops, math, weights, elementwise, compute, tp, ep, cp, fsdp, pp, dp, exposed, comms, busy, pipe, dp_exposed, step)


@functools.cache
def step_time() -> Derivation:
    return Derivation("step time of one training run's configuration, from achievable rates", _time_steps(),
                      SOURCE)
