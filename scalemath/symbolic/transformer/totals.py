"""Whole-model totals of a transformer's blocks (transformers.md, 'Global FLOPs and Params Calculation';
training.md, 'Some Problems to Work', question 1): the MLP (FFW) weights of all L layers and the attention
projections of all L layers, the two sums the book adds to the embeddings to reach a model's size.

>>> from ..symbols import sym
>>> v = {sym("L"): 40, sym("D"): 5120, sym("F"): 13824, sym("N"): 40, sym("K"): 40, sym("H"): 128, sym("n_mlp"): 3}
>>> ffw_params_total().at(v).value, attention_params_total().at(v).value
(8493465600, 4194304000)
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step
from .common import PARAMS_SRC, L
from .params import attention_params, mlp_params

__all__ = ["ffw_params_total", "attention_params_total"]

SOURCE = PARAMS_SRC + "; training.md, 'Some Problems to Work' (LLaMA-2 13B: 8.5e9 FFW, 4.2e9 attention)"


@functools.cache
def ffw_params_total() -> Derivation:
    layer = mlp_params().result
    return Derivation("MLP (FFW) parameters of the whole model", (layer, Step(
        r"P_{\mathrm{FFW}}", L * layer.expr, "the same MLP in each of the L layers", "param")), SOURCE)


@functools.cache
def attention_params_total() -> Derivation:
    steps = attention_params().steps
    return Derivation("attention parameters of the whole model", steps + (Step(
        r"P_{\mathrm{attn,total}}", L * steps[-1].expr, "the same four projections in each of the L layers",
        "param"),), SOURCE)
