"""``scalemath hlo``'s output: the report of :func:`scalemath.xla.analysis.analyse` as JSON and as text."""

from __future__ import annotations

from fractions import Fraction

from .memory import as_lines as memory_lines
from .ops import Op

__all__ = ["as_json", "as_text"]


def _num(value):
    """A JSON number: an int when whole, else a float (the exact value is in the total's "exact")."""
    if value is None:
        return None
    value = Fraction(value)
    return int(value) if value.denominator == 1 else float(value)


def _shape(op: Op):
    if len(op.out) == 1:
        return list(op.out[0].dims), op.out[0].dtype
    return [list(a.dims) for a in op.out], [a.dtype for a in op.out]


def _ranked(report: dict) -> list[Op]:
    ops = report["_ops"]
    if report["chip"]:
        return sorted(ops, key=lambda op: -op.time * op.count)
    return sorted(ops, key=lambda op: (-op.flops * op.count, -(op.bytes_in + op.bytes_out) * op.count))


def as_json(report: dict) -> dict:
    ops = []
    for op in report["_ops"]:
        shape, dtype = _shape(op)
        ops.append({"name": op.name, "opcode": op.opcode, "shape": shape, "dtype": dtype,
                    "bytes": _num(op.bytes_in + op.bytes_out), "bytes_in": _num(op.bytes_in),
                    "bytes_unpadded": _num(sum((a.bytes for a in op.inputs + op.out), Fraction(0))),
                    "bytes_out": _num(op.bytes_out), "flops": op.flops, "t_math": _num(op.t_math),
                    "t_memory": _num(op.t_memory), "t_comms": _num(op.t_comms), "bound": op.bound,
                    "computation": op.computation, "count": op.count, **({"fusion_kind": op.fusion_kind} if op.fusion_kind else {})})
    cols = [{k: (_num(v) if k in ("bytes", "time") else v) for k, v in c.items()} for c in report["collectives"]]
    total = {k: v for k, v in report["total"].items() if k != "dominant"}
    exact = {k: str(v) for k, v in total.items() if isinstance(v, Fraction)}
    total = {k: (_num(v) if isinstance(v, (int, Fraction)) else v) for k, v in total.items()}
    if "dominant" in report["total"]:
        total["dominant"] = [{"name": d["name"], "time": _num(d["time"]), "share": _num(d["share"])}
                             for d in report["total"]["dominant"]]
    total["exact"] = exact
    memory = {k: (_num(v) if k.endswith("_bytes") else v) for k, v in report["memory"].items()}
    return {"module": report["module"], "devices": report["devices"], "chip": report["chip"], "mesh": report["mesh"],
            "topology": report["topology"] or None, "ops": ops, "collectives": cols, "total": total,
            "memory": memory, "notes": report["notes"]}


def _fmt(value, unit: str) -> str:
    from ..values import printing as formatting

    if value is None:
        return "-"
    if unit == "FLOP":
        for factor, prefix in ((10**15, " P"), (10**12, " T"), (10**9, " G"), (10**6, " M"), (10**3, " k")):
            if value >= factor:
                return formatting.decimal(Fraction(value, factor)) + prefix
        return str(value)
    return formatting.with_unit(value, unit) if value else "0"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "~"


def as_text(report: dict, top: int | None = 10) -> str:
    """The report as the terminal shows it: the top ops by time (all with ``top=None``), the
    collectives, the totals and the bound."""
    priced = report["chip"] is not None
    n = len(report["_ops"])
    head = f"HLO module {report['module'] or '(unnamed)'}: {n} op{'s' if n != 1 else ''}"
    head += f" per device, {report['devices']} devices" if report["devices"] else " per device"
    if report["mesh"]:
        head += f", mesh {', '.join(f'{k}={v}' for k, v in report['mesh'].items())}"
    lines = [head + (f", on {report['chip']}" if priced else "")]
    if report["topology"]:
        lines.append(f"topology: {report['topology']}")
    ranked = _ranked(report)
    shown = ranked if top is None else ranked[:top]
    what = "by expected time" if priced else "by FLOPs, then bytes"
    more = "" if len(shown) == len(ranked) else f" (top {len(shown)} of {len(ranked)}; --all lists every op)"
    lines += ["", f"ops {what}{more}:"]
    cols = ["name", "opcode", "shape", "bytes", "FLOPs"] + (["T_math", "T_memory", "T_comms", "bound"] if priced else [])
    rows = []
    for op in shown:
        opcode = op.opcode + (f":{op.fusion_kind[1:]}" if op.fusion_kind else "")
        shape = ", ".join(str(a) for a in op.out[:2]) + (", ..." if len(op.out) > 2 else "")
        row = [_clip(op.name, 32) + (f" x{op.count}" if op.count > 1 else ""), _clip(opcode, 22), _clip(shape, 28), _fmt(op.bytes_in + op.bytes_out, "byte"),
               _fmt(op.flops, "FLOP")]
        if priced:
            row += [_fmt(op.t_math, "s"), _fmt(op.t_memory, "s"), _fmt(op.t_comms, "s") if op.collective else "-",
                    op.bound or "-"]
        rows.append(row)
    lines += _table(cols, rows)
    if report["collectives"]:
        cols_all = report["collectives"]
        ranked_cols = sorted(cols_all, key=lambda c: -(c["time"] or 0) * c["count"]) if priced else \
            sorted(cols_all, key=lambda c: -c["bytes"] * c["count"])
        listed = ranked_cols if top is None else ranked_cols[:top]
        more = "" if len(listed) == len(cols_all) else f" (top {len(listed)} of {len(cols_all)}; --all lists every one)"
        lines += ["", f"collectives{more}:"]
        rows = []
        for c in listed:
            if c["kind"] == "CollectivePermute":
                over = "pairs" + (f" along {''.join(c['axes'])}" if c["axes"] else "")
            else:
                axes = "".join(c["axes"]) if c["axes"] and all(len(a) == 1 for a in c["axes"]) else \
                    ",".join(c["axes"] or [])
                over = (f"{axes} ({c['group_size']}-way)" if c["axes"] else
                        f"{c['group_size']}-way, {c['groups']} group{'s' if c['groups'] != 1 else ''}")
            row = [_clip(c["name"], 32) + (f" x{c['count']}" if c["count"] > 1 else ""), c["kind"],
                   _fmt(c["bytes"], "byte"), over]
            if priced:
                row.append(_fmt(c["time"], "s"))
            rows.append(row)
        lines += _table(["name", "kind", "V", "over"] + (["time"] if priced else []), rows)
        if priced:
            hows = dict.fromkeys(c["how"] for c in listed if c["how"])
            lines += [f"  priced as: {h}" for h in hows]
    t = report["total"]
    lines += ["", (f"total per device: {_fmt(t['flops'], 'FLOP')} FLOPs, {_fmt(t['bytes'], 'byte')} read and "
                   f"written, {_fmt(t['collective_bytes'], 'byte')} in collectives")]
    if priced:
        lines.append(f"  T_math = {_fmt(t['t_math'], 's')}, T_memory = {_fmt(t['t_memory'], 's')}, "
                     f"T_comms = {_fmt(t['t_comms'], 's')}")
        if t["bound"]:
            lines.append(f"  {t['bound']}-bound: at least {_fmt(t['t_lower'], 's')} if everything overlaps, "
                         f"{_fmt(t['t_serial'], 's')} if each op runs alone at its own bound")
            from ..values import printing as formatting

            lines.append("  dominant: " + "; ".join(f"{d['name']} {formatting.decimal(100 * d['share'], 3)}%"
                                                    for d in t["dominant"]))
    lines += [""] + memory_lines(report["memory"])
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines)


def _table(cols: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    right = {"bytes", "FLOPs", "T_math", "T_memory", "T_comms", "V", "time"}
    fmt = lambda cells: "  " + "  ".join(c.rjust(w) if cols[i] in right else c.ljust(w)
                                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [fmt(cols)] + [fmt(r) for r in rows]
