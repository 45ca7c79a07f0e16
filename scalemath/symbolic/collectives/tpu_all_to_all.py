"""AllToAll on a TPU ring or torus (sharding.md, 'Our final communication primitive: the AllToAll'), and what
a bidirectional ring gains over a unidirectional one for an AllGather and an AllToAll.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step, simplest
from .common import ALLTOALL, RING_EXACT, T_A2A, N, V, W_ici, W_link, X, Y, Z
from .tpu_ring import all_gather_time, all_gather_time_unidirectional


# -- AllToAll on a TPU axis or torus -----------------------------------------------------------------

@functools.cache
def all_to_all_time_approx() -> Derivation:
    chunk = Step(r"\mathrm{chunk}", V / N**2, "each device sends a V/N^2 piece of its shard to every device", "byte")
    load = Step(r"\mathrm{hops}_{\mathrm{chunk}}", N**2 / 4,
                "about N^2/4 chunk-hops per device in all, half of them each way round", "1")
    return Derivation("AllToAll on a bidirectional ring (the book's cost)", (
        chunk, load,
        Step(T_A2A, load.expr * chunk.expr / W_ici,
             "V/4 bytes per device over both directions: a quarter of an AllGather", "s"),
    ), ALLTOALL)


@functools.cache
def all_to_all_time() -> Derivation:
    chunk = Step(r"\mathrm{chunk}", V / N**2, "each device sends a V/N^2 piece of its shard to every device", "byte")
    load = Step(r"\mathrm{hops}_{\mathrm{dir}}", sp.floor(N**2 / 2) / 4,
                "per direction and device, the sum of the shortest distances min(d, N - d)/2 over d = 1..N-1, "
                "the chunk to the opposite device split between both ways: N^2/8 (even N), (N^2-1)/8 (odd N)", "1")
    return Derivation("AllToAll on a bidirectional ring with wraparound (exact)", (
        chunk, load,
        Step(T_A2A, 2 * load.expr * chunk.expr / W_ici,
             "each link direction carries that load at W_ici/2; V/(4 W_ici) for every even N", "s"),
    ), RING_EXACT)


@functools.cache
def all_to_all_time_unidirectional() -> Derivation:
    chunk = Step(r"\mathrm{chunk}", V / N**2, "each device sends a V/N^2 piece of its shard to every device", "byte")
    load = Step(r"\mathrm{hops}_{\mathrm{chunk}}", N * (N - 1) / 2, "distances 1 + 2 + ... + (N - 1) per device, one way only",
                "1")
    return Derivation("AllToAll on a unidirectional ring", (
        chunk, load,
        Step(T_A2A, load.expr * chunk.expr / W_link, "every link carries that load at the one-way bandwidth", "s"),
    ), RING_EXACT)


@functools.cache
def all_to_all_time_torus() -> Derivation:
    n = Step(r"n_{\mathrm{chips}}", X * Y * Z, "the devices of the X × Y × Z torus", "chip")
    return Derivation("AllToAll on a 3-D torus (a 2-D one with Z = 1)", (
        n,
        Step(r"W_{\mathrm{cut}}", n.expr * W_ici / sp.Max(X, Y, Z),
             "the narrowest cut runs across the longest axis: 2N/max links, wraparound counted", "byte/s"),
        Step(T_A2A, V * sp.Max(X, Y, Z) / (4 * n.expr * W_ici),
             "half the devices send V/4 bytes across that cut at its one-way bandwidth", "s"),
    ), ALLTOALL)


def _bidirectional_speedup(op: str, uni: Derivation, bidi: Derivation) -> Derivation:
    t_uni = Step(r"T_{\mathrm{uni}}", uni.expr, f"the {op} on a unidirectional ring, at W_link", "s")
    t_bidi = Step(r"T_{\mathrm{bidi}}", bidi.expr.xreplace({W_ici: 2 * W_link}),
                  "on the bidirectional ring both directions of each link carry traffic: W_ici = 2 W_link", "s")
    return Derivation(f"{op}: speed-up of a bidirectional ring over a unidirectional one", (
        t_uni, t_bidi,
        Step(r"T_{\mathrm{uni}}/T_{\mathrm{bidi}}", simplest(t_uni.expr / t_bidi.expr),
             "the same bytes; the bidirectional ring halves the bandwidth term and, for an AllToAll, the distances",
             "1"),
    ), "sharding.md, 'What Have We Learned?' and Q10")


@functools.cache
def all_gather_bidirectional_speedup() -> Derivation:
    return _bidirectional_speedup("AllGather", all_gather_time_unidirectional(), all_gather_time())


@functools.cache
def all_to_all_bidirectional_speedup() -> Derivation:
    return _bidirectional_speedup("AllToAll", all_to_all_time_unidirectional(), all_to_all_time())
