"""FSDP mixed with tensor parallelism on a TPU slice: the FSDP degree that minimises communication, the
tensor-parallel degree that goes with it, the smallest per-chip batch that stays compute-bound, how the
drawn batch compares with it and with pure FSDP, and how many chips the batch could use (training.md,
'Combining FSDP and Tensor Parallelism'; applied-training.md, 'How to shard LLaMA 3-70B for training').

Engine route: ``parallel.fsdp_tp.y_opt`` (its derivation is that of ``x_opt`` with one more step, so
X_opt is read off it), ``min_batch``, ``min_batch_per_chip``, ``max_chips``,
``parallel.fsdp.min_batch_per_device`` (pure FSDP over every axis) and ``parallel.batch_per_device``.
The global ``min_batch`` is the one whose steps are shown: the per-chip derivation ends in a step whose
note has characters the LaTeX output cannot print.
Second route: the forward times of the mix written out with plain fractions; the optimum is where the
FSDP and TP times meet, found as an exact square (the square roots are taken with ``sympy.sqrt`` of a
rational at the end), and the smallest batch by scaling a reference batch by the square of its
compute-to-communication ratio, which grows like the square root of the batch.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ..draws import choice, pick, pick_chip, whole, whole_check
from ..model import Answer
from ..registry import Generator, register, reject_if
from .training_data_parallel import nearest_pow2
from .transformer_params import DENSE, ELEMENT_BYTES, engine, model_params

SOURCE = ("training.md, 'Combining FSDP and Tensor Parallelism'; applied-training.md, "
          "'How to shard LLaMA 3-70B for training'")
CHIPS_3D = (64, 128, 256, 512, 1024, 2048, 4096)
CHIPS_2D = (64, 128, 256, 512, 1024)
SEQ_LENS = (2048, 4096, 8192)


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=("pod_shape",), levels=["ici"], dtypes=["bf16"])
    three_d = len(chip.pod_shape) == 3
    m_x, m_y = pick(rng, ((2, 1), (2, 1), (1, 2))) if three_d else (1, 1)
    n = chip.pod_chips if rng.randrange(4) == 0 else pick(rng, CHIPS_3D if three_d else CHIPS_2D)
    reject_if(n > chip.pod_chips, "the slice must fit in one pod")
    model = model_params(pick(rng, DENSE))
    p = {"chip": chip.key, "n": n, "M_X": m_x, "M_Y": m_y, "model": model["model"], "D": model["D"],
         "F": model["F"], "seq_len": pick(rng, SEQ_LENS)}
    first = check(p | {"B": n})                       # thresholds do not depend on the batch
    mixed, fsdp = first["min_per_chip.unrounded"], first["fsdp_per_chip.unrounded"]
    reject_if(mixed >= fsdp, "mixing in tensor parallelism must lower the threshold")
    target = pick(rng, (mixed / 2, mixed * 2, fsdp / 2, fsdp * 2))   # below, between (twice) or above
    p["n_seq"] = nearest_pow2((target * n / p["seq_len"]) ** 2)
    p["B"] = p["n_seq"] * p["seq_len"]
    second = check(p)
    local = second["local"]
    for threshold in (mixed, fsdp):
        reject_if(abs(local / threshold - 1) < Fraction(3, 20),
                  "the batch per chip must not sit within 15 percent of a threshold")
    x_square = Fraction(p["B"] * m_x * n, p["F"] * m_y)
    reject_if(not 1 <= x_square <= n * n, "both degrees at the optimum must be at least 1")
    reject_if(p["B"] % n != 0, "the batch must split evenly over the chips")
    return p | {"mixed_ok": int(local > mixed), "fsdp_ok": int(local > fsdp), "axes": m_x + m_y}


def _pow2_divisors(n: int) -> list[int]:
    """The powers of two that divide n: the FSDP degrees a torus slice of n chips can take."""
    out = [1]
    while n % (2 * out[-1]) == 0:
        out.append(2 * out[-1])
    return out


def best_degree(n: int, a: Fraction, c: Fraction) -> int:
    """The power-of-two FSDP degree X dividing n whose slower collective, max(a·X, c/X), is least
    (the smaller X on a tie); the tensor-parallel degree is then n/X."""
    return min(_pow2_divisors(n), key=lambda x: (max(a * x, c / x), x))


def _values(p) -> dict:
    chip = get_chip(p["chip"])
    return {"C": chip.flops_per_s["bf16"], "W_ici": chip.bandwidth("ici"), "b_x": 2, "b_w": 2, "D": p["D"],
            "F": p["F"], "M_X": p["M_X"], "M_Y": p["M_Y"]}


def solve(p):
    values = _values(p)
    batch, chips = {"B": p["B"]}, {"n_dev": p["n"]}
    y_opt = engine("y_opt", "tensor-parallel degree at that optimum", "parallel.fsdp_tp.y_opt", values | batch | chips)
    x_step = y_opt.evaluated.steps[-2]              # the y_opt derivation is x_opt's with one more step
    assert x_step.step.label == r"X_{\mathrm{opt}}", x_step.step.label
    # the whole degrees: the power of two dividing n nearest the optimum whose slower collective is least
    x_real = x_step.value
    x = _engine_degree(p, x_real)
    x_opt = Answer("x_opt", "FSDP degree with the least communication: a power of two dividing n, XY = n",
                   sp.Integer(x), x_step.step.unit, y_opt.evaluated, kind="whole", rounding="pow2",
                   unrounded=x_real)
    y = sp.Integer(p["n"] // x)
    y_whole = Answer("y_opt", "tensor-parallel degree at that optimum, n/X", y, y_opt.unit, y_opt.evaluated,
                     kind="whole", rounding="pow2", unrounded=y_opt.value)
    min_per_chip = whole(engine("min_per_chip", "smallest whole per-chip batch that keeps the mix compute-bound",
                                "parallel.fsdp_tp.min_batch_per_chip", values | chips), "up")
    fsdp_per_chip = whole(engine("fsdp_per_chip", "smallest whole per-chip batch for pure FSDP over every axis",
                                 "parallel.fsdp.min_batch_per_device",
                                 values | {"X": p["n"], "M_X": p["M_X"] + p["M_Y"]}), "up")
    local = engine("local", "batch per chip", "parallel.batch_per_device", batch | chips)
    return [
        x_opt, y_whole,
        whole(engine("min_batch", "smallest whole global batch that keeps the mix compute-bound",
                     "parallel.fsdp_tp.min_batch", values | chips), "up"),
        min_per_chip, fsdp_per_chip, local,
        choice("mixed_ok", "is the best mix compute-bound at this batch?", BOUND,
               0 if local.value > min_per_chip.unrounded else 1),
        choice("fsdp_ok", "would pure FSDP be compute-bound at this batch?", BOUND,
               0 if local.value > fsdp_per_chip.unrounded else 1),
        whole(engine("max_chips", "most chips this batch keeps compute-bound with the best mix",
                     "parallel.fsdp_tp.max_chips", values | batch), "down"),
    ]


#: The choices of "is it compute-bound?"
BOUND = ("compute-bound", "communication-bound")


def _engine_degree(p, x_real) -> int:
    """The whole FSDP degree from the engine's optimum: of the powers of two dividing n, the one below
    and the one above X_opt, whichever has the lower communication time max(X/X_opt, X_opt/X)."""
    options = _pow2_divisors(p["n"])
    below = max([d for d in options if d <= x_real], default=options[0])
    above = min([d for d in options if d >= x_real], default=options[-1])
    return below if sp.Max(below / x_real, x_real / below) <= sp.Max(above / x_real, x_real / above) else above


def check(p):
    chip = get_chip(p["chip"])
    C, axis = chip.flops_per_s["bf16"], 2 * chip.ici_link_bytes_per_s
    b = ELEMENT_BYTES["bf16"]
    B, D, F, n, m_x, m_y = p["B"], p["D"], p["F"], p["n"], p["M_X"], p["M_Y"]

    # FSDP: AllGather both weights, each already split over Y = n/X, on the M_X axes: a time a·X
    a = Fraction(2 * b * D * F, n * m_x * axis)
    # TP: AllGather and ReduceScatter the activations, split over X, on the M_Y axes: a time c/X
    c = Fraction(2 * b * B * D, m_y * axis)
    x_square = c / a                                     # the two meet where a·X = c/X
    comms_square = a * c                                 # both equal sqrt(a·c) there
    math = Fraction(2 * 2 * B * D * F, n * C)            # forward: two matmuls split over all n chips
    ratio_square = math * math / comms_square            # grows like B: the ratio itself like sqrt(B)
    min_batch = Fraction(B) / ratio_square
    fsdp_time = Fraction(2 * b * D * F, (m_x + m_y) * axis)    # pure FSDP: both weights gathered, every axis
    fsdp_per_chip = fsdp_time / Fraction(2 * 2 * D * F, C)
    x = best_degree(n, a, c)                             # the whole degrees: compare the slower collective
    local = Fraction(B, n)
    return {"x_opt": x, "x_opt.unrounded": sp.sqrt(x_square), "y_opt": n // x,
            "y_opt.unrounded": sp.sqrt(Fraction(n * n) / x_square),
            **whole_check("min_batch", min_batch, "up"), **whole_check("min_per_chip", min_batch / n, "up"),
            **whole_check("fsdp_per_chip", fsdp_per_chip, "up"), "local": local,
            "mixed_ok": 0 if local > min_batch / n else 1, "fsdp_ok": 0 if local > fsdp_per_chip else 1,
            **whole_check("max_chips", Fraction(B) / (min_batch / n), "down")}


register(Generator("training_fsdp_tp", "training", "Mixing FSDP and tensor parallelism",
                   SOURCE, draw, solve, check))
