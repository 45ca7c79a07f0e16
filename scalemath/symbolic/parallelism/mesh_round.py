"""The optimal FSDP x TP split rounded to a real mesh (training.md, 'Combining FSDP and Tensor Parallelism';
'Some Problems to Work', the LLaMA-3 70B mesh): X_opt is seldom a power of two, so the FSDP degree is the power
of two nearest it (in ratio), at most the chip count, the TP degree the most that fits beside it, and the
rounding costs communication: the FSDP time grows as X and the TP time as 1/X, so at X_mesh their maximum is
max(X_mesh/X_opt, X_opt/X_mesh) times its least value (never more than sqrt 2 for the nearest power of two).

>>> from ..symbols import sym
>>> v = fsdp_tp_mesh_chips().at({sym("B"): 4194304, sym("F"): 28672, sym("M_X"): 2, sym("M_Y"): 1, sym("n_dev"): 8960})
>>> [s.value for s in v.steps[2:5]]
[2048, 4, 8192]
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from .common import MIXED, n_dev
from .tensor_parallel import fsdp_tp_x_opt

__all__ = ["fsdp_tp_mesh_steps", "fsdp_tp_x_mesh", "fsdp_tp_y_mesh", "fsdp_tp_mesh_chips", "fsdp_tp_mesh_penalty"]

SOURCE = MIXED + "; training.md, 'Some Problems to Work' (X_opt = 1618 rounded to 2048-way FSDP x 4-way TP)"


@functools.cache
def fsdp_tp_mesh_steps() -> tuple[Step, ...]:
    x_opt = fsdp_tp_x_opt().expr
    opt = Step(r"X_{\mathrm{opt}}", x_opt, "the FSDP degree with the least communication (its maximum)", "chip")
    exponent = Step(r"e", sp.floor(sp.log(x_opt, 2) + sp.Rational(1, 2)),
                    "log2 X_opt rounded to the nearest whole number: the costs go as X and 1/X, so the nearest "
                    "power of two in ratio is the cheaper neighbour", "1")
    x_mesh = Step(r"X_{\mathrm{mesh}}", sp.Min(sp.Max(2**exponent.expr, 1), n_dev),
                  "that power of two, between 1 and the chip count", "chip")
    y_mesh = Step(r"Y_{\mathrm{mesh}}", sp.floor(n_dev / x_mesh.expr),
                  "the most tensor-parallel ways beside it: a whole number of chips (the rest stay idle)", "chip")
    used = Step(r"n_{\mathrm{used}}", x_mesh.expr * y_mesh.expr, "the mesh's chips: X_mesh x Y_mesh", "chip")
    penalty = Step(r"T_{\mathrm{comms}}(X_{\mathrm{mesh}}) / T_{\mathrm{comms}}(X_{\mathrm{opt}})",
                   sp.Max(x_mesh.expr / x_opt, x_opt / x_mesh.expr),
                   "T_FSDP grows as X and T_TP shrinks as 1/X, equal at X_opt: their maximum at X_mesh is the larger "
                   "of the two ratios times its least value", "1")
    return opt, exponent, x_mesh, y_mesh, used, penalty


def _upto(n: int, title: str) -> Derivation:
    return Derivation(title, fsdp_tp_mesh_steps()[:n], SOURCE)


@functools.cache
def fsdp_tp_x_mesh() -> Derivation:
    return _upto(3, "FSDP + TP on a real mesh: the FSDP degree (a power of two)")


@functools.cache
def fsdp_tp_y_mesh() -> Derivation:
    return _upto(4, "FSDP + TP on a real mesh: the tensor-parallel degree beside it")


@functools.cache
def fsdp_tp_mesh_chips() -> Derivation:
    return _upto(5, "FSDP + TP on a real mesh: chips used")


@functools.cache
def fsdp_tp_mesh_penalty() -> Derivation:
    steps = fsdp_tp_mesh_steps()
    return Derivation("FSDP + TP on a real mesh: communication over its least value (the cost of rounding)",
                      steps[:3] + steps[5:], SOURCE)
