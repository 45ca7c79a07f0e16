"""A small corpus of real HLO modules that XLA compiled for sharded matmuls and reshardings.

Each module is the per-device HLO text of ``jax.jit(...).lower(...).compile().as_text()`` on simulated
CPU devices (``python -m scalemath.xla.corpus`` compiles them again; that needs the ``xla`` extra). The
index, ``index.json``, says how each was compiled: the program (a contraction in the book's notation or
one array's resharding), the mesh, the sizes, the dtype and the jax version, and records what XLA did
(every collective's kind, mesh axes and element count, and the matmul FLOPs per device) so a later
compile can be held against it. Reading the corpus needs no jax: problem sets are generated from it.

>>> e = entry("case2-gather-A-x4y2")
>>> e.program, e.pattern, e.mesh
('matmul', 'A[I, J_X] @ B[J, K] -> C[I, K]', {'X': 4, 'Y': 2})
>>> [c["kind"] for c in e.collectives]
['AllGather']
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Mapping

__all__ = ["CorpusEntry", "entries", "entry", "INDEX"]

INDEX = "index.json"


@dataclass(frozen=True)
class CorpusEntry:
    """One compiled module and how it was made."""

    name: str
    program: str  # "matmul" (a contraction) or "reshard" (one array moved to another layout)
    pattern: str  # in the book's notation: "A[I, J_X] @ B[J, K] -> C[I, K]" or "A[I_X, J] -> A[I, J_X]"
    mesh: Mapping[str, int]
    sizes: Mapping[str, int]
    dtype: str
    file: str
    jax: str
    collectives: tuple[Mapping, ...]  # kind, axes, elements, dtype: what XLA did, as recorded
    flops: int  # matmul FLOPs per device
    backend: str = "cpu"  # "cpu" (simulated devices) or "tpu v5e:2x4" (libtpu's compile-only client)

    @property
    def text(self) -> str:
        """The module's HLO text."""
        return _read(self.file)


@functools.cache
def _read(file: str) -> str:
    return resources.files(__name__).joinpath(file).read_text(encoding="utf-8")


@functools.cache
def _index() -> tuple[CorpusEntry, ...]:
    data = json.loads(_read(INDEX))
    return tuple(CorpusEntry(e["name"], e["program"], e["pattern"], dict(e["mesh"]), dict(e["sizes"]), e["dtype"],
                             e["file"], data["jax"], tuple(e["collectives"]), int(e["flops"]), e.get("backend", "cpu"))
                 for e in data["entries"])


def entries() -> tuple[CorpusEntry, ...]:
    """Every module of the corpus, in the index's order."""
    return _index()


def entry(name: str) -> CorpusEntry:
    """The module called ``name``; LookupError naming the known ones otherwise."""
    for e in _index():
        if e.name == name:
            return e
    raise LookupError(f"no HLO corpus entry {name!r}; known: {', '.join(e.name for e in _index())}")
