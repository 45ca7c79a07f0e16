"""``scalemath serve``: serving a model on a topology — memory, decode step, throughput, latency, cost.

Every number is a registered ``inference.*`` quantity evaluated for the model, chip and dtypes;
the smallest topology is found by searching the candidate slices directly against the
``inference.memory.*`` quantities.
"""

from __future__ import annotations

from typing import Mapping

import sympy as sp

from . import formatting, hardware, quantities
from .errors import BadValueError, ScalemathError

__all__ = ["serve", "topologies", "as_text", "as_markdown", "as_latex", "as_json"]


class DoesNotFitError(ScalemathError):
    """The model and its KV cache need more memory than the named topology has."""


def topologies(chip: hardware.Chip) -> list[tuple[str, int]]:
    """Candidate slices, smallest first: TPU slice shapes within the pod, or GPU counts."""
    if chip.family == "gpu":
        node = chip.nvlink_domain or 8
        out = [(str(n), n) for n in (1, 2, 4, 8) if n <= node]
        out += [(str(node * m), node * m) for m in (1, 2, 4, 8, 16, 32, 64) if node * m > out[-1][1]]
        return out
    if chip.torus_dims == 3:
        shapes = [(1, 1, 1), (2, 1, 1), (2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4), (4, 4, 4), (4, 4, 8), (4, 8, 8),
                  (8, 8, 8), (8, 8, 16), (8, 16, 16), (16, 16, 16)]
    else:
        shapes = [(1, 1), (2, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)]
    pod = chip.pod_chips or 10**9
    return [("x".join(map(str, s)), int(sp.prod(s))) for s in shapes if sp.prod(s) <= pod]


def parse_topology(text: str) -> int:
    parts = text.lower().split("x")
    if len(parts) > 4 or not all(p.isascii() and p.isdigit() and len(p) <= 4 and 0 < int(p) <= 4096 for p in parts):
        raise BadValueError(f"--topology {text!r}: write the slice shape like 4x4 or 4x4x8")
    return int(sp.prod([int(p) for p in parts]))


def _ev(name: str, ctx: quantities.Context, given: Mapping[str, object]):
    q = quantities.get(name)
    names = {p.name for p in q.params}
    return quantities.evaluate(q, ctx, {k: v for k, v in given.items() if k in names})


def serve(ctx: quantities.Context, batch: int, context: int, prompt: int, chips: int | None, topology: str | None,
          mfu: sp.Rational, beyond_max_context: bool = False) -> dict:
    """The serving report; ``beyond_max_context`` lets ``context`` exceed the model's released maximum
    (the book prices LLaMA-2 13B at 8k), with a warning in the report's ``warnings``."""
    if batch < 1 or context < 1 or prompt < 1:
        raise BadValueError("--batch, --context and --prompt must be at least 1")
    if not 0 < mfu <= 1:
        raise BadValueError(f"--mfu {mfu} must be in (0, 1]: a fraction of the peak FLOPs/s")
    model, chip = ctx.get_model(), ctx.get_chip()
    warnings = []
    if model.max_context and context > model.max_context:
        if not beyond_max_context:
            raise BadValueError(f"--context {context} is longer than {model.key} allows ({model.max_context} tokens); "
                                "pass --beyond-max-context to price it anyway")
        warnings.append(f"--context {context} is longer than {model.key}'s released maximum of "
                        f"{model.max_context} tokens; the memory and times assume the model could use it")
    windowed = {}
    if model.local_layers and context > model.sliding_window:
        # local layers keep only the window: the cache per token, averaged over the context
        per_element = hardware.dtype_bytes(ctx.cache_dtype)
        windowed = {"kv_token": sp.Rational(model.kv_elements(context), context) * per_element}
        warnings.append(f"{model.local_layers} of {model.key}'s {model.L} layers keep only the last "
                        f"{model.sliding_window} tokens: the KV cache is {formatting.with_unit(windowed['kv_token'], 'byte')} "
                        f"per token averaged over the context of {context}")
    need = _ev("inference.memory.min_chips", ctx, {"B": batch, "S": context} | windowed)
    candidates = topologies(chip)
    smallest = next(((name, n) for name, n in candidates if n >= need.value), None)
    if topology or chips:
        n = parse_topology(topology) if topology else chips
        name = topology or str(chips)
        if n < need.value:
            weights, kv = need.steps[0].value, need.steps[1].value  # bytes of weights and of the KV cache
            budget = n * chip.hbm_bytes - weights
            hint = f"the smallest topology that fits is {smallest[0]} ({smallest[1]} chips)" if smallest else \
                "no slice of this chip's pod holds it; use a smaller batch or context, or int8/int4 weights"
            raise DoesNotFitError(f"{model.key} with batch {batch} x context {context} does not fit on {name} "
                                  f"({n} chips): {formatting.with_unit(kv - budget, 'byte')} of HBM missing; {hint}")
    else:
        if smallest is None:
            raise DoesNotFitError(f"{model.key} with batch {batch} x context {context} does not fit in a full pod")
        name, n = smallest
    given = {"B": batch, "S": context, "n_dev": n, "T": prompt, "MFU": mfu} | windowed
    step = _ev("inference.decode.step_time", ctx, given)
    parts = {k: _ev(f"inference.decode.{k}", ctx, given) for k in ("t_math", "t_weights", "t_kv")}
    bound = max(parts, key=lambda k: parts[k].value)
    per_chip = _ev("inference.decode.throughput_per_chip", ctx, given)
    prefill = _ev("inference.prefill.time", ctx, given)
    crit = _ev("inference.decode.critical_batch_moe" if model.is_moe else "inference.decode.critical_batch", ctx, given)
    max_batch = _ev("inference.memory.max_batch", ctx, given)
    cost = None
    if chip.price_cents_per_hour:
        cost = _ev("inference.cost.per_million_tokens", ctx, given | {"t_step": step.value})
    sweep = []
    b = 1
    limit = int(max_batch.value)
    while b <= limit:
        s = _ev("inference.decode.step_time", ctx, given | {"B": b}).value
        sweep.append((b, s, sp.Integer(b) / (n * s)))
        b *= 2
    return {"model": model.key, "chip": chip.key, "weights": ctx.weight_dtype or ctx.compute_dtype,
            "kv_dtype": ctx.cache_dtype, "batch": batch, "context": context, "prompt": prompt,
            "topology": name, "chips": n, "min_chips": need, "step": step, "parts": parts, "bound": bound,
            "throughput_per_chip": per_chip, "prefill": prefill, "critical_batch": crit, "max_batch": max_batch,
            "cost": cost, "sweep": sweep, "mfu": mfu, "warnings": warnings}


_BOUND = {"t_math": "compute", "t_weights": "loading the weights from HBM", "t_kv": "loading the KV cache from HBM"}


def _lines(r: dict) -> list[str]:
    w = formatting.with_unit
    step = r["step"].value
    out = [f"topology: {r['topology']} ({r['chips']} chips; at least {int(r['min_chips'].value)} needed for the "
           f"weights and the KV cache)",
           f"decode step: {w(step, 's')}, bound by {_BOUND[r['bound']]} "
           f"(compute {w(r['parts']['t_math'].value, 's')}, weights {w(r['parts']['t_weights'].value, 's')}, "
           f"KV cache {w(r['parts']['t_kv'].value, 's')})",
           f"latency per token: {w(step, 's')}; per query {formatting.decimal(1 / step)} tokens/s",
           f"throughput: {formatting.decimal(r['throughput_per_chip'].value)} tokens/s per chip",
           f"prefill of {r['prompt']} tokens at MFU {formatting.decimal(r['mfu'])}: {w(r['prefill'].value, 's')}",
           f"decode becomes compute-bound at a batch of {formatting.decimal(r['critical_batch'].value)}; "
           f"the largest batch that fits is {int(r['max_batch'].value)}"]
    if r["cost"] is not None:
        out.append(f"cost: {formatting.decimal(r['cost'].value / 100)} US$ per million tokens")
    else:
        out.append("cost: the catalog has no price for this chip")
    return out


def as_text(r: dict) -> str:
    head = (f"serve {r['model']} on {r['chip']}: {r['weights']} weights, {r['kv_dtype']} KV cache, "
            f"batch {r['batch']}, context {r['context']}")
    table = ["", "latency-throughput trade-off:", f"  {'batch':>6} {'step':>10} {'tokens/s/chip':>14}"]
    table += [f"  {b:>6} {formatting.with_unit(s, 's'):>10} {formatting.decimal(t):>14}" for b, s, t in r["sweep"]]
    return "\n".join([head, ""] + _lines(r) + table)


def as_markdown(r: dict) -> str:
    rows = ["| batch | step time | tokens/s per chip |", "|---:|---:|---:|"]
    rows += [f"| {b} | {formatting.with_unit(s, 's')} | {formatting.decimal(t)} |" for b, s, t in r["sweep"]]
    return "\n".join([f"# Serving {r['model']} on {r['chip']}", ""] + [f"- {x}" for x in _lines(r)] +
                     ["", "## Latency and throughput over batch sizes", ""] + rows) + "\n"


def as_latex(r: dict) -> str:
    from .problems.render import _escape

    rows = " \\\\\n".join(f"{b} & {_escape('tex', formatting.with_unit(s, 's'))} & {formatting.decimal(t)}"
                          for b, s, t in r["sweep"])
    items = "\n".join(f"\\item {_escape('tex', x)}" for x in _lines(r))
    return (f"\\begin{{itemize}}\n{items}\n\\end{{itemize}}\n\\begin{{tabular}}{{rrr}}\n\\toprule\n"
            f"batch & step time & tokens/s per chip \\\\\n\\midrule\n{rows} \\\\\n\\bottomrule\n\\end{{tabular}}")


def as_json(r: dict) -> dict:
    def num(v):
        return {"exact": str(v), "value": formatting.to_float(v)}

    return {"warnings": r["warnings"], "model": r["model"], "chip": r["chip"], "weights": r["weights"], "kv_dtype": r["kv_dtype"],
            "batch": r["batch"], "context": r["context"], "prompt": r["prompt"], "topology": r["topology"],
            "chips": r["chips"], "min_chips": int(r["min_chips"].value), "step_time": num(r["step"].value),
            "bound": r["bound"], "parts": {k: num(v.value) for k, v in r["parts"].items()},
            "throughput_per_chip": num(r["throughput_per_chip"].value),
            "tokens_per_s_per_query": num(1 / r["step"].value), "prefill_time": num(r["prefill"].value),
            "critical_batch": num(r["critical_batch"].value), "max_batch": int(r["max_batch"].value),
            "cost_cents_per_million_tokens": None if r["cost"] is None else num(r["cost"].value),
            "sweep": [{"batch": b, "step_time": num(s), "tokens_per_s_per_chip": num(t)} for b, s, t in r["sweep"]]}
