"""The generators' checks compare by exact canonical forms (``cancel``) rather than ``simplify``; they still fail
when a route is wrong: a mutated chunk count is caught, and make_problem's equality test tells 0 from not 0."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import sympy as sp

from scalemath.errors import CheckFailedError
from scalemath.problems import registry
from scalemath.problems.registry import Generator, _zero, make_problem

x, y = sp.symbols("x y", positive=True)


@pytest.mark.parametrize("diff, zero", [
    (x / (x + y) + y / (x + y) - 1, True),                 # cancel settles it
    ((x**2 - y**2) / (x - y) - x - y, True),
    (sp.Max(x, y) - sp.Max(y, x), True),                     # canonical already
    (sp.sqrt(x**2) - x, True),                               # positive x: simplify's fallback
    (x / (x + y) - x / (x + 2 * y), False),
    (sp.Max(x, 2 * y) - sp.Max(x, y), False),
    (sp.Rational(1, 10**30), False),
], ids=["fractions-sum", "difference-of-squares", "max-reordered", "sqrt-square", "wrong-denominator",
        "max-differs", "tiny-nonzero"])
def test_zero(diff, zero):
    assert _zero(diff) is zero


# The mutation: the book's chunk count with the left-going chunk-hops doubled (a slip a hand count can make).
MUTATIONS = [("half * (half - 1) / 2", "half * (half - 1)"), ("(n - 1) * (V / n) / W", "n * (V / n) / W")]


@pytest.mark.parametrize("original, mutated", MUTATIONS, ids=["chunk-count", "gather-shards"])
def test_a_mutated_all_to_all_check_fails(original, mutated):
    module = importlib.import_module("scalemath.problems.generators.derive_all_to_all")
    source = Path(module.__file__).read_text(encoding="utf-8")
    assert original in source
    gen = registry.get_generator("derive_all_to_all")
    make_problem(gen, 3)  # the real check passes
    body = source[source.index("def check(p):"):source.index("register(Generator")].replace(original, mutated)
    scope = dict(vars(module))
    exec(compile(body, module.__file__, "exec"), scope)  # noqa: S102 - the project's own source, mutated
    bad = Generator(gen.name, gen.topic, gen.title, gen.source, gen.draw, gen.solve, scope["check"])
    with pytest.raises(CheckFailedError, match="derive_all_to_all"):
        make_problem(bad, 3)
