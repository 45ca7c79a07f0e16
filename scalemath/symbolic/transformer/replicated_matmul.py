"""FLOPs of a matmul sharded over some mesh axes and replicated over another (transformers.md, 'A Few Problems to
Work', Question 2): A[B_X, D_Y] ·_D W[D_Y, F] on a mesh {X, Y, Z}. Each device multiplies its own block, so the
per-device FLOPs fall with X·Y; the Z devices that hold the same blocks repeat that work, so the FLOPs summed over
the mesh are Z times the matmul's.

>>> replicated_matmul_flops_total().expr
2*B*D*F*Z
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import PROBLEMS, B, D, F

__all__ = ["replicated_matmul_flops_per_device", "replicated_matmul_flops_total"]

X, Y, Z = sym("X"), sym("Y"), sym("Z")


def _steps() -> tuple[Step, Step]:
    whole = Step(r"\mathrm{FLOPs}_{\mathrm{matmul}}", 2 * B * D * F,
                 "the unsharded matmul: 2 FLOPs for each of the B·D·F multiply-adds", "FLOP")
    return whole, Step(r"\mathrm{FLOPs}_{\mathrm{device}}", 2 * (B / X) * (D / Y) * F,
                       "each device multiplies its A[B/X, D/Y] block by W[D/Y, F]: a partial sum, to be reduced "
                       "over Y; nothing is split over Z", "FLOP")


@functools.cache
def replicated_matmul_flops_per_device() -> Derivation:
    return Derivation("FLOPs each device does for A[B_X, D_Y] · W[D_Y, F] on a mesh {X, Y, Z}", _steps(), PROBLEMS)


@functools.cache
def replicated_matmul_flops_total() -> Derivation:
    whole, device = _steps()
    return Derivation("FLOPs summed over a mesh {X, Y, Z} for A[B_X, D_Y] · W[D_Y, F] (replicated over Z)", (
        whole, device, Step(r"\mathrm{FLOPs}_{\mathrm{mesh}}", device.expr * X * Y * Z,
                            "X·Y·Z devices each doing the per-device FLOPs: the matmul done Z times over, "
                            "once by each copy along the unused axis", "FLOP")), PROBLEMS)
