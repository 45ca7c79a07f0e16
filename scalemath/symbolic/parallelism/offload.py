"""Host offload, the fourth memory saver the book lists beside rematerialisation, ZeRO sharding and gradient
accumulation (index.md's outline): bytes kept in host memory and moved over the host link each step, and how much
of that transfer the step's compute hides. The host link is PCIe on most chips; a Grace superchip (GH200, GB200)
joins CPU and GPU by NVLink-C2C instead, which gpus.md ('Appendix A: How does this change with GB200?') says makes
host memory about as reachable as another GPU's. The catalog has no NVLink-C2C figure: set W_host for those.

>>> from ..symbols import sym
>>> offload_exposed_time().at({sym("M_off"): 32 * 10**9, sym("W_host"): 16 * 10**9, sym("t_cmp"): 1}).value
1
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym

__all__ = ["offload_transfer_time", "offload_hidden_bytes", "offload_hidden_fraction", "offload_exposed_time"]

OUTLINE = ("index.md, 'High-Level Outline' (host offload), and gpus.md, 'Appendix A: How does this change with "
           "GB200?' (NVLink-C2C)")

M_off, W_host, t_cmp = sym("M_off"), sym("W_host"), sym("t_cmp")


def _transfer() -> Step:
    return Step(r"T_{\mathrm{offload}}", M_off / W_host,
                "M_off bytes to the host and M_off back each step; the link carries both directions at once", "s")


def _hidden() -> Step:
    return Step(r"M_{\mathrm{hidden}}", W_host * t_cmp, "what the link moves each way while the step computes",
                "byte")


@functools.cache
def offload_transfer_time() -> Derivation:
    return Derivation("time to move offloaded state over the host link, per step", (_transfer(),), OUTLINE)


@functools.cache
def offload_hidden_bytes() -> Derivation:
    return Derivation("most bytes a step can offload and fetch back without waiting on the host link", (
        _hidden(),), OUTLINE)


@functools.cache
def offload_hidden_fraction() -> Derivation:
    transfer = _transfer()
    return Derivation("share of an offload's transfer hidden behind the step's compute", (transfer, Step(
        r"f_{\mathrm{hidden}}", sp.Min(1, t_cmp / transfer.expr), "the compute time over the transfer's, at most 1",
        "1")), OUTLINE)


@functools.cache
def offload_exposed_time() -> Derivation:
    transfer = _transfer()
    return Derivation("time an offload adds to a step", (transfer, Step(
        r"T_{\mathrm{exposed}}", sp.Max(transfer.expr, t_cmp) - t_cmp, "the transfer that outlasts the compute",
        "s")),
        OUTLINE)
