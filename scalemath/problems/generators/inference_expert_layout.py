"""Serving a mixture of experts with the layout [E_Z, D_X, F_Y]: experts split over Z, each expert's F over Y, and
X = 1 (the FSDP axis of training): every chip holds and reads 1/(Y·Z) of the weights, and each mixture layer
dispatches its tokens to their experts and combines them back with AllToAlls over Z (inference.md, 'Worked
Problems' Q6).

Engine route: ``inference.moe_layout.bytes_per_chip``, ``moe_layout.t_weights``, ``moe_layout.free_hbm``,
``inference.memory.min_chips_weights`` and ``moe_layout.t_ici`` with P (every expert), D, k, b_w, b_x, W, W_ici
and H_chip bound from the model, the dtypes and the chip. Second route: the state-dict count of every weight
tensor, the catalog's raw HBM size and bandwidth, the ring costs written out with W_ici twice the raw link
bandwidth.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import pick, pow2, whole_from_engine
from ..registry import Generator, register, reject_if
from .inference_common import BYTES, EXACT, ask, ceil_div, pick_serving, second_chip, second_params

SOURCE = "inference.md, 'Worked Problems' (Q6: expert sharding [E_Z, D_X, F_Y])"
MOE = ("mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b", "deepseek-v3",
       "llama4-scout", "llama4-maverick")
MIXES = (("bf16", "bf16"), ("bf16", "int8"), ("int8", "int8"), ("bf16", "fp8"), ("fp8", "fp8"))


def draw(rng):
    p = pick_serving(rng, MOE, needs=("ici_link_bytes_per_s",), mixes=MIXES)
    Z = pick(rng, [z for z in (2, 4, 8, 16, 32) if p["E"] % z == 0])
    Y = pick(rng, (1, 2, 4, 8, 16))
    p |= {"Y": Y, "Z": Z, "B": pow2(rng, 3, 9)}
    reject_if(check(p)["free"] <= 0, "the chips' shares of the weights must fit in their HBM")
    return p


def solve(p):
    g = {"X": 1, "Y": p["Y"], "Z": p["Z"], "B": p["B"]}
    return [
        ask(p, "per_chip", "weight bytes on each chip", "inference.moe_layout.bytes_per_chip", g),
        ask(p, "t_weights", "time to read every expert's weights once", "inference.moe_layout.t_weights", g),
        ask(p, "free", "HBM per chip left for the KV cache", "inference.moe_layout.free_hbm", g),
        whole_from_engine(ask(p, "min_chips", "fewest chips whose HBM holds the weights",
                              "inference.memory.min_chips_weights", g, rel_tol=EXACT), "up"),
        ask(p, "t_ici", "time of one mixture layer's collectives in a decode step", "inference.moe_layout.t_ici", g),
    ]


def check(p):
    hw = second_chip(p["chip"])
    weights = second_params(p["model"]) * BYTES[p["weight_dtype"]]
    chips = p["Y"] * p["Z"]
    routed = p["B"] * p["k"] * p["D"] * BYTES[p["dtype"]]  # k copies of every token's activation
    w_ici = 2 * Fraction(get_chip(p["chip"]).ici_link_bytes_per_s)
    return {"per_chip": weights / chips, "t_weights": weights / (chips * hw["W"]),
            "free": hw["H_chip"] - weights / chips, "min_chips": ceil_div(weights, hw["H_chip"]),
            "min_chips.unrounded": weights / hw["H_chip"],
            "t_ici": 2 * routed / (4 * w_ici) + 2 * (routed / p["Z"]) / w_ici}


register(Generator("inference_expert_layout", "inference", "Serving a mixture with experts sharded [E_Z, D_X, F_Y]",
                   SOURCE, draw, solve, check))
