"""Training FLOPs of a real transformer: per token at a context length, forward only, for a whole run,
and the context length at which attention overtakes the matmuls (transformers.md, 'Global FLOPs and
Params Calculation', 'General rule of thumb for Transformer FLOPs' and 'Fractional cost of attention
with context length'; applied-training.md, 'Counting parameters and FLOPs').

Engine route: ``transformer.flops_per_token``, ``forward_flops_per_token``, ``params``,
``training_flops`` (6 x parameters x tokens), ``attention_to_matmul_ratio`` and the two crossovers.
Second route: :func:`scalemath.catalog.statedict.matmuls_per_token` lists every matmul one token goes through
(weight matmuls by tensor shape, the attention contractions head by head) for a one-layer copy of
the model; their 2mkn FLOPs are added up, forward and with the backward's two matmuls each, and
multiplied by the number of layers. Only gated models are drawn: the engine's attention ratio and
crossover count three MLP matrices.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.models import get_model
from ...catalog.statedict import count_params, matmuls_per_token, weight_shapes
from ..draws import pick
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, engine, model_params, model_values, namespace, params_quantity

SOURCE = ("transformers.md, 'Global FLOPs and Params Calculation', 'General rule of thumb for Transformer FLOPs' "
          "and 'Fractional cost of attention with context length'; applied-training.md, "
          "'Counting parameters and FLOPs'")
CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
TOKENS = (300 * 10**9, 10**12, 2 * 10**12, 15 * 10**12)


def draw(rng):
    key = pick(rng, DENSE)
    p = model_params(key)
    T = pick(rng, CONTEXTS)
    limit = get_model(key).max_context
    reject_if(limit is not None and T > limit, "the context must fit the model's maximum context length")
    reject_if("window" in p and T > p["window"],
              "a sliding-window model's context must fit its window, so that every layer attends to all of it")
    # how the real shape differs from the book's (F = 4D, NH = D, K = N), for the prose
    shape = {"f_is_4d": int(p["F"] == 4 * p["D"]), "heads_tile": int(p["N"] * p["H"] == p["D"]),
             "mha": int(p["K"] == p["N"])}
    return p | {"T": T, "tokens": pick(rng, TOKENS)} | shape


def solve(p):
    values = model_values(p)
    at_t = values | {"T": p["T"]}
    params = engine("params", "total parameters", params_quantity(p), values)
    return [
        params,
        engine("flops_per_token", "training FLOPs per token at context T", "transformer.flops_per_token", at_t),
        engine("fwd_flops_per_token", "forward FLOPs per token at context T", "transformer.forward_flops_per_token",
               at_t),
        engine("total_flops", "training FLOPs of the run by the 6 x parameters x tokens rule",
               "transformer.training_flops", {"P": params.value, "tokens": p["tokens"]}),
        engine("attn_ratio", "attention FLOPs over matmul FLOPs in one layer at context T",
               "transformer.attention_to_matmul_ratio", at_t),
        engine("crossover_T", "context length at which attention FLOPs equal the matmul FLOPs",
               "transformer.attention_crossover_T", values),
        engine("crossover_book", "the same crossover for the book's shape (F = 4D, NH = D, K = N)",
               "transformer.attention_crossover_T_book", {"D": p["D"]}),
    ]


def _layer_flops(p, T: int) -> tuple[int, int, int]:
    """Forward FLOPs of one token in one layer: weight matmuls, attention contractions; and the unembedding."""
    weights = attention = head = 0
    for name, m, k, n in matmuls_per_token(namespace(p, L=1), T):
        flops = 2 * m * k * n
        if ".attn.scores." in name or ".attn.mix." in name:
            attention += flops
        elif name.startswith("layers."):
            weights += flops
        else:
            head += flops
    return weights, attention, head


def check(p):
    T, L = p["T"], p["L"]
    weights, attention, head = _layer_flops(p, T)
    _, per_position, _ = _layer_flops(p, 1)        # attention is linear in the context: its FLOPs at T = 1
    forward = L * (weights + attention) + head
    shapes = weight_shapes(namespace(p))
    params = count_params(shapes) - p["D"]          # the book leaves the final norm out
    return {
        "params": params,
        "flops_per_token": 3 * forward,             # backward: two matmuls of the same size per matmul
        "fwd_flops_per_token": forward,
        "total_flops": 6 * params * p["tokens"],
        "attn_ratio": Fraction(attention, weights),
        "crossover_T": Fraction(weights, per_position),
        "crossover_book": 8 * p["D"],
    }


register(Generator("transformer_flops", "transformer", "Training FLOPs of a transformer and the cost of attention",
                   SOURCE, draw, solve, check))
