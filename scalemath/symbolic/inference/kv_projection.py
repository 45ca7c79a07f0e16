"""Replicating the K/V projections past K-way head sharding (inference.md, 'Distributing Inference Over Multiple
Accelerators': "The KV weights are quite small, and replicating them is often cheaper than sharding beyond K-way
sharding"). With attention sharded Y ways over heads and Y > K, each of the K key/value heads serves Y/K chips;
each chip keeps its head's whole W_K and W_V instead of a 1/Y slice of all of them, which costs 2·D·H·b_w·(1 − K/Y)
more bytes per layer, a small share of the chip's slice of the layer when F and N are large against K.

>>> kv_projection_extra_fraction().expr
2*H*(-K + Y)/(F*n_mlp + 2*H*(K + N))
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import GENERATION, D, F, H, K, Y, b_w

__all__ = ["kv_projection_bytes_per_chip", "kv_projection_extra_bytes", "kv_projection_extra_fraction"]

N, n_mlp = sym("N"), sym("n_mlp")
_NOTE = ("Not printed in the book: it says replicating is often cheaper; the bytes follow from the projections' "
         "shapes.")


def _held() -> Step:
    return Step(r"\mathrm{bytes}_{KV}^{\mathrm{chip}}", 2 * D * H * b_w * sp.Max(K / Y, 1),
                "W_K and W_V[D, K, H] of the heads a chip's queries use: K/Y heads while Y ≤ K, one whole head "
                "(replicated on the Y/K chips that share it) beyond", "byte")


@functools.cache
def kv_projection_bytes_per_chip() -> Derivation:
    return Derivation("bytes of one layer's K and V projections each chip holds when attention is sharded Y ways "
                      "over heads", (_held(),), GENERATION, note=_NOTE)


def _extra() -> tuple[Step, Step]:
    even = Step(r"\mathrm{bytes}_{KV}^{1/Y}", 2 * D * K * H * b_w / Y,
                "an even Y-way split of W_K and W_V (which would cut heads apart past K-way)", "byte")
    return even, Step(r"\Delta\mathrm{bytes}_{KV}", sp.factor(2 * D * H * b_w - even.expr),
                      "a whole head's projections against the even split, for Y ≥ K: 2·D·H·b_w·(1 − K/Y)", "byte")


@functools.cache
def kv_projection_extra_bytes() -> Derivation:
    return Derivation("extra bytes per chip and layer of replicating the K/V projections past K-way head "
                      "sharding (Y ≥ K)", _extra(), GENERATION, note=_NOTE)


@functools.cache
def kv_projection_extra_fraction() -> Derivation:
    even, extra = _extra()
    layer = Step(r"\mathrm{bytes}_{\mathrm{layer}}/Y", (n_mlp * D * F + 2 * D * (N + K) * H) * b_w / Y,
                 "the chip's even share of the layer's MLP and Q, K, V, O weights", "byte")
    return Derivation("share the K/V replication adds to a chip's weights per layer (Y ≥ K)", (
        even, extra, layer, Step(r"f_{KV}", 2 * H * (Y - K) / (n_mlp * F + 2 * H * (N + K)),
                                 "2H(Y − K)/(n_mlp·F + 2H(N + K)): it grows with Y but stays small while F is much larger than H·Y",
                                 "1")), GENERATION, note=_NOTE)
