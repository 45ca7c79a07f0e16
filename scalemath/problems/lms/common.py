"""What every LMS export needs from a manifest: its variants' problems regenerated, each statement as
HTML with MathJax delimiters, each answer with its display unit, tolerance and usual-slip feedback.

Statements come from :func:`scalemath.problems.render.render_problem` (the Markdown rendering: prose
plus ``$...$``/``$$...$$`` LaTeX), turned into HTML whose math is ``\\( ... \\)`` / ``\\[ ... \\]``, which
Moodle's MathJax filter, Canvas and PrairieLearn all typeset. Problems are regenerated from the
generator and seed the manifest records; a manifest whose answers this version of scalemath does not
reproduce is refused (the statement would not match the key).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

import sympy as sp

from ...values import printing as formatting
from ...values.check import slips
from ...errors import BadValueError, ScalemathError
from ...files import file_label
from ..answer_key import Key, _KeyAnswer, _KeyProblem, load_json, load_key

__all__ = ["Item", "Answer", "load_items", "md_to_html", "html_text", "slip_feedback", "set_name", "answer_points",
           "shown_slips", "solution_html"]

_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.S)


def md_to_html(md: str) -> str:
    r"""The Markdown statement as HTML paragraphs, math as ``\( \)`` and ``\[ \]``, everything escaped.

    >>> md_to_html("A *matmul* of $2BDF$ FLOPs, 3 \\* 4 of them\n\n$$\nT = x_1 < y\n$$\n*load $X[B,D]$, $AI^*$ too*")
    '<p>A <em>matmul</em> of \\(2BDF\\) FLOPs, 3 * 4 of them</p>\n<p>\\[\nT = x_1 &lt; y\n\\]\n<em>load \\(X[B,D]\\), \\(AI^*\\) too</em></p>'

    A fenced listing (an HLO module) keeps its lines, escaped, in a ``<pre>`` that wraps:

    >>> md_to_html("HLO:\n\n```text\n%a = f32[2] add(%x, %y)\n  ROOT %b = f32[2] copy(%a) // $1 < 2\n```")
    '<p>HLO:</p>\n<pre style="white-space: pre-wrap">%a = f32[2] add(%x, %y)\n  ROOT %b = f32[2] copy(%a) // $1 &lt; 2</pre>'
    """
    pieces = re.split(r"^```[\w-]*\n(.*?)\n```$", md, flags=re.DOTALL | re.MULTILINE)
    blocks = [f'<pre style="white-space: pre-wrap">{html.escape(p, quote=False)}</pre>' if k % 2 else _prose(p)
              for k, p in enumerate(pieces)]
    return "\n".join(b for b in blocks if b)


def _prose(md: str) -> str:
    """Paragraphs of prose: math as MathJax delimiters, ``*emphasis*`` (which may hold math: a caption under a
    derivation) as ``<em>``, an escaped ``\\*`` as a plain star; an asterisk inside math is left alone."""
    out, maths, last = [], [], 0
    for m in _MATH.finditer(md):
        out.append(_text(md[last:m.start()]))
        display, inline = m.group(1), m.group(2)
        maths.append("\\[" + html.escape(display, quote=False) + "\\]" if display is not None
                     else "\\(" + html.escape(inline, quote=False) + "\\)")
        out.append(f"\x00{len(maths) - 1}\x00")
        last = m.end()
    out.append(_text(md[last:]))
    paragraphs = [_EMPHASIS.sub(r"<em>\1</em>", b.strip()) for b in re.split(r"\n\s*\n", "".join(out)) if b.strip()]
    body = "\n".join(f"<p>{b}</p>" for b in paragraphs)
    return re.sub("\x00(\\d+)\x00", lambda m: maths[int(m.group(1))], body).replace("\x01", "*")


_EMPHASIS = re.compile(r"(?<![*\w])\*(?=\S)([^*]+?)(?<=\S)\*(?![*\w])")


def _text(text: str) -> str:
    return html.escape(text.replace("\\*", "\x01").replace("\\_", "_"), quote=False)


def html_text(text: str, quote: bool = False) -> str:
    """Text a manifest holds (a description, a choice, a reason, a slip's feedback) for an HTML field of an export:
    shown as written, never a tag. ``&``, ``<`` and ``>`` become entities, enough for text between tags; quotes too
    with ``quote`` (the prompts have always had them so). Inside a Moodle Cloze field quotes must stay as they are:
    the ``#`` of ``&#x27;`` would start the field's feedback.

    >>> html_text("<img src=x onerror=alert(1)> & the chip's HBM")
    "&lt;img src=x onerror=alert(1)&gt; &amp; the chip's HBM"
    """
    return html.escape(text, quote=quote)


@dataclass(frozen=True)
class Answer:
    key: _KeyAnswer
    description: str
    shown_unit: str  # the unit a student is asked to type a plain number in (QTI, Canvas): 'ms', 'GB'
    scale: sp.Expr  # key value / scale = value in shown_unit
    slips: tuple[tuple[sp.Expr, str], ...]  # (wrong value in the key's unit, feedback)

    @property
    def name(self) -> str:
        return self.key.name


@dataclass(frozen=True)
class Item:
    """One problem of one variant."""

    variant: str | None
    student: str | None
    number: int  # 1-based position in the set: variants at the same position form one question bank
    id: str
    title: str
    statement: str  # HTML, MathJax delimiters
    answers: tuple[Answer, ...]
    generator: str
    topic: str
    problem: _KeyProblem
    solution: str = ""  # the worked solution, HTML with MathJax delimiters: every format's general feedback


def answer_points(item: Item) -> sp.Rational:
    """What one answer of ``item`` is worth: the problem's points (``--points``) shared by its answers, else 1."""
    points = item.problem.points
    return sp.Integer(1) if points is None else sp.Rational(points, len(item.answers))


def shown_slips(a: Answer) -> list[tuple[sp.Expr, str]]:
    """The slips an export offers as wrong answers: those far enough from the key (and every accepted value) that a
    right answer never lands on one."""
    key = a.key
    near = [key.expected, *(alt.expected for alt in key.accept)]
    return [(value, text) for value, text in a.slips
            if all(abs(value - v) > 2 * key.rel_tol * abs(v) for v in near)]


def solution_html(item: Item) -> str:
    """The worked solution under its heading, as every export shows it after an attempt."""
    return f"<p><strong>Worked solution</strong></p>\n{item.solution}" if item.solution else ""


def set_name(raw: dict) -> str:
    if isinstance(raw.get("set_id"), str) and raw["set_id"].strip():
        return raw["set_id"].strip()
    topics = raw.get("topics") or []
    return f"{'-'.join(t for t in topics if isinstance(t, str)) or 'set'}-seed{raw.get('seed', 0)}"


def slip_feedback(p: _KeyProblem, a: _KeyAnswer) -> tuple[tuple[sp.Expr, str], ...]:
    """Wrong values a slip gives and the feedback for each, as :func:`scalemath.values.check.diagnose` words it."""
    from ...values.check import _inverse_why, _times

    out = []
    for f, why in slips(p.counts, a.unit, p.rings):
        out.append((a.expected * f, f"your answer is {_times(f)} the expected value: {why}"))
        out.append((a.expected / f, f"your answer is 1/{_times(f)[:-1]} of the expected value: {_inverse_why(f, why)}"))
    return tuple(out)


def _display(a: _KeyAnswer) -> tuple[str, sp.Expr]:
    from ...values import printing as formatting

    if a.kind != "number":
        return a.unit, sp.Integer(1)
    number, label = formatting.scaled(a.expected, a.unit)
    scale = a.expected / number if number != 0 else sp.Integer(1)
    return label, scale


def load_items(manifest: Path) -> tuple[dict, Key, list[Item]]:
    """The manifest's variants as items, in order (variant by variant, problem by problem)."""
    from .. import figures, render
    from ..registry import generators, make_problem

    raw = load_json(manifest, "manifest")
    key = load_key(raw, file_label(manifest))
    gens = generators()
    items: list[Item] = []
    for variant, problems in key.variants.items():
        for i, p in enumerate(problems):
            gen_name, seed = p.raw.get("generator"), p.raw.get("seed")
            if gen_name not in gens or not isinstance(seed, int):
                raise BadValueError(f"{file_label(manifest)}: problem {p.id!r} names no known generator and seed, "
                                    "so its statement cannot be written; export a manifest that "
                                    "'scalemath problems generate' wrote")
            try:
                problem = make_problem(gens[gen_name], seed, p.id)
            except ScalemathError as exc:
                raise BadValueError(f"{file_label(manifest)}: problem {p.id!r} cannot be regenerated ({exc})") from None
            mine = {a.name: a.value for a in problem.answers}
            if any(a.name not in mine or not _same(mine[a.name], a) for a in p.answers):
                raise BadValueError(f"{file_label(manifest)}: problem {p.id!r} ({gen_name}, seed {seed}) gives other "
                                    "answers with this version of scalemath than the manifest holds; generate the "
                                    "set again and export the new manifest")
            statement = figures.inline_html(problem, md_to_html(render.render_problem(problem, "md", "statement")))
            solution = figures.inline_html(problem, md_to_html(render.render_problem(problem, "md", "solution")))
            answers = []
            for a in p.answers:
                unit, scale = _display(a)
                slips_ = () if a.kind == "expression" else slip_feedback(p, a)
                answers.append(Answer(a, a.description or a.name, unit, scale, slips_))
            items.append(Item(variant, key.students.get(variant), i + 1, p.id, p.title or problem.title, statement,
                              tuple(answers), gen_name, problem.topic, p, solution))
    return raw, key, items


def _same(mine: sp.Expr, a: _KeyAnswer) -> bool:
    """Whether the regenerated answer is the manifest's: a form by symbolic equality over the same names."""
    if a.kind != "expression":  # exact values: equal, or (an irrational one, sqrt(6)) equal after simplifying
        mine = sp.sympify(mine)
        return mine == a.expected or sp.simplify(mine - a.expected) == 0
    names = {s.name: s for s in a.expected.free_symbols}
    mine = mine.xreplace({s: names[s.name] for s in mine.free_symbols if s.name in names})
    return sp.cancel(mine - a.expected) == 0


def symbols_text(key: _KeyAnswer) -> str:
    """An expression's symbols as a student reads them: ``N (devices on the ring), V (bytes)``."""
    return ", ".join(f"{n} ({meaning})" for n, meaning in key.symbols)


def prompt(a: Answer, with_unit: bool = True) -> str:
    """The line that asks for one answer, HTML-escaped."""
    if a.key.kind == "expression":
        return html_text(f"{a.description} (a formula over {symbols_text(a.key)}):", quote=True)
    if a.key.kind == "choice":   # a question already ends in its question mark
        return html_text(a.description if a.description.endswith("?") else f"{a.description}:", quote=True)
    if a.key.kind == "whole":
        things = "" if a.key.unit in ("1", "") else " of " + formatting.plural_unit(a.key.unit)
        return html_text(f"{a.description} (a whole number{things}):", quote=True)
    unit = "" if not with_unit or a.shown_unit in ("1", "") else f" in {formatting.plural_unit(a.shown_unit)}"
    return html_text(f"{a.description}{unit}:", quote=True)
