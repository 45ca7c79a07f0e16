"""Derive 2D weight-stationary decode (inference.md, Worked Problem 7 and Appendix B): the MLP's weights sharded
W_in[D_X, F_YZ] and W_out[F_YZ, D_X] over n = X·Y·Z chips. The student derives what each chip holds, the three
collectives of the book's algorithm and their time, the X that makes that time least, the chip count above which
2D communicates less than 1D (Megatron) sharding over three axes, and the most chips at which the step stays
compute-bound at the best X.

Framing drawn: the activations' and weights' element types, a dense model's MLP widths (the book's two matrices,
without a gate) and a TPU with a 3D torus. Key: the engine's ``inference.ws2d.weight_bytes_per_chip``,
``inference.ws2d.collectives``, ``inference.ws2d.x_opt``, ``inference.ws2d.min_chips`` and
``inference.ws2d.max_chips_compute_bound``. Second route: the blocks and the three collectives counted by hand
(bytes each chip gathers, reduces and scatters over the axes each runs on), the best X by calculus (the derivative
of the total set to zero, not the engine's balance of the two terms), and the two thresholds in fractions from
the catalog's integers.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ...catalog.models import get_model
from ..draws import ask, pick, whole, whole_check
from ..registry import Generator, register, reject_if
from .derive_common import engine_form, formula, name

NAME = "derive_weight_stationary_2d"
SOURCE = "inference.md, 'Worked Problems' (Q7: 2D model sharding) and 'Appendix B: 2D Weight Stationary sharding'"
ACTIVATIONS = {"bf16": 2, "int8": 1}
WEIGHTS = {"bf16": 2, "int8": 1, "fp32": 4}
#: dense models whose MLP widths the problem takes (their gates left out, as the book's algorithm has two matrices)
MODELS = ("gpt3-175b", "llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gemma2-27b", "gemma3-27b",
          "qwen3-32b", "book-part7", "megatron-gpt-39.1b")
CHIPS = ("tpu-v4p", "tpu-v5p", "tpu7x")  # 3D tori: X, Y and Z are axes of the slice
AXES_1D = 3  # 1D sharding over all three axes at once, as the book compares


def draw(rng):
    act, wt = pick(rng, tuple(ACTIVATIONS)), pick(rng, tuple(WEIGHTS))
    model, chip = pick(rng, MODELS), pick(rng, CHIPS)
    p = {"act": act, "b_x": ACTIVATIONS[act], "wt": wt, "b_w": WEIGHTS[wt], "model": model,
         "model_name": get_model(model).name, "D": get_model(model).D, "F": get_model(model).F, "chip": chip}
    reject_if(_n_max(p) < 2, "the step must stay compute-bound on at least two chips")
    return p


def _n_max(p) -> Fraction:
    chip = get_chip(p["chip"])
    w, c = chip.bandwidth("ici"), chip.flops_per_s["bf16"]
    return Fraction(2 * p["D"] * p["F"] * w * w, p["b_x"] ** 2 * c * c)


def _symbols(*names):
    meaning = {"B": "tokens in the decode batch", "D": "model width", "F": "MLP hidden width",
               "X": "chips along mesh axis X", "Y": "chips along mesh axis Y", "Z": "chips along mesh axis Z",
               "W": "ICI bandwidth of one mesh axis (both directions), bytes/s", "n": "chips, n = X Y Z"}
    return tuple((k, meaning[k]) for k in names)


def solve(p):
    X, Y, Z, n = (name(k) for k in ("X", "Y", "Z", "n"))
    mesh = {"n_dev": X * Y * Z, "D": name("D"), "F": name("F"), "B": name("B"), "X": X, "W_ici": name("W")}
    held = engine_form("inference.ws2d.weight_bytes_per_chip", {**mesh, "b_w": p["b_w"]})
    comms = engine_form("inference.ws2d.collectives", {**mesh, "b_x": p["b_x"]})
    x_opt = engine_form("inference.ws2d.x_opt", {"n_dev": n, "D": name("D"), "F": name("F"), "B": name("B"),
                                                  "b_x": p["b_x"], "W_ici": name("W")})
    given = {"D": p["D"], "F": p["F"], "b_x": p["b_x"]}
    n_star = ask("n_star", "the chip count above which 2D communicates less than 1D over three axes",
                 "inference.ws2d.min_chips", given={**given, "M_Y": AXES_1D})
    n_max = ask("n_max", "the most chips at which the MLP stays compute-bound at the best X",
                "inference.ws2d.max_chips_compute_bound", chip=p["chip"], dtype="bf16", given=given)
    return [formula("weights", "bytes of the MLP's weights each chip holds", held, _symbols("D", "F", "X", "Y", "Z")),
            formula("t_comms", "time of the three collectives of one MLP",
                    comms, _symbols("B", "D", "F", "X", "Y", "Z", "W")),
            formula("x_opt", "the best X for n chips", x_opt,
                    _symbols("D", "F", "n")),
            n_star, whole(n_max, "down")]


def check(p):
    B, D, F, X, Y, Z, W, n = (name(k) for k in ("B", "D", "F", "X", "Y", "Z", "W", "n"))
    block = p["b_w"] * (D / X) * (F / (Y * Z))  # W_in[D_X, F_YZ]; W_out[F_YZ, D_X] the same size
    gathered = p["b_x"] * B * (D / X)  # In[B, D_X] after the AllGather over Y and Z
    partial = p["b_x"] * B * (F / (Y * Z))  # Tmp[B, F_YZ], AllReduced over X
    total = gathered / (2 * W) + 2 * partial / W + gathered / (2 * W)
    # the best X by calculus: the derivative of the total over X with YZ = n / X, set to zero
    x = sp.Symbol("x", positive=True)
    t_of_x = (p["b_x"] * B * D / x + 2 * p["b_x"] * B * F * x / n) / W
    (x_best,) = sp.solve(sp.diff(t_of_x, x), x)
    n_star = Fraction(2 * p["F"] * AXES_1D ** 2, p["D"])  # sqrt(8DF/n) = 2D/M_Y, b_x and B cancel
    return {"weights": sp.expand(2 * block), "t_comms": sp.expand(total), "x_opt": x_best, "n_star": n_star,
            **whole_check("n_max", _n_max(p), "down")}


register(Generator(NAME, "inference", "Derive: 2D weight-stationary sharding of a decode MLP", SOURCE, draw, solve,
                   check))
