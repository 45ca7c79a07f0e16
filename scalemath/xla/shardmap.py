"""A shard_map program run by jax itself, held against the engine (optional: needs the ``xla`` extra).

:func:`run_jax` starts ``python -m scalemath.xla.shardmap_child`` with ``XLA_FLAGS`` asking for as many
simulated CPU devices as the mesh has, a time limit and the program's text on stdin; the child builds the
program with ``jax.shard_map`` and answers with the outputs, every statement's value on every device and the
compiled HLO. :func:`compare_jax` checks those values against :func:`scalemath.symbolic.shardmap_run.run` and
the HLO's collectives (read by :func:`scalemath.xla.parse.parse_collectives`: kind, mesh axes, element count)
against the engine's events, in order.

On CPU, XLA writes a ReduceScatter as an ``all-reduce`` feeding a ``dynamic-slice`` (reported as one
ReduceScatter) and an AllToAll as a tuple ``all-to-all``; both are read as the book's collectives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..symbolic.shardmap_perm import moved_axes
from ..symbolic.shardmap_run import RunResult, live_statements
from .child import jax_available, run_child
from .parse import parse_collectives

__all__ = ["JaxRun", "Comparison", "run_jax", "compare_jax", "jax_available"]


@dataclass(frozen=True)
class JaxRun:
    outputs: dict
    steps: tuple
    hlo: str
    collectives: tuple  # ObservedCollective, in HLO text order
    dtypes: dict = None  # output name -> jax's element type


@dataclass(frozen=True)
class Comparison:
    values_agree: bool
    steps_agree: tuple[bool, ...]
    collectives_agree: bool
    ours: tuple[str, ...]
    xla: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.values_agree and all(self.steps_agree) and self.collectives_agree


def run_jax(mesh: str, inputs, body, outputs, devices: int, timeout: float = 120, hint: str = "") -> JaxRun:
    """Run the program with jax on ``devices`` simulated CPU devices, in a child process (its values come back
    in an .npz file in a scratch folder, its HLO and types as JSON)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="scalemath-shardmap-") as scratch:
        npz = os.path.join(scratch, "values.npz")
        request = {"mesh": mesh, "inputs": list(inputs), "outputs": list(outputs), "npz": npz,
                   "body": body if isinstance(body, str) else "\n".join(body)}
        answer = run_child("shardmap_child", request, devices, timeout, hint=hint)
        with np.load(npz) as values:
            outs = {name: values[f"out{k}"].tolist() for k, name in enumerate(answer["outputs"])}
            steps = tuple(values[f"step{k}"] for k in range(answer["steps"]))
    axes = {a: int(n) for a, n in (part.split("=") for part in mesh.replace(" ", "").split(","))}
    return JaxRun(outs, steps, answer["hlo"], tuple(parse_collectives(answer["hlo"], axes)),
                  answer.get("output_dtypes", {}))


def _close(a, b, rtol) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=0))


_HLO_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
              "s64": 8, "u64": 8, "f64": 8}


def _label(kind, axes, elements, nbytes=None) -> str:
    size = f", {nbytes} B" if nbytes is not None else ""
    return f"{kind}_{','.join(axes) if axes is not None else '?'} ({elements} elements{size})"


def compare_jax(ours: RunResult, theirs: JaxRun) -> Comparison:
    """Values (every output and every statement on every device) and collectives, ours against jax's."""
    # float32 matmuls sum in another order in XLA: over a few hundred terms their last digits differ (the
    # chapter's collective matmul at its own sizes, 512 terms a product, differs by 7e-6 relative)
    matmuls = any(s.flops for s in ours.steps)
    rtol = 1e-2 if any(i.dtype in ("bf16", "bfloat16") for i in ours.program.inputs) else 1e-4 if matmuls else 1e-6
    values = all(_close(ours.outputs[k], v, rtol) for k, v in theirs.outputs.items())
    # bf16 is computed in float32 here; otherwise the element types must be jax's
    types = all(str(ours.outputs[k].dtype) == {"bfloat16": "float32"}.get(t, t)
                for k, t in (theirs.dtypes or {}).items())
    # jax returns each statement as [devices, ...its local shape], devices in order
    steps = tuple(_close(np.stack([np.asarray(v) for v in s.values]), t, rtol)
                  for s, t in zip(ours.steps, theirs.steps))
    # bytes are compared too, but not for bf16 programs: the CPU backend reduces bf16 in f32
    with_bytes = rtol < 1e-2
    live = live_statements(ours.program)
    kept = [e for e in ours.events if e.group > 1 and e.statement in live]
    mesh = ours.program.mesh

    def axes(e):  # XLA's pairs name only the axes a permutation moves along
        return tuple(sorted(e.axes)) if e.kind == "AllReduce" else moved_axes(e.perm, e.axes, mesh) \
            if e.perm is not None else e.axes

    mine = [_label(e.kind, axes(e), e.elements, e.bytes if with_bytes else None) for e in kept]
    xla, notes = [], []
    for c in theirs.collectives:
        axes = c.axes
        if c.kind == "AllReduce" and axes is not None:
            axes = tuple(sorted(axes))
        nbytes = c.elements * _HLO_BYTES[c.dtype] if with_bytes and c.dtype in _HLO_BYTES else None
        xla.append(_label(c.kind, axes, c.elements, nbytes))
    if any(e.statement not in live for e in ours.events):
        notes.append("collectives whose results reach no output are dead code; XLA drops them")
    if any(e.group == 1 for e in ours.events):
        notes.append("collectives over axes of size 1 move nothing; XLA drops them")
    agree = sorted(mine) == sorted(xla)
    if not agree and sorted(mine) != sorted(xla) and len(mine) == len(xla):
        notes.append("the same number of collectives, with other kinds, axes or sizes")
    differ = [s.text for s, same in zip(ours.steps, steps) if not same]
    if differ:
        notes.append(f"values differ (relative tolerance {rtol:g}) first at: {differ[0]}")
    if rtol == 1e-4:
        notes.append("float32 matmuls sum in another order in XLA: values compared to 1e-4 relative")
    if not types:
        notes.append("element types differ: " + ", ".join(f"{k} {ours.outputs[k].dtype} against jax's {t}"
                                                          for k, t in theirs.dtypes.items()))
    return Comparison(values and types, steps, agree, tuple(mine), tuple(xla), tuple(notes))
