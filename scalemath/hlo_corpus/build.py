"""Compile the corpus again with jax (``python -m scalemath.hlo_corpus [--out DIR] [--check]``).

The programs are the sharding chapter's four matmul cases (and the ReduceScatter variant of case 3,
an AllReduce over two axes, case 2 on the smaller axis) and a few reshardings (an AllToAll, an
AllGather, a CollectivePermute), on a 4 x 2 and a 2 x 4 mesh with small sizes: each module is a
few kB. The stack-frame tables XLA prints (which hold the build machine's file paths) are left out;
nothing else is changed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

__all__ = ["PROGRAMS", "build", "record", "strip_paths"]

M42, M24 = {"X": 4, "Y": 2}, {"X": 2, "Y": 4}
S1 = {"I": 256, "J": 512, "K": 1024}
S2 = {"I": 512, "J": 1024, "K": 256}
#: name, program, pattern, mesh, sizes
PROGRAMS = (
    ("case1-no-comms-x4y2", "matmul", "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", M42, S1),
    ("case2-gather-A-x4y2", "matmul", "A[I, J_X] @ B[J, K] -> C[I, K]", M42, S1),
    ("case2-gather-A-y-x4y2", "matmul", "A[I, J_Y] @ B[J, K] -> C[I, K]", M42, S1),
    ("case3-allreduce-x4y2", "matmul", "A[I, J_X] @ B[J_X, K] -> C[I, K]", M42, S1),
    ("case3-reducescatter-x4y2", "matmul", "A[I, J_X] @ B[J_X, K] -> C[I, K_X]", M42, S1),
    ("case3-allreduce-xy-x4y2", "matmul", "A[I, J_XY] @ B[J_XY, K] -> C[I, K]", M42, S1),
    ("case4-gather-B-x4y2", "matmul", "A[I_X, J] @ B[J, K_X] -> C[I_X, K]", M42, S1),
    ("case4-gather-A-x4y2", "matmul", "A[I_X, J] @ B[J, K_X] -> C[I, K_X]", M42, S1),
    ("case2-gather-A-x2y4", "matmul", "A[I, J_Y] @ B[J, K] -> C[I, K]", M24, S2),
    ("case3-allreduce-x2y4", "matmul", "A[I, J_X] @ B[J_X, K] -> C[I, K]", M24, S2),
    ("case3-reducescatter-x2y4", "matmul", "A[I, J_Y] @ B[J_Y, K] -> C[I_Y, K]", M24, S2),
    ("case4-gather-B-x2y4", "matmul", "A[I_Y, J] @ B[J, K_Y] -> C[I_Y, K]", M24, S2),
    ("reshard-alltoall-x4y2", "reshard", "A[I_X, J] -> A[I, J_X]", M42, {"I": 256, "J": 512}),
    ("reshard-allgather-x4y2", "reshard", "A[I_X, J] -> A[I, J]", M42, {"I": 256, "J": 512}),
    ("reshard-permute-x2y2", "reshard", "A[I_Y, J] -> A[I_X, J]", {"X": 2, "Y": 2}, {"I": 256, "J": 512}),
    ("reshard-alltoall-x2y4", "reshard", "A[I, J_Y] -> A[I_Y, J]", M24, {"I": 512, "J": 256}),
)
DTYPE = "float32"

_TABLES = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\n(?:.+\n)*\n?", re.MULTILINE)


def strip_paths(text: str) -> str:
    """The HLO text without the stack-frame tables (file paths of the machine that compiled it)."""
    text = _TABLES.sub("", text)
    text = re.sub(r" stack_frame_id=\d+", "", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def record(text: str, mesh) -> dict:
    """What XLA did, as the index records it: every collective and the matmul FLOPs per device."""
    from ..hlo import analyse
    from ..hlo_parse import parse_collectives

    cols = [{"kind": c.kind, "axes": list(c.axes) if c.axes is not None else None, "elements": c.elements,
             "dtype": c.dtype} for c in parse_collectives(text, mesh)]
    return {"collectives": cols, "flops": int(analyse(text)["total"]["flops"])}


def compile_program(program: str, pattern: str, mesh, sizes) -> str:
    from ..xla import compile_hlo, compile_reshard_hlo

    if program == "matmul":
        return compile_hlo(pattern, mesh, sizes, DTYPE)
    return compile_reshard_hlo(pattern, mesh, sizes, DTYPE)


def build(out: Path) -> list[dict]:
    """Compile every program into ``out`` (``NAME.hlo.txt`` and ``index.json``); the index's entries."""
    import jax

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, program, pattern, mesh, sizes in PROGRAMS:
        text = strip_paths(compile_program(program, pattern, mesh, sizes))
        file = f"{name}.hlo.txt"
        (out / file).write_text(text, encoding="utf-8")
        rows.append({"name": name, "program": program, "pattern": pattern, "mesh": mesh, "sizes": sizes,
                     "dtype": DTYPE, "file": file, **record(text, mesh)})
    index = {"jax": jax.__version__, "backend": "cpu", "devices": 8,
             "how": "jax.jit(...).lower(...).compile().as_text() on simulated CPU devices "
                    "(scalemath.xla.compile_hlo for a matmul, compile_reshard_hlo for a resharding, "
                    "with_sharding_constraint); stack-frame tables removed",
             "entries": rows}
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return rows


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m scalemath.hlo_corpus",
                                     description="compile the HLO corpus again with jax (needs the xla extra)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent,
                        help="folder to write to (default: the package's own corpus)")
    args = parser.parse_args(argv)
    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
    try:
        import jax  # noqa: F401
    except ImportError:
        parser.exit(1, "error: jax is not installed; pip install -e '.[xla]' to compile the corpus\n")
    rows = build(args.out)
    for r in rows:
        cols = ", ".join(f"{c['kind']}_{''.join(c['axes'] or '?')} ({c['elements']} elements)"
                         for c in r["collectives"]) or "no collectives"
        print(f"{r['name']}: {r['pattern']}  {cols}; {r['flops']} FLOPs")
    return 0
