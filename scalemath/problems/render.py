"""Rendering problem sets: one problem's blocks, whole sheets and keys (Markdown, LaTeX, HTML), and the JSON
answer key (``manifest``).

Each generator has one template, ``templates/problems/<name>.j2``, with a ``statement`` and a ``solution``
block. Templates write prose and call the display helpers of :mod:`.environment` (``m``, ``dm``, ``num``,
``qty``, ``steps``, ``answer``); they never compute. The math they write is typeset by :mod:`.typeset`.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, replace
from typing import Sequence

import sympy as sp
from markupsafe import Markup

from .. import __version__
from ..values import printing as formatting
from . import figures
from .environment import _rendering, _shared_env, _user, _UserText
from .mathml import _MATHML
from .model import ROUNDED_FROM, Answer, Problem
from .sheet import Sheet
from .typeset import _LETTERS, _MATHS, FORMATS, shown_value

__all__ = ["FORMATS", "Group", "render_document", "manifest", "render_problem", "shown_value", "tolerance_sentence"]

_RENDERED: dict[tuple, str] = {}  # (generator, seed, id, format, part) -> text: a problem is drawn from those


def prepare_workers() -> None:
    """Load what rendering in worker processes needs (the templates' environment, the MathML table) once, in
    this process, before they are forked from it."""
    _shared_env()
    _MATHML.load()


def new_mathml() -> dict[tuple[str, str], str]:
    """The MathML conversions made in this process since the last call (a worker sends them to the parent)."""
    return _MATHML.take_added()


def remember(problem: Problem, blocks: dict[tuple[str, str], str], mathml: dict[tuple[str, str], str]) -> None:
    """Keep the blocks (``(format, part) -> text``) and the MathML conversions a worker made for ``problem``."""
    for (fmt, part), text in blocks.items():
        _RENDERED[problem.generator, problem.seed, problem.id, fmt, part] = text
    _MATHML.merge(mathml)


def render_problem(problem: Problem, fmt: str, part: str) -> str:
    """The ``statement`` or ``solution`` block of one problem in one format."""
    key = (problem.generator, problem.seed, problem.id, fmt, part)
    if key in _RENDERED:
        return _RENDERED[key]
    template = _shared_env().get_template(f"problems/{problem.generator}.j2")
    with _rendering(fmt):
        context = template.new_context({"p": problem.params, "a": problem.by_name, "problem": problem})
        text = "".join(template.blocks[part](context)).strip()
    if len(_RENDERED) > 20000:
        _RENDERED.clear()
    _RENDERED[key] = text
    return text


@dataclass(frozen=True)
class Group:
    """The problems of one variant (``id`` None for a plain set) and its student, if a roster named one."""

    problems: Sequence[Problem]
    id: str | None = None
    student: str | None = None


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@functools.lru_cache(maxsize=256, typed=True)
def _percent(tol) -> str:
    """A tolerance as a sheet prints it (``1 %``), remembered: every answer row of every document shows one."""
    return formatting.decimal(sp.Rational(tol) * 100) + "\u202f%"


def _exact_count(a: Answer) -> bool:
    """A number answer that must be exactly a whole number (a count read off a catalog, the best of a few
    draft lengths): the sheet calls it a whole number, not a number "within 0 %"."""
    return a.kind == "number" and a.rel_tol == 0 and a.value.is_Integer


def _toleranced(a: Answer) -> bool:
    return a.kind == "number" and not _exact_count(a)


def tolerance_sentence(problems: Sequence[Problem], on_paper: bool = False) -> str:
    """What the key accepts, as the sheet states it: ``Numbers within 1 % of the key's value are accepted.``
    ``on_paper``: as a sheet answered by hand says it (a letter circled, a formula written)."""
    tols = sorted({sp.Rational(a.rel_tol) for p in problems for a in p.answers if _toleranced(a)})
    kinds = {"whole" if _exact_count(a) else a.kind for p in problems for a in p.answers}
    out = []
    if len(tols) == 1:
        out.append(f"Numbers within {_percent(tols[0])} of the key's value are accepted.")
    elif tols:
        out.append(f"Numbers within the tolerance shown next to each answer ({_percent(tols[0])} to "
                   f"{_percent(tols[-1])}) are accepted.")
    if "whole" in kinds:
        out.append("A count (a whole number) must be exact, rounded as the question asks.")
    if "choice" in kinds:
        out.append("For a choice, circle the letter of the right one." if on_paper
                   else "For a choice, give the letter of the right one.")
    if "expression" in kinds and on_paper:
        out.append("A formula is written over the symbols named with it; any equivalent way of writing it is right.")
    elif "expression" in kinds:
        out.append("A formula is typed as text over the symbols named with it (e.g. (N-1)/N * V/W); any "
                   "equivalent way of writing it is right.")
    return " ".join(out)


def _answer_rows(fmt: str, p: Problem, solutions: bool, mixed_tol: bool) -> list[dict]:
    math = _MATHS[fmt]
    rows = []
    for a in p.answers:
        if a.kind == "choice":
            what = "choose one"
        elif a.kind == "expression":
            what = (f"a formula{'' if a.unit in ('1', '') else ' in ' + formatting.plural_unit(a.unit)}, over "
                    + ", ".join(f"{n} ({meaning})" for n, meaning in a.symbols))
        elif a.kind == "whole" or _exact_count(a):
            what = "a whole number" + ("" if a.unit in ("1", "") else " of " + formatting.plural_unit(a.unit))
        elif a.unit in ("1", ""):
            what = "a number"
        else:
            what = "in " + formatting.plural_unit(a.unit)
        if mixed_tol and _toleranced(a):
            what += ", within " + _percent(a.rel_tol)
        note = []
        if solutions and a.kind == "whole" and a.unrounded != a.value:  # nothing to say of a count that was whole
            # to hundredths: "rounded up from 51111.47 elements", never a four-figure "51110" that seems to
            # round up to 51112
            unrounded = formatting.unrounded(a.unrounded) + formatting.latex_unit(formatting.plural_unit(a.unit))
            note.append(Markup(ROUNDED_FROM[a.rounding] + " ") + math.inline(unrounded))
        if solutions and a.accept:
            for acc in a.accept:
                shown_acc = formatting.latex(acc.value) if a.kind == "expression" else shown_value(acc.value, a.unit)
                note.append(Markup("also accepted: ") + math.inline(shown_acc)
                            + Markup(" (") + math.caption(acc.why) + Markup(")"))
        choices = [(_LETTERS[i % 26], math.caption(c)) for i, c in enumerate(a.choices)]
        if a.kind == "choice":
            index = int(a.value)
            shown = Markup(f"({_LETTERS[index % 26]}) ") + choices[index][1] if choices else Markup("")
        elif a.kind == "expression":
            shown = math.inline(formatting.latex(a.value)) + Markup(" ") + _code(fmt, formatting.exact_text(a.value))
        else:
            shown = math.inline(shown_value(a.value, a.unit))
        rows.append({"name": a.name, "code": _code(fmt, a.name), "description": a.description, "what": what, "kind": a.kind,
                     "choices": choices, "shown": shown, "notes": note})
    return rows


def _code(fmt: str, name: str) -> Markup:
    """An answer name as typed in answers.json, in a fixed-width font."""
    if fmt == "html":
        return Markup("<code>" + formatting.escape(name, "html", prose=True) + "</code>")
    if fmt == "tex":  # a line may break after an underscore of a long name
        return Markup(r"\texttt{" + formatting.escape(name, "tex", prose=True).replace(r"\_", r"\_\allowbreak{}")
                      + "}")
    return Markup("`" + name.replace("`", "'") + "`")


def render_document(problems: Sequence[Problem], fmt: str, *, solutions: bool, title: str,
                    seed: int | None = None, set_id: str = "", sheet: Sheet | None = None,
                    groups: Sequence[Group] | None = None) -> str:
    """A whole sheet (``solutions=False``) or answer key (``solutions=True``) in ``fmt``.

    ``groups`` (variants) replace ``problems`` when given: one sheet is one group, the key covers all.
    The seed is never printed (it regenerates the key); ``set_id`` names the set instead.
    """
    sheet = sheet or Sheet()
    groups = [replace(g, student=_user(g.student)) for g in groups] if groups is not None else [Group(problems)]
    every = [p for g in groups for p in g.problems]
    mixed_tol = len({sp.Rational(a.rel_tol) for p in every for a in p.answers if _toleranced(a)}) > 1
    out_groups = []
    total = 0
    for g in groups:
        items = []
        for i, p in enumerate(g.problems):
            points = sheet.points_for(i)
            total += points or 0
            items.append({"problem": p, "number": i + 1, "points": points,
                          "statement": Markup(_paragraphs(fmt, render_problem(p, fmt, "statement"))),
                          "solution": Markup(_paragraphs(fmt, render_problem(p, fmt, "solution"))) if solutions else "",
                          "answers": _answer_rows(fmt, p, solutions, mixed_tol)})
        out_groups.append({"id": g.id, "student": g.student, "entries": items})
    if len(groups) > 1:
        total //= len(groups)
    instructions = [_UserText(b.strip()) for b in re.split(r"\n\s*\n", sheet.instructions or "") if b.strip()]
    with _rendering(fmt):
        return _shared_env().get_template(f"documents/set.{fmt}.j2").render(
            groups=out_groups, solutions=solutions, title=_user(sheet.title) or title, course=_user(sheet.course),
            set_id=set_id, version=__version__, instructions=instructions, name_line=sheet.name_line,
            total_points=total if sheet.points else None, tolerance=tolerance_sentence(every, sheet.on_paper),
            on_paper=sheet.on_paper and not solutions,
            paper=sheet.paper, with_figures=any(figures.spec_for(p) is not None for p in every),
            one_variant=groups[0] if len(groups) == 1 and groups[0].id else None)


_ITEM = re.compile(r"(?:(\d+)\.|-) (.*)")


def _list(fmt: str, block: str) -> str | None:
    """A block whose every line is a list item (``1. ...`` numbered, ``- ...`` bulleted) as the format's list, else
    None; Markdown keeps its own lines."""
    items = [_ITEM.fullmatch(line.strip()) for line in block.splitlines()]
    if len(items) < 2 or not all(items) or fmt not in ("html", "tex"):
        return None
    numbered = all(i.group(1) for i in items)
    if not numbered and any(i.group(1) for i in items):
        return None
    if fmt == "html":
        tag = "ol" if numbered else "ul"
        return f"<{tag}>" + "".join(f"<li>{i.group(2)}</li>" for i in items) + f"</{tag}>"
    env = "enumerate" if numbered else "itemize"
    return f"\\begin{{{env}}}\n" + "\n".join(f"\\item {i.group(2)}" for i in items) + f"\n\\end{{{env}}}"


def _paragraphs(fmt: str, text: str) -> str:
    """The statement's or solution's blocks (separated by blank lines) as the format's paragraphs and lists."""
    if fmt == "tex":  # paragraphs are TeX's own; only a block of list items changes, in place
        parts = re.split(r"(\n\s*\n)", text)
        return "".join(_list(fmt, part.strip()) or part if i % 2 == 0 else part for i, part in enumerate(parts))
    if fmt != "html":
        return text
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return "\n".join(_list(fmt, b) or (b if b.startswith("<div") or b.startswith("<p") else f"<p>{b}</p>")
                     for b in blocks)


def _problem_record(i: int, p: Problem, points: Sequence[int] | None) -> dict:
    return {
        "id": p.id,
        "number": i + 1,
        **({"points": points[i]} if points else {}),
        "generator": p.generator,
        "topic": p.topic,
        "title": p.title,
        "seed": p.seed,
        "source": p.source,
        "params": {k: (v if isinstance(v, (int, str)) else str(v)) for k, v in p.params.items()},
        "answers": [a.as_manifest() for a in p.answers],
    }


def manifest(problems: Sequence[Problem], *, seed: int, topics: Sequence[str], n: int, set_id: str | None = None,
             generators: Sequence[str] = (), variants: Sequence[Group] | None = None,
             points: Sequence[int] = ()) -> str:
    """The JSON answer key: the canonical record for grading.

    A plain set lists its ``problems``; a set of variants lists ``variants`` instead, each
    ``{"id", "student", "problems"}``. The seed stays here (the sheets never show it), next to ``set_id``.
    ``points`` (the sheet's, one per question) are recorded with each problem, and the grader scores in them.
    """
    doc: dict = {"scalemath_version": __version__, "seed": seed}
    if set_id is not None:
        doc["set_id"] = set_id
    doc.update(topics=list(topics), n=n)
    if generators:
        doc["generators"] = list(generators)
    if variants is None:
        doc["problems"] = [_problem_record(i, p, points) for i, p in enumerate(problems)]
    else:
        doc["variants"] = [{"id": g.id, "student": g.student,
                            "problems": [_problem_record(i, p, points) for i, p in enumerate(g.problems)]}
                           for g in variants]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
