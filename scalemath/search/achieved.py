"""What a planned step achieves: model and hardware FLOPs utilisation, tokens and FLOP/s per chip.

These are outputs of the search's exact step time. Under the book's pricing (``--mfu``) the step is the roofline
time over the MFU given, so the achieved MFU only says what the bubble and exposed communication took from it;
under a run's pricing nothing is assumed and the MFU is a prediction, to hold against a paper's.

Model FLOPs per token count the weights' matmuls, 6·P_active, and attention's dot products as the
``attention`` convention says (none: the book's; causal: 6·L·N·H·T; full: twice that). Hardware FLOPs add
what rematerialisation runs again.
"""

from __future__ import annotations

import sympy as sp

from ..catalog import hardware

__all__ = ["achieved", "ATTENTION_SHARE"]

#: Attention's dot products in the model FLOPs, in units of the causal count 6·L·N·H·T per token.
ATTENTION_SHARE = {"none": 0, "causal": 1, "full": 2}


def _step(c, label: str):
    return next(s.value for s in c.step.steps if s.step.label == label)


def achieved(c, opts, chip: hardware.Chip, active_params) -> dict[str, sp.Expr]:
    """MFU, HFU, tokens/s per chip and model FLOP/s per chip of candidate ``c`` (exact)."""
    chips, step = c.config["chips"], c.step.value
    remat = 1 if c.config["checkpointing"] == "block" else 0
    peak = chip.flops(c.config["dtype"])
    share = ATTENTION_SHARE[opts.conventions["attention"]]
    if opts.pricing == "run":
        per_token = _step(c, r"F_{\mathrm{tok}}")  # (6 + 2r)(P_active + L·N·H·T): what the chips ran
        unfused = 2 if opts.attention_kernel == "unfused" else 1  # every position multiplied, not only the causal half
        attention = (per_token / (6 + 2 * remat) - active_params) / unfused  # L·N·H·T
        hardware_flops = (6 + 2 * remat) * (active_params + unfused * attention)
        model = 6 * (active_params + share * attention)
    else:  # the book's T_math counts (6 + 2r)·P_active at the peak, attention left out (plan.options refuses another)
        model = 6 * active_params
        hardware_flops = (6 + 2 * remat) * active_params
    tokens = sp.Integer(opts.batch) / (chips * step)
    return {"mfu": model * tokens / peak, "hfu": hardware_flops * tokens / peak, "tokens_per_chip": tokens,
            "flops_per_chip": model * tokens, "attention": opts.conventions["attention"]}

