"""``scalemath problems grade`` (answers against a set's manifest) and ``problems export`` (LMS files)."""

from __future__ import annotations

import csv
import io
import json
import sys

import click

from .common import Choice, Command, _dumps, friendly

#: Columns of ``grade --format csv``: one row per student and question.
CSV_COLUMNS = ("student", "variant", "file", "problem", "answer", "verdict", "given", "expected", "expected_value",
               "unit", "rel_error", "diagnosis", "note", "points")


def _score_text(s) -> str:
    """``7.5/80 points = 9.38%`` for a set with points, else ``3/23 = 13%`` (right answers)."""
    from ..values import printing as formatting

    percent = formatting.decimal(100 * s.score, 3)
    if s.points is not None:
        return f"{formatting.decimal(s.earned_points, 4)}/{s.possible_points} points = {percent}%"
    return f"{s.right}/{len(s.graded)} = {percent}%"


def _points_cell(points) -> str:
    """A CSV cell of points rounded by ``Sheet.printed_points`` (a Fraction over a power of ten): ``2.5``,
    ``10.0``, ``3.333334``, written in full so a spreadsheet's SUM of a student's rows is the total row."""
    from decimal import Decimal

    text = format((Decimal(points.numerator) / Decimal(points.denominator)).normalize(), "f")
    return text if "." in text else text + ".0"


def _printable(text: str, limit: int = 60) -> str:
    """``text`` on one line, control characters (terminal escapes) as '?', at most ``limit`` characters."""
    text = "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _cell(value) -> str:
    """A CSV cell that a spreadsheet shows as text: no formula (=, +, -, @ first), no control characters."""
    text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
    text = "".join(c if c.isprintable() or c == " " else "?" for c in text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@click.command("grade", cls=Command)
@click.argument("path", type=click.Path())
@click.option("--key", type=click.Path(), help="the set's manifest.json (default: the manifest.json beside PATH "
              "or in a folder above it)")
@click.option("--format", "fmt", type=Choice(["text", "json", "csv"]), default="text", show_default=True,
              help="csv: one row per student and answer, then the student's total row (verdict 'total'; its "
                   "points are the sum of the student's rows), columns " + ", ".join(CSV_COLUMNS))
@friendly
def problems_grade(path, key, fmt):
    """Grade PATH against a set's manifest: one answers file, or a folder of them (every answers.json
    under it, as in sheets/<id>/answers.json, or a flat folder of one .json file per student).
    A PATH ending in .py is a hands-on submission, graded against --key task.json (see 'problems handson').

    Exit code 0 when every answer is right, 1 otherwise, 2 for bad input (in a folder, a broken
    answers file is reported, the others are still graded, and the exit code is 2).
    """
    from pathlib import Path

    from ..problems.grading import grade_path

    if str(path).endswith(".py"):  # a hands-on submission, graded against its task.json by running it
        from .handson import grade_submission

        return grade_submission(path, key, "json" if fmt == "json" else "text")
    _, sheets = grade_path(path, key)
    folder = Path(path).is_dir()
    if fmt == "json":
        if folder:
            right = sum(s.right for s in sheets)
            total = sum(len(s.graded) for s in sheets)
            click.echo(_dumps({"students": [s.as_dict() for s in sheets], "right": right, "total": total,
                               "score": right / total if total else 0.0}, indent=2, ensure_ascii=False))
        else:
            s = sheets[0]
            doc = s.as_dict()
            click.echo(_dumps({k: doc[k] for k in ("score", "right", "total", "points", "possible_points", "student",
                                                   "variant", "answers", "warnings") if k in doc},
                              indent=2, ensure_ascii=False))
    elif fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for s in sheets:
            if s.error:
                writer.writerow([_cell(x) for x in (s.student, s.variant, s.file, "", "", "error", "", "", "", "", "",
                                                    s.error, "", "")])
                continue
            # each answer's points and the total rounded together: the answers' cells add up to the total's
            cells, total = s.printed_points() or ([None] * len(s.graded), None)
            for g, earned in zip(s.graded, cells):
                writer.writerow([_cell(x) for x in (
                    s.student, s.variant, s.file, g.problem, g.answer, g.verdict, g.given, g.shown,
                    float(g.expected) if g.expected.is_number else "", g.unit, g.rel_error, g.diagnosis, g.note,
                    _points_cell(earned) if earned is not None else None)])
            # the student's total on a row of its own: verdict "total", the score in "given"
            writer.writerow([_cell(x) for x in (s.student, s.variant, s.file, "", "", "total", _score_text(s), "",
                                                float(s.score), "", "", "", "",
                                                _points_cell(total) if total is not None else None)])
        click.echo(out.getvalue(), nl=False)
    else:
        _text(sheets, folder)
    for s in sheets:
        if s.error:
            click.echo(f"error: {_printable(s.error, 400)}", err=True)
    if any(s.error for s in sheets):
        sys.exit(2)
    sys.exit(0 if all(s.right == len(s.graded) for s in sheets) else 1)


def _text(sheets, folder: bool) -> None:
    from ..values import printing as formatting

    for s in sheets:
        if folder:
            who = s.student or s.file
            head = f"== {_printable(who)}" + (f" ({_printable(s.variant)})" if s.variant and s.variant != who else "")
            if s.error:
                click.echo(f"{head}: not graded")
                continue
            click.echo(f"{head}: {_score_text(s)}")
        for g in s.graded:
            if folder and g.verdict == "right" and not g.note:
                continue  # a class report lists what each student missed
            line = f"{g.verdict:<10} {g.problem} {g.answer}"
            if g.verdict != "right":
                line += f": expected {g.shown}"
                if g.given is not None:
                    line += f", given {_printable(g.given if isinstance(g.given, str) else json.dumps(g.given))}"
            click.echo(line)
            if g.diagnosis:
                click.echo(f"           {g.diagnosis}")
            if g.note:
                click.echo(f"           accepted: {g.note}")
        for w in s.warnings:
            click.echo(f"warning: {w}")
        if not folder:
            click.echo(f"score: {_score_text(s)}")
    if folder:
        graded = [s for s in sheets if not s.error]
        right = sum(s.right for s in graded)
        total = sum(len(s.graded) for s in graded)
        if graded and all(s.points is not None for s in graded):  # a set with points: the class in points
            earned, possible = sum(s.earned_points for s in graded), sum(s.possible_points for s in graded)
            score = (f"; {formatting.decimal(earned, 4)}/{possible} points = "
                     f"{formatting.decimal(100 * earned / possible, 3)}%" if possible else "")
        else:
            score = f"; {right}/{total} = {formatting.decimal(100 * right / total, 3)}%" if total else ""
        answered = [s for s in graded if any(g.verdict != "missing" for g in s.graded)]
        blank = len(graded) - len(answered)
        click.echo(f"class: {len(graded)} sheets graded" + (f", {len(sheets) - len(graded)} not" if
                                                            len(graded) < len(sheets) else "")
                   + (f" ({blank} blank: no answer given)" if blank else "") + score)
        missed: dict[tuple[str, str], int] = {}
        for s in answered:  # a blank sheet misses everything alike: it would only tie every answer
            for g in s.graded:
                if g.verdict != "right":
                    missed[(g.problem, g.answer)] = missed.get((g.problem, g.answer), 0) + 1
        for (problem, answer), n in sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
            click.echo(f"  most missed: {problem} {answer} ({n} of the {len(answered)} answered sheets)")


@click.command("export", cls=Command)
@click.argument("manifest", type=click.Path())
@click.option("--format", "fmt", type=Choice(["moodle", "qti", "canvas", "prairielearn"]), required=True,
              help="moodle: Moodle XML; qti: an IMS QTI 2.1 content package (zip); canvas: a QTI 1.2 package "
                   "Canvas imports (zip); prairielearn: question folders")
@click.option("--out", type=click.Path(), required=True, help="the file (moodle, qti, canvas) or folder "
              "(prairielearn) to write")
@click.option("--force", is_flag=True, help="replace --out if scalemath wrote it")
@friendly
def problems_export(manifest, fmt, out, force):
    """Export a set's manifest (plain or with variants) to a learning-management system: every
    answer with its tolerance, units and the usual-slip feedback (Moodle, QTI and PrairieLearn per
    slipped value; Canvas lists the slips as its wrong-answer comment), every problem with its
    worked solution as the feedback shown after the attempt. A question is one problem of one
    variant, its stem written once, in every format. With variants, each student gets whole
    variants: Moodle, one Cloze question per problem and variant in the problem's category (a quiz
    draws one per category); Canvas and QTI, one quiz (test) per variant, to assign to its student;
    PrairieLearn, one folder per problem whose variants it draws."""
    from pathlib import Path

    from ..problems.lms import export

    written = export(Path(manifest), fmt, Path(out), force)
    folders = f" in {written.folders} folder{'s' if written.folders != 1 else ''}" if written.folders else ""
    click.echo(f"wrote {written.questions} question{'s' if written.questions != 1 else ''} ({written.variants} "
               f"variant{'s' if written.variants != 1 else ''}){folders} to {out}, each with its worked solution")
    if written.in_cloze:
        click.echo(f"{written.in_cloze} formula answer{'s are' if written.in_cloze != 1 else ' is'} short-answer "
                   "fields of Cloze questions that take scalemath's form only: check other forms by hand, or collect "
                   "answers.json and run 'scalemath problems grade'")
    if written.hand_graded > written.in_cloze:
        n = written.hand_graded - written.in_cloze
        what = {"moodle": "essay questions (Moodle has no symbolic question type in core)",
                "qti": "extended-text items (QTI cannot test two formulas for equivalence)",
                "canvas": "essay questions (Canvas has no symbolic question type)"}[fmt]
        click.echo(f"{n} formula answer{'s are' if n != 1 else ' is'} {what}, "
                   "graded by hand with the expected form in the grader's information; or collect answers.json "
                   "and run 'scalemath problems grade'")
