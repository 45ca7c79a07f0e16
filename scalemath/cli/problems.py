"""``scalemath problems``: list the generators, generate sets (grading lives in grading.py)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import Group, WholeNumber, check_topic, complete_generator, complete_problem_topic, friendly


@click.group("problems", cls=Group)
def problems_group():
    """Generate randomized problem sets with checked, worked solutions."""


@problems_group.command("list")
@friendly
def problems_list():
    """Every generator, by topic."""
    from ..problems.registry import TOPICS, index

    for topic, about in TOPICS.items():
        click.echo(f"{topic}: {about}")
        for name, (_, gen_topic, title, source) in index().items():
            if gen_topic == topic:
                click.echo(f"  {name:<24} {title}  ({source})")


@problems_group.command("generate")
@click.option("--topic", "topics", multiple=True, help="roofline, tpu, sharding, gpu, transformer, training, inference "
              "(repeatable, or a comma list: --topic roofline,gpu; default all)", shell_complete=complete_problem_topic)
@click.option("--generator", "generator_names", multiple=True, metavar="NAME",
              help="generators by name, as 'problems list' shows: a comma list or repeated (with --topic, both are "
                   "used)",
              shell_complete=complete_generator)
@click.option("--n", "n", type=WholeNumber(1, 1000), help="number of problems (default: one per generator)")
@click.option("--seed", type=WholeNumber(0, 2**63 - 1), default=0, show_default=True,
              help="the same seed gives byte-identical files (kept in manifest.json, never on the sheets)")
@click.option("--format", "formats", default="md,tex,html,json", show_default=True,
              help="comma-separated: md, tex, html, json, pdf (pdf needs pdflatex)")
@click.option("--out", type=click.Path(), help="folder to write (default: output/<topics>-seed<S>-n<N>)")
@click.option("--force", is_flag=True, help="replace the folder if it exists")
@click.option("--variants", type=WholeNumber(1, 500), help="N variants (v01, v02, ...): one sheet each, one key for all")
@click.option("--students", type=click.Path(dir_okay=False), metavar="ROSTER.csv",
              help="one variant per student of a CSV roster (header with an 'id' column, optional 'name')")
@click.option("--config", "config", type=click.Path(dir_okay=False), metavar="SHEET.toml",
              help="title, course, instructions, points, name_line, paper, on_paper from a TOML file (options "
                   "override it)")
@click.option("--title", help="the sheet's title (default: from the topics)")
@click.option("--course", help="a line under the title, e.g. the course and term")
@click.option("--instructions", help="a paragraph of instructions at the top of the sheet")
@click.option("--points", metavar="P[,P...]", help="points per question: one number for all, or one per question")
@click.option("--name-line/--no-name-line", "name_line", default=None, help="a line for the student's name and date")
@click.option("--paper", type=click.Choice(["letter", "a4"]), help="PDF paper size (default letter)")
@click.option("--on-paper/--digital", "on_paper", default=None,
              help="on paper: sheets to print and answer by hand (a box under each answer, lines to work on, no "
                   "answers.json on the sheet); digital (the default): answers typed into answers.json")
@click.option("--jobs", type=WholeNumber(1, 64), metavar="N",
              help="worker processes that make the problems (default: the CPUs available that other processes "
                   "leave idle, at most 8; 1 makes them in this process); the files are the same either way")
@friendly
def problems_generate(topics, generator_names, n, seed, formats, out, force, variants, students, config, title,
                      course, instructions, points, name_line, paper, on_paper, jobs):
    """Write a problem sheet, an answer key with worked solutions and a JSON manifest."""
    import sys

    from ..problems import parallel, sets, sheet as sheets

    fmts = [f.strip() for f in formats.split(",") if f.strip()]
    topics = tuple(t.strip() for text in topics for t in text.split(","))  # --topic a,b as --topic a --topic b
    if any(not t for t in topics):
        raise click.BadParameter("a topic name is empty; give names such as roofline or roofline,gpu",
                                 param_hint="--topic")
    from ..problems.registry import TOPICS

    for t in topics:
        check_topic(t, TOPICS, "scalemath problems list")
    generator_names = tuple(g.strip() for text in generator_names for g in text.split(","))  # as --topic a,b
    if any(not g for g in generator_names):
        raise click.BadParameter("a generator name is empty; give names such as critical_intensity or "
                                 "critical_intensity,dot_product", param_hint="--generator")
    if out is not None and (not out.strip() or not out.isprintable()):
        from ..values.parse import shorten

        raise click.BadParameter(f"{shorten(out)} is not a folder name (it is empty or has a control character such "
                                 "as a newline)", param_hint="--out")
    if variants is not None and students is not None:
        raise click.UsageError("give --variants or --students, not both")
    sheet = sheets.load_config(config) if config is not None else sheets.Sheet()
    sheet = sheet.merged(
        title=sheets.check_text(title, "--title") if title is not None else None,
        course=sheets.check_text(course, "--course") if course is not None else None,
        instructions=sheets.check_text(instructions, "--instructions", 4000) if instructions is not None else None,
        points=_points(points) if points is not None else None,
        name_line=name_line, paper=paper, on_paper=on_paper)
    roster = sheets.read_roster(students) if students is not None else None
    many = len(roster) if roster else (variants or 1)
    show = sys.stderr.isatty()

    def bar(length, label):
        return click.progressbar(length=length, label=label, file=sys.stderr) if show else _NoBar()

    with bar(sets.problem_count(topics, n, generator_names) * many, "drawing problems") as progress:
        pset = sets.build_set(topics, n, seed, generator_names=generator_names, variants=variants,
                              students=roster, progress=progress.update,
                              jobs=parallel.default_jobs() if jobs is None else jobs, formats=fmts)
    if sheet.points and len(sheet.points) > 1 and len(sheet.points) != pset.n:
        raise click.BadParameter(f"{len(sheet.points)} points given for {pset.n} questions; give one number for all "
                                 "or one per question", param_hint="--points")
    folder = Path(out) if out is not None else Path("output") / sets.default_folder_name(pset)
    with bar(sets.documents_to_write(pset, fmts), "writing") as progress:
        files = sets.write_set(pset, folder, fmts, force, sheet=sheet, progress=progress.update)
    problems = f"{pset.n} problem{'s' if pset.n != 1 else ''}"
    what = (f"{len(pset.variants)} variant{'s' if len(pset.variants) != 1 else ''} of {problems}"
            if pset.variants else problems)
    these = "these" if (len(pset.variants) if pset.variants else pset.n) != 1 else "this"
    for name, count in getattr(pset, "shared", ()):
        click.echo(f"warning: generator {name} makes only {count} different "
                   f"problem{'s' if count != 1 else ''} (different answers); some of the {len(pset.variants)} "
                   "students share one: ask for fewer variants, or leave it out with --topic/--generator", err=True)
    missing = sheets.untypeset_students(pset.variants) if {"tex", "pdf"} & set(fmts) else []
    if missing:
        shown = ", ".join(f"{name} ({sid})" for sid, name in missing[:10]) + (" ..." if len(missing) > 10 else "")
        click.echo(f"warning: {len(missing)} student {'name' if len(missing) == 1 else 'names'} cannot be "
                   f"typeset by pdflatex: {shown}; {sheets.UNTYPESET_HELP}", err=True)
    if getattr(files, "unchanged", False):
        click.echo(f"{folder}/ already holds {these} {what} (set {pset.set_id}, seed {seed}), unchanged; nothing written")
        return
    click.echo(f"wrote {what} (set {pset.set_id}, seed {seed}) to {folder}/")
    for line in _listing([f.relative_to(folder) for f in files]):
        click.echo(f"  {line}")
    if "json" not in fmts:
        click.echo("warning: no manifest.json and no answers.json (json is not in --format): the set cannot be "
                   "graded or exported" + ("" if sheet.on_paper else ", and its sheets ask for an answers.json")
                   + "; add json to --format", err=True)


def _listing(paths: list[Path]) -> list[str]:
    """The files written, one a line, except a figures folder's, which is one line with its count."""
    lines, counted = [], {}
    for path in paths:
        if path.parent.name == "figures":
            key = path.parent.as_posix() + "/"
            if key not in counted:
                lines.append(key)
            counted[key] = counted.get(key, 0) + 1
        else:
            lines.append(path.as_posix())
    return [f"{line} ({counted[line]} figure file{'s' if counted[line] != 1 else ''})" if line in counted else line
            for line in lines]


class _NoBar:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n):
        pass


def _points(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")]
    # ASCII digits only: int() would also read '٣' (Arabic-Indic), '３' (fullwidth), '1_0' and '+3'
    if not all(p.isascii() and p.isdigit() and len(p) <= 12 for p in parts):
        raise click.BadParameter(f"{text[:40]!r} is not a whole number or a comma-separated list of them "
                                 "(ASCII digits, e.g. 2 or 2,3,5)", param_hint="--points")
    values = tuple(int(p) for p in parts)
    if not values or len(values) > 1000 or any(not 0 <= v <= 1000 for v in values):
        raise click.BadParameter("points are whole numbers from 0 to 1000", param_hint="--points")
    return values


from .grading import problems_export, problems_grade  # noqa: E402  (registered on the group below)

problems_group.add_command(problems_grade)
problems_group.add_command(problems_export)

from .handson import problems_handson  # noqa: E402

problems_group.add_command(problems_handson)
