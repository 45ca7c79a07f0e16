"""The crossovers' linear fast path (symbolic/derivation.py ``_linear_root``) against ``sp.solve``.

Most crossovers balance two costs that are each proportional to the unknown, and ``sp.solve`` was most
of the time a cold command spent building derivations. The fast path must give the same root, in the
same form (the form is what derivations, sheets and golden files show), and drop the same roots.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath.symbolic import derivation as dv
from scalemath.symbolic.symbols import sym

B, C, W, D, F, N = (sym(n) for n in ("B", "C", "W", "D", "F", "N"))
x = sp.Symbol("x", positive=True)
y = sp.Symbol("y", real=True)

CASES = [
    # (branch = 0, unknown): hand-picked shapes; sp.solve is the reference for each
    (B - C / W, B, "plain proportion"),
    (2 * B * D * F / C - (2 * B * D + 2 * D * F) / W, B, "matmul with exact bytes"),
    (B / (B + D) - C / W, B, "unknown in the denominator"),
    ((B - 1) / (B**2 - 1), B, "root makes a denominator zero"),
    (B + C / W, B, "negative root of a positive unknown"),
    (y + C / W, y, "negative root of a real unknown"),
    (N * F * B - C, F, "coefficient a product"),
    (B**2 - C / W, B, "quadratic: left to sp.solve"),
    (sp.sqrt(B) - C / W, B, "square root: left to sp.solve"),
    (sp.exp(x) - 2, x, "exponential: left to sp.solve"),
    (B * sp.log(C) - W, B, "coefficient with a function of another symbol"),
]


@pytest.mark.parametrize("branch, unknown", [(b, u) for b, u, _ in CASES], ids=[i for _, _, i in CASES])
def test_fast_path_matches_solve(branch, unknown):
    expected = sp.solve(sp.Eq(branch, 0), unknown, dict=False)
    fast = dv._linear_root(branch, unknown)
    got = dv._solve_branch(branch, unknown)
    if fast is not None:
        assert fast == got
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert sp.simplify(a - b) == 0
        assert a == b, f"same root, other form: {a} against sp.solve's {b}"


@pytest.mark.parametrize("branch, unknown, linear", [
    (B - C / W, B, True),
    (B / (B + D) - C / W, B, True),
    (B**2 - C / W, B, False),
    (sp.sqrt(B) - C / W, B, False),
    (sp.exp(x) - 2, x, False),
], ids=["linear", "linear over a denominator", "quadratic", "square root", "exponential"])
def test_fast_path_taken_only_for_linear_numerators(branch, unknown, linear):
    assert (dv._linear_root(branch, unknown) is not None) == linear


_COLLECT = textwrap.dedent("""
    import pickle, sys
    from scalemath.symbolic import derivation as dv
    seen = []
    real = dv._roots
    def spy(difference, unknown, title):
        seen.append((title, difference, unknown))
        return real(difference, unknown, title)
    dv._roots = spy
    from scalemath import quantities
    for q in quantities.QUANTITIES.values():
        q.derivation
    with open(sys.argv[1], "wb") as f:
        pickle.dump(seen, f)
""")


@pytest.fixture(scope="module")
def registered_forms(tmp_path_factory):
    """Every crossover the registered quantities solve, collected in a fresh process (the engine's
    builders are cached, so this process may have built them already) with the cache off."""
    out = tmp_path_factory.mktemp("forms") / "forms.pickle"
    env = dict(os.environ, SCALEMATH_CACHE_DIR="off")
    subprocess.run([sys.executable, "-c", _COLLECT, str(out)], check=True, env=env, timeout=600)
    with open(out, "rb") as f:
        return pickle.load(f)


def test_every_registered_crossover(registered_forms):
    """For every branch of every registered crossover: the fast path's root is sp.solve's, in the same
    form; the branches it leaves to sp.solve are the non-linear ones."""
    assert len(registered_forms) > 30
    fast_count = 0
    wrong = []
    for title, difference, unknown in registered_forms:
        for branch, _ in dv._branches(difference, unknown):
            fast = dv._linear_root(branch, unknown)
            if fast is None:
                num = sp.fraction(sp.together(branch))[0]
                assert not (num.is_polynomial(unknown) and sp.degree(num, unknown) == 1), title
                continue
            fast_count += 1
            expected = sp.solve(sp.Eq(branch, 0), unknown, dict=False)
            same = len(fast) == len(expected) and all(
                sp.simplify(a - b) == 0 and a == b for a, b in zip(fast, expected))
            if not same:
                wrong.append(f"{title}: {fast} against sp.solve's {expected}")
    assert not wrong, "\n".join(wrong)
    assert fast_count > 30  # most crossovers are linear (36 branches when this was written)


# -- simplest: sp.simplify skipped where cancelling leaves one term ---------------------------------------------

_SYMBOLS = (B, C, W, D, F, N)
_powers = st.lists(st.tuples(st.sampled_from(_SYMBOLS), st.integers(-3, 3)), min_size=1, max_size=4)
_monomials = st.builds(lambda k, ps: sp.Rational(k[0], k[1]) * sp.Mul(*(s**e for s, e in ps)),
                       st.tuples(st.integers(1, 50), st.integers(1, 50)), _powers)


@settings(max_examples=60, deadline=None)
@given(st.lists(_monomials, min_size=1, max_size=3), st.lists(_monomials, min_size=1, max_size=3))
def test_simplest_is_simplify_in_value_and_in_form_for_one_term(top, bottom):
    """A ratio of sums of monomials: simplest gives simplify's value always, and simplify's very form when
    cancelling leaves a single term (the case it skips simplify for)."""
    expr = sp.Add(*top) / sp.Add(*bottom)
    fast, full = dv.simplest(expr), sp.simplify(expr)
    assert sp.cancel(fast - full) == 0
    if not sp.cancel(expr).has(sp.Add):
        assert fast == full, (expr, fast, full)


@settings(max_examples=60, deadline=None)
@given(_monomials, _monomials)
def test_simplest_of_a_ratio_of_terms_is_simplify_itself(top, bottom):
    assert dv.simplest(top / bottom) == sp.simplify(top / bottom)
