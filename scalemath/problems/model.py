"""Problems and answers: what a generator returns and a set is made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

import sympy as sp

from ..symbolic.derivation import Evaluated

__all__ = ["Answer", "Problem", "DEFAULT_REL_TOL"]

#: Grading tolerance unless a generator says otherwise: answers are typed rounded.
DEFAULT_REL_TOL = Fraction(1, 100)


@dataclass(frozen=True)
class Answer:
    """One asked-for value: exact, with its unit, tolerance and the derivation that gave it."""

    name: str
    description: str
    value: sp.Expr
    unit: str
    evaluated: Evaluated | None = field(default=None, compare=False)
    rel_tol: Fraction = DEFAULT_REL_TOL

    def __post_init__(self):
        if not (self.value.is_number and self.value.is_real):
            raise ValueError(f"answer {self.name} is not a real number: {self.value}")

    def as_manifest(self) -> dict:
        """This answer's record in manifest.json (what the grader and the LMS exports read)."""
        return {"name": self.name, "description": self.description, "unit": self.unit, "exact": str(self.value),
                "value": float(sp.N(self.value, 17)), "rel_tol": float(self.rel_tol)}


@dataclass(frozen=True)
class Problem:
    """A generated problem: parameters drawn, answers derived and checked."""

    id: str
    generator: str
    topic: str
    title: str
    seed: int
    params: Mapping[str, object]
    answers: tuple[Answer, ...]
    source: str

    def answer(self, name: str) -> Answer:
        for a in self.answers:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def by_name(self) -> Mapping[str, Answer]:
        return {a.name: a for a in self.answers}
