"""What makes two problems the same for a class: the same answers (two students could copy), or the same
quantity asked at the same inputs (a set that asks it twice).

:class:`Spread` keeps, per generator, the answer tuples already given to a student of a set of variants, so
that the draw gives every student a different problem while the generator's space allows (draws without
replacement across variants), and records the generators whose space ran out (the command warns about them).
"""

from __future__ import annotations

from typing import Hashable

from ..values.printing import exact_text
from . import render
from .model import Problem
from .registry import get_generator, made_problem, problem_seed

__all__ = ["answer_tuple", "asked_quantities", "fresh", "Spread", "MAX_REDRAWS", "VARIANT_REDRAWS"]

#: How many fresh draws a problem gets when its statement repeats one already in the set.
MAX_REDRAWS = 25
#: How many fresh draws a variant's problem gets when its answers are those another student already has.
VARIANT_REDRAWS = 80


def answer_tuple(problem: Problem) -> tuple:
    """The problem's answers as a student writes them down: name, exact value, and the choices shown."""
    return tuple((a.name, exact_text(a.value), a.choices) for a in problem.answers)


def asked_quantities(problem: Problem) -> set[Hashable]:
    """Each answer the engine derived, as (its formula, the inputs it uses): the same key means the same
    quantity asked of the same model/chip/inputs."""
    keys = set()
    for a in problem.answers:
        e = a.evaluated
        if e is None or not e.steps:
            continue
        used = set().union(*(s.step.expr.free_symbols for s in e.steps))
        inputs = tuple(sorted((str(k), exact_text(v)) for k, v in e.given.items() if k in used))
        keys.add((exact_text(e.steps[-1].step.expr), inputs))
    return keys


class Spread:
    """The answer tuples each generator has given the students of a set so far."""

    def __init__(self) -> None:
        self.used: dict[str, set[tuple]] = {}
        self.full: dict[str, int] = {}  # generator -> the distinct variants it made before its space ran out

    def retries(self, generator: str) -> int:
        """How many redraws a repeat of another student's answers gets: none once the generator ran out."""
        return 0 if generator in self.full else VARIANT_REDRAWS

    def is_new(self, problem: Problem) -> bool:
        return answer_tuple(problem) not in self.used.get(problem.generator, ())

    def take(self, problem: Problem) -> None:
        self.used.setdefault(problem.generator, set()).add(answer_tuple(problem))

    def ran_out(self, generator: str, declared: int | None) -> None:
        """``generator`` found no answers that no other student has: it makes ``declared`` distinct variants
        where it says so, else as many as the set found."""
        self.full[generator] = declared if declared is not None else len(self.used.get(generator, ()))

    def shared(self) -> tuple[tuple[str, int], ...]:
        """(generator, how many different variants it makes) for each that ran out, by name."""
        return tuple(sorted(self.full.items()))


def fresh(g: str, seed: int, counts: dict[str, int], seen: dict[str, str], asked: dict | None = None,
           spread: Spread | None = None) -> Problem | None:
    """Generator ``g``'s next problem whose statement is not in ``seen`` and that asks no quantity another
    generator of the set asked at the same inputs (``asked``: key -> generator) (after at most MAX_REDRAWS
    redraws), or None. With ``spread``, one whose answers no other student has is
    sought for VARIANT_REDRAWS draws more; when none is found, the first fit for this sheet is taken and the
    generator is recorded as out of variants."""
    index = counts.get(g, 0)
    pid = f"{g}-{index + 1}"
    asked = {} if asked is None else asked
    found = fallback = None  # fallback: fit for this sheet, but its answers are another student's
    tries = MAX_REDRAWS + (spread.retries(g) if spread is not None else 0)
    for redraw in range(tries + 1):
        if redraw > MAX_REDRAWS and fallback is None:
            break
        salt = g if redraw == 0 else f"{g}#redraw{redraw}"
        problem = made_problem(g, problem_seed(seed, salt, index), pid)
        quantities = asked_quantities(problem)
        new = spread is None or spread.is_new(problem)
        if any(asked.get(k, g) != g for k in quantities) or (not new and fallback is not None):
            continue
        statement = render.render_problem(problem, "md", "statement")
        if statement in seen:
            continue
        if new:
            found = (problem, statement, quantities)
            break
        fallback = (problem, statement, quantities)
        declared = get_generator(g).variants
        if declared is not None and len(spread.used.get(g, ())) >= declared:
            spread.ran_out(g, declared)  # every variant it can make is given: no use drawing again
        if spread.retries(g) == 0:
            break
    if found is None and fallback is not None:
        found = fallback
        if g not in spread.full:
            spread.ran_out(g, get_generator(g).variants)
    if found is None:
        return None
    problem, statement, quantities = found
    seen[statement] = pid
    asked.update(dict.fromkeys(quantities, g))
    counts[g] = index + 1
    if spread is not None:
        spread.take(problem)
    return problem
