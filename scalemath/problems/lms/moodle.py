"""Moodle XML: one question per problem and variant, in its problem's category, its worked solution as the
general feedback (shown after the attempt). A set with variants: one Cloze (embedded answers) question per
problem and variant, the variants of a problem in one category, so that a quiz drawing one "random question"
per category gives each student every part of one variant (see :func:`moodle_xml`); a Cloze number is typed
in the unit its prompt names (Cloze carries no units), and a formula is a short-answer field that takes
scalemath's form only (check other forms by hand, or grade the answers.json with ``scalemath problems grade``).

A plain set: one Moodle question per answer; a problem of several parts starts with a ``description`` holding
its stem (written once), each part holding its prompt only, the last one the worked solution. Numbers are
``numerical`` questions with an absolute tolerance (``rel_tol`` times the value), the key's unit and every unit
of the same kind with its multiplier (units optional, converted before grading), and wrong answers at the usual
slips (a doubled value, GiB for GB, a dropped (N-1)/N, ...) that carry scalemath's slip feedback. Whole counts
have tolerance 0 and a wrong answer at the unrounded value that says how to round; choices are ``multichoice``;
accepted alternatives are answers worth 100% with their reason as feedback. Moodle's core has no question type
that grades a formula, so a closed-form answer is an ``essay`` question graded by hand, the expected form and
its accepted variants in the grader's information (``scalemath problems grade`` grades such answers from
answers.json).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import sympy as sp

from ...values.units import same_kind_units
from ..model import ROUND_WORDS
from .common import Answer, Item, answer_points, html_text, prompt, shown_slips, solution_html, symbols_text

__all__ = ["moodle_xml"]


def _num(value: sp.Expr) -> str:
    return repr(float(sp.N(value, 17)))


def _text(parent: ET.Element, tag: str, text: str, fmt: str | None = None) -> ET.Element:
    el = ET.SubElement(parent, tag, {"format": fmt} if fmt else {})
    ET.SubElement(el, "text").text = text
    return el


def _question_text(q: ET.Element, text: str, tag: str = "questiontext") -> None:
    """The question text (or another HTML field: the general feedback), each figure attached as a <file> it links
    by @@PLUGINFILE@@ (Moodle's own way)."""
    from ..figures import linked_files

    text, files = linked_files(text, "@@PLUGINFILE@@/")
    el = _text(q, tag, text, "html")
    for name, data in files:
        ET.SubElement(el, "file", name=name, path="/", encoding="base64").text = data


def _category(quiz: ET.Element, path: str) -> None:
    q = ET.SubElement(quiz, "question", type="category")
    _text(q, "category", path)


def _answer(q: ET.Element, fraction: int, value: str, tolerance: str | None, feedback: str) -> None:
    """An answer: a number, or a choice's text (shown as HTML: escape it); its feedback is plain text, escaped here."""
    el = ET.SubElement(q, "answer", fraction=str(fraction), format="moodle_auto_format")
    ET.SubElement(el, "text").text = value
    if tolerance is not None:
        ET.SubElement(el, "tolerance").text = tolerance
    _text(el, "feedback", html_text(feedback), "html")


def _rounding_slip(key) -> tuple[sp.Expr, sp.Expr, str] | None:
    """(value, tolerance, feedback) of the wrong answer that catches a count typed unrounded: a tolerance that
    stops short of every whole number (so a wrong whole number is not called a rounding slip), and feedback that
    says how to round without giving the answer away. None when the count was whole already."""
    distance = abs(key.unrounded - sp.floor(key.unrounded + sp.Rational(1, 2)))
    if distance == 0:
        return None
    tolerance = min(abs(key.unrounded) * key.rel_tol, distance * sp.Rational(99, 100))
    return key.unrounded, tolerance, f"{ROUND_WORDS[key.rounding]}: the question asks for a whole number"


def _stem(quiz: ET.Element, item: Item) -> None:
    """The stem of a plain set's problem of several parts, written once: a description its parts follow."""
    q = ET.SubElement(quiz, "question", type="description")
    _text(q, "name", f"{item.variant or 'set'} {item.id}")
    _question_text(q, item.statement + f"\n<p><em>The next {len(item.answers)} questions are the parts of this "
                   "one.</em></p>")
    _text(q, "generalfeedback", "", "html")
    ET.SubElement(q, "defaultgrade").text = "0"
    ET.SubElement(q, "penalty").text = "0"
    ET.SubElement(q, "hidden").text = "0"


def _question(quiz: ET.Element, item: Item, a: Answer, stem: bool = True, solution: bool = True) -> None:
    """One answer as a question: the problem's stem unless a description holds it (``stem`` False); the worked
    solution as its general feedback (``solution``: on a problem's last part)."""
    key = a.key
    if key.kind == "expression":
        _essay(quiz, item, a, stem, solution)
        return
    qtype = "multichoice" if key.kind == "choice" else "numerical"
    q = ET.SubElement(quiz, "question", type=qtype)
    who = item.variant or "set"
    _text(q, "name", f"{who} {item.id} {a.name}")
    _question_text(q, (f"{item.statement}\n" if stem else "") + f"<p><strong>{prompt(a, with_unit=False)}</strong></p>")
    _question_text(q, solution_html(item) if solution else "", "generalfeedback")  # shown after the attempt
    ET.SubElement(q, "defaultgrade").text = _num(answer_points(item))
    ET.SubElement(q, "penalty").text = "0.3333333"
    ET.SubElement(q, "hidden").text = "0"
    if key.kind == "choice":
        ET.SubElement(q, "single").text = "true"
        ET.SubElement(q, "shuffleanswers").text = "0"
        ET.SubElement(q, "answernumbering").text = "abc"
        for i, choice in enumerate(key.choices):
            right = i == int(key.expected)
            _answer(q, 100 if right else 0, html_text(choice), None, "Right." if right else "")
        return
    if key.kind == "whole":
        _answer(q, 100, str(int(key.expected)), "0", "Right.")
        slip = _rounding_slip(key)
        if slip is not None:
            _answer(q, 0, _num(slip[0]), _num(slip[1]), slip[2])
    else:
        _answer(q, 100, _num(key.expected), _num(abs(key.expected) * key.rel_tol), "Right.")
        for alt in key.accept:
            _answer(q, 100, _num(alt.expected), _num(abs(alt.expected) * key.rel_tol), f"Accepted: {alt.why}")
    for value, feedback in shown_slips(a):  # never shadows a right answer
        _answer(q, 0, _num(value), _num(abs(value) * key.rel_tol), feedback)
    units = ET.SubElement(q, "units")
    if key.unit not in ("1", ""):
        seen = {key.unit}
        unit = ET.SubElement(units, "unit")
        ET.SubElement(unit, "multiplier").text = "1"
        ET.SubElement(unit, "unit_name").text = key.unit
        for name, factor in sorted(same_kind_units(key.unit).items(), key=lambda kv: (float(kv[1]), kv[0])):
            if name in seen or name == "":
                continue
            seen.add(name)
            unit = ET.SubElement(units, "unit")
            ET.SubElement(unit, "multiplier").text = _num(1 / factor)  # value in this unit = base value * multiplier
            ET.SubElement(unit, "unit_name").text = name
    ET.SubElement(q, "unitgradingtype").text = "0"  # units optional; a given unit converts the response
    ET.SubElement(q, "unitpenalty").text = "0.1000000"
    ET.SubElement(q, "showunits").text = "0" if key.unit not in ("1", "") else "3"  # a text box for the unit
    ET.SubElement(q, "unitsleft").text = "0"


def _essay(quiz: ET.Element, item: Item, a: Answer, stem: bool, solution: bool) -> None:
    """A formula answer as an essay question graded by hand; the key in the grader's information."""
    key = a.key
    q = ET.SubElement(quiz, "question", type="essay")
    _text(q, "name", f"{item.variant or 'set'} {item.id} {a.name}")
    _question_text(q, (f"{item.statement}\n" if stem else "") + f"<p><strong>{prompt(a)}</strong></p>"
                   "<p>Type the formula as text, e.g. (N-1)/N * V/W.</p>")
    _question_text(q, solution_html(item) if solution else "", "generalfeedback")  # shown after the attempt
    ET.SubElement(q, "defaultgrade").text = _num(answer_points(item))
    ET.SubElement(q, "penalty").text = "0"
    ET.SubElement(q, "hidden").text = "0"
    ET.SubElement(q, "responseformat").text = "monospaced"
    ET.SubElement(q, "responserequired").text = "1"
    ET.SubElement(q, "responsefieldlines").text = "3"
    ET.SubElement(q, "attachments").text = "0"
    ET.SubElement(q, "attachmentsrequired").text = "0"
    info = [f"<p>Expected (any equivalent form is right): <code>{html_text(str(key.expected), quote=True)}</code></p>",
            f"<p>Symbols: {html_text(symbols_text(key), quote=True)}</p>"]
    info += [f"<p>Also right: <code>{html_text(str(alt.expected), quote=True)}</code> "
             f"({html_text(alt.why, quote=True)})</p>" for alt in key.accept]
    info.append("<p>scalemath problems grade checks a typed formula for equivalence and names the usual slips.</p>")
    _text(q, "graderinfo", "".join(info), "html")
    _text(q, "responsetemplate", "", "html")


# -- a set with variants: one Cloze question per problem and variant -------------------------------------

_CLOZE_SPECIAL = str.maketrans({c: "\\" + c for c in '\\}#~/"'})


def _cloze_text(text: str) -> str:
    """Text inside a Cloze answer or its feedback (part of the question's HTML), escaped for HTML and then for
    Moodle's special characters."""
    return html_text(text).translate(_CLOZE_SPECIAL)


def _cloze_number(value: sp.Expr, tolerance: sp.Expr, fraction: int, feedback: str) -> str:
    mark = "=" if fraction == 100 else f"%{fraction}%"
    return f"{mark}{_num(value)}:{_num(tolerance)}#{_cloze_text(feedback)}"


def _cloze_field(a: Answer) -> str:
    """One answer as an embedded Cloze field: NUMERICAL in the unit the prompt names, MULTICHOICE, or a
    SHORTANSWER holding scalemath's form of a formula."""
    key = a.key
    if key.kind == "choice":
        right = int(key.expected)
        options = [f"={text}#Right." if i == right else text for i, text in enumerate(map(_cloze_text, key.choices))]
        return "{1:MULTICHOICE:" + "~".join(options) + "}"
    if key.kind == "expression":
        # in a short answer '*' is a wildcard: escaped, the form's products are matched as written
        return "{1:SHORTANSWER:=" + _cloze_text(str(key.expected)).replace("*", "\\*") + "#Right.}"
    scale = a.scale
    if key.kind == "whole":
        slip = _rounding_slip(key)
        parts = [_cloze_number(key.expected, sp.Integer(0), 100, "Right.")]
        parts += [_cloze_number(*slip[:2], 0, slip[2])] if slip is not None else []
    else:
        parts = [_cloze_number(key.expected / scale, abs(key.expected / scale) * key.rel_tol, 100, "Right.")]
        parts += [_cloze_number(alt.expected / scale, abs(alt.expected / scale) * key.rel_tol, 100,
                                f"Accepted: {alt.why}") for alt in key.accept]
    for value, feedback in shown_slips(a):  # never shadows a right answer
        parts.append(_cloze_number(value / scale, abs(value / scale) * key.rel_tol, 0, feedback))
    return "{1:NUMERICAL:" + "~".join(parts) + "}"


def _cloze(quiz: ET.Element, item: Item) -> None:
    """The whole problem of one variant as one Cloze (embedded answers) question, so that a quiz's random draw
    from the problem's category gives a student every part of the same variant."""
    q = ET.SubElement(quiz, "question", type="cloze")
    _text(q, "name", f"Q{item.number:02d} {item.variant or item.id}")
    # a brace of the prompt as an entity: a description never opens a Cloze field of its own
    parts = "".join(f"\n<p><strong>{prompt(a).replace('{', '&#123;')}</strong> {_cloze_field(a)}</p>"
                    for a in item.answers)
    _question_text(q, item.statement + parts)
    _question_text(q, solution_html(item), "generalfeedback")  # shown after the attempt
    ET.SubElement(q, "defaultgrade").text = _num(answer_points(item) * len(item.answers))  # its fields weigh alike
    ET.SubElement(q, "penalty").text = "0.3333333"
    ET.SubElement(q, "hidden").text = "0"


def moodle_xml(items: list[Item], set_name: str) -> tuple[bytes, int]:
    """The Moodle XML document and its number of questions (problems of all variants), each problem in its
    category.

    A set with variants: one Cloze question per problem and variant, the variants of a problem in its category, so
    that a quiz drawing one random question per category gives each student one whole variant of every problem
    (random draws from a category per answer would mix the parts of different variants). Cloze numbers carry no
    unit: each prompt names the unit. A plain set: one question per answer (units, slips, a formula graded by hand
    as an essay); a problem of several parts starts with a description holding its stem, so that the stem is
    written once and each part holds its prompt only; the last part carries the worked solution."""
    quiz = ET.Element("quiz")
    problems: dict[int, list[Item]] = {}
    for item in items:
        problems.setdefault(item.number, []).append(item)
    variants = len({item.variant for item in items}) > 1
    for number, members in sorted(problems.items()):
        _category(quiz, f"$course$/top/scalemath {set_name}/Q{number:02d} {members[0].title.replace('/', '-')}")
        for item in members:
            if variants:
                _cloze(quiz, item)
                continue
            several = len(item.answers) > 1
            if several:
                _stem(quiz, item)
            for k, a in enumerate(item.answers):
                _question(quiz, item, a, stem=not several, solution=k == len(item.answers) - 1)
    ET.indent(quiz)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(quiz, encoding="utf-8") + b"\n", len(items)
