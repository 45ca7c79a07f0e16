"""Memory per device of each training scheme, and the fewest chips whose memory holds the training state.

The activation bytes A_act come from the transformer quantities (checkpoints per layer, or the three
FFW outputs); here they are only divided among the devices.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, crossover
from .common import DP, FSDP, MIXED, PIPE, TP, A_act, H_chip, P, X, Y, Z, b_opt, b_w, n_dev


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
