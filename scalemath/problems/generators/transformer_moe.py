"""A mixture of experts: total against active parameters, and the token batch at which its expert
matmuls become compute-bound on a chip (transformers.md, 'Sparsity and Mixture-of-Experts' and
'A Few Problems to Work' Q8).

The model is Mixtral 8x7B as published, or a dense catalog model whose every MLP is replaced by E
experts of the same width with k used per token (the way Mixtral extends the Mistral 7B shape).
Engine route: ``transformer.moe_mlp_params``, ``moe_active_mlp_params``, ``moe_params``,
``active_params`` (the router's E x D weights left out, as in the book) and ``moe_critical_batch``.
Second route: :mod:`scalemath.catalog.statedict` lists the tensors of one layer (all experts, or the k a token
uses) and of the embeddings; the router tensor is taken off. The critical batch balances the time of
the k experts' FLOPs against the time to load all E experts' weights, with plain fractions.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import dtype_bytes, get_chip
from ...catalog.statedict import active_shapes, count_params, weight_shapes
from ..draws import pick, pick_chip, whole, whole_check
from ..registry import Generator, register, reject_if
from .transformer_params import (
    ELEMENT_BYTES, GATED_DENSE, engine, model_params, model_values, namespace, params_quantity
)

SOURCE = "transformers.md, 'Sparsity and Mixture-of-Experts' and 'A Few Problems to Work' (Q8)"
#: (E, k) for the extended dense shapes: sparsities E/k from 4 to 32, as in current MoEs
EXPERTS = ((8, 2), (16, 2), (16, 4), (32, 4), (64, 4), (64, 8), (128, 8), (256, 8))
WEIGHT_DTYPES = ("bf16", "bf16", "int8", "fp8")


def draw(rng):
    if rng.randrange(3) == 0:
        p = model_params("mixtral-8x7b") | {"E": 8, "k": 2, "extended": 0}
    else:
        E, k = pick(rng, EXPERTS)
        p = model_params(pick(rng, GATED_DENSE)) | {"E": E, "k": k, "extended": 1}
    p.pop("window", None)
    p.pop("local_layers", None)
    reject_if(3 * p["E"] * p["D"] * p["F"] * p["L"] > 2 * 10**12,
              "the experts should hold at most about two trillion parameters, like the largest MoEs")
    chip = pick_chip(rng, dtypes=["bf16"])
    return p | {"chip": chip.key, "weight_dtype": pick(rng, WEIGHT_DTYPES)}


def solve(p):
    chip = get_chip(p["chip"])
    values = model_values(p) | {"C": chip.flops_per_s["bf16"], "W": chip.hbm_bytes_per_s,
                                "b_w": dtype_bytes(p["weight_dtype"])}
    return [
        engine("mlp_total", "parameters of one MoE layer's experts", "transformer.moe_mlp_params", values),
        engine("mlp_active", "parameters of the experts one token uses in a layer",
               "transformer.moe_active_mlp_params", values),
        engine("total", "total parameters", params_quantity(p, "total"), values),
        engine("active", "active parameters per token", params_quantity(p, "active"), values),
        whole(engine("critical_batch", "smallest whole token batch for which the expert matmuls are compute-bound",
                     "transformer.moe_critical_batch", values), "up"),
    ]


def check(p):
    one_layer = namespace(p, L=1)

    def split(shapes):
        experts = count_params({n: s for n, s in shapes.items() if ".moe.experts." in n})
        rest = count_params({n: s for n, s in shapes.items()
                             if n.startswith("layers.0.") and ".moe." not in n})   # attention and norms
        return experts, rest

    shapes = weight_shapes(one_layer)
    experts, rest = split(shapes)
    active_experts, _ = split(active_shapes(one_layer))
    emb = count_params({n: s for n, s in shapes.items() if n in ("embed_tokens.weight", "lm_head.weight")})
    L = p["L"]
    chip = get_chip(p["chip"])
    D, F, E, k = p["D"], p["F"], p["E"], p["k"]
    # B tokens through k experts' [D, F] matrices at the bf16 peak, against loading all E experts' weights
    flops_per_token = 2 * k * D * F
    weight_time = ELEMENT_BYTES[p["weight_dtype"]] * E * D * F / Fraction(chip.hbm_bytes_per_s)
    critical = weight_time * chip.flops_per_s["bf16"] / flops_per_token
    return {"mlp_total": experts, "mlp_active": active_experts,
            "total": L * (experts + rest) + emb, "active": L * (active_experts + rest) + emb,
            **whole_check("critical_batch", critical, "up")}


register(Generator("transformer_moe", "transformer", "Mixture of experts: total and active parameters, critical batch",
                   SOURCE, draw, solve, check))
