"""The engine's commands: ``quantities``, ``derive``, ``solve``, ``compare``, ``check`` and ``table``."""

from __future__ import annotations

import sys

import click

from .common import (
    Choice, Command, _catalog, _contexts, _dumps, _given, check_topic, complete_quantity, complete_quantity_topic,
    engine_options, friendly
)
from .figures import check_plot


@click.command("quantities", cls=Command)
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@click.option("--topic", help="only quantities of this topic (roofline, tpu, collectives, gpu, transformer, parallelism, inference)",
              shell_complete=complete_quantity_topic)
@friendly
def quantities_cmd(fmt, topic):
    """List every named quantity with its parameters and unit."""
    from .. import quantities

    if topic is not None:
        check_topic(topic, sorted({q.topic for q in quantities.QUANTITIES.values()}), "scalemath quantities")
    rows = [q for q in quantities.QUANTITIES.values() if topic is None or q.topic == topic]
    if fmt == "json":
        click.echo(_dumps([{
            "name": q.name, "title": q.title, "unit": q.unit, "topic": q.topic, "source": q.source,
            "uses_level": q.uses_level,
            "params": [{"name": p.name, "unit": p.info.unit, "meaning": p.info.meaning,
                        "from_chip_or_dtype": p.binder is not None} for p in q.params],
        } for q in rows], indent=2))
        return
    width = max(len(q.name) for q in rows)
    for q in rows:
        params = ", ".join(p.name + ("*" if p.binder else "") for p in q.params)
        level = "  (W from --level)" if q.uses_level else ""
        click.echo(f"{q.name:<{width}}  [{q.unit}]  {q.title}\n{'':<{width}}  params: {params}{level}")
    click.echo("\n* bound from --chip/--dtype/--weight-dtype/--level when given; set any with --set SYM=VALUE")


@click.command("derive", cls=Command)
@click.argument("quantity", shell_complete=complete_quantity)
@engine_options
@click.option("--format", "fmt", type=Choice(["text", "latex", "json", "python"]), default="text",
              show_default=True, help="python: a self-contained function of the closed form")
@click.option("--latex-width", metavar="WIDTH", default=None,
              help="with --format latex: the column the rows must fit, e.g. 241pt, 3.35in, 8.5cm, 24em, 48ch "
                   "(digits), none for one row per step; widths in pt, in or cm assume a 10 pt font, give em for "
                   "another  [default: 229.5pt, a two-column article's \\columnwidth]")
@friendly
def derive_cmd(quantity, chip, dtype, weight_dtype, kv_dtype, level, assignments, hardware_file, model, model_config,
               fmt, latex_width):
    """Derive QUANTITY step by step, symbolically or with numbers."""
    from .. import quantities
    from ..reports.derive import check_size, derivation_report
    if latex_width is not None:
        from ..values.display import parse_width

        parse_width(latex_width)  # a bad width is told before any work
    q = quantities.get(quantity)
    given = _given(assignments)
    reports = []
    for ctx in _contexts(chip, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype):
        check_size(q, ctx, given)
        reports.append(derivation_report(q, ctx, quantities.evaluate(q, ctx, given)))
    _emit(reports, fmt, latex_width)


@click.command("solve", cls=Command)
@click.argument("quantity", shell_complete=complete_quantity)
@click.option("--for", "unknown", required=True, metavar="SYM", help="the symbol to solve for (e.g. B)")
@click.option("--equals", metavar="EXPR", help="solve QUANTITY = EXPR (a number or an expression in its symbols)")
@click.option("--against", metavar="QUANTITY", help="solve QUANTITY = the other quantity (a crossover)",
              shell_complete=complete_quantity)
@engine_options
@click.option("--format", "fmt", type=Choice(["text", "latex", "json"]), default="text", show_default=True)
@click.option("--latex-width", metavar="WIDTH", default=None,
              help="with --format latex: the column the rows must fit, e.g. 241pt, 3.35in, 8.5cm, 24em, 48ch "
                   "(digits), none for one row per step; widths in pt, in or cm assume a 10 pt font, give em for "
                   "another  [default: 229.5pt, a two-column article's \\columnwidth]")
@friendly
def solve_cmd(quantity, unknown, equals, against, chip, dtype, weight_dtype, kv_dtype, level, assignments,
              hardware_file, model, model_config, fmt, latex_width):
    """Solve QUANTITY = EXPR, or QUANTITY = OTHER, for one symbol."""
    from .. import quantities
    from ..reports.derive import derivation_report, solve_quantity
    if latex_width is not None:
        from ..values.display import parse_width

        parse_width(latex_width)  # a bad width is told before any work

    if (equals is None) == (against is None):
        raise click.UsageError("give exactly one of --equals EXPR or --against QUANTITY")
    given = _given(assignments)
    reports = []
    for ctx in _contexts(chip, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype):
        label, evaluated = solve_quantity(quantity, unknown, equals, against, ctx, given)
        read = [quantities.get(n) for n in (quantity, against) if n]
        reports.append(derivation_report(label, ctx, evaluated, read=read))
    _emit(reports, fmt, latex_width)


def _emit(reports, fmt, latex_width=None):
    from ..reports.derive import as_latex, as_python, as_text

    if fmt == "json":
        clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in reports]
        click.echo(_dumps(clean[0] if len(clean) == 1 else clean, indent=2, ensure_ascii=False))
    elif fmt == "latex":
        click.echo("\n\n".join(as_latex(r, latex_width) for r in reports))
    elif fmt == "python":
        click.echo("\n\n".join(as_python(r) for r in reports))
    else:
        click.echo("\n\n".join(as_text(r) for r in reports))


@click.command("compare", cls=Command)
@click.argument("quantity")
@click.argument("other", required=False)
@engine_options
@click.option("--vs", "vs_chip", help="the chip of the second side (default: --chip)")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def compare_cmd(quantity, other, chip, dtype, weight_dtype, kv_dtype, level, assignments, hardware_file, model,
                model_config, vs_chip, fmt):
    """How many times QUANTITY on --chip is QUANTITY on --vs chip, or OTHER (a quantity of the same unit).

    e.g. compare gpu.all_gather.time --chip b200 --vs h100 --set V=1e9,N=8, or compare
    collective.all_to_all.time gpu.all_to_all.time --chip tpu-v5e --vs h100 --set V=1e9,N=8.
    """
    from ..reports import compare as comparing

    if other is None and vs_chip is None:
        raise click.UsageError("give a second chip with --vs, or a second quantity to compare with")
    if chip is not None and "," in chip:
        raise click.BadParameter("compare takes one chip; the second goes in --vs", param_hint="--chip")
    given = _given(assignments)
    first = _contexts(chip, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype)[0]
    second = first if vs_chip is None else \
        _contexts(vs_chip, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype)[0]
    report = comparing.compare(quantity, first, other or quantity, second, given)
    if fmt == "json":
        click.echo(_dumps(comparing.as_json(report), indent=2, ensure_ascii=False))
    else:
        click.echo(comparing.as_text(report))


@click.command("check", cls=Command)
@click.argument("quantity", shell_complete=complete_quantity)
@click.argument("answer", required=False)
@click.option("--expr", metavar="EXPR", help="check a closed form instead, e.g. --expr '2*B*D*F/C'")
@engine_options
@click.option("--rel-tol", default="0.01", show_default=True, help="relative tolerance of a right answer, in [0, 1)")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def check_cmd(quantity, answer, expr, chip, dtype, weight_dtype, kv_dtype, level, assignments, hardware_file, model,
              model_config, rel_tol, fmt):
    """Is ANSWER (a number, optionally with a unit: '1.2 ms', '320 KiB') right for QUANTITY?

    Exit code 0 right, 1 wrong, 2 bad usage. With --expr, checks that a closed form
    equals the engine's.
    """
    from .. import quantities

    if (answer is None) == (expr is None):
        raise click.UsageError("give an ANSWER or --expr EXPR (not both)")
    from ..values.parse import parse_number

    rel_tol = parse_number(rel_tol)
    if not (rel_tol.is_Rational and 0 <= rel_tol < 1):
        raise click.BadParameter("must be at least 0 and below 1", param_hint="--rel-tol")
    q = quantities.get(quantity)
    given = _given(assignments)
    ctxs = _contexts(chip, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype)
    if len(ctxs) > 1:
        raise click.UsageError("check takes one chip")
    ctx = ctxs[0]
    from ..reports.derive import check_size, conventions_used

    check_size(q, ctx, given)
    ev = quantities.evaluate(q, ctx, given)
    from ..reports.checking import check_answer

    verdict = check_answer(q, ctx, ev, answer, expr, rel_tol,
                           {"values": "with --chip/--set (e.g. --set {}=...)", "expr": "--expr"})
    if expr is not None:
        _print_expr_verdict(q, verdict, fmt, conventions_used(q, ctx))
        sys.exit(0 if verdict.equivalent else 1)
    _print_verdict(q, verdict, fmt, conventions_used(q, ctx))
    sys.exit(0 if verdict.right else 1)


def _print_verdict(q, v, fmt, conventions):
    from ..reports.derive import conventions_text
    from ..values import printing as formatting

    if fmt == "json":
        click.echo(_dumps({"quantity": q.name, "right": v.right, "given": v.given_text,
                               "given_value": formatting.to_float(v.given), "expected": str(v.expected),
                               "expected_value": formatting.to_float(v.expected), "unit": v.unit,
                               "rel_error": formatting.to_float(v.rel_error), "rel_tol": float(v.rel_tol),
                               "diagnosis": v.diagnosis, "conventions": conventions}, indent=2, ensure_ascii=False))
        return
    given = " ".join(v.given_text.split())  # the answer as typed, on one line
    expected = f"{formatting.with_unit(v.expected, v.unit)} (exact {v.expected})"
    error = f"relative error {formatting.decimal(100 * v.rel_error, 3)}%"
    if v.right:
        click.echo(f"right: {given} matches {expected} within {formatting.decimal(100 * v.rel_tol)}%; {error}"
                   + (f" ({v.note})" if v.note else ""))
    else:
        click.echo(f"wrong: {given} is {formatting.with_unit(v.given, v.unit)}; expected {expected}; {error}")
        click.echo(f"likely slip: {v.diagnosis}" if v.diagnosis else "no usual slip (2, 3, 8, 1.024^k, 1000^k, device count) explains the difference")
    if conventions:
        click.echo(conventions_text(conventions))


def _print_expr_verdict(q, v, fmt, conventions):
    from ..reports.derive import conventions_text

    if fmt == "json":
        click.echo(_dumps({"quantity": q.name, "equivalent": v.equivalent, "read_as": str(v.read_as),
                               "expected": str(v.expected), "method": v.method,
                               "factor": None if v.factor is None else str(v.factor), "diagnosis": v.diagnosis,
                               "counterexample": {k: _short(x) for k, x in v.counterexample.items()},
                               "conventions": conventions}, indent=2, ensure_ascii=False))
        return
    click.echo(f"read as:  {v.read_as}")
    click.echo(f"engine:   {v.expected}")
    if conventions:
        click.echo(conventions_text(conventions))
    if v.equivalent:
        click.echo(f"equivalent ({v.method})")
        return
    if v.factor is not None:
        click.echo(f"not equivalent: yours is {v.factor} times the engine's ({v.method})")
    else:
        click.echo(f"not equivalent ({v.method})")
    if v.diagnosis:
        click.echo(f"likely slip: {v.diagnosis}")
    if v.counterexample:
        click.echo("for example at " + ", ".join(f"{k}={_short(x)}" for k, x in v.counterexample.items()))


def _short(value) -> str:
    """An exact number as written when it is short, else rounded (huge powers have thousands of digits)."""
    from ..values import printing as formatting

    if value.is_Rational and max(abs(value.p).bit_length(), value.q.bit_length()) < 200:
        return str(value)
    if value.is_extended_real is False:  # sqrt(B - D) where D > B: shown as a complex number
        real, imag = value.as_real_imag()
        sign = "-" if imag.is_negative else "+"
        return f"{formatting.decimal(real, 10)} {sign} {formatting.decimal(abs(imag), 10)}*I"
    return formatting.decimal(value, 10)


@click.command("table", cls=Command)
@click.argument("quantity", shell_complete=complete_quantity)
@engine_options
@click.option("--format", "fmt", type=Choice(["markdown", "latex"]), default="markdown", show_default=True,
              help="latex: a booktabs tabular")
@click.option("--plot", "plot_file", type=click.Path(), help="also draw the table as bars: FILE.png, .svg or .pdf")
@click.option("--force", is_flag=True, help="let --plot replace a plot scalemath wrote")
@friendly
def table_cmd(quantity, chip, dtype, weight_dtype, kv_dtype, level, assignments, hardware_file, model, model_config,
              fmt, plot_file, force):
    """QUANTITY for several chips (--chip a,b,c; default every chip that has what it needs)."""
    from .. import quantities
    from ..reports.derive import check_size, table

    q = quantities.get(quantity)
    check_plot(plot_file, force)
    catalog = _catalog(hardware_file)
    chips = ",".join(c.key for c in catalog) if chip is None else chip
    contexts = _contexts(chips, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype)
    given = _given(assignments)
    for ctx in contexts:
        check_size(q, ctx, given)
    text, notes = table(q, contexts, given, fmt, skip_missing=chip is None)
    if chip is None:  # the default list is the book's spec tables (what iterating the catalog gives)
        outside = [c.key for c in catalog.every_chip() if not c.spec_table]
        if outside:
            notes = [f"{', '.join(outside)}: left out (named by the book outside its spec tables; without --chip "
                     "the table shows the spec tables' chips only: name them with --chip to include them)", *notes]
    click.echo(text)
    for line in _left_out(notes, fmt):
        click.echo(line)
    if plot_file is not None:
        from .figures import plot_table

        plot_table(plot_file, force, q, contexts, given, chip is None)


def _left_out(notes, fmt):
    """The lines under a table that say which chips it left out and why: a Markdown list, or LaTeX comments."""
    if not notes:
        return []
    if fmt == "latex":
        return ["%"] + [f"% {line}" for note in notes for line in note.splitlines()]
    from ..values.printing import escape

    return [""] + [f"- {escape(' '.join(note.split()), 'markdown', prose=True)}" for note in notes]
