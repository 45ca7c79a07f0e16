"""The formats of ``scalemath serve``: text, Markdown, LaTeX and JSON of one search's report.

Templates only display: every number was derived by :mod:`scalemath.search.serve_exact` (exact) or
ranked by :mod:`scalemath.search.serve_space` (floats, for the runners-up and the Pareto front).
"""

from __future__ import annotations

import sympy as sp

from ..conventions import Conventions
from ..values import printing as formatting

__all__ = ["as_text", "as_markdown", "as_latex", "as_json"]

_BOUND = {"t_math": "compute", "t_weights": "loading the weights from HBM", "t_kv": "loading the KV cache from HBM",
          "t_comms": "the model-parallel collectives"}
_COMMS = {"critical": "on the critical path, after the matmuls ({q})",
          "overlap": "overlapped with compute and weight loading, the book's F8.11 model ({q})",
          "none": "left out, as in the book's F7.11 ({q})"}


def _comms(r: dict) -> str:
    return _COMMS[r["comms"]].format(q=r["step_quantity"])


def _experts(r: dict) -> str:
    """How many experts per MoE layer the step reads (a mixture of experts only)."""
    x = r["experts"]
    return (f"experts read: {formatting.decimal(x['decode'].value)} of {x['E']} per MoE layer at batch {r['batch']} "
            f"(k = {x['k']} per token; E·(1 − (1 − k/E)^B), the expectation under uniform, independent routing; "
            f"every expert stays in HBM, in each of the {x['layers']} MoE layers); prefill's {r['prompt']} tokens read "
            f"{formatting.decimal(x['prefill'].value)}")


def _w(value, unit="s"):
    return formatting.with_unit(value, unit)


def _plain(label: str) -> str:
    for old, new in ((r"\mathrm", ""), ("\\", ""), ("{", ""), ("}", "")):
        label = label.replace(old, new)
    return label


def _derivation(ev) -> list[str]:
    return [f"{_plain(s.step.label)} = {_w(s.value, s.step.unit) if s.is_numeric else s.value}: {s.step.why}"
            for s in ev.steps]


def _lines(r: dict) -> list[str]:
    step, parts, kv = r["step"].value, r["parts"], r["max_batch"]
    weights, cache = r["min_chips"].steps[0].value, r["min_chips"].steps[1].value
    out = [f"topology: {r['topology']} ({r['chips']} chips, {r['layout']}); {r['weights']} weights, {r['kv_dtype']} "
           f"KV cache, batch {r['batch']}",
           f"fits: weights {_w(weights, 'byte')} + KV caches {_w(cache, 'byte')} ({r['batch']} x {r['context']} "
           f"tokens) in {r['chips']} x {_w(kv.steps[0].value / r['chips'], 'byte')} of HBM; at least "
           f"{int(r['min_chips'].value)} chips needed; the largest batch that fits is {int(kv.value)}",
           f"decode step: {_w(step)}, bound by {_BOUND[r['bound']]} ("
           + ", ".join(f"{_BOUND[k].split(' from')[0]} {_w(v.value)}" for k, v in parts.items()) + ")"]
    if r.get("experts"):
        out.append(_experts(r))
    if r["comm"] is not None:
        line = f"collectives: {_w(r['comm'].value)} per step, {_comms(r)}"
        if r["overlap_step"] is not None:
            line += f"; fully overlapped the step would be {_w(r['overlap_step'].value)}"
        if r["gpu_collective_latency"] is not None:
            line += (f"; each NVLink collective assumed to take at least {_w(r['gpu_collective_latency'])} "
                     "(llm-analysis's H100/A100 figure: the catalog has no GPU hop latency)")
        out.append(line)
    elif r["chips"] > 1:
        out.append(f"collectives: {_comms(r)}")
    out += [f"latency per token: {_w(step)}; per query {formatting.decimal(1 / step)} tokens/s",
            f"throughput: {formatting.decimal(r['throughput_per_chip'])} tokens/s per chip",
            f"prefill of {r['prompt']} tokens at MFU {formatting.decimal(r['mfu'])} on the same slice: "
            f"{_w(r['prefill'].value)}"]
    ratio, servers = r["disaggregation"].steps[-2].value, r["disaggregation"].value
    if ratio >= 1:
        whole = (f"{int(servers)} prefill servers per generate server (rounded up: fewer would let requests queue "
                 "for their prefill)")
    else:
        whole = (f"one prefill server keeps {int(sp.floor(1 / ratio))} generate servers busy (rounded down: more would "
                 "let requests queue for their prefill)")
    out.append(f"disaggregated: n_P/n_G = B·T_prefill/(T_step·G) = {formatting.decimal(ratio)} for {r['generate']} "
               f"generated tokens a request (F8.14); {whole}")
    out.append(f"decode becomes compute-bound at a batch of {formatting.decimal(r['critical_batch'].value)}")
    if r["tp_limits"]:
        out.append(_tp_limits_line(r))
    if r["cost"] is not None:
        out.append(f"cost: {formatting.decimal(r['cost'].value / 100)} US$ per million tokens "
                   f"({formatting.decimal(r['cost_disaggregated'].value / 100)} with its whole prefill servers)")
    else:
        out.append("cost: the catalog has no price for this chip")
    return out


def _tp_limits_line(r: dict) -> str:
    """The book's tensor-parallel limits in words: the compute- and memory-bound ones are the largest degree (in
    chips) at which the activation collectives still hide under the matmuls; the latency-bound one is the degree
    above which each collective costs its hop latency."""
    limits, batch = r["tp_limits"], r["batch"]
    chips = {k: f"{formatting.decimal(v.value)} chips" for k, v in limits.items()}
    largest = [f"{chips[k]} {when}" for k, when in (
        ("compute_bound", "when decode is compute-bound (F8.11)"),
        ("memory_bound", f"when it is memory-bound at batch {batch} (F7.14)")) if k in limits]
    line = (f"tensor parallelism ({r['chips']}-way here): the largest useful degree is {' and '.join(largest)}; "
            "past it the activation collectives outlast the matmuls they serve")
    if "latency_bound" in limits:
        line += (f"; above {chips['latency_bound']} the collectives of a batch of {batch} are latency-bound, each "
                 "costing the hop latency (F7.24)")
    return line


def _head(r: dict) -> str:
    s = r["search"]
    limit = "" if r["max_latency"] is None else f" under {_w(r['max_latency'])} per token"
    return (f"serve {r['model']} on {r['chip']}: best {r['objective']}{limit}; {s['candidates']} candidates, "
            f"{s['feasible']} feasible, searched in {s['seconds']} s CPU")


def _conventions(r: dict) -> str:
    return f"conventions: {Conventions.of(r['conventions']).describe(r['conventions'])}; the book's on every other axis"


def _table(rows: list[dict], with_why: bool) -> tuple[list[str], list[list[str]]]:
    head = ["topology", "layout", "weights/KV", "batch", "step", "tokens/s/chip"] + (["why it lost"] if with_why else [])
    body = [[x["topology"], x["layout"], f"{x['weights']}/{x['kv_dtype']}", str(x["batch"]),
             _w(sp.Float(x["step_time"])), formatting.decimal(sp.Float(x["tokens_per_s_per_chip"]))]
            + ([x["why"]] if with_why else []) for x in rows]
    return head, body


def _front_rows(r: dict) -> list[dict]:
    front = r["pareto"]
    if len(front) <= 12:
        return front
    return [front[round(i * (len(front) - 1) / 11)] for i in range(12)]


def as_text(r: dict) -> str:
    out = [_head(r), _conventions(r), ""] + _lines(r) + ["", "derivation of the step:"]
    out += [f"  {x}" for x in (_derivation(r["comm"]) if r["comm"] is not None else [])]
    out += [f"  {x}" for x in _derivation(r["step"])]
    for title, rows, why in (("runners-up:", r["runners_up"], True),
                             ("latency-throughput trade-off (Pareto front over every configuration):",
                              _front_rows(r), False)):
        if rows:
            head, body = _table(rows, why)
            widths = [max(len(c) for c in col) for col in zip(head, *body)]
            out += ["", title] + ["  " + "  ".join(c.ljust(wd) for c, wd in zip(row, widths)).rstrip()
                                  for row in [head] + body]
    return "\n".join(out)


def as_markdown(r: dict) -> str:
    out = [f"# Serving {r['model']} on {r['chip']}", "", _head(r), "", _conventions(r), ""]
    out += [f"- {x}" for x in _lines(r)]
    out += ["", "## Derivation of the step", ""]
    out += [f"1. {x}" for x in (_derivation(r["comm"]) if r["comm"] is not None else []) + _derivation(r["step"])]
    for title, rows, why in (("Runners-up", r["runners_up"], True),
                             ("Latency and throughput: the Pareto front", _front_rows(r), False)):
        if rows:
            head, body = _table(rows, why)
            out += ["", f"## {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            out += ["| " + " | ".join(formatting.escape(c, "md") for c in row) + " |" for row in body]
    return "\n".join(out) + "\n"


def as_latex(r: dict) -> str:
    items = "\n".join(f"\\item {formatting.escape(x, 'tex')}" for x in [_head(r)] + _lines(r))
    head, body = _table(_front_rows(r), False)
    rows = " \\\\\n".join(" & ".join(formatting.escape(c, "tex") for c in row) for row in body)
    return (f"\\begin{{itemize}}\n{items}\n\\end{{itemize}}\n\\begin{{tabular}}{{llllrr}}\n\\toprule\n"
            f"{' & '.join(head)} \\\\\n\\midrule\n{rows} \\\\\n\\bottomrule\n\\end{{tabular}}")


def _num(v):
    return {"exact": str(v), "value": formatting.to_float(v)}


def _steps(ev):
    return [{"label": s.step.label, "why": s.step.why, "unit": s.step.unit, **(_num(s.value) if s.is_numeric else
                                                                                {"expression": str(s.value)})}
            for s in ev.steps]


def as_json(r: dict) -> dict:
    ratio = r["disaggregation"].steps[-2].value
    return {"warnings": r["warnings"], "model": r["model"], "chip": r["chip"], "weights": r["weights"],
            "kv_dtype": r["kv_dtype"], "batch": r["batch"], "context": r["context"], "prompt": r["prompt"],
            "topology": r["topology"], "chips": r["chips"], "shape": list(r["shape"]), "layout": r["layout"],
            "layout_kind": r["layout_kind"], "min_chips": int(r["min_chips"].value),
            "step_time": _num(r["step"].value), "step_quantity": r["step_quantity"], "bound": r["bound"],
            "experts": None if not r.get("experts") else {
                "per_moe_layer": r["experts"]["E"], "per_token": r["experts"]["k"],
                "moe_layers": r["experts"]["layers"], "read_per_moe_layer": _num(r["experts"]["decode"].value),
                "read_at_prefill": _num(r["experts"]["prefill"].value),
                "routing": "uniform and independent: the expectation E·(1 − (1 − k/E)^B)"},
            "parts": {k: _num(v.value) for k, v in r["parts"].items()},
            "comms": {"mode": r["comms"], "t_comms": None if r["comm"] is None else _num(r["comm"].value),
                      "steps": None if r["comm"] is None else _steps(r["comm"]),
                      "overlapped_step_time": None if r["overlap_step"] is None else _num(r["overlap_step"].value),
                      "gpu_collective_latency": None if r["gpu_collective_latency"] is None else
                      _num(r["gpu_collective_latency"])},
            "step_derivation": _steps(r["step"]),
            "throughput_per_chip": _num(r["throughput_per_chip"]),
            "tokens_per_s_per_query": _num(1 / r["step"].value), "prefill_time": _num(r["prefill"].value),
            "disaggregation": {"generate_tokens": r["generate"], "prefill_to_generate": _num(ratio),
                               "prefill_servers_per_generate_server": int(r["disaggregation"].value),
                               "generate_servers_per_prefill_server": int(sp.floor(1 / ratio))},
            "critical_batch": _num(r["critical_batch"].value), "max_batch": int(r["max_batch"].value),
            "tp_limits": {k: _num(v.value) for k, v in r["tp_limits"].items()},
            "cost_cents_per_million_tokens": None if r["cost"] is None else _num(r["cost"].value),
            "cost_cents_per_million_tokens_disaggregated": None if r["cost_disaggregated"] is None else
            _num(r["cost_disaggregated"].value),
            "conventions": r["conventions"],
            "objective": r["objective"], "max_latency": None if r["max_latency"] is None else _num(r["max_latency"]),
            "search": r["search"], "runners_up": r["runners_up"], "pareto": r["pareto"],
            "sweep": [{"batch": b, "step_time": _num(s), "tokens_per_s_per_chip": _num(t)} for b, s, t in r["sweep"]]}
