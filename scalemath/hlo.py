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

import os
import re
from dataclasses import dataclass
from fractions import Fraction
from math import prod

from .errors import BadValueError
from .hlo_parse import MAX_DEVICES, HloModule, _ints, parse_collectives, parse_module
from .hlo_shapes import HloArray, arrays

__all__ = ["MAX_FILE_BYTES", "analyse", "as_json", "as_text", "op_flops", "read_hlo"]

MAX_FILE_BYTES = 512 * 2**20  # an XLA dump of a large model is tens of MB; beyond this, refuse
#: ops that move no data of their own: bookkeeping, control flow (their bodies are listed), and the
#: second half of an async pair (the bytes are counted at its -start)
FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "partition-id", "replica-id",
        "after-all", "opt-barrier", "add-dependency", "domain", "while", "conditional", "call"}
_CATALOG_DTYPE = {"bf16": "bf16", "f16": "fp16", "f32": "fp32", "s8": "int8", "u8": "int8", "s4": "int4",
                  "u4": "int4"}


def read_hlo(path: str) -> str:
    """The text of an HLO file; one clear error for a missing, empty, binary, huge or non-HLO file."""
    size = os.stat(path).st_size
    if size > MAX_FILE_BYTES:
        raise BadValueError(f"{path}: {size} bytes is more than the {MAX_FILE_BYTES // 2**20} MiB an HLO text file "
                            "may have here; split the dump or pass the one module you want")
    with open(path, "rb") as f:
        data = f.read(65536)  # look at the start first: a device or a binary file stops here
        if b"\0" in data:
            raise BadValueError(f"{path} is a binary file, not HLO text (an .hlo.pb proto? dump text with "
                                "--xla_dump_hlo_as_text or use compile().as_text())")
        data += f.read(MAX_FILE_BYTES + 1 - len(data))
    if len(data) > MAX_FILE_BYTES:
        raise BadValueError(f"{path} has more than the {MAX_FILE_BYTES // 2**20} MiB an HLO text file may have here; "
                            "split the dump or pass the one module you want")
    if not data.strip():
        raise BadValueError(f"{path} is empty; save the HLO with jax.jit(f).lower(...).compile().as_text() "
                            "or XLA_FLAGS=--xla_dump_to=DIR")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadValueError(f"{path} is not UTF-8 text (byte {exc.start}); HLO text is ASCII") from None
    return text


def _not_hlo(module: HloModule) -> bool:
    return not module.entry or not module.computations.get(module.entry)


# -- FLOPs of one op ---------------------------------------------------------------------------------

def _operand(module: HloModule, ins, k: int) -> HloArray | None:
    inline = arrays(ins.arg_shapes[k]) if k < len(ins.arg_shapes) else []
    if inline:
        return inline[0]
    src = module.instructions.get(ins.args[k]) if k < len(ins.args) else None
    found = arrays(src.shape) if src else []
    return found[0] if found else None


def _attr_value(attrs: str, key: str) -> str | None:
    m = re.search(r"(?:^|[\s,])" + re.escape(key) + r"=(\{[^}]*\}|[^,\s]+)", attrs)
    return m.group(1) if m else None


def op_flops(module: HloModule, ins, depth: int = 0) -> tuple[int, str | None]:
    """Matmul FLOPs of ``ins`` (a dot, a convolution, or a fusion or call holding them) and the
    dtype of the matmul's input: 2 x output elements x the contracted size."""
    out = arrays(ins.shape)
    if ins.opcode == "dot" and out:
        lhs = _operand(module, ins, 0)
        if lhs is None:
            return 0, None
        contracting = _ints(_attr_value(ins.attrs, "lhs_contracting_dims") or "")
        return 2 * out[0].elements * prod(lhs.dims[i] for i in contracting if i < len(lhs.dims)), lhs.dtype
    if ins.opcode == "convolution" and out:
        rhs, lhs = _operand(module, ins, 1), _operand(module, ins, 0)
        labels = _attr_value(ins.attrs, "dim_labels") or ""
        kernel = labels.split("_")[1].split("->")[0] if labels.count("_") >= 1 else ""
        if rhs is None or len(kernel) != len(rhs.dims) or "o" not in kernel:
            return 0, None
        # every output element sums over the kernel's input features and window: all its dims but 'o'
        return 2 * out[0].elements * prod(rhs.dims) // rhs.dims[kernel.index("o")], lhs.dtype if lhs else rhs.dtype
    if ins.opcode == "custom-call" and out and re.search(r'custom_call_target="[^"]*(?:gemm|matmul)', ins.attrs):
        # a GPU's cuBLAS/cuBLASLt matmul: the dimension numbers are in its backend_config
        lhs = _operand(module, ins, 0)
        dims = re.search(r'"lhs_contracting_dimensions"\s*:\s*\[([^\]]*)\]', ins.attrs)
        if lhs is None or dims is None:
            return 0, None
        contracting = _ints(dims.group(1))
        return 2 * out[0].elements * prod(lhs.dims[i] for i in contracting if i < len(lhs.dims)), lhs.dtype
    called = re.search(r"(?:calls|to_apply)=%?([\w.\-]+)", ins.attrs)
    if ins.opcode in ("fusion", "call", "async-start") and called and depth < 8:
        total, dtype = 0, None
        for inner in module.computations.get(called.group(1), []):
            f, d = op_flops(module, inner, depth + 1)
            total += f
            dtype = dtype or d
        return total, dtype
    return 0, None


def _sum_bytes(arrs) -> Fraction | int:
    total = 0
    for a in arrs:
        b = a.padded_bytes
        total += b.numerator if b.denominator == 1 else b
    return total


# -- which computations run as ops ---------------------------------------------------------------------

def _executed(module: HloModule) -> tuple[dict[str, int], bool]:
    """The entry and the computations it runs through while, conditional and call (not fusion bodies,
    reducers or async wrappers, whose work belongs to the op that calls them), each with how many times
    it runs (a while body its known trip count, times its caller's), and whether some loop's count is unknown."""
    order: dict[str, int] = {}
    todo, unknown = [(module.entry, 1)], False
    while todo:
        name, times = todo.pop(0)
        if name in order or name not in module.computations:
            continue
        order[name] = times
        for ins in module.computations[name]:
            if ins.opcode not in ("while", "conditional", "call"):
                continue
            runs = times
            if ins.opcode == "while":
                trips = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)', ins.attrs)
                unknown |= trips is None
                runs = times * (int(trips.group(1)) if trips else 1)
            called = re.findall(r"(?:body|condition|to_apply|true_computation|false_computation)=%?([\w.\-]+)",
                                ins.attrs)
            branches = re.search(r"branch_computations=\{([^}]*)\}", ins.attrs)
            if branches:
                called += [b.strip().lstrip("%") for b in branches.group(1).split(",") if b.strip()]
            todo += [(c, runs) for c in called]
    return order, unknown


# -- the report ----------------------------------------------------------------------------------------

@dataclass
class Op:
    name: str
    opcode: str
    computation: str
    out: list[HloArray]
    inputs: list[HloArray]
    flops: int
    flops_dtype: str | None
    fusion_kind: str | None = None
    collective: dict | None = None
    t_math: Fraction | None = None
    t_memory: Fraction | None = None
    t_comms: Fraction | None = None
    count: int = 1  # times it runs: a loop body's op runs the loop's trip count

    @property
    def bytes_in(self) -> Fraction:
        return _sum_bytes(self.inputs)

    @property
    def bytes_out(self) -> Fraction:
        return _sum_bytes(self.out)

    @property
    def time(self) -> Fraction:
        """The op at its own bound (read once priced: the times are set before anything asks)."""
        return max(self.t_math or 0, self.t_memory or 0, self.t_comms or 0)

    @property
    def bound(self) -> str | None:
        if self.t_math is None or self.time == 0:
            return None
        return max((("compute", self.t_math), ("memory", self.t_memory), ("communication", self.t_comms or 0)),
                   key=lambda kv: kv[1])[0]


def _result_arrays(module: HloModule, ins, inputs: list[HloArray]) -> list[HloArray]:
    out = arrays(ins.shape)
    if ins.opcode == "copy-start" and out:
        return out[:1]  # (destination, source, context)
    if ins.opcode == "custom-call" and len(out) > 1 and re.search(r'custom_call_target="[^"]*(?:gemm|matmul)', ins.attrs):
        return out[:1]  # (result, scratch workspace)
    if ins.opcode.endswith("-start") and len(out) > len(inputs) and inputs:
        same = [(a.dtype, a.dims) for a in out[:len(inputs)]] == [(a.dtype, a.dims) for a in inputs]
        return out[len(inputs):2 * len(inputs)] if same else out
    return out


_SLICES = ("slice", "dynamic-slice")


def _operand_arrays(module: HloModule, ins, k: int) -> list[HloArray]:
    inline = arrays(ins.arg_shapes[k]) if k < len(ins.arg_shapes) else []
    src = module.instructions.get(ins.args[k])
    return inline or (arrays(src.shape) if src else [])


def _traffic(module: HloModule, ins) -> tuple[list[HloArray], list[HloArray] | None]:
    """The arrays ``ins`` reads, and what it writes when that is not its whole result: a slice reads only
    its slice; a dynamic-update-slice writes its update in place (also as a fusion's root); a fusion
    parameter used only by slices is read only where sliced."""
    reads = [_operand_arrays(module, ins, k) for k in range(len(ins.args))]
    writes = None
    if ins.opcode in _SLICES and reads:
        reads[0] = arrays(ins.shape)
    elif ins.opcode == "dynamic-update-slice" and len(reads) > 1:
        reads[0], writes = [], list(reads[1])
    called = re.search(r"calls=%?([\w.\-]+)", ins.attrs)
    body = module.computations.get(called.group(1), []) if ins.opcode == "fusion" and called else []
    params = {int(i.args[0]): i.name for i in body if i.opcode == "parameter" and i.args and i.args[0].isdigit()}
    users: dict[str, list] = {}
    for i in body:
        for a in i.args:
            users.setdefault(a, []).append(i)
    root = body[-1] if body else None
    for k, name in params.items():
        us = users.get(name, [])
        if k >= len(reads) or not us:
            continue
        if root is not None and root.opcode == "dynamic-update-slice" and root.args[0] == name and len(us) == 1:
            reads[k] = []  # updated in place
            writes = _operand_arrays(module, root, 1)
        elif all(u.opcode in _SLICES and u.args[0] == name and u.args.count(name) == 1 for u in us):
            reads[k] = [a for u in us for a in arrays(u.shape)]
    return [a for r in reads for a in r], writes


def _ops(module: HloModule) -> list[Op]:
    ops = []
    runs, _ = _executed(module)
    for comp, times in runs.items():
        for ins in module.computations[comp]:
            if ins.opcode in FREE or ins.opcode.endswith(("-done", "-update")):
                continue
            inputs, writes = _traffic(module, ins)
            flops, dtype = op_flops(module, ins)
            kind = re.search(r"\bkind=(\w+)", ins.attrs)
            ops.append(Op(ins.name, ins.opcode, comp, _result_arrays(module, ins, inputs), inputs, flops, dtype,
                          kind.group(1) if kind and ins.opcode == "fusion" else None, count=times))
            if writes is not None:
                ops[-1].out = writes
    return ops


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

    from .symbolic.sharded_cost import collective_cost
    from .symbolic.symbols import sym

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

    from .shard import _chip_values, _wraps
    from .symbolic.symbols import sym

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
    ops = _ops(module)
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
        from .hlo_shapes import dtype_bits

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
    runs, unknown = _executed(module)
    if any(n > 1 for n in runs.values()):
        notes.append("ops in loop bodies count in the totals times the loop's trip count (the table shows one run)")
    if unknown:
        notes.append("a while loop without a known trip count is counted as running once")
    return {"module": module.name, "entry": module.entry, "devices": devices, "chip": chip.key if chip else None,
            "mesh": dict(mesh) if mesh else None, "topology": topology, "_ops": ops, "collectives": collectives,
            "total": _totals(ops, collectives, chip is not None), "notes": notes}


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


# -- output ----------------------------------------------------------------------------------------------

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
    return {"module": report["module"], "devices": report["devices"], "chip": report["chip"], "mesh": report["mesh"],
            "topology": report["topology"] or None, "ops": ops, "collectives": cols, "total": total,
            "notes": report["notes"]}


def _fmt(value, unit: str) -> str:
    from . import formatting

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
    head = f"HLO module {report['module'] or '(unnamed)'}: {len(report['_ops'])} ops"
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
            from . import formatting

            lines.append("  dominant: " + "; ".join(f"{d['name']} {formatting.decimal(100 * d['share'], 3)}%"
                                                    for d in t["dominant"]))
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines)


def _table(cols: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    right = {"bytes", "FLOPs", "T_math", "T_memory", "T_comms", "V", "time"}
    fmt = lambda cells: "  " + "  ".join(c.rjust(w) if cols[i] in right else c.ljust(w)
                                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [fmt(cols)] + [fmt(r) for r in rows]
