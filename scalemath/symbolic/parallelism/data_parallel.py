"""Data parallelism and FSDP (training.md), within a pod and across pods over DCN: the smallest batch that
stays compute-bound, the most devices a batch keeps busy, and the largest model a replica holds.

>>> from scalemath.symbolic.symbols import sym
>>> dp_min_batch_per_device().expr
C*b_w/(2*M_X*W_ici)
>>> dp_min_batch_per_device().at({sym("C"): 459 * 10**12, sym("W_ici"): 18 * 10**10,
...                               sym("b_w"): 2, sym("M_X"): 3}).value
850
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step, crossover, simplest
from .common import DP, B, H_chip, P, X, b_opt, b_w, n_dev, n_slice
from .schemes import _balance, _per_device


@functools.cache
def dp_min_batch() -> Derivation:
    return _balance("dp", "bwd", B, title="data parallelism: smallest global batch that stays compute-bound",
                    label="B^*", unit="token",
                    why="backward compute equals the gradient AllReduces; a larger batch is compute-bound")


@functools.cache
def dp_min_batch_per_device() -> Derivation:
    return _per_device(dp_min_batch(), X, r"B^*/X", "data parallelism: smallest per-device batch (compute-bound)",
                       "the global threshold shared by the X replicas: C/(M_X·W_ici) with bf16 gradients")


@functools.cache
def dp_max_devices() -> Derivation:
    return _balance("dp", "bwd", X, title="data parallelism: most replicas a batch keeps compute-bound",
                    label="X^*", unit="chip",
                    why="more replicas shrink each one's compute below the fixed AllReduce time")


@functools.cache
def dp_max_params() -> Derivation:
    per_param = Step(r"\mathrm{bytes}/P", b_w + b_opt, "bf16 parameters plus the optimizer's fp32 moments",
                     "byte/param")
    return crossover(P * per_param.expr, H_chip, P, title="data parallelism: largest model one chip holds (Adam)",
                     source=DP, lhs_label=r"\mathrm{bytes}", rhs_label=r"M_{\mathrm{chip}}", side_unit="byte",
                     label=r"P_{\max}", unit="param",
                     why="every replica keeps all parameters and optimizer state; activations and gradients ignored",
                     lead=(per_param,))


@functools.cache
def fsdp_min_batch() -> Derivation:
    return _balance("fsdp", "fwd", B, title="FSDP: smallest global batch that stays compute-bound",
                    label="B^*", unit="token",
                    why="forward compute equals the weight AllGathers (the backward pass gives the same ratio)")


@functools.cache
def fsdp_min_batch_per_device() -> Derivation:
    return _per_device(fsdp_min_batch(), X, r"B^*/X", "FSDP: smallest per-device batch (compute-bound)",
                       "the same per-device threshold as data parallelism")


@functools.cache
def fsdp_max_devices() -> Derivation:
    return _balance("fsdp", "fwd", X, title="FSDP: most chips a batch keeps compute-bound",
                    label="X^*", unit="chip", why="the global batch over the smallest per-device batch")


# -- across pods over DCN --------------------------------------------------------------------------------------

@functools.cache
def dcn_min_batch() -> Derivation:
    return _balance("dcn", "bwd", B, title="DP across slices over DCN: smallest global batch that stays compute-bound",
                    label="B^*", unit="token",
                    why="backward compute equals the cross-slice gradient AllReduce over DCN")


@functools.cache
def dcn_min_batch_per_slice() -> Derivation:
    d = dcn_min_batch()
    return d.extend(Step(r"B^* n_{\mathrm{slice}}/n_{\mathrm{dev}}", simplest(d.expr * n_slice / n_dev),
                         "the batch each slice processes: C/W_dcn with bf16 gradients", "token"),
                    title="DP across slices over DCN: smallest per-slice batch")
