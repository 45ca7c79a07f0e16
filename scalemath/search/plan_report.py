"""``scalemath plan``'s report in its formats: text, Markdown, LaTeX and JSON, with the best configuration's
derivations, what it achieves, the rates it was priced at, and why the others lost."""

from __future__ import annotations

from ..values import printing as formatting
from ..symbolic.derivation import Evaluated
from . import train_space as search
from .plan import MEMORY, PARTS, PLAN_AXES, Candidate, _count, _seconds, bottleneck, conventions_line, describe

__all__ = ["as_text", "as_markdown", "as_latex", "as_json", "forms", "batch_note"]


def _memory_line(c: Candidate, hbm: int) -> str:
    parts = ", ".join(f"{name} {formatting.with_unit(next(s.value for s in c.memory.steps if s.step.label == label), 'byte')}"
                      for label, name in MEMORY.items())
    return f"{formatting.with_unit(c.memory.value, 'byte')} of {formatting.with_unit(hbm, 'byte')}: {parts}"


def _time_line(c: Candidate) -> str:
    parts = ", ".join(f"{name} {_seconds(c.part(label))}" for label, name in PARTS.items() if c.part(label))
    return f"{formatting.with_unit(c.step.value, 's')}, {bottleneck(c)} ({parts})"


def _achieved_lines(report: dict, c: Candidate) -> list[str]:
    """What the step achieves (MFU, HFU, throughput), and what the pricing assumed to get there."""
    opts, got = report["opts"], report["achieved"]
    counted = {"none": "6·P_active per token, attention left out (the book's)",
               "causal": "6·P_active + 6·L·N·H·T per token (attention's causal dot products)",
               "full": "6·P_active + 12·L·N·H·T per token (attention over every position; HFU counts what the "
                       "chips ran, attention's causal half with a fused kernel, so it can come out below MFU)"}[
        got["attention"]]
    lines = [f"  achieved: MFU {formatting.decimal(got['mfu'], 3)}, HFU {formatting.decimal(got['hfu'], 3)}, "
             f"{formatting.decimal(got['tokens_per_chip'], 4)} tokens/s and "
             f"{formatting.with_unit(got['flops_per_chip'], 'FLOP/s')} of model FLOPs per chip (model FLOPs: {counted})"]
    if opts.pricing == "book":
        lines.append(f"  priced the book's way: the roofline time over --mfu {formatting.decimal(opts.mfu)}")
    else:
        lines.append("  priced from achievable rates, no MFU assumed: " + ", ".join(report["rates"].lines())
                     + f" (sources: scalemath hardware show {report['chip']})")
        lines.append("  overlap: " + overlap_line(opts))
        if report["rates"].sustained is None:
            hint = (f"; the catalog fits no sustained fraction for {report['chip']}, so efficiency=sustained keeps "
                    "the kernel rates" if opts.conventions["efficiency"] == "sustained" else
                    " (--convention efficiency=sustained prices at the share of the kernel rates published runs "
                    "sustained, where the catalog has it)")
            lines.append("  not modelled: kernel launch gaps, host and data-loading stalls, stragglers, checkpointing "
                         "to storage, which only slow a run: an upper estimate" + hint)
        else:
            lines.append("  the kernel rates are scaled by the share of them published runs sustained (fitted, "
                         "--convention efficiency=sustained), which takes in on average what the pricing leaves out "
                         "(launch gaps, stalls, stragglers): an estimate of what a run achieves, not an upper one")
    return lines


def overlap_line(opts: search.Options) -> str:
    """Which collectives the pricing overlaps with compute and which it exposes, with the flag that changes each."""
    def say(on: bool, what: str, hidden: str, flag_on: str, flag_off: str) -> str:
        return f"{what} {hidden} ({flag_off})" if on else f"{what} exposed ({flag_on} to hide)"
    return "; ".join([
        say(opts.tp_overlap, "tensor-parallel collectives", "overlapped", "--tp-overlap", "--no-tp-overlap to expose"),
        say(opts.dp_overlap, "gradient reduction", "under the last backward pass", "--dp-overlap",
            "--no-dp-overlap to wait"),
        say(opts.param_gather_overlap, "ZeRO's weight AllGather", "under the next forward pass",
            "--param-gather-overlap", "--no-param-gather-overlap to expose"),
        say(opts.ep_overlap, "expert AllToAlls", "overlapped", "--ep-overlap", "--no-ep-overlap to expose"),
        "FSDP gathers and pipeline transfers overlapped, context-parallel passes under attention"])


def batch_note(opts: search.Options) -> str:
    """What rounding --batch-tokens to whole sequences did."""
    return (f"--batch-tokens {opts.batch_asked:,} is not a whole number of {opts.seq_len}-token sequences: rounded to "
            f"the nearest, {_count(opts.batch // opts.seq_len, 'sequence')} = {opts.batch:,} tokens")


def _summary(report: dict) -> list[str]:
    opts, best, s = report["opts"], report["best"], report["search"]
    lines = [f"parameters: {formatting.decimal(report['params'], 4)} (active {formatting.decimal(report['active_params'], 4)})",
             f"searched {s['candidates']:,} configuration{'s' if s['candidates'] != 1 else ''} in {s['seconds']:.2f} s "
             f"CPU; {s['feasible']:,} fit in "
             f"{formatting.with_unit(report['hbm'], 'byte')} of HBM",
             f"conventions: {conventions_line(opts)}"]
    if best is None:
        lines.append("no configuration fits: use more chips, a smaller --seq-len, or unpin a degree")
        return lines
    lines += [f"best: {describe(best)}",
              f"  memory per chip: {_memory_line(best, report['hbm'])}",
              f"  step time: {_time_line(best)}"] + _achieved_lines(report, best)
    if report["training_time"] is not None:
        t = report["training_time"]
        lines.append(f"  training time for {formatting.decimal(report['tokens'])} tokens: {formatting.with_unit(t, 's')}"
                     f" = {formatting.decimal(t / 86400, 3)} days")
    return lines


def forms(opts: search.Options) -> tuple[str, str]:
    """The quantities that priced the search: the book's (with --mfu) or a run's."""
    kind = "config" if opts.pricing == "book" else "run"
    return f"parallel.{kind}.memory_per_device", f"parallel.{kind}.step_time"


def _derivation_lines(ev: Evaluated) -> list[str]:
    from ..reports.derive import _plain

    return [f"  {_plain(s.step.label)} = {_seconds(s.value) if s.step.unit == 's' else formatting.with_unit(s.value, s.step.unit)}"
            f"   ({s.step.why})" for s in ev.steps]


def as_text(report: dict) -> str:
    opts = report["opts"]
    lines = [f"plan: {report['model']} on {opts.chips} x {report['chip']}, batch {opts.batch} tokens "
             f"({_count(opts.batch // opts.seq_len, 'sequence')} of {opts.seq_len}), {opts.dtype}"]
    lines += [batch_note(opts)] if opts.batch_asked else []
    lines += [""]
    lines += _summary(report)
    best = report["best"]
    if best is not None:
        memory, step = forms(opts)
        lines += ["", f"why it fits ({memory}):"] + _derivation_lines(best.memory)
        lines += ["", f"where the time goes ({step}):"] + _derivation_lines(best.step)
        lines += ["", "runners-up:"]
        lines += [f"  {i}. {describe(c)}: {c.why}" for i, c in enumerate(report["ranked"][1:], 2)]
    lines += ["", "each mix of parallelism at its best:"]
    lines += [f"  {c.name}: {describe(c)}: {c.why or 'the best'}" for c in report["families"]]
    lines += ["", f"placement: {report['placement']}"]
    return "\n".join(lines)


def as_markdown(report: dict) -> str:
    opts = report["opts"]
    lines = [f"# Training plan: {report['model']} on {opts.chips} x {report['chip']}", ""]
    lines += [f"- {x.strip()}" for x in _summary(report)]
    lines += ["", "| mix | configuration | memory per chip | step | why not |", "|---|---|---:|---:|---|"]
    lines += [f"| {c.name} | {describe(c)} | {formatting.with_unit(c.memory.value, 'byte')} | "
              f"{formatting.with_unit(c.step.value, 's')} | {c.why or 'the best'} |" for c in report["families"]]
    return "\n".join(lines) + "\n"


def as_latex(report: dict) -> str:
    def tex(text: str) -> str:
        return formatting.escape(text, "tex", prose=True)

    rows = " \\\\\n".join(f"{tex(c.name)} & {tex(formatting.with_unit(c.memory.value, 'byte'))} & "
                          f"{tex(formatting.with_unit(c.step.value, 's'))} & {tex(c.why or 'the best')}"
                          for c in report["families"])
    items = "\n".join(f"\\item {tex(x.strip())}" for x in _summary(report))
    return (f"\\begin{{itemize}}\n{items}\n\\end{{itemize}}\n"
            "\\begin{tabular}{lrrp{0.5\\linewidth}}\n\\toprule\nmix & memory per chip & step & why not \\\\\n\\midrule\n"
            f"{rows} \\\\\n\\bottomrule\n\\end{{tabular}}")


def _num(value) -> dict:
    return {"exact": str(value), "value": formatting.to_float(value)}


def _candidate_json(c: Candidate) -> dict:
    return {"family": c.name, "config": c.config, "fits": c.fits, "why": c.why,
            "memory_per_chip": _num(c.memory.value), "step_time": _num(c.step.value),
            "memory": {name: _num(next(s.value for s in c.memory.steps if s.step.label == label))
                       for label, name in MEMORY.items()},
            "time": {name: _num(c.part(label)) for label, name in PARTS.items()}}


def as_json(report: dict) -> dict:
    from ..quantities import Context
    from ..reports.derive import derivation_report

    opts, best = report["opts"], report["best"]
    out = {"model": report["model"], "chip": report["chip"], "chips": opts.chips, "batch_tokens": opts.batch,
           "seq_len": opts.seq_len, "tokens": report["tokens"], "dtype": opts.dtype,
           "batch_tokens_asked": opts.batch_asked, "pricing": opts.pricing,
           "mfu": None if opts.mfu is None else str(opts.mfu), "schedule": opts.schedule,
           "tp_overlap": opts.tp_overlap, "ep_overlap": opts.ep_overlap, "dp_overlap": opts.dp_overlap,
           "param_gather_overlap": opts.param_gather_overlap,
           "attention_kernel": opts.attention_kernel, "sequence_parallel": opts.sequence_parallel,
           "dropout": opts.dropout, "route_nodes": opts.route_nodes,
           "achieved": None if report["achieved"] is None else
           {k: v if isinstance(v, str) else _num(v) for k, v in report["achieved"].items()},
           "rates": None if report["rates"] is None else
           {name: {"value": _num(value), "source": src, "measured": measured,
                   **({"sustained_fraction": None if report["rates"].sustained is None else
                       _num(report["rates"].sustained)} if name in report["rates"].KERNELS else {})}
            for (name, (src, measured)), value in zip(report["rates"].sources.items(), report["rates"].values())},
           "params": _num(report["params"]), "active_params": _num(report["active_params"]),
           "search": report["search"], "placement": report["placement"],
           "results": [_candidate_json(c) for c in report["ranked"]],
           "families": [_candidate_json(c) for c in report["families"]],
           "training_time": None if report["training_time"] is None else _num(report["training_time"]),
           "conventions": {**opts.conventions.choices(PLAN_AXES), "optimizer_bytes": str(opts.optimizer_bytes),
                           "grad_dtype": opts.grad_dtype, "note": conventions_line(opts)}}
    if best is not None:
        ctx = Context(chip=report["chip"], dtype=best.config["dtype"], weight_dtype=best.config["weight_dtype"],
                      model=report["model"], conventions=opts.conventions.restricted(["hardware"]))
        out["derivations"] = {
            name: {k: v for k, v in derivation_report(q, ctx, ev).items() if not k.startswith("_")}
            for name, q, ev in zip(("memory", "step_time"), forms(opts), (best.memory, best.step))}
    return out
