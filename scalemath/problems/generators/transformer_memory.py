"""Memory of a training run: weights, Adam state, activations under a checkpointing policy, per chip
and the fewest chips that hold it (transformers.md, 'Gradient checkpointing'; training.md, 'Some
Problems to Work' Q2-Q3; applied-training.md, 'Counting parameters and FLOPs').

Engine route: ``transformer.weights_bytes``, ``optimizer_bytes``, the ``activation_bytes*`` quantity
of the policy, ``parallel.memory_per_device.fsdp`` and ``parallel.min_chips_memory``.
Second route: byte counts written out tensor by tensor with :class:`fractions.Fraction` (one element
size per dtype, the saved tensors of the policy listed with their shapes).
"""

from __future__ import annotations

import math
from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import pick, pick_chip, whole_from_engine
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, ELEMENT_BYTES, NOMINAL, engine, model_params

SOURCE = ("transformers.md, 'Gradient checkpointing'; training.md, 'Some Problems to Work' (Q2, Q3); "
          "applied-training.md, 'Counting parameters and FLOPs'")
#: policy -> (registered quantity, checkpoints of shape [B, D] per layer; None for the FFW outputs)
POLICIES = {
    "none": ("transformer.activation_bytes_no_remat", 20),
    "block": ("transformer.activation_bytes_block_remat", 1),
    "two": ("transformer.activation_bytes", 2),
    "four": ("transformer.activation_bytes", 4),
    "big": ("transformer.activation_bytes_big_matmuls", 7),
    "ffw": ("transformer.activation_bytes_ffw_outputs", None),
}
SEQUENCES = (256, 512, 1024, 2048, 4096)
SEQ_LENS = (2048, 4096, 8192)
CHIP_COUNTS = (256, 512, 1024, 2048, 4096, 8192)
ADAM_BYTES = 8      # two fp32 moments per parameter


def draw(rng):
    key = pick(rng, DENSE)
    model = model_params(key)
    chip = pick_chip(rng, dtypes=["bf16"])
    n_seq, seq_len = pick(rng, SEQUENCES), pick(rng, SEQ_LENS)
    n = chip.pod_chips if chip.pod_chips and rng.randrange(4) == 0 else pick(rng, CHIP_COUNTS)
    reject_if(chip.pod_chips is not None and n > chip.pod_chips, "a TPU slice must fit in one pod")
    p = {"model": model["model"], "P": NOMINAL[key][0], "D": model["D"], "F": model["F"], "L": model["L"],
         "n_seq": n_seq, "seq_len": seq_len, "B": n_seq * seq_len, "policy": pick(rng, tuple(POLICIES)),
         "chip": chip.key, "n": n}
    second = check(p)
    reject_if(second["min_chips"] <= 1, "the training state must need more than one chip")
    p["fits"] = int(second["per_chip"] <= get_chip(p["chip"]).hbm_bytes)
    p["act_dominates"] = int(second["activations"] > second["weights"] + second["optimizer"])
    return p


def _values(p) -> dict:
    chip = get_chip(p["chip"])
    return {"P": p["P"], "D": p["D"], "F": p["F"], "L": p["L"], "B": p["B"], "b_w": 2, "b_x": 2,
            "b_opt": ADAM_BYTES, "n_ckpt": POLICIES[p["policy"]][1], "H_chip": chip.hbm_bytes, "X": p["n"]}


def solve(p):
    values = _values(p)
    act = engine("activations", "activation bytes kept for the backward pass", POLICIES[p["policy"]][0], values)
    values["A_act"] = act.value
    return [
        engine("weights", "bytes of the bf16 weights", "transformer.weights_bytes", values),
        engine("optimizer", "bytes of the Adam moments", "transformer.optimizer_bytes", values),
        act,
        engine("per_chip", "bytes per chip with everything sharded over the chips", "parallel.memory_per_device.fsdp",
               values),
        whole_from_engine(engine("min_chips", "fewest chips whose HBM holds the state and the activations",
                                 "parallel.min_chips_memory", values), "up"),
    ]


def check(p):
    bf16 = ELEMENT_BYTES["bf16"]
    B, D, F, L = p["B"], p["D"], p["F"], p["L"]
    weights = bf16 * p["P"]
    adam = 2 * ELEMENT_BYTES["fp32"] * p["P"]       # first and second moment
    saved = POLICIES[p["policy"]][1]
    if saved is None:
        per_layer = bf16 * (B * F + B * F + B * D)  # outputs of W_in1 and W_in2 [B, F], of W_out [B, D]
    else:
        per_layer = saved * bf16 * B * D            # that many [B, D] tensors
    acts = L * per_layer
    total = weights + adam + acts
    return {"weights": weights, "optimizer": adam, "activations": acts, "per_chip": Fraction(total, p["n"]),
            "min_chips": math.ceil(Fraction(total, get_chip(p["chip"]).hbm_bytes)),  # whole chips
            "min_chips.unrounded": Fraction(total, get_chip(p["chip"]).hbm_bytes)}


register(Generator("transformer_memory", "transformer", "Memory of a training run: weights, Adam and activations",
                   SOURCE, draw, solve, check))
