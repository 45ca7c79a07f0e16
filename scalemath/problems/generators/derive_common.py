"""What the "derive a result" generators share: the engine's derivation of a collective's cost rewritten in
the problem's own names (the array's dimensions, the mesh axis, the bandwidth W), and a closed-form answer
built from it (``kind="expression"``, graded by symbolic equivalence).

Not a generator: it registers nothing.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Sequence

import sympy as sp

from ... import quantities
from ...symbolic.derivation import Derivation, Step
from ...symbolic.symbols import dim_symbol, sym
from ..model import Accepted, Answer

__all__ = ["DTYPES", "DIM_PAIRS", "AXES", "engine_form", "formula", "name", "sum_of", "symbol_list"]

#: element types and their bytes
DTYPES = {"bf16": 2, "fp32": 4, "int8": 1}
#: dimension names a student types: letters no formula reader takes for a constant (no E, I, S, N)
DIM_PAIRS = (("B", "D"), ("D", "F"), ("T", "D"), ("B", "F"), ("K", "M"), ("L", "H"), ("D", "H"), ("T", "F"))
AXES = ("X", "Y", "Z")


def name(n: str) -> sp.Symbol:
    """The symbol a problem calls ``n`` (the engine's own where it has one: same name, same assumptions)."""
    return dim_symbol(n)


def engine_form(quantity: str, subs: Mapping[str, sp.Expr], title: str | None = None) -> Derivation:
    """The registered quantity's derivation with its symbols replaced (``{"V": 2*B*D, "N": X, "W_ici": W}``):
    the engine's own steps, in the problem's names."""
    d = quantities.get(quantity).derivation
    mapping = {sym(k): v for k, v in subs.items()}
    steps = tuple(Step(s.label, s.expr.xreplace(mapping), s.why, s.unit) for s in d.steps)
    return Derivation(title or d.title, steps, d.source)


def sum_of(parts: Sequence[tuple[str, Derivation]], label: str, why: str, title: str, source: str) -> Derivation:
    """A derivation whose steps are each part's result (relabelled) and then their sum."""
    steps = tuple(Step(lab, d.expr, d.result.why, d.unit) for lab, d in parts)
    total = Step(label, sp.Add(*(s.expr for s in steps)), why, parts[0][1].unit)
    return Derivation(title, steps + (total,), source)


def symbol_list(*pairs: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(pairs)


def formula(answer_name: str, description: str, derivation: Derivation, symbols: tuple[tuple[str, str], ...],
            accept: Sequence[tuple[sp.Expr, str]] = ()) -> Answer:
    """A closed-form answer: the derivation's result over ``symbols``, any equivalent form right."""
    ev = derivation.at({})
    return Answer(answer_name, description, ev.value, derivation.unit, ev, Fraction(0), kind="expression",
                  symbols=symbols, accept=tuple(Accepted(sp.sympify(f), why) for f, why in accept))
