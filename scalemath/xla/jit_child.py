"""The child process that compiles ``shard``'s PATTERN with ``jax.jit`` (``python -m scalemath.xla.jit_child``).

It reads a JSON request on stdin (the pattern as the user typed it, the mesh, the dimension sizes) and writes
XLA's compiled per-device HLO on stdout. A contraction ``A[...] @ B[...] -> C[...]`` becomes ``jax.jit`` of an
einsum with the inputs' and the output's ``NamedSharding``\\ s; a reshard ``A[...] -> A[...]`` becomes a jitted
``jax.lax.with_sharding_constraint`` to the second layout. Nothing is allocated: the inputs are
``jax.ShapeDtypeStruct``\\ s. The parent (:mod:`scalemath.xla.jit_check`) sets ``XLA_FLAGS`` for the devices.
"""

from __future__ import annotations

import json
import sys

__all__ = ["main"]


def main() -> None:
    from .compile import compile_hlo, compile_reshard_hlo

    request = json.loads(sys.stdin.read())
    mesh = {str(k): int(v) for k, v in request["mesh"].items()}
    sizes = {str(k): int(v) for k, v in request["sizes"].items()}
    if request["kind"] == "reshard":
        hlo = compile_reshard_hlo(request["pattern"], mesh, sizes, "float32", "constraint")
    else:
        hlo = compile_hlo(request["pattern"], mesh, sizes, "float32")
    sys.stdout.write(json.dumps({"hlo": hlo}))


if __name__ == "__main__":
    main()
