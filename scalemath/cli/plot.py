"""``scalemath plot``: figures from the engine (roofline, training, decode, pareto, collective, plan) and the
book's figures (``--book-figure NAME``, ``--list``); the ``--plot FILE`` hooks of plan, serve and table are in
figures.py.

matplotlib and the engine are imported inside the commands, so ``scalemath --help`` does not load them.
"""

from __future__ import annotations

import click

from .common import DTYPES, Choice, Group, WholeNumber, _model_catalog, friendly
from .figures import check_plot
from .figures import save as _save
from .search import serve_cmd

__all__ = ["plot_group"]

OUT_HELP = ("file to write: .png, .svg or .pdf (the suffix sets the format); an existing file is replaced only "
            "with --force, and only if scalemath wrote it")
FORCE_HELP = "replace the file if it is a plot scalemath wrote and nobody changed since"


def _split(text, what, limit=64):
    from ..errors import BadValueError

    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise BadValueError(f"{what} is empty; give a comma-separated list")
    if len(items) > limit:
        raise BadValueError(f"{what}: {len(items)} given; at most {limit}")
    return list(dict.fromkeys(items))


def _counts(text, what, limit=16):
    from ..errors import BadValueError
    from ..values.parse import shorten

    out = []
    for item in _split(text, what, limit):
        if not (item.isascii() and item.isdigit() and len(item) <= 10) or not 0 < int(item) <= 10**9:
            raise BadValueError(f"{what} {shorten(item)}: not a whole number from 1 to 10^9 (write 4096, not 4k)")
        out.append(int(item))
    return out


def _catalogs(hardware_file):
    from ..catalog import hardware, models

    catalog = hardware.load_catalog(hardware_file) if hardware_file else hardware.default_catalog()
    return catalog, models.default_models()


def _ctx(chip, catalog, dtype=None, weight_dtype=None, kv_dtype=None, model=None, model_config=None):
    from ..quantities import Context

    catalog[chip]  # an unknown chip: did-you-mean now
    key, model_catalog = _model_catalog(model, model_config) if (model or model_config) else (None, None)
    return Context(chip=chip, dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype, catalog=catalog,
                   model=key, model_catalog=model_catalog)


def _out_options(fn):
    fn = click.option("--force", is_flag=True, help=FORCE_HELP)(fn)
    return click.option("--out", required=True, type=click.Path(), help=OUT_HELP)(fn)


@click.group("plot", cls=Group, invoke_without_command=True)
@click.option("--list", "list_figures", is_flag=True, help="the book's figures this can redraw, with their chapters")
@click.option("--book-figure", metavar="NAME", help="redraw one of the book's figures (see --list)")
@click.option("--chip", help="with --book-figure: draw it for this chip instead of the book's")
@click.option("--out", type=click.Path(), help=OUT_HELP)
@click.option("--force", is_flag=True, help=FORCE_HELP)
@click.option("--hardware-file", type=click.Path(), help="your own catalog in the format of hardware.toml")
@click.pass_context
@friendly
def plot_group(ctx, list_figures, book_figure, chip, out, force, hardware_file):
    """Draw the engine's numbers: PNG, SVG or PDF (from the --out suffix), the same bytes for the same input.

    \b
    Examples:
      scalemath plot roofline --chip h100,tpu-v5e --op "matmul B=512 D=8192 F=32768" --out roofline.svg
      scalemath plot --list
      scalemath plot --book-figure roofline --chip h100 --out roofline-h100.png
    """
    if ctx.invoked_subcommand is not None:
        if list_figures or book_figure or chip or out or force or hardware_file:
            raise click.UsageError("--list, --book-figure, --chip, --out, --force and --hardware-file before the "
                                   "kind belong to book figures; put a kind's options after it, e.g. "
                                   "'scalemath plot roofline --chip h100 --out r.svg'")
        return
    if list_figures:
        if book_figure or out:
            raise click.UsageError("--list prints the book's figures; give it alone")
        from ..plots import KINDS
        from ..plots.book import FIGURES

        click.echo("book figures (scalemath plot --book-figure NAME [--chip CHIP] --out FILE):")
        for f in FIGURES.values():
            click.echo(f"  {f.name:<30} {f.chapter}\n  {'':<30} {f.shows} (book: {f.chip})")
        click.echo("\nkinds (scalemath plot KIND --help):")
        for name, what in KINDS.items():
            click.echo(f"  {name:<12} {what}")
        return
    if book_figure is None:
        raise click.UsageError("give a kind (roofline, training, decode, pareto, collective, plan, sharp, ragged, "
                               "sharded, serving, speculative), "
                               "--book-figure NAME, or --list")
    if out is None:
        raise click.UsageError("--book-figure needs --out FILE (.png, .svg or .pdf)")
    from ..plots import book

    book.get(book_figure)  # unknown name: did-you-mean before anything else
    check_plot(out, force, "--out")
    catalog, models = _catalogs(hardware_file)
    chips = _split(chip, "--chip") if chip is not None else None
    _save(book.make(book_figure, chips, catalog, models), out, force)


@plot_group.command("roofline")
@click.option("--chip", required=True, help="chip name(s), comma-separated, e.g. h100,tpu-v5e")
@click.option("--dtype", type=Choice(DTYPES), default="bf16", show_default=True, help="compute dtype")
@click.option("--weight-dtype", type=Choice(DTYPES), help="weights' dtype for the ops' bytes, if it differs")
@click.option("--op", "ops", multiple=True, metavar='"NAME SYM=VALUE ..."',
              help='an op to place, e.g. "matmul B=512 D=8192 F=32768" (NAME.flops and NAME.bytes are quantities; '
                   "repeatable)")
@click.option("--model", help="a model from the catalog, for ops such as \"inference.decode B=64 S=8192 n_dev=8\"")
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_roofline(chip, dtype, weight_dtype, ops, model, model_config, hardware_file, out, force):
    """Rooflines of chips on log-log axes, ridge points labelled, ops placed on them."""
    from ..plots import roofline

    check_plot(out, force, "--out")
    if len(ops) > 8:
        raise click.BadParameter(f"{len(ops)} ops; at most 8", param_hint="--op")
    catalog, _ = _catalogs(hardware_file)
    parsed = [roofline.parse_op(op) for op in ops]
    contexts = [_ctx(c, catalog, dtype, weight_dtype, model=model, model_config=model_config)
                for c in _split(chip, "--chip", 10)]
    for c in contexts:
        c.get_chip().flops(dtype)  # a dtype the chip has no rate for: its own message
    _save(roofline.data(contexts, parsed), out, force)


@plot_group.command("training")
@click.option("--chip", required=True, help="e.g. tpu-v5p (the ICI bandwidth prices the collectives)")
@click.option("--chips", type=WholeNumber(1, 10**7), required=True, help="chips the batch is spread over")
@click.option("--scheme", default="dp,fsdp,tp,fsdp_tp", show_default=True,
              help="comma list of dp, fsdp, tp, fsdp_tp")
@click.option("--model", help="a model from the catalog (binds D and F)")
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--set", "assignments", multiple=True, metavar="SYM=VALUE",
              help="D, F without a model; M_X, M_Y (mesh axes per scheme) to override the defaults")
@click.option("--dtype", type=Choice(DTYPES), default="bf16", show_default=True)
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_training(chip, chips, scheme, model, model_config, assignments, dtype, hardware_file, out, force):
    """Compute against communication time per layer over the global batch (training.md)."""
    from ..values.parse import parse_assignments
    from ..plots import training

    check_plot(out, force, "--out")
    catalog, _ = _catalogs(hardware_file)
    ctx = _ctx(chip, catalog, dtype, model=model, model_config=model_config)
    _save(training.data(ctx, chips, _split(scheme, "--scheme", 4), parse_assignments(assignments)), out, force)


@plot_group.command("decode")
@click.option("--model", help="a model from the catalog, e.g. llama3-70b")
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--chip", required=True)
@click.option("--chips", type=WholeNumber(1, 10**7), required=True, help="chips the model is spread over")
@click.option("--context", default="8192", show_default=True, help="context length(s), comma-separated")
@click.option("--dtype", type=Choice(DTYPES), default="bf16", show_default=True, help="weights")
@click.option("--compute-dtype", type=Choice(DTYPES), default="bf16", show_default=True)
@click.option("--kv-dtype", type=Choice(DTYPES), help="KV cache (default: the weights')")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_decode(model, model_config, chip, chips, context, dtype, compute_dtype, kv_dtype, hardware_file, out, force):
    """Decode step time and throughput per chip against batch (inference.md)."""
    from ..plots import decode

    check_plot(out, force, "--out")
    if model is None and model_config is None:
        raise click.UsageError("give --model NAME or --model-config config.json")
    catalog, _ = _catalogs(hardware_file)
    ctx = _ctx(chip, catalog, compute_dtype, dtype, kv_dtype or dtype, model, model_config)
    _save(decode.data(ctx, chips, _counts(context, "--context", 8)), out, force)


@plot_group.command("collective")
@click.option("--chip", required=True, help="a TPU (one ICI ring) or a GPU (an NVLink node and across nodes)")
@click.option("--collective", type=Choice(["all-gather", "reduce-scatter", "all-reduce", "all-to-all"]),
              default="all-gather", show_default=True)
@click.option("--ring", type=WholeNumber(2, 10**5), help="TPU: chips on the ring  [default: 16]")
@click.option("--gpus", type=WholeNumber(2, 10**5), help="GPU: GPUs in the node  [default: the NVLink domain]")
@click.option("--nodes", type=WholeNumber(2, 10**5), default=4, show_default=True, help="GPU: nodes (AllToAll)")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_collective(chip, collective, ring, gpus, nodes, hardware_file, out, force):
    """A collective's time and bandwidth against message size; the latency-bound regime shaded."""
    from ..plots import collective as coll
    from ..plots import gpu_collective

    check_plot(out, force, "--out")
    catalog, _ = _catalogs(hardware_file)
    from ..errors import BadValueError

    ctx = _ctx(chip, catalog, "bf16")
    if ctx.get_chip().family == "gpu":
        if ring is not None:
            raise BadValueError(f"--ring: {chip} is a GPU; give --gpus (GPUs in the node)")
        _save(gpu_collective.data(ctx, collective, gpus, nodes), out, force)
        return
    if gpus is not None:
        raise BadValueError(f"--gpus: {chip} is a TPU; give --ring (chips on the ring)")
    _save(coll.data(ctx, collective, ring or 16), out, force)


@plot_group.command("sharp")
@click.option("--chip", required=True, help="a GPU with NVLink switches, e.g. h100")
@click.option("--gpus", type=WholeNumber(2, 10**5), help="GPUs in the node  [default: the NVLink domain]")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_sharp(chip, gpus, hardware_file, out, force):
    """AllReduce in an NVLink node with and without in-switch reduction (SHARP) against message size."""
    from ..plots import gpu_collective

    check_plot(out, force, "--out")
    catalog, _ = _catalogs(hardware_file)
    _save(gpu_collective.sharp_data(_ctx(chip, catalog, "bf16"), gpus), out, force)


@plot_group.command("ragged")
@click.option("--chip", required=True, help="a GPU, e.g. h100")
@click.option("--gpus", type=WholeNumber(2, 10**4), help="GPUs in the node  [default: the NVLink domain]")
@click.option("--bytes", "nbytes", type=WholeNumber(1, 10**15), default=2**30, show_default=True,
              help="bytes of the whole array")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_ragged(chip, gpus, nbytes, hardware_file, out, force):
    """A ragged (top-k) AllToAll against k: the book's min(k/N, 1) approximation and the expected cost."""
    from ..plots import gpu_collective

    check_plot(out, force, "--out")
    catalog, _ = _catalogs(hardware_file)
    _save(gpu_collective.ragged_data(_ctx(chip, catalog, "bf16"), gpus, nbytes), out, force)


@plot_group.command("sharded")
@click.option("--chip", required=True, help="a GPU, e.g. h100")
@click.option("--d", "d", type=WholeNumber(1, 10**7), default=8192, show_default=True, help="D (sharded over X)")
@click.option("--f", "f", type=WholeNumber(1, 10**7), default=32768, show_default=True, help="F (sharded over Y)")
@click.option("--largest", type=WholeNumber(2, 10**6), default=256, show_default=True, help="the largest Y drawn")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_sharded(chip, d, f, largest, hardware_file, out, force):
    """A collective over X of bf16[D_X, F_Y] against the inner degree Y (gpus.md, Pop Quiz 3)."""
    from ..plots import gpu_sharded

    check_plot(out, force, "--out")
    catalog, _ = _catalogs(hardware_file)
    _save(gpu_sharded.data(_ctx(chip, catalog, "bf16"), d, f, largest), out, force)


@plot_group.command("serving")
@click.option("--model", help="a model from the catalog, e.g. llama3-70b")
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--chip", required=True)
@click.option("--chips", type=WholeNumber(1, 10**7), required=True, help="chips the model is spread over")
@click.option("--context", type=WholeNumber(1, 10**9), default=8192, show_default=True, help="context length")
@click.option("--batch", type=WholeNumber(1, 10**9), help="the batch the bars show  [default: the largest that fits]")
@click.option("--dtype", type=Choice(DTYPES), default="bf16", show_default=True, help="weights")
@click.option("--compute-dtype", type=Choice(DTYPES), default="bf16", show_default=True)
@click.option("--kv-dtype", type=Choice(DTYPES), help="KV cache (default: the weights')")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_serving(model, model_config, chip, chips, context, batch, dtype, compute_dtype, kv_dtype, hardware_file,
                 out, force):
    """A decode step's time split into parameters, KV caches and FLOPs against batch."""
    from ..plots import serving

    check_plot(out, force, "--out")
    if model is None and model_config is None:
        raise click.UsageError("give --model NAME or --model-config config.json")
    catalog, _ = _catalogs(hardware_file)
    ctx = _ctx(chip, catalog, compute_dtype, dtype, kv_dtype or dtype, model, model_config)
    _save(serving.breakdown_data(ctx, chips, context, batch), out, force)


@plot_group.command("speculative")
@click.option("--draft-cost", default="0.05", show_default=True, help="a draft step's cost over a target step's")
@click.option("--drafts", default="1,2,4,8", show_default=True, help="draft lengths γ to draw against α (1 to 8)")
@click.option("--rates", default="0.6,0.8,0.9", show_default=True, help="acceptance rates α to draw against γ")
@_out_options
@friendly
def plot_speculative(draft_cost, drafts, rates, out, force):
    """Speculative decoding's expected speed-up against acceptance rate and draft length."""
    from ..plots import serving

    check_plot(out, force, "--out")
    _save(serving.speculative_data(draft_cost, _counts(drafts, "--drafts", 8), _split(rates, "--rates", 8)), out,
          force)


@plot_group.command("pareto")
@click.option("--model", help="a model from the catalog, e.g. llama3-70b")
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--chip", required=True)
@click.option("--dtype", default="bf16", show_default=True, help="weight dtype, or a comma list to search")
@click.option("--context", type=WholeNumber(1, 10**9), default=8192, show_default=True)
@click.option("--prompt", type=WholeNumber(1, 10**9), default=2048, show_default=True)
@click.option("--max-latency", help="per-token latency limit, e.g. 20ms")
@click.option("--objective", type=Choice(["throughput", "cost"]), default="throughput", show_default=True)
@click.option("--hardware-file", type=click.Path())
@_out_options
@click.pass_context
def plot_pareto(ctx, model, model_config, chip, dtype, context, prompt, max_latency, objective, hardware_file, out,
                force):
    """serve's latency-throughput Pareto front (the same as 'scalemath serve ... --plot FILE')."""
    friendly(check_plot)(out, force, "--out")
    args = ["--chip", chip, "--dtype", dtype, "--context", str(context), "--prompt", str(prompt), "--objective",
            objective, "--plot", out, "--format", "json"]
    args += ["--model", model] if model is not None else []
    args += ["--model-config", model_config] if model_config is not None else []
    args += ["--max-latency", max_latency] if max_latency is not None else []
    args += ["--hardware-file", hardware_file] if hardware_file is not None else []
    args += ["--force"] if force else []
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # the report itself is serve's to print
        serve_cmd.main(args, prog_name="scalemath plot pareto", standalone_mode=False)


@plot_group.command("plan")
@click.option("--model", help="a model from the catalog, e.g. llama3-70b")
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--chip", required=True)
@click.option("--chips", required=True, help="chips available, e.g. 8960")
@click.option("--batch-tokens", "batch", required=True, help="global batch in tokens, e.g. 4Mi")
@click.option("--seq-len", type=WholeNumber(1, 10**8), default=4096, show_default=True)
@click.option("--dtype", default="bf16", show_default=True)
@click.option("--x", "x_axis", type=Choice(["tp", "cp", "pp", "ep", "fsdp", "dp", "micro-batch"]), default="tp",
              show_default=True, help="degree across")
@click.option("--y", "y_axis", type=Choice(["tp", "cp", "pp", "ep", "fsdp", "dp", "micro-batch"]), default="fsdp",
              show_default=True, help="degree up")
@click.option("--mfu", help="price the book's way, the roofline time over this MFU (default: plan's achievable rates)")
@click.option("--hardware-file", type=click.Path())
@_out_options
@friendly
def plot_plan_cmd(model, model_config, chip, chips, batch, seq_len, dtype, x_axis, y_axis, mfu, hardware_file, out,
                  force):
    """plan's search as heat maps over two degrees: where it fits, and the best step time."""
    from ..search.plan import options
    from ..search.plan import plan as make_plan
    from ..plots import plan

    check_plot(out, force, "--out")
    if model is None and model_config is None:
        raise click.UsageError("give --model NAME or --model-config config.json")
    if x_axis == y_axis:
        raise click.BadParameter(f"--x and --y are both {x_axis}; give two different degrees", param_hint="--y")
    key, model_catalog = _model_catalog(model, model_config)
    catalog, _ = _catalogs(hardware_file)
    opts = options(chips, batch, seq_len=seq_len, mfu=mfu, dtype=dtype)
    m, c = model_catalog[key], catalog[chip]
    report = make_plan(m, c, opts, None, 1, catalog=catalog, model_catalog=model_catalog)
    _save(plan.data(m, c, opts, x_axis, y_axis, catalog, model_catalog, report), out, force)
