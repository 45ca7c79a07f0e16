"""What ``derive`` and ``solve`` print: one report per chip as a dict, then text or LaTeX."""

from __future__ import annotations

from typing import Mapping

import sympy as sp

from . import formatting, quantities
from .errors import BadValueError, UnknownNameError
from .parsing import parse_expression
from .symbolic.derivation import Derivation, Evaluated, crossover

__all__ = ["derivation_report", "solve_quantity", "as_text", "as_latex"]


def _json_number(value: sp.Expr):
    return int(value) if value.is_Integer else str(value)


def derivation_report(q: quantities.Quantity | str, ctx: quantities.Context, ev: Evaluated) -> dict:
    """The ``derive --format json`` object for an evaluated derivation."""
    d = ev.derivation
    report = {
        "quantity": q if isinstance(q, str) else q.name,
        "title": d.title,
        "unit": d.unit,
        "chip": ctx.chip,
        "dtype": ctx.compute_dtype,
        "weight_dtype": ctx.weight_dtype,
        "level": ctx.level,
        "expression": str(d.expr),
        "latex": formatting.latex(d.expr),
        "given": {s.name: _json_number(v) for s, v in sorted(ev.given.items(), key=lambda kv: kv[0].name)
                  if s in d.symbols},
        "steps": [],
        "source": d.source,
    }
    for st in ev.steps:
        step = {"label": st.step.label, "expression": str(st.step.expr), "latex": formatting.latex(st.step.expr),
                "why": st.step.why, "unit": st.step.unit}
        if st.is_numeric:
            step["exact"] = str(st.value)
            step["value"] = formatting.to_float(st.value)
        report["steps"].append(step)
    if ev.is_numeric:
        report["exact"] = str(ev.value)
        report["value"] = formatting.to_float(ev.value)
    else:
        report["result"] = str(ev.value)
    report["_evaluated"] = ev
    return report


def solve_quantity(name: str, unknown: str, equals: str | None, against: str | None,
                   ctx: quantities.Context, given: Mapping[str, object]) -> tuple[str, Evaluated]:
    """Solve a registered quantity = a number/expression or another quantity for ``unknown``."""
    q = quantities.get(name)
    params = {p.name: p for p in q.params}
    other = quantities.get(against) if against else None
    if other:
        params.update({p.name: p for p in other.params})
    if unknown not in params:
        raise UnknownNameError(f"symbol to solve for in {name}", unknown, params,
                               hint=f"it depends on {', '.join(sorted(params))}")
    if unknown in given:
        raise BadValueError(f"{unknown} is the unknown; do not also --set it")
    symbols = {n: p.symbol for n, p in params.items()}
    rhs = other.derivation.expr if other else parse_expression(equals, symbols)
    label = f"{name} = {against or equals}"
    derivation = crossover(
        q.derivation.expr, rhs, symbols[unknown], title=f"solve {label} for {unknown}", source=q.source,
        lhs_label=_label(q), rhs_label=_label(other) if other else "", side_unit=q.unit,
        label=unknown, unit=_unit_of(unknown), why=f"the positive root of {label}",
        lead=q.derivation.steps[:-1])
    values = {}
    for quantity in (q, other) if other else (q,):
        sub = {n: v for n, v in given.items() if n in {p.name for p in quantity.params}}
        values.update(quantities.bind(quantity, ctx, sub))
    values.pop(symbols[unknown], None)
    return label, derivation.at(values)


def _label(q: quantities.Quantity | None) -> str:
    return q.derivation.result.label if q else ""


def _unit_of(name: str) -> str:
    from .symbolic.symbols import SYMBOLS

    return SYMBOLS[name].unit


def as_text(report: dict) -> str:
    """A readable derivation: one line per step with the reason."""
    ev: Evaluated = report["_evaluated"]
    head = f"{report['quantity']}: {report['title']} [{report['unit']}]"
    ctx = ", ".join(f"{k} {report[k]}" for k in ("chip", "dtype", "weight_dtype") if report.get(k))
    lines = [head + (f"  ({ctx}, level {report['level']})" if ctx else "")]
    if report["given"]:
        lines.append("given: " + ", ".join(f"{k} = {v}" for k, v in report["given"].items()))
    for st in ev.steps:
        text = f"  {_plain(st.step.label)} = {st.step.expr}"
        if st.is_numeric and st.value != st.step.expr:
            text += f" = {formatting.with_unit(st.value, st.step.unit)}"
        lines.append(text)
        lines.append(f"      ({st.step.why})")
    if ev.is_numeric:
        lines.append(f"result: {formatting.with_unit(ev.value, report['unit'])}"
                     f"  (exact {ev.value}, {formatting.decimal(ev.value, 10)} {report['unit']})")
    else:
        lines.append(f"result: {ev.value} [{report['unit']}]")
    lines.append(f"source: {report['source']}")
    return "\n".join(lines)


def _plain(label: str) -> str:
    for old, new in ((r"\mathrm", ""), ("\\", ""), ("{", ""), ("}", "")):
        label = label.replace(old, new)
    return label or "rhs"


def as_latex(report: dict) -> str:
    """An ``align*`` environment with one line per step, symbolic then numeric."""
    ev: Evaluated = report["_evaluated"]
    rows = []
    for st in ev.steps:
        row = f"{st.step.label} &= {formatting.latex(st.step.expr)}"
        if ev.given and st.step.expr.free_symbols:
            sub = formatting.latex(st.step.expr, ev.given)
            if sub != formatting.latex(st.step.expr):
                row += f" = {sub}"
        if st.is_numeric:
            shown = formatting.latex_with_unit(st.value, st.step.unit)
            row += (" = " if formatting.shown_exactly(st.value, st.step.unit) else r" \approx ") + shown
        rows.append(row)
    body = " \\\\\n".join(rows)
    return (f"% {report['quantity']}: {report['title']} ({report['source']})\n"
            f"\\begin{{align*}}\n{body}\n\\end{{align*}}")
