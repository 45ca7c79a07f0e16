"""Collectives inside one NVLink node (gpus.md, 'Intra-node collectives'): rings over the switch, in-switch
reduction (SHARP), dense and ragged AllToAll, and the bandwidth a measurement or nccl-tests reports.

>>> from scalemath.symbolic.symbols import sym
>>> gpu_all_to_all_time().at({sym("N"): 8, sym("V"): 64, sym("W_gpu"): 7}).value
1
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from .common import _OPS, APPENDIX_B, INTRA, QUIZ4, T_A2A, T_AG, T_AR, N, V, W_gpu, _sum, eta, k_top, t_meas


# -- GPUs inside one NVLink node ------------------------------------------------------------------------

def _gpu_ring(op: str) -> Derivation:
    name, label = _OPS[op]
    return Derivation(f"{name} inside an NVLink node", (
        Step(r"T_{\mathrm{hop}}", V / (N * W_gpu), "each step sends one V/N shard at the GPU's egress bandwidth", "s"),
        Step(label, V * (N - 1) / (N * W_gpu), "N - 1 steps: every GPU sends its shard to the N - 1 others", "s"),
    ), INTRA)


@functools.cache
def gpu_all_gather_time() -> Derivation:
    return _gpu_ring("ag")


@functools.cache
def gpu_reduce_scatter_time() -> Derivation:
    return _gpu_ring("rs")


@functools.cache
def gpu_all_gather_time_approx() -> Derivation:
    return Derivation("AllGather inside an NVLink node, many GPUs", (
        Step(T_AG, sp.limit(gpu_all_gather_time().expr, N, sp.oo),
             "(N - 1)/N tends to 1: the bytes over one GPU's egress", "s"),
    ), INTRA)


@functools.cache
def gpu_all_reduce_time() -> Derivation:
    return _sum(gpu_reduce_scatter_time(), gpu_all_gather_time(), "AllReduce inside an NVLink node (no SHARP)", INTRA)


@functools.cache
def gpu_all_reduce_sharp_time() -> Derivation:
    return Derivation("AllReduce inside an NVLink node with in-switch reduction (SHARP)", (
        Step(r"\mathrm{bytes}_{\mathrm{out}}", V * (N - 1) / N + V / N,
             "each GPU sends its N - 1 foreign partial shards, then its own summed shard", "byte"),
        Step(T_AR, V / W_gpu, "the switch adds and multicasts: exactly V bytes leave each GPU", "s"),
    ), QUIZ4)


@functools.cache
def gpu_sharp_speedup() -> Derivation:
    ring, sharp = gpu_all_reduce_time().result, gpu_all_reduce_sharp_time().result
    return Derivation("predicted speed-up of a SHARP AllReduce over a ring AllReduce", (
        Step(r"T_{\mathrm{ring}}", ring.expr, "ReduceScatter then AllGather over NVLink", "s"),
        Step(r"T_{\mathrm{SHARP}}", sharp.expr, "the switches reduce in the network", "s"),
        Step(r"\mathrm{speedup}", sp.factor(sp.cancel(ring.expr / sharp.expr)), "the ratio of the two times", "1"),
    ), INTRA)


@functools.cache
def gpu_all_to_all_time() -> Derivation:
    return Derivation("AllToAll inside an NVLink node", (
        Step(r"\mathrm{chunk}", V / N**2, "each GPU holds V/N and sends a V/N^2 piece to every other GPU", "byte"),
        Step(T_A2A, V * (N - 1) / (N**2 * W_gpu), "N - 1 pieces leave each GPU directly through the switch", "s"),
    ), INTRA)


@functools.cache
def gpu_ragged_all_to_all_time() -> Derivation:
    frac = Step(r"f_{\mathrm{dest}}", sp.Min(k_top / N, 1),
                "at most k of the N destinations receive anything from a token", "1")
    return Derivation("ragged (top-k) AllToAll inside an NVLink node (the book's approximation)", (
        frac,
        Step(T_A2A, frac.expr * V * (N - 1) / (N**2 * W_gpu),
             "the dense AllToAll cost scaled by the share of destinations in use", "s"),
    ), INTRA)


@functools.cache
def gpu_ragged_all_to_all_time_exact() -> Derivation:
    """The expected cost when each token picks k of N destinations at random.

    Not registered: its exponent k is a symbol, which the unit checker does not accept.
    """
    frac = Step(r"f_{\mathrm{dest}}", 1 - ((N - 1) / N) ** k_top,
                "expected share of destinations a token reaches with k random picks out of N", "1")
    return Derivation("ragged (top-k) AllToAll inside an NVLink node (expected cost)", (
        frac,
        Step(T_A2A, frac.expr * V * (N - 1) / (N**2 * W_gpu),
             "the dense AllToAll cost scaled by the expected share of destinations", "s"),
    ), APPENDIX_B)


# -- measured bandwidth and nccl-tests bus bandwidth -----------------------------------------------------

@functools.cache
def gpu_all_reduce_time_measured() -> Derivation:
    w_eff = Step(r"W_{\mathrm{eff}}", eta * W_gpu, "the share of the advertised NVLink bandwidth really reached",
                 "byte/s")
    ring = gpu_all_reduce_time().expr.subs(W_gpu, w_eff.expr)
    return Derivation("AllReduce inside an NVLink node at the measured bandwidth", (
        w_eff, Step(T_AR, ring, "the ring AllReduce at the effective bandwidth", "s"),
    ), INTRA)


def _bus(factor: sp.Expr, why: str, title: str) -> Derivation:
    algo = Step(r"\mathrm{algBW}", V / t_meas, "bytes per device over the measured time", "byte/s")
    return Derivation(title, (
        algo, Step(r"\mathrm{busBW}", factor * algo.expr, why, "byte/s"),
    ), INTRA)


@functools.cache
def gpu_all_reduce_bus_bandwidth() -> Derivation:
    return _bus(2 * (N - 1) / N, "nccl-tests scales by 2(N - 1)/N, the bytes a ring AllReduce sends per byte",
                "nccl-tests bus bandwidth of an AllReduce")


@functools.cache
def gpu_all_gather_bus_bandwidth() -> Derivation:
    return _bus((N - 1) / N, "nccl-tests scales by (N - 1)/N, the share of the gathered array that travels",
                "nccl-tests bus bandwidth of an AllGather")
