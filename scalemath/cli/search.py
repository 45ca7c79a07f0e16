"""The commands that search and price layouts: ``shard``, ``plan`` and ``serve``."""

from __future__ import annotations

import click

from .common import (
    DTYPES, Choice, Command, WholeNumber, _catalog, _dumps, _given, _model_catalog, chosen_conventions,
    complete_chip, complete_model, convention_option, friendly
)
from .figures import check_plot


def _public(value):
    """``value`` without the keys that start with "_" (objects kept for the text report), at every depth."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


@click.command("shard", cls=Command)
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
@click.option("--xla", "with_xla", is_flag=True,
              help="also compile PATTERN with jax.jit on simulated CPU devices (the xla extra): a contraction with its "
                   "arrays' shardings, a reshard with with_sharding_constraint; XLA's collectives beside the plans")
@click.option("--format", "fmt", type=Choice(["text", "json", "latex"]), default="text", show_default=True)
@friendly
def shard_cmd(pattern, mesh_text, chip, dtype, assignments, slice_text, hardware_file, with_xla, fmt):
    """Which sharding case PATTERN is, its collectives, bytes and times, and the cheaper plan.

    \b
    PATTERN is the book's notation, e.g. "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]":
    I_X shards I over mesh axis X, J_XY over X and Y, C[I, K]{U_X} is unreduced over X.
    """
    from ..reports.shard import as_text, reshard_text, shard_report

    if with_xla and fmt == "latex":
        raise click.UsageError("--xla prints text or JSON; drop --format latex")
    chip_record = _catalog(hardware_file)[chip] if chip is not None else None
    given = _given(assignments)
    record = shard_report(pattern, mesh_text, chip_record, dtype, given, slice_text)
    xla = None
    if with_xla:
        from ..xla.jit_check import check

        xla = check(record, pattern, given)
    reshard = "layouts" in record
    if fmt == "json":
        if reshard:
            data = _public(record)
        else:
            data = {k: v for k, v in record.items() if k != "plans"}
            data["plans"] = [{k: v for k, v in p.items() if not k.startswith("_")} for p in record["plans"]]
        if xla is not None:
            data["xla"] = xla
        click.echo(_dumps(data, indent=2, ensure_ascii=False))
    elif fmt == "latex" and not reshard:
        from ..reports.derive import as_latex, derivation_report
        from ..quantities import Context

        click.echo("\n\n".join(as_latex(derivation_report(f"shard: {p['name']}", Context(chip=chip, dtype=dtype),
                                                            p["_evaluated"])) for p in record["plans"]))
    else:
        click.echo(reshard_text(record) if reshard else as_text(record))
        if xla is not None:
            from ..xla.jit_check import as_text as xla_text

            click.echo("\n" + xla_text(xla))


@click.command("plan", cls=Command)
@click.option("--model", help="a model from the catalog, e.g. llama3-70b", shell_complete=complete_model)
@click.option("--model-config", type=click.Path(), help="a Hugging Face style config.json instead")
@click.option("--chip", required=True, help="e.g. tpu-v5p or h100", shell_complete=complete_chip)
@click.option("--chips", required=True, help="chips available, e.g. 8960 (the search may use fewer)")
@click.option("--batch-tokens", "batch", required=True, help="global batch in tokens: 4M = 4e6, 4Mi = 4*2^20")
@click.option("--seq-len", type=WholeNumber(1, 10**8), default=4096, show_default=True,
              help="tokens per sequence; the batch is a whole number of sequences")
@click.option("--tokens", help="training tokens, e.g. 15T, for the total training time")
@click.option("--mfu", help="price the book's way instead: the roofline time over this MFU (10^-6 to 1); by "
              "default the step is priced from the catalog's achievable rates and MFU is an output")
@click.option("--dtype", default="bf16", show_default=True,
              help="weights and activations, or a comma list to search, e.g. bf16,fp8")
@click.option("--weight-dtype", type=Choice(DTYPES),
              help="weights as stored (default: --dtype, but bf16 under 8- or 4-bit matmuls)")
@click.option("--grad-dtype", type=Choice(DTYPES), help="gradients (default: the weights' dtype)")
@click.option("--optimizer-bytes",
              help="optimizer state per parameter, 0 to 64: 8 for Adam's fp32 moments (the book's, the default), 12 "
                   "with an fp32 master copy, 0 for plain SGD; --convention optimizer=... sets it and --grad-dtype")
@click.option("--tp", type=WholeNumber(1, 10**6), help="pin the tensor-parallel degree")
@click.option("--cp", type=WholeNumber(1, 10**6),
              help="pin the context-parallel degree (each sequence split over CP chips; 1 turns it off)")
@click.option("--pp", type=WholeNumber(1, 10**6), help="pin the pipeline stages")
@click.option("--ep", type=WholeNumber(1, 10**6), help="pin the expert-parallel degree")
@click.option("--fsdp", type=WholeNumber(1, 10**9), help="pin the FSDP degree")
@click.option("--dp", type=WholeNumber(1, 10**9),
              help="pin the data-parallel degree outside the expert shards (the replicas are DP x EP)")
@click.option("--micro-batch", type=WholeNumber(1, 10**9), help="pin the sequences per micro-batch")
@click.option("--checkpointing", type=Choice(["block", "big-matmuls", "none"]), help="pin the checkpointing policy")
@click.option("--zero1/--no-zero1", default=None, help="pin ZeRO-1 (optimizer state split over the replicas)")
@click.option("--zero", "zero_stage", type=click.IntRange(0, 2),
              help="pin the ZeRO stage over the replicas: 0, 1 (optimizer state split) or 2 (gradients too); "
                   "stage 3 is --fsdp")
@click.option("--schedule", type=Choice(["gpipe", "1f1b", "interleaved", "zero-bubble"]),
              help="pipeline schedule: GPipe and 1F1B leave n_PP - 1 idle slots per step, interleaved 1F1B "
                   "(n_PP - 1)/v with v virtual stages, zero-bubble none (default: interleaved; 1f1b with --mfu)")
@click.option("--virtual-stages", type=WholeNumber(1, 64), help="pin the interleaved schedule's stages per device")
@click.option("--tp-overlap/--no-tp-overlap", default=False, show_default=True,
              help="tensor-parallel collectives overlap compute (Megatron-LM exposes them unless told otherwise)")
@click.option("--ep-overlap/--no-ep-overlap", default=False, show_default=True,
              help="expert AllToAlls overlap compute (as DeepSeek-V3's DualPipe does)")
@click.option("--dp-overlap/--no-dp-overlap", default=True, show_default=True,
              help="the gradient reduction overlaps the last micro-batch's backward pass (Megatron-LM's before 2023 "
                   "waited for it)")
@click.option("--param-gather-overlap/--no-param-gather-overlap", default=False, show_default=True,
              help="with ZeRO, the AllGather of the updated weights overlaps the next step's first forward pass "
                   "(Megatron-LM's --overlap-param-gather, FSDP's prefetch); without, the step waits for it")
@click.option("--attention-kernel", type=Choice(["fused", "unfused"]), default="fused", show_default=True,
              help="fused: a FlashAttention-style causal kernel; unfused: scores materialised in HBM and every "
                   "position multiplied (Megatron-LM in 2021)")
@click.option("--sequence-parallel/--no-sequence-parallel", default=True, show_default=True,
              help="norms, dropouts and residual adds split over the tensor-parallel ranks (Megatron-LM since 2022)")
@click.option("--route-nodes", type=WholeNumber(1, 10**6),
              help="a mixture's tokens reach experts on at most this many nodes (DeepSeek-V3: 4): fewer copies cross "
                   "the scale-out network")
@click.option("--dropout/--no-dropout", default=False, show_default=True,
              help="the model trains with dropout (GPT-3, Megatron-LM's GPT); its masks cost memory traffic")
@click.option("--top", type=WholeNumber(1, 50), default=5, show_default=True, help="configurations to list")
@click.option("--backend", type=Choice(["numpy", "dask"]), default="numpy", show_default=True,
              help="evaluate the space with NumPy, or on dask arrays (pip install 'scalemath[dask]')")
@click.option("--hardware-file", type=click.Path())
@convention_option
@click.option("--format", "fmt", type=Choice(["text", "json", "markdown", "latex"]), default="text",
              show_default=True)
@click.option("--plot", "plot_file", type=click.Path(),
              help="also draw the search as heat maps over TP and FSDP: FILE.png, .svg or .pdf")
@click.option("--force", is_flag=True, help="let --plot replace a plot scalemath wrote")
@friendly
def plan_cmd(model, model_config, chip, chips, batch, seq_len, tokens, mfu, dtype, weight_dtype, grad_dtype,
             optimizer_bytes, tp, cp, pp, ep, fsdp, dp, micro_batch, checkpointing, zero1, zero_stage, schedule, virtual_stages,
             tp_overlap, ep_overlap, dp_overlap, param_gather_overlap, attention_kernel, route_nodes,
             sequence_parallel, dropout, top,
             backend,
             hardware_file, fmt, plot_file, force):
    """Search every way to train a model on CHIPS: parallelism degrees (tensor, context, expert, pipeline with its
    virtual stages, FSDP, data), micro-batches, checkpointing, ZeRO-1.

    Every configuration is priced by the closed forms parallel.run.memory_per_device and parallel.run.step_time,
    from the catalog's achievable matmul rates and collective bandwidths (MFU and throughput come out), or with
    --mfu by the book's parallel.config.*; the best few are shown with their derivations and why the others lost.
    """
    from ..search import plan as planner
    from ..search import plan_report

    if model is None and model_config is None:
        raise click.UsageError("give --model NAME or --model-config config.json")
    check_plot(plot_file, force)
    key, model_catalog = _model_catalog(model, model_config)
    catalog = _catalog(hardware_file)
    opts = planner.options(chips, batch, seq_len=seq_len, mfu=mfu, dtype=dtype, weight_dtype=weight_dtype,
                           grad_dtype=grad_dtype, optimizer_bytes=optimizer_bytes, schedule=schedule, backend=backend,
                           pins={"tp": tp, "cp": cp, "pp": pp, "ep": ep, "fsdp": fsdp, "dp": dp, "mb": micro_batch,
                                 "v": virtual_stages, "checkpointing": checkpointing, "zero1": zero1,
                                 "zero": zero_stage},
                           tp_overlap=tp_overlap, ep_overlap=ep_overlap, dp_overlap=dp_overlap,
                           param_gather_overlap=param_gather_overlap,
                           attention_kernel=attention_kernel, sequence_parallel=sequence_parallel, dropout=dropout,
                           route_nodes=route_nodes,
                           conventions=chosen_conventions())
    report = planner.plan(model_catalog[key], catalog[chip], opts,
                          planner.parse_count(tokens, "--tokens") if tokens is not None else None, top,
                          catalog=catalog, model_catalog=model_catalog)
    if fmt == "json":
        click.echo(_dumps(plan_report.as_json(report), indent=2, ensure_ascii=False))
    elif fmt == "markdown":
        click.echo(plan_report.as_markdown(report))
    elif fmt == "latex":
        click.echo(plan_report.as_latex(report))
    else:
        click.echo(plan_report.as_text(report))
    if plot_file is not None:
        from .figures import plot_plan

        plot_plan(plot_file, force, model_catalog[key], catalog[chip], opts, report, catalog, model_catalog)


@click.command("serve", cls=Command)
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
@click.option("--mfu", default="0.5", show_default=True, help="utilisation of prefill, 10^-6 to 1")
@click.option("--beyond-max-context", is_flag=True,
              help="allow --context past the model's released maximum (with a warning)")
@click.option("--hardware-file", type=click.Path())
@convention_option
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
    check_plot(plot_file, force)
    server.check_shape(topology, chips)
    weights = server.dtypes(dtype, "--dtype")
    caches = server.dtypes(kv_dtype, "--kv-dtype") if kv_dtype is not None else None
    limit = server.parse_latency(max_latency) if max_latency is not None else None
    key, model_catalog = _model_catalog(model, model_config)
    catalog = _catalog(hardware_file)
    catalog[chip]
    ctx = Context(chip=chip, dtype=compute_dtype, weight_dtype=weights[0], kv_dtype=caches[0] if caches else None,
                  catalog=catalog, model=key, model_catalog=model_catalog, conventions=chosen_conventions())
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
        from .figures import plot_serve

        plot_serve(plot_file, force, report)
