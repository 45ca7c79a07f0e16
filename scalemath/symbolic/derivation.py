"""Derivations: ordered, labelled steps that end in a result; crossovers.

A derivation is built once, symbolically, and evaluated many times with
:meth:`Derivation.at`, which substitutes exact numbers into every step.

>>> from scalemath.symbolic.symbols import sym
>>> C, W = sym("C"), sym("W")
>>> d = Derivation("critical intensity", (Step("AI^*", C / W, "compute = memory time", "FLOP/byte"),), "roofline.md")
>>> d.at({C: 197 * 10**12, W: 82 * 10**10}).value
9850/41
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import sympy as sp
from sympy.core.assumptions import check_assumptions

from ..errors import BadValueError, NoCrossoverError

__all__ = ["Step", "Derivation", "Evaluated", "EvaluatedStep", "crossover", "exact", "simplest"]


def exact(value) -> sp.Expr:
    """An exact SymPy number from an int, Fraction, str or SymPy number; floats are refused.

    >>> exact("1.23e12"), exact(3)
    (1230000000000, 3)
    """
    if isinstance(value, float):
        raise TypeError("floats are not exact; pass an int, a Fraction or a decimal string")
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, str):
        return sp.Rational(value)
    return sp.Rational(value) if not isinstance(value, int) else sp.Integer(value)


@dataclass(frozen=True)
class Step:
    """One line of a derivation: ``label = expr``, with the reason and the unit."""

    label: str
    expr: sp.Expr
    why: str
    unit: str = "1"


@dataclass(frozen=True)
class Derivation:
    """A titled sequence of steps; the last step is the result.

    ``positive`` says the result must be a positive number once evaluated (a
    crossover, a threshold); evaluating to anything else raises
    :class:`NoCrossoverError`.
    """

    title: str
    steps: tuple[Step, ...]
    source: str
    positive: bool = False
    note: str = field(default="", compare=False)

    def __post_init__(self):
        if not self.steps:
            raise ValueError("a derivation needs at least one step")

    @property
    def result(self) -> Step:
        return self.steps[-1]

    @property
    def expr(self) -> sp.Expr:
        return self.result.expr

    @property
    def unit(self) -> str:
        return self.result.unit

    @property
    def free_symbols(self) -> frozenset[sp.Symbol]:
        """The symbols of the result."""
        return frozenset(self.expr.free_symbols)

    @property
    def symbols(self) -> frozenset[sp.Symbol]:
        """The symbols of every step (some cancel out of the result, like b_o in a limit)."""
        return frozenset().union(*(step.expr.free_symbols for step in self.steps))

    def extend(self, *steps: Step, title: str | None = None, source: str | None = None,
               positive: bool | None = None) -> "Derivation":
        """This derivation with more steps after it."""
        return Derivation(title or self.title, self.steps + tuple(steps), source or self.source,
                          self.positive if positive is None else positive, self.note)

    def at(self, values: Mapping[sp.Symbol, object]) -> "Evaluated":
        """Substitute exact values into every step."""
        subs = {s: exact(v) for s, v in values.items()}
        for s, v in subs.items():
            if v.is_number and (v.is_negative or (v.is_zero and s.is_positive) or not v.is_real):
                raise BadValueError(f"{s} = {v} must be positive (sizes, rates and counts are > 0)")
        memo: dict[sp.Basic, sp.Basic] = dict(subs)  # steps share subtrees: each is substituted once
        evaluated = tuple(EvaluatedStep(step, _subs(step.expr, memo)) for step in self.steps)
        out = Evaluated(self, subs, evaluated)
        if self.positive and out.is_numeric and not (out.value.is_real and out.value > 0):
            raise NoCrossoverError(
                f"{self.title}: no positive solution for these values "
                f"(the crossover evaluates to {out.value}); "
                f"with {', '.join(f'{k}={v}' for k, v in sorted(subs.items(), key=lambda kv: kv[0].name))}"
            )
        if out.is_numeric and out.value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            raise BadValueError(f"{self.title}: these values divide by zero somewhere "
                                f"({', '.join(f'{k}={v}' for k, v in sorted(subs.items(), key=lambda kv: kv[0].name))})")
        return out


def _subs(expr: sp.Basic, memo: dict[sp.Basic, sp.Basic]) -> sp.Basic:
    """``expr.xreplace(values)``, the same tree, with ``memo`` holding the values and every subtree already
    substituted (the steps of a derivation repeat their earlier steps' subtrees; xreplace alone would rebuild
    each again)."""
    done = memo.get(expr)
    if done is not None:
        return done
    args = expr.args
    if not args:
        out = expr
    else:
        new = tuple(_subs(a, memo) if isinstance(a, sp.Basic) else a for a in args)
        if not any(n is not a for n, a in zip(new, args)):
            out = expr
        elif expr.func in _ON_NUMBERS and all(isinstance(n, sp.Rational) for n in new):
            out = functools.reduce(_ON_NUMBERS[expr.func], new)
        else:
            out = expr.func(*new)
    memo[expr] = out
    return out


#: What a sum, product, maximum and minimum of exact rational numbers are, worked out by the numbers' own
#: arithmetic: the same canonical Integer or Rational SymPy's constructor gives, without its flattening and
#: (Max, Min) its comparison of every pair of arguments through the assumptions system.
_ON_NUMBERS = {sp.Add: operator.add, sp.Mul: operator.mul, sp.Max: lambda a, b: b if b > a else a,
               sp.Min: lambda a, b: b if b < a else a}


@dataclass(frozen=True)
class EvaluatedStep:
    step: Step
    value: sp.Expr

    @property
    def is_numeric(self) -> bool:
        return not self.value.free_symbols


@dataclass(frozen=True)
class Evaluated:
    """A derivation with values substituted: the steps, and the result's value."""

    derivation: Derivation
    given: Mapping[sp.Symbol, sp.Expr]
    steps: tuple[EvaluatedStep, ...]

    @property
    def value(self) -> sp.Expr:
        return self.steps[-1].value

    @property
    def is_numeric(self) -> bool:
        return self.steps[-1].is_numeric

    def part(self, stop: int, start: int = 0, title: str | None = None) -> Evaluated:
        """Steps ``start`` to ``stop`` (exclusive) as an evaluated derivation of their own (an answer that
        shows only the steps that lead to it)."""
        d = self.derivation
        return Evaluated(Derivation(d.title if title is None else title, d.steps[start:stop], d.source), self.given,
                         self.steps[start:stop])


def _tidy(root: sp.Expr) -> sp.Expr:
    """Show a quotient with its minus signs in the denominator, as a person would write it."""
    num, den = sp.fraction(sp.together(root))
    if den != 1 and num.could_extract_minus_sign():
        return sp.Mul(-num, sp.Pow(sp.expand(-den), -1, evaluate=False), evaluate=False)
    return root


def _branches(expr: sp.Expr, unknown: sp.Symbol):
    """``(expr with each Max/Min over ``unknown`` replaced by one argument, the condition for that choice)``."""
    chosen = next((a for a in sp.preorder_traversal(expr)
                   if isinstance(a, (sp.Max, sp.Min)) and a.has(unknown)), None)
    if chosen is None:
        yield expr, sp.true
        return
    for arg in chosen.args:
        others = [o for o in chosen.args if o is not arg]
        wins = sp.And(*[(arg >= o) if isinstance(chosen, sp.Max) else (arg <= o) for o in others])
        for rest, condition in _branches(expr.xreplace({chosen: arg}), unknown):
            yield rest, sp.And(wins, condition)


def simplest(expr: sp.Expr) -> sp.Expr:
    """``sp.simplify(expr)``, skipped when cancelling leaves a single term (a product of powers): there
    simplify returns that same canonical product (checked on every crossover of the registry), at a
    small fraction of its cost. A sum is simplified in full (it may factor)."""
    cancelled = sp.cancel(expr)
    return cancelled if not cancelled.has(sp.Add) else sp.simplify(expr)


def _linear_root(branch: sp.Expr, unknown: sp.Symbol) -> list[sp.Expr] | None:
    """The root of ``branch = 0`` when its numerator is linear in ``unknown``, as ``sp.solve`` gives it
    (``-c0/c1`` simplified, the form solve's linear path returns), or None for any other form.

    Most crossovers balance two costs that are each proportional to the unknown (or free of it), and
    ``sp.solve`` spends most of a cold run's derivation time on them. Like solve, the root is dropped
    where it makes a denominator zero or contradicts the unknown's assumptions (a positive symbol).
    """
    num, den = sp.fraction(sp.together(branch))
    try:
        poly = sp.Poly(num, unknown)
    except sp.PolynomialError:
        return None
    if poly.degree() != 1:
        return None
    c1, c0 = poly.nth(1), poly.nth(0)
    if c1.has(unknown) or c0.has(unknown):  # a coefficient hiding the unknown (in a function): not linear
        return None
    root = simplest(-c0 / c1)
    at_root = den.xreplace({unknown: root}) if den.has(unknown) else den
    if at_root.is_zero or (at_root.is_zero is None and sp.simplify(at_root) == 0):
        return []
    if check_assumptions(root, **unknown.assumptions0) is False:
        return []
    return [root]


def _solve_branch(branch: sp.Expr, unknown: sp.Symbol) -> list[sp.Expr]:
    """The roots of ``branch = 0`` in ``unknown``: the linear fast path, else ``sp.solve``."""
    found = _linear_root(branch, unknown)
    return found if found is not None else sp.solve(sp.Eq(branch, 0), unknown, dict=False)


def _roots(difference: sp.Expr, unknown: sp.Symbol, title: str) -> list[tuple[sp.Expr, sp.Boolean]]:
    """Roots of ``difference = 0`` in ``unknown``, each with the condition under which it holds.

    A form with max or min is solved branch by branch; a root is kept where its branch's
    condition can hold (it stays attached when it depends on other symbols).
    """
    if any(f.has(unknown) for f in difference.atoms(sp.floor, sp.ceiling)):
        raise NoCrossoverError(f"{title}: cannot solve a form with floor or ceil for {unknown}; "
                               "give every other symbol a value with --set and read the result off a table")
    out: list[tuple[sp.Expr, sp.Boolean]] = []
    for branch, condition in _branches(difference, unknown):
        try:
            found = _solve_branch(branch, unknown)
        except (NotImplementedError, ValueError, TypeError):
            raise NoCrossoverError(f"{title}: cannot solve this form for {unknown}") from None
        for r in found:
            try:
                holds = condition.xreplace({unknown: r}) if condition is not sp.true else sp.true
                holds = sp.simplify(holds) if holds not in (sp.true, sp.false) else holds
            except (TypeError, ValueError):  # the root makes a branch undefined (0/0, 1/0): not a root
                continue
            if holds is not sp.false and all((r, holds) != seen for seen in out):
                out.append((r, holds))
    return out


def _cached_roots(difference: sp.Expr, unknown: sp.Symbol, title: str) -> list[tuple[sp.Expr, sp.Boolean]]:
    """:func:`_roots`, remembered between runs in scalemath's cache folder (:mod:`scalemath.cache`): solving
    is most of the time a cold command spends building derivations. The entry is keyed by the exact form
    (its ``srepr``, assumptions included) and read back as the same SymPy objects, so a derivation is the
    same with the cache on, off, empty or warm."""
    from .. import cache

    key = sp.srepr(difference) + " | " + sp.srepr(unknown)
    return cache.kept("roots", key, lambda: _roots(difference, unknown, title), list)


def crossover(lhs: sp.Expr, rhs: sp.Expr, unknown: sp.Symbol, *, title: str, source: str,
              lhs_label: str, rhs_label: str, side_unit: str, label: str, unit: str, why: str,
              lead: Iterable[Step] = ()) -> Derivation:
    """Solve ``lhs = rhs`` for ``unknown`` and keep the root that can be positive.

    Roots that are provably zero or negative are dropped; if none is left, or
    more than one is, :class:`NoCrossoverError` names both sides and the roots.

    >>> from scalemath.symbolic.symbols import sym
    >>> B, C, W = sym("B"), sym("C"), sym("W")
    >>> crossover(B, C / W, B, title="t", source="s", lhs_label="AI", rhs_label="AI^*",
    ...           side_unit="FLOP/byte", label="B^*", unit="token", why="equal").expr
    C/W
    """
    roots = _cached_roots(lhs - rhs, unknown, title)
    kept = [(r, c) for r, c in roots if not (r.is_nonpositive or r.is_real is False)]
    if len(kept) != 1:
        found = ", ".join(str(r) for r, _ in roots) or "none"
        raise NoCrossoverError(
            f"{title}: {lhs} = {rhs} has {'no' if not kept else 'more than one'} positive root "
            f"in {unknown} (roots found: {found})"
        )
    root, condition = kept[0]
    root = _tidy(root) if condition is sp.true else sp.Piecewise((_tidy(root), condition))
    steps = tuple(lead) + (
        Step(lhs_label, lhs, "one side of the balance", side_unit),
        Step(rhs_label, rhs, "the other side", side_unit),
        Step(label, root, why, unit),
    )
    return Derivation(title, steps, source, positive=True)
