"""Pipelining (gpus.md, 'Pipeline Parallelism'): the activation transfers between stages. The book gives no
pipeline-bubble formula, so none is offered here.
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from .common import GPU_PP, B, D, W, Z, b_x, n_mb


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
