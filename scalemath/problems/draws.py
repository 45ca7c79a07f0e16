"""Domains that generators draw from: real chips, dtypes, model shapes, powers of two.

Also :func:`ask`, which turns a registered quantity into an :class:`Answer`.
"""

from __future__ import annotations

import dataclasses
import math
import random
from fractions import Fraction
from typing import Iterable, Mapping, Sequence

import sympy as sp

from ..catalog import hardware
from .. import quantities
from ..symbolic.derivation import Step
from .model import DEFAULT_REL_TOL, ROUND_WORDS, Accepted, Answer
from .registry import reject_if

__all__ = ["MODEL_SHAPES", "pick", "pick_other", "pow2", "pick_chip", "chip_dtypes", "ask", "frac", "whole",
           "count", "choice", "accepting", "round_whole", "whole_check", "whole_from_engine", "relabelled", "ROUND_WORDS"]

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


def pick_other(rng: random.Random, options: Sequence, *used):
    """One of ``options`` that is none of ``used`` (a later part never asks an earlier part again)."""
    rest = [o for o in options if o not in used]
    reject_if(not rest, "no option left that an earlier part did not use")
    return pick(rng, rest)


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


def binding(values: Sequence) -> list[int]:
    """The positions k >= 1 of ``values`` (options in order of preference) whose value is below every earlier
    one's: a limit placed between them rules out every preferred option and keeps option k.

    >>> binding([5, 7, 3, 4, 1])
    [2, 4]
    """
    return [k for k in range(1, len(values)) if values[k] < min(values[:k])]


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


def whole(answer: Answer, rounding: str, description: str | None = None) -> Answer:
    """``answer`` as a count: its exact value kept as ``unrounded``, its value the whole number the
    question asks for (``up`` for "fewest"/"smallest", ``down`` for "most", ``nearest``)."""
    v = answer.value
    rounded = {"up": sp.ceiling, "down": sp.floor, "nearest": lambda x: sp.floor(x + sp.Rational(1, 2))}[rounding](v)
    return dataclasses.replace(answer, value=sp.Integer(rounded), kind="whole", rounding=rounding, unrounded=v,
                               description=description or answer.description)


def count(answer: Answer) -> Answer:
    """An exact count (bytes a program moves, FLOPs it runs): printed and graded as a whole number."""
    return whole(answer, "nearest")


def round_whole(value, rounding: str) -> int:
    """The second routes' rounding, in plain integer arithmetic on an exact Fraction (or a SymPy
    number, compared exactly)."""
    if not isinstance(value, (int, Fraction)):
        lo = int(sp.floor(value))  # an irrational value (a square root): exact comparison by SymPy
        frac_part = sp.Rational(0) if sp.Integer(lo) == value else None
        if rounding == "down":
            return lo
        if rounding == "up":
            return lo if frac_part == 0 else lo + 1
        return lo + 1 if sp.Integer(lo) + sp.Rational(1, 2) <= value else lo
    q = Fraction(value)
    if rounding == "down":
        return math.floor(q)
    if rounding == "up":
        return math.ceil(q)
    return math.floor(q + Fraction(1, 2))


def choice(name: str, description: str, choices: Sequence[str], right: str | int) -> Answer:
    """A graded choice: ``choices`` are the options in the order shown, ``right`` the right one
    (or its index)."""
    index = right if isinstance(right, int) else list(choices).index(right)
    return Answer(name, description, sp.Integer(index), "1", kind="choice", choices=tuple(choices),
                  rel_tol=Fraction(0))


def accepting(answer: Answer, *accepted: tuple[object, str]) -> Answer:
    """``answer`` with other values that are also right, each under the model its reason names."""
    return dataclasses.replace(answer, accept=answer.accept + tuple(
        Accepted(sp.sympify(v), why) for v, why in accepted))


def whole_check(name: str, value, rounding: str) -> dict:
    """A second route's entries for a whole answer: the rounded count and the exact value before it."""
    return {name: round_whole(value, rounding), f"{name}.unrounded": value}


def relabelled(answer: Answer, units: Mapping[str, str] | None = None, whys: Mapping[str, str] | None = None
               ) -> Answer:
    """``answer`` with its steps counted in what the problem counts: a step labelled in ``units`` (or that label
    with ``^{\\mathrm{exact}}``, its value before rounding) takes that unit, the answer too when its last step
    does (the engine's generic "unit" becomes switches or cables, its batch of tokens a batch of sequences);
    a step labelled in ``whys`` takes that reason (a catalog note about another chip left out)."""
    units, whys = dict(units or {}), dict(whys or {})
    exact = r"^{\mathrm{exact}}"

    def fixed(step: Step) -> Step:
        base = step.label[:-len(exact)] if step.label.endswith(exact) else step.label
        return dataclasses.replace(step, unit=units.get(base, step.unit), why=whys.get(step.label, step.why))

    ev = answer.evaluated
    steps = tuple(dataclasses.replace(st, step=fixed(st.step)) for st in ev.steps)
    derivation = dataclasses.replace(ev.derivation, steps=tuple(fixed(s) for s in ev.derivation.steps))
    return dataclasses.replace(answer, unit=steps[-1].step.unit if ev.steps[-1].step.label in units else answer.unit,
                               evaluated=dataclasses.replace(ev, derivation=derivation, steps=steps))


def whole_from_engine(answer: Answer, rounding: str, unit: str | None = None) -> Answer:
    """A count the engine already rounds (its last step a ceiling or a floor) as a whole answer: the
    exact value before rounding is that step's argument at the answer's values; ``unit`` names what
    is counted when it is not the engine's unit (sequences rather than tokens)."""
    last = answer.evaluated.steps[-1].step.expr
    if not isinstance(last, (sp.ceiling, sp.floor)):
        raise ValueError(f"answer {answer.name}: the engine's last step is not rounded ({last})")
    inner = last.args[0].xreplace(answer.evaluated.given)  # exact numbers for symbols: no need of subs
    if not inner.is_number:
        raise ValueError(f"answer {answer.name}: the unrounded value is not numeric ({inner})")
    if unit is not None:  # the result's step counts it too: "4276 sequences" in the steps and the answer alike
        answer = relabelled(answer, {answer.evaluated.steps[-1].step.label: unit})
    return dataclasses.replace(answer, kind="whole", rounding=rounding, unrounded=inner, unit=unit or answer.unit)
