"""Domains that generators draw from: real chips, dtypes, model shapes, powers of two.

Also :func:`ask`, which turns a registered quantity into an :class:`Answer`.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Iterable, Mapping, Sequence

from .. import hardware, quantities
from .model import DEFAULT_REL_TOL, Answer
from .registry import reject_if

__all__ = ["MODEL_SHAPES", "pick", "pow2", "pick_chip", "chip_dtypes", "ask", "frac"]

#: (model, D, F) of real transformer MLPs: d_model and the MLP hidden width from
#: each model's published configuration.
MODEL_SHAPES: tuple[tuple[str, int, int], ...] = (
    ("GPT-3 175B", 12288, 49152),
    ("LLaMA-2 7B", 4096, 11008),
    ("LLaMA-2 13B", 5120, 13824),
    ("LLaMA-2 70B", 8192, 28672),
    ("LLaMA-3 8B", 4096, 14336),
    ("LLaMA-3 70B", 8192, 28672),
    ("LLaMA-3 405B", 16384, 53248),
    ("Gemma 2 27B", 4608, 36864),
    ("Mixtral 8x7B", 4096, 14336),
)


def pick(rng: random.Random, options: Sequence):
    """One of ``options`` (a sequence, so the draw is reproducible)."""
    return options[rng.randrange(len(options))]


def pow2(rng: random.Random, lo: int, hi: int) -> int:
    """A power of two in [2**lo, 2**hi]."""
    return 2 ** rng.randint(lo, hi)


def pick_chip(rng: random.Random, *, family: str | None = None, needs: Iterable[str] = (),
              levels: Iterable[str] = (), dtypes: Iterable[str] = ()) -> hardware.Chip:
    """A real chip from the packaged catalog that has every field, level and dtype asked for."""
    def usable(chip: hardware.Chip) -> bool:
        if family and chip.family != family:
            return False
        if any(getattr(chip, f) is None for f in needs):
            return False
        if any(d not in chip.flops_per_s for d in dtypes):
            return False
        for level in levels:
            try:
                chip.bandwidth(level)
            except Exception:
                return False
        return True

    chips = [c for c in hardware.default_catalog() if usable(c)]
    reject_if(not chips, "no chip in the catalog has what this problem needs")
    return pick(rng, chips)


def chip_dtypes(chip: hardware.Chip, allowed: Iterable[str]) -> list[str]:
    """The dtypes in ``allowed`` that ``chip`` has a rate for, in catalog order."""
    return [d for d in allowed if d in chip.flops_per_s]


def frac(value) -> Fraction:
    """An exact Fraction from an int, Fraction or SymPy rational (for second routes)."""
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    return Fraction(int(value.p), int(value.q))


def ask(name: str, description: str, quantity: str, *, chip: str | None = None,
        dtype: str | None = None, weight_dtype: str | None = None, level: str = "hbm",
        given: Mapping[str, object] | None = None,
        rel_tol: Fraction = DEFAULT_REL_TOL) -> Answer:
    """Evaluate a registered quantity and wrap it as the answer ``name``."""
    q = quantities.get(quantity)
    ctx = quantities.Context(chip=chip, dtype=dtype, weight_dtype=weight_dtype, level=level)
    evaluated = quantities.evaluate(q, ctx, dict(given or {}))
    if not evaluated.is_numeric:
        missing = sorted(s.name for s in evaluated.value.free_symbols)
        raise ValueError(f"{quantity} is not numeric for answer {name}: missing {missing}")
    return Answer(name, description, evaluated.value, q.unit, evaluated, rel_tol)
