"""``scalemath shard``: a sharded matmul's case, collectives, bytes, times and verdict per plan."""

from __future__ import annotations

import math
from typing import Mapping

import sympy as sp

from ..values import printing as formatting
from ..catalog import hardware
from ..errors import BadValueError, UnknownNameError
from ..symbolic.notation import parse_contraction, parse_mesh
from ..symbolic.sharded_cost import plan_cost
from ..symbolic.sharding import case_of, plans
from ..symbolic.symbols import dim_symbol, sym

__all__ = ["analyse", "CASES", "shard_report", "as_json", "shard_text"]

CASES = {
    "1": "no input is sharded along a contracting dimension: multiply the local shards",
    "2": "one input is sharded along a contracting dimension: gather it first, or slice the other "
         "input to match and reduce the partial sums",
    "3": "both inputs are sharded along a contracting dimension on the same axis: the local products are "
         "partial sums to AllReduce (or ReduceScatter into a sharded output)",
    "4": "a free dimension of each input is sharded on the same axis: gather one input first",
}


def _sizes(arrays, mesh, given: Mapping[str, sp.Expr]) -> dict[str, sp.Expr]:
    names = []
    for arr in arrays:
        names += [n for n in arr.names if n not in names]
    for key in given:
        if key not in names:
            raise UnknownNameError("dimension", key, names, hint=f"the pattern's dimensions are {', '.join(names)}")
    sizes = {}
    for n in names:
        if n in given:
            v = sp.sympify(given[n])
            if not (v.is_Integer and v > 0):
                raise BadValueError(f"{n} = {v} must be a positive whole number of elements")
            sizes[n] = v
        else:
            sizes[n] = dim_symbol(n)
    for arr in arrays:
        for d in arr.dims:
            parts = 1
            for a in d.axes:
                parts *= mesh[a]
            if sizes[d.name].is_Integer and sizes[d.name] % parts:
                raise BadValueError(f"{d.name} = {sizes[d.name]} does not split evenly over {'x'.join(d.axes)} "
                                    f"({parts} shards in {arr.name}); choose a size divisible by {parts}")
    return sizes


def _chip_values(chip: hardware.Chip | None, dtype: str) -> tuple[dict, str, int | None]:
    if chip is None:
        return {}, "tpu", None
    values = {sym("C"): chip.flops(dtype)}
    if chip.family == "gpu":
        for name, value in (("W_gpu", chip.nvlink_bytes_per_s), ("D_node", chip.nvlink_domain),
                            ("W_node", chip.nic_bytes_per_s * chip.nvlink_domain
                             if chip.nic_bytes_per_s and chip.nvlink_domain else None)):
            if value is not None:
                values[sym(name)] = value
        return values, "gpu", chip.nvlink_domain
    values[sym("W_ici")] = chip.bandwidth("ici")
    if chip.hop_latency_s is not None:
        values[sym("t_hop")] = chip.hop_latency_s
    return values, "tpu", None


def _wraps(chip: hardware.Chip | None, mesh: Mapping[str, int],
           slice_text: str | None = None) -> tuple[dict[str, bool] | None, str]:
    """Which mesh axes are rings on the chip's slice, and why: the mesh's axes are the slice's axes, in order
    (the slice is the mesh's own shape unless given); a mesh axis shorter than its slice axis is an open line."""
    if chip is None or chip.family != "tpu":
        if slice_text is not None:
            raise BadValueError("--slice describes a TPU slice; give a TPU with --chip")
        return None, ""
    dims = chip.torus_dims or 2
    devices = math.prod(mesh.values())
    if chip.pod_chips is not None and devices > chip.pod_chips:
        raise BadValueError(f"the mesh has {devices} devices, more than a {chip.key} pod's {chip.pod_chips} "
                            f"({'x'.join(map(str, chip.pod_shape))}); shard prices one slice over ICI")
    if len(mesh) > dims:
        if slice_text is not None:
            raise BadValueError(f"the mesh has {len(mesh)} axes and a {chip.key} slice {dims}: give at most {dims} "
                                "mesh axes with --slice")
        return None, (f"{len(mesh)} mesh axes on a {dims}-axis torus: several mesh axes share a physical axis; "
                      "priced as rings (the book's assumption)")
    if slice_text is None:
        shape = tuple(mesh.values()) + (1,) * (dims - len(mesh))
    else:
        parts = slice_text.lower().split("x")
        if len(parts) != dims or not all(p.isascii() and p.isdigit() and 0 < int(p) <= 4096 for p in parts):
            raise BadValueError(f"--slice {slice_text!r}: write the {chip.key} slice as {dims} sizes, e.g. "
                                f"{'x'.join(['4'] * dims)}")
        shape = tuple(int(p) for p in parts)
        if not chip.slice_fits(shape):
            raise BadValueError(f"--slice {slice_text}: a {chip.key} pod ({'x'.join(map(str, chip.pod_shape))}, "
                                f"{chip.pod_chips} chips) cannot form that slice; its largest slice is the pod")
        for (axis, n), side in zip(mesh.items(), shape):
            if n > side:
                raise BadValueError(f"mesh axis {axis}={n} does not fit the slice's axis of {side} chips")
    try:
        rings = chip.wraps(shape)
    except BadValueError:
        return None, f"the catalog gives no wraparound rule for {chip.key}: axes priced as rings"
    wraps = {axis: ring and n == side for (axis, n), ring, side in zip(mesh.items(), rings, shape)}
    rule = {"size16": "an axis wraps only when it spans the pod's full 16 chips",
            "cube": "a slice wraps on every axis only when it is built of whole 4x4x4 cubes"}.get(chip.wraparound, "")
    shown = "x".join(str(n) for n in shape)
    axes = ", ".join(f"{a}={n} {'wraps (a ring)' if wraps[a] else 'is an open line'}" for a, n in mesh.items())
    return wraps, f"{chip.key} slice {shown}: {axes} ({rule})"


def analyse(pattern: str, mesh_text: str, chip: hardware.Chip | None, dtype: str | None,
            given: Mapping[str, sp.Expr], slice_text: str | None = None) -> dict:
    """Every plan for ``pattern`` on the mesh, priced for the chip, the cheapest named."""
    mesh = parse_mesh(mesh_text)
    contraction = parse_contraction(pattern, mesh)
    dtype = dtype or "bf16"
    b = hardware.dtype_bytes(dtype)
    sizes = _sizes((contraction.lhs, contraction.rhs, contraction.out), mesh, given)
    values, family, node = _chip_values(chip, dtype)
    wraps, wrap_note = _wraps(chip, mesh, slice_text)
    case = case_of(contraction)
    out_plans = []
    for plan in plans(contraction, mesh, sizes, sp.Rational(b.numerator, b.denominator)):
        derivation = plan_cost(plan, mesh, family, node, wraps)
        ev = derivation.at(values)
        steps = {s.step.label: s for s in ev.steps}
        t_math, t_comms = steps[r"T_{\mathrm{math}}"].value, steps[r"T_{\mathrm{comms}}"].value
        numeric = ev.is_numeric
        cols = []
        for i, c in enumerate(plan.collectives):
            t = ev.steps[2 + 2 * i + 1]
            cols.append({"op": str(c), "kind": c.kind, "axes": list(c.axes), "array": c.before.name,
                         "before": str(c.before), "after": str(c.after), "group": c.group,
                         "bytes_exact": str(c.bytes), "time_exact": str(t.value), "how": t.step.why,
                         **({"bytes": formatting.to_float(c.bytes)} if c.bytes.is_number else {}),
                         **({"time": formatting.to_float(t.value)} if t.is_numeric else {})})
        bound = None
        if numeric:
            bound = "compute" if t_math >= t_comms else "communication"
        devices = sp.prod(list(mesh.values()))
        useful = 2 * sp.prod([sizes[n] for n in dict.fromkeys(contraction.lhs.names + contraction.rhs.names)])
        out_plans.append({"name": plan.name, "why": plan.why, "local": f"{plan.lhs} @ {plan.rhs} -> {plan.local_out}",
                          "flops_mesh_exact": str(plan.flops * devices),
                          "repeated": str(sp.simplify(plan.flops * devices / useful)),
                          "collectives": cols, "flops_exact": str(plan.flops), "t_math_exact": str(t_math),
                          "t_comms_exact": str(t_comms), "t_lower_exact": str(ev.value), "bound": bound,
                          **({"flops": formatting.to_float(plan.flops)} if plan.flops.is_number else {}),
                          **({"t_math": formatting.to_float(t_math), "t_comms": formatting.to_float(t_comms),
                              "t_lower": formatting.to_float(ev.value)} if numeric else {}),
                          "_evaluated": ev,
                          # the values themselves, for the text report (their strings hold user dimension names,
                          # which must never be parsed back)
                          "_values": {"flops": plan.flops, "t_math": t_math, "t_comms": t_comms,
                                      "collectives": [(c.bytes, ev.steps[2 + 2 * i + 1].value)
                                                      for i, c in enumerate(plan.collectives)]}})
    if all("t_lower" in p for p in out_plans):
        best = min(range(len(out_plans)), key=lambda i: out_plans[i]["t_lower"])
        for i, p in enumerate(out_plans):
            p["cheapest"] = i == best
    return {"pattern": str(contraction), "mesh": mesh, "chip": chip.key if chip else None, "dtype": dtype,
            "wraps": wraps, "topology": wrap_note,
            "sizes": {k: (int(v) if v.is_Integer else str(v)) for k, v in sizes.items()},
            "case": case, "case_text": "; ".join(CASES[c] for c in case.split("+")), "plans": out_plans}


def as_text(report: dict) -> str:
    mesh = ", ".join(f"{k}={v}" for k, v in report["mesh"].items())
    head = f"{report['pattern']}   mesh {mesh}" + (f"   {report['chip']}, {report['dtype']}" if report["chip"] else "")
    lines = [head] + ([f"topology: {report['topology']}"] if report.get("topology") else []) + \
        [f"case {report['case']}: {report['case_text']}"]
    for i, p in enumerate(report["plans"], 1):
        tag = "   (cheapest)" if p.get("cheapest") and len(report["plans"]) > 1 else ""
        lines += ["", f"plan {i}: {p['name']}{tag}", f"  {p['why']}"]
        values = p["_values"]
        for c, (size, seconds) in zip(p["collectives"], values["collectives"]):
            size = formatting.with_unit(size, "byte") if size.is_number else str(size)
            time = formatting.with_unit(seconds, "s") if "time" in c else c["time_exact"]
            lines.append(f"  {c['op']}: V = {size}, {time}  ({c['how']})")
        flops = formatting.with_unit(values["flops"], "FLOP") if "flops" in p else p["flops_exact"]
        lines.append(f"  local matmul {p['local']}: {flops} per device")
        if p["repeated"] != "1":
            lines.append(f"  over the whole mesh the matmul's work is done {p['repeated']} times (axes no input is "
                         "sharded over repeat it)")
        if p["bound"]:
            t_math, t_comms = values["t_math"], values["t_comms"]
            ratio = f" (T_math / T_comms = {formatting.decimal(t_math / t_comms, 3)})" if t_comms else ""
            lines.append(f"  T_math = {formatting.with_unit(t_math, 's')}, T_comms = "
                         f"{formatting.with_unit(t_comms, 's')} -> {p['bound']}-bound{ratio}")
        else:
            lines.append(f"  T_math = {p['t_math_exact']}")
            lines.append(f"  T_comms = {p['t_comms_exact']}")
    return "\n".join(lines)


def reshard_report(pattern: str, mesh_text: str, chip: hardware.Chip | None, dtype: str | None,
                   given: Mapping[str, sp.Expr], slice_text: str | None = None) -> dict:
    """``A[...] -> A[...]``: the collectives that reshard one array, each priced, and both layouts' statistics;
    or, for a lone ``A[...]``, its layout's statistics only."""
    from ..symbolic.notation import parse_array, parse_reshard
    from ..symbolic.sharded_cost import collective_cost
    from ..symbolic.sharding import reshard

    mesh = parse_mesh(mesh_text)
    arrow = "->" in pattern or "\u2192" in pattern
    src, dst = parse_reshard(pattern, mesh) if arrow else (parse_array(pattern, mesh), None)
    dtype = dtype or "bf16"
    b = hardware.dtype_bytes(dtype)
    b = sp.Rational(b.numerator, b.denominator)
    sizes = _sizes([a for a in (src, dst) if a is not None], mesh, given)
    values, family, node = _chip_values(chip, dtype)
    wraps, wrap_note = _wraps(chip, mesh, slice_text)
    out = {"pattern": pattern, "mesh": mesh, "chip": chip.key if chip else None, "dtype": dtype, "wraps": wraps,
           "topology": wrap_note, "layouts": [layout(a, mesh, sizes, b) for a in (src, dst) if a is not None]}
    if dst is None:
        return out
    cols, total = [], sp.Integer(0)
    for c in reshard(src, dst, mesh, sizes, b):
        cost, how = collective_cost(c, mesh, family, node, wraps)
        seconds = cost.xreplace({k: sp.sympify(v) for k, v in values.items()})
        total += seconds
        cols.append({"op": str(c), "kind": c.kind, "axes": list(c.axes), "bytes_exact": str(c.bytes),
                     "time_exact": str(seconds), "how": how, "_bytes": c.bytes, "_time": seconds})
    out.update(collectives=cols, time_exact=str(total), _time=total)
    return out


def layout(arr, mesh: Mapping[str, int], sizes, b) -> dict:
    """A partition spec's local shape per device, shards, replication and bytes per device and over the mesh."""
    from ..symbolic.sharding import array_bytes, local_shape

    devices = int(sp.prod(list(mesh.values())))
    shards = int(sp.prod([mesh[a] for a in arr.axes]))
    local = array_bytes(arr, mesh, sizes, b)
    return {"array": str(arr), "local_shape": [str(x) for x in local_shape(arr, mesh, sizes)], "shards": shards,
            "replicas": devices // shards, "bytes_per_device": str(local), "bytes_over_mesh": str(local * devices),
            "_local": local, "_mesh": local * devices}


def reshard_text(report: dict) -> str:
    mesh = ", ".join(f"{k}={v}" for k, v in report["mesh"].items())
    lines = [f"{report['pattern']}   mesh {mesh}" + (f"   {report['chip']}, {report['dtype']}" if report["chip"] else "")]
    if report.get("topology"):
        lines.append(f"topology: {report['topology']}")
    for lay in report["layouts"]:
        size = (lambda v: formatting.with_unit(v, "byte") if v.is_number else str(v))
        lines.append(f"{lay['array']}: local shape [{', '.join(lay['local_shape'])}] per device, {lay['shards']} "
                     f"shard{'s' if lay['shards'] != 1 else ''}, each held by {lay['replicas']} device"
                     f"{'s' if lay['replicas'] != 1 else ''}; {size(lay['_local'])} per device, "
                     f"{size(lay['_mesh'])} over the mesh")
    if "collectives" in report:
        if not report["collectives"]:
            lines.append("no communication: each device slices what it already holds")
        for c in report["collectives"]:
            size = formatting.with_unit(c["_bytes"], "byte") if c["_bytes"].is_number else str(c["_bytes"])
            time = formatting.with_unit(c["_time"], "s") if c["_time"].is_number else str(c["_time"])
            lines.append(f"  {c['op']}: V = {size}, {time}  ({c['how']})")
        if len(report["collectives"]) > 1:
            total = report["_time"]
            lines.append(f"  in all: {formatting.with_unit(total, 's') if total.is_number else total}")
    return "\n".join(lines)


def shard_report(pattern: str, mesh_text: str, chip: hardware.Chip | None, dtype: str | None,
                 given: Mapping[str, sp.Expr], slice_text: str | None = None) -> dict:
    """What ``scalemath shard PATTERN`` reports: a contraction's plans (:func:`analyse`), or, for one array (``A[...]``
    or ``A[...] -> A[...]``), its layout and how to reshard it (:func:`reshard_report`)."""
    if pattern.count("[") < 3:
        return reshard_report(pattern, mesh_text, chip, dtype, given, slice_text)
    return analyse(pattern, mesh_text, chip, dtype, given, slice_text)


def _is_reshard(report: dict) -> bool:
    return "layouts" in report


def shard_text(report: dict) -> str:
    """:func:`shard_report`'s text, as the command prints it."""
    return reshard_text(report) if _is_reshard(report) else as_text(report)


def _public(value):
    """``value`` without the keys that start with "_" (objects kept for the text report), at every depth."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


def as_json(report: dict) -> dict:
    """:func:`shard_report`'s data for JSON: the private objects the text report keeps are left out."""
    if _is_reshard(report):
        return _public(report)
    clean = {k: v for k, v in report.items() if k != "plans"}
    clean["plans"] = [{k: v for k, v in p.items() if not k.startswith("_")} for p in report["plans"]]
    return clean
