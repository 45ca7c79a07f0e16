"""The decode batch at which the linear layers turn compute-bound, for a mix of weight and compute
dtypes, against the bf16 baseline, and for a mixture of experts, where every expert's weights are
loaded but each token uses only k of the E (inference.md, 'Linear operations: what bottlenecks us?'
and Worked Problem 5; applied-inference.md, 'Thinking about throughput').

B_crit = C·b_w/(2W): the rate of the compute dtype times the bytes of a stored weight. int8 weights
with bf16 FLOPs halve it, int8 FLOPs double it back; a mixture of experts multiplies it by E/k.

Engine route: ``inference.decode.critical_batch`` (the mix, then bf16 throughout) and
``inference.decode.critical_batch_moe`` with the MoE model's D, F, E and k. Second route: the balance
2·B·P/C = P·b_w/W solved by hand with the catalog's raw rate and bandwidth; for the MoE, FLOPs
2·B·k·(3DF) against bytes E·(3DF)·b_w.
"""

from __future__ import annotations

from ..draws import pick, pick_chip, whole, whole_check
from ..registry import Generator, register
from .inference_common import BYTES, MIXES, ask, model_fields, second_chip

SOURCE = ("inference.md, 'Linear operations: what bottlenecks us?' and 'Worked Problems' (Q5); "
          "applied-inference.md, 'Thinking about throughput'")
#: (model key, (E, k) to use instead of the catalog's, or None): real MoE models and the book's
#: Worked Problem 5, its part 7 model turned into 16 experts with 2 per token.
MOES = (("mixtral-8x7b", None), ("deepseek-v3", None), ("book-part7", (16, 2)))


def draw(rng):
    # part (2) asks about another mix than part (1)'s bf16 throughout, in dtypes the chip has
    compute, weights = pick(rng, [mix for mix in MIXES if mix[0] != "fp16" and mix != ("bf16", "bf16")])
    chip = pick_chip(rng, dtypes=[compute, weights, "bf16"])
    key, override = pick(rng, MOES)
    fields = model_fields(key)
    E, k = override or (fields["E"], fields["k"])
    return {"chip": chip.key, "dtype": compute, "weight_dtype": weights, "model": key,
            "model_name": fields["model_name"], "D": fields["D"], "F": fields["F"], "E": E, "k": k,
            "invented": int(override is not None)}


def solve(p):
    return [
        whole(ask(p, "baseline", "smallest whole compute-bound batch with bf16 weights and bf16 FLOPs",
                  "inference.decode.critical_batch", dtype="bf16", weight_dtype="bf16", use_model=False), "up"),
        whole(ask(p, "critical", "smallest whole compute-bound batch for this dtype mix",
                  "inference.decode.critical_batch", use_model=False), "up"),
        whole(ask(p, "moe", "smallest whole compute-bound batch of the mixture of experts for this dtype mix",
                  "inference.decode.critical_batch_moe", {"E": p["E"], "k": p["k"]}), "up"),
    ]


def check(p):
    hw, bf16 = second_chip(p["chip"], p["dtype"]), second_chip(p["chip"], "bf16")
    # dense: 2·B·P/C = P·b_w/W  ->  B = C·b_w/(2W); the parameter count cancels
    baseline = bf16["C"] * BYTES["bf16"] / (2 * bf16["W"])
    critical = hw["C"] * BYTES[p["weight_dtype"]] / (2 * hw["W"])
    # MoE layer: FLOPs 2·B·k·3DF over C, bytes of all E experts E·3DF·b_w over W
    expert = 3 * p["D"] * p["F"]
    moe = (p["E"] * expert * BYTES[p["weight_dtype"]] / hw["W"]) / (2 * p["k"] * expert / hw["C"])
    return (whole_check("baseline", baseline, "up") | whole_check("critical", critical, "up")
            | whole_check("moe", moe, "up"))


register(Generator("inference_critical_batch", "inference", "Critical decode batch for a dtype mix and an MoE",
                   SOURCE, draw, solve, check))
