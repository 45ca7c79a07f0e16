"""Pure data parallelism on a TPU slice: per-layer backward compute and gradient AllReduce times, the
smallest per-chip batch that keeps it compute-bound, the verdict for a drawn batch and the largest
model pure DP can hold (training.md, 'Data Parallelism'; applied-training.md, 'How to shard LLaMA
3-70B for training').

The book's model: every layer is an MLP, W_in[D, F] and W_out[F, D], in bf16; the backward pass does
four matmuls and AllReduces both weight gradients over the X replicas, which span M_X axes of the
torus, each axis carrying W_ici in both directions.

Engine route: ``parallel.dp.t_math_bwd``, ``parallel.dp.t_comms_bwd``, ``parallel.dp.min_batch_per_device``,
``parallel.batch_per_device``, ``parallel.dp.max_devices`` and ``parallel.dp.max_params``. Second route: plain fractions from the
hardware catalog's raw fields (one link's bandwidth, doubled for the two directions of an axis).
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import choice, pick, pick_chip, whole, whole_check
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, ELEMENT_BYTES, NOMINAL, engine, model_params

SOURCE = ("training.md, 'Data Parallelism' and 'Fully-Sharded Data Parallelism (FSDP)'; applied-training.md, 'How to shard LLaMA 3-70B for training'")
SIDES = (4, 8, 16, 32, 64)
SEQ_LENS = (2048, 4096, 8192)
FACTORS = (Fraction(1, 4), Fraction(1, 2), Fraction(2), Fraction(4))
ADAM_BYTES = 8


def slice_shape(rng, chip, axes: int) -> tuple[int, ...]:
    """A slice spanning ``axes`` axes of the chip's pod: the whole pod, or sides that fit its axes."""
    if axes == len(chip.pod_shape) and rng.randrange(3) == 0:
        return tuple(chip.pod_shape)
    return tuple(pick(rng, [s for s in SIDES if s <= n] or [n]) for n in chip.pod_shape[:axes])


def nearest_pow2(square: Fraction) -> int:
    """The power of two nearest on a log scale to the positive number whose square is ``square``
    (at least 1); taking the square keeps square roots exact."""
    n = 1
    while 2 * n * n <= square:     # 2n is nearer than n once x >= n * sqrt(2), i.e. x^2 >= 2 n^2
        n *= 2
    return n


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=("pod_shape",), levels=["ici"], dtypes=["bf16"])
    m_x = rng.randint(1, len(chip.pod_shape))
    shape = slice_shape(rng, chip, m_x)
    X = 1
    for n in shape:
        X *= n
    key = pick(rng, DENSE)
    model = model_params(key)
    p = {"chip": chip.key, "M_X": m_x, "shape": "x".join(map(str, shape)), "X": X,
         "model": model["model"], "D": model["D"], "F": model["F"], "P": NOMINAL[key][0], "seq_len": pick(rng, SEQ_LENS)}
    target = _threshold(p) * pick(rng, FACTORS) * X / p["seq_len"]
    p["n_seq"] = nearest_pow2(target * target)
    p["B"] = p["n_seq"] * p["seq_len"]
    second = check(p)
    reject_if(p["B"] % X != 0, "the batch must split evenly over the chips")
    ratio = second["local"] / second["threshold.unrounded"]
    reject_if(abs(ratio - 1) < Fraction(3, 20), "the batch must not sit within 15 percent of the threshold")
    p["compute_bound"] = int(ratio > 1)
    p["fits"] = int(p["P"] <= second["max_params.unrounded"])
    return p


def _values(p) -> dict:
    chip = get_chip(p["chip"])
    return {"C": chip.flops_per_s["bf16"], "W_ici": chip.bandwidth("ici"), "b_w": 2, "b_opt": ADAM_BYTES,
            "H_chip": chip.hbm_bytes, "M_X": p["M_X"], "X": p["X"], "D": p["D"], "F": p["F"]}


def solve(p):
    values = _values(p)
    batch = values | {"B": p["B"], "n_dev": p["X"]}
    threshold = whole(engine("threshold", "smallest whole per-chip batch that stays compute-bound",
                             "parallel.dp.min_batch_per_device", values), "up")
    local = engine("local", "batch per chip", "parallel.batch_per_device", batch)
    return [
        engine("t_math", "backward compute time per layer", "parallel.dp.t_math_bwd", batch),
        engine("t_comms", "backward gradient AllReduce time per layer", "parallel.dp.t_comms_bwd", values),
        threshold, local,
        choice("verdict", "is this batch compute-bound?", BOUND, 0 if local.value > threshold.unrounded else 1),
        whole(engine("max_chips", "most chips this batch keeps compute-bound", "parallel.dp.max_devices",
                     {k: v for k, v in batch.items() if k != "X"}), "down"),
        whole(engine("max_params", "largest whole parameter count whose weights and Adam state fit on one chip",
                     "parallel.dp.max_params", values), "down"),
    ]


#: The choices of "is it compute-bound?"
BOUND = ("compute-bound", "communication-bound")


def _threshold(p) -> Fraction:
    return check(p | {"B": 1})["threshold.unrounded"]


def check(p):
    chip = get_chip(p["chip"])
    C = chip.flops_per_s["bf16"]
    axis = 2 * chip.ici_link_bytes_per_s * p["M_X"]     # each axis carries a link's bandwidth both ways
    D, F, X = p["D"], p["F"], p["X"]
    grad = ELEMENT_BYTES["bf16"] * D * F                 # one weight gradient, in bytes
    t_math = Fraction(4 * 2 * p["B"] * D * F, X * C)     # four matmuls on B/X tokens
    t_comms = Fraction(2 * (2 * grad), axis)            # two AllReduces, each costing twice its bytes
    per_token = Fraction(8 * D * F, C)                   # backward time of one token on one chip
    threshold = t_comms / per_token
    local = Fraction(p["B"], X)
    return {"t_math": t_math, "t_comms": t_comms, **whole_check("threshold", threshold, "up"), "local": local,
            "verdict": 0 if t_math > t_comms else 1, **whole_check("max_chips", p["B"] / threshold, "down"),
            **whole_check("max_params", Fraction(chip.hbm_bytes, ELEMENT_BYTES["bf16"] + ADAM_BYTES), "down")}


register(Generator("training_data_parallel", "training", "Data parallelism: when is it compute-bound?",
                   SOURCE, draw, solve, check))
