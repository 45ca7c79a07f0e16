"""Problems and answers: what a generator returns and a set is made of."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

import sympy as sp

from ..symbolic.derivation import Evaluated
from ..values.printing import exact_text

__all__ = ["Answer", "Accepted", "Problem", "DEFAULT_REL_TOL", "KINDS", "ROUNDINGS", "ROUND_WORDS", "ROUNDED_FROM"]

#: Grading tolerance unless a generator says otherwise: answers are typed rounded.
DEFAULT_REL_TOL = Fraction(1, 100)


#: Kinds of answer (the manifest's "kind"): a number within rel_tol, a whole count rounded as the question
#: asks, one of several choices, or a closed form over named symbols (graded by symbolic equivalence).
KINDS = ("number", "whole", "choice", "expression")
#: How a count is made whole ("pow2": the power of two dividing a device count that the question's rule picks),
#: and how each reads as advice (grading feedback) and in a key's note.
ROUNDINGS = ("up", "down", "nearest", "pow2")
ROUND_WORDS = {"up": "round up", "down": "round down", "nearest": "round to the nearest whole number",
               "pow2": "pick the power of two dividing the device count that the question asks for"}
ROUNDED_FROM = {"up": "rounded up from", "down": "rounded down from", "nearest": "rounded to the nearest from",
                "pow2": "the power of two the question's rule picks near"}


@dataclass(frozen=True)
class Accepted:
    """Another value that is also right, under another model the question allows (e.g. the book's V/W shortcut)."""

    value: sp.Expr
    why: str


@dataclass(frozen=True)
class Answer:
    """One asked-for value: exact, with its unit, tolerance and the derivation that gave it.

    ``kind="whole"``: a count; ``value`` is the whole number the question asks for, rounded as ``rounding``
    says, and ``unrounded`` the exact value before rounding; a number may carry ``unrounded`` too (a whole number
    read off a plot, graded within ``rel_tol``), and the second route then checks it as well. ``kind="choice"``: ``choices`` are shown as
    (a), (b), ...; ``value`` is the index of the right one. ``kind="expression"``: ``value`` is a closed
    form over the symbols named in ``symbols`` ((name, meaning) pairs, the names a student types); any
    equivalent form is right. ``accept``: values (or forms) right under another allowed model, each with
    its reason.
    """

    name: str
    description: str
    value: sp.Expr
    unit: str
    evaluated: Evaluated | None = field(default=None, compare=False)
    rel_tol: Fraction = DEFAULT_REL_TOL
    kind: str = "number"
    rounding: str | None = None
    unrounded: sp.Expr | None = None
    choices: tuple[str, ...] = ()
    accept: tuple[Accepted, ...] = ()
    symbols: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if self.kind == "expression":
            self._check_expression()
            return
        if not (self.value.is_number and self.value.is_real):
            raise ValueError(f"answer {self.name} is not a real number: {self.value}")
        if self.kind not in KINDS:
            raise ValueError(f"answer {self.name}: kind {self.kind!r} is not one of {KINDS}")
        if self.kind == "whole" and not (self.value.is_Integer and self.rounding in ROUNDINGS
                                         and self.unrounded is not None):
            raise ValueError(f"answer {self.name}: a whole answer needs an integer value, a rounding "
                             f"({', '.join(ROUNDINGS)}) and the unrounded value")
        if self.kind == "choice" and not (self.value.is_Integer and 0 <= self.value < len(self.choices)):
            raise ValueError(f"answer {self.name}: a choice answer's value is the index of one of its choices")

    def _check_expression(self) -> None:
        names = [n for n, _ in self.symbols]
        if not names or len(set(names)) != len(names) or not all(n.isidentifier() and n.isascii() for n in names):
            raise ValueError(f"answer {self.name}: an expression answer names its symbols once each, as identifiers")
        for form in (self.value, *(a.value for a in self.accept)):
            unknown = sorted(s.name for s in form.free_symbols if s.name not in names)
            if unknown:
                raise ValueError(f"answer {self.name}: the form {form} uses {', '.join(unknown)}, not among its symbols")

    def as_manifest(self) -> dict:
        """This answer's record in manifest.json (what the grader and the LMS exports read)."""
        if self.kind == "expression":  # the form as text in the engine's notation; parsed back by the safe parser
            out = {"name": self.name, "description": self.description, "unit": self.unit, "kind": self.kind,
                   "exact": exact_text(self.value), "symbols": dict(self.symbols), "rel_tol": 0.0}
            if self.accept:
                out["accept"] = [{"exact": exact_text(a.value), "why": a.why} for a in self.accept]
            return out
        out = {"name": self.name, "description": self.description, "unit": self.unit, "exact": exact_text(self.value),
               "value": float(sp.N(self.value, 17)), "rel_tol": float(self.rel_tol)}
        if self.kind != "number":
            out["kind"] = self.kind
        if self.kind == "whole":
            out.update(rounding=self.rounding, unrounded=exact_text(self.unrounded))
        if self.kind == "choice":
            out["choices"] = list(self.choices)
        if self.accept:
            out["accept"] = [{"exact": exact_text(a.value), "value": float(sp.N(a.value, 17)), "why": a.why}
                             for a in self.accept]
        return out


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
