"""The ``--plot FILE`` hooks of ``plan``, ``serve`` and ``table``, and the saving that ``scalemath plot`` shares.

matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import click


def save(figure, out, force, option="--out"):
    """Write ``figure`` to ``out`` and say so (on stderr when it is the --plot of a command with its own output)."""
    from ..plots.output import save as write_figure

    path = write_figure(figure, out, force, option)
    click.echo(f"wrote {click.format_filename(str(path))}", err=option != "--out")


def check_plot(path, force, option="--plot"):
    """Refuse a bad --plot file name or an existing file before any long work."""
    if path is not None:
        from ..plots.output import check_target

        check_target(path, force, option)


def plot_plan(path, force, model, chip, opts, report, catalog, model_catalog):
    """``plan --plot``: the search as heat maps over TP and FSDP, plan's best outlined."""
    from ..plots import plan

    save(plan.data(model, chip, opts, "tp", "fsdp", catalog, model_catalog, report), path, force, "--plot")


def plot_serve(path, force, report):
    """``serve --plot``: the latency-throughput Pareto front."""
    from ..plots import pareto

    save(pareto.data(report), path, force, "--plot")


def plot_table(path, force, q, contexts, given, skip_missing):
    """``table --plot``: one bar per chip."""
    from ..plots import table

    save(table.data(q, contexts, given, skip_missing), path, force, "--plot")
