"""Memory per device of each training scheme, and the fewest chips whose memory holds the training state.

The activation bytes A_act come from the transformer quantities (checkpoints per layer, or the three
FFW outputs); here they are only divided among the devices.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, crossover
from ..transformer.memory import MIXED_SRC, element_bytes
from .common import DP, FSDP, MIXED, PIPE, TP, A_act, H_chip, P, X, Y, Z, b_opt, b_w, n_dev

_BYTES_SRC = {"mixed-precision": MIXED_SRC, "zero-paper": "Rajbhandari et al. 2020 (ZeRO), Section 3.1: K = 12"}


def _state(optimizer: str = "book") -> Step:
    if optimizer == "book":
        return Step(r"\mathrm{bytes}_{\mathrm{state}}", (b_w + b_opt) * P,
                    "parameters (b_w each) and optimizer state (b_opt each: 8 for Adam's fp32 moments)", "byte")
    grad, opt, why = element_bytes(optimizer)
    return Step(r"\mathrm{bytes}_{\mathrm{state}}", (b_w + grad + opt) * P,
                f"parameters (b_w each), gradients and optimizer state: {why}", "byte")


_SHARDS = {
    "dp": (X, "parameters and optimizer state replicated, activations split over the X replicas", False),
    "fsdp": (X, "parameters, optimizer state and activations all split over X", True),
    "tp": (Y, "parameters, optimizer state and activations all split over Y", True),
    "fsdp_tp": (X * Y, "everything split over the X·Y chips; nothing is stored twice", True),
    "pipeline": (Z, "each of the Z stages holds its layers' parameters, state and activations", True),
}
_SOURCES = {"dp": DP, "fsdp": FSDP, "tp": TP, "fsdp_tp": MIXED, "pipeline": PIPE}

#: The schemes with a data-parallel degree X, which the ``zero`` convention's stages split model states over.
ZERO_SCHEMES = ("dp", "fsdp", "fsdp_tp")
ZERO_SRC = "Rajbhandari et al. 2020 (ZeRO), Section 5 and Figure 1"
_STAGES = {
    "0": "ZeRO stage 0: every data-parallel rank keeps all weights, gradients and optimizer state",
    "1": "ZeRO stage 1 (P_os): the optimizer state split over the X data-parallel ranks",
    "2": "ZeRO stage 2 (P_os+g): optimizer state and gradients split over the X ranks",
    "3": "ZeRO stage 3 (P_os+g+p): weights, gradients and optimizer state all split over the X ranks",
}


@functools.cache
def memory_per_device(key: str, optimizer: str = "book", zero: str = "book") -> Derivation:
    """Bytes per device of one scheme. Under a ``zero`` stage (dp, fsdp and fsdp_tp: the schemes with X data-parallel
    ranks) the ZeRO paper's model states: Ψ(2 + 2 + K) at stage 0, 2Ψ + 2Ψ + KΨ/N_d at 1, 2Ψ + (2 + K)Ψ/N_d at 2,
    (2 + 2 + K)Ψ/N_d at 3, with N_d = X and Ψ the parameters (over Y with tensor parallelism)."""
    shards, why, sharded_state = _SHARDS[key]
    title = f"memory per device: {key.replace('_', ' + ')}"
    if zero != "book" and key in ZERO_SCHEMES:
        return _zero_stage(key, optimizer, zero, title)
    state = _state(optimizer)
    total = state.expr / shards if sharded_state else state.expr
    source = _SOURCES[key] if optimizer == "book" else f"{_SOURCES[key]}; bytes per parameter: {_BYTES_SRC[optimizer]}"
    return Derivation(title, (
        state,
        Step(r"\mathrm{bytes}_{\mathrm{dev}}", total + A_act / shards, why, "byte"),
    ), source)


def _zero_stage(key: str, optimizer: str, zero: str, title: str) -> Derivation:
    grad, opt, why = element_bytes(optimizer)
    params = P / Y if key == "fsdp_tp" else P
    per_rank = Step(r"\Psi", params, "parameters each data-parallel rank holds" +
                    (": P split over the Y tensor-parallel ranks" if key == "fsdp_tp" else ""), "param")
    psi, n_d = per_rank.expr, X
    split = {"0": (0, 0, 0), "1": (0, 0, 1), "2": (0, 1, 1), "3": (1, 1, 1)}[zero]
    parts = [Step(label, b * psi / (n_d if s else 1), what, "byte") for label, b, s, what in (
        (r"\mathrm{bytes}_{w}", b_w, split[0], "weights"),
        (r"\mathrm{bytes}_{g}", grad, split[1], "gradients"),
        (r"\mathrm{bytes}_{\mathrm{opt}}", opt, split[2], "optimizer state"))]
    if optimizer == "mixed-precision" and zero == "1":
        why += "; with bf16 weights, Megatron-LM's distributed optimizer: 6 + 12/d bytes per parameter"
    acts = A_act / (X * Y if key == "fsdp_tp" else X)
    total = Step(r"\mathrm{bytes}_{\mathrm{dev}}", sum(s.expr for s in parts) + acts,
                 f"{_STAGES[zero]}; {why}; activations split over the " + ("X·Y chips" if key == "fsdp_tp" else
                                                                           "X ranks"), "byte")
    source = f"{ZERO_SRC}; {_SOURCES[key]}" + ("" if optimizer == "book" else f"; bytes per parameter: "
                                                                            f"{_BYTES_SRC[optimizer]}")
    return Derivation(f"{title} under ZeRO stage {zero}", (per_rank, *parts, total), source)


@functools.cache
def min_chips_memory(optimizer: str = "book") -> Derivation:
    state = _state(optimizer)
    total = Step(r"\mathrm{bytes}", state.expr + A_act, "state plus activations, sharded with nothing repeated", "byte")
    exact = crossover(total.expr / n_dev, H_chip, n_dev, title="fewest chips whose memory holds the training state",
                      source="applied-training.md, 'Counting parameters and FLOPs'",
                      lhs_label=r"\mathrm{bytes}_{\mathrm{dev}}", rhs_label=r"M_{\mathrm{chip}}", side_unit="byte",
                      label=r"n_{\mathrm{dev}}^*", unit="chip", lead=(state, total),
                      why="per-device bytes equal the chip's HBM (a fraction of a chip in general)")
    return exact.extend(Step(r"n_{\mathrm{dev}}", sp.ceiling(exact.expr), "whole chips: round up", "chip"))
