"""``scalemath problems grade``: answers against a set's manifest."""

from __future__ import annotations

import json
import sys

import click

from .cli_common import Choice, _dumps, friendly


@click.command("grade")
@click.argument("answers", type=click.Path())
@click.option("--key", required=True, type=click.Path(), help="the set's manifest.json")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def problems_grade(answers, key, fmt):
    """Grade ANSWERS (JSON: {problem id: {answer name: value}}) against a set's manifest.

    Exit code 0 when every answer is right, 1 otherwise, 2 for bad input.
    """
    from .problems.grading import grade_files

    score, graded, warnings = grade_files(answers, key)
    right = sum(g.verdict == "right" for g in graded)
    if fmt == "json":
        click.echo(_dumps({"score": float(score), "right": right, "total": len(graded),
                               "answers": [g.as_dict() for g in graded], "warnings": warnings}, indent=2,
                              ensure_ascii=False))
    else:
        from . import formatting

        for g in graded:
            line = f"{g.verdict:<10} {g.problem} {g.answer}"
            if g.verdict != "right":
                line += f": expected {formatting.with_unit(g.expected, g.unit)}"
                if g.given is not None:
                    given = g.given if isinstance(g.given, str) else json.dumps(g.given)
                    given = "".join(c if c.isprintable() else "?" for c in " ".join(given.split()))  # no escapes
                    line += f", given {given if len(given) <= 60 else given[:57] + '...'}"
            click.echo(line)
            if g.diagnosis:
                click.echo(f"           {g.diagnosis}")
        for w in warnings:
            click.echo(f"warning: {w}")
        click.echo(f"score: {right}/{len(graded)} = {formatting.decimal(100 * score, 3)}%")
    sys.exit(0 if right == len(graded) else 1)
