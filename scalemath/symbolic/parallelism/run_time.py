"""The time of a training step and of a whole run from the 6·P FLOPs per token at an achieved FLOPs
utilisation (or, under other conventions, with attention's FLOPs and, at an HFU, the recomputed ones), the
chip-hours of a run and their cost, and the batch each device processes.
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from ..symbols import sym
from ..transformer.counts import BOOK_CHOICES, counts_recompute, per_token_steps, utilisation_symbol
from .common import APPLIED, PROBLEMS, SCALING, MFU, B, C, P, n_dev, tokens

t_run, t_hour, price, h_chip = sym("t_run"), sym("t_hour"), sym("price"), sym("chip_hours")
MEGATRON = ("Narayanan et al. 2021 (Megatron-LM), Section 5.1: end-to-end training time ≈ 8·T·P/(n·X) with full "
            "recomputation at X FLOP/s per GPU")


def _cluster() -> Step:
    return Step(r"C_{\mathrm{eff}}", n_dev * C * MFU, "all chips at the achieved share of their peak", "FLOP/s")


def _is_book(attention: str, recompute: str, utilisation: str) -> bool:
    return (attention, recompute, utilisation) == tuple(BOOK_CHOICES.values())


def _conventional(title: str, weight, result: str, attention: str, recompute: str, utilisation: str,
                  source: str) -> Derivation:
    """FLOPs under the conventions at the chips' achieved rate: MFU of peak for the model's FLOPs, or HFU of
    peak for the FLOPs the chips ran (the same time either way when both are measured on one run)."""
    hfu = counts_recompute(utilisation)
    u = utilisation_symbol(utilisation)
    why = ": the rate is an HFU, so the FLOPs are the chips'" if hfu else ": the rate is an MFU, so the FLOPs " \
        "are the model's"
    flops = per_token_steps(P, attention, recompute, hardware=hfu, why_hw=why, weight=weight)
    rate = Step(r"C_{\mathrm{eff}}", n_dev * C * u,
                f"all chips at the achieved share of their peak ({'HFU' if hfu else 'MFU'}"
                + ("; C·HFU is Megatron-LM's X, the achieved FLOP/s per GPU)" if hfu else ")"), "FLOP/s")
    return Derivation(f"{title} (attention={attention}, recompute={recompute}, utilisation={utilisation})",
                      flops + (rate, Step(result, flops[-1].expr / rate.expr,
                                          "the FLOPs at the achieved rate", "s")), source)


@functools.cache
def step_time(attention: str = "none", recompute: str = "none", utilisation: str = "mfu") -> Derivation:
    if not _is_book(attention, recompute, utilisation):
        return _conventional("time of one training step", B, r"T_{\mathrm{step}}", attention, recompute,
                             utilisation, PROBLEMS + "; " + MEGATRON)
    return Derivation("time of one training step", (
        Step(r"\mathrm{FLOPs}", 6 * P * B, "6 FLOPs per parameter per token of the batch (2 forward, 4 backward)",
             "FLOP"),
        _cluster(),
        Step(r"T_{\mathrm{step}}", 6 * P * B / (n_dev * C * MFU), "the batch's FLOPs at the achieved rate", "s"),
    ), PROBLEMS)


@functools.cache
def training_time(attention: str = "none", recompute: str = "none", utilisation: str = "mfu") -> Derivation:
    """The book's 6·P·tokens at n·C·MFU; at an HFU with full recomputation and attention left out it is
    Megatron-LM's 8·T·P/(n·X)."""
    if not _is_book(attention, recompute, utilisation):
        return _conventional("time of the whole training run", tokens, r"T_{\mathrm{train}}", attention,
                             recompute, utilisation, APPLIED + "; " + MEGATRON)
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


@functools.cache
def chip_hours() -> Derivation:
    """Chip-hours (GPU-hours) of a run: what papers print a run's size in (DeepSeek-V3: 2.788 M H800 GPU hours)."""
    return Derivation("chip-hours (GPU-hours) of a run", (
        Step(r"h_{\mathrm{chip}}", n_dev * t_run / t_hour, "chips x wall-clock seconds, over 3600 seconds an hour",
             "chip-hour"),), APPLIED)


@functools.cache
def run_cost() -> Derivation:
    """A run's cost at a price per chip-hour."""
    return Derivation("cost of a run at a price per chip-hour", (
        Step(r"\mathrm{cost}", h_chip * price, "chip-hours x the price of one chip-hour", "cent"),), APPLIED)
