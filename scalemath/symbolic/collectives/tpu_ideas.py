"""Two sharding.md ideas about an AllGather on TPU ICI that the chapter states in words: spreading it over a mesh
axis the array is only replicated on ('Some Problems to Work', Q2's aside), and how large an AllGather must be
before it reaches a given share of the link bandwidth (the measured v5e curve of 'Case 2', about 95 % near
10 MB).

The second uses the additive form of the hop latency (the bytes' time plus N/2 hops of t_hop, as the TPU chapter
adds them for a point-to-point transfer) rather than the max() of the latency-aware form, under which the
bandwidth share would jump from the latency bound straight to 1.

>>> from ..symbols import sym
>>> idle_axis_speedup().at({sym("N_axes"): 1, sym("n_idle"): 1}).value
2
>>> size_for_fraction().at({sym("f_bw"): sp.Rational(95, 100), sym("t_hop"): sp.Rational(1, 10**6),
...                         sym("N"): 16, sym("W_ici"): 9 * 10**10}).value
13680000
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import T_AG, N, N_axes, V, W_ici, t_hop

__all__ = ["idle_axis_time", "idle_axis_speedup", "achieved_fraction", "size_for_fraction"]

PROBLEMS = "sharding.md, 'Some Problems to Work' (Q2: spread a collective over an idle axis)"
CASE2 = "sharding.md, 'Case 2' (a measured v5e AllGather against its size)"

n_idle, f_bw = sym("n_idle"), sym("f_bw")


def _axes() -> Step:
    return Step(r"N_{\mathrm{axes}}'", N_axes + n_idle,
                "first reshard onto the idle axes, which moves no byte (the array is replicated there: each device "
                "keeps a slice of what it holds and drops the rest); the gather then runs over those axes too", "axis")


@functools.cache
def idle_axis_time() -> Derivation:
    return Derivation("AllGather of V bytes after resharding onto idle mesh axes for free", (
        _axes(),
        Step(T_AG, V / (W_ici * (N_axes + n_idle)), "the same bytes over every axis's links at once", "s")),
        PROBLEMS, note="Q2.1 on a TPU v4p 4x4x4: AllGather_X of [B_X, D_Y] with Z idle is 2BD/(Y 2 W_ici), half the "
                       "23.3 us of gathering over X alone.")


@functools.cache
def idle_axis_speedup() -> Derivation:
    return Derivation("how much faster an AllGather is once resharded onto idle axes", (_axes(), Step(
        r"T_{\mathrm{AG}}/T_{\mathrm{AG}}'", (N_axes + n_idle) / N_axes,
        "V/(W_ici N_axes) against V/(W_ici (N_axes + n_idle))", "1")), PROBLEMS)


def _terms() -> tuple[Step, Step]:
    return (Step(r"T_{\mathrm{latency}}", t_hop * N / 2, "about N/2 hops, each of t_hop", "s"),
            Step(r"T_{\mathrm{bw}}", V / W_ici, "the bandwidth-bound ring cost", "s"))


@functools.cache
def achieved_fraction() -> Derivation:
    latency, bandwidth = _terms()
    return Derivation("share of the ICI bandwidth an AllGather of V bytes on a ring of N reaches", (
        latency, bandwidth, Step(r"f_{\mathrm{bw}}", bandwidth.expr / (latency.expr + bandwidth.expr),
                                 "the bandwidth-bound time over the time with the hops' latency added", "1")),
        CASE2)


@functools.cache
def size_for_fraction() -> Derivation:
    latency = _terms()[0]
    return Derivation("smallest AllGather (bytes) that reaches a share f_bw of the ICI bandwidth", (latency, Step(
        "V", f_bw / (1 - f_bw) * latency.expr * W_ici,
        "V/W_ici = f/(1 - f) of the latency: 19 latencies' worth of bytes for 95 %", "byte")), CASE2, positive=True,
        note="TPU v5e, a 16-chip axis, t_hop = 1 us and W_ici = 9e10 B/s: 13.7 MB for 95 %, where the book's "
             "measured curve reaches about 95 % near 10 MB.")
