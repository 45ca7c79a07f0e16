"""A generated set's manifest read as an answer key: every field grading uses checked, and a manifest that does
not have the shape ``scalemath problems generate`` writes refused with the file and the field named.

The manifest holds ``"problems"`` (a plain set) or ``"variants": [{"id", "student", "problems"}]``; each
answer has a kind (``number``, ``whole``, ``choice``, ``expression``), its exact value or form, its tolerance
and what else is accepted (``accept``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import sympy as sp

from ..values.check import RING_NAMES
from ..errors import BadValueError, ScalemathError
from ..values.parse import parse_number
from ..files import MAX_BYTES, load_json_file
from .model import ROUNDINGS

__all__ = ["Accept", "Key", "load_json", "load_key", "validate_manifest"]

#: Parameters whose values are device counts: a factor of one of them is a per-device slip.
COUNT_PARAMS = ("n_dev", "chips", "devices", "links", "hosts")
_FIX = "pass the manifest.json that 'scalemath problems generate' wrote, unchanged"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def load_json(path: str | Path, what: str) -> Any:
    """A JSON file a user gave (see :func:`scalemath.files.load_json_file`); errors exit 2."""
    return load_json_file(path, what, MAX_BYTES, error=BadValueError)


@dataclass(frozen=True)
class Accept:
    expected: sp.Expr
    why: str


@dataclass(frozen=True)
class _KeyAnswer:
    name: str
    unit: str
    expected: sp.Expr
    rel_tol: sp.Rational
    kind: str = "number"
    rounding: str | None = None
    unrounded: sp.Expr | None = None
    choices: tuple[str, ...] = ()
    accept: tuple[Accept, ...] = ()
    description: str = ""
    symbols: tuple[tuple[str, str], ...] = ()  # an expression's symbols: (name, meaning)


@dataclass(frozen=True)
class _KeyProblem:
    id: str
    counts: Mapping[str, int]
    answers: tuple[_KeyAnswer, ...]
    rings: Mapping[str, int] = field(default_factory=dict)
    number: int | None = None
    title: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    points: int | None = None  # the sheet's points for this problem, shared by its answers


@dataclass(frozen=True)
class Key:
    """A validated manifest: the problems of each variant (``None`` for a plain set)."""

    variants: Mapping[str | None, tuple[_KeyProblem, ...]]
    students: Mapping[str | None, str | None]
    raw: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def plain(self) -> bool:
        return None in self.variants


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


class _Manifest:
    """Field-by-field checks of a parsed manifest; every failure names the file and the field."""

    def __init__(self, label: str):
        self.label = label

    def fail(self, where: str, message: str) -> BadValueError:
        return BadValueError(f"{self.label}: {where} {message}; {_FIX}")

    def get(self, obj: dict, where: str, name: str, kind: str, required: bool = True) -> Any:
        field_ = f"{where}.{name}" if where else name
        if name not in obj:
            if required:
                raise self.fail(field_, "is missing")
            return None
        value = obj[name]
        ok = {"object": isinstance(value, dict), "list": isinstance(value, list),
              "text": isinstance(value, str),
              "integer": isinstance(value, int) and not isinstance(value, bool),
              "number": isinstance(value, (int, float)) and not isinstance(value, bool)}[kind]
        if not ok:
            wanted = kind if kind == "text" else ("an " if kind[0] in "aeiou" else "a ") + kind
            raise self.fail(field_, f"must be {wanted}, not {_type_name(value)}")
        return value

    def exact(self, obj: dict, where: str, name: str) -> sp.Expr:
        text = self.get(obj, where, name, "text")
        try:
            value = parse_number(text)
            finite = math.isfinite(float(value))
        except (ScalemathError, ValueError, TypeError, ArithmeticError, RecursionError) as exc:
            why = str(exc) if isinstance(exc, ScalemathError) else "it is not a number"
            raise self.fail(f"{where}.{name}", f"must be an exact number such as '9850/41' ({why})") from None
        if not finite:
            raise self.fail(f"{where}.{name}", "must be a finite number")
        return value


def _answer(m: _Manifest, a: Any, at: str, pid: str) -> _KeyAnswer:
    if not isinstance(a, dict):
        raise m.fail(at, f"must be an object, not {_type_name(a)}")
    name = m.get(a, at, "name", "text")
    unit = m.get(a, at, "unit", "text")
    description = m.get(a, at, "description", "text", required=False) or ""
    m.get(a, at, "value", "number", required=False)
    kind = m.get(a, at, "kind", "text", required=False) or "number"
    if kind == "expression":
        return _expression_answer(m, a, at, name, unit, description)
    expected = m.exact(a, at, "exact")
    rel_tol = m.get(a, at, "rel_tol", "number")
    if not 0 <= rel_tol < 1:
        raise m.fail(f"{at}.rel_tol", f"= {rel_tol!r} must be at least 0 and below 1")
    if kind not in ("number", "whole", "choice"):
        raise m.fail(f"{at}.kind", f"= {kind!r} must be number, whole, choice or expression")
    rounding = unrounded = None
    choices: tuple[str, ...] = ()
    if kind == "whole":
        rounding = m.get(a, at, "rounding", "text")
        if rounding not in ROUNDINGS:
            raise m.fail(f"{at}.rounding", f"= {rounding!r} must be one of {', '.join(ROUNDINGS)}")
        unrounded = m.exact(a, at, "unrounded")
        if not expected.is_Integer:
            raise m.fail(f"{at}.exact", "of a whole answer must be a whole number")
    if kind == "choice":
        listed = m.get(a, at, "choices", "list")
        if not 2 <= len(listed) <= len(_LETTERS) or not all(isinstance(c, str) and c.strip() for c in listed):
            raise m.fail(f"{at}.choices", f"must be a list of 2 to {len(_LETTERS)} non-empty texts")
        choices = tuple(listed)
        if not (expected.is_Integer and 0 <= expected < len(choices)):
            raise m.fail(f"{at}.exact", "of a choice answer must be the index of one of its choices")
    accept = []
    for k, alt in enumerate(m.get(a, at, "accept", "list", required=False) or []):
        where = f"{at}.accept[{k}]"
        if not isinstance(alt, dict):
            raise m.fail(where, f"must be an object, not {_type_name(alt)}")
        accept.append(Accept(m.exact(alt, where, "exact"), m.get(alt, where, "why", "text")))
    return _KeyAnswer(name, unit, expected, sp.Rational(str(rel_tol)), kind, rounding, unrounded, choices,
                      tuple(accept), description)


def _expression_answer(m: _Manifest, a: dict, at: str, name: str, unit: str, description: str) -> _KeyAnswer:
    """A closed-form answer: ``exact`` is the form, ``symbols`` maps each name it may use to its meaning."""
    from .expressions import read_form, symbols_of

    named = m.get(a, at, "symbols", "object")
    if not named or not all(isinstance(k, str) and k.isidentifier() and k.isascii() and isinstance(v, str)
                            for k, v in named.items()):
        raise m.fail(f"{at}.symbols", "must map each symbol's name (an identifier) to its meaning")
    symbols = symbols_of(named)
    forms = [(read_form(m.get(a, at, "exact", "text"), symbols, f"{m.label}: {at}.exact"), "")]
    for k, alt in enumerate(m.get(a, at, "accept", "list", required=False) or []):
        where = f"{at}.accept[{k}]"
        if not isinstance(alt, dict):
            raise m.fail(where, f"must be an object, not {_type_name(alt)}")
        forms.append((read_form(m.get(alt, where, "exact", "text"), symbols, f"{m.label}: {where}.exact"),
                      m.get(alt, where, "why", "text")))
    return _KeyAnswer(name, unit, forms[0][0], sp.Integer(0), "expression",
                      accept=tuple(Accept(f, why) for f, why in forms[1:]), description=description,
                      symbols=tuple(named.items()))


def _problems(m: _Manifest, problems: Any, where_list: str) -> tuple[_KeyProblem, ...]:
    if not isinstance(problems, list):
        raise BadValueError(f"{m.label} is not a scalemath manifest: '{where_list}' must be a list, not "
                            f"{_type_name(problems)}; {_FIX}")
    if not problems:
        raise BadValueError(f"manifest {m.label} has no problems; generate a set with "
                            "'scalemath problems generate' and pass its manifest.json")
    out: list[_KeyProblem] = []
    seen: set[str] = set()
    for i, p in enumerate(problems):
        where = f"{where_list}[{i}]"
        if not isinstance(p, dict):
            raise m.fail(where, f"must be an object, not {_type_name(p)}")
        pid = m.get(p, where, "id", "text")
        if not pid.strip():
            raise m.fail(f"{where}.id", "must not be empty")
        if pid in seen:
            raise m.fail(f"{where}.id", f"{pid!r} is used twice")
        seen.add(pid)
        for name, kind in (("number", "integer"), ("seed", "integer"), ("generator", "text"), ("topic", "text"),
                           ("title", "text"), ("source", "text"), ("points", "integer")):
            m.get(p, where, name, kind, required=False)
        points = p.get("points")
        if points is not None and not 0 <= points <= 1000:
            raise m.fail(f"{where}.points", f"= {points} must be from 0 to 1000")
        params = m.get(p, where, "params", "object")
        for k, v in params.items():
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise m.fail(f"{where}.params.{k}", f"must be a number or text, not {_type_name(v)}")
        answers = m.get(p, where, "answers", "list")
        if not answers:
            raise m.fail(f"{where}.answers", "is empty; each problem has at least one answer")
        keyed: list[_KeyAnswer] = []
        for j, a in enumerate(answers):
            answer = _answer(m, a, f"{where}.answers[{j}]", pid)
            if any(k.name == answer.name for k in keyed):
                raise m.fail(f"{where}.answers[{j}].name", f"{answer.name!r} is used twice in {pid!r}")
            keyed.append(answer)
        counts = {k: v for k, v in params.items() if k in COUNT_PARAMS and isinstance(v, int)}
        rings = {k: v for k, v in params.items() if k in RING_NAMES and isinstance(v, int)}
        out.append(_KeyProblem(pid, counts, tuple(keyed), rings, p.get("number"), p.get("title") or "", p, points))
    return tuple(out)


def load_key(key: Any, label: str = "manifest") -> Key:
    """A manifest (plain or with variants) with every field grading uses checked; a
    :class:`BadValueError` names the file and the field."""
    m = _Manifest(label)
    if not isinstance(key, dict):
        raise BadValueError(f"{label} is not a scalemath manifest: the top level must be an object with "
                            f"'problems' or 'variants', not {_type_name(key)}; {_FIX}")
    for name, kind in (("scalemath_version", "text"), ("seed", "integer"), ("n", "integer"),
                       ("topics", "list"), ("set_id", "text")):
        m.get(key, "", name, kind, required=False)
    if "problems" in key:
        return Key({None: _problems(m, key["problems"], "problems")}, {None: None}, key)
    if "variants" not in key:
        raise BadValueError(f"{label} is not a scalemath manifest (it has no 'problems' or 'variants' list); {_FIX}")
    variants = m.get(key, "", "variants", "list")
    if not variants:
        raise BadValueError(f"manifest {label} has no variants; generate a set with "
                            "'scalemath problems generate --variants N' and pass its manifest.json")
    out: dict[str | None, tuple[_KeyProblem, ...]] = {}
    students: dict[str | None, str | None] = {}
    for i, v in enumerate(variants):
        where = f"variants[{i}]"
        if not isinstance(v, dict):
            raise m.fail(where, f"must be an object, not {_type_name(v)}")
        vid = m.get(v, where, "id", "text")
        if not vid.strip() or vid in out:
            raise m.fail(f"{where}.id", f"{vid!r} is empty or used twice")
        student = v.get("student")
        if student is not None and not isinstance(student, str):
            raise m.fail(f"{where}.student", f"must be text or null, not {_type_name(student)}")
        out[vid] = _problems(m, m.get(v, where, "problems", "list"), f"{where}.problems")
        students[vid] = student
    return Key(out, students, key)


def validate_manifest(key: Any, label: str = "manifest") -> list[_KeyProblem]:
    """The problems of a plain manifest (the first variant's of one with variants); see :func:`load_key`."""
    return list(next(iter(load_key(key, label).variants.values())))
