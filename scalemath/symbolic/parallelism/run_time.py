"""The time of a training step and of a whole run from the 6·P FLOPs per token at an achieved FLOPs
utilisation, and the batch each device processes.
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from .common import APPLIED, PROBLEMS, SCALING, MFU, B, C, P, n_dev, tokens


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
