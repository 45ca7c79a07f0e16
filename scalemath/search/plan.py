"""``scalemath plan``: search every way to train a model on a cluster, and explain the best.

The search (:mod:`scalemath.search.train_space`) prices every configuration with two closed forms,
``parallel.config.memory_per_device`` and ``parallel.config.step_time``, compiled once to NumPy.
The winners are then evaluated again exactly (rationals, every step kept), so the report can show
why the best fits, what bounds its step and where the time goes, and why each runner-up lost.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from ..values import printing as formatting
from ..catalog import hardware, models
from ..conventions import BOOK, Conventions
from ..errors import BadValueError
from . import train_space as search
from ..symbolic.derivation import Evaluated

__all__ = ["plan", "as_text", "as_markdown", "as_latex", "as_json", "parse_count", "MAX_COUNT"]

_SUFFIX = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
           "Ti": 2**40}
MAX_COUNT = 10**18
#: Time parts of the step, by their step labels, and what each is in words.
PARTS = {r"T_{\mathrm{math}}": "compute", r"T_{\mathrm{TP}}": "tensor-parallel collectives",
         r"T_{\mathrm{EP}}": "expert AllToAlls", r"T_{\mathrm{FSDP}}": "FSDP weight gathers",
         r"T_{\mathrm{PP}}": "pipeline transfers", r"T_{\mathrm{DP}}": "gradient reduction"}
MEMORY = {r"\mathrm{bytes}_{w}": "weights", r"\mathrm{bytes}_{g}": "gradients",
          r"\mathrm{bytes}_{\mathrm{opt}}": "optimizer", r"\mathrm{bytes}_{\mathrm{act}}": "activations"}


def parse_count(text: str, what: str) -> int:
    """``4M`` = 4e6, ``4Mi`` = 4·2^20, ``15T`` = 1.5e13, or plain arithmetic (``1024*4096``).

    >>> parse_count("4Mi", "batch"), parse_count("15T", "tokens"), parse_count("1024*4096", "batch")
    (4194304, 15000000000000, 4194304)
    """
    from ..values.parse import parse_number

    text = text.strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if text.endswith(suffix) and text[: -len(suffix)].strip():
            value = parse_number(text[: -len(suffix)]) * _SUFFIX[suffix]
            break
    else:
        value = parse_number(text)
    if not (value.is_Integer and 0 < value <= MAX_COUNT):
        raise BadValueError(f"{what} = {text} must be a positive whole number up to 10^18 (e.g. 4M = 4e6, 4Mi = 4*2^20)")
    return int(value)


def options(chips, batch_tokens, *, seq_len: int = 4096, mfu="0.4", dtype: str = "bf16",
            weight_dtype: str | None = None, grad_dtype: str | None = None, optimizer_bytes=None,
            schedule: str = "1f1b", backend: str = "numpy", pins: dict | None = None,
            conventions: Conventions = BOOK) -> search.Options:
    """The search's options from what a user typed (the CLI's options and the API's arguments alike):
    counts in parse_count's spellings, ``mfu`` from 10^-6 to 1, ``optimizer_bytes`` from 0 to 64; ``pins`` maps
    tp, pp, ep, fsdp, dp, mb, checkpointing and zero1 to a value or None (searched). ``optimizer_bytes`` and
    ``grad_dtype`` default to what the ``optimizer`` convention counts (:data:`OPTIMIZER_PRESETS`); the search
    prices every other axis the book's way and refuses another choice by name.

    >>> o = options("256", "4Mi", mfu="0.5", pins={"tp": 4, "pp": None})
    >>> o.chips, o.batch, o.mfu, o.pins
    (256, 4194304, Fraction(1, 2), {'tp': 4})
    """
    from fractions import Fraction

    from ..values.parse import parse_number

    conventions.refuse_beyond(PLAN_AXES, "plan")
    preset_bytes, preset_grads = OPTIMIZER_PRESETS[conventions["optimizer"]]
    optimizer_bytes = preset_bytes if optimizer_bytes is None else optimizer_bytes
    grad_dtype = preset_grads if grad_dtype is None else grad_dtype
    opt_bytes = parse_number(str(optimizer_bytes))
    if not (opt_bytes.is_Rational and 0 <= opt_bytes <= 64):
        raise BadValueError(f"--optimizer-bytes {optimizer_bytes} must be a number of bytes from 0 to 64")
    mfu_value = parse_number(str(mfu))
    if not (mfu_value.is_Rational and sp.Rational(1, 10**6) <= mfu_value <= 1):
        raise BadValueError(f"--mfu {mfu} must be from 10^-6 to 1: a fraction of the peak (0.4 is typical); "
                            "smaller ones overflow the search's single-precision ranking")
    return search.Options(chips=parse_count(str(chips), "--chips"), batch=parse_count(str(batch_tokens), "--batch-tokens"),
                          seq_len=seq_len, mfu=Fraction(str(mfu_value)), dtype=dtype, weight_dtype=weight_dtype,
                          grad_dtype=grad_dtype, optimizer_bytes=Fraction(str(opt_bytes)), schedule=schedule,
                          backend=backend, pins={k: v for k, v in (pins or {}).items() if v is not None},
                          conventions=conventions)


#: The axes the search honours (every other is priced the book's way, and another choice is refused).
PLAN_AXES = ("optimizer", "hardware")

#: (optimizer bytes per parameter, gradient dtype) under each ``optimizer`` convention; a gradient dtype of None is
#: the weights' own. With the weights' 2 bytes: the book's 2 + 2 + 8, frameworks' mixed precision 2 + 4 + 12 = 18,
#: the ZeRO paper's 2 + 2 + 12 = 16 bytes per parameter.
OPTIMIZER_PRESETS = {"book": (8, None), "mixed-precision": (12, "fp32"), "zero-paper": (12, None)}


def conventions_line(opts: search.Options) -> str:
    """What the search counted by: the optimizer convention, or the bytes the user gave instead of it."""
    chosen = opts.conventions
    preset = OPTIMIZER_PRESETS[chosen["optimizer"]]
    grads = opts.grad_dtype or "the weights' dtype"
    given = (opts.optimizer_bytes, opts.grad_dtype) != (Fraction(preset[0]), preset[1])
    return (f"optimizer {'as given' if given else chosen['optimizer']} ({formatting.decimal(opts.optimizer_bytes)} "
            f"bytes of state per parameter, gradients in {grads}); {chosen.describe(['hardware'])}; the book's on "
            "every other axis")


@dataclass
class Candidate:
    """One configuration with its exact memory and step time."""

    config: dict[str, object]
    memory: Evaluated
    step: Evaluated
    fits: bool
    why: str = ""

    def part(self, label: str) -> sp.Expr:
        return next(s.value for s in self.step.steps + self.memory.steps if s.step.label == label)

    @property
    def name(self) -> str:
        c = self.config
        return search.family(c["tp"], c["pp"], c["ep"], c["fsdp"], c["replicas"])


def _exact(row: dict, result: search.Result, opts: search.Options, hbm: int) -> Candidate:
    ckpt, remat, _ = list(search.POLICIES.values())[int(row["ckpt"])]
    point = {"n_dp": int(row["dp"]), "n_fsdp": int(row["fsdp"]), "n_tp": int(row["tp"]), "n_pp": int(row["pp"]),
             "n_ep": int(row["ep"]), "n_mb": int(row["n_mb"]), "n_ckpt": ckpt, "r_remat": remat,
             "n_zero": int(row["dp"]) if row["zero"] else 1,
             **{w: int(row[w]) for w in ("W_tp", "W_fsdp", "W_dp", "W_ep", "W_pp")}}
    config = {"tp": int(row["tp"]), "pp": int(row["pp"]), "ep": int(row["ep"]), "fsdp": int(row["fsdp"]),
              "dp": int(row["dp"]) // int(row["ep"]), "replicas": int(row["dp"]), "chips": int(row["chips"]),
              "micro_batch": int(row["mb"]),
              "micro_batches": int(row["n_mb"]), "checkpointing": list(search.POLICIES)[int(row["ckpt"])],
              "zero1": bool(row["zero"]), "dtype": opts.dtype, "weight_dtype": search.stored_dtype(opts),
              "bandwidths": {w: int(row[w]) for w in ("W_tp", "W_fsdp", "W_dp", "W_ep", "W_pp")}}
    memory, step = result.memory.exact(point), result.step.exact(point)
    return Candidate(config, memory, step, bool(memory.value <= hbm))


def plan(model: models.Model, chip: hardware.Chip, opts: search.Options, tokens: int | None = None, top: int = 5,
         catalog=None, model_catalog=None) -> dict:
    """The search, its best ``top`` configurations and the best of each mix of parallelism, explained."""
    chip = chip.under(opts.conventions["hardware"])
    if opts.chips < 1:
        raise BadValueError(f"--chips {opts.chips} must be at least 1")
    if not Fraction(1, 10**6) <= opts.mfu <= 1:
        raise BadValueError(f"--mfu {opts.mfu} must be from 10^-6 to 1")
    if opts.batch < opts.seq_len:
        raise BadValueError(f"--batch-tokens {opts.batch} is less than one sequence of --seq-len {opts.seq_len}")
    if model.max_context and opts.seq_len > model.max_context:
        raise BadValueError(f"--seq-len {opts.seq_len} is longer than {model.key} allows ({model.max_context})")
    dtypes = list(dict.fromkeys(d.strip() for d in opts.dtype.split(",") if d.strip()))
    if not dtypes:
        raise BadValueError("--dtype names no dtype; give one or a comma list such as bf16,fp8")
    for d in dtypes:
        hardware.dtype_bytes(d)
        chip.flops(d)  # a dtype the chip has no rate for: a clear error now
    search.space(model, chip, dataclasses.replace(opts, dtype=dtypes[0]), len(dtypes))  # too large: refused now
    hbm = chip.hbm_bytes
    ranked, families, counts = [], {}, {"candidates": 0, "feasible": 0, "seconds": 0.0}
    for d in dtypes:  # each dtype is its own space (its own peak rate and bytes), searched whole
        sub = dataclasses.replace(opts, dtype=d)
        result = search.search(model, chip, sub, keep=top, catalog=catalog, model_catalog=model_catalog)
        for key in counts:
            counts[key] += getattr(result, key)
        ranked += [_exact({k: v[i].item() for k, v in result.table.items()}, result, sub, hbm)
                   for i in range(len(result.table.get("step", [])))]
        for name, row in result.families.items():
            c = _exact(row, result, sub, hbm)
            if name not in families or _key(c) < _key(families[name]):
                families[name] = c
    ranked = sorted(ranked, key=_key)[:top]
    families = list(families.values())
    best = ranked[0] if ranked else None
    for c in ranked[1:] + families:
        c.why = "" if best is not None and c.config == best.config else \
            _why_lost(c, best, hbm) if best else _why_unfit(c, hbm)
    families.sort(key=_key)
    training = sp.Rational(tokens, opts.batch) * best.step.value if best is not None and tokens else None
    return {"model": model.key, "chip": chip.key, "opts": opts, "tokens": tokens, "hbm": hbm,
            "params": model.param_count(), "active_params": model.param_count(active=True),
            "search": counts, "placement": search.placement(chip), "ranked": ranked, "best": best, "families": families,
            "training_time": training}


def _key(c: Candidate) -> tuple:
    """The search's order, on exact values: fitting first; fastest (a relative 1e-7 counts as a tie), fewer
    chips, less communication, less memory; a configuration that does not fit by its memory."""
    if not c.fits:
        return (1, c.memory.value)
    return (0, round(float(c.step.value), 7 - int(math.floor(math.log10(float(c.step.value))))), c.config["chips"],
            float(c.part(r"T_{\mathrm{comms}}")), c.memory.value)


def _why_unfit(c: Candidate, hbm: int) -> str:
    parts = {name: next(s.value for s in c.memory.steps if s.step.label == label) for label, name in MEMORY.items()}
    largest = max(parts, key=parts.get)
    return (f"does not fit: {formatting.with_unit(c.memory.value, 'byte')} per chip > "
            f"{formatting.with_unit(hbm, 'byte')} of HBM (largest part: {largest}, "
            f"{formatting.with_unit(parts[largest], 'byte')})")


def bottleneck(c: Candidate) -> str:
    """What sets the step: compute, or the slowest communication; plus the bubble and exposed reduction."""
    parts = {name: c.part(label) for label, name in PARTS.items() if name != "gradient reduction"}
    slowest = max(parts, key=parts.get)
    busy, pipe = c.part(r"T_{\mathrm{busy}}"), c.part(r"T_{\mathrm{pipe}}")
    exposed = c.part(r"T_{\mathrm{DP}}^{\mathrm{exposed}}")
    out = ["compute-bound" if slowest == "compute" else
           f"bound by {slowest} ({formatting.with_unit(parts[slowest], 's')} against "
           f"{formatting.with_unit(parts['compute'], 's')} of compute)"]
    if pipe > busy:
        out.append(f"the pipeline bubble adds {formatting.with_unit(pipe - busy, 's')}")
    if exposed > 0:
        out.append(f"the gradient reduction leaves {formatting.with_unit(exposed, 's')} exposed")
    if c.config["checkpointing"] == "block":
        out.append("rematerialisation redoes the forward pass")
    return "; ".join(out)


def _why_lost(c: Candidate, best: Candidate, hbm: int) -> str:
    """Why ``c`` ranks below ``best``, by the search's order: step time, chips, slowest communication, memory."""
    if not c.fits:
        return _why_unfit(c, hbm)
    slower = c.step.value / best.step.value - 1
    if slower > sp.Rational(1, 10**7):
        return f"{formatting.decimal(100 * slower, 3)} % slower: {bottleneck(c)}"
    if c.config["chips"] > best.config["chips"]:
        return f"as fast, on more chips ({c.config['chips']})"
    label = r"T_{\mathrm{comms}}"
    if c.part(label) > best.part(label) * (1 + sp.Rational(1, 10**7)):
        return (f"as fast, with less slack: its slowest collective takes {_seconds(c.part(label))} against "
                f"{_seconds(best.part(label))}")
    return (f"as fast, with more memory per chip ({formatting.with_unit(c.memory.value, 'byte')} against "
            f"{formatting.with_unit(best.memory.value, 'byte')})")


def _seconds(value) -> str:
    return "0 s" if value == 0 else formatting.with_unit(value, "s")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def describe(c: Candidate) -> str:
    k = c.config
    sizes = (("TP", k["tp"]), ("EP", k["ep"]), ("PP", k["pp"]), ("FSDP", k["fsdp"]), ("DP", k["dp"]))
    degrees = " x ".join(f"{name} {n}" for name, n in sizes if n > 1)
    where = f"{degrees} ({k['chips']} chips)" if degrees else "one chip"
    return (f"{where}, micro-batch {k['micro_batch']} "
            f"sequence{'s' if k['micro_batch'] > 1 else ''} x {k['micro_batches']}, checkpointing "
            f"{k['checkpointing']}, ZeRO-1 {'on' if k['zero1'] else 'off'}, {k['dtype']} matmuls"
            + (f" on {k['weight_dtype']} weights" if k["weight_dtype"] != k["dtype"] else ""))


def _memory_line(c: Candidate, hbm: int) -> str:
    parts = ", ".join(f"{name} {formatting.with_unit(next(s.value for s in c.memory.steps if s.step.label == label), 'byte')}"
                      for label, name in MEMORY.items())
    return f"{formatting.with_unit(c.memory.value, 'byte')} of {formatting.with_unit(hbm, 'byte')}: {parts}"


def _time_line(c: Candidate) -> str:
    parts = ", ".join(f"{name} {_seconds(c.part(label))}" for label, name in PARTS.items() if c.part(label))
    return f"{formatting.with_unit(c.step.value, 's')}, {bottleneck(c)} ({parts})"


def _achieved_mfu(report: dict, c: Candidate) -> sp.Expr:
    """6·P_active·B over what the chips could do in the step: the MFU the compute runs at, less what
    rematerialisation, communication and the bubble take."""
    remat = c.config["checkpointing"] == "block"
    return c.part(r"T_{\mathrm{math}}") * sp.Rational(6, 6 + 2 * remat) / c.step.value


def _summary(report: dict) -> list[str]:
    opts, best, s = report["opts"], report["best"], report["search"]
    lines = [f"parameters: {formatting.decimal(report['params'], 4)} (active {formatting.decimal(report['active_params'], 4)})",
             f"searched {s['candidates']:,} configurations in {s['seconds']:.2f} s CPU; {s['feasible']:,} fit in "
             f"{formatting.with_unit(report['hbm'], 'byte')} of HBM",
             f"conventions: {conventions_line(opts)}"]
    if best is None:
        lines.append("no configuration fits: use more chips, a smaller --seq-len, or unpin a degree")
        return lines
    lines += [f"best: {describe(best)}",
              f"  memory per chip: {_memory_line(best, report['hbm'])}",
              f"  step time: {_time_line(best)}",
              f"  achieved MFU {formatting.decimal(_achieved_mfu(report, best), 3)} (--mfu {formatting.decimal(opts.mfu)} "
              f"of the roofline time)"]
    if report["training_time"] is not None:
        t = report["training_time"]
        lines.append(f"  training time for {formatting.decimal(report['tokens'])} tokens: {formatting.with_unit(t, 's')}"
                     f" = {formatting.decimal(t / 86400, 3)} days")
    return lines


def _derivation_lines(ev: Evaluated) -> list[str]:
    from ..reports.derive import _plain

    return [f"  {_plain(s.step.label)} = {_seconds(s.value) if s.step.unit == 's' else formatting.with_unit(s.value, s.step.unit)}"
            f"   ({s.step.why})" for s in ev.steps]


def as_text(report: dict) -> str:
    opts = report["opts"]
    lines = [f"plan: {report['model']} on {opts.chips} x {report['chip']}, batch {opts.batch} tokens "
             f"({_count(opts.batch // opts.seq_len, 'sequence')} of {opts.seq_len}), {opts.dtype}", ""]
    lines += _summary(report)
    best = report["best"]
    if best is not None:
        lines += ["", "why it fits (parallel.config.memory_per_device):"] + _derivation_lines(best.memory)
        lines += ["", "where the time goes (parallel.config.step_time):"] + _derivation_lines(best.step)
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
           "seq_len": opts.seq_len, "tokens": report["tokens"], "mfu": str(opts.mfu), "dtype": opts.dtype,
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
            for name, q, ev in (("memory", "parallel.config.memory_per_device", best.memory),
                                ("step_time", "parallel.config.step_time", best.step))}
    return out
