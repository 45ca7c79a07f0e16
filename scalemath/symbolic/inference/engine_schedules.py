"""How an inference engine schedules prefill against generation (inference.md, 'Designing an Effective Inference
Engine'): batching the prefills pads every prompt to the longest and makes each user wait for the whole batch's
prefill; interleaving runs each prefill alone, at batch 1, and every user's decode stalls while it runs.

B counts the prompts prefilled together (the decode batch they then join); T_max is the longest of them, T_avg
their mean; prefill runs at the n chips' achieved FLOPs/s, C·MFU, counting the linear layers (2·P_active per
token) as the book's prefill time does.

>>> batched_prefill_padding_flops().expr
2*B*P_active*(-T_avg + T_max)
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import MFU, B, C, P_act, T, n, t_step

__all__ = ["batched_prefill_padding_flops", "batched_prefill_padding_fraction", "batched_prefill_ttft",
           "batched_prefill_ttft_ratio", "interleaved_stall_time", "interleaved_stall_steps"]

ENGINE = "inference.md, 'Designing an Effective Inference Engine'"
T_max, T_avg = sym("T_max"), sym("T_avg")
_NOTE = "Not printed in the book: it names the cost; the count follows from its prefill FLOPs and times."


def _run() -> tuple[Step, Step]:
    return (Step(r"\mathrm{tokens}_{\mathrm{run}}", B * T_max, "B prompts padded to the longest, T_max", "token"),
            Step(r"\mathrm{tokens}_{\mathrm{used}}", B * T_avg, "B prompts of T_avg tokens on average", "token"))


@functools.cache
def batched_prefill_padding_flops() -> Derivation:
    run, used = _run()
    return Derivation("prefill FLOPs a batched prefill wastes on padding", (
        run, used, Step(r"\mathrm{FLOPs}_{\mathrm{pad}}", 2 * P_act * B * (T_max - T_avg),
                        "2·P_active FLOPs for each padding token run", "FLOP")), ENGINE, note=_NOTE)


@functools.cache
def batched_prefill_padding_fraction() -> Derivation:
    run, used = _run()
    return Derivation("share of a batched prefill's FLOPs spent on padding", (
        run, used, Step(r"f_{\mathrm{pad}}", (run.expr - used.expr) / run.expr,
                        "padding tokens over tokens run: 1 − T_avg/T_max, whatever the batch", "1")), ENGINE,
        note=_NOTE)


def _ttft() -> tuple[Step, Step]:
    run, _ = _run()
    return run, Step(r"\mathrm{TTFT}_{\mathrm{batch}}", 2 * P_act * run.expr / (n * C * MFU),
                     "no prompt's first token comes before the whole padded batch is prefilled: B·T_max tokens at the "
                     "n chips' achieved FLOPs/s", "s")


@functools.cache
def batched_prefill_ttft() -> Derivation:
    return Derivation("time to first token when B prompts are prefilled as one padded batch", _ttft(), ENGINE,
                      note=_NOTE)


@functools.cache
def batched_prefill_ttft_ratio() -> Derivation:
    run, ttft = _ttft()
    alone = Step(r"\mathrm{TTFT}_{1}", 2 * P_act * T / (n * C * MFU), "a prompt of T tokens prefilled alone", "s")
    return Derivation("how many times longer a prompt of T tokens waits for its first token in a batched prefill "
                      "than alone", (run, ttft, alone, Step(r"r_{\mathrm{TTFT}}", ttft.expr / alone.expr,
                                                           "B·T_max/T: it grows with the batch, so TTFT and batch "
                                                           "size are coupled", "1")), ENGINE, note=_NOTE)


def _stall() -> Step:
    return Step(r"T_{\mathrm{stall}}", 2 * P_act * T / (n * C * MFU),
                "an interleaved engine prefills a prompt of T tokens alone (batch 1 is already compute-bound), "
                "and no decode step runs meanwhile", "s")


@functools.cache
def interleaved_stall_time() -> Derivation:
    return Derivation("pause in every user's generation while an interleaved engine prefills one prompt",
                      (_stall(),), ENGINE, note=_NOTE)


@functools.cache
def interleaved_stall_steps() -> Derivation:
    stall = _stall()
    return Derivation("decode steps every user loses while an interleaved engine prefills one prompt", (
        stall, Step(r"n_{\mathrm{stall}}", stall.expr / t_step, "the pause in decode steps of t_step: the jitter "
                    "each user sees per prompt admitted", "1")), ENGINE, note=_NOTE)
