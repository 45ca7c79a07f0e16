"""Commands that read what XLA emitted: ``scalemath hlo`` and ``scalemath profile`` (no jax needed but to read
a *.xplane.pb)."""

from __future__ import annotations

import click

from .common import (
    DTYPES, Choice, Command, WholeNumber, _catalog, _dumps, _printable, complete_chip, friendly
)


def _listing_options(all_help: str):
    """--dtype, --top, --all, --hardware-file and --format, as hlo and profile share them."""
    options = [
        click.option("--dtype", type=Choice(DTYPES),
                     help="price every matmul at this dtype's rate (default: the op's own)"),
        click.option("--top", type=WholeNumber(1, 10**6), default=10, show_default=True,
                     help="ops to list, slowest first"),
        click.option("--all", "show_all", is_flag=True, help=all_help),
        click.option("--hardware-file", type=click.Path(), help="your own catalog in the format of hardware.toml"),
        click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True),
    ]

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


@click.command("hlo", cls=Command)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--chip", help="price every op on this chip: T_math, T_memory, T_comms (e.g. tpu-v5e)",
              shell_complete=complete_chip)
@click.option("--mesh", "mesh_text", metavar="AXIS=SIZE,...",
              help="the mesh the module was compiled for, in jax's device order (e.g. X=4,Y=2): names the axes "
                   "each collective's replica groups span, and the chip's topology prices them")
@_listing_options("list every op")
@friendly
def hlo_cmd(file, chip, mesh_text, dtype, top, show_all, hardware_file, fmt):
    """Every op of an HLO module: shape, bytes, FLOPs and, with --chip, its roofline time.

    \b
    FILE is HLO text: jax.jit(f).lower(...).compile().as_text(), or a file of an XLA dump
    (XLA_FLAGS=--xla_dump_to=DIR). Shapes are per device; collectives are listed with their
    bytes V, the mesh axes their replica groups span (with --mesh) and their time. What each
    device holds, the entry's parameters and outputs, is reported against the chip's HBM.
    """
    from ..xla import analysis as hlo, report as hlo_report
    from ..symbolic.notation import parse_mesh

    chip_record = _catalog(hardware_file)[chip] if chip is not None else None
    mesh = parse_mesh(mesh_text) if mesh_text is not None else None
    report = hlo.analyse(hlo.read_hlo(file), chip_record, mesh, dtype, source=file)
    if fmt == "json":
        click.echo(_dumps(hlo_report.as_json(report), indent=2, ensure_ascii=False))
    else:
        click.echo(hlo_report.as_text(report, None if show_all else top))


@click.command("profile", cls=Command)
@click.argument("trace", type=click.Path())
@click.option("--chip", required=True, help="the chip the profile ran on: its peak FLOPs/s, HBM and link bandwidths",
              shell_complete=complete_chip)
@click.option("--hlo", "hlo_file", type=click.Path(dir_okay=False),
              help="the module's HLO text (jax.jit(f).lower(...).compile().as_text()): every op's FLOPs, bytes and "
                   "collectives, for the estimates; without it, the FLOPs and bytes a TPU or GPU profile carries")
@click.option("--mesh", "mesh_text", metavar="AXIS=SIZE,...",
              help="the mesh the module was compiled for (e.g. X=4,Y=2): the axes each collective spans and the "
                   "chip's topology price them")
@_listing_options("list every op and step")
@friendly
def profile_cmd(trace, chip, hlo_file, mesh_text, dtype, top, show_all, hardware_file, fmt):
    """Each op's measured time in a jax.profiler profile beside its roofline estimate.

    \b
    TRACE is what jax.profiler.trace(DIR) wrote: DIR itself (its newest run), one
    DIR/plugins/profile/<run> directory, or a *.trace.json.gz (read with the standard
    library) or *.xplane.pb (read with jaxlib's ProfileData: needs the xla extra) in it.
    Per op: measured and estimated time, achieved FLOPs/s and bytes/s, the fraction of the
    chip's peak, the ops furthest from their bound. Per collective: the bandwidth it
    reached by the book's rule (V/W for an AllGather on a TPU axis, nccl-tests' bus
    bandwidth on a GPU) and eta = reached / advertised.
    """
    from ..xla import analysis as hlo, profile, trace as profile_trace
    from ..symbolic.notation import parse_mesh

    chip_record = _catalog(hardware_file)[chip]
    mesh = parse_mesh(mesh_text) if mesh_text is not None else None
    hlo_text = hlo.read_hlo(hlo_file) if hlo_file is not None else None
    events = profile_trace.read_profile(trace)
    mismatch = profile.device_mismatch(events, chip_record)
    if mismatch is not None:
        click.echo(f"warning: {_printable(mismatch)}", err=True)
    report = profile.analyse(events, hlo_text, chip_record, mesh, dtype, hlo_source=hlo_file or "")
    if fmt == "json":
        click.echo(_dumps(profile.as_json(report), indent=2, ensure_ascii=False))
    else:
        click.echo(profile.as_text(report, None if show_all else top))
