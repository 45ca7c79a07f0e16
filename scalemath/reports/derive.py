"""What ``derive`` and ``solve`` print: one report per chip as a dict, then text or LaTeX."""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

import sympy as sp
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from ..values import printing as formatting
from .. import quantities
from ..conventions import Conventions
from ..errors import BadValueError, UnknownNameError
from ..limits import run_limited
from ..values.parse import parse_expression, shorten
from ..symbolic.derivation import Evaluated, crossover

__all__ = ["derivation_report", "check_size", "solve_quantity", "as_text", "as_latex"]

SOLVE_SECONDS = 5.0
MAX_SOLVE_DEGREE = 8  # powers of the unknown in --equals that solve accepts


def _json_number(value: sp.Expr):
    return int(value) if value.is_Integer else str(value)


def derivation_report(q: quantities.Quantity | str, ctx: quantities.Context, ev: Evaluated,
                      read: Sequence[quantities.Quantity] = ()) -> dict:
    """The ``derive --format json`` object for an evaluated derivation; ``read`` names the quantities a report
    labelled by text (a solve) was built from, whose conventions it names."""
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
    architecture = describe_architecture(ev.given, ctx.model)
    if architecture:
        report["architecture"] = architecture
    used = conventions_used(q, ctx)
    for other in read:
        used.update(conventions_used(other, ctx))
    if used:
        report["conventions"] = ctx.conventions.choices(used)
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


def conventions_read(q: quantities.Quantity | str, ctx: quantities.Context) -> tuple[str, ...]:
    """The convention axes an evaluation of ``q`` in ``ctx`` depends on: the quantity's own, the hardware
    figures when a chip is bound, the achievable rates when the chip binds C_mm or C_attn, and the active
    parameters when a model binds P_active."""
    own = () if isinstance(q, str) else q.conventions
    bound = (("hardware",) if ctx.chip is not None and "hardware" not in own else ())
    names = set() if isinstance(q, str) else {p.name for p in q.params_under(ctx.conventions)}
    if ctx.chip is not None and "efficiency" not in own and names & {"C_mm", "C_attn"}:
        bound += ("efficiency",)
    if ctx.model is not None and "active_params" not in own and "P_active" in names:
        bound += ("active_params",)
    return own + bound


def conventions_used(q: quantities.Quantity | str, ctx: quantities.Context) -> dict[str, str]:
    """The choice on each axis an evaluation of ``q`` in ``ctx`` depends on (empty when none)."""
    return ctx.conventions.choices(conventions_read(q, ctx))


def conventions_text(used: Mapping[str, str]) -> str:
    """``conventions: ...``, the line every text output prints for the choices it depended on."""
    return "conventions: " + Conventions.of(used).describe(used)


def check_size(q: quantities.Quantity, ctx: quantities.Context, given: Mapping[str, object]) -> None:
    """Refuse values that would make ``q``'s exact result too large to compute in reasonable time
    (a form with a power whose exponent is a parameter, like (1 - k/E)**B, at B = 10**7); any other
    problem with the values is left to the evaluation, which names it."""
    from ..errors import ScalemathError
    from ..values.size import MAX_EVAL_BITS, digits_text, evaluation_bits

    try:
        values = quantities.bind(q, ctx, given)
    except ScalemathError:
        return
    bits = evaluation_bits(q.under(ctx.conventions).expr, values)
    if bits > MAX_EVAL_BITS:
        raise BadValueError(f"{q.name} with these values could have about {digits_text(bits)} digits exactly, too "
                            "many to compute; give smaller values with --set")


def describe_architecture(given: Mapping[sp.Symbol, sp.Expr], model: str | None) -> str:
    """Which architecture the architecture symbols stand for, in words ('' when there are none)."""
    by_name = {s.name: v for s, v in given.items()}
    words = []
    if "n_mlp" in by_name:
        kind = {3: "gated MLP", 2: "plain (ungated) MLP"}.get(by_name["n_mlp"], "MLP")
        words.append(f"{kind} (n_mlp = {by_name['n_mlp']})")
    if "n_emb" in by_name:
        kind = {1: "tied embeddings", 2: "untied embeddings"}.get(by_name["n_emb"], "embeddings")
        words.append(f"{kind} (n_emb = {by_name['n_emb']})")
    if not words:
        return ""
    return ", ".join(words) + (f": {model}'s" if model else ": the book's default; --model picks a model's")


def solve_quantity(name: str, unknown: str, equals: str | None, against: str | None,
                   ctx: quantities.Context, given: Mapping[str, object]) -> tuple[str, Evaluated]:
    """Solve a registered quantity = a number/expression or another quantity for ``unknown`` (each in the form
    the context's conventions choose)."""
    from ..values.size import MAX_EVAL_BITS, digits_text, evaluation_bits

    q = quantities.get(name)
    params = {p.name: p for p in q.params_under(ctx.conventions)}
    other = quantities.get(against) if against else None
    if other:
        params.update({p.name: p for p in other.params_under(ctx.conventions)})
    if unknown not in params:
        raise UnknownNameError(f"symbol to solve for in {name}", unknown, params,
                               hint=f"it depends on {', '.join(sorted(params))}")
    if unknown in given:
        raise BadValueError(f"{unknown} is the unknown; do not also --set it")
    symbols = {n: p.symbol for n, p in params.items()}
    lhs = q.under(ctx.conventions)
    rhs = other.under(ctx.conventions).expr if other else parse_expression(equals, symbols)
    degree = max((abs(p.exp) for p in rhs.atoms(sp.Pow) if p.base.has(symbols[unknown])), default=1)
    if degree > MAX_SOLVE_DEGREE:
        raise BadValueError(f"--equals {equals!r} has {unknown} to the power {degree}; "
                            f"solve takes powers up to {MAX_SOLVE_DEGREE}")
    values = {}
    for quantity in (q, other) if other else (q,):
        sub = {n: v for n, v in given.items() if n in {p.name for p in quantity.params_under(ctx.conventions)}}
        values.update(quantities.bind(quantity, ctx, sub))
    values.pop(symbols[unknown], None)
    for quantity in (q, other) if other else (q,):
        bits = evaluation_bits(quantity.under(ctx.conventions).expr, values)
        if bits > MAX_EVAL_BITS:
            raise BadValueError(f"{quantity.name} with these values could have about {digits_text(bits)} digits "
                                "exactly, too many to compute; give smaller values with --set")
    if not other and evaluation_bits(rhs, values) > MAX_EVAL_BITS:
        raise BadValueError(f"with these values, --equals {shorten(equals)} could have about "
                            f"{digits_text(evaluation_bits(rhs, values))} digits, too many to compute exactly; "
                            "give smaller values or a simpler expression")
    label = f"{name} = {against or equals}"
    derivation = run_limited(
        functools.partial(crossover, lhs.expr, rhs, symbols[unknown], title=f"solve {label} for {unknown}",
                          source=lhs.source, lhs_label=lhs.result.label,
                          rhs_label=other.under(ctx.conventions).result.label if other else "",
                          side_unit=q.unit, label=unknown, unit=_unit_of(unknown),
                          why=f"the positive root of {label}", lead=lhs.steps[:-1]),
        seconds=SOLVE_SECONDS, what=f"solving {label} for {unknown}")
    return label, derivation.at(values)


def _unit_of(name: str) -> str:
    from ..symbolic.symbols import SYMBOLS

    return SYMBOLS[name].unit


def as_text(report: dict) -> str:
    """A readable derivation: one line per step with the reason."""
    ev: Evaluated = report["_evaluated"]
    head = f"{report['quantity']}: {report['title']} [{report['unit']}]"
    ctx = ", ".join(f"{k} {report[k]}" for k in ("chip", "dtype", "weight_dtype") if report.get(k))
    lines = [head + (f"  ({ctx}, level {report['level']})" if ctx else "")]
    if report["given"]:
        lines.append("given: " + ", ".join(f"{k} = {v}" for k, v in report["given"].items()))
    if report.get("architecture"):
        lines.append(f"architecture: {report['architecture']}")
    if report.get("conventions"):
        lines.append(conventions_text(report["conventions"]))
    for st in ev.steps:
        text = f"  {_plain(st.step.label)} = {st.step.expr}"
        if st.is_numeric and st.value != st.step.expr:
            text += f" = {formatting.with_unit(st.value, st.step.unit)}"
        lines.append(text)
        lines.append(f"      ({st.step.why})")
    if ev.is_numeric:
        unit = "" if report["unit"] in ("1", "") else f" {report['unit']}"
        lines.append(f"result: {formatting.with_unit(ev.value, report['unit'])}"
                     f"  (exact {ev.value}, {formatting.decimal(ev.value, 10)}{unit})")
    else:
        lines.append(f"result: {ev.value} [{report['unit']}]")
    lines.append(f"source: {report['source']}")
    return "\n".join(lines)


def _plain(label: str) -> str:
    for old, new in ((r"\mathrm", ""), ("\\", ""), ("{", ""), ("}", "")):
        label = label.replace(old, new)
    return label or "rhs"


def as_latex(report: dict, width: str | None = None) -> str:
    """An ``align*`` environment with one row per step, symbolic then numeric, that fits a column ``width``
    wide (``--latex-width``: ``241pt``, ``24em``, ...; default a two-column article's, ``none``: no breaking):
    a step too wide continues on further rows (:mod:`..values.display`)."""
    from ..values import display  # the line breaker and its font metrics: only for LaTeX output

    ev: Evaluated = report["_evaluated"]
    chains = []
    for st in ev.steps:
        chain = [("=", formatting.latex(st.step.expr))]
        if ev.given and st.step.expr.free_symbols:
            sub = formatting.latex(st.step.expr, ev.given)
            if sub != formatting.latex(st.step.expr):
                chain.append(("=", sub))
        if st.is_numeric:
            shown = formatting.latex_with_unit(st.value, st.step.unit)
            chain.append(("=" if formatting.shown_exactly(st.value, st.step.unit) else r"\approx", shown))
        chains.append(chain)
    rows = display.rows_for([st.step.label for st in ev.steps], chains, display.parse_width(width))
    body = " \\\\\n".join(rows)
    tall = (f"% {len(rows)} rows: \\allowdisplaybreaks in the preamble lets a column or page break fall "
            f"between them\n" if len(rows) > display.TALL else "")
    used = f"% {conventions_text(report['conventions'])}\n" if report.get("conventions") else ""
    return (f"% {report['quantity']}: {report['title']} ({report['source']})\n{used}{tall}"
            f"\\begin{{align*}}\n{body}\n\\end{{align*}}")


def as_python(report: dict) -> str:
    """A small self-contained Python function of the closed form; bound values become defaults.

    Exact values are kept exact with :class:`fractions.Fraction` defaults where needed.
    """
    ev: Evaluated = report["_evaluated"]
    d = ev.derivation
    expr = d.expr
    name = report["quantity"].split(" ")[0].replace(".", "_").replace("-", "_")
    params = sorted(expr.free_symbols, key=lambda s: s.name)
    given = {s: v for s, v in ev.given.items() if s in expr.free_symbols}
    free = [s.name for s in params if s not in given]
    defaults = [f"{s.name}={_py_number(given[s])}" for s in params if s in given]
    from ..symbolic.symbols import SYMBOLS

    doc = [f'    """{d.title} [{d.unit}].', "", f"    Source: {d.source}.",
           "    Exact (a Fraction) for int and Fraction arguments; a float for float arguments.", ""]
    for s in params:
        info = SYMBOLS[s.name]
        doc.append(f"    {s.name}: {info.meaning} [{info.unit}]")
    doc.append('    """')
    code = _ExactPrinter({"fully_qualified_modules": True, "standard": "python3"}).doprint(expr)
    needs_math = "math." in code or any("math." in x for x in defaults)
    needs_fraction = any("Fraction(" in x for x in defaults) or "Fraction(" in code
    lines = []
    if needs_math:
        lines.append("import math")
    if needs_fraction:
        lines.append("from fractions import Fraction")
    if lines:
        lines += ["", ""]
    lines.append(f"def {name}({', '.join(free + defaults)}):")
    lines += doc
    lines.append(f"    return {code}")
    return "\n".join(lines) + "\n"


class _ExactPrinter(PythonCodePrinter):
    """Python code that stays exact for int and Fraction arguments (and gives floats for floats):
    a rational prints as Fraction(1, 2), and a quotient as Fraction(numerator) / (denominator)."""

    def _print_Mul(self, expr):
        num, den = sp.fraction(expr)
        if den == 1:
            return super()._print_Mul(expr)
        return self._quotient(num, den)

    def _print_Pow(self, expr, rational=False):
        if expr.exp.is_Integer and expr.exp.is_negative:  # 1/B: int / int would be a float
            return self._quotient(sp.Integer(1), expr.base ** -expr.exp)
        return super()._print_Pow(expr, rational)

    def _quotient(self, num, den) -> str:
        # the numerator's coefficient as a Fraction: Fraction(2)*B is exact for int and Fraction B and a float
        # for a float B (Fraction(2*B) would turn a float into its binary fraction)
        coefficient, rest = num.as_coeff_Mul()
        head = f"Fraction({self._print(coefficient)})"
        if rest != 1:
            head += "*" + self.parenthesize(rest, PRECEDENCE["Mul"], strict=True)
        return f"{head} / ({self._print(den)})"

    def _print_Rational(self, expr):
        return f"Fraction({int(expr.p)}, {int(expr.q)})"

    def _print_Half(self, expr):
        return self._print_Rational(expr)


def _py_number(value: sp.Expr) -> str:
    """A bound value as Python: an int, a Fraction, or for an irrational value (``--set B=sqrt(2)``) its
    form with ``math`` (``math.sqrt(2)``), a float, so the function then answers in floats."""
    if value.is_Integer:
        return str(int(value))
    if value.is_Rational:
        return f"Fraction({int(value.p)}, {int(value.q)})"
    return _ExactPrinter({"fully_qualified_modules": True, "standard": "python3"}).doprint(value)


def table(q: quantities.Quantity, contexts, given: Mapping[str, object], fmt: str,
          skip_missing: bool) -> tuple[str, list[str]]:
    """The quantity over chips: one row per chip, the chip's bound parameters and the result."""
    from ..errors import ScalemathError

    rows, notes = [], []
    for ctx in contexts:
        try:
            ev = quantities.evaluate(q, ctx, given)
        except ScalemathError as exc:
            if not skip_missing:
                raise
            notes.append(f"{ctx.chip}: left out ({exc})")
            continue
        if not ev.is_numeric:
            missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
            raise BadValueError(f"{q.name} still depends on {missing} for {ctx.chip}; give them with --set")
        rows.append((ctx, ev))
    if not rows:
        raise BadValueError(f"no chip has what {q.name} needs" + (f": {notes[0]}" if notes else ""))
    from ..symbolic.symbols import SYMBOLS

    derivation = q.under(rows[0][0].conventions)
    bound = [s for s in sorted(rows[0][1].given, key=lambda s: s.name)
             if s in derivation.symbols and s.name not in given]
    header = ["chip"] + [f"{SYMBOLS[s.name].latex if fmt == 'latex' else s.name} ({SYMBOLS[s.name].unit})"
                         for s in bound] + [f"{derivation.result.label if fmt == 'latex' else q.name} ({q.unit})"]
    body = []
    for ctx, ev in rows:
        cells = [formatting.escape(ctx.get_chip().name, "latex" if fmt == "latex" else "markdown")]
        cells += [_cell(ev.given[s], fmt) if s in ev.given else "-" for s in bound]
        cells.append(_cell(ev.value, fmt))
        body.append(cells)
    fixed = ", ".join(f"{k} = {v}" for k, v in sorted(given.items()))
    caption = f"{q.title}" + (f" ({fixed})" if fixed else "") + f"; dtype {rows[0][0].compute_dtype}" + (
        f", level {rows[0][0].level}" if q.uses_level else "")
    used = conventions_used(q, rows[0][0])
    if used:
        caption += f" ({conventions_text(used)})"
    if fmt == "latex":
        cols = "l" + "r" * (len(header) - 1)
        head = " & ".join(rf"${h.split(' (')[0]}$ ({h.split(' (')[1]}" if i else h for i, h in enumerate(header))
        lines = [f"% {caption}", rf"\begin{{tabular}}{{{cols}}}", r"\toprule", head + r" \\", r"\midrule"]
        lines += [" & ".join(c) + r" \\" for c in body]
        lines += [r"\bottomrule", r"\end{tabular}"]
    else:
        lines = [f"{caption}:", "", "| " + " | ".join(header) + " |",
                 "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in body]
    return "\n".join(lines), notes


def _cell(value: sp.Expr, fmt: str) -> str:
    if fmt == "latex":
        return "$" + formatting.latex_number(value, fractions=False) + "$"
    return formatting.decimal(value)
