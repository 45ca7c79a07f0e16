"""The mesh as shard_map sees it: devices numbered row-major (the first axis major, as ``jax.make_mesh`` and
``Mesh(devices.reshape(...))`` number them), the groups a collective over some axes runs in, and the block of a
global array a PartitionSpec gives each device.

>>> groups({"X": 2, "Y": 2}, ("Y",))
[[0, 1], [2, 3]]
"""

from __future__ import annotations

import itertools
from typing import Mapping

import numpy as np

from .shardmap import Spec

__all__ = ["device_coords", "groups"]


def device_coords(mesh: Mapping[str, int]) -> list[dict[str, int]]:
    """Each device's coordinate on every axis, devices numbered row-major (the first axis major)."""
    names = list(mesh)
    return [dict(zip(names, c)) for c in itertools.product(*(range(mesh[a]) for a in names))]


def _position(coord: Mapping[str, int], axes, mesh) -> int:
    """The device's index within its group over ``axes`` (the first axis major), as jax numbers it."""
    k = 0
    for a in axes:
        k = k * mesh[a] + coord[a]
    return k


def groups(mesh: Mapping[str, int], axes) -> list[list[int]]:
    """The device groups of a collective over ``axes``: each group in order of position along the axes."""
    coords = device_coords(mesh)
    out: dict[tuple, list] = {}
    for d, c in enumerate(coords):
        key = tuple(c[a] for a in mesh if a not in axes)
        out.setdefault(key, []).append(d)
    return [sorted(g, key=lambda d: _position(coords[d], axes, mesh)) for g in out.values()]


def _block(glob: np.ndarray, spec: Spec, coord, mesh) -> np.ndarray:
    idx = []
    for n, axes in zip(glob.shape, spec.dims + ((),) * (glob.ndim - len(spec.dims))):
        k = 1
        for a in axes:
            k *= mesh[a]
        size, i = n // k, _position(coord, axes, mesh)
        idx.append(slice(i * size, (i + 1) * size))
    return glob[tuple(idx)]
