"""What the ``inference_*`` generators share: the domains they draw from, the engine call with a
serving context, and the plain arithmetic of their second routes. Registers no generator.

Engine route (:func:`ask`): a registered ``inference.*`` quantity evaluated in a
:class:`scalemath.quantities.Context` built from the problem's chip, compute dtype, weight dtype,
KV-cache dtype and catalog model, so the parameter count ``P``, the cache bytes per token
``kv_token``, ``C``, ``W`` and ``H_chip`` are bound by the engine's own binders.

Second route (the ``second_*`` helpers): plain :class:`fractions.Fraction` arithmetic on raw catalog
fields. Parameters are counted by listing every weight tensor with :mod:`scalemath.catalog.statedict` (the
book's count leaves the final norm out, so its ``D`` elements are taken off), and the cache bytes per
token by listing one token's cache tensors; the bytes of each dtype are written out here.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Mapping

from ... import quantities
from ...catalog.hardware import get_chip
from ...catalog.models import get_model
from ...catalog.statedict import count_params, kv_cache_shapes, weight_shapes
from ..draws import pick, pick_chip
from ..model import DEFAULT_REL_TOL, Answer

__all__ = ["EXACT", "DENSE", "SERVING_MODELS", "MIXES", "KV_DTYPES", "BYTES", "model_fields",
           "pick_serving", "pick_kv", "context_ok", "ask", "chips_for", "next_pow2", "ceil_div", "second_params",
           "second_kv_token", "second_chip"]

#: Grading tolerance of whole-number answers (chips, sequences, draft lengths): a count is right or wrong.
EXACT = Fraction(0)
#: Dense catalog models: a decode step's FLOPs are 2·B·P for them (a mixture of experts would use only
#: its active parameters for the FLOPs, which the step model has no separate symbol for).
DENSE = ("gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
         "gemma-27b", "book-part7")
#: Models whose memory is asked about: every weight is stored, so a mixture of experts counts all its
#: experts, and latent attention caches its latent (the engine binds kv_token from the model).
SERVING_MODELS = DENSE + ("mixtral-8x7b", "deepseek-v3")
#: (compute dtype, weight dtype): the dtype the matmuls run in and the dtype the weights are stored in.
MIXES = (("bf16", "bf16"), ("bf16", "bf16"), ("bf16", "int8"), ("bf16", "fp8"), ("bf16", "int4"),
         ("int8", "int8"), ("fp8", "fp8"), ("int4", "int4"), ("fp16", "fp16"))
KV_DTYPES = ("bf16", "bf16", "int8", "fp8", "int4")
#: Bytes per element, written out for the second routes (not read from the engine or the catalog).
BYTES = {"fp32": Fraction(4), "bf16": Fraction(2), "fp16": Fraction(2), "fp8": Fraction(1), "int8": Fraction(1),
         "int4": Fraction(1, 2), "fp4": Fraction(1, 2)}


@functools.cache
def model_fields(key: str) -> dict:
    """A catalog model as JSON-friendly params: its key, name and the letters a template shows."""
    m = get_model(key)
    name = "the book's part 7 example model" if key == "book-part7" else m.name
    out = {"model": key, "model_name": name, "D": m.D, "F": m.F, "N": m.N, "K": m.K, "H": m.H, "L": m.L}
    if m.is_moe:
        out |= {"E": m.E, "k": m.k}
    out["mla"] = int(m.is_mla)
    out["window"] = m.sliding_window or 0
    return out


def context_ok(key: str, S: int) -> bool:
    """Whether a context of S tokens fits the model's maximum and (for a model with local layers) its
    window, so that every layer caches every token and the cache is S times the per-token bytes."""
    m = get_model(key)
    return not ((m.max_context and S > m.max_context) or (m.sliding_window and S > m.sliding_window))


def pick_serving(rng, models=DENSE, *, needs=(), mixes=MIXES) -> dict:
    """A model, a chip and a (compute, weight) dtype mix the chip has a rate for."""
    key = pick(rng, models)
    compute, weights = pick(rng, mixes)
    chip = pick_chip(rng, needs=needs, dtypes=[compute, weights])  # weights stored in a dtype the chip has
    return dict(model_fields(key)) | {"chip": chip.key, "dtype": compute, "weight_dtype": weights}


def pick_kv(rng, chip: str) -> str:
    """A KV-cache dtype the chip has a rate for (fp16 on a chip with none of the usual ones)."""
    rates = get_chip(chip).flops_per_s
    return pick(rng, [d for d in KV_DTYPES if d in rates] or ["fp16"])


def next_pow2(x) -> int:
    """The smallest power of two at or above x (x > 0)."""
    n = 1
    while n < x:
        n *= 2
    return n


def ceil_div(a: Fraction, b: Fraction = Fraction(1)) -> int:
    q = Fraction(a) / Fraction(b)
    return -((-q.numerator) // q.denominator)


def chips_for(key: str, chip: str, weight_dtype: str, kv_dtype: str | None = None, tokens: int = 0) -> int:
    """Whole chips whose HBM holds the weights and ``tokens`` cached tokens (draw-time arithmetic)."""
    need = Fraction(get_model(key).param_count()) * BYTES[weight_dtype]
    if tokens:
        need += tokens * get_model(key).kv_elements_per_token() * BYTES[kv_dtype]
    return ceil_div(need, get_chip(chip).hbm_bytes)


def ask(p: Mapping[str, object], name: str, description: str, quantity: str,
        given: Mapping[str, object] | None = None, *, dtype: str | None = None, weight_dtype: str | None = None,
        use_model: bool = True, rel_tol: Fraction = DEFAULT_REL_TOL) -> Answer:
    """Evaluate ``quantity`` for the problem's chip, dtypes and model, with the values in ``given``
    that it takes (the rest are ignored), and wrap it as the answer ``name``. ``dtype`` and
    ``weight_dtype`` override the problem's (a bf16 baseline, for instance); ``use_model=False``
    binds nothing from the model, for a result its letters cancel out of."""
    q = quantities.get(quantity)
    ctx = quantities.Context(chip=p.get("chip"), dtype=dtype or p.get("dtype"),
                             weight_dtype=weight_dtype or p.get("weight_dtype"), kv_dtype=p.get("kv_dtype"),
                             model=p.get("model") if use_model else None)
    wanted = _parameters(quantity)
    ev = quantities.evaluate(q, ctx, {k: v for k, v in (given or {}).items() if k in wanted})
    if not ev.is_numeric:
        missing = sorted(s.name for s in ev.value.free_symbols)
        raise ValueError(f"{quantity} is not numeric for answer {name}: missing {missing}")
    return Answer(name, description, ev.value, q.unit, ev, rel_tol)


@functools.cache
def _parameters(quantity: str) -> frozenset[str]:
    return frozenset(prm.name for prm in quantities.get(quantity).params)


# -- second routes ---------------------------------------------------------------------------------------

@functools.cache
def second_params(key: str) -> int:
    """Parameters by listing every weight tensor; the book's count has no final norm."""
    shapes = weight_shapes(get_model(key))
    return count_params(shapes) - count_params({"norm.weight": shapes["norm.weight"]})


def second_kv_token(key: str, kv_dtype: str) -> Fraction:
    """Cache bytes one token adds: one token's cache tensors (keys and values, or the latent) in every layer."""
    return count_params(kv_cache_shapes(get_model(key), 1)) * BYTES[kv_dtype]


def second_chip(key: str, dtype: str | None = None) -> dict:
    """A chip's raw catalog numbers as Fractions: peak rate in ``dtype``, HBM bandwidth and size, price."""
    chip = get_chip(key)
    out = {"W": Fraction(chip.hbm_bytes_per_s), "H_chip": Fraction(chip.hbm_bytes)}
    if dtype is not None:
        out["C"] = Fraction(chip.flops_per_s[dtype])
    if chip.price_cents_per_hour is not None:
        out["price"] = Fraction(chip.price_cents_per_hour)
    return out

