"""Grading answer sheets against a generated set's manifest (its answer key).

An answers file is ``{"<problem id>": {"<answer name>": <number or text>}}`` for a plain set (a hands-on
problem also takes ``"code"``: the path of the student's .py file beside the sheet, or the code), or
``{"variant": "<id>", "student": ..., "answers": {...}}`` for one variant of a set with variants
(``generate --variants N`` / ``--students``); ``generate`` writes a blank one to fill in. The manifest
holds ``"problems"`` (a plain set) or ``"variants": [{"id", "student", "problems"}]``.

The manifest is read by :mod:`.answer_key`, each answer graded by :mod:`.verdicts`; here a sheet is graded
(of either shape, against its variant) and a class: every answers file under a folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from ..errors import BadValueError, ScalemathError
from ..files import MAX_BYTES, file_label
from .answer_key import Key, _type_name, load_json, load_key, validate_manifest
from .verdicts import Graded, _shown, grade_answer

__all__ = ["Graded", "Key", "Sheet", "grade", "grade_files", "grade_path", "load_json", "load_key", "find_key",
           "blank_answers", "validate_manifest", "MAX_BYTES", "MAX_SHEETS"]

#: Warnings listed one by one before the rest are counted.
MAX_WARNINGS = 20
#: Most answers files graded in one call (a class, not a file system).
MAX_SHEETS = 5000
#: Folders above an answers file searched for manifest.json when --key is left out.
KEY_SEARCH_DEPTH = 3


# -- one sheet --------------------------------------------------------------------------------------

def _sheet_answers(answers: Any, key: Key, answers_path: str) -> tuple[str | None, str | None, dict]:
    """(variant id, student, {problem id: {name: value}}) of an answers document of either shape."""
    if not isinstance(answers, dict):
        raise BadValueError(f'{answers_path} must be a JSON object: {{"<problem id>": {{"<answer name>": value}}}}, '
                            f"not {_type_name(answers)}; start from the answers.json that generate wrote")
    variant = student = None
    if "answers" in answers and set(answers) <= {"set", "variant", "student", "answers"}:  # the sheet's shape
        variant, student, body = answers.get("variant"), answers.get("student"), answers["answers"]
        sheet_set, key_set = answers.get("set"), key.raw.get("set_id")
        if sheet_set is not None and key_set is not None and sheet_set != key_set:
            shown = sheet_set if isinstance(sheet_set, str) and sheet_set.isprintable() else repr(sheet_set)
            raise BadValueError(f"{answers_path} is a sheet of set {shown[:40]!r}, but the key is set {key_set!r}; "
                                "grade it with its own set's manifest.json")
        if variant is not None and not isinstance(variant, str):
            raise BadValueError(f"{answers_path}: 'variant' must be text, not {_type_name(variant)}")
        if student is not None and not isinstance(student, str):
            raise BadValueError(f"{answers_path}: 'student' must be text or null, not {_type_name(student)}")
        if not isinstance(body, dict):
            raise BadValueError(f"{answers_path}: 'answers' must be an object of problem id -> answers, "
                                f"not {_type_name(body)}")
    else:
        body = answers
    if key.plain:
        return None, student, body
    if variant is None:
        if len(key.variants) == 1:
            variant = next(iter(key.variants))
        else:
            raise BadValueError(f"{answers_path} does not say which variant it answers (no 'variant'); start "
                                "from the answers.json of the student's sheet")
    if variant not in key.variants:
        from ..errors import UnknownNameError

        raise UnknownNameError("variant", variant, sorted(key.variants),
                               hint=f"{answers_path} names a variant the manifest does not have")
    return variant, student if student is not None else key.students.get(variant), body


def grade(answers: Any, key: Any, key_path: str = "manifest",
          answers_path: str = "the answers file") -> tuple[Fraction, list[Graded], list[str]]:
    """Grade ``answers`` against ``key``: the score (right / asked), one line per answer, warnings.

    ``key`` is a parsed manifest or a :class:`Key`. A manifest that does not have the shape generate
    writes is a :class:`BadValueError` naming the field; an answer that cannot be read is graded
    ``unreadable`` with the reason, and the others are still graded.
    """
    sheet = grade_sheet(answers, key if isinstance(key, Key) else load_key(key, key_path), answers_path)
    return sheet.score, list(sheet.graded), list(sheet.warnings)


@dataclass(frozen=True)
class Sheet:
    """One student's graded sheet (or, with ``error``, a file that could not be graded)."""

    file: str
    student: str | None
    variant: str | None
    graded: tuple[Graded, ...] = ()
    warnings: tuple[str, ...] = ()
    error: str | None = None
    points: Mapping[str, int] | None = None  # problem id -> the sheet's points, when the set was given points

    @property
    def right(self) -> int:
        return sum(g.verdict == "right" for g in self.graded)

    def earned(self, g: Graded) -> Fraction | None:
        """The points one answer earns: its problem's points shared equally by the problem's answers."""
        if self.points is None:
            return None
        share = Fraction(self.points[g.problem], sum(x.problem == g.problem for x in self.graded))
        return share if g.verdict == "right" else Fraction(0)

    @property
    def earned_points(self) -> Fraction | None:
        return None if self.points is None else sum((self.earned(g) for g in self.graded), Fraction(0))

    def printed_points(self, places: int = 6) -> tuple[list[Fraction], Fraction] | None:
        """Each answer's earned points and their total, to ``places`` decimals, rounded so that the answers'
        printed points add up to the printed total exactly (largest remainders: 10 points shared by three
        right answers print as 3.333334, 3.333333 and 3.333333, total 10, never 9.999999)."""
        if self.points is None:
            return None
        unit = Fraction(1, 10 ** places)
        exact = [self.earned(g) for g in self.graded]
        total = round(sum(exact, Fraction(0)) / unit)  # in units; round() of a Fraction: half to even
        floors = [e // unit for e in exact]
        extra = int(total - sum(floors))
        order = sorted(range(len(exact)), key=lambda i: (-(exact[i] / unit - floors[i]), i))
        cells = [Fraction(f) for f in floors]
        for i in order[:max(extra, 0)]:
            cells[i] += 1
        return [c * unit for c in cells], Fraction(total) * unit

    @property
    def possible_points(self) -> int | None:
        return None if self.points is None else sum(self.points.values())

    @property
    def score(self) -> Fraction:
        """Points earned over the points on the sheet when it has points, else right answers over answers."""
        if self.points is not None:
            return self.earned_points / self.possible_points if self.possible_points else Fraction(0)
        return Fraction(self.right, len(self.graded)) if self.graded else Fraction(0)

    def as_dict(self) -> dict:
        out = {"file": self.file, "student": self.student, "variant": self.variant, "score": float(self.score),
               "right": self.right, "total": len(self.graded), "error": self.error,
               "answers": [g.as_dict() for g in self.graded], "warnings": list(self.warnings)}
        if self.points is not None:
            out.update(points=float(self.earned_points), possible_points=self.possible_points)
        return out


def grade_sheet(answers: Any, key: Key, answers_path: str = "the answers file", file: str = "",
                folder: str | os.PathLike | None = None) -> Sheet:
    """One sheet graded; a hands-on problem's ``"code"`` (a path inside ``folder``, the sheet's, or the code
    itself) is run in the sandbox (see :mod:`.coderun.sheet`)."""
    from .coderun.sheet import CODE_ANSWER, grade_code_answer, task_of

    variant, student, body = _sheet_answers(answers, key, answers_path)
    problems = key.variants[variant]
    known = {p.id for p in problems}
    warnings = [f"answers for unknown problem {_shown(pid)} were ignored" for pid in body if pid not in known]
    out: list[Graded] = []
    for p in problems:
        mine = body.get(p.id, {})
        if mine is None:
            mine = {}
        if not isinstance(mine, dict):
            warnings.append(f"answers for {p.id!r} must be an object of answer name -> value")
            mine = {}
        handson = task_of(p.raw) is not None
        names = {a.name for a in p.answers} | ({CODE_ANSWER} if handson else set())
        warnings += [f"{p.id}: unknown answer {_shown(n)} was ignored" for n in mine if n not in names]
        out.extend(grade_answer(p, a, mine.get(a.name)) for a in p.answers)
        if handson:
            out.append(grade_code_answer(p, mine.get(CODE_ANSWER), folder))
    if len(warnings) > MAX_WARNINGS:
        warnings = warnings[:MAX_WARNINGS] + [f"... and {len(warnings) - MAX_WARNINGS} more warnings"]
    points = {p.id: p.points for p in problems} if all(p.points is not None for p in problems) else None
    return Sheet(file, student, variant, tuple(out), tuple(warnings), points=points)


def grade_files(answers_path: str | Path, key_path: str | Path):
    """Read both files (bounded, see :mod:`scalemath.files`) and :func:`grade`."""
    key = load_json(key_path, "manifest")
    answers = load_json(answers_path, "answers file")
    return grade(answers, key, file_label(key_path), f"answers file {file_label(answers_path)}")


# -- a class: a folder of answers files -----------------------------------------------------------------

def find_key(path: Path) -> Path:
    """The manifest.json next to ``path`` (a folder or an answers file) or in one of the
    :data:`KEY_SEARCH_DEPTH` folders above it."""
    start = path if path.is_dir() else path.parent
    for folder in [start, *list(start.absolute().parents)[:KEY_SEARCH_DEPTH]]:
        candidate = folder / "manifest.json"
        if candidate.is_file():
            return candidate
    raise BadValueError(f"no manifest.json in {file_label(start)} or the {KEY_SEARCH_DEPTH} folders above it; "
                        "pass the set's manifest with --key")


def answer_files(folder: Path) -> list[Path]:
    """Every ``answers.json`` under ``folder`` (the variants layout ``sheets/<id>/answers.json``), or, if
    there is none, every other ``*.json`` directly in it (a flat folder of one file per student).
    Symbolic links to folders are not followed; at most :data:`MAX_SHEETS` files."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / f for f in sorted(files) if f == "answers.json"]
        if len(found) > MAX_SHEETS:
            raise BadValueError(f"{file_label(folder)} holds more than {MAX_SHEETS} answers files; grade a class "
                                "folder, not a whole disk")
    if not found:
        found = sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.name != "manifest.json"
                       and not p.name.startswith(".") and p.is_file())
    if len(found) > MAX_SHEETS:
        raise BadValueError(f"{file_label(folder)} holds more than {MAX_SHEETS} answers files")
    if not found:
        raise BadValueError(f"{file_label(folder)} holds no answers.json and no other .json file to grade")
    return found


def grade_path(path: str | Path, key_path: str | Path | None = None) -> tuple[Key, list[Sheet]]:
    """Grade one answers file or every answers file under a folder (see :func:`answer_files`).

    The key is ``key_path`` or the manifest found by :func:`find_key`. A broken key is an error;
    a broken answers file in a folder becomes a :class:`Sheet` with ``error`` and the others are
    still graded (a single file that is broken raises, as before).
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise BadValueError(f"cannot read answers file {file_label(path)}: No such file or folder (check the path)")
    key_file = Path(key_path) if key_path is not None else find_key(path)
    key = load_key(load_json(key_file, "manifest"), file_label(key_file))
    if not path.is_dir():
        answers = load_json(path, "answers file")
        return key, [grade_sheet(answers, key, f"answers file {file_label(path)}", file_label(path), path.parent)]
    sheets = []
    for f in answer_files(path):
        label = file_label(f.relative_to(path)) if f.is_relative_to(path) else file_label(f)
        try:
            answers = load_json(f, "answers file")
            sheet = grade_sheet(answers, key, f"answers file {label}", label, f.parent)
        except ScalemathError as exc:
            sheets.append(Sheet(label, None, None, error=str(exc)))
            continue
        if sheet.student is None:  # a flat folder: the file's stem; the variants layout: the sheet folder
            stem = f.parent.name if f.name == "answers.json" and f.parent != path else f.stem
            sheet = dataclasses.replace(sheet, student=stem)
        sheets.append(sheet)
    return key, sheets


def blank_answers(problems, set_id: str | None = None, variant: str | None = None, student: str | None = None) -> str:
    """The answers file to fill in: every problem id and answer name, each set to null, under the set's id
    (which the grader compares with the key's) and, on a variant's sheet, the variant and its student."""
    body = {p.id: {a.name: None for a in p.answers} | ({"code": None} if p.generator.startswith("handson_") else {})
            for p in problems}
    if set_id is None and variant is None:
        doc = body
    else:
        doc = {"set": set_id, **({"variant": variant, "student": student} if variant is not None else {}),
               "answers": body}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
