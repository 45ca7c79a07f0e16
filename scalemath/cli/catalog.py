"""The catalogs' commands: ``hardware list|show``, ``models list|show`` and ``conventions``."""

from __future__ import annotations

import textwrap

import click

from .common import Choice, Command, Group, _aligned, _catalog, _dumps, friendly


@click.group("hardware", cls=Group)
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
        rows = [(s.key, s.kind, s.ports, formatting.with_unit(s.port_bytes_per_s, "byte/s", 3),
                 formatting.with_unit(s.capacity_bytes_per_s, "byte/s", 3), s.name) for s in catalog.switches.values()]
        for line in _aligned(("switch", "kind", "ports", "per port", "capacity", "name"), rows, right={2, 3, 4}):
            click.echo(line)
        return
    chips = catalog.every_chip()
    if fmt == "json":
        click.echo(_dumps([_chip_json(c, catalog) for c in chips], indent=2))
        return
    rows = []
    for c in chips:
        rates = ", ".join(f"{d} {formatting.with_unit(v, 'FLOP/s', 3)}" for d, v in c.flops_per_s.items()
                          if d in ("bf16", "fp16"))
        marks = ("" if c.spec_table else "*") + ("d" if c.datasheet_differences() else "")
        rows.append((c.key, c.name, rates or "-", formatting.with_unit(c.hbm_bytes, "byte", 3),
                     formatting.with_unit(c.hbm_bytes_per_s, "byte/s", 3), marks))
    for line in _aligned(("chip", "name", "peak dtypes", "HBM", "HBM BW", "marks"), rows, right={3, 4}):
        click.echo(line)
    if any(not c.spec_table for c in chips):
        click.echo("\n* named by the book outside its spec tables; problem generators do not draw it")
    if any(c.datasheet_differences() for c in chips):
        click.echo("d the vendor's datasheet prints figures that differ from the book's: 'hardware show CHIP' lists "
                   "both; --convention hardware=datasheet takes them")
    if catalog.switches:
        click.echo(f"switches: {', '.join(catalog.switches)} ('hardware list --switches', 'hardware show ib-ndr')")


def _switch_json(switch):
    from dataclasses import fields

    out = {f.name: getattr(switch, f.name) for f in fields(switch)}
    out["capacity_bytes_per_s"] = switch.capacity_bytes_per_s
    return {k: v for k, v in out.items() if v not in (None, "")}


def _chip_json(chip, catalog=None):
    from dataclasses import fields

    out = {f.name: getattr(chip, f.name) for f in fields(chip) if f.name not in ("datasheet", "figures", "achievable")}
    out["flops_per_s"] = dict(chip.flops_per_s)
    out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items() if v not in (None, "")}
    out["derived"] = chip.derived()
    if chip.datasheet is not None:
        out["datasheet"] = _datasheet_json(chip)
    out["achievable"] = _achievable_json(chip)
    if catalog is not None:
        linked = {which: _switch_json(catalog.switch(getattr(chip, f"{which}_switch")))
                  for which in ("nvlink", "scaleout") if getattr(chip, f"{which}_switch") is not None}
        if linked:
            out["switches"] = linked
    return out


def _datasheet_json(chip):
    """The vendor's figures beside the book's: each that differs, with the page it is printed on."""
    sheet = chip.datasheet
    figures = {k: (dict(v) if k == "flops_per_s" else v) for k, v in sheet.figures.items()}
    differ = {k: {"book": book, "datasheet": vendor} for k, (book, vendor) in chip.datasheet_differences().items()}
    out = {"source": sheet.source, "notes": sheet.notes, "figures": figures, "differences": differ}
    return {k: v for k, v in out.items() if v not in ("", None)}


def _datasheet_lines(chip):
    """Text lines: each figure the datasheet prints otherwise than the book, both values, then the source."""
    from ..values import printing as formatting

    differ = chip.datasheet_differences()
    if not differ:
        return []
    lines = ["datasheet (the vendor's published figures where they differ from the book's; --convention "
             "hardware=datasheet takes them, every other figure stays the book's):"]
    for key, (book, vendor) in differ.items():
        unit = "FLOP/s" if key.startswith("flops_per_s.") else next(
            (u for suffix, u in _UNITS.items() if key.endswith(suffix)), "")
        name = "peak " + key.split(".", 1)[1] if key.startswith("flops_per_s.") else key
        shown = [("-" if v is None else formatting.with_unit(v, unit) if unit and unit not in ("ns", "Hz") else str(v))
                 for v in (book, vendor)]
        lines.append(f"  {name:<36} book {shown[0]}  datasheet {shown[1]}  ({book} -> {vendor})")
    for label, text in (("source", chip.datasheet.source), ("notes", chip.datasheet.notes)):
        if text:
            lines.append(textwrap.fill(f"{label}: {text}", 110, subsequent_indent="  ", break_long_words=False,
                                       break_on_hyphens=False))
    return lines


def _achievable_json(chip):
    """Each achievable figure: its value, whether measured, its share of the peak and its source."""
    from ..catalog.efficiency import rows

    out = {}
    for key, _, got in rows(chip):
        out[key] = {"value": got.value if isinstance(got.value, int) else str(got.value), "measured": got.measured,
                    "share_of_peak": None if got.share is None else str(got.share), "source": got.source}
    return out


def _achievable_lines(chip):
    """Text lines: each achievable figure, measured (with a numbered source) or assumed, then the sources."""
    from ..catalog.achievable import default_attention_share
    from ..catalog.efficiency import rows
    from ..values import printing as formatting

    lines = ["achievable (what a large GEMM, a fused attention kernel (forward + backward) and a collective really "
             "reach; 'assumed' = the catalog's default share of the peak, or of the matmul rate for attention):"]
    sources: list[str] = []
    for key, unit, got in rows(chip):
        shown = f"{got.value} ns" if unit == "ns" else formatting.decimal(got.value, 4) if unit == "1" else \
            f"{formatting.with_unit(got.value, unit)}  ({got.value})"
        share = "" if got.share is None else f"{formatting.decimal(100 * got.share, 4)} % of peak, "
        if unit == "1":  # the sustained fraction: fitted to published runs
            if got.source not in sources:
                sources.append(got.source)
            how = (f"of the kernel rates (matmul, attention) under --convention efficiency=sustained; fitted "
                   f"[{sources.index(got.source) + 1}]")
        elif got.measured:
            if got.source not in sources:
                sources.append(got.source)
            how = f"{share}measured [{sources.index(got.source) + 1}]"
        elif key.startswith("attention_"):
            how = (f"{share}assumed (default {formatting.decimal(100 * default_attention_share(chip), 4)} % of the "
                   "achievable matmul rate)")
        else:
            how = (f"assumed (default {formatting.decimal(100 * got.share, 4)} % of peak)" if got.share is not None
                   else "assumed (default)")
        lines.append(f"  {key:<36} {shown}  {how}")
    notes = chip.achievable.notes if chip.achievable is not None else ""
    for i, text in enumerate(sources + ([notes] if notes else []), 1):
        label = f"[{i}] " if i <= len(sources) else "notes: "
        lines.append(textwrap.fill(label + text, 110, initial_indent="  ", subsequent_indent="      ",
                                   break_long_words=False, break_on_hyphens=False))
    return lines


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
    data.pop("datasheet", None)
    data.pop("achievable", None)
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
    for line in _datasheet_lines(chip):
        click.echo(line)
    for line in _achievable_lines(chip):
        click.echo(line)


@click.group("models", cls=Group)
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
    rows = [(m.key, m.name, m.L, m.D, m.F, m.N, m.K, m.H, m.V, f"{m.E}/{m.k}" if m.E > 1 else "-") for m in catalog]
    for line in _aligned(("model", "name", "L", "D", "F", "N", "K", "H", "V", "E/k"), rows, right=set(range(2, 10))):
        click.echo(line)


def _model_counts(m) -> dict:
    """A model's counts as the catalog's accounting gives them (what ``--model`` binds P, P_active, P_out ... to)."""
    from ..catalog import hardware

    kv = m.kv_elements_per_token()
    return {"params": m.published_param_count(), "params_book": m.param_count(),
            "active_params": {"all-weights": m.active_param_count("all-weights"),
                              "no-input-embedding": m.active_param_count("no-input-embedding")},
            "non_embedding_params": m.non_embedding_param_count(),
            "kv_cache_elements_per_token": kv,
            "kv_cache_bytes_per_token": {d: int(kv * hardware.dtype_bytes(d)) for d in ("bf16", "fp8")}}


def _count_lines(counts: dict) -> list[str]:
    active, kv = counts["active_params"], counts["kv_cache_bytes_per_token"]
    rows = (("parameters", counts["params"], "every tensor (the checkpoint's count)"),
            ("parameters, the book's count", counts["params_book"], "layers and embeddings (transformer.params)"),
            ("active, all-weights", active["all-weights"], "the book's P_active"),
            ("active, no-input-embedding", active["no-input-embedding"],
             "--convention active_params=no-input-embedding"),
            ("non-embedding", counts["non_embedding_params"],
             "Kaplan's N (no embedding, unembedding or position tables)"),
            ("KV cache per token", counts["kv_cache_elements_per_token"],
             f"elements; {kv['bf16']:,} bytes in bf16, {kv['fp8']:,} in fp8"))
    return ["counts:", *(f"  {label:<30}{value:>20,}  {note}" for label, value, note in rows)]


@models_group.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def models_show(name, fmt):
    """All catalog fields of one model, and its counts: parameters (every tensor, and the book's count), active
    parameters under both active_params conventions, Kaplan's non-embedding N and the KV cache per token."""
    from dataclasses import asdict

    from ..catalog import models

    model = models.get_model(name)
    data = {k: v for k, v in asdict(model).items() if v not in (None, "")}
    counts = _model_counts(model)
    if fmt == "json":
        click.echo(_dumps({**data, "counts": counts}, indent=2))
        return
    for key, value in data.items():
        click.echo(f"  {key:<18} {value}")
    for line in _count_lines(counts):
        click.echo(line)


@click.command("conventions", cls=Command)
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def conventions_cmd(fmt):
    """The conventions papers, datasheets and frameworks count by, and the profiles that bundle them.

    Pick with --convention PROFILE or --convention AXIS=CHOICE on derive, solve, check, table and compare; the
    first choice of each axis is the book's, and the default.
    """
    from ..conventions import AXES, PROFILES

    if fmt == "json":
        click.echo(_dumps({"axes": {a.name: {"what": a.what, "default": a.default, "choices": dict(a.choices)}
                                    for a in AXES.values()},
                           "profiles": {k: dict(v) for k, v in PROFILES.items()}}, indent=2, ensure_ascii=False))
        return
    for axis in AXES.values():
        click.echo(f"{axis.name}  ({axis.what})")
        for choice, meaning in axis.choices.items():
            mark = "*" if choice == axis.default else " "
            click.echo(textwrap.fill(meaning, 110, initial_indent=f"  {mark} {choice:<20} ",
                                     subsequent_indent=" " * 25))
    click.echo("\nprofiles:")
    for name, choices in PROFILES.items():
        click.echo(f"  {name:<12} " + (", ".join(f"{a}={c}" for a, c in choices.items()) or "every axis the book's"))
    click.echo("\n* the book's choice (the default)")
