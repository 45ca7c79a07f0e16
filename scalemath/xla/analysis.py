"""``scalemath hlo``: every op of an HLO module against the roofline (profiling.md, "real(ish) example").

Per op (in the entry computation and the loop and branch bodies it runs): its opcode, result
shape and dtype, the bytes it reads and writes as stored (tiling padding included, each array at
its memory space's bandwidth: HBM, or VMEM for ``S(1)``), the FLOPs of its matmul (a ``dot`` or
``convolution``, alone or inside a fusion: 2 x the output's elements x the contracted size, from
the dimension numbers), and on a chip T_math = FLOPs / C, T_memory = bytes / W and, for a
collective, T_comms from the engine's collective costs (topology-aware with ``--mesh``). The
module's totals: the sums, the lower bound max(sum T_math, sum T_memory, sum T_comms) if everything
overlapped, and the sum of each op's own bound if nothing did.

Shapes are per device (the HLO after SPMD partitioning). Values stay exact (``Fraction``) until
printed. No jax is needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from math import prod

from ..errors import BadValueError
from .memory import summary as memory_summary
from .ops import Op, executed, module_ops
from .parse import MAX_DEVICES, HloModule, parse_collectives, parse_module
from .shapes import dtype_bits
from ..files import read_user_bytes

__all__ = ["MAX_FILE_BYTES", "analyse", "read_hlo"]

#: Largest HLO text read: an XLA dump of a large model is tens of MB. Each MB of text takes about 10 MB of
#: memory and 0.2 s to analyse, so 256 MiB is about 2.6 GB and a minute; beyond it, refuse.
MAX_FILE_BYTES = 256 * 2**20
_CATALOG_DTYPE = {"bf16": "bf16", "f16": "fp16", "f32": "fp32", "s8": "int8", "u8": "int8", "s4": "int4",
                  "u4": "int4"}


def read_hlo(path: str) -> str:
    """The text of an HLO file; one clear error for a missing, empty, binary, huge or non-HLO file, and for
    anything that is not a regular file (a FIFO or a device is refused before any read, never waited on)."""
    data = read_user_bytes(path, "HLO text file", MAX_FILE_BYTES)
    if b"\0" in data[:65536]:
        raise BadValueError(f"{path} is a binary file, not HLO text (an .hlo.pb proto? dump text with "
                            "--xla_dump_hlo_as_text or use compile().as_text())")
    if not data or data.isspace():
        raise BadValueError(f"{path} is empty; save the HLO with jax.jit(f).lower(...).compile().as_text() "
                            "or XLA_FLAGS=--xla_dump_to=DIR")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadValueError(f"{path} is not UTF-8 text (byte {exc.start}); HLO text is ASCII") from None


def _not_hlo(module: HloModule) -> bool:
    return not module.entry or not module.computations.get(module.entry)


# -- pricing on a chip -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Collective:  # what the engine's collective_cost reads of a plan's collective
    kind: str
    axes: tuple[str, ...]
    group: int
    bytes: object


def _fraction(value) -> Fraction | None:
    import sympy as sp

    value = sp.nsimplify(value) if not isinstance(value, sp.Basic) else value
    if not (value.is_number and value.is_Rational):
        return None
    return Fraction(int(value.p), int(value.q))


def _price(kind: str, axes, group: int, v: Fraction, mesh, chip_env) -> tuple[Fraction | None, str]:
    """Seconds for one collective by the engine's costs, and how it was priced."""
    import sympy as sp

    from ..symbolic.sharded_cost import collective_cost
    from ..symbolic.symbols import sym

    values, family, node, wraps = chip_env
    V = sp.Rational(v.numerator, v.denominator)
    if group <= 1 and kind != "CollectivePermute":
        return Fraction(0), "every group is one device: nothing moves"
    if kind in ("AllGather", "ReduceScatter", "AllReduce", "AllToAll"):
        if axes:
            expr, how = collective_cost(_Collective(kind, tuple(axes), group, V), mesh, family, node, wraps)
        else:
            expr, how = collective_cost(_Collective(kind, ("G",), group, V), {"G": group}, family, node, None)
            how += f" (one ring of the group's {group} devices)"
    elif kind == "CollectivePermute":
        if family == "gpu":
            expr, how = V / sym("W_gpu"), "each GPU sends V over NVLink"
        else:
            expr = sp.Max(sym("t_hop"), 2 * V / sym("W_ici"))
            how = "each device sends V over one link one way (W_ici/2), at least one hop"
    else:
        return None, f"{kind} is not priced"
    return _fraction(expr.xreplace(values)), how


def _environment(chip, dtype: str | None, mesh):
    """The chip's values for the collective costs, the per-device rates and notes."""
    import sympy as sp

    from ..reports.shard import _chip_values, _wraps
    from ..symbolic.symbols import sym

    notes = []
    rate_dtype = dtype or ("bf16" if "bf16" in chip.flops_per_s else chip.dtypes[0])
    values, family, node = _chip_values(chip, rate_dtype)
    if family == "tpu" and sym("t_hop") not in values:
        values[sym("t_hop")] = 0
        notes.append(f"{chip.key} has no hop latency in the catalog: collectives priced by bandwidth alone")
    values = {k: sp.sympify(v) for k, v in values.items()}
    wraps, topology = (None, "")
    if mesh:
        wraps, topology = _wraps(chip, mesh)
    cores = chip.cores_per_chip if (family == "tpu" and (chip.cores_per_chip or 1) > 1 and not chip.megacore) else 1
    if cores > 1:
        notes.append(f"a device of {chip.key} is one of its {cores} cores (not a megacore): C and HBM bandwidth per "
                     f"device are the chip's / {cores}")
    return (values, family, node, wraps), topology, cores, notes


def _rate(chip, op_dtype: str | None, dtype: str | None, cores: int, notes: list[str]) -> Fraction:
    if dtype:
        return Fraction(chip.flops(dtype), cores)
    want = _CATALOG_DTYPE.get(op_dtype or "", "fp8" if (op_dtype or "").startswith("f8") else
                              "fp4" if (op_dtype or "").startswith("f4") else None)
    if want in chip.flops_per_s:
        return Fraction(chip.flops_per_s[want], cores)
    fallback = "bf16" if "bf16" in chip.flops_per_s else chip.dtypes[0]
    note = (f"{op_dtype} matmuls priced at the {fallback} rate: {chip.key} has no "
            f"{want or op_dtype} rate in the catalog (CPU HLO promotes bf16 to f32; choose with --dtype)")
    if note not in notes:
        notes.append(note)
    return Fraction(chip.flops_per_s[fallback], cores)


def analyse(text: str, chip=None, mesh: dict[str, int] | None = None, dtype: str | None = None,
            source: str = "the text") -> dict:
    """Every op and collective of the HLO module in ``text``, priced on ``chip`` when given."""
    try:
        return _analyse(text, chip, mesh, dtype, source)
    except (ValueError, IndexError, ZeroDivisionError) as exc:
        if isinstance(exc, BadValueError):
            raise
        raise BadValueError(f"{source}: cannot read this HLO ({type(exc).__name__}: {str(exc)[:200]}); is it the "
                            "text of compile().as_text() or an XLA dump, unedited?") from None


def _analyse(text: str, chip, mesh, dtype, source) -> dict:
    module = parse_module(text)
    if _not_hlo(module):
        raise BadValueError(f"{source} is not HLO text: no computation with instructions "
                            "('%name = f32[8,128]{1,0} opcode(...)') was found; give the text of "
                            "jax.jit(f).lower(...).compile().as_text() or an XLA dump (*.txt)")
    devices = module.num_partitions
    if mesh:
        size = prod(mesh.values())
        if size > MAX_DEVICES:
            raise BadValueError(f"--mesh has {size} devices; at most {MAX_DEVICES}")
        if devices and devices > 1 and size != devices:
            raise BadValueError(f"--mesh {','.join(f'{k}={v}' for k, v in mesh.items())} has {size} devices but the "
                                f"module was compiled for {devices} (num_partitions); give a mesh of {devices}")
        devices = size
    shape, names = (tuple(mesh.values()), tuple(mesh)) if mesh else ((devices or 1,), ("all",))
    try:
        observed = parse_collectives(text, shape, names, module=module)
    except ValueError as exc:
        raise BadValueError(f"{source}: {exc}") from None
    ops = module_ops(module)
    by_name = {op.name: op for op in ops}
    callers = {}
    for ins in module.instructions.values():
        called = re.search(r"calls=%?([\w.\-]+)", ins.attrs)
        if called and ins.name in by_name:
            callers[called.group(1)] = ins.name

    notes: list[str] = []
    env, topology, cores = None, "", 1
    if chip is not None:
        env, topology, cores, notes = _environment(chip, dtype, mesh)
    collectives, priced = [], {}
    for c in observed:
        v = Fraction(c.elements * dtype_bits(c.dtype or "f32"), 8)
        axes = list(c.axes) if (mesh and c.axes) else None
        entry = {"name": c.name, "kind": c.kind, "opcode": c.opcode, "bytes": v, "axes": axes,
                 "group_size": c.group_size, "groups": len(c.groups) if c.kind != "CollectivePermute" else None,
                 "time": None, "how": ""}
        if c.kind == "CollectivePermute":
            entry["group_size"] = None
        if env is not None:
            key = (c.kind, tuple(axes or ()), c.group_size, v)
            if key not in priced:  # a module repeats the same few collectives: price each once
                priced[key] = _price(c.kind, axes, c.group_size, v, mesh, env)
            entry["time"], entry["how"] = priced[key]
            if mesh and c.axes is None and c.kind != "CollectivePermute":
                entry["how"] += "; its groups match no set of mesh axes"
        owner = by_name.get(c.name) or by_name.get(callers.get(c.computation, ""))
        entry["op"] = owner.name if owner else None
        entry["count"] = owner.count if owner else 1
        if owner is not None:
            owner.collective = entry
            if entry["time"] is not None:
                owner.t_comms = (owner.t_comms or 0) + entry["time"]
        collectives.append(entry)

    if chip is not None:
        hbm = Fraction(chip.hbm_bytes_per_s, cores)
        for op in ops:
            op.t_math = Fraction(op.flops) / _rate(chip, op.flops_dtype, dtype, cores, notes) if op.flops else Fraction(0)
            in_hbm, in_vmem = 0, 0
            for a in op.inputs + op.out:
                if a.space == "vmem":
                    if chip.vmem_bytes_per_s is None:
                        note = f"{chip.key} has no VMEM bandwidth in the catalog: S(1) arrays cost no memory time"
                        notes += [] if note in notes else [note]
                        continue
                    in_vmem += a.padded_bytes
                else:
                    if a.space != "hbm":
                        note = f"arrays in memory space {a.space} are priced at the HBM bandwidth"
                        notes += [] if note in notes else [note]
                    in_hbm += a.padded_bytes
            op.t_memory = Fraction(in_hbm) / hbm + (Fraction(in_vmem, 1) / chip.vmem_bytes_per_s if in_vmem else 0)
    runs, unknown = executed(module)
    if any(n > 1 for n in runs.values()):
        notes.append("ops in loop bodies count in the totals times the loop's trip count (the table shows one run)")
    if unknown:
        notes.append("a while loop without a known trip count is counted as running once")
    missing = [op.name for op in ops if op.opcode == "fusion" and module.instructions[op.name].attrs and
               (m := re.search(r"calls=%?([\w.\-]+)", module.instructions[op.name].attrs)) and
               m.group(1) not in module.computations]
    if missing:
        notes.append(f"{', '.join(missing[:5])}{' and more' if len(missing) > 5 else ''}: the fused computation "
                     "is not in the text, so any matmul inside is not counted (paste the whole module)")
    memory = memory_summary(module, text, Fraction(chip.hbm_bytes, cores) if chip is not None else None)
    return {"module": module.name, "entry": module.entry, "devices": devices, "chip": chip.key if chip else None,
            "mesh": dict(mesh) if mesh else None, "topology": topology, "_ops": ops, "collectives": collectives,
            "total": _totals(ops, collectives, chip is not None), "memory": memory, "notes": notes}


def _totals(ops: list[Op], collectives, priced: bool) -> dict:
    """Sums over the module: every op times the number of times it runs."""
    total = {"ops": len(ops), "flops": sum(op.flops * op.count for op in ops),
             "bytes": sum(((op.bytes_in + op.bytes_out) * op.count for op in ops), Fraction(0)),
             "collective_bytes": sum((c["bytes"] * c["count"] for c in collectives), Fraction(0))}
    if priced:
        sums = {k: sum(((getattr(op, k) or 0) * op.count for op in ops), Fraction(0))
                for k in ("t_math", "t_memory", "t_comms")}
        total.update(sums)
        total["t_lower"] = max(sums.values())
        total["t_serial"] = sum((op.time * op.count for op in ops), Fraction(0))
        names = {"t_math": "compute", "t_memory": "memory", "t_comms": "communication"}
        total["bound"] = names[max(sums, key=lambda k: sums[k])] if total["t_lower"] else None
        ranked = sorted((op for op in ops if op.time), key=lambda op: -op.time * op.count)
        total["dominant"] = [{"name": op.name, "time": op.time * op.count,
                              "share": op.time * op.count / total["t_serial"]} for op in ranked[:3]]
    return total
