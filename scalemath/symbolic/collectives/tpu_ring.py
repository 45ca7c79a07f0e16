"""AllGather, ReduceScatter and AllReduce on a TPU axis (sharding.md): a bidirectional ring with or without
wraparound, a unidirectional one, several mesh axes at once, and the hop latency that bounds small collectives.

>>> from scalemath.symbolic.symbols import sym
>>> all_gather_time().expr
V*(N - 1)/(N*W_ici)
>>> all_gather_time().at({sym("N"): 1, sym("V"): 10**6, sym("W_ici"): 9 * 10**10}).value
0
>>> all_reduce_time_approx().expr
2*V/W_ici
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from .common import (_OPS, CASE2, CASE3, NO_WRAP, RING_EXACT, SUMMARY, T_AG, N, N_axes, V, W_ici, W_link, X, Y, Z,
                     _sum, t_hop)


# -- AllGather and ReduceScatter on a TPU axis ----------------------------------------------------
#
# A ReduceScatter is the AllGather run backwards (partial sums travel instead of shards and are
# added on the way), so each variant below has one cost, with words that fit the operation.

def _shard() -> Step:
    return Step(r"\mathrm{shard}", V / N, "V split evenly over the N devices of the axis", "byte")


def _ring_exact(op: str) -> Derivation:
    name, label = _OPS[op]
    moved = ("every device must receive the N - 1 shards it lacks" if op == "ag" else
             "every device must pass on the N - 1 partial shards it does not keep")
    return Derivation(f"{name} on a bidirectional ring with wraparound (exact)", (
        _shard(),
        Step(r"\mathrm{bytes}_{\mathrm{dev}}", V * (N - 1) / N, moved, "byte"),
        Step(label, V * (N - 1) / (N * W_ici),
             "the traffic splits evenly over both directions, W_ici/2 each; an axis of one device moves nothing",
             "s"),
    ), RING_EXACT)


def _ring_approx(op: str) -> Derivation:
    name, label = _OPS[op]
    hop = Step(r"T_{\mathrm{hop}}", 2 * V / (N * W_ici),
               "each hop moves V/N bytes each way, 2V/N in all, at the bidirectional bandwidth", "s")
    return Derivation(f"{name} on a bidirectional ring (the book's bandwidth-bound cost)", (
        hop,
        Step(r"\mathrm{hops}", N / 2, "a shard needs about N/2 hops to reach the far side of the ring", "hop"),
        Step(label, hop.expr * N / 2, "hop time times hops: the axis size cancels", "s"),
    ), CASE2 if op == "ag" else CASE3)


def _multi_axis(op: str) -> Derivation:
    name, label = _OPS[op]
    return Derivation(f"{name} over several mesh axes at once (bandwidth-bound)", (
        Step(r"W_{\mathrm{total}}", W_ici * N_axes, "each extra axis adds its own links in both directions",
             "byte/s"),
        Step(label, V / (W_ici * N_axes), "the same bytes over N_axes times the bandwidth", "s"),
    ), SUMMARY)


def _no_wraparound(op: str) -> Derivation:
    name, label = _OPS[op]
    at_end = ("the chip at an end of the line has one link, through which the N - 1 other shards arrive"
              if op == "ag" else
              "the chip at an end of the line has one link, through which N - 1 partial shards must pass")
    return Derivation(f"{name} on an axis without wraparound", (
        _shard(),
        Step(r"\mathrm{bytes}_{\mathrm{end}}", V * (N - 1) / N, at_end, "byte"),
        Step(label, V * (N - 1) / (N * W_link), "one link, one direction: the one-way link bandwidth", "s"),
    ), NO_WRAP)


def _unidirectional(op: str) -> Derivation:
    name, label = _OPS[op]
    return Derivation(f"{name} on a unidirectional ring", (
        _shard(),
        Step(r"\mathrm{hops}", N - 1, "shards move one way only, so the last one is N - 1 hops away", "hop"),
        Step(label, (N - 1) * (V / N) / W_link, "N - 1 hops of one V/N shard at the one-way link bandwidth", "s"),
    ), SUMMARY)


@functools.cache
def all_gather_time() -> Derivation:
    return _ring_exact("ag")


@functools.cache
def all_gather_time_approx() -> Derivation:
    return _ring_approx("ag")


@functools.cache
def all_gather_time_multi_axis() -> Derivation:
    return _multi_axis("ag")


@functools.cache
def all_gather_time_no_wraparound() -> Derivation:
    return _no_wraparound("ag")


@functools.cache
def all_gather_time_unidirectional() -> Derivation:
    return _unidirectional("ag")


@functools.cache
def reduce_scatter_time() -> Derivation:
    return _ring_exact("rs")


@functools.cache
def reduce_scatter_time_approx() -> Derivation:
    return _ring_approx("rs")


@functools.cache
def reduce_scatter_time_multi_axis() -> Derivation:
    return _multi_axis("rs")


@functools.cache
def reduce_scatter_time_no_wraparound() -> Derivation:
    return _no_wraparound("rs")


@functools.cache
def reduce_scatter_time_unidirectional() -> Derivation:
    return _unidirectional("rs")


@functools.cache
def all_gather_latency_aware() -> Derivation:
    latency = Step(r"T_{\mathrm{latency}}", t_hop * N / 2, "about N/2 hops, each at least t_hop", "s")
    bandwidth = Step(r"T_{\mathrm{bw}}", V / W_ici, "the bandwidth-bound ring cost", "s")
    return Derivation("AllGather on a bidirectional ring, with hop latency", (
        latency, bandwidth,
        Step(T_AG, sp.Max(latency.expr, bandwidth.expr), "whichever bound is larger sets the time", "s"),
    ), CASE2)


@functools.cache
def all_gather_latency_aware_axes(n_axes: int) -> Derivation:
    """AllGather over the first ``n_axes`` of the axes X, Y, Z at once, with hop latency."""
    if n_axes not in (2, 3):
        raise ValueError("n_axes must be 2 or 3 (one axis: all_gather_latency_aware)")
    axes = (X, Y, Z)[:n_axes]
    names = " + ".join(a.name for a in axes)
    latency = Step(r"T_{\mathrm{latency}}", t_hop * sp.Add(*axes) / 2,
                   f"the longest path crosses ({names})/2 hops, each at least t_hop", "s")
    bandwidth = Step(r"T_{\mathrm{bw}}", V / (W_ici * n_axes),
                     f"{n_axes} axes carry the bytes at once, each at W_ici", "s")
    return Derivation(f"AllGather over {n_axes} mesh axes, with hop latency", (
        latency, bandwidth,
        Step(T_AG, sp.Max(latency.expr, bandwidth.expr), "whichever bound is larger sets the time", "s"),
    ), CASE2)


@functools.cache
def all_gather_latency_aware_no_wraparound() -> Derivation:
    chunk = Step(r"T_{\mathrm{chunk}}", V / (N * W_link), "one V/N shard over one link, one way", "s")
    per_hop = Step(r"T_{\mathrm{hop}}", sp.Max(t_hop, chunk.expr), "a hop costs at least its latency", "s")
    return Derivation("AllGather on an axis without wraparound, with hop latency", (
        chunk, per_hop,
        Step(T_AG, (N - 1) * per_hop.expr, "N - 1 hops in a row reach the chip at the end of the line", "s"),
    ), NO_WRAP)


@functools.cache
def latency_threshold() -> Derivation:
    return Derivation("chunk size below which an ICI hop is latency-bound", (
        Step(r"\mathrm{bytes}^*", W_link * t_hop,
             "a chunk smaller than one hop latency's worth of one-way bandwidth waits on latency", "byte"),
    ), CASE2)


# -- AllReduce = ReduceScatter + AllGather ----------------------------------------------------------

@functools.cache
def all_reduce_time() -> Derivation:
    return _sum(reduce_scatter_time(), all_gather_time(),
                "AllReduce on a bidirectional ring with wraparound (exact)", RING_EXACT)


@functools.cache
def all_reduce_time_approx() -> Derivation:
    return _sum(reduce_scatter_time_approx(), all_gather_time_approx(),
                "AllReduce on a bidirectional ring (the book's bandwidth-bound cost)", CASE3)


@functools.cache
def all_reduce_time_multi_axis() -> Derivation:
    return _sum(reduce_scatter_time_multi_axis(), all_gather_time_multi_axis(),
                "AllReduce over several mesh axes at once (bandwidth-bound)", SUMMARY)


@functools.cache
def all_reduce_time_no_wraparound() -> Derivation:
    return _sum(reduce_scatter_time_no_wraparound(), all_gather_time_no_wraparound(),
                "AllReduce on an axis without wraparound", NO_WRAP)


@functools.cache
def all_reduce_time_unidirectional() -> Derivation:
    return _sum(reduce_scatter_time_unidirectional(), all_gather_time_unidirectional(),
                "AllReduce on a unidirectional ring", SUMMARY)
