"""Serving downstream of the step time: generation time, requests per second, prefill and generate servers,
tokens freed by continuous batching, and cost (applied-inference.md).

These take the step time ``t_step`` (or the prefill time) as an input, so any step model (the book's, the
full-HBM bound, a measurement) can feed them.
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import PREFILL, STORY, THROUGHPUT, B, C, G, T, kv, n, price, t_hour, t_prefill, t_step

ENGINE = "inference.md, 'Designing an Effective Inference Engine' (disaggregated serving ships the KV cache)"


@functools.cache
def generation_time() -> Derivation:
    return Derivation("time to generate a response of G tokens", (
        Step(r"T_{\mathrm{gen}}", G * t_step, "one token per step: G steps", "s"),), THROUGHPUT)


@functools.cache
def queries_per_s_per_chip() -> Derivation:
    return Derivation("requests served per second per chip", (
        Step(r"T_{\mathrm{gen}}", G * t_step, "each request stays in the batch for G steps", "s"),
        Step(r"\mathrm{QPS}/\mathrm{chip}", B / (G * t_step * n),
             "B requests finish every G steps, over n chips (the book expects about half in practice)", "1/s"),
    ), THROUGHPUT)


# -- serving: prefill and generate servers, cost ------------------------------------------------------

@functools.cache
def prefill_to_generate_ratio() -> Derivation:
    prefill_rate = Step(r"r_{\mathrm{P}}", 1 / t_prefill, "requests one prefill server finishes per second", "1/s")
    generate_rate = Step(r"r_{\mathrm{G}}", B / (t_step * G),
                         "requests one generate server finishes per second: B slots, G steps each", "1/s")
    return Derivation("prefill servers per generate server (disaggregated serving)", (
        prefill_rate, generate_rate,
        Step(r"n_{\mathrm{P}}/n_{\mathrm{G}}", generate_rate.expr / prefill_rate.expr,
             "prefill must keep up with the requests the generate servers finish", "1"),
    ), PREFILL)


@functools.cache
def kv_transfer_time() -> Derivation:
    cache = Step(r"\mathrm{KV}_{\mathrm{prompt}}", T * kv, "the T prompt tokens' keys and values, which prefill wrote",
                 "byte")
    return Derivation("time to ship one prompt's KV cache from a prefill server to a generate server", (
        cache, Step(r"T_{\mathrm{transfer}}", cache.expr / (n * sym("W_dcn")),
                    "the two servers sit on different slices: the prefill server's n chips each send their shard of "
                    "the cache over their own DCN link at once", "s")), ENGINE,
        note="Not printed in the book: it names the transfer as disaggregation's cost; the time follows from the "
             "cache's bytes and the links they cross.")


@functools.cache
def tokens_freed_per_step() -> Derivation:
    return Derivation("KV-cache tokens freed per decode step (continuous batching)", (
        Step(r"\mathrm{done}", B / G, "each slot finishes a request every G steps: B/G requests per step", "1"),
        Step(r"\mathrm{tokens}", B * (T + G) / G, "each finished request frees its T prompt and G generated tokens",
             "token"),
    ), PREFILL)


@functools.cache
def cost_per_million_tokens() -> Derivation:
    rate = Step(r"\mathrm{tokens/s/chip}", B / (n * t_step), "B tokens per step over n chips", "token/s")
    per_token = Step(r"\mathrm{cost}_{\mathrm{token}}", price / (t_hour * rate.expr),
                     "a chip-hour's price over the tokens one chip makes in an hour", "cent")
    d = Derivation("cost per million generated tokens, in cents", (rate, per_token, Step(
        r"\mathrm{cost}_{10^6}", 10**6 * per_token.expr, "a million tokens", "cent")), STORY)
    return Derivation(d.title, d.steps, d.source, False,
                      "The book says only that throughput per chip maps directly to cost per token.")


@functools.cache
def flops_per_dollar() -> Derivation:
    hour = Step(r"\mathrm{FLOPs}_{\mathrm{hour}}", C * t_hour, "peak FLOPs of one chip over an hour", "FLOP")
    return Derivation("peak FLOPs one dollar buys", (hour, Step(
        r"\mathrm{FLOPs}/\$", 100 * hour.expr / price, "per chip-hour price in cents, 100 cents to the dollar",
        "FLOP")), STORY)
