"""PrairieLearn question folders: ``<out>/<set>-qNN/{info.json, question.html, server.py}`` (copy them
into a course's ``questions/``).

One question per position in the set; its ``server.py`` holds every variant of that position (the
statement as HTML with MathJax, each answer's exact key as a fraction, its tolerance, the units it
may be typed in and the usual-slip feedback) and picks one per PrairieLearn variant.

``server.py`` imports nothing from scalemath, on purpose: PrairieLearn runs question code in its own
Python environment, where scalemath is not installed and a course cannot install it. Everything that
needs the engine (statements, exact keys, which slips apply and how they are worded) is computed
here, at export time, by the same code ``problems grade`` uses; the runtime only reads a number and
a unit and compares fractions, with the same matching rule as :func:`scalemath.values.check.diagnose`.

A closed-form answer (a formula) is a ``pl-symbolic-input`` over the answer's symbols: PrairieLearn's own
element parses the formula and grades it by symbolic equivalence with the key's form; ``server.py``
leaves its score alone.
"""

from __future__ import annotations

import json
import uuid

import sympy as sp

from ...values import printing as formatting
from ...values.units import COUNT_KINDS, MAGNITUDES, same_kind_units
from ..model import ROUND_WORDS
from .common import Item, prompt, solution_html

__all__ = ["prairielearn_files"]

_NAMESPACE = uuid.UUID("6f1c3b1e-5d0a-4a43-9a57-5ca1e0a7b001")  # uuid5 namespace of scalemath's questions


def _frac(value: sp.Expr) -> str:
    """An exact value as the fraction server.py compares with; an irrational one (256*sqrt(6)/9, the unrounded
    value of a count) as its 30-digit decimal, far inside any tolerance."""
    value = sp.sympify(value)
    value = value if value.is_Rational else sp.Rational(str(sp.N(value, 30)))
    return f"{value.p}/{value.q}"


def _variant(item: Item) -> dict:
    answers = []
    for a in item.answers:
        key = a.key
        if key.kind == "expression":
            answers.append({"name": key.name, "label": prompt(a, with_unit=False), "unit": key.unit,
                            "kind": key.kind, "form": str(key.expected), "shown": str(key.expected),
                            "variables": ", ".join(n for n, _ in key.symbols), "choices": [],
                            "accept": [[str(alt.expected), alt.why] for alt in key.accept]})
            continue
        units = {} if key.kind == "choice" else {n: _frac(f) for n, f in same_kind_units(key.unit).items()}
        answers.append({
            "name": key.name, "label": prompt(a, with_unit=False), "unit": key.unit, "kind": key.kind,
            "exact": _frac(key.expected), "rel_tol": _frac(key.rel_tol), "rounding": key.rounding,
            "unrounded": _frac(key.unrounded) if key.unrounded is not None else None,
            "choices": list(key.choices), "accept": [[_frac(alt.expected), alt.why] for alt in key.accept],
            "slips": [[_frac(value), text] for value, text in a.slips],
            "units": units, "counts": key.unit in COUNT_KINDS or key.unit in ("1", "FLOP"),
            "things": formatting.plural_unit(key.unit),
            "shown": _shown(key),
        })
    return {"variant": item.variant, "id": item.id, "statement": item.statement, "solution": solution_html(item),
            "answers": answers}


def _shown(key) -> str:
    if key.kind == "choice":
        return f"({'abcdefghijklmnopqrstuvwxyz'[int(key.expected)]}) {key.choices[int(key.expected)]}"
    return formatting.plain_result(key.expected, key.unit)


QUESTION_HTML = """<pl-question-panel>
{{{params.statement}}}
</pl-question-panel>
{{#params.answers}}
<p>{{{label}}}</p>
{{#is_choice}}<pl-multiple-choice answers-name="{{name}}" fixed-order="true" weight="1">{{#choice_list}}<pl-answer correct="{{correct}}">{{text}}</pl-answer>{{/choice_list}}</pl-multiple-choice>{{/is_choice}}
{{#is_expression}}<pl-symbolic-input answers-name="{{name}}" variables="{{variables}}" size="40"></pl-symbolic-input>{{/is_expression}}
{{^is_expression}}{{^is_choice}}<pl-string-input answers-name="{{name}}" size="20" placeholder="{{placeholder}}"></pl-string-input>{{/is_choice}}{{/is_expression}}
{{/params.answers}}
<pl-submission-panel>
{{#feedback.lines}}<p><strong>{{name}}</strong>: {{text}}</p>{{/feedback.lines}}
</pl-submission-panel>
<pl-answer-panel>
{{#params.answers}}<p>{{name}}: {{shown}}</p>{{/params.answers}}
{{{params.solution}}}
</pl-answer-panel>
"""

SERVER_PY = '''"""PrairieLearn server code written by scalemath (problems export --format prairielearn).

Self-contained on purpose: PrairieLearn runs it without scalemath installed. The variants, exact keys,
tolerances, units and slip feedback below were computed by scalemath when the set was exported.
"""

import json
import random
import re
from fractions import Fraction

VARIANTS = json.loads(r"""__VARIANTS__""")
MAGNITUDES = __MAGNITUDES__
ROUND_WORDS = __ROUND_WORDS__
LETTERS = "abcdefghijklmnopqrstuvwxyz"
_NUMBER = re.compile(r"^\\s*(?P<num>[+-]?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?(?:\\s*/\\s*\\d+)?)\\s*(?P<unit>.*?)\\s*$")
_PLAIN = re.compile(r"^[+-]?(?P<int>\\d*)(?:\\.(?P<frac>\\d*))?(?:[eE][+-]?\\d+)?$")


def generate(data):
    rng = random.Random(data.get("variant_seed"))
    variant = VARIANTS[rng.randrange(len(VARIANTS))] if len(VARIANTS) > 1 else VARIANTS[0]
    answers = []
    for a in variant["answers"]:
        shown = dict(a)
        shown["choice_list"] = [{"letter": LETTERS[i], "text": c, "correct": "true" if i == Fraction(a["exact"]) else "false"}
                                for i, c in enumerate(a["choices"])]
        shown["is_choice"] = a["kind"] == "choice"  # pl-multiple-choice shows, keys and grades it
        shown["is_expression"] = a["kind"] == "expression"  # pl-symbolic-input grades it (correct_answers: the form)
        shown["placeholder"] = "letter or text" if a["kind"] == "choice" else (
            "whole number" if a["kind"] == "whole" else ("number" if a["unit"] in ("1", "") else "number and unit"))
        answers.append(shown)
        if a["kind"] != "choice":
            data["correct_answers"][a["name"]] = a["shown"]
    data["params"]["statement"] = variant["statement"]
    data["params"]["solution"] = variant["solution"]  # the worked solution, in the answer panel
    data["params"]["answers"] = answers
    data["params"]["variant"] = variant["variant"]


def _number(text):
    text = text.replace(" ", "")
    if "/" in text:
        top, bottom = text.split("/")
        return Fraction(top) / Fraction(bottom)
    return Fraction(text)


def read(a, text):
    """(value in the key's unit, the number as typed) or raise ValueError with the reason."""
    text = str(text).strip()
    if text.startswith("$") and "cent" in a["unit"]:
        text, unit = text[1:].strip(), "USD"
    elif text.endswith(("%", "\\u00d7", "\\u00a2")):
        text, unit = text[:-1].strip(), {"%": "percent", "\\u00d7": "x", "\\u00a2": "cent"}[text[-1]]
    else:
        unit = None
    m = _NUMBER.match(text)
    if not m or len(text) > 200:
        raise ValueError("cannot read %r as a number with an optional unit, e.g. 1.2 ms" % text[:60])
    value, typed = _number(m.group("num")), (unit if unit is not None else m.group("unit"))
    units = dict(a["units"], **({"percent": "1/100", "%": "1/100", "x": "1", "times": "1"} if a["unit"] == "1" else {}))
    if not typed or typed == a["unit"]:
        return value, m.group("num")
    if typed in units:
        return value * Fraction(units[typed]), m.group("num")
    word, _, rest = typed.partition(" ")
    if a["counts"] and word in MAGNITUDES and (not rest or rest in units):
        return value * MAGNITUDES[word] * Fraction(units.get(rest, "1")), m.group("num")
    raise ValueError("%s is not a unit of %s; give the answer in %s" % (typed[:40], a["things"], a["things"]))


def _digits(number):
    m = _PLAIN.match(number)
    if not m or not (m.group("int") or m.group("frac")):
        return None
    digits = ((m.group("int") or "") + (m.group("frac") or "")).lstrip("0")
    if m.group("frac") is None:
        digits = digits.rstrip("0")
    return int(digits or "1")


def check(a, text):
    """(score, feedback) for one typed answer."""
    exact, tol = Fraction(a["exact"]), Fraction(a["rel_tol"])
    if a["kind"] == "choice":
        t = " ".join(str(text).split()).casefold()
        for i, c in enumerate(a["choices"]):
            if t == " ".join(c.split()).casefold() or t.strip("()") == LETTERS[i]:
                return (1, "") if i == exact else (0, "you chose (%s) %s" % (LETTERS[i], c))
        return 0, "give the letter or the text of a choice"
    try:
        value, number = read(a, text)
    except (ValueError, ZeroDivisionError) as exc:
        return 0, str(exc)
    if a["kind"] == "whole":
        if value == exact:
            return 1, ""
        unrounded = Fraction(a["unrounded"])
        if unrounded and value.denominator != 1 and abs(value / unrounded - 1) <= tol:  # the unrounded value typed
            return 0, "%s: the question asks for whole %s" % (ROUND_WORDS[a["rounding"]], a["things"])
        tol = Fraction(0)
    if exact == 0:
        return (1, "") if value == 0 else (0, "the expected value is exactly 0")
    if abs(value / exact - 1) <= tol:
        return 1, ""
    for alt, why in a["accept"]:
        if abs(value / Fraction(alt) - 1) <= Fraction(a["rel_tol"]):
            return 1, "accepted: " + why
    leading = _digits(number)
    uncertainty = Fraction(1, 2 * leading) if leading else Fraction(0)
    found = []
    for slipped, message in a["slips"]:
        f = Fraction(slipped) / exact
        if f == 0:
            continue
        far = abs(f - 1) if f > 1 else abs(1 / f - 1)
        residual = abs(value / Fraction(slipped) - 1)
        if residual <= max(tol, Fraction(1, 100)) and residual <= far / 3 and far > 2 * uncertainty:
            found.append(message if residual <= Fraction(1, 200) else re.sub(
                r"^your answer is \\S+( of)? the expected value", "your answer is %.4gx the expected value"
                % float(value / exact), message))
    return 0, "; or ".join(found)


def grade(data):
    lines, total = [], 0
    for a in data["params"]["answers"]:
        if a["kind"] == "choice":  # graded by pl-multiple-choice before grade() runs; its score stands
            total += (data["partial_scores"].get(a["name"]) or {}).get("score") or 0
            continue
        if a["kind"] == "expression":  # graded by pl-symbolic-input before grade() runs; its score stands
            total += (data["partial_scores"].get(a["name"]) or {}).get("score") or 0
            continue
        given = data["submitted_answers"].get(a["name"])
        score, feedback = (0, "no answer") if given in (None, "") else check(a, given)
        data["partial_scores"][a["name"]] = {"score": score, "weight": 1, "feedback": feedback}
        total += score
        if feedback:
            lines.append({"name": a["name"], "text": feedback})
    data["score"] = total / len(data["params"]["answers"]) if data["params"]["answers"] else 0
    data["feedback"]["lines"] = lines
'''


def prairielearn_files(items: list[Item], set_name: str) -> tuple[dict[str, bytes], int]:
    """``{relative path: bytes}`` of the question folders (one per position, drawing its variants), and the number
    of questions as every export counts them: problems of all variants."""
    by_number: dict[int, list[Item]] = {}
    for item in items:
        by_number.setdefault(item.number, []).append(item)
    files: dict[str, bytes] = {}
    magnitudes = repr({k: v for k, v in MAGNITUDES.items()})
    for number, members in sorted(by_number.items()):
        folder = f"{_slug(set_name)}-q{number:02d}"
        titles = {m.title for m in members}
        title = members[0].title if len(titles) == 1 else f"Question {number}"
        info = {"uuid": str(uuid.uuid5(_NAMESPACE, f"{set_name}/{number}")), "title": f"{title} ({set_name})",
                "topic": members[0].topic, "tags": ["scalemath", _slug(set_name)] + sorted({m.generator for m in members}),
                "type": "v3", "gradingMethod": "Internal", "singleVariant": len(members) == 1,
                "partialCredit": True}
        variants = json.dumps([_variant(m) for m in members], ensure_ascii=True, indent=1)
        if '"""' in variants:  # cannot happen with ensure_ascii JSON, but never write broken Python
            raise ValueError("variant data would end the string literal")
        files[f"{folder}/info.json"] = (json.dumps(info, indent=2) + "\n").encode()
        files[f"{folder}/question.html"] = QUESTION_HTML.encode()
        files[f"{folder}/server.py"] = SERVER_PY.replace("__VARIANTS__", variants).replace(
            "__MAGNITUDES__", magnitudes).replace("__ROUND_WORDS__", repr(ROUND_WORDS)).encode()
    return files, len(items)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-") or "set"
