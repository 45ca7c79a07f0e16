"""TPU arithmetic (book part 2): pods, tori, transfers, MXUs, weight streaming.

>>> ring_hops(wraparound=True).at({sym("N"): 16}).value
8
>>> pod_hosts().at({sym("X"): 16, sym("Y"): 20, sym("Z"): 28, sym("host"): 4}).value
2240
"""

from __future__ import annotations

import functools
from typing import Sequence

import sympy as sp

from .derivation import Derivation, Step
from .symbols import sym

__all__ = [
    "ring_hops", "torus_diameter", "pod_chips", "pod_hosts", "pod_cores", "pod_flops", "pod_hbm",
    "transfer_time", "p2p_time", "mxu_flops_per_cycle", "mxu_peak", "weights_load_time", "pipeline",
    "token_batch_total", "token_batch_local",
]

SPECS = "tpus.md, 'TPU Specs'"
NETWORKING = "tpus.md, 'TPU Networking'"
WORKED = "tpus.md, 'Worked Problems'"

N, X, Y, Z = sym("N"), sym("X"), sym("Y"), sym("Z")
W, W_link, t_hop = sym("W"), sym("W_link"), sym("t_hop")


def _ring(n: sp.Expr, wraparound: bool) -> sp.Expr:
    return sp.floor(n / 2) if wraparound else n - 1


@functools.cache
def ring_hops(wraparound: bool) -> Derivation:
    why = ("with wraparound the farthest chip is halfway round the ring" if wraparound
           else "without wraparound the two ends are N - 1 links apart")
    return Derivation(f"largest hop count on an axis of N chips ({'with' if wraparound else 'without'} wraparound)",
                      (Step(r"\mathrm{hops}_{\max}", _ring(N, wraparound), why, "hop"),), NETWORKING)


@functools.cache
def torus_diameter(wraparound: tuple[bool, ...]) -> Derivation:
    """Largest hop count between two chips of a slice: the axes' ring distances add up."""
    axes = (X, Y, Z)[: len(wraparound)]
    steps = tuple(Step(rf"\mathrm{{hops}}_{{{a}}}", _ring(a, w),
                       f"axis {a} {'wraps' if w else 'has no wraparound'}", "hop")
                  for a, w in zip(axes, wraparound))
    total = Step(r"\mathrm{hops}_{\max}", sp.Add(*(s.expr for s in steps)),
                 "a shortest path walks each axis independently", "hop")
    return Derivation("largest hop count in the slice", steps + (total,), NETWORKING)


def _chips() -> Step:
    return Step(r"n_{\mathrm{chips}}", X * Y * Z, "the sizes of the axes multiplied", "chip")


@functools.cache
def pod_chips() -> Derivation:
    return Derivation("chips in a pod or slice", (_chips(),), SPECS)


@functools.cache
def pod_hosts() -> Derivation:
    return Derivation("hosts in a pod or slice", (_chips(), Step(
        r"n_{\mathrm{hosts}}", X * Y * Z / sym("host"), "chips divided by chips per host", "host")), WORKED)


@functools.cache
def pod_cores() -> Derivation:
    return Derivation("TensorCores in a pod or slice", (_chips(), Step(
        r"n_{\mathrm{cores}}", X * Y * Z * sym("cores"), "chips times TensorCores per chip", "core")), WORKED)


@functools.cache
def pod_flops() -> Derivation:
    return Derivation("peak FLOPs/s of a pod or slice", (_chips(), Step(
        r"C_{\mathrm{pod}}", X * Y * Z * sym("C"), "chips times FLOPs/s per chip", "FLOP/s")), WORKED)


@functools.cache
def pod_hbm() -> Derivation:
    return Derivation("HBM of a pod or slice", (_chips(), Step(
        r"M_{\mathrm{pod}}", X * Y * Z * sym("H_chip"), "chips times HBM per chip", "byte")), WORKED)


@functools.cache
def transfer_time() -> Derivation:
    return Derivation("time to move bytes over parallel links", (Step(
        r"T", sym("bytes") / (sym("links") * W), "bytes over the bandwidth of all links used", "s"),),
        "tpus.md, 'Worked Problems' (Q6)")


@functools.cache
def p2p_time() -> Derivation:
    latency = Step(r"T_{\mathrm{latency}}", sym("hops") * t_hop, "the first byte crosses every hop", "s")
    bulk = Step(r"T_{\mathrm{bulk}}", sym("bytes") / (sym("links") * W_link),
                "the bytes stream over the links at one-way bandwidth", "s")
    total = Step("T", latency.expr + bulk.expr, "latency and bulk time add", "s")
    return Derivation("point-to-point transfer over ICI", (latency, bulk, total), "tpus.md, 'Worked Problems' (Q5)")


@functools.cache
def mxu_flops_per_cycle() -> Derivation:
    s = sym("s_mxu")
    return Derivation("FLOPs per cycle of one MXU", (Step(
        r"\mathrm{FLOPs/cycle}", 2 * s**2,
        "an s×s systolic array does s² multiply-adds per cycle, 2 FLOPs each", "FLOP"),),
        "tpus.md, 'What Is a TPU?' and Appendix B")


@functools.cache
def mxu_peak() -> Derivation:
    per_cycle = mxu_flops_per_cycle().result
    return mxu_flops_per_cycle().extend(Step(
        "C", per_cycle.expr * sym("n_mxu") * sym("f_clk"), "per-MXU rate × MXUs × clock", "FLOP/s"),
        title="peak FLOPs/s from the MXUs")


@functools.cache
def weights_load_time() -> Derivation:
    P, b_w, n = sym("P"), sym("b_w"), sym("n_dev")
    per_chip = Step(r"\mathrm{bytes}_{\mathrm{chip}}", P * b_w / n, "the weights split evenly over the chips", "byte")
    return Derivation("time to stream all weights from HBM once", (per_chip, Step(
        "T", per_chip.expr / sym("W"), "each chip reads its share at its HBM bandwidth", "s")), WORKED)


def pipeline(stages: Sequence[tuple[str, Derivation]]) -> tuple[Derivation, Derivation]:
    """Bounds on a multi-stage copy: the slowest stage (perfect overlap) and the sum (none)."""
    steps = tuple(Step(label, d.expr, d.title, "s") for label, d in stages)
    lower = Step(r"T_{\mathrm{lower}}", sp.Max(*(s.expr for s in steps)), "stages pipelined perfectly", "s")
    upper = Step(r"T_{\mathrm{upper}}", sp.Add(*(s.expr for s in steps)), "stages one after another", "s")
    return (Derivation("pipelined copy: lower bound", steps + (lower,), "tpus.md, 'Worked Problems' (Q6)"),
            Derivation("pipelined copy: upper bound", steps + (upper,), "tpus.md, 'Worked Problems' (Q6)"))


@functools.cache
def token_batch_total() -> Derivation:
    return Derivation("total batch in tokens", (Step(
        r"B_{\mathrm{total}}", sym("n_seq") * sym("T"), "sequences times tokens per sequence", "token"),),
        "roofline.md, 'Matrix multiplication'")


@functools.cache
def token_batch_local() -> Derivation:
    total = token_batch_total().result
    return token_batch_total().extend(Step(
        "B", total.expr / sym("n_dev"), "the global batch split over the data-parallel devices", "token"),
        title="local (per-device) batch in tokens")
