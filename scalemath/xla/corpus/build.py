"""Compile the corpus again with jax (``python -m scalemath.xla.corpus [--out DIR]``).

The programs are the sharding chapter's four matmul cases (and the ReduceScatter variant of case 3,
an AllReduce over two axes, case 2 on the smaller axis) and a few reshardings (an AllToAll, an
AllGather, a CollectivePermute), on a 4 x 2 and a 2 x 4 mesh with small sizes: each module is a
few kB. Where libtpu is installed, some of them are also compiled for a TPU v5e 2x4 slice by its
compile-only client (``jax.experimental.topologies``: no TPU needed), in bf16; without libtpu the TPU
modules compiled before are kept. The stack-frame tables XLA prints (which hold the build machine's
file paths) are left out; nothing else is changed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ...files import load_json_file, write_file

__all__ = ["PROGRAMS", "TPU_PROGRAMS", "build", "compile_program", "compile_tpu", "record", "strip_paths"]

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
#: compiled for a TPU with libtpu's compile-only client (no TPU needed): name, program, pattern, mesh, sizes
TPU_TARGET = "v5e:2x4"
TPU_PROGRAMS = (
    ("tpu-case2-gather-A-x4y2", "matmul", "A[I, J_X] @ B[J, K] -> C[I, K]", M42, S1),
    ("tpu-case3-allreduce-x4y2", "matmul", "A[I, J_X] @ B[J_X, K] -> C[I, K]", M42, S1),
    ("tpu-case3-reducescatter-x4y2", "matmul", "A[I, J_X] @ B[J_X, K] -> C[I, K_X]", M42, S1),
    ("tpu-case4-gather-B-x4y2", "matmul", "A[I_X, J] @ B[J, K_X] -> C[I_X, K]", M42, S1),
    ("tpu-reshard-alltoall-x4y2", "reshard", "A[I_X, J] -> A[I, J_X]", M42, {"I": 256, "J": 512}),
)
TPU_DTYPE = "bfloat16"

_TABLES = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\n(?:.+\n)*\n?", re.MULTILINE)


def strip_paths(text: str) -> str:
    """The HLO text without the stack-frame tables (file paths of the machine that compiled it)."""
    text = _TABLES.sub("", text)
    text = re.sub(r" stack_frame_id=\d+", "", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def record(text: str, mesh) -> dict:
    """What XLA did, as the index records it: every collective and the matmul FLOPs per device."""
    from ..analysis import analyse
    from ..parse import parse_collectives

    cols = [{"kind": c.kind, "axes": list(c.axes) if c.axes is not None else None, "elements": c.elements,
             "dtype": c.dtype} for c in parse_collectives(text, mesh)]
    return {"collectives": cols, "flops": int(analyse(text)["total"]["flops"])}


def compile_program(program: str, pattern: str, mesh, sizes) -> str:
    from ..compile import compile_hlo, compile_reshard_hlo

    if program == "matmul":
        return compile_hlo(pattern, mesh, sizes, DTYPE)
    return compile_reshard_hlo(pattern, mesh, sizes, DTYPE)


def _tpu_mesh(mesh, target: str):
    import jax
    import numpy as np
    from jax.experimental import topologies
    from jax.sharding import Mesh

    topology = topologies.get_topology_desc(platform="tpu", topology_name=target)
    devices = sorted(topology.devices, key=lambda d: d.id)
    return Mesh(np.array(devices).reshape(list(mesh.values())), tuple(mesh),
                axis_types=(jax.sharding.AxisType.Auto,) * len(mesh))


def compile_tpu(program: str, pattern: str, mesh, sizes, target: str = TPU_TARGET) -> str:
    """The same programs compiled for a TPU slice by libtpu's compile-only client (no TPU needed)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from ...symbolic.notation import parse_contraction, parse_reshard
    from ..compile import _spec

    jmesh = _tpu_mesh(mesh, target)
    if program == "matmul":
        c = parse_contraction(pattern, mesh)
        arrays = (c.lhs, c.rhs, c.out)
    else:
        arrays = parse_reshard(pattern, mesh)
    shardings = [NamedSharding(jmesh, _spec(a)) for a in arrays]
    args = [jax.ShapeDtypeStruct(tuple(sizes[d] for d in a.names), jnp.dtype(TPU_DTYPE), sharding=sh)
            for a, sh in zip(arrays[:-1], shardings[:-1])]
    if program == "matmul":
        letters = {}
        for a in arrays:
            for d in a.names:
                letters.setdefault(d, "abcdefghijklmnopqrstuvwxyz"[len(letters)])
        eq = ",".join("".join(letters[d] for d in a.names) for a in arrays[:2]) + "->" + \
            "".join(letters[d] for d in arrays[2].names)
        def f(a, b):
            return jnp.einsum(eq, a, b)

        fn = jax.jit(f, out_shardings=shardings[-1])
    else:
        def move(a):
            return jax.lax.with_sharding_constraint(a, shardings[-1])

        fn = jax.jit(move, in_shardings=shardings[0], out_shardings=shardings[-1])
    return fn.lower(*args).compile().as_text()


def _libtpu_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("libtpu")
    except Exception:  # noqa: BLE001 - not installed
        return None


def _write(path: Path, text: str) -> None:
    """A corpus file, through the one safe writer: it replaces only the corpus's own kinds of file."""
    write_file(path, text.encode("utf-8"), what="HLO corpus file",
               replace=lambda p: os.path.basename(p) == "index.json" or os.fspath(p).endswith(".hlo.txt"))


def build(out: Path) -> list[dict]:
    """Compile every program into ``out`` (``NAME.hlo.txt`` and ``index.json``); the index's entries."""
    import jax

    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, program, pattern, mesh, sizes in PROGRAMS:
        text = strip_paths(compile_program(program, pattern, mesh, sizes))
        file = f"{name}.hlo.txt"
        _write(out / file, text)
        rows.append({"name": name, "program": program, "pattern": pattern, "mesh": mesh, "sizes": sizes,
                     "dtype": DTYPE, "backend": "cpu", "file": file, **record(text, mesh)})
    libtpu = _libtpu_version()
    old = out / "index.json"
    if libtpu is None and old.is_file():  # no libtpu here: keep the TPU modules compiled before, as they were
        before = load_json_file(old, "corpus index")
        libtpu = before.get("libtpu")
        rows += [r for r in before["entries"] if r.get("backend", "cpu").startswith("tpu") and (out / r["file"]).is_file()]
        print("libtpu is not installed: the TPU modules are kept as compiled before (pip install libtpu to redo them)")
    for name, program, pattern, mesh, sizes in TPU_PROGRAMS if _libtpu_version() else ():
        text = strip_paths(compile_tpu(program, pattern, mesh, sizes))
        file = f"{name}.hlo.txt"
        _write(out / file, text)
        rows.append({"name": name, "program": program, "pattern": pattern, "mesh": mesh, "sizes": sizes,
                     "dtype": TPU_DTYPE, "backend": f"tpu {TPU_TARGET}", "file": file, **record(text, mesh)})
    index = {"jax": jax.__version__, "libtpu": libtpu, "devices": 8,
             "how": "jax.jit(...).lower(...).compile().as_text() on simulated CPU devices "
                    "(scalemath.xla.compile.compile_hlo for a matmul, compile_reshard_hlo for a resharding, "
                    "with_sharding_constraint), and for a TPU v5e 2x4 slice with libtpu's compile-only client "
                    "(jax.experimental.topologies; no TPU needed; only when libtpu is installed); "
                    "stack-frame tables removed",
             "entries": rows}
    _write(out / "index.json", json.dumps(index, indent=1) + "\n")
    return rows


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m scalemath.xla.corpus",
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
