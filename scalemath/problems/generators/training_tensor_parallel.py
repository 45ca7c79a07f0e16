"""Tensor (Megatron) parallelism on a TPU slice: the largest degree that stays compute-bound for a
model's MLP width, the width a drawn degree needs, and the forward compute and communication times
per layer (training.md, 'Tensor Parallelism'; applied-training.md, 'How to shard LLaMA 3-70B').

Engine route: ``parallel.tp.max_degree``, ``parallel.tp.min_f``, ``parallel.tp.t_math_fwd`` and
``parallel.tp.t_comms_fwd``. Second route: plain fractions from the catalog's raw fields: the two
matmuls split over Y chips against an AllGather and a ReduceScatter of the activations.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import dtype_bytes, get_chip
from ..draws import choice, pick, pick_chip, whole, whole_check
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, ELEMENT_BYTES, engine, model_params

SOURCE = "training.md, 'Tensor Parallelism'; applied-training.md, 'How to shard LLaMA 3-70B for training'"
DEGREES = (2, 4, 8, 16, 32)
SEQUENCES = (32, 64, 128, 256, 512)
SEQ_LENS = (2048, 4096, 8192)


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=("pod_shape",), levels=["ici"], dtypes=["bf16"])
    dtype = "int8" if "int8" in chip.flops_per_s and rng.randrange(4) == 0 else "bf16"
    m_y = pick(rng, (1, 1, 2)) if len(chip.pod_shape) == 3 else 1
    Y = pick(rng, DEGREES)
    span = 1
    for n in chip.pod_shape[:m_y]:
        span *= n
    reject_if(Y > span, "the tensor-parallel group must fit on the axes it spans")
    reject_if(m_y == 2 and Y < 8, "a group spanning two axes needs at least a few chips on each")
    model = model_params(pick(rng, DENSE))
    n_seq, seq_len = pick(rng, SEQUENCES), pick(rng, SEQ_LENS)
    p = {"chip": chip.key, "dtype": dtype, "M_Y": m_y, "Y": Y, "model": model["model"], "D": model["D"],
         "F": model["F"], "n_seq": n_seq, "seq_len": seq_len, "B": n_seq * seq_len}
    second = check(p)
    reject_if(second["max_degree.unrounded"] < Fraction(6, 5), "the model must be wide enough for some tensor parallelism")
    reject_if(abs(Fraction(Y) / second["max_degree.unrounded"] - 1) < Fraction(3, 20),
              "the degree must not sit within 15 percent of the largest compute-bound one")
    p["compute_bound"] = int(Y < second["max_degree.unrounded"])
    p["int8_faster"] = int(chip.flops_per_s.get("int8", 0) > chip.flops_per_s["bf16"])
    return p


def solve(p):
    chip = get_chip(p["chip"])
    values = {"C": chip.flops_per_s[p["dtype"]], "W_ici": chip.bandwidth("ici"), "b_x": dtype_bytes(p["dtype"]),
              "M_Y": p["M_Y"], "D": p["D"], "B": p["B"]}
    with_f, with_y = values | {"F": p["F"]}, values | {"Y": p["Y"]}
    t_math = engine("t_math", "forward compute time per layer", "parallel.tp.t_math_fwd", with_f | with_y)
    t_comms = engine("t_comms", "forward activation communication time per layer", "parallel.tp.t_comms_fwd", with_f)
    return [
        t_math, t_comms,
        whole(engine("max_degree", "largest whole compute-bound tensor-parallel degree", "parallel.tp.max_degree",
                     with_f), "down"),
        choice("verdict", f"is Y = {p['Y']} compute-bound?", BOUND, 0 if t_math.value > t_comms.value else 1),
        whole(engine("min_f", "smallest whole MLP width that keeps this degree compute-bound", "parallel.tp.min_f",
                     with_y), "up"),
    ]


#: The choices of "is it compute-bound?"
BOUND = ("compute-bound", "communication-bound")


def check(p):
    chip = get_chip(p["chip"])
    C = chip.flops_per_s[p["dtype"]]
    axes = 2 * chip.ici_link_bytes_per_s * p["M_Y"]
    B, D, F, Y = p["B"], p["D"], p["F"], p["Y"]
    activations = ELEMENT_BYTES[p["dtype"]] * B * D
    t_comms = Fraction(activations + activations, axes)        # AllGather before W_in, ReduceScatter after W_out
    math_per_width = Fraction(2 * 2 * B * D, C)                 # two matmuls of 2·B·D·(F/Y) FLOPs, per unit of F/Y
    t_math = math_per_width * F / Y
    return {"t_math": t_math, "t_comms": t_comms, **whole_check("max_degree", math_per_width * F / t_comms, "down"),
            "verdict": 0 if t_math > t_comms else 1, **whole_check("min_f", t_comms * Y / math_per_width, "up")}


register(Generator("training_tensor_parallel", "training", "Tensor parallelism: how many ways can an MLP be split?",
                   SOURCE, draw, solve, check))
