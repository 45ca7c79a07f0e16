"""What :mod:`scalemath.api`'s ``plan``, ``serve``, ``generate``, ``grade`` and ``hlo`` return: reports with an
HTML table for Jupyter (``_repr_html_``), their text, Markdown, LaTeX and JSON forms, and figures shown inline
as SVG."""

from __future__ import annotations

import html
import io

from .results import StepResult, _float, _table

__all__ = ["PlanReport", "ServeReport", "GeneratedSet", "Grades", "HloReport", "Plot"]


class _Report:
    """A report dict with its text, Markdown, LaTeX and JSON forms (each module's own)."""

    _module = ""
    _title = ""

    def __init__(self, report: dict):
        self.report = report

    def _formats(self):
        import importlib

        return importlib.import_module(f"..search.{self._module}", __package__)

    def __str__(self) -> str:
        return self._formats().as_text(self.report)

    @property
    def markdown(self) -> str:
        return self._formats().as_markdown(self.report)

    @property
    def latex(self) -> str:
        return self._formats().as_latex(self.report)

    def as_json(self) -> dict:
        """What ``--format json`` prints, as a dict."""
        return self._formats().as_json(self.report)


class PlanReport(_Report):
    """:func:`scalemath.plan`'s search: ``.best`` (a configuration), ``.exact`` (its step time in seconds)."""

    _module = "plan_report"

    def __init__(self, report: dict, inputs: tuple = ()):
        super().__init__(report)
        self.inputs = inputs  # (model, chip, catalog, model catalog): what the figure searches again

    @property
    def best(self):
        return self.report["best"]

    @property
    def exact(self):
        best = self.best
        return None if best is None else best.step.value

    @property
    def value(self) -> float | None:
        return None if self.exact is None else _float(self.exact)

    unit = "s"

    @property
    def steps(self) -> tuple[StepResult, ...]:
        best = self.best
        return () if best is None else tuple(StepResult(s.step.label, s.step.expr, s.value, s.step.why, s.step.unit)
                                             for s in best.step.steps)

    def figure(self) -> "Plot":
        """The search as heat maps over TP and FSDP (``plan --plot``), shown inline."""
        from ..plots import plan

        model, chip, catalog, model_catalog = self.inputs
        return Plot(plan.data(model, chip, self.report["opts"], "tp", "fsdp", catalog, model_catalog, self.report))

    def __repr__(self) -> str:
        from ..values import printing as formatting

        opts = self.report["opts"]
        best = "nothing fits" if self.best is None else f"step {formatting.with_unit(self.exact, 's')}"
        return f"<plan {self.report['model']} on {opts.chips} x {self.report['chip']}: {best}>"

    def _repr_html_(self) -> str:
        from ..values import printing as formatting
        from ..search.plan import describe

        r = self.report
        opts = r["opts"]
        rows = [[html.escape(c.name), html.escape(describe(c)),
                 html.escape(formatting.with_unit(c.memory.value, "byte")),
                 html.escape(formatting.with_unit(c.step.value, "s")), html.escape(c.why or "the best")]
                for c in r["families"]]
        caption = (f"<b>plan</b>: {html.escape(r['model'])} on {opts.chips} x {html.escape(r['chip'])}, batch "
                   f"{opts.batch} tokens, {html.escape(opts.dtype)}")
        return _table(["mix", "configuration", "memory per chip", "step", "why not"], rows, caption)


class ServeReport(_Report):
    """:func:`scalemath.serve`'s design: ``.exact`` (the step time in seconds), ``.report`` (every field)."""

    _module = "serve"
    unit = "s"

    @property
    def exact(self):
        return self.report["step"].value

    @property
    def value(self) -> float:
        return _float(self.exact)

    @property
    def steps(self) -> tuple[StepResult, ...]:
        return tuple(StepResult(s.step.label, s.step.expr, s.value, s.step.why, s.step.unit)
                     for s in self.report["step"].steps)

    @property
    def warnings(self) -> list[str]:
        return list(self.report["warnings"])

    def figure(self) -> "Plot":
        """The latency-throughput Pareto front (``serve --plot``), shown inline."""
        from ..plots import pareto

        return Plot(pareto.data(self.report))

    def __repr__(self) -> str:
        from ..values import printing as formatting

        r = self.report
        return (f"<serve {r['model']} on {r['chip']} {r['topology']}: {r['layout']}, batch {r['batch']}, "
                f"step {formatting.with_unit(self.exact, 's')}>")

    def _repr_html_(self) -> str:
        from ..search.serve_report import _front_rows, _table as rows_of

        r = self.report
        out = [f"<p><b>serve</b>: {html.escape(line)}</p>" for line in str(self).splitlines()[:1]]
        for title, rows, why in (("best and runners-up", [_row_of(r)] + list(r["runners_up"]), True),
                                 ("Pareto front", _front_rows(r), False)):
            if rows:
                head, body = rows_of(rows, why)
                out.append(_table(head, [[html.escape(c) for c in row] for row in body], title))
        return "".join(out)


def _row_of(r: dict) -> dict:
    """The chosen design as a row of the runners-up table."""
    return {"topology": r["topology"], "layout": r["layout"], "weights": r["weights"], "kv_dtype": r["kv_dtype"],
            "batch": r["batch"], "step_time": float(r["step"].value),
            "tokens_per_s_per_chip": float(r["throughput_per_chip"]), "why": "the best"}


class GeneratedSet:
    """A problem set (``.set``, the :class:`~scalemath.problems.sets.ProblemSet`) and the files written;
    ``.unchanged`` when the folder already held exactly this set and nothing was written."""

    def __init__(self, pset, files=()):
        self.set, self.files = pset, list(files)
        self.unchanged = bool(getattr(files, "unchanged", False))

    @property
    def problems(self):
        return self.set.all_problems

    def __repr__(self) -> str:
        return (f"<problem set {self.set.set_id}: {len(self.problems)} problems, seed {self.set.seed}"
                f"{', ' + str(len(self.files)) + ' files' if self.files else ''}>")

    def _repr_html_(self) -> str:
        rows = [[html.escape(p.id), html.escape(p.topic), html.escape(p.title),
                 html.escape(", ".join(a.name for a in p.answers))] for p in self.problems]
        return _table(["id", "topic", "title", "answers"], rows, html.escape(self.set.title))


class Grades:
    """Graded sheets (``.sheets``): ``.score`` over all of them, one row per answer in HTML."""

    def __init__(self, sheets):
        self.sheets = list(sheets)

    @property
    def right(self) -> int:
        return sum(s.right for s in self.sheets)

    @property
    def total(self) -> int:
        return sum(len(s.graded) for s in self.sheets)

    @property
    def score(self):
        from fractions import Fraction

        return Fraction(self.right, self.total) if self.total else Fraction(0)

    def __repr__(self) -> str:
        return f"<grades: {self.right}/{self.total} right over {len(self.sheets)} sheet(s)>"

    def _repr_html_(self) -> str:
        rows = [[html.escape(str(s.student or s.variant or s.file)), html.escape(g.problem), html.escape(g.answer),
                 html.escape(g.verdict), html.escape(str(g.given)), html.escape(g.shown)]
                for s in self.sheets for g in s.graded]
        return _table(["student", "problem", "answer", "verdict", "given", "expected"], rows,
                      f"{self.right}/{self.total} right")


class HloReport:
    """:func:`scalemath.hlo`'s analysis of an HLO module."""

    def __init__(self, report: dict, top: int | None = 10):
        self.report, self.top = report, top

    def __str__(self) -> str:
        from ..xla.report import as_text

        return as_text(self.report, self.top)

    def as_json(self) -> dict:
        from ..xla.report import as_json

        return as_json(self.report)

    def __repr__(self) -> str:
        r = self.report
        on = f" on {r['chip']}" if r.get("chip") else ""
        return f"<hlo module {r['module']}: {len(r['_ops'])} ops, {r['devices']} devices{on}>"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


class ShardReport:
    """:func:`scalemath.shard`'s cases, collectives and plans (or one array's layout and resharding)."""

    def __init__(self, report: dict):
        self.report = report

    def __str__(self) -> str:
        from ..reports.shard import shard_text

        return shard_text(self.report)

    def as_json(self) -> dict:
        from ..reports.shard import as_json

        return as_json(self.report)

    def __repr__(self) -> str:
        return f"<shard {self.report['pattern']}>"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


class Plot:
    """A figure of :mod:`scalemath.plots`, shown inline as SVG; ``.figure`` is the plot's data."""

    def __init__(self, figure):
        self.figure = figure

    def svg(self) -> str:
        from ..plots.common import _pyplot, render

        fig = render(self.figure)
        try:
            out = io.StringIO()
            fig.savefig(out, format="svg")
            return out.getvalue()
        finally:
            _pyplot().close(fig)

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        return f"<plot: {self.figure.title}>"
