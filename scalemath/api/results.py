"""What :mod:`scalemath.api`'s ``derive``, ``solve`` and ``check`` return: objects that show themselves in Jupyter.

A derivation shows its steps as LaTeX (``_repr_latex_``) and as an HTML table with MathML
(``_repr_html_``, no JavaScript); the exact result stays reachable (``.exact``, a SymPy number or
expression; ``.value``, a float; ``.steps``). The reports of the other functions are in
:mod:`scalemath.api.reports`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Result", "StepResult", "Check"]


def _float(value) -> float | None:
    from ..values import printing as formatting

    return formatting.to_float(value) if getattr(value, "is_number", False) else None


def _table(head: list[str], rows: list[list[str]], caption: str = "") -> str:
    """An HTML table; cells are already HTML (escape text with html.escape before)."""
    cap = f"<caption style='text-align:left'>{caption}</caption>" if caption else ""
    th = "".join(f"<th style='text-align:left'>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='scalemath'>{cap}<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _mathml(tex: str) -> str:
    from ..problems.mathml import latex_to_mathml

    return latex_to_mathml(tex)


@dataclass(frozen=True)
class StepResult:
    """One step of a derivation: ``label = expr`` (symbolic), its value once numbers are in, and why."""

    label: str
    expr: Any
    exact: Any
    why: str
    unit: str

    @property
    def value(self) -> float | None:
        """The step's value as a float, or None while it still has symbols."""
        return _float(self.exact)


class Result:
    """A derived (or solved) quantity: ``.exact``, ``.value``, ``.unit``, ``.steps``, ``.latex``, ``.report``."""

    def __init__(self, report: dict):
        self.report = {k: v for k, v in report.items() if not k.startswith("_")}
        self._evaluated = report["_evaluated"]
        self._full = report

    @property
    def name(self) -> str:
        """The quantity's name (for a solve: ``QUANTITY = OTHER``)."""
        return self.report["quantity"]

    @property
    def unit(self) -> str:
        return self.report["unit"]

    @property
    def exact(self):
        """The result, exact: a SymPy Integer or Rational when every symbol has a value, else the expression."""
        return self._evaluated.value

    @property
    def value(self) -> float | None:
        """The result as a float (rounded only here), or None while it still has symbols."""
        return _float(self.exact)

    @property
    def expr(self):
        """The closed form before any value was substituted."""
        return self._evaluated.derivation.expr

    @property
    def steps(self) -> tuple[StepResult, ...]:
        return tuple(StepResult(s.step.label, s.step.expr, s.value, s.step.why, s.step.unit)
                     for s in self._evaluated.steps)

    @property
    def given(self) -> Mapping[str, Any]:
        """The values substituted, by symbol name."""
        return {s.name: v for s, v in self._evaluated.given.items()}

    @property
    def latex(self) -> str:
        """The derivation as an ``align*`` environment (what ``--format latex`` prints, without its comment)."""
        from ..reports.derive import as_latex

        return "\n".join(line for line in as_latex(self._full).splitlines() if not line.startswith("%"))

    def __str__(self) -> str:
        from ..reports.derive import as_text

        return as_text(self._full)

    def __repr__(self) -> str:
        from ..values import printing as formatting

        where = f" on {self.report['chip']}" if self.report.get("chip") else ""
        if self.value is None:
            return f"<{self.name}{where} = {self.exact} [{self.unit}]>"
        return (f"<{self.name}{where} = {formatting.with_unit(self.exact, self.unit)} "
                f"(exact {formatting.exact_text(self.exact)})>")

    def _repr_latex_(self) -> str:
        """The steps as display math (``aligned`` in ``$$``, which MathJax and KaTeX both render)."""
        body = self.latex.replace(r"\begin{align*}", r"\begin{aligned}").replace(r"\end{align*}", r"\end{aligned}")
        return f"$$\n{body}\n$$"

    def _repr_html_(self) -> str:
        from ..values import printing as formatting

        rows = []
        for s in self.steps:
            shown = "" if s.value is None else html.escape(formatting.with_unit(s.exact, s.unit))
            rows.append([_mathml(s.label), _mathml(formatting.latex(s.expr)), shown, html.escape(s.why)])
        where = f" on {html.escape(self.report['chip'])}" if self.report.get("chip") else ""
        caption = (f"<b>{html.escape(self.name)}</b>{where}: {html.escape(self.report['title'])} "
                   f"[{html.escape(self.unit)}]")
        result = (f"<p>result: {html.escape(formatting.with_unit(self.exact, self.unit))} "
                  f"(exact {html.escape(formatting.exact_text(self.exact))})</p>" if self.value is not None else
                  f"<p>result: {_mathml(formatting.latex(self.exact))} [{html.escape(self.unit)}]</p>")
        return (_table(["step", "closed form", "value", "why"], rows, caption) + result
                + f"<p><small>source: {html.escape(self.report['source'])}</small></p>")


class Check:
    """A verdict of :func:`scalemath.check`: ``.right`` (also its truth value), ``.exact``, ``.diagnosis``."""

    def __init__(self, quantity: str, verdict, result: Result):
        self.quantity, self.verdict, self.derivation = quantity, verdict, result

    @property
    def right(self) -> bool:
        v = self.verdict
        return v.right if hasattr(v, "right") else v.equivalent

    def __bool__(self) -> bool:
        return self.right

    @property
    def exact(self):
        """The engine's value (or closed form, for an expression check)."""
        return self.verdict.expected

    @property
    def value(self) -> float | None:
        return _float(self.exact)

    @property
    def unit(self) -> str:
        return self.derivation.unit

    @property
    def steps(self) -> tuple[StepResult, ...]:
        return self.derivation.steps

    @property
    def diagnosis(self) -> str | None:
        return self.verdict.diagnosis

    def __str__(self) -> str:
        from ..values import printing as formatting

        v = self.verdict
        if not hasattr(v, "right"):
            head = "equivalent" if v.equivalent else "not equivalent"
            return f"{head}: read as {v.read_as}; engine {v.expected} ({v.method})" + (
                f"; likely slip: {v.diagnosis}" if v.diagnosis else "")
        expected = f"{formatting.with_unit(v.expected, v.unit)} (exact {v.expected})"
        error = f"relative error {formatting.decimal(100 * v.rel_error, 3)}%"
        if v.right:
            return f"right: {v.given_text} matches {expected}; {error}"
        return f"wrong: {v.given_text} is {formatting.with_unit(v.given, v.unit)}; expected {expected}; {error}" + (
            f"; likely slip: {v.diagnosis}" if v.diagnosis else "")

    def __repr__(self) -> str:
        return f"<check {self.quantity}: {str(self)}>"

    def _repr_html_(self) -> str:
        color = "green" if self.right else "firebrick"
        return f"<p style='color:{color}'>{html.escape(str(self))}</p>" + self.derivation._repr_html_()
