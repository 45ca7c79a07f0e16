"""What a student reads of a corpus module: its relevant lines, without what would give the answer away.

The entry computation and the fused computations it calls that hold the matmul (a ``dot``) or a
``dynamic-slice`` (the CPU's ReduceScatter keeps its block with one), with the parameters' ``sharding=``
annotations, the ``metadata`` that names the jax operation, ``backend_config``, ``channel_id`` and
``use_global_device_ids`` left out, and the replica groups written out as device lists (the mesh spelling
names XLA's own axes; device lists are what older XLA prints and what the book shows). Nothing else changes:
``scalemath hlo`` reads the listing as it reads the whole module.

>>> text = listing("reshard-allgather-x4y2")
>>> print(text.splitlines()[-2])
  ROOT %all-gather = f32[256,512]{1,0} all-gather(%param), replica_groups={{0,2,4,6},{1,3,5,7}}, dimensions={0}
"""

from __future__ import annotations

import functools
import re

from . import entry

__all__ = ["listing"]

_DROP = re.compile(r",\s*(?:metadata|sharding|backend_config|frontend_attributes)=")


def _drop_attr(line: str) -> str:
    """``line`` without its metadata, sharding, backend_config and frontend_attributes (each a {...})."""
    while True:
        m = _DROP.search(line)
        if not m:
            return line
        i = m.end()
        if i < len(line) and line[i] == "{":
            depth, j = 0, i
            while j < len(line):
                depth += {"{": 1, "}": -1}.get(line[j], 0)
                j += 1
                if depth == 0:
                    break
        else:
            j = line.find(",", i)
            j = len(line) if j < 0 else j
        line = line[:m.start()] + line[j:]


def _explicit_groups(line: str, devices: int) -> str:
    """A ``replica_groups=`` in the mesh or iota spelling written out as device lists ``{{0,2},{1,3}}``."""
    from ..groups import replica_groups
    from ..parse import _attr

    spelled = _attr(line, "replica_groups")
    if not spelled or spelled.startswith("{"):
        return line
    groups = replica_groups(spelled, devices)
    written = "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
    return line.replace(spelled, written)


@functools.cache
def listing(name: str) -> str:
    """The lines of corpus module ``name`` a student reads: the entry computation and the fused computations
    it calls that hold the matmul or a dynamic-slice, without annotations that name the sharding or the
    jax operation, replica groups as device lists."""
    e = entry(name)
    devices = 1
    for n in e.mesh.values():
        devices *= n
    blocks, current = [], None
    for line in e.text.splitlines():
        if re.match(r"^(ENTRY\s+)?%[\w.\-]+ \(.*\{$", line):
            current = [line]
            continue
        if current is not None:
            if line.strip() == "}":
                current.append("}")
                blocks.append(current)
                current = None
            else:
                current.append(line)
    entry_block = next(b for b in blocks if b[0].startswith("ENTRY"))
    called = set(re.findall(r"calls=(%[\w.\-]+)", "\n".join(entry_block)))
    keep = [b for b in blocks if b is not entry_block and b[0].split(" ")[0] in called
            and any(re.search(r"\b(dot|convolution|dynamic-slice)\(", ln) for ln in b)]
    lines = []
    for b in keep + [entry_block]:
        lines += [_explicit_groups(_drop_attr(ln), devices).replace(", use_global_device_ids=true", "")
                  for ln in b]
    return "\n".join(re.sub(r", channel_id=\d+", "", ln) for ln in lines)
