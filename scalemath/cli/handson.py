"""``scalemath problems handson`` (write a hands-on task's statement, stub and task file) and the grading of a
submitted ``.py`` file that ``problems grade`` hands over here."""

from __future__ import annotations

import sys

import click

from .common import Choice, Command, WholeNumber, _dumps, friendly

HANDSON_TASKS = ("collective_matmul", "moe_all_to_all", "layer_sharding")


@click.command("handson", cls=Command)
@click.argument("task", type=Choice([*HANDSON_TASKS, *(f"handson_{t}" for t in HANDSON_TASKS)]))
@click.option("--seed", type=WholeNumber(0, 2**31 - 1), default=0, show_default=True,
              help="draws the sizes and the inputs (give each student their own to vary them)")
@click.option("--out", type=click.Path(), required=True,
              help="a folder for TASK.md, stub.py and task.json (made if missing; files in it are never replaced)")
@click.option("--k", "k", type=WholeNumber(1, 2), default=None,
              help="moe_all_to_all: experts per token, 1 or 2 (top-k routing, results averaged); drawn from the "
                   "seed when not given")
@friendly
def problems_handson(task, seed, out, k):
    """Write a hands-on task: TASK.md (the statement), stub.py (the function to fill in) and task.json (what the
    grader needs). A student's file is graded with 'scalemath problems grade FILE.py --key task.json'. TASK may be
    spelled as its generator is, handson_collective_matmul."""
    task = task.removeprefix("handson_")
    import json
    import os

    from ..errors import BadValueError
    from ..files import write_file
    from ..problems.coderun.statements import draw_task, statement, stub
    from ..problems.coderun.tasks import make_task

    chosen = draw_task(task, seed)
    if k is not None:
        if "k" not in chosen.params:
            raise BadValueError(f"--k chooses the experts per token of moe_all_to_all; {task} has no k")
        chosen = make_task(task, {**chosen.params, "k": k}, seed)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise BadValueError(f"cannot make the folder {out}: {exc.strerror or exc}") from None
    files = {"TASK.md": statement(chosen), "stub.py": stub(chosen),
             "task.json": json.dumps(chosen.as_json(), indent=2) + "\n"}
    present = [name for name in files if os.path.lexists(os.path.join(out, name))]
    if present:
        raise BadValueError(f"{out} already holds {', '.join(present)}; choose an empty folder (nothing was written)")
    for name, text in files.items():
        write_file(os.path.join(out, name), text.encode(), what=name)
    click.echo(f"wrote {', '.join(files)} in {out}: {task} with {', '.join(f'{k}={v}' for k, v in chosen.params.items())}")


def grade_submission(path, key, fmt) -> None:
    """``problems grade FILE.py --key task.json``: run FILE.py sandboxed for the task and print the verdict.
    Exit 0 when right, 1 otherwise, 2 when the task or the file cannot be read."""
    from ..errors import BadValueError
    from ..problems.answer_key import load_json
    from ..problems.coderun import grade_code, task_from_json

    import os

    beside = os.path.join(os.path.dirname(os.fspath(path)) or ".", "task.json")
    if key is None and os.path.isfile(beside):
        key = beside
    if key is None:
        raise BadValueError("a .py submission is graded against its task: pass --key task.json (written by "
                            "'scalemath problems handson'), or put it beside the file")
    task = task_from_json(load_json(key, "task file"), f"task file {key}")
    grade = grade_code(task, path)
    if fmt == "json":
        click.echo(_dumps({"task": task.as_json(), **grade.as_dict()}, indent=2, ensure_ascii=False))
    else:
        click.echo(f"{task.name} (seed {task.seed}): {grade.verdict}")
        click.echo(f"  {grade.message}")
        if grade.collectives:
            click.echo("  collectives in the compiled HLO:")
            for c in grade.collectives[:20]:
                click.echo(f"    {c}")
        click.echo("  sandbox: " + "; ".join(grade.protections) if grade.protections else "  sandbox: (no report)")
    sys.exit(0 if grade.verdict == "right" else 1)
