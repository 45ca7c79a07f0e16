"""Data parallelism across TPU slices over the data-centre network (DCN): the smallest batch per slice
that hides the cross-slice gradient AllReduce, the smallest global batch, and the verdict for a
multi-pod run (training.md, 'Scaling Across Pods' and its LLaMA-3 70B example).

Engine route: ``parallel.dcn.t_math_bwd``, ``parallel.dcn.t_comms_bwd``, ``parallel.dcn.min_batch_per_slice``,
``parallel.dcn.min_batch`` and ``parallel.batch_per_device``. Second route: plain fractions from the
catalog's per-chip DCN egress: every chip of a slice reduces its 1/M share of the gradients with its
counterparts in the other slices.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import choice, pick, pick_chip, whole, whole_check
from ..registry import Generator, register, reject_if
from .training_data_parallel import nearest_pow2
from .transformer_params import DENSE, ELEMENT_BYTES, engine, model_params

SOURCE = "training.md, 'Scaling Across Pods'"
SLICES = (2, 4, 8, 16)
SLICE_CHIPS = (256, 512, 1024, 2048, 4096)
SEQ_LENS = (2048, 4096, 8192)
FACTORS = (Fraction(1, 4), Fraction(1, 2), Fraction(2), Fraction(4), Fraction(16), Fraction(64))


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=("pod_shape",), levels=["dcn"], dtypes=["bf16"])
    pod = rng.randrange(2) == 0
    M = chip.pod_chips if pod else pick(rng, SLICE_CHIPS)
    reject_if(M > chip.pod_chips, "a slice must fit in one pod")
    S = pick(rng, SLICES)
    model = model_params(pick(rng, DENSE))
    p = {"chip": chip.key, "pod": int(M == chip.pod_chips), "M": M, "slices": S, "n": M * S,
         "model": model["model"], "D": model["D"], "F": model["F"], "seq_len": pick(rng, SEQ_LENS)}
    threshold = check(p | {"B": 1})["per_slice_min.unrounded"]
    target = threshold * pick(rng, FACTORS) * S / p["seq_len"]
    p["n_seq"] = nearest_pow2(target * target)
    p["B"] = p["n_seq"] * p["seq_len"]
    reject_if(p["B"] % p["n"] != 0, "the batch must split evenly over the chips")
    p["per_slice"] = p["B"] // S
    reject_if(p["B"] < 32 * p["n"], "each chip needs a sensible share of the batch, at least 32 tokens")
    ratio = p["per_slice"] / threshold
    reject_if(abs(ratio - 1) < Fraction(3, 20), "the batch per slice must not sit within 15 percent of the threshold")
    p["compute_bound"] = int(ratio > 1)
    return p


def solve(p):
    chip = get_chip(p["chip"])
    values = {"C": chip.flops_per_s["bf16"], "W_dcn": chip.bandwidth("dcn"), "b_w": 2, "D": p["D"], "F": p["F"],
              "n_slice": p["M"], "n_dev": p["n"]}
    batch = values | {"B": p["B"]}
    t_math = engine("t_math", "backward compute time per layer", "parallel.dcn.t_math_bwd", batch)
    t_comms = engine("t_comms", "cross-slice gradient AllReduce time per layer", "parallel.dcn.t_comms_bwd", values)
    return [
        t_math, t_comms,
        whole(engine("per_slice_min", "smallest whole batch per slice that stays compute-bound",
                     "parallel.dcn.min_batch_per_slice", values), "up"),
        whole(engine("global_min", "smallest whole global batch that stays compute-bound", "parallel.dcn.min_batch",
                     values), "up"),
        engine("per_chip", "batch per chip", "parallel.batch_per_device", batch),
        choice("verdict", "is the run compute-bound across the DCN?", BOUND, 0 if t_math.value > t_comms.value else 1),
    ]


#: The choices of "is it compute-bound?"
BOUND = ("compute-bound", "communication-bound")


def check(p):
    chip = get_chip(p["chip"])
    C, egress = chip.flops_per_s["bf16"], chip.dcn_bytes_per_s
    D, F, M, n = p["D"], p["F"], p["M"], p["n"]
    grads = 2 * ELEMENT_BYTES["bf16"] * D * F               # both weight gradients of a layer
    t_comms = 2 * grads / (M * egress)                      # an AllReduce costs twice; M chips share it
    t_math_per_token = Fraction(4 * 2 * D * F, n * C)       # four backward matmuls, the batch over all chips
    global_min = t_comms / t_math_per_token
    t_math = t_math_per_token * p["B"]
    return {"t_math": t_math, "t_comms": t_comms, **whole_check("per_slice_min", global_min / p["slices"], "up"),
            **whole_check("global_min", global_min, "up"), "per_chip": Fraction(p["B"], n),
            "verdict": 0 if t_math > t_comms else 1}


register(Generator("training_dcn", "training", "Data parallelism across pods over the DCN",
                   SOURCE, draw, solve, check))
