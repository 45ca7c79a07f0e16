"""The ops of an HLO module as the roofline sees them: what each reads and writes, and its matmul FLOPs.

Which computations run as ops (the entry, and the loop and branch bodies it runs, each with how
many times: a while body its known trip count), the bytes each op moves as stored (tiling padding
included; a slice reads only its slice, a dynamic-update-slice writes its update in place), and
the FLOPs of a ``dot``, a ``convolution`` or a GPU gemm, alone or inside a fusion: 2 x the output's
elements x the contracted size, from the dimension numbers (profiling.md: a fusion holds at most
one matmul). Element-wise work is not counted: T_math is the matmul units' time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from math import prod

from .parse import HloModule, _ints
from .shapes import HloArray, arrays

__all__ = ["FREE", "Op", "executed", "module_ops", "op_flops"]

#: ops that move no data of their own: bookkeeping, control flow (their bodies are listed), and the
#: second half of an async pair (the bytes are counted at its -start)
FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "partition-id", "replica-id",
        "after-all", "opt-barrier", "add-dependency", "domain", "while", "conditional", "call"}


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


def _sum_bytes(arrs) -> Fraction:
    total = 0
    for a in arrs:
        b = a.padded_bytes
        total += b.numerator if b.denominator == 1 else b
    return Fraction(total)


# -- which computations run as ops ---------------------------------------------------------------------

def executed(module: HloModule) -> tuple[dict[str, int], bool]:
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


# -- the ops ---------------------------------------------------------------------------------------------

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


def module_ops(module: HloModule) -> list[Op]:
    ops = []
    runs, _ = executed(module)
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
