"""Two points of the latency-throughput curve (applied-inference.md, 'Visualizing the Latency Throughput
Tradeoff'): while a decode step is memory-bound its time is the weights plus the batch's caches over the chips'
bandwidth, so the batch can grow a long way before the step time doubles; the cost of a token, chips × step time
over the batch, falls by the batch over the latency factor. With LLaMA 3-70B in int8 on 16 v5e chips at a 2k
context, doubling the latency buys about 105 times cheaper tokens (the book: "about 100x").

>>> sp.simplify(pareto_cost_ratio().expr - (1 + (k_lat - 1) * P * b_w / (k_lat * S * kv)))
0
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import PARETO, P, S, W, b_w, kv, n

__all__ = ["pareto_batch_at_latency", "pareto_cost_ratio"]

k_lat = sym("k_lat")
_NOTE = ("Not printed in the book: it reads 'about 100x' off its plot; the ratio follows from its memory-bound step "
         "time. It holds while the larger batch stays memory-bound (below the critical batch) and fits in HBM.")


def _steps() -> tuple[Step, Step, Step]:
    t1 = Step(r"T_{\mathrm{step}}(1)", (P * b_w + S * kv) / (n * W),
              "batch 1: the weights and one cache of S tokens read at n·W", "s")
    bk = Step(r"B_{k}", k_lat + (k_lat - 1) * P * b_w / (S * kv),
              "solve (P·b_w + B·S·KV_tok)/(n·W) = k_lat·T_step(1) for B: each extra sequence adds only its cache",
              "token")
    tk = Step(r"T_{\mathrm{step}}(B_k)", k_lat * t1.expr, "k_lat times the batch-1 step", "s")
    return t1, bk, tk


@functools.cache
def pareto_batch_at_latency() -> Derivation:
    t1, bk, _ = _steps()
    return Derivation("largest decode batch whose memory-bound step takes at most k_lat times the batch-1 step", (
        t1, bk, Step(r"B_{\max}", sp.floor(bk.expr), "whole sequences: the most that fit in that step time",
                     "token")), PARETO, note=_NOTE)


@functools.cache
def pareto_cost_ratio() -> Derivation:
    t1, bk, tk = _steps()
    return Derivation("how many times cheaper a token is at k_lat times the batch-1 latency (memory-bound decode)", (
        t1, bk, tk, Step(r"r_{\mathrm{cost}}", bk.expr / k_lat,
                         "cost per token is n·T_step/B: (T_step(1)/1)/(k_lat·T_step(1)/B_k) = B_k/k_lat", "1")),
        PARETO, note=_NOTE)

