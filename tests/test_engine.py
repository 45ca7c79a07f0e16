"""The engine core: derivations, crossovers, the registry, units."""

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from scalemath import quantities
from scalemath.values import units
from scalemath.errors import BadValueError, NoCrossoverError, UnknownNameError
from scalemath.quantities import Context, evaluate
from scalemath.symbolic import roofline as rl
from scalemath.symbolic.derivation import crossover
from scalemath.symbolic.symbols import sym

B, D, F, C, W = (sym(n) for n in "BDFCW")
b_x, b_w, b_o = sym("b_x"), sym("b_w"), sym("b_o")


@pytest.mark.parametrize("name", sorted(quantities.QUANTITIES))
def test_every_step_has_consistent_units(name):
    for step in quantities.get(name).derivation.steps:
        assert units.dims_of_expr(step.expr) == units.dims_of_unit(step.unit), step.label


@pytest.mark.parametrize("expr,message", [
    (sym("bytes") + sym("t_hop"), "different dimensions"),
    (sp.Max(C, W), "different dimensions"),
    (sym("bytes") ** sp.Rational(1, 2), "non-integer power"),
], ids=["bytes+seconds", "max-of-rate-and-bandwidth", "sqrt-of-bytes"])
def test_dimension_check_catches_mismatches(expr, message):
    with pytest.raises(units.DimensionError, match=message):
        units.dims_of_expr(expr)


@pytest.mark.parametrize("quantity,ctx,given,expected", [
    # roofline.md: 1.97e14 / 8.2e11 = 240.24 exactly 9850/41
    ("roofline.critical_intensity", Context(chip="tpu-v5e", dtype="bf16"), {}, Fraction(9850, 41)),
    # B << D, F with int8 weights: half the bf16 threshold (roofline Q2: 120)
    ("matmul.critical_batch_approx", Context(chip="tpu-v5e", weight_dtype="int8"), {}, Fraction(9850, 82)),
    # the approximate batch is exactly C/W for bf16
    ("matmul.critical_batch_approx", Context(chip="h100"), {}, Fraction(990 * 10**12, 335 * 10**10)),
    # largest hop count of 16 chips on a ring: 8; on a line: 15
    ("torus.max_hops_wraparound", Context(), {"N": 16}, 8),
    ("torus.max_hops_no_wraparound", Context(), {"N": 16}, 15),
], ids=["v5e-240", "int8-weights-120", "h100-bf16", "ring-16", "line-16"])
def test_registry_values(quantity, ctx, given, expected):
    assert evaluate(quantities.get(quantity), ctx, given).value == sp.Rational(Fraction(expected))


def test_exact_crossover_equals_quadratic_free_formula():
    # Solve 2BDF/C = (b_x BD + b_w DF + b_o BF)/W by hand.
    root = rl.matmul_critical_batch().expr
    expected = C * b_w * D * F / (2 * D * F * W - C * (b_x * D + b_o * F))
    assert sp.simplify(root - expected) == 0


def test_exact_crossover_tends_to_approximation_for_wide_matrices():
    exact, approx = rl.matmul_critical_batch().expr, rl.matmul_critical_batch_approx().expr
    k = sp.Symbol("k", positive=True)
    assert sp.limit(exact.subs({D: k, F: k}), k, sp.oo) == approx


rates = st.integers(min_value=10**12, max_value=10**16)
bandwidths = st.integers(min_value=10**9, max_value=10**13)
dims = st.integers(min_value=1, max_value=2**17)
byte_sizes = st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(2), Fraction(4)])


@settings(max_examples=60, deadline=None)
@given(c=rates, w=bandwidths, d=dims, f=dims, bx=byte_sizes, bw=byte_sizes)
def test_critical_batch_root_balances_times(c, w, d, f, bx, bw):
    values = {C: c, W: w, D: d, F: f, b_x: bx, b_w: bw, b_o: bx}
    try:
        root = rl.matmul_critical_batch().at(values).value
    except NoCrossoverError:
        # no crossover exactly when even B -> infinity stays memory-bound: 2DF/C <= (b_x D + b_o F)/W
        assert 2 * d * f * w <= c * (bx * d + bx * f)
        return
    t_math = rl.matmul_t_math().expr.subs(values | {B: root})
    t_comms = rl.matmul_t_comms().expr.subs(values | {B: root})
    assert t_math == t_comms
    # just below the root it is memory-bound, just above compute-bound
    for b, memory_bound in ((root * sp.Rational(99, 100), True), (root * sp.Rational(101, 100), False)):
        tm = rl.matmul_t_math().expr.subs(values | {B: b})
        tc = rl.matmul_t_comms().expr.subs(values | {B: b})
        assert (tm < tc) == memory_bound


@settings(max_examples=60, deadline=None)
@given(flops=st.integers(1, 10**18), nbytes=st.integers(1, 10**15), c=rates, w=bandwidths)
def test_upper_bound_at_most_twice_lower_bound(flops, nbytes, c, w):
    values = {sym("FLOPs"): flops, sym("bytes"): nbytes, C: c, W: w}
    lower = rl.t_lower().at(values).value
    upper = rl.t_upper().at(values).value
    assert lower <= upper <= 2 * lower


@settings(max_examples=40, deadline=None)
@given(target=st.integers(1, 10**6))
def test_crossover_root_satisfies_its_equation(target):
    d = crossover(rl.matmul_intensity_approx().expr, sp.Integer(target), B, title="t", source="s",
                  lhs_label="AI", rhs_label="x", side_unit="FLOP/byte", label="B", unit="token", why="w")
    assert rl.matmul_intensity_approx().expr.subs(B, d.expr) == target


def test_crossover_without_positive_root_names_both_sides():
    with pytest.raises(NoCrossoverError, match="no positive root"):
        crossover(B + 1, sp.Integer(0), B, title="never", source="s", lhs_label="l", rhs_label="r",
                  side_unit="1", label="B", unit="token", why="w")


@pytest.mark.parametrize("given,error,fragment", [
    ({"D": 0}, BadValueError, "must be positive"),
    ({"D": -8}, BadValueError, "must be positive"),
    ({"Q": 1}, UnknownNameError, "parameter of matmul.flops"),
], ids=["zero", "negative", "unknown-parameter"])
def test_bad_values(given, error, fragment):
    with pytest.raises(error, match=fragment):
        evaluate(quantities.get("matmul.flops"), Context(), given)


def test_unknown_quantity_suggests():
    with pytest.raises(UnknownNameError, match="roofline.critical_intensity"):
        quantities.get("roofline.critical_intensty")


def test_unknown_dtype_for_chip_lists_what_it_has():
    with pytest.raises(BadValueError, match="fp16, fp32"):
        evaluate(quantities.get("roofline.critical_intensity"), Context(chip="v100", dtype="bf16"))


def test_symbolic_without_context():
    ev = evaluate(quantities.get("matmul.intensity"), Context())
    assert not ev.is_numeric and ev.value == 2 * B * D * F / (b_x * B * D + b_w * D * F + b_o * B * F)


def test_division_by_zero_is_a_clear_error():
    from scalemath.symbolic.derivation import Derivation, Step

    n = sym("N")
    d = Derivation("per-level bandwidth", (Step("W", sym("W") * n / (n - 1), "D W / (D - 1)", "byte/s"),), "s")
    with pytest.raises(BadValueError, match="divide by zero"):
        d.at({n: 1, sym("W"): 5})


_A, _B, _N = sp.symbols("a b n")  # no assumptions: a zero is allowed (a negative never is: it comes from a sum)


@pytest.mark.parametrize("expr,values", [
    (_A + _B - _N, {_A: 3, _B: sp.Rational(1, 2), _N: sp.Rational(7, 2)}),
    (_A * _B / _N, {_A: 4, _B: sp.Rational(1, 2), _N: 2}),
    (_A * _B * _N, {_A: 0, _B: sp.Rational(5, 3), _N: 9}),
    (sp.Max(_A, _B, _N) / _N, {_A: 2, _B: 2, _N: 1}),
    (sp.Max(_A, _B) + sp.Min(_A, _B - _N), {_A: sp.Rational(7, 3), _B: sp.Rational(5, 2), _N: sp.Rational(17, 6)}),
    (sp.Min(_A * _B, _N) * sp.ceiling(_A / _N), {_A: 6, _B: sp.Rational(1, 6), _N: 4}),
    (sp.Max(_A * _N, _B) + _A ** 2, {_A: sp.Rational(3, 2)}),
], ids=["sum", "product", "zero", "max-tie", "max-min", "min-ceiling", "partly"])
def test_evaluating_numbers_by_their_arithmetic_is_sympys(expr, values):
    """A sum, product, maximum or minimum of rational numbers is worked out by the numbers' own arithmetic when a
    derivation is evaluated: the same value, of the same class, as SymPy's own substitution gives."""
    from scalemath.symbolic.derivation import Derivation, Step

    got = Derivation("t", (Step("x", expr, "t"),), "s").at(values).value
    want = expr.xreplace({k: sp.sympify(v) for k, v in values.items()})
    assert sp.srepr(got) == sp.srepr(want) and str(got) == str(want)
