"""One training configuration, priced whole: memory per chip and step time (``scalemath plan``).

The book analyses each kind of parallelism on its own (:mod:`.parallelism`); a real run mixes
them. Here one configuration is ``n_DP`` data-parallel replicas × ``n_FSDP`` FSDP shards ×
``n_TP`` tensor-parallel × ``n_PP`` pipeline stages, with ``n_EP`` expert shards carved out of
the replicas, ``N_MB`` micro-batches per step (gradient accumulation, and the pipeline's
micro-batches), ``c`` saved activations of shape [tokens, D] per layer and ``r`` forward passes
redone in the backward pass. Each axis has the per-chip bandwidth ``W_TP``, ``W_FSDP``, ... of the
network it crosses; which network that is (NVLink, the scale-out NICs, ICI axes, DCN) is decided by
the search when it places the axes.

The time model is the book's: every communication overlaps with compute (the slowest of them sets
the pace), a collective over ``n`` chips moves ``(n - 1)/n`` of its bytes through each chip, the
gradient reduction across replicas overlaps only the last micro-batch's backward pass (gpus.md,
pipelining: "gradient RS/AR can't start until the last microbatch clears a stage"), and the
pipeline fills and drains once per step: ``n_PP - 1`` idle micro-batch slots (the bubble of
GPipe and 1F1B schedules, which the book shows but does not write down; ``f_bubble = 0`` for the
zero-bubble schedules it mentions). Compute is the model's 6·P_active FLOPs per token at peak (block
rematerialisation adds a forward pass, 2·P_active); as the book does, compute-boundness is judged at
peak and the step is then priced at ``MFU``: the roofline time over MFU.

>>> d = memory_per_device()
>>> d.result.unit, [s.label for s in d.steps][:2]
('byte', ['P_{\\\\mathrm{dev}}', '\\\\mathrm{bytes}_{w}'])
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step
from .symbols import sym
from .transformer.memory import element_bytes

__all__ = ["memory_per_device", "step_time", "training_time", "WORKING_SET"]

SOURCE = ("training.md ('Pipelining', 'Combining FSDP and Tensor Parallelism'), applied-training.md, gpus.md "
          "('Rooflines for LLM Scaling on GPUs'), transformers.md ('Gradient checkpointing')")

B, D, L, P, P_active, k = sym("B"), sym("D"), sym("L"), sym("P"), sym("P_active"), sym("k")
C, MFU, H_chip, tokens = sym("C"), sym("MFU"), sym("H_chip"), sym("tokens")
b_x, b_w, b_g, b_opt = sym("b_x"), sym("b_w"), sym("b_g"), sym("b_opt")
n_dp, n_fsdp, n_tp, n_pp, n_ep = sym("n_dp"), sym("n_fsdp"), sym("n_tp"), sym("n_pp"), sym("n_ep")
n_zero, n_mb, n_ckpt, r, f_bubble = sym("n_zero"), sym("n_mb"), sym("n_ckpt"), sym("r_remat"), sym("f_bubble")
P_exp, L_moe = sym("P_exp"), sym("L_moe")
W_tp, W_fsdp, W_dp, W_ep, W_pp = sym("W_tp"), sym("W_fsdp"), sym("W_dp"), sym("W_ep"), sym("W_pp")

#: [tokens, D]-sized intermediates of the one layer being rematerialised (transformers.md: "about 20")
WORKING_SET = 20

_P_DENSE = P - P_exp


def _share(n: sp.Symbol) -> sp.Expr:
    """Share of a collective's bytes that leaves each of n chips: (n - 1)/n, nothing for n = 1."""
    return (n - 1) / n


def _chips() -> Step:
    return Step(r"n_{\mathrm{dev}}", n_dp * n_fsdp * n_tp * n_pp, "replicas × FSDP × TP × pipeline stages",
                "chip")


def _params_per_device() -> Step:
    return Step(r"P_{\mathrm{dev}}", (_P_DENSE + P_exp / n_ep) / (n_tp * n_pp),
                "a stage's share of the layers, split n_TP ways; each expert shard holds 1/n_EP of the experts",
                "param")


def _micro_batch() -> Step:
    return Step(r"B_{\mathrm{mb}}", B / (n_dp * n_fsdp * n_mb),
                "the batch split over the n_DP·n_FSDP data ranks, then into N_MB micro-batches", "token")


def _layers_per_stage() -> Step:
    return Step(r"L_{\mathrm{stage}}", sp.ceiling(L / n_pp), "whole layers: the fullest stage sets the pace",
                "layer")


@functools.cache
def memory_per_device(optimizer: str = "book") -> Derivation:
    """Memory per chip; under an ``optimizer`` convention other than the book's, its gradient and optimizer bytes
    (mixed precision: fp32 gradients and 12 bytes of master copy and moments; with ZeRO-1 over d replicas that is
    Megatron's distributed optimizer, 6 + 12/d bytes per parameter for bf16 weights)."""
    grad_b, opt_b, opt_why = element_bytes(optimizer)
    opt_why = "" if optimizer == "book" else f" ({opt_why})"
    p_dev, mb, layers = _params_per_device(), _micro_batch(), _layers_per_stage()
    weights = Step(r"\mathrm{bytes}_{w}", b_w * p_dev.expr / n_fsdp, "weights, split n_FSDP ways", "byte")
    grads = Step(r"\mathrm{bytes}_{g}", grad_b * p_dev.expr / n_fsdp, "gradients, split like the weights" + opt_why,
                 "byte")
    optimizer = Step(r"\mathrm{bytes}_{\mathrm{opt}}",
                     opt_b * (_P_DENSE / n_zero + P_exp / sp.Max(n_ep, n_zero)) / (n_tp * n_pp * n_fsdp),
                     "optimizer state, split like the weights and, with ZeRO-1, over the n_Z1 replicas too "
                     "(an expert's state over its n_Z1/n_EP replicas)" + opt_why, "byte")
    in_flight = sp.Min(n_pp, n_mb)
    acts = Step(r"\mathrm{bytes}_{\mathrm{act}}",
                b_x * D * mb.expr / n_tp * (n_ckpt * layers.expr * in_flight + WORKING_SET * r),
                f"c saved [B_mb, D] tensors per layer of the stage, split over the TP ranks (sequence parallelism), "
                f"for min(n_PP, N_MB) micro-batches in flight (1F1B), plus the {WORKING_SET} intermediates of the "
                f"layer being recomputed when r = 1", "byte")
    total = Step(r"\mathrm{bytes}_{\mathrm{dev}}", weights.expr + grads.expr + optimizer.expr + acts.expr,
                 "weights + gradients + optimizer state + activations", "byte")
    return Derivation("memory per chip of one training configuration",
                      (p_dev, weights, grads, optimizer, mb, layers, acts, total), SOURCE)


def _time_steps() -> tuple[Step, ...]:
    chips, p_dev, mb, layers = _chips(), _params_per_device(), _micro_batch(), _layers_per_stage()
    per_replica = B / (n_dp * n_fsdp)
    math = Step(r"T_{\mathrm{math}}", (6 + 2 * r) * P_active * B / (chips.expr * C),
                "6·P_active FLOPs per token (plus 2·P_active with rematerialisation) at the chips' peak", "s")
    tp = Step(r"T_{\mathrm{TP}}",
              (8 + 4 * r) * b_x * D * per_replica * layers.expr * _share(n_tp) / W_tp,
              "per layer an AllGather and a ReduceScatter of the [tokens, D] activations around attention and "
              "around the MLP, forward and backward (and again when recomputing)", "s")
    ep = Step(r"T_{\mathrm{EP}}",
              (4 + 2 * r) * k * b_x * D * per_replica / n_tp * _share(n_ep) * L_moe / n_pp / W_ep,
              "per MoE layer a dispatch and a combine AllToAll of each token's k copies, forward and backward", "s")
    fsdp = Step(r"T_{\mathrm{FSDP}}",
                n_mb * ((2 + r) * b_w + b_g) * p_dev.expr * _share(n_fsdp) / W_fsdp,
                "per micro-batch the weights are gathered for the forward and backward passes (and the "
                "recomputation) and the gradients reduce-scattered", "s")
    pp = Step(r"T_{\mathrm{PP}}",
              2 * b_x * D * mb.expr / n_tp * (n_mb + n_pp - 2) * sp.Min(1, n_pp - 1) / W_pp,
              "each micro-batch's activations (forward) and their gradients (backward) hop stage to stage: "
              "N_MB + n_PP - 2 hops on the critical path (gpus.md)", "s")
    dp = Step(r"T_{\mathrm{DP}}",
              2 * b_g * (_P_DENSE * _share(n_dp) + P_exp / n_ep * (n_dp - n_ep) / n_dp) / (n_tp * n_pp * n_fsdp * W_dp),
              "an AllReduce (or ZeRO-1's ReduceScatter + AllGather) of each chip's gradient shard across the "
              "replicas, once per step; an expert's gradients only across its n_DP/n_EP replicas", "s")
    comms = Step(r"T_{\mathrm{comms}}", sp.Max(tp.expr, ep.expr, fsdp.expr, pp.expr, evaluate=False),
                 "the collectives of different axes run at once: the slowest of them", "s")
    busy = Step(r"T_{\mathrm{busy}}", sp.Max(math.expr, comms.expr, evaluate=False),
                "communication overlaps compute, so the slower of the two sets the pace (the book's model)", "s")
    pipe = Step(r"T_{\mathrm{pipe}}", busy.expr * (n_mb + f_bubble * (n_pp - 1)) / n_mb,
                "the pipeline fills and drains once per step: n_PP - 1 idle micro-batch slots (none with a "
                "zero-bubble schedule)", "s")
    last_backward = math.expr * (4 + 2 * r) / ((6 + 2 * r) * n_mb)
    exposed = Step(r"T_{\mathrm{DP}}^{\mathrm{exposed}}",
                   sp.Max(dp.expr, last_backward, evaluate=False) - last_backward,
                   "the gradient reduction overlaps only the last micro-batch's backward pass: what it takes "
                   "beyond that is exposed", "s")
    roofline = Step(r"T_{\mathrm{roofline}}", pipe.expr + exposed.expr,
                    "the pipelined passes plus the exposed reduction", "s")
    step = Step(r"T_{\mathrm{step}}", roofline.expr / MFU,
                "the run achieves MFU of its roofline time (the book checks compute-boundness at peak, then "
                "prices the step at MFU)", "s")
    return (chips, math, tp, ep, fsdp, pp, dp, comms, busy, pipe, exposed, roofline, step)


@functools.cache
def step_time() -> Derivation:
    return Derivation("step time of one training configuration", _time_steps(), SOURCE)


@functools.cache
def training_time() -> Derivation:
    steps = _time_steps()
    return Derivation("training time of one configuration", steps + (
        Step(r"T_{\mathrm{train}}", tokens / B * steps[-1].expr, "tokens / B steps", "s"),), SOURCE)
