"""The ``scalemath`` command: parse options, call the library, print.

Heavy modules (SymPy, the engine) are imported inside commands so that
``scalemath --help`` stays fast.
"""

from __future__ import annotations

import sys

import click

from .common import (
    DTYPES, LEVELS, Choice, Group, WholeNumber, _dumps, complete_chip, complete_model, complete_quantity, friendly
)

MAX_CHIPS = 64  # names in one --chip list


def _catalog(hardware_file):
    from ..catalog import hardware

    return hardware.load_catalog(hardware_file) if hardware_file else hardware.default_catalog()


def engine_options(fn):
    """--chip, --dtype, --weight-dtype, --level, --set and --hardware-file."""
    options = [
        click.option("--chip", help="chip name(s) from the catalog, comma-separated (e.g. tpu-v5e,h100)",
                     shell_complete=complete_chip),
        click.option("--dtype", type=Choice(DTYPES), help="compute dtype (default bf16 when a chip is given)"),
        click.option("--weight-dtype", type=Choice(DTYPES), help="weight dtype if it differs (e.g. int8 weights, bf16 compute)"),
        click.option("--kv-dtype", type=Choice(DTYPES), help="KV cache dtype if it differs from --dtype (e.g. int8)"),
        click.option("--level", type=Choice(LEVELS), default="hbm", show_default=True,
                     help="memory or network level a bandwidth W comes from"),
        click.option("--set", "assignments", multiple=True, metavar="SYM=VALUE[,SYM=VALUE]",
                     help="give a parameter a value, e.g. --set D=8192,F=32768 (numbers and arithmetic only)"),
        click.option("--hardware-file", type=click.Path(), help="your own catalog in the format of hardware.toml"),
        click.option("--model", help="a model from the catalog (binds D, F, N, K, H, L, V_vocab, E, k), e.g. llama3-70b",
                     shell_complete=complete_model),
        click.option("--model-config", type=click.Path(),
                     help="a Hugging Face style config.json on disk to read the model from"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _model_catalog(model, model_config):
    """(model key, catalog) from --model or --model-config (a config.json becomes a one-model catalog)."""
    from ..catalog import models

    if model is not None and model_config is not None:  # an empty --model is a mistake, not "no model"
        raise click.UsageError("give --model or --model-config, not both")
    if model_config is not None:
        from ..catalog.hf_config import model_from_hf_config

        m = model_from_hf_config(model_config)
        return m.key, models.ModelCatalog(str(model_config), {m.key: m})
    if model is not None:
        catalog = models.default_models()
        catalog[model]  # unknown model: did-you-mean now
        return model.lower(), catalog
    return None, None


def _contexts(chip, dtype, weight_dtype, level, hardware_file, model=None, model_config=None, kv_dtype=None):
    from ..quantities import Context

    catalog = _catalog(hardware_file)
    names = list(dict.fromkeys(c.strip() for c in chip.split(",") if c.strip())) if chip is not None else [None]
    if len(names) > MAX_CHIPS:
        raise click.BadParameter(f"{len(names)} chips given; at most {MAX_CHIPS} at once", param_hint="--chip")
    if not names:
        raise click.BadParameter("no chip name given", param_hint="--chip")
    for name in names:
        if name is not None:
            catalog[name]  # unknown chip: did-you-mean now, before any work
    model_key, model_catalog = _model_catalog(model, model_config)
    return [Context(chip=n, dtype=dtype, weight_dtype=weight_dtype, level=level, catalog=catalog,
                    model=model_key, model_catalog=model_catalog, kv_dtype=kv_dtype) for n in names]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="scalemath")
def main():
    """Exact, checkable arithmetic for scaling ML models (rooflines, TPUs, GPUs).

    \b
    Examples:
      scalemath derive roofline.critical_intensity --chip tpu-v5e --dtype bf16
      scalemath solve matmul.t_math --for B --against matmul.t_comms --chip h100 --set D=8192,F=32768
      scalemath problems generate --seed 1
    """


# -- catalogs ----------------------------------------------------------------------------------

@main.command("quantities")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@click.option("--topic", help="only quantities of this topic (roofline, tpu, collectives, gpu, transformer, parallelism, inference)")
@friendly
def quantities_cmd(fmt, topic):
    """List every named quantity with its parameters and unit."""
    from .. import quantities

    topics = sorted({q.topic for q in quantities.QUANTITIES.values()})
    if topic is not None and topic not in topics:
        from ..errors import UnknownNameError

        raise UnknownNameError("topic", topic, topics, hint="topics: " + ", ".join(topics))
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


@main.group("hardware")
def hardware_group():
    """The chip catalog."""


@hardware_group.command("list")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@click.option("--switches", is_flag=True, help="list the network switches instead of the chips")
@click.option("--hardware-file", type=click.Path())
@friendly
def hardware_list(fmt, switches, hardware_file):
    """Every chip with its peak bf16 rate, HBM and bandwidth (or, with --switches, every switch)."""
    from ..values import printing as formatting

    catalog = _catalog(hardware_file)
    if switches:
        if fmt == "json":
            click.echo(_dumps([_switch_json(s) for s in catalog.switches.values()], indent=2))
            return
        click.echo(f"{'switch':<14} {'kind':<11} {'ports':>5} {'per port':>10} {'capacity':>10}  name")
        for s in catalog.switches.values():
            click.echo(f"{s.key:<14} {s.kind:<11} {s.ports:>5} {formatting.with_unit(s.port_bytes_per_s, 'byte/s', 3):>10} "
                       f"{formatting.with_unit(s.capacity_bytes_per_s, 'byte/s', 3):>10}  {s.name}")
        return
    chips = catalog.every_chip()
    if fmt == "json":
        click.echo(_dumps([_chip_json(c, catalog) for c in chips], indent=2))
        return
    click.echo(f"{'chip':<9} {'name':<16} {'peak dtypes':<30} {'HBM':>8} {'HBM BW':>11}")
    for c in chips:
        rates = ", ".join(f"{d} {formatting.with_unit(v, 'FLOP/s', 3)}" for d, v in c.flops_per_s.items()
                          if d in ("bf16", "fp16"))
        click.echo(f"{c.key:<9} {c.name:<16} {rates or '-':<30} {formatting.with_unit(c.hbm_bytes, 'byte', 3):>8} "
                   f"{formatting.with_unit(c.hbm_bytes_per_s, 'byte/s', 3):>11}{'' if c.spec_table else '  *'}")
    if any(not c.spec_table for c in chips):
        click.echo("\n* named by the book outside its spec tables; problem generators do not draw it")
    if catalog.switches:
        click.echo(f"switches: {', '.join(catalog.switches)} ('hardware list --switches', 'hardware show ib-ndr')")


def _switch_json(switch):
    from dataclasses import fields

    out = {f.name: getattr(switch, f.name) for f in fields(switch)}
    out["capacity_bytes_per_s"] = switch.capacity_bytes_per_s
    return {k: v for k, v in out.items() if v not in (None, "")}


def _chip_json(chip, catalog=None):
    from dataclasses import fields

    out = {f.name: getattr(chip, f.name) for f in fields(chip)}
    out["flops_per_s"] = dict(chip.flops_per_s)
    out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items() if v not in (None, "")}
    out["derived"] = chip.derived()
    if catalog is not None:
        linked = {which: _switch_json(catalog.switch(getattr(chip, f"{which}_switch")))
                  for which in ("nvlink", "scaleout") if getattr(chip, f"{which}_switch") is not None}
        if linked:
            out["switches"] = linked
    return out


_UNITS = {"_flops_per_s": "FLOP/s", "_bytes_per_s": "byte/s", "_bytes": "byte", "_hz": "Hz", "_ns": "ns"}


def _show_line(key, value):
    from ..values import printing as formatting

    unit = next((u for suffix, u in _UNITS.items() if key.endswith(suffix)), None)
    binary = (key.endswith(("bytes_per_sm", "bytes_per_chip")) or key.endswith("bytes")
              and key not in ("hbm_bytes", "pod_hbm_bytes"))
    if binary and not key.endswith("_per_s"):
        return f"  {key:<36} {formatting.binary_bytes(value)}  ({value})"
    if unit and unit not in ("ns", "Hz"):
        return f"  {key:<36} {formatting.with_unit(value, unit)}  ({value})"
    if isinstance(value, list):
        return f"  {key:<36} {'x'.join(map(str, value))}"
    return f"  {key:<36} {value}{' ' + unit if unit else ''}"


@hardware_group.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@click.option("--hardware-file", type=click.Path())
@friendly
def hardware_show(name, fmt, hardware_file):
    """Every catalog number of one chip (or switch) with units, and the totals that follow from them."""
    from ..values import printing as formatting

    catalog = _catalog(hardware_file)
    if name.lower() in catalog.switches and name.lower() not in catalog.chips:
        data = _switch_json(catalog.switch(name))
        if fmt == "json":
            click.echo(_dumps(data, indent=2))
            return
        for key, value in data.items():
            click.echo(_show_line(key, value))
        return
    chip = catalog[name]
    data = _chip_json(chip, catalog)
    if fmt == "json":
        click.echo(_dumps(data, indent=2))
        return
    derived, linked = data.pop("derived"), data.pop("switches", {})
    for key, value in data.items():
        if key == "flops_per_s":
            for d, v in value.items():
                click.echo(f"  {'peak ' + d:<36} {formatting.with_unit(v, 'FLOP/s')}  ({v})")
            continue
        click.echo(_show_line(key, value))
    if derived:
        click.echo("derived:")
        for key, value in derived.items():
            click.echo(_show_line(key, value))
    for which, switch in linked.items():
        click.echo(f"{which} switch {switch['key']}: {switch['name']}, {switch['ports']} ports x "
                   f"{formatting.with_unit(switch['port_bytes_per_s'], 'byte/s')} = "
                   f"{formatting.with_unit(switch['capacity_bytes_per_s'], 'byte/s')}")


@main.group("models")
def models_group():
    """The model catalog."""


@models_group.command("list")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def models_list(fmt):
    """Every model with its shape."""
    from dataclasses import asdict

    from ..catalog import models

    catalog = models.default_models()
    if fmt == "json":
        click.echo(_dumps([{k: v for k, v in asdict(m).items() if v not in (None, "")} for m in catalog],
                              indent=2))
        return
    click.echo(f"{'model':<14} {'name':<18} {'L':>4} {'D':>6} {'F':>6} {'N':>4} {'K':>3} {'H':>4} {'V':>7} {'E/k':>7}")
    for m in catalog:
        moe = f"{m.E}/{m.k}" if m.E > 1 else "-"
        click.echo(f"{m.key:<14} {m.name:<18} {m.L:>4} {m.D:>6} {m.F:>6} {m.N:>4} {m.K:>3} {m.H:>4} {m.V:>7} {moe:>7}")


@models_group.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def models_show(name, fmt):
    """All catalog fields of one model."""
    from dataclasses import asdict

    from ..catalog import models

    data = {k: v for k, v in asdict(models.get_model(name)).items() if v not in (None, "")}
    if fmt == "json":
        click.echo(_dumps(data, indent=2))
        return
    for key, value in data.items():
        click.echo(f"  {key:<16} {value}")


# -- derive and solve ---------------------------------------------------------------------------

def _check_plot(plot_file, force):
    """A bad --plot name or a file in the way is refused before the work, not after."""
    if plot_file is not None:
        from .plot import check_plot

        check_plot(plot_file, force)


def _given(assignments):
    from ..values.parse import parse_assignments

    return parse_assignments(assignments)


@main.command("derive")
@click.argument("quantity", shell_complete=complete_quantity)
@engine_options
@click.option("--format", "fmt", type=Choice(["text", "latex", "json", "python"]), default="text",
              show_default=True, help="python: a self-contained function of the closed form")
@friendly
def derive_cmd(quantity, chip, dtype, weight_dtype, kv_dtype, level, assignments, hardware_file, model, model_config,
               fmt):
    """Derive QUANTITY step by step, symbolically or with numbers."""
    from .. import quantities
    from ..reports.derive import check_size, derivation_report

    q = quantities.get(quantity)
    given = _given(assignments)
    reports = []
    for ctx in _contexts(chip, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype):
        check_size(q, ctx, given)
        reports.append(derivation_report(q, ctx, quantities.evaluate(q, ctx, given)))
    _emit(reports, fmt)


@main.command("solve")
@click.argument("quantity", shell_complete=complete_quantity)
@click.option("--for", "unknown", required=True, metavar="SYM", help="the symbol to solve for (e.g. B)")
@click.option("--equals", metavar="EXPR", help="solve QUANTITY = EXPR (a number or an expression in its symbols)")
@click.option("--against", metavar="QUANTITY", help="solve QUANTITY = the other quantity (a crossover)",
              shell_complete=complete_quantity)
@engine_options
@click.option("--format", "fmt", type=Choice(["text", "latex", "json"]), default="text", show_default=True)
@friendly
def solve_cmd(quantity, unknown, equals, against, chip, dtype, weight_dtype, kv_dtype, level, assignments,
              hardware_file, model, model_config, fmt):
    """Solve QUANTITY = EXPR, or QUANTITY = OTHER, for one symbol."""
    from ..reports.derive import derivation_report, solve_quantity

    if (equals is None) == (against is None):
        raise click.UsageError("give exactly one of --equals EXPR or --against QUANTITY")
    given = _given(assignments)
    reports = []
    for ctx in _contexts(chip, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype):
        q, evaluated = solve_quantity(quantity, unknown, equals, against, ctx, given)
        reports.append(derivation_report(q, ctx, evaluated))
    _emit(reports, fmt)


def _emit(reports, fmt):
    from ..reports.derive import as_latex, as_python, as_text

    if fmt == "json":
        clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in reports]
        click.echo(_dumps(clean[0] if len(clean) == 1 else clean, indent=2, ensure_ascii=False))
    elif fmt == "latex":
        click.echo("\n\n".join(as_latex(r) for r in reports))
    elif fmt == "python":
        click.echo("\n\n".join(as_python(r) for r in reports))
    else:
        click.echo("\n\n".join(as_text(r) for r in reports))


@main.command("compare")
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


@main.command("check")
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
    from ..values.check import check_expression, check_value
    from ..errors import BadValueError

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
    from ..reports.derive import check_size

    check_size(q, ctx, given)
    ev = quantities.evaluate(q, ctx, given)
    # device counts a slip may involve; N counts devices on a ring only in the collectives (elsewhere: heads)
    names = ("n_dev", "links", "X", "Y", "Z") + (("N",) if q.topic in ("collectives", "gpu") else ())
    counts = {s.name: int(v) for s, v in ev.given.items() if s.name in names and v.is_Integer}
    if expr is not None:
        from ..symbolic.symbols import SYMBOLS

        symbols = {n: info.symbol for n, info in SYMBOLS.items()}
        verdict = check_expression(expr, q.derivation.expr, symbols, ev.given, counts)
        _print_expr_verdict(q, verdict, fmt)
        sys.exit(0 if verdict.equivalent else 1)
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        raise BadValueError(f"{q.name} still depends on {missing}; give them with --chip/--set "
                            f"(e.g. --set {missing.split(', ')[0]}=...), or check a closed form with --expr")
    verdict = check_value(ev.value, q.unit, answer, rel_tol, counts)
    _print_verdict(q, verdict, fmt)
    sys.exit(0 if verdict.right else 1)


def _print_verdict(q, v, fmt):
    from ..values import printing as formatting

    if fmt == "json":
        click.echo(_dumps({"quantity": q.name, "right": v.right, "given": v.given_text,
                               "given_value": formatting.to_float(v.given), "expected": str(v.expected),
                               "expected_value": formatting.to_float(v.expected), "unit": v.unit,
                               "rel_error": formatting.to_float(v.rel_error), "rel_tol": float(v.rel_tol),
                               "diagnosis": v.diagnosis}, indent=2, ensure_ascii=False))
        return
    given = " ".join(v.given_text.split())  # the answer as typed, on one line
    expected = f"{formatting.with_unit(v.expected, v.unit)} (exact {v.expected})"
    error = f"relative error {formatting.decimal(100 * v.rel_error, 3)}%"
    if v.right:
        click.echo(f"right: {given} matches {expected} within {formatting.decimal(100 * v.rel_tol)}%; {error}")
    else:
        click.echo(f"wrong: {given} is {formatting.with_unit(v.given, v.unit)}; expected {expected}; {error}")
        click.echo(f"likely slip: {v.diagnosis}" if v.diagnosis else "no usual slip (2, 3, 8, 1.024^k, 1000^k, device count) explains the difference")


def _print_expr_verdict(q, v, fmt):
    if fmt == "json":
        click.echo(_dumps({"quantity": q.name, "equivalent": v.equivalent, "read_as": str(v.read_as),
                               "expected": str(v.expected), "method": v.method,
                               "factor": None if v.factor is None else str(v.factor), "diagnosis": v.diagnosis,
                               "counterexample": {k: _short(x) for k, x in v.counterexample.items()}},
                              indent=2, ensure_ascii=False))
        return
    click.echo(f"read as:  {v.read_as}")
    click.echo(f"engine:   {v.expected}")
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


@main.command("table")
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
    _check_plot(plot_file, force)
    catalog = _catalog(hardware_file)
    chips = ",".join(c.key for c in catalog) if chip is None else chip
    contexts = _contexts(chips, dtype, weight_dtype, level, hardware_file, model, model_config, kv_dtype)
    given = _given(assignments)
    for ctx in contexts:
        check_size(q, ctx, given)
    text, notes = table(q, contexts, given, fmt, skip_missing=chip is None)
    click.echo(text)
    for note in notes:
        click.echo(("% " if fmt == "latex" else "") + note, err=True)
    if plot_file is not None:
        from .plot import plot_table

        plot_table(plot_file, force, q, contexts, given, chip is None)


def _public(value):
    """``value`` without the keys that start with "_" (objects kept for the text report), at every depth."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


@main.command("shard")
@click.argument("pattern")
@click.option("--mesh", "mesh_text", required=True, metavar="AXIS=SIZE,...", help="mesh axes and sizes, e.g. X=4,Y=2")
@click.option("--chip", help="price the plans on this chip (TPU: ICI torus; GPU: NVLink node and fat tree)",
              shell_complete=complete_chip)
@click.option("--dtype", type=Choice(DTYPES), help="element type of the arrays (default bf16)")
@click.option("--set", "assignments", multiple=True, metavar="DIM=SIZE[,DIM=SIZE]",
              help="dimension sizes, e.g. --set I=8192,J=8192,K=32768 (without them the answer stays symbolic)")
@click.option("--slice", "slice_text", metavar="AxBxC",
              help="the TPU slice the mesh runs on, e.g. 4x4x4 (default: the mesh's own shape); the mesh's axes are "
                   "its axes in order, and an axis wraps only if the chip's rule says so and the mesh axis spans it")
@click.option("--hardware-file", type=click.Path())
@click.option("--format", "fmt", type=Choice(["text", "json", "latex"]), default="text", show_default=True)
@friendly
def shard_cmd(pattern, mesh_text, chip, dtype, assignments, slice_text, hardware_file, fmt):
    """Which sharding case PATTERN is, its collectives, bytes and times, and the cheaper plan.

    \b
    PATTERN is the book's notation, e.g. "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]":
    I_X shards I over mesh axis X, J_XY over X and Y, C[I, K]{U_X} is unreduced over X.
    """
    from ..reports.shard import analyse, as_text, reshard_report, reshard_text

    chip_record = _catalog(hardware_file)[chip] if chip is not None else None
    if pattern.count("[") < 3:  # one array (A[...] or A[...] -> A[...]): its layout, or how to reshard it
        record = reshard_report(pattern, mesh_text, chip_record, dtype, _given(assignments), slice_text)
        if fmt == "json":
            click.echo(_dumps(_public(record), indent=2, ensure_ascii=False))
        else:
            click.echo(reshard_text(record))
        return
    record = analyse(pattern, mesh_text, chip_record, dtype, _given(assignments), slice_text)
    if fmt == "json":
        clean = {k: v for k, v in record.items() if k != "plans"}
        clean["plans"] = [{k: v for k, v in p.items() if not k.startswith("_")} for p in record["plans"]]
        click.echo(_dumps(clean, indent=2, ensure_ascii=False))
    elif fmt == "latex":
        from ..reports.derive import as_latex, derivation_report
        from ..quantities import Context

        click.echo("\n\n".join(as_latex(derivation_report(f"shard: {p['name']}", Context(chip=chip, dtype=dtype),
                                                            p["_evaluated"])) for p in record["plans"]))
    else:
        click.echo(as_text(record))


@main.command("plan")
@click.option("--model", help="a model from the catalog, e.g. llama3-70b", shell_complete=complete_model)
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--chip", required=True, help="e.g. tpu-v5p or h100", shell_complete=complete_chip)
@click.option("--chips", required=True, help="chips available, e.g. 8960 (the search may use fewer)")
@click.option("--batch-tokens", "batch", required=True, help="global batch in tokens: 4M = 4e6, 4Mi = 4*2^20")
@click.option("--seq-len", type=WholeNumber(1, 10**8), default=4096, show_default=True,
              help="tokens per sequence; the batch is a whole number of sequences")
@click.option("--tokens", help="training tokens, e.g. 15T, for the total training time")
@click.option("--mfu", default="0.4", show_default=True,
              help="share of the roofline step time the run achieves (the book's MFU)")
@click.option("--dtype", default="bf16", show_default=True,
              help="weights and activations, or a comma list to search, e.g. bf16,fp8")
@click.option("--weight-dtype", type=Choice(DTYPES),
              help="weights as stored (default: --dtype, but bf16 under 8- or 4-bit matmuls)")
@click.option("--grad-dtype", type=Choice(DTYPES), help="gradients (default: the weights' dtype)")
@click.option("--optimizer-bytes", default="8", show_default=True,
              help="optimizer state per parameter, 0 to 64: 8 for Adam's fp32 moments (the book), 12 with an fp32 "
                   "master copy, 0 for plain SGD")
@click.option("--tp", type=WholeNumber(1, 10**6), help="pin the tensor-parallel degree")
@click.option("--pp", type=WholeNumber(1, 10**6), help="pin the pipeline stages")
@click.option("--ep", type=WholeNumber(1, 10**6), help="pin the expert-parallel degree")
@click.option("--fsdp", type=WholeNumber(1, 10**9), help="pin the FSDP degree")
@click.option("--dp", type=WholeNumber(1, 10**9),
              help="pin the data-parallel degree outside the expert shards (the replicas are DP x EP)")
@click.option("--micro-batch", type=WholeNumber(1, 10**9), help="pin the sequences per micro-batch")
@click.option("--checkpointing", type=Choice(["block", "big-matmuls", "none"]), help="pin the checkpointing policy")
@click.option("--zero1/--no-zero1", default=None, help="pin ZeRO-1 (optimizer state split over the replicas)")
@click.option("--schedule", type=Choice(["1f1b", "zero-bubble"]), default="1f1b", show_default=True,
              help="pipeline schedule: 1F1B leaves n_PP - 1 idle slots per step, zero-bubble none")
@click.option("--top", type=WholeNumber(1, 50), default=5, show_default=True, help="configurations to list")
@click.option("--backend", type=Choice(["numpy", "dask"]), default="numpy", show_default=True,
              help="evaluate the space with NumPy, or on dask arrays (pip install 'scalemath[dask]')")
@click.option("--hardware-file", type=click.Path())
@click.option("--format", "fmt", type=Choice(["text", "json", "markdown", "latex"]), default="text",
              show_default=True)
@click.option("--plot", "plot_file", type=click.Path(),
              help="also draw the search as heat maps over TP and FSDP: FILE.png, .svg or .pdf")
@click.option("--force", is_flag=True, help="let --plot replace a plot scalemath wrote")
@friendly
def plan_cmd(model, model_config, chip, chips, batch, seq_len, tokens, mfu, dtype, weight_dtype, grad_dtype,
             optimizer_bytes, tp, pp, ep, fsdp, dp, micro_batch, checkpointing, zero1, schedule, top, backend,
             hardware_file, fmt, plot_file, force):
    """Search every way to train a model on CHIPS: parallelism degrees, micro-batches, checkpointing, ZeRO-1.

    Every configuration is priced by the closed forms parallel.config.memory_per_device and
    parallel.config.step_time; the best few are shown with their derivations and why the others lost.
    """
    from ..search import plan as planner

    if model is None and model_config is None:
        raise click.UsageError("give --model NAME or --model-config config.json")
    _check_plot(plot_file, force)
    key, model_catalog = _model_catalog(model, model_config)
    catalog = _catalog(hardware_file)
    opts = planner.options(chips, batch, seq_len=seq_len, mfu=mfu, dtype=dtype, weight_dtype=weight_dtype,
                           grad_dtype=grad_dtype, optimizer_bytes=optimizer_bytes, schedule=schedule, backend=backend,
                           pins={"tp": tp, "pp": pp, "ep": ep, "fsdp": fsdp, "dp": dp, "mb": micro_batch,
                                 "checkpointing": checkpointing, "zero1": zero1})
    report = planner.plan(model_catalog[key], catalog[chip], opts,
                          planner.parse_count(tokens, "--tokens") if tokens is not None else None, top,
                          catalog=catalog, model_catalog=model_catalog)
    if fmt == "json":
        click.echo(_dumps(planner.as_json(report), indent=2, ensure_ascii=False))
    elif fmt == "markdown":
        click.echo(planner.as_markdown(report))
    elif fmt == "latex":
        click.echo(planner.as_latex(report))
    else:
        click.echo(planner.as_text(report))
    if plot_file is not None:
        from .plot import plot_plan

        plot_plan(plot_file, force, model_catalog[key], catalog[chip], opts, report, catalog, model_catalog)


@main.command("serve")
@click.option("--model", help="a model from the catalog, e.g. llama3-70b", shell_complete=complete_model)
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--chip", required=True, help="e.g. tpu-v5e or h100", shell_complete=complete_chip)
@click.option("--dtype", default="bf16", show_default=True,
              help="weight dtype, or a comma list to search, e.g. bf16,int8")
@click.option("--compute-dtype", type=Choice(DTYPES), default="bf16", show_default=True)
@click.option("--kv-dtype", help="KV cache dtype or a comma list (default: each weight dtype's own)")
@click.option("--topology", help="slice shape, e.g. 4x4 (default: search every slice of the pod)")
@click.option("--chips", type=WholeNumber(1), help="number of chips instead of --topology")
@click.option("--batch", type=WholeNumber(1, 10**9), help="sequences decoded together (default: search)")
@click.option("--context", type=WholeNumber(1, 10**9), default=8192, show_default=True,
              help="tokens in each sequence's KV cache")
@click.option("--prompt", type=WholeNumber(1, 10**9), default=2048, show_default=True, help="prompt tokens to prefill")
@click.option("--generate", type=WholeNumber(1, 10**9), default=512, show_default=True,
              help="tokens generated per request (for the prefill:generate server ratio)")
@click.option("--max-latency", help="per-token latency limit with its unit, e.g. 20ms, 500us, 0.02s")
@click.option("--objective", type=Choice(["throughput", "cost"]), default="throughput", show_default=True,
              help="tokens/s per chip, or cost per million tokens (prefill servers included)")
@click.option("--comms", type=Choice(["critical", "overlap", "none"]), default="critical", show_default=True,
              help="collectives on the critical path, overlapped (the book's F8.11 model), or left out (F7.11)")
@click.option("--mfu", default="0.5", show_default=True, help="utilisation of prefill")
@click.option("--beyond-max-context", is_flag=True,
              help="allow --context past the model's released maximum (with a warning)")
@click.option("--hardware-file", type=click.Path())
@click.option("--format", "fmt", type=Choice(["text", "json", "markdown", "latex"]), default="text",
              show_default=True)
@click.option("--plot", "plot_file", type=click.Path(),
              help="also draw the latency-throughput Pareto front: FILE.png, .svg or .pdf")
@click.option("--force", is_flag=True, help="let --plot replace a plot scalemath wrote")
@friendly
def serve_cmd(model, model_config, chip, dtype, compute_dtype, kv_dtype, topology, chips, batch, context, prompt,
              generate, max_latency, objective, comms, mfu, beyond_max_context, hardware_file, fmt, plot_file, force):
    """Serve a model: search topologies, shardings, dtypes and batches for the best throughput (or cost) per
    chip, under a latency limit if given; the winner derived exactly, runners-up, Pareto front, prefill servers."""
    from ..search import serve as server
    from ..values.parse import parse_number
    from ..quantities import Context

    if model is None and model_config is None:
        raise click.UsageError("give --model NAME or --model-config config.json")
    _check_plot(plot_file, force)
    server.check_shape(topology, chips)
    weights = server.dtypes(dtype, "--dtype")
    caches = server.dtypes(kv_dtype, "--kv-dtype") if kv_dtype is not None else None
    limit = server.parse_latency(max_latency) if max_latency is not None else None
    key, model_catalog = _model_catalog(model, model_config)
    catalog = _catalog(hardware_file)
    catalog[chip]
    ctx = Context(chip=chip, dtype=compute_dtype, weight_dtype=weights[0], kv_dtype=caches[0] if caches else None,
                  catalog=catalog, model=key, model_catalog=model_catalog)
    report = server.serve(ctx, batch, context, prompt, chips, topology, parse_number(mfu), beyond_max_context,
                          weight_dtypes=weights, kv_dtypes=caches, max_latency=limit, objective=objective,
                          generate=generate, comms=comms)
    for warning in report["warnings"]:
        click.echo(f"warning: {warning}", err=True)
    if fmt == "json":
        click.echo(_dumps(server.as_json(report), indent=2, ensure_ascii=False))
    elif fmt == "markdown":
        click.echo(server.as_markdown(report))
    elif fmt == "latex":
        click.echo(server.as_latex(report))
    else:
        click.echo(server.as_text(report))
    if plot_file is not None:
        from .plot import plot_serve

        plot_serve(plot_file, force, report)


from .problems import problems_group  # noqa: E402

main.add_command(problems_group)

from .xla import hlo_cmd, profile_cmd  # noqa: E402

main.add_command(hlo_cmd)
main.add_command(profile_cmd)

from .plot import plot_group  # noqa: E402

main.add_command(plot_group)
