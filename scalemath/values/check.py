"""Checking a hand calculation: a typed answer or a closed form against the engine.

A wrong answer is compared with the usual slips (a factor 2, 3, 8, 1.024^k, a
power of 1000, the device count ...) so that the message can say which one
probably explains it.

>>> v = check_value(sp.Rational(19800, 67), "FLOP/byte", "590")
>>> v.right, v.diagnosis
(False, 'your answer is 2x the expected value: a factor 2 (two FLOPs per multiply-add, one- vs two-directional links, or 2 bytes per bf16 element)')
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Mapping

import sympy as sp

from ..errors import BadValueError
from ..limits import TimeLimitError, run_limited
from .parse import MAX_LENGTH, parse_answer, parse_expression, parse_number
from .size import MAX_EVAL_BITS, POINT_BITS, digits_text, evaluation_bits
from .slips import MAX_RING, RING_NAMES, factor_name, inverse_why, rounding_slip, slips
from .units import UnitError, read_in_unit

__all__ = ["Verdict", "ExpressionVerdict", "slips", "diagnose", "check_value", "check_expression", "read_answer",
           "typed_digits", "round_sig", "digits_needed", "DEFAULT_REL_TOL", "RING_NAMES", "MAX_RING",
           "rounding_slip", "ring_slip", "whole_rounding"]

DEFAULT_REL_TOL = sp.Rational(1, 100)
SYMBOLIC_SECONDS = 2.0
POINTS = 12


_factor_name, _inverse_why = factor_name, inverse_why  # the names other modules import


def typed_digits(text: str) -> int | None:
    """Significant digits of a plain decimal number as typed (``'0.27'`` -> 2, ``'2240'`` -> 3,
    ``'16e9'`` -> 2); None for anything else (a fraction such as ``75/52`` is exact)."""
    m = _PLAIN.match(text.strip())
    if not m or not (m.group("int") or m.group("frac")):
        return None
    digits = ((m.group("int") or "") + (m.group("frac") or "")).lstrip("0")
    if m.group("frac") is None:
        digits = digits.rstrip("0")
    return max(1, len(digits))


_PLAIN = re.compile(r"^[+-]?(?P<int>\d*)(?:\.(?P<frac>\d*))?(?:[eE][+-]?\d+)?$")


def _leading(text: str) -> int:
    m = _PLAIN.match(text.strip())
    digits = ((m.group("int") or "") + (m.group("frac") or "")).lstrip("0")
    if m.group("frac") is None:
        digits = digits.rstrip("0")
    return int(digits or "1")


def round_sig(x: sp.Rational, digits: int) -> sp.Rational:
    """``x`` rounded (half away from zero) to ``digits`` significant digits, exactly.

    >>> round_sig(sp.Rational(1848, 1000), 1), round_sig(sp.Rational(2662, 10000), 2)
    (2, 27/100)
    """
    x = sp.Rational(x)
    if x == 0:
        return x
    sign, x = (1, x) if x > 0 else (-1, -x)
    e = len(str(x.p)) - len(str(x.q))
    if sp.Rational(10) ** e > x:
        e -= 1
    scale = sp.Rational(10) ** (e - digits + 1)
    return sign * sp.floor(x / scale + sp.Rational(1, 2)) * scale


def digits_needed(x: sp.Rational, rel_tol: sp.Rational) -> int:
    """The fewest significant digits that keep ``x`` within ``rel_tol`` (at most 17)."""
    for d in range(1, 18):
        if x == 0 or abs(round_sig(x, d) - x) <= rel_tol * abs(x):
            return d
    return 17


def diagnose(ratio: sp.Expr, counts: Mapping[str, int] | None = None,
             rel_tol: sp.Expr = DEFAULT_REL_TOL, unit: str | None = None, digits: int | None = None,
             rings: Mapping[str, int] | None = None, leading: int | None = None) -> str | None:
    """Which usual slip, if any, explains ``given/expected == ratio``.

    A slip is named only when its factor matches the ratio within the tolerance (and, for factors
    close to 1, within a third of their distance from 1), and when the answer was typed precisely
    enough to tell the factor from 1: ``2`` (one digit, 25% uncertain) against 1.848 names no
    GiB-vs-GB slip. ``rings`` defaults to the ring-size entries of ``counts`` (``X``, ``N``, ...).
    """
    if ratio == 0 or not ratio.is_number:
        return None
    if rings is None:
        rings = {k: v for k, v in (counts or {}).items() if k in RING_NAMES}
    tol = max(sp.Rational(rel_tol), sp.Rational(1, 100))
    uncertainty = sp.Rational(1, 2 * leading) if digits is not None and leading else sp.Integer(0)
    found = []
    for factor, why in slips(counts, unit, rings):
        for f, inverse in ((factor, False), (1 / factor, True)):
            residual = abs(ratio / f - 1)
            if residual > tol or residual > abs(factor - 1) / 3 or abs(factor - 1) <= 2 * uncertainty:
                continue
            shown = _times(f) if residual <= sp.Rational(1, 200) else f"{float(ratio):.4g}x"
            if inverse:
                shown = ("1/" + _times(factor)[:-1]) if residual <= sp.Rational(1, 200) else f"{float(ratio):.4g}x"
                found.append(f"your answer is {shown} of the expected value: {_inverse_why(factor, why)}")
            else:
                found.append(f"your answer is {shown} the expected value: {why}")
    if ratio < 0 and abs(ratio + 1) <= tol:
        found.append("your answer has the wrong sign")
    return "; or ".join(found) if found else None


def _times(factor: sp.Expr) -> str:
    text = str(factor) if factor.is_Integer else f"{float(factor):.6g}"
    return text + "x"


@dataclass(frozen=True)
class Verdict:
    right: bool
    expected: sp.Expr
    unit: str
    given: sp.Expr
    given_text: str
    rel_error: sp.Expr
    rel_tol: sp.Expr
    diagnosis: str | None = None
    note: str | None = None  # how an ambiguous unit was read ("B read as billions ...")


_COMMA_NUMBER = re.compile(r"[+-]?\$?\d+(?:,\d+)+(?:\.\d*)?")


def read_answer(answer: str | int | float, unit: str) -> tuple[sp.Expr, str, str | None, str]:
    """A typed answer in ``unit``: (exact value in ``unit``, the number as typed, a note on how an
    ambiguous unit was read or None, the unit as typed or '').

    Reads ``45.8%``, ``1.44x``/``1.44×``, ``$0.0783``, ``7.83 cents``, ``46.7B`` (billions for a
    count, bytes for bytes) and the key's own unit as printed (``0.3333 1/s``, ``25.84 token/s``).
    """
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise BadValueError(f"an answer must be a number or text such as '1.2 ms', not {answer!r}")
    if isinstance(answer, (int, float)):
        if isinstance(answer, float) and answer != answer or answer in (float("inf"), float("-inf")):
            raise BadValueError(f"{answer} is not a finite number")
        return sp.Rational(repr(answer)), repr(answer), None, ""
    text = answer.strip()
    if len(text) > MAX_LENGTH:  # parse_answer says the same; checked first so the rewrites below stay cheap
        parse_answer(text)
    comma = _COMMA_NUMBER.match(text)
    if comma:  # '117,2 µs' or '1,000 tokens': a decimal comma or a thousands separator, which would be misread
        raise BadValueError(f"cannot read {comma.group(0)!r}: write numbers with a decimal point and no "
                            f"thousands separators (117.2, 1000)")
    typed = None
    own = unit.strip()
    if own and own != "1" and text.endswith(own) and not own[0].isalpha():
        text, typed = text[: -len(own)].rstrip(), own  # '0.3333 1/s': the key's unit as printed
    elif text.startswith(("US$", "$")):
        text, typed = text.removeprefix("US$").removeprefix("$").strip(), "USD"
    elif text.endswith(("%", "×", "¢")):
        text, typed = text[:-1].rstrip(), {"%": "percent", "×": "x", "¢": "cent"}[text[-1]]
    if typed is not None:
        value, inner = parse_answer(text)
        if inner is not None:
            raise BadValueError(f"cannot read {answer.strip()!r}: two units")
        number = text
    else:
        value, typed = parse_answer(text)
        number = text[: len(text) - len(typed)].strip() if typed else text
        typed = typed or ""
    if not typed:
        return value, number, None, ""
    try:
        value, note = read_in_unit(value, typed, unit)
    except UnitError as exc:
        raise BadValueError(str(exc)) from None
    return value, number, note, typed


#: A power of 1000 and its prefix, from nano to exa.
_PREFIX_OF = {-3: "n", -2: "µ", -1: "m", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}
#: Units a prefix goes in front of, as written with one.
_PREFIXED = {"s": "s", "FLOP": "FLOP", "FLOP/s": "FLOP/s", "byte": "B", "byte/s": "B/s"}


def _bare_prefix(ratio: sp.Expr, rel_tol, unit: str) -> str | None:
    """A plain number that is the key in a prefixed unit (990 for 990 TFLOP/s, 1.5 for 1.5 ms): the prefix it
    lacks; None for a unit that takes no prefix, or a ratio to the key that is no power of 1000."""
    shown = _PREFIXED.get(unit)
    if shown is None:
        return None
    for k, prefix in _PREFIX_OF.items():
        if (k < 0) == (unit == "s") and abs(ratio / sp.Integer(1000) ** k - 1) <= rel_tol:
            return f"a plain number is read in {shown}: your number is the key in {prefix}{shown}; give the unit"
    return None


def check_value(expected: sp.Expr, unit: str, answer: str | int | float, rel_tol=DEFAULT_REL_TOL,
                counts: Mapping[str, int] | None = None, rings: Mapping[str, int] | None = None,
                rounded: tuple[sp.Expr, str] | None = None) -> Verdict:
    """Compare a typed answer (a number, or text with a unit) with an exact expected value; ``rounded``
    (the unrounded value, 'up' or 'down') says the key is a whole number the question rounds: only it is
    right, and the other rounding of the unrounded value is named."""
    rel_tol = sp.Rational(rel_tol)
    value, number, note, typed = read_answer(answer, unit)
    text = answer.strip() if isinstance(answer, str) else number
    rel_error = abs(value - expected) / abs(expected) if expected != 0 else abs(value)
    right = bool(rel_error <= rel_tol) if rounded is None else value == expected
    diagnosis = None
    if right:
        pass
    elif rounded is not None and (rounding_slip(value, expected, *rounded) or not value.is_Integer):
        diagnosis = rounding_slip(value, expected, *rounded) or (
            f"the question asks for a whole number, rounded {rounded[1]}: "
            f"{float(rounded[0]):.6g} -> {expected}")
    elif expected == 0:
        diagnosis = "the expected value is exactly 0 (nothing to move or compute for these values)"
    else:
        digits = typed_digits(number)
        parts = []
        if digits is not None:
            typed_number = parse_number(number)
            in_typed = expected * typed_number / value if value != 0 else None  # the key in the typed unit
            if in_typed is not None and round_sig(in_typed, digits) == typed_number:
                need = digits_needed(expected, rel_tol)
                parts.append(f"your answer is the expected value rounded to {digits} significant "
                             f"digit{'s' if digits > 1 else ''}, too coarse for the tolerance of "
                             f"{float(100 * rel_tol):g}%: give {need} significant digits")
        slip = diagnose(value / expected, counts, rel_tol, unit, digits, rings,
                        _leading(number) if digits is not None else None)
        if slip:
            parts.append(slip)
        if not typed and not slip and value != 0:
            parts.append(_bare_prefix(expected / value, rel_tol, unit))
        diagnosis = "; or ".join(p for p in parts if p) or None
        if note and note.startswith("B read as bytes") and not abs(value * 10**9 / expected - 1) <= rel_tol:
            note = None  # B as billions would not be right either: nothing ambiguous to point out
        if note:
            diagnosis = (diagnosis + f" ({note})") if diagnosis else note
    return Verdict(right, expected, unit, value, text, rel_error, rel_tol, diagnosis, note)


@dataclass(frozen=True)
class ExpressionVerdict:
    equivalent: bool
    read_as: sp.Expr
    expected: sp.Expr
    method: str
    factor: sp.Expr | None = None
    diagnosis: str | None = None
    counterexample: Mapping[str, sp.Expr] = field(default_factory=dict)


def whole_rounding(expr: sp.Expr, values: Mapping[sp.Symbol, sp.Expr]) -> tuple[sp.Expr, str] | None:
    """(the unrounded value, 'up' or 'down') of a quantity that is a ceiling or a floor, at ``values``.

    >>> x = sp.Symbol("x", positive=True)
    >>> whole_rounding(sp.ceiling(x / 5), {x: 531})
    (531/5, 'up')
    """
    if isinstance(expr, (sp.ceiling, sp.floor)):
        inner = expr.args[0].xreplace(dict(values))
        if inner.is_Rational and not inner.is_Integer:
            return inner, "up" if isinstance(expr, sp.ceiling) else "down"
    return None


def _is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


def check_expression(text: str, expected: sp.Expr, symbols: Mapping[str, sp.Symbol],
                     values: Mapping[sp.Symbol, sp.Expr] | None = None,
                     counts: Mapping[str, int] | None = None) -> ExpressionVerdict:
    """Is the closed form ``text`` equal to ``expected``? Symbolically if that finishes in time,
    otherwise at random positive points; a constant ratio is reported as a factor."""
    values = dict(values or {})
    read = parse_expression(text, symbols)
    for what, expr in (("your expression", read), ("the engine's expression", expected)):
        bits = evaluation_bits(expr, values)
        if bits > MAX_EVAL_BITS:
            raise BadValueError(f"evaluated exactly with these values, {what} could have about {digits_text(bits)} "
                                f"digits, too many to compare; give smaller values or a simpler expression")
    mine, theirs = read.xreplace(values), expected.xreplace(values)
    extra = sorted(s.name for s in mine.free_symbols - theirs.free_symbols)
    try:
        if run_limited(_is_zero, mine - theirs, seconds=SYMBOLIC_SECONDS, what="simplify"):
            return ExpressionVerdict(True, read, expected, "symbolic")
    except (TimeLimitError, RecursionError):
        pass
    free = sorted(mine.free_symbols | theirs.free_symbols, key=lambda s: s.name)
    rng = random.Random(20251130)
    ratios, counterexample = [], {}
    for _ in range(POINTS):  # a ring or device count is a whole number of at least 2
        point = {s: sp.Integer(rng.randint(2, MAX_RING)) if s.name in RING_NAMES
                 else sp.Rational(rng.randint(1, 10**6), rng.randint(1, 1000)) for s in free}
        a, b = mine.xreplace(point), theirs.xreplace(point)
        if not (a.is_number and b.is_number):
            break
        if a != b and not counterexample:
            counterexample = {s.name: v for s, v in point.items()} | {"yours": a, "expected": b}
        ratios.append(a / b if b != 0 else sp.zoo)
    if ratios and all(r == 1 for r in ratios) and not extra:
        return ExpressionVerdict(True, read, expected, f"equal at {POINTS} random points")
    if ratios and all(r == ratios[0] for r in ratios) and ratios[0].is_finite:
        factor = ratios[0]
        return ExpressionVerdict(False, read, expected, f"constant ratio at {POINTS} random points", factor,
                                 diagnose(factor, counts), counterexample)
    note = f"it uses {', '.join(extra)}, which the quantity does not depend on" if extra else None
    rings = [s for s in free if s.name in RING_NAMES]
    if rings and not extra:
        try:
            note = run_limited(ring_slip, mine, theirs, rings, seconds=SYMBOLIC_SECONDS, what="slip search") or note
        except (TimeLimitError, RecursionError):
            pass
    return ExpressionVerdict(False, read, expected, "differs at random points", None, note, counterexample)


def ring_slip(read: sp.Expr, expected: sp.Expr, rings) -> str | None:
    """The ring factor (N-1)/N, or a device count N, that explains ``read / expected`` (times a usual
    constant slip, if any): what the numeric check names for given N, said of the symbol.

    >>> N, V, W = sp.symbols("N V W", positive=True)
    >>> ring_slip(V / W, V * (N - 1) / (N * W), [N])
    "your form is N/(N - 1) times the engine's: the ring's (N-1)/N factor is missing (a ring collective over N devices moves (N-1)/N of the array per device, not all of it)"
    """
    ratio = sp.cancel(read / expected)
    for n in rings:
        for factor, text in ((n / (n - 1), f"the ring's ({n}-1)/{n} factor is missing (a ring collective over {n} "
                                           f"devices moves ({n}-1)/{n} of the array per device, not all of it)"),
                             ((n - 1) / n, f"a factor ({n}-1)/{n} the question does not have (or {n} counted one "
                                           "too many)"),
                             (n, f"a factor {n} (per device vs total: {n} devices)"),
                             (1 / n, f"a factor 1/{n} (per device vs total: {n} devices)")):
            rest = sp.cancel(ratio / factor)
            if not (rest.is_number and rest.is_finite and rest != 0):
                continue
            said = f"your form is {factor} times the engine's: {text}"
            if rest == 1:
                return said
            more = diagnose(sp.nsimplify(rest))
            return f"{said}, and {more}" if more else f"{said}, and a factor {rest}"
    return None
