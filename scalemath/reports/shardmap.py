"""The ``shardmap`` report: a shard_map program's local shapes, every device's values after each statement,
and each collective's bytes and time on a chip (the JAX chapter's collectives, priced by the book's forms in
:mod:`scalemath.symbolic.jax_collectives` and :mod:`scalemath.symbolic.collectives`).

Times are over TPU ICI, or over a GPU's NVLink and NIC: see :mod:`.shardmap_price` for the forms and the rule
that puts mesh axes on nodes.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..catalog import hardware
from ..symbolic.shardmap import Program
from ..symbolic.shardmap_run import RunResult, device_coords, live_statements
from ..values import printing as formatting
from .shardmap_price import gpu_networks, gpu_rule, price, require_gpu_links, topology

__all__ = ["price", "report", "as_text", "SHOWN_ELEMENTS"]

#: at most this many elements of a value are printed per device
SHOWN_ELEMENTS = 16

def _shown(value: np.ndarray) -> str:
    with np.printoptions(threshold=SHOWN_ELEMENTS, edgeitems=3, linewidth=100):
        return " ".join(np.array2string(value, separator=" ").split())


def report(program: Program, result: RunResult, chip: hardware.Chip | None = None, dtype: str = "bf16",
           slice_text: str | None = None) -> dict:
    """The record ``as_text`` prints (keys with "_" hold exact values for it); local matmuls are timed at the
    chip's ``dtype`` peak (the book's TPU matmuls run in bf16). On a TPU the slice (``slice_text``, e.g. "4x4",
    or the mesh's own shape) and the chip's wraparound rule say which axes are rings, as ``scalemath shard``."""
    mesh = program.mesh
    if chip is not None and chip.family == "gpu":
        require_gpu_links(chip)
    wraps, topo = topology(chip, mesh, slice_text)
    coords = device_coords(mesh)
    live = live_statements(program)
    inputs = [{"name": i.name, "dtype": i.dtype, "shape": list(i.shape), "spec": str(i.spec),
               "local_shape": list(i.local_shape(mesh))} for i in program.inputs]
    steps = []
    for k, (stmt, step) in enumerate(zip(program.body, result.steps)):
        cols = []
        for e in (e for e in result.events if e.statement == k):
            t, how = price(e, mesh, chip, wraps)
            cols.append({"call": e.call, "kind": e.kind, "axes": list(e.axes), "group": e.group,
                         "elements": e.elements, "bytes": e.bytes, "time_exact": str(t), "how": how,
                         **({"shift": e.shift} if e.shift is not None else {}),
                         **({"time": formatting.to_float(t)} if t.is_number else {}), "_time": t})
        t_math = sp.Rational(step.flops, chip.flops(dtype)) if chip is not None and step.flops else None
        steps.append({"flops": step.flops, **({"t_math": formatting.to_float(t_math), "_t_math": t_math}
                                              if t_math is not None else {}),
                      "statement": stmt.text, "target": stmt.target, "local_shape": list(step.shape),
                      "dtype": step.dtype, "reaches_output": k in live, "collectives": cols,
                      "same_on_every_device": step.same_everywhere,
                      "values": [v.tolist() for v in step.values], "_values": step.values})
    total = sum((c["_time"] for s in steps for c in s["collectives"]), sp.Integer(0))
    math = sum((s["_t_math"] for s in steps if "_t_math" in s), sp.Integer(0))
    return {"mesh": dict(mesh), "devices": program.devices, "chip": chip.key if chip else None, "dtype": dtype,
            "wraps": wraps, "topology": topo,
            "flops": sum(s["flops"] for s in steps), **({"t_math": formatting.to_float(math), "_t_math": math}
                                                         if chip is not None else {}),
            **({"networks": gpu_networks(mesh, chip), "network_rule": gpu_rule(chip),
                "network_rates": {"NVLink": chip.nvlink_bytes_per_s, "NIC": chip.nic_bytes_per_s}}
               if chip is not None and chip.family == "gpu" else {}),
            "devices_coords": coords, "inputs": inputs, "steps": steps,
            "outputs": [{"name": o.name, "spec": str(o.spec), "shape": list(result.outputs[o.name].shape),
                         "values": result.outputs[o.name].tolist(), "_value": result.outputs[o.name]}
                        for o in program.outputs],
            "collective_time_exact": str(total), **({"collective_time": formatting.to_float(total)}
                                                    if total.is_number else {})}


def as_text(rec: dict, xla: dict | None = None) -> str:
    mesh = ", ".join(f"{a}={n}" for a, n in rec["mesh"].items())
    lines = [f"shard_map on mesh {mesh} ({rec['devices']} devices)" + (f", priced on {rec['chip']}" if rec["chip"]
                                                                      else "")]
    if rec.get("topology"):
        lines.append(f"topology: {rec['topology']}")
    if "networks" in rec:
        rates = {"NVLink": f"NVLink ({rec['network_rates']['NVLink'] / 1e9:g} GB/s per GPU)",
                 "NIC": f"the NIC ({rec['network_rates']['NIC'] / 1e9:g} GB/s per GPU)"}
        lines += ["  networks: " + ", ".join(f"{a} over {rates[net]}" for a, net in rec["networks"].items()),
                  f"  ({rec['network_rule']})"]
    for i in rec["inputs"]:
        shape, local = ", ".join(map(str, i["shape"])), ", ".join(map(str, i["local_shape"]))
        lines.append(f"  in  {i['name']}: {i['dtype']}[{shape}] {i['spec']} -> local [{local}]")
    if any(s["dtype"] == "bfloat16" for s in rec["steps"]):
        lines.append("  (bfloat16 values are computed here in float32: jax rounds each to bf16, so its last digits "
                     "may differ)")
    names = list(rec["mesh"])
    for s in rec["steps"]:
        local = ", ".join(map(str, s["local_shape"]))
        dead = "" if s["reaches_output"] else "   (reaches no output)"
        lines += ["", f"{s['statement']}   -> local {s['dtype']}[{local}]{dead}"]
        for c in s["collectives"]:
            size = formatting.with_unit(sp.Integer(c["bytes"]), "byte")
            t = formatting.with_unit(c["_time"], "s") if "time" in c else c["time_exact"]
            lines.append(f"  {c['call']} = {c['kind']} over {','.join(c['axes'])} (groups of {c['group']}): "
                         f"V = {size}, {t}  ({c['how']})")
        if s["flops"]:
            at = f", {formatting.with_unit(s['_t_math'], 's')} at the {rec['dtype']} peak" if "t_math" in s else ""
            lines.append(f"  local matmul: {formatting.with_unit(sp.Integer(s['flops']), 'FLOP')} per device{at}")
        if s["same_on_every_device"]:
            lines.append(f"  every device: {_shown(s['_values'][0])}")
        else:
            for d, v in enumerate(s["_values"]):
                where = ",".join(f"{a}={rec['devices_coords'][d][a]}" for a in names)
                lines.append(f"  device {d} ({where}): {_shown(v)}")
    lines.append("")
    for o in rec["outputs"]:
        lines.append(f"out {o['name']}: {o['spec']} -> global [{', '.join(map(str, o['shape']))}]: "
                     f"{_shown(o['_value'])}")
    if any(s["collectives"] for s in rec["steps"]):
        total = formatting.with_unit(sp.sympify(rec["collective_time_exact"]), "s") if "collective_time" in rec \
            else rec["collective_time_exact"]
        how = ("bandwidth only, without hop latency" if "networks" in rec else
               "each the larger of its bandwidth time and its hop latency, as shard prices it; a ppermute's "
               "latency adds")
        lines.append(f"collectives in all: {total} ({how}; one after another, none overlapped)")
    if rec["flops"] and "t_math" in rec:
        lines.append(f"local matmuls in all: {formatting.with_unit(sp.Integer(rec['flops']), 'FLOP')} per device, "
                     f"{formatting.with_unit(rec['_t_math'], 's')} at the {rec['dtype']} peak")
    if xla is not None:
        lines += ["", f"jax {xla['verdict']}: values {'agree' if xla['values_agree'] else 'DIFFER'} "
                      f"(outputs and every statement on every device)",
                  "  ours: " + ("; ".join(xla["ours"]) or "no collectives"),
                  "  XLA:  " + ("; ".join(xla["xla"]) or "no collectives")]
        lines += [f"  note: {n}" for n in xla["notes"]]
    return "\n".join(lines)
