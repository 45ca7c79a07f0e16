"""The optimal FSDP x TP split on a real mesh (training.md, 'Combining FSDP and Tensor Parallelism' and 'Some
Problems to Work': X_opt = 1618 for LLaMA-3 70B on 8960 chips becomes 2048-way FSDP x 4-way TP on 8192 of them):
X_opt, the power of two nearest it, the TP degree that fits beside it, the chips used and the communication
that rounding costs over its least value.

Engine route: ``parallel.fsdp_tp.x_opt`` and the ``parallel.fsdp_tp.x_mesh``, ``y_mesh``, ``mesh_chips`` and
``mesh_penalty`` forms, with F from the model and the book's M_X = 2, M_Y = 1 (a 3D torus). Second route: the
nearest power of two found by comparing X_opt squared (a fraction) with powers of two, in integers, and the
penalty as the larger of the two ratios.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ..draws import pick
from ..registry import Generator, register, reject_if
from .inference_common import ask, model_fields

SOURCE = "training.md, 'Combining FSDP and Tensor Parallelism' and 'Some Problems to Work'"
MODELS = ("llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b")
BATCHES = (2**20, 2**21, 2**22, 3 * 2**20, 2**23, 2**24)
CHIPS = (1024, 2048, 3072, 4096, 6144, 8192, 8960, 12288, 16384)


def draw(rng):
    p = model_fields(pick(rng, MODELS)) | {"chip": "tpu-v5p", "dtype": "bf16", "batch": pick(rng, BATCHES),
                                           "n": pick(rng, CHIPS)}
    x_opt_sq = Fraction(p["batch"] * 2 * p["n"], p["F"])
    reject_if(not 4 <= x_opt_sq <= Fraction(p["n"] ** 2, 4), "X_opt lies between 2 and half the chips")
    return p


def _given(p):
    return {"B": p["batch"], "M_X": 2, "M_Y": 1, "n_dev": p["n"]}


def solve(p):
    g = _given(p)
    return [ask(p, "x_opt", "the FSDP degree with the least communication", "parallel.fsdp_tp.x_opt", g),
            ask(p, "x_mesh", "the FSDP degree on the mesh (a power of two)", "parallel.fsdp_tp.x_mesh", g),
            ask(p, "y_mesh", "the tensor-parallel degree beside it", "parallel.fsdp_tp.y_mesh", g),
            ask(p, "chips", "chips the mesh uses", "parallel.fsdp_tp.mesh_chips", g),
            ask(p, "penalty", "communication at the mesh over its least value", "parallel.fsdp_tp.mesh_penalty", g)]


def check(p):
    sq = Fraction(p["batch"] * 2 * p["n"], p["F"])  # X_opt squared = B·(M_X/M_Y)·n/F
    e = max(k for k in range(0, 40) if Fraction(2) ** (2 * k - 1) <= sq)  # nearest power of two in ratio
    x = min(max(2**e, 1), p["n"])
    y = p["n"] // x
    x_opt = sp.sqrt(sp.Rational(sq.numerator, sq.denominator))
    return {"x_opt": x_opt, "x_mesh": x, "y_mesh": y, "chips": x * y, "penalty": sp.Max(x / x_opt, x_opt / x)}


register(Generator("training_mesh_round", "training", "The optimal FSDP x TP split rounded to a real mesh",
                   SOURCE, draw, solve, check))
