"""``scalemath profile``: each op's measured time beside its roofline estimate (profiling.md).

The profile (:mod:`scalemath.xla.trace` reads it) gives every execution of every HLO op and
how long it took. The estimate comes from the HLO module the profile ran (``--hlo``, priced by
:mod:`scalemath.xla.analysis`: matmul FLOPs over the chip's FLOPs/s, bytes over its HBM bandwidth, a
collective by the engine's collective costs) or, without it, from the FLOPs and bytes a TPU or GPU
profile attaches to its op events. Per op: measured time, estimate, the achieved FLOPs/s and
bytes/s, the fraction of the chip's peak each is (T_math / measured, T_memory / measured), and the
time lost to the bound; the ops furthest from their bound are those that lose the most time. Per
collective: the bandwidth it reached, the bytes the book's rule moves for it over its measured time
(V/W for an AllGather on a TPU axis, 2V/W for an AllReduce, nccl-tests' bus bandwidth on a GPU), and
eta = reached / advertised, the share of the catalog's bandwidth (the book measures about 370 of
H100's 450 GB/s).

Steps: the op executions of one run of a module on one device (the ``run_id`` the runtime tags
them with). The ops' times add up within each step: their sum never exceeds the step's span, and
what is left over is time between ops. Values stay exact (Fraction) until printed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction

from .trace import BYTE_STATS, FLOP_STATS, OpEvent, Trace, numeric_stat

__all__ = ["analyse", "as_json", "as_text", "device_mismatch", "devices_per_chip", "ranked_by_lost_time"]

US = Fraction(1, 10**6)


@dataclass
class OpRow:
    module: str
    name: str
    times: list[Fraction] = field(default_factory=list)  # seconds, one per execution
    flops: Fraction | None = None
    bytes: Fraction | None = None
    t_math: Fraction | None = None
    t_memory: Fraction | None = None
    t_comms: Fraction | None = None
    estimate_from: str = ""
    collective: dict | None = None

    @property
    def calls(self) -> int:
        return len(self.times)

    @property
    def total(self) -> Fraction:
        return sum(self.times, Fraction(0))

    @property
    def mean(self) -> Fraction:
        return self.total / self.calls

    @property
    def estimate(self) -> Fraction | None:
        parts = [t for t in (self.t_math, self.t_memory, self.t_comms) if t is not None]
        return max(parts) if parts else None

    @property
    def bound(self) -> str | None:
        if not self.estimate:
            return None
        return max((("compute", self.t_math or 0), ("memory", self.t_memory or 0),
                    ("communication", self.t_comms or 0)), key=lambda kv: kv[1])[0]

    def ratio(self, t: Fraction | None) -> Fraction | None:
        return None if t is None or not self.mean else t / self.mean

    @property
    def lost(self) -> Fraction | None:
        return None if self.estimate is None else (self.mean - self.estimate) * self.calls


def _steps(events: list[OpEvent]) -> list[dict]:
    groups: dict[tuple, list[OpEvent]] = defaultdict(list)
    for e in events:
        groups[(e.device, e.module, e.run)].append(e)
    steps = []
    for (device, module, run), evs in groups.items():
        start, end = min(e.start_us for e in evs), max(e.end_us for e in evs)
        busy, reach = Fraction(0), start  # the union of the ops' intervals
        for e in sorted(evs, key=lambda e: e.start_us):
            if e.end_us > reach:
                busy += e.end_us - max(e.start_us, reach)
                reach = e.end_us
        steps.append({"device": device, "module": module, "run": run, "ops": len(evs),
                      "span": (end - start) * US, "op_time": sum((e.dur_us for e in evs), Fraction(0)) * US,
                      "busy": busy * US, "idle": (end - start - busy) * US, "start": start})
    return sorted(steps, key=lambda s: (s["device"], s["start"]))


def devices_per_chip(chip) -> int:
    """How many devices a profile shows per chip: the cores of a TPU whose cores are separate accelerators
    (TPU v2, v3), else one."""
    if chip.family == "tpu" and (chip.cores_per_chip or 1) > 1 and not chip.megacore:
        return chip.cores_per_chip
    return 1


def _device_kind(device: str) -> str | None:
    """"TPU", "GPU" or "CPU" from a device name the runtime wrote (/device:TPU:0, /host:CPU #0), else None."""
    m = re.match(r"/(?:device|host):([A-Za-z]+)", device)
    return m.group(1).upper() if m else None


def device_mismatch(trace: Trace, chip) -> str | None:
    """A warning when the trace's devices are known and none is of the chip's kind (a CPU trace priced as a TPU):
    its measured times are not the chip's."""
    kinds = {_device_kind(e.device) for e in trace.events} - {None}
    if not kinds or chip.family.upper() in kinds:
        return None
    devices = sorted({e.device for e in trace.events})
    shown = ", ".join(repr(d) if len(d) <= 40 else repr(d[:40]) + "..." for d in devices[:3])
    more = f" and {len(devices) - 3} more" if len(devices) > 3 else ""
    return (f"the trace ran on {shown}{more}, not on a {chip.family.upper()} like {chip.key}: its measured times are "
            f"not {chip.key}'s, so the fractions of its peak say little")


def _rule(chip, c: dict) -> tuple[Fraction, Fraction, str] | None:
    """The book's bandwidth rule for ``c`` on ``chip``: (bytes it moves at the advertised bandwidth, that
    bandwidth, which rule), from the engine's forms: shard_map's collectives on a TPU axis (V/W_ici for
    AllGather and ReduceScatter, 2V/W_ici for AllReduce, V/(4 W_ici) for AllToAll, V/W_link for a
    collective-permute), the NVLink ring forms inside a GPU node (nccl-tests' bus bandwidth)."""
    import sympy as sp

    from ..symbolic import collectives as coll
    from ..symbolic import jax_collectives as jc
    from ..symbolic.symbols import sym

    kind, group = c["kind"], c.get("group_size") or 1
    if chip.family == "gpu":
        if chip.nvlink_bytes_per_s is None or (chip.nvlink_domain and group > chip.nvlink_domain):
            return None  # across nodes: no single advertised bandwidth
        forms = {"AllGather": coll.gpu_all_gather_time, "ReduceScatter": coll.gpu_reduce_scatter_time,
                 "AllReduce": coll.gpu_all_reduce_time, "AllToAll": coll.gpu_all_to_all_time}
        w, advertised, where = sym("W_gpu"), chip.nvlink_bytes_per_s, "NVLink egress per GPU"
    else:
        forms = {"AllGather": jc.all_gather_time, "ReduceScatter": jc.psum_scatter_time, "AllReduce": jc.psum_time,
                 "AllToAll": jc.all_to_all_time, "CollectivePermute": jc.ppermute_time}
        axes = len(c.get("axes") or [None])
        if kind == "CollectivePermute":
            w, advertised, where = sym("W_link"), chip.bandwidth("ici-link"), "one ICI link one way"
        else:
            w, advertised, where = sym("W_ici"), chip.bandwidth("ici") * axes, (
                "ICI both ways" + (f" on {axes} axes" if axes > 1 else "") + " per device")
    if kind not in forms or advertised is None:
        return None
    form = forms[kind]()
    moved = form.expr.xreplace({sym("V"): sp.Rational(c["bytes"].numerator, c["bytes"].denominator),
                                sym("N"): group, w: 1})
    if not moved.is_Rational:
        return None
    return Fraction(int(moved.p), int(moved.q)), Fraction(advertised), f"{form.title}; advertised: {where}"


def analyse(trace: Trace, hlo_text: str | None = None, chip=None, mesh=None, dtype: str | None = None,
            hlo_source: str = "the HLO") -> dict:
    """Measured against estimated, per op and per collective; the steps and what adds up."""
    rows: dict[tuple[str, str], OpRow] = {}
    for e in trace.events:
        row = rows.setdefault((e.module, e.name), OpRow(e.module, e.name))
        row.times.append(e.dur_us * US)
        if row.flops is None:
            row.flops = numeric_stat(e, FLOP_STATS)
        if row.bytes is None:
            row.bytes = numeric_stat(e, BYTE_STATS)
    notes: list[str] = []
    collectives: list[dict] = []
    if hlo_text is not None:
        collectives = _from_hlo(rows, hlo_text, chip, mesh, dtype, hlo_source, notes)
    elif chip is not None:
        _from_stats(rows, chip, dtype, notes)
    for c in collectives:
        c.update(advertised=None, measured_bytes_per_s=None, eta=None, rule=None, book_estimate=None)
        rule = _rule(chip, c) if chip is not None else None
        if rule is not None:
            moved, c["advertised"], c["rule"] = rule
            c["book_estimate"] = moved / c["advertised"]
        if rule is not None and c["measured"]:
            c["measured_bytes_per_s"] = moved / c["measured"]
            c["eta"] = c["measured_bytes_per_s"] / c["advertised"]
    steps = _steps(list(trace.events))
    op_time = sum((r.total for r in rows.values()), Fraction(0))
    return {"source": trace.source, "reader": trace.reader, "chip": chip.key if chip else None,
            "hlo": hlo_source if hlo_text is not None else None,
            "modules": sorted({r.module for r in rows.values() if r.module}),
            "executions": len(trace.events), "rows": list(rows.values()), "collectives": collectives,
            "steps": steps, "op_time": op_time, "span": sum((s["span"] for s in steps), Fraction(0)),
            "notes": notes}


def _from_hlo(rows, hlo_text, chip, mesh, dtype, source, notes) -> list[dict]:
    from . import analysis as hlo

    report = hlo.analyse(hlo_text, chip, mesh, dtype, source=source)
    notes += report["notes"]
    ops = {op.name: op for op in report["_ops"]}
    traced = {name for (_, name) in rows}
    for (module, name), row in rows.items():
        op = ops.get(name)
        if op is None:
            continue
        if module and module != report["module"]:
            notes.append(f"{name} ran in module {module}, but {source} is module {report['module']}")
        row.flops, row.bytes = Fraction(op.flops), op.bytes_in + op.bytes_out
        row.t_math, row.t_memory, row.t_comms = op.t_math, op.t_memory, op.t_comms
        row.estimate_from = "hlo"
    missing = [op.name for op in report["_ops"] if op.name not in traced and (op.flops or op.collective)]
    if missing:
        notes.append(f"ops of {source} that do work but never ran in the profile: {', '.join(missing[:10])}"
                     + (f" and {len(missing) - 10} more" if len(missing) > 10 else ""))
    unknown = sorted(name for (_, name) in rows if name not in ops)
    if unknown:
        notes.append(f"ops in the profile that {source} does not have (a different module?): "
                     f"{', '.join(unknown[:10])}" + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""))
    out = []
    for c in report["collectives"]:
        row = next((r for (m, n), r in rows.items() if n == (c.get("op") or c["name"])), None)
        if row is not None:
            row.collective = c
        out.append({"name": c["name"], "op": c.get("op"), "kind": c["kind"], "bytes": c["bytes"],
                    "group_size": c.get("group_size"), "axes": c.get("axes"), "estimate": c.get("time"),
                    "how": c.get("how", ""), "measured": row.mean if row else None, "calls": row.calls if row else 0})
    return out


def _from_stats(rows, chip, dtype, notes) -> None:
    cores = devices_per_chip(chip)
    rate = Fraction(chip.flops(dtype or ("bf16" if "bf16" in chip.flops_per_s else chip.dtypes[0])), cores)
    hbm = Fraction(chip.hbm_bytes_per_s, cores)
    priced = 0
    for row in rows.values():
        if row.flops is not None or row.bytes is not None:
            row.t_math = (row.flops or 0) / rate
            row.t_memory = (row.bytes or 0) / hbm
            row.estimate_from = "trace"
            priced += 1
    if not priced:
        notes.append("the profile's op events carry no FLOPs or bytes (a CPU profile does not): give --hlo with "
                     "the module's HLO text (jax.jit(f).lower(...).compile().as_text()) for the estimates")


# -- output ------------------------------------------------------------------------------------------------

def _num(value):
    if value is None:
        return None
    value = Fraction(value)
    return int(value) if value.denominator == 1 else float(value)


def _exact(value):
    return None if value is None else str(Fraction(value))


def ranked_by_lost_time(report) -> list[OpRow]:
    """The ops that lost time to their bound (measured minus estimate, over all calls), most first."""
    return sorted((r for r in report["rows"] if r.lost is not None and r.lost > 0), key=lambda r: -r.lost)


def as_json(report: dict) -> dict:
    ops = []
    for r in sorted(report["rows"], key=lambda r: -r.total):
        est = r.estimate
        ops.append({
            "name": r.name, "module": r.module, "calls": r.calls, "measured_total_s": _num(r.total),
            "measured_mean_s": _num(r.mean), "flops": _num(r.flops), "bytes": _num(r.bytes),
            "t_math_s": _num(r.t_math), "t_memory_s": _num(r.t_memory), "t_comms_s": _num(r.t_comms),
            "estimate_s": _num(est), "estimate_from": r.estimate_from or None, "bound": r.bound,
            "efficiency": _num(r.ratio(est)),
            "achieved_flops_per_s": _num(r.flops / r.mean) if r.flops is not None and r.mean else None,
            "achieved_bytes_per_s": _num(r.bytes / r.mean) if r.bytes is not None and r.mean else None,
            "fraction_of_peak_flops": _num(r.ratio(r.t_math)), "fraction_of_peak_bytes": _num(r.ratio(r.t_memory)),
            "lost_s": _num(r.lost), "exact": {"measured_total_s": _exact(r.total), "estimate_s": _exact(est)}})
    cols = [{"name": c["name"], "op": c["op"], "kind": c["kind"], "bytes": _num(c["bytes"]),
             "group_size": c["group_size"], "axes": c["axes"], "calls": c["calls"],
             "measured_s": _num(c["measured"]), "estimate_s": _num(c["estimate"]),
             "book_estimate_s": _num(c.get("book_estimate")), "eta": _num(c.get("eta")),
             "measured_bytes_per_s": _num(c.get("measured_bytes_per_s")),
             "advertised_bytes_per_s": _num(c.get("advertised")), "rule": c.get("rule"), "how": c["how"],
             "exact": {"eta": _exact(c.get("eta"))}} for c in report["collectives"]]
    steps = [{k: (_num(v) if k in ("span", "op_time", "busy", "idle") else v) for k, v in s.items() if k != "start"}
             for s in report["steps"]]
    return {"source": report["source"], "reader": report["reader"], "chip": report["chip"], "hlo": report["hlo"],
            "modules": report["modules"], "executions": report["executions"], "ops": ops, "collectives": cols,
            "furthest_from_bound": [r.name for r in ranked_by_lost_time(report)[:10]],
            "steps": steps, "total": {"op_time_s": _num(report["op_time"]), "span_s": _num(report["span"]),
                                      "exact": {"op_time_s": _exact(report["op_time"])}},
            "notes": report["notes"]}


def _with_unit(value, unit: str) -> str:
    import sympy as sp

    from ..values.printing import with_unit

    value = Fraction(value)
    return "0" if not value else with_unit(sp.Rational(value.numerator, value.denominator), unit)


def _t(value) -> str:
    return "-" if value is None else _with_unit(value, "s")


def _pct(value) -> str:
    if value is None:
        return "-"
    value = float(value) * 100
    return "0%" if value == 0 else f"{value:.1f}%" if abs(value) >= 1 else f"{value:.2g}%"


def _rate(value, unit: str) -> str:
    return "-" if value is None else _with_unit(value, unit)


def _table(cols: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(cols)]
    fmt = lambda cells: "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                        for i, (c, w) in enumerate(zip(cells, widths)))
    return [fmt(cols)] + [fmt(r) for r in rows]


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def as_text(report: dict, top: int | None = 10) -> str:
    rows = sorted(report["rows"], key=lambda r: -r.total)
    lines = [f"profile {report['source']} ({report['reader']}): {_n(report['executions'], 'op execution')} of "
             f"{_n(len(rows), 'op')} in {_n(len(report['steps']), 'step')}"
             + (f", module {', '.join(report['modules'])}" if report["modules"] else "")]
    if report["chip"]:
        lines.append(f"estimates on {report['chip']}" + (f" from {report['hlo']}" if report["hlo"] else
                                                        " from the profile's own FLOPs and bytes"))
    shown = rows if top is None else rows[:top]
    lines += ["", "ops by measured time (mean per call):"]
    lines += _table(["name", "calls", "measured", "estimate", "of bound", "FLOP/s", "bytes/s", "peak FLOPs",
                     "peak bytes", "bound"],
                    [[r.name, str(r.calls), _t(r.mean), _t(r.estimate), _pct(r.ratio(r.estimate)),
                      _rate(r.flops / r.mean if r.flops is not None and r.mean else None, "FLOP/s"),
                      _rate(r.bytes / r.mean if r.bytes is not None and r.mean else None, "byte/s"),
                      _pct(r.ratio(r.t_math)), _pct(r.ratio(r.t_memory)), r.bound or "-"] for r in shown])
    if top is not None and len(rows) > top:
        lines.append(f"  ... {len(rows) - top} more (--all lists them)")
    lost = ranked_by_lost_time(report)[:5]
    if lost:
        lines += ["", "furthest from their bound (time lost to it, all calls):"]
        lines += [f"  {r.name}: {_t(r.lost)} lost, at {_pct(r.ratio(r.estimate))} of its {r.bound} bound"
                  for r in lost]
    if report["collectives"]:
        lines += ["", "collectives (estimate: the engine's topology-aware cost; book rule: V/W and its kin at the "
                  "advertised bandwidth; reached: the bandwidth the book's rule needs for the measured time; "
                  "eta = reached / advertised):"]
        lines += _table(["name", "kind", "V", "group", "measured", "estimate", "book rule", "eta", "reached",
                         "advertised"],
                        [[c["name"], c["kind"], _rate(c["bytes"], "byte"), str(c["group_size"] or "-"),
                          _t(c["measured"]), _t(c["estimate"]), _t(c.get("book_estimate")), _pct(c.get("eta")),
                          _rate(c.get("measured_bytes_per_s"), "byte/s"), _rate(c.get("advertised"), "byte/s")]
                         for c in report["collectives"]])
    steps = report["steps"]
    lines += ["", f"steps: {len(steps)}; op time {_t(report['op_time'])} over spans totalling {_t(report['span'])}"]
    for s in steps[:top or len(steps)]:
        run = s["run"] if (s["run"] or "").startswith("step ") else f"run {s['run'] or '-'}"
        lines.append(f"  {s['device']}{' ' + s['module'] if s['module'] else ''} {run}: "
                     f"{_n(s['ops'], 'op')}, span {_t(s['span'])}, "
                     f"op time {_t(s['op_time'])}, between ops {_t(s['idle'])}")
    if top is not None and len(steps) > top:
        lines.append(f"  ... {len(steps) - top} more")
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines)
