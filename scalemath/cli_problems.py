"""``scalemath problems``: list the generators, generate sets (grading lives in cli_grading)."""

from __future__ import annotations

from pathlib import Path

import click

from .cli_common import WholeNumber, friendly


@click.group("problems")
def problems_group():
    """Generate randomized problem sets with checked, worked solutions."""


@problems_group.command("list")
@friendly
def problems_list():
    """Every generator, by topic."""
    from .problems.registry import TOPICS, generators

    for topic, about in TOPICS.items():
        click.echo(f"{topic}: {about}")
        for g in generators().values():
            if g.topic == topic:
                click.echo(f"  {g.name:<24} {g.title}  ({g.source})")


@problems_group.command("generate")
@click.option("--topic", "topics", multiple=True, help="roofline, tpu, sharding, gpu, transformer, training, inference (repeatable; default all)")
@click.option("--n", "n", type=WholeNumber(1, 1000), help="number of problems (default: one per generator)")
@click.option("--seed", type=WholeNumber(0, 2**63 - 1), default=0, show_default=True,
              help="the same seed gives byte-identical files")
@click.option("--format", "formats", default="md,tex,html,json", show_default=True,
              help="comma-separated: md, tex, html, json, pdf (pdf needs pdflatex)")
@click.option("--out", type=click.Path(), help="folder to write (default: output/<topics>-seed<S>-n<N>)")
@click.option("--force", is_flag=True, help="replace the folder if it exists")
@friendly
def problems_generate(topics, n, seed, formats, out, force):
    """Write a problem sheet, an answer key with worked solutions and a JSON manifest."""
    from .problems import sets

    fmts = [f.strip() for f in formats.split(",") if f.strip()]
    if out is not None and (not out.strip() or not out.isprintable()):
        from .parsing import shorten

        raise click.BadParameter(f"{shorten(out)} is not a folder name (it is empty or has a control character such "
                                 "as a newline)", param_hint="--out")
    pset = sets.build_set(topics, n, seed)
    folder = Path(out) if out is not None else Path("output") / sets.default_folder_name(pset)
    files = sets.write_set(pset, folder, fmts, force)
    click.echo(f"wrote {len(pset.problems)} problems (seed {seed}) to {folder}/")
    for f in files:
        click.echo(f"  {f.name}")


from .cli_grading import problems_export, problems_grade  # noqa: E402  (registered on the group below)

problems_group.add_command(problems_grade)
problems_group.add_command(problems_export)
