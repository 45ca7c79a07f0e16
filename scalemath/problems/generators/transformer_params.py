"""Parameters of a real transformer: per block, embeddings, total and the shares of each part
(transformers.md, 'Global FLOPs and Params Calculation'; training.md, 'Some Problems to Work' Q1;
applied-training.md, 'Counting parameters and FLOPs').

This module also holds the few helpers the other ``transformer_*`` and ``training_*`` generators
share: a catalog model's fields as JSON-friendly params, an engine answer from a dict of values
keyed by engine symbol names (no chip binding, so no mesh axis is ever filled in behind the
problem's back), and a plain namespace for the state-dict second route.

Engine route: the ``transformer.*`` quantities with the model's architecture bound (n_mlp, n_emb).
Second route: :mod:`scalemath.catalog.statedict` lists every weight tensor of the model and the counts
are added up by tensor name; the book leaves the final norm out, so its D elements are taken off.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from types import SimpleNamespace
from typing import Mapping

from ... import quantities
from ...catalog.models import get_model
from ...catalog.statedict import count_params, weight_shapes
from ...symbolic.symbols import sym
from ..draws import pick
from ..model import DEFAULT_REL_TOL, Answer
from ..registry import Generator, register

__all__ = ["DENSE", "GATED_DENSE", "NOMINAL", "FIELDS", "ELEMENT_BYTES", "model_params", "model_values",
           "engine", "namespace", "params_quantity"]

SOURCE = ("transformers.md, 'Global FLOPs and Params Calculation'; training.md, 'Some Problems to Work' (Q1); "
          "applied-training.md, 'Counting parameters and FLOPs'")

#: Dense catalog models the book's accounting describes exactly (no latent attention, no experts).
DENSE = ("gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
         "gemma-27b")
#: The dense models with a gated MLP (the MoE variants built from them keep three matrices per expert).
GATED_DENSE = tuple(k for k in DENSE if k != "gpt3-175b")
#: Nominal sizes, the figures in the models' names (total, active parameters), as the book rounds them.
NOMINAL = {"gpt3-175b": (175 * 10**9,) * 2, "llama2-7b": (7 * 10**9,) * 2, "llama2-13b": (13 * 10**9,) * 2,
           "llama2-70b": (70 * 10**9,) * 2, "llama3-8b": (8 * 10**9,) * 2, "llama3-70b": (70 * 10**9,) * 2,
           "llama3-405b": (405 * 10**9,) * 2, "gemma-27b": (27 * 10**9,) * 2,
           "mixtral-8x7b": (47 * 10**9, 13 * 10**9), "deepseek-v3": (671 * 10**9, 37 * 10**9)}
FIELDS = ("D", "F", "N", "K", "H", "L", "V")
#: engine symbol name -> params key
_SYMBOL_KEYS = {"D": "D", "F": "F", "N": "N", "K": "K", "H": "H", "L": "L", "V_vocab": "V", "E": "E", "k": "k"}
#: Bytes per element, written out here for the second routes (not read from the engine).
ELEMENT_BYTES = {"fp32": Fraction(4), "bf16": Fraction(2), "fp16": Fraction(2), "fp8": Fraction(1),
                 "int8": Fraction(1), "int4": Fraction(1, 2)}


def model_params(key: str) -> dict:
    """A catalog model's name, shape and flags as JSON-friendly params."""
    m = get_model(key)
    if m.qkv_bias or m.o_bias or m.mlp_bias or m.attention_sinks or m.qk_norm or m.norms_per_layer != 2:
        raise ValueError(f"{key} has small tensors (biases, QK norms, extra norms) the problems do not state")
    out = {"model": m.name, **{f: getattr(m, f) for f in FIELDS}, "gated": int(m.gated), "tied": int(m.tied)}
    if m.is_moe:
        out.update(E=m.E, k=m.k)
    if m.sliding_window:
        out["window"] = m.sliding_window
        out["local_layers"] = m.local_layers
    return out


def model_values(p: Mapping[str, object]) -> dict:
    """The engine's symbol names bound to the model fields in ``p``, and its architecture
    (``n_mlp`` matrices per MLP, ``n_emb`` embedding matrices)."""
    out = {s: p[k] for s, k in _SYMBOL_KEYS.items() if k in p}
    out["n_mlp"] = 3 if p.get("gated", 1) else 2
    out["n_emb"] = 1 if p.get("tied", 0) else 2
    out["P_extra"] = 0  # the models drawn here have no biases, QK norms or extra norms (checked in model_params)
    return out


def engine(name: str, description: str, quantity: str, values: Mapping[str, object],
           rel_tol: Fraction = DEFAULT_REL_TOL) -> Answer:
    """Evaluate a registered quantity with the values among ``values`` that it takes (keyed by symbol
    name; the rest are ignored) and wrap it as the answer ``name``. Nothing is bound from a chip or a
    model catalog: every number the derivation shows is one the problem states."""
    q = quantities.get(quantity)
    wanted = _parameters(quantity)
    if "P_active" in wanted and "P_active" not in values and "P" in values:
        values = {**values, "P_active": values["P"]}  # a dense model's tokens use every parameter
    # with an empty context nothing is bound, so evaluating is substituting the given values
    ev = q.derivation.at({sym(k): v for k, v in values.items() if k in wanted})
    if not ev.is_numeric:
        missing = sorted(s.name for s in ev.value.free_symbols)
        raise ValueError(f"{quantity} is not numeric for answer {name}: missing {missing}")
    return Answer(name, description, ev.value, q.unit, ev, rel_tol)


@functools.cache
def _parameters(quantity: str) -> frozenset[str]:
    """The parameter names of a registered quantity (its derivation is built once and never changes)."""
    return frozenset(prm.name for prm in quantities.get(quantity).params)


def namespace(p: Mapping[str, object], **changes) -> SimpleNamespace:
    """A plain object with the catalog's field names, for :mod:`scalemath.catalog.statedict`."""
    fields = {f: p[f] for f in FIELDS}
    fields.update(E=p.get("E", 1), k=p.get("k", 1), gated=bool(p.get("gated", 1)), tied=bool(p.get("tied", 0)))
    if p.get("window"):
        fields.update(sliding_window=p["window"], local_layers=p["local_layers"])
    fields.update(changes)
    return SimpleNamespace(**fields)


def params_quantity(p: Mapping[str, object], moe: str = "") -> str:
    """The registered parameter count; ``moe`` is "", "total" or "active" (the architecture is in
    :func:`model_values`)."""
    if moe:
        return "transformer.moe_params" if moe == "total" else "transformer.active_params"
    return "transformer.params"


# -- the generator ---------------------------------------------------------------------------------------


#: What this problem draws: the dense models and the other dense catalog models the accounting describes
#: exactly (LLaMA 3.1 has LLaMA 3's shapes, so it would repeat its answers). Every answer depends on the model
#: alone, so the problem has as many variants as models.
DRAWN = DENSE + ("llama3.2-1b", "llama3.2-3b", "mistral-7b")


def draw(rng):
    return model_params(pick(rng, DRAWN))


def solve(p):
    values = model_values(p)
    mlp = engine("mlp", "parameters of one MLP block", "transformer.mlp_params", values)
    attn = engine("attn", "parameters of one attention block", "transformer.attention_params", values)
    emb = engine("embed", "embedding parameters", "transformer.embedding_params", values)
    total = engine("total", "total parameters", params_quantity(p), values)
    layers = p["L"]
    shares = [Answer(name, description, value / total.value, "1")
              for name, description, value in (
                  ("mlp_share", "share of the parameters in the MLPs", layers * mlp.value),
                  ("attn_share", "share of the parameters in attention", layers * attn.value),
                  ("embed_share", "share of the parameters in the embeddings", emb.value))]
    return [mlp, attn, emb, total, *shares]


def check(p):
    shapes = weight_shapes(namespace(p))
    layer0 = {n: s for n, s in shapes.items() if n.startswith("layers.0.")}
    mlp = count_params({n: s for n, s in layer0.items() if ".mlp." in n})
    attn = count_params({n: s for n, s in layer0.items() if ".attn." in n})
    emb = count_params({n: s for n, s in shapes.items() if n in ("embed_tokens.weight", "lm_head.weight")})
    total = count_params(shapes) - count_params({"norm.weight": shapes["norm.weight"]})
    return {"mlp": mlp, "attn": attn, "embed": emb, "total": total,
            "mlp_share": Fraction(p["L"] * mlp, total), "attn_share": Fraction(p["L"] * attn, total),
            "embed_share": Fraction(emb, total)}


register(Generator("transformer_params", "transformer", "Parameters of a transformer, part by part",
                   SOURCE, draw, solve, check, variants=len(DRAWN)))
