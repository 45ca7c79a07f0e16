"""What an inference engine does with the KV cache (inference.md, 'The Basics of Transformer Inference', 'Tricks
for Improving Generation Throughput and Latency' and 'Prefix Caching').

Naive sampling recomputes the whole prefix for every generated token, so its linear layers cost a sum that grows
with the square of the length; the cache makes each new token cost one token's FLOPs. Sharing one cache between
m_kv consecutive layers divides the cache by m_kv; paging allocates it in pages of s_page tokens, so a sequence
wastes less than one page instead of the padding to a fixed maximum context; a cached prefix of T_pre tokens is
prefilled once for n_seq requests instead of n_seq times.

>>> naive_flops().expr
P_active*n_gen*(2*T + n_gen - 1)
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import KV_TOK, MEMORY, B, C, H, H_chip, K, L, MFU, P, P_act, S, T, b_kv, b_w, kv, n

BASICS = "inference.md, 'The Basics of Transformer Inference' (naive sampling against the KV cache)"
TRICKS = "inference.md, 'Tricks for Improving Generation Throughput and Latency'"
PREFIX = "inference.md, 'Prefix Caching'"
_NOT_IN_BOOK = ("Not printed in the book: the book names the idea; the count follows from its FLOPs and KV-cache "
                "conventions.")

G, T_pre, n_seq = sym("n_gen"), sym("T_pre"), sym("n_seq")
m_kv, s_page, S_max = sym("m_kv"), sym("s_page"), sym("S_max")


# -- naive sampling: no KV cache ----------------------------------------------------------------------------

def _naive_tokens() -> tuple[Step, Step]:
    per = Step(r"T_0", T, "the first pass runs the T prompt tokens; the i-th generated token (i = 0 ... G−1) needs "
               "a pass over the prompt and the i tokens already generated: T + i tokens", "token")
    total = Step(r"\sum_i T_i", G * T + G * (G - 1) / 2,
                 "G·T + (0 + 1 + ... + G−1) = G·T + G(G−1)/2 tokens: quadratic in the generated length", "token")
    return per, total


@functools.cache
def naive_tokens() -> Derivation:
    return Derivation("tokens run through the model to generate G tokens without a KV cache", _naive_tokens(),
                      BASICS, note=_NOT_IN_BOOK)


@functools.cache
def naive_flops() -> Derivation:
    per, total = _naive_tokens()
    return Derivation("linear-layer FLOPs of generating G tokens without a KV cache (naive sampling)", (
        per, total, Step(r"\mathrm{FLOPs}_{\mathrm{naive}}", sp.factor(2 * P_act * total.expr),
                         "2·P_active FLOPs per token run (the linear layers); attention adds a term cubic in the "
                         "length, left out here as in the book's O(n²) for the FFW", "FLOP")), BASICS, note=_NOT_IN_BOOK)


def _cached_flops() -> tuple[Step, Step]:
    tokens = Step(r"T_{\mathrm{cached}}", T + G - 1, "prefill runs the T prompt tokens once (and yields the first "
                  "token); each of the other G−1 tokens runs through the model alone, reading the cache", "token")
    return tokens, Step(r"\mathrm{FLOPs}_{\mathrm{cached}}", 2 * P_act * tokens.expr,
                        "2·P_active FLOPs per token run: linear in the length", "FLOP")


@functools.cache
def naive_cached_flops() -> Derivation:
    return Derivation("linear-layer FLOPs of generating G tokens with a KV cache", _cached_flops(), BASICS,
                      note=_NOT_IN_BOOK)


@functools.cache
def naive_flops_ratio() -> Derivation:
    per, total = _naive_tokens()
    tokens, _ = _cached_flops()
    return Derivation("how many times more FLOPs naive sampling takes than sampling with a KV cache", (
        total, tokens, Step(r"r_{\mathrm{naive}}", total.expr / tokens.expr,
                            "the 2·P_active per token cancels: a ratio of tokens run, about G/2 when G is much larger than T", "1")),
        BASICS, note=_NOT_IN_BOOK)


@functools.cache
def naive_t_math() -> Derivation:
    d = naive_flops()
    return d.extend(Step(r"T_{\mathrm{naive}}", d.expr / (n * C),
                         "every pass at the n chips' peak: a lower bound (naive passes are compute-bound, each "
                         "re-running the prefix as a prefill does)", "s"),
                    title="least time of generating G tokens without a KV cache (compute only)")


# -- cross-layer KV sharing ---------------------------------------------------------------------------------

def _shared_token() -> tuple[Step, Step]:
    groups = Step(r"L_{\mathrm{KV}}", sp.ceiling(L / m_kv), "layers with a cache of their own: one per group of "
                  "m_KV consecutive layers that share it", "layer")
    return groups, Step(KV_TOK + r"^{\mathrm{shared}}", 2 * groups.expr * K * H * b_kv,
                        "a key and a value of K heads × H in each of those layers only", "byte")


@functools.cache
def shared_kv_bytes_per_token() -> Derivation:
    return Derivation("KV cache bytes per token when every m_KV layers share one cache", _shared_token(), TRICKS,
                      note=_NOT_IN_BOOK)


@functools.cache
def shared_kv_bytes_per_batch() -> Derivation:
    groups, tok = _shared_token()
    return Derivation("KV cache bytes of a decode batch when every m_KV layers share one cache", (groups, tok, Step(
        r"\mathrm{KV}_{\mathrm{batch}}", B * S * tok.expr, "B sequences of S cached tokens", "byte")), TRICKS,
        note=_NOT_IN_BOOK)


@functools.cache
def shared_kv_max_batch() -> Derivation:
    groups, tok = _shared_token()
    left = Step(r"M_{\mathrm{KV}}", n * H_chip - P * b_w, "the n chips' HBM less one copy of the weights", "byte")
    return Derivation("largest decode batch that fits when every m_KV layers share one cache", (
        left, groups, tok, Step(r"B_{\max}", sp.floor(left.expr / (S * tok.expr)),
                                "whole caches of S tokens in what is left: about m_KV times the unshared batch "
                                "(the step time need not fall: a shared cache may be read once per layer)",
                                "token")), TRICKS, positive=True, note=_NOT_IN_BOOK)


# -- paged attention ------------------------------------------------------------------------------------------

def _pages() -> Step:
    return Step(r"n_{\mathrm{pages}}", sp.ceiling(S / s_page), "whole pages of s_page tokens that hold S tokens",
                "1")


@functools.cache
def paged_pages_per_sequence() -> Derivation:
    return Derivation("pages a sequence of S tokens takes in a paged KV cache", (_pages(),), TRICKS,
                      note=_NOT_IN_BOOK)


@functools.cache
def paged_bytes_per_sequence() -> Derivation:
    pages = _pages()
    return Derivation("KV cache bytes a paged cache allocates to a sequence of S tokens", (pages, Step(
        r"\mathrm{KV}_{\mathrm{paged}}", pages.expr * s_page * kv, "each page holds s_page tokens' keys and values",
        "byte")), TRICKS, note=_NOT_IN_BOOK)


@functools.cache
def paged_wasted_bytes() -> Derivation:
    pages = _pages()
    return Derivation("KV cache bytes a paged cache wastes on one sequence (internal fragmentation)", (pages, Step(
        r"\mathrm{waste}_{\mathrm{paged}}", (pages.expr * s_page - S) * kv,
        "the empty slots of the last page only: less than one page, s_page·KV_tok", "byte")), TRICKS,
        note=_NOT_IN_BOOK)


@functools.cache
def padded_wasted_bytes() -> Derivation:
    return Derivation("KV cache bytes a padded cache wastes on one sequence of S tokens", (Step(
        r"\mathrm{waste}_{\mathrm{pad}}", (S_max - S) * kv, "a slot is allocated for S_max tokens whatever the "
        "sequence's length: everything past S is padding", "byte"),), TRICKS, note=_NOT_IN_BOOK)


@functools.cache
def paged_max_batch() -> Derivation:
    pages = _pages()
    left = Step(r"M_{\mathrm{KV}}", n * H_chip - P * b_w, "the n chips' HBM less one copy of the weights", "byte")
    return Derivation("largest decode batch of S-token sequences that fits with a paged KV cache", (
        pages, left, Step(r"B_{\max}", sp.floor(left.expr / (pages.expr * s_page * kv)),
                          "whole sequences of n_pages pages (padded to S_max each, the batch would be "
                          "floor(M_KV/(S_max·KV_tok)))", "token")), TRICKS, positive=True, note=_NOT_IN_BOOK)


# -- prefix caching -----------------------------------------------------------------------------------------

def _prefill(tokens: sp.Expr) -> sp.Expr:
    return 2 * P_act * tokens


@functools.cache
def prefix_flops_uncached() -> Derivation:
    return Derivation("prefill FLOPs of n_seq prompts of T tokens, no prefix cache", (
        Step(r"\mathrm{FLOPs}_{1}", _prefill(T), "2·P_active FLOPs for each prompt token", "FLOP"),
        Step(r"\mathrm{FLOPs}_{\mathrm{plain}}", n_seq * _prefill(T), "each of the n_seq prompts prefilled whole",
             "FLOP")), PREFIX, note=_NOT_IN_BOOK)


def _cached_steps() -> tuple[Step, Step]:
    once = Step(r"\mathrm{FLOPs}_{\mathrm{pre}}", _prefill(T_pre), "the shared prefix of T_pre tokens prefilled "
                "once; its keys and values stay in the cache", "FLOP")
    return once, Step(r"\mathrm{FLOPs}_{\mathrm{cached}}", once.expr + n_seq * _prefill(T - T_pre),
                      "each request prefills only its own T − T_pre tokens, attending to the cached prefix", "FLOP")


@functools.cache
def prefix_flops_cached() -> Derivation:
    return Derivation("prefill FLOPs of n_seq prompts of T tokens sharing a cached prefix of T_pre tokens",
                      _cached_steps(), PREFIX, note=_NOT_IN_BOOK)


@functools.cache
def prefix_flops_saved() -> Derivation:
    once, cached = _cached_steps()
    return Derivation("prefill FLOPs a cached prefix of T_pre tokens saves over n_seq requests", (
        Step(r"\mathrm{FLOPs}_{\mathrm{plain}}", n_seq * _prefill(T), "n_seq prompts prefilled whole", "FLOP"),
        once, cached, Step(r"\Delta\mathrm{FLOPs}", sp.factor(n_seq * _prefill(T) - cached.expr),
                     "the prefix is computed once instead of n_seq times", "FLOP")), PREFIX, note=_NOT_IN_BOOK)


@functools.cache
def prefix_fraction_needed() -> Derivation:
    return Derivation("share of a prompt's prefill compute still needed when its first T_pre tokens are cached", (
        Step(r"f_{\mathrm{new}}", (T - T_pre) / T, "only the uncached tokens are run: 'I like cats' after "
             "'I like dogs' needs 1/3 of the compute", "1"),), PREFIX)


@functools.cache
def prefix_time_saved() -> Derivation:
    d = prefix_flops_saved()
    return d.extend(Step(r"\Delta T", d.expr / (n * C * MFU), "the saved FLOPs at the n chips' achieved rate "
                         "(prefill is compute-bound)", "s"),
                    title="prefill time a cached prefix of T_pre tokens saves over n_seq requests")


@functools.cache
def prefix_cache_bytes() -> Derivation:
    return Derivation("KV cache bytes a cached prefix of T_pre tokens holds", (Step(
        r"\mathrm{KV}_{\mathrm{pre}}", T_pre * kv, "one copy of the prefix's keys and values, shared by every request "
        "that starts with it", "byte"),), MEMORY, note=_NOT_IN_BOOK)
