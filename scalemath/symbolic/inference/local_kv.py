"""Local attention's KV cache (inference.md, 'Tricks for Improving Generation Throughput and Latency': 'Mixing in
some local attention layers'): a layer that attends only to the last w tokens keeps at most w tokens of keys and
values, so a model with L_loc local layers among its L caches S tokens in L − L_loc layers and min(S, w) in the
others. ``--model`` binds L_loc and w from the catalog (Gemma 2 and 3, LLaMA 4's chunked layers); a model
without local layers has L_loc = 0 and the plain cache.

>>> local_kv_bytes_per_sequence().expr
2*H*K*b_kv*(L_loc*Min(S, w_win) + S*(L - L_loc))
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import H, K, L, S, b_kv
from .kv_engine import TRICKS

__all__ = ["local_kv_bytes_per_sequence", "local_kv_fraction"]

w, L_loc = sym("w_win"), sym("L_loc")
_NOTE = "Not printed in the book: it names the cap; the bytes follow from its KV-cache count."


def _tokens() -> Step:
    return Step(r"n_{\mathrm{KV}}", (L - L_loc) * S + L_loc * sp.Min(S, w),
                "layer-tokens cached: S in each of the L − L_loc global layers, at most the window w in each of the "
                "L_loc local ones (older tokens fall out of the window and are dropped)", "token")


@functools.cache
def local_kv_bytes_per_sequence() -> Derivation:
    tokens = _tokens()
    return Derivation("KV cache bytes of one sequence of S tokens when L_loc layers attend within a window w", (
        tokens, Step(r"\mathrm{KV}_{\mathrm{seq}}^{w}", 2 * K * H * b_kv * tokens.expr,
                     "a key and a value of K heads × H per layer-token", "byte")), TRICKS, note=_NOTE)


@functools.cache
def local_kv_fraction() -> Derivation:
    tokens = _tokens()
    return Derivation("share of the all-global KV cache a sequence of S tokens keeps when L_loc layers attend "
                      "within a window w", (tokens, Step(r"f_{\mathrm{KV}}^{w}", tokens.expr / (L * S),
                                                         "against S tokens in all L layers: it falls towards "
                                                         "(L − L_loc)/L as S grows past w", "1")), TRICKS,
                      note=_NOTE)
