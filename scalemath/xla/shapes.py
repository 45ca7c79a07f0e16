"""HLO array shapes with their layouts: dtype sizes, tiling padding and memory spaces.

An HLO shape is ``dtype[d0,d1,...]{minor_to_major:T(tile)(subtile)S(space)}`` (profiling.md,
"How to read an XLA op"). The tiles pad the array: each tiled dimension rounds up to a multiple
of its tile, so ``f32[3,5]{1,0:T(2,2)}`` is stored as ``[4,6]``, 24 elements for 15, 1.6x.
``S(1)`` puts the array in VMEM; no ``S`` or ``S(0)`` is HBM. Sizes are exact (``Fraction``
bytes: a 4-bit element is half a byte).

>>> a = arrays("f32[3,5]{1,0:T(2,2)}")[0]
>>> a.elements, a.padded_elements, a.padded_bytes / a.bytes
(15, 24, Fraction(8, 5))
>>> arrays("bf16[128,8192]{1,0:T(8,128)(2,1)S(1)}")[0].memory_space
1
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from math import prod

__all__ = ["MEMORY_SPACES", "HloArray", "arrays", "dtype_bits"]

#: Bits per element of HLO's primitive types (f8*, f6* and f4* families by prefix).
DTYPE_BITS = {"pred": 8, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16,
              "f16": 16, "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64,
              "c64": 64, "c128": 128, "token": 0, "opaque": 0}

#: Memory spaces by their ``S(n)`` number on a TPU (profiling.md): 0 is HBM, 1 is VMEM.
MEMORY_SPACES = {0: "hbm", 1: "vmem"}

_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[((?:\s*(?:<=)?\d+\s*(?:,\s*(?:<=)?\d+\s*)*)?)\](\{[^{}]*\})?")


def dtype_bits(dtype: str) -> int:
    """Bits of one element: ``dtype_bits("bf16") == 16``; unknown types raise ValueError."""
    if dtype in DTYPE_BITS:
        return DTYPE_BITS[dtype]
    for prefix, bits in (("f8", 8), ("f6", 6), ("f4", 4)):
        if dtype.startswith(prefix):
            return bits
    raise ValueError(f"unknown HLO element type {dtype!r}")


@dataclass(frozen=True)
class HloArray:
    """One array of an HLO shape: its dtype, dimensions and layout."""

    dtype: str
    dims: tuple[int, ...]
    minor_to_major: tuple[int, ...] | None = None
    tiles: tuple[tuple[int | None, ...], ...] = ()  # None for a '*' tile dimension
    memory_space: int = 0
    element_bits: int | None = None  # E(n) in the layout overrides the dtype's size

    @property
    def elements(self) -> int:
        return prod(self.dims)

    @property
    def bits(self) -> int:
        return self.element_bits if self.element_bits is not None else dtype_bits(self.dtype)

    @cached_property
    def padded_elements(self) -> int:
        """Elements as stored: every tile of the layout rounds the dimensions it covers up to its size."""
        if not self.tiles:
            return self.elements
        m2m = self.minor_to_major
        order = list(reversed(m2m)) if m2m and sorted(m2m) == list(range(len(self.dims))) else \
            list(range(len(self.dims)))
        shape = [self.dims[i] for i in order]  # major to minor, as laid out in memory
        for tile in self.tiles:
            k = len(tile)
            if k > len(shape):
                shape = [1] * (k - len(shape)) + shape
            head, tail = shape[:-k], shape[-k:]
            outer = [1 if t is None else -(-d // t) for d, t in zip(tail, tile)]
            inner = [d if t is None else t for d, t in zip(tail, tile)]
            shape = head + outer + inner
        return prod(shape)

    @property
    def bytes(self) -> Fraction:
        return Fraction(self.elements * self.bits, 8)

    @cached_property
    def padded_bytes(self) -> Fraction:
        return Fraction(self.padded_elements * self.bits, 8)

    @property
    def space(self) -> str:
        return MEMORY_SPACES.get(self.memory_space, f"S({self.memory_space})")

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.dims))}]"


def _layout(text: str | None) -> tuple[tuple[int, ...] | None, tuple, int, int | None]:
    if not text:
        return None, (), 0, None
    body = text[1:-1]
    m2m_text, _, rest = body.partition(":")
    m2m = tuple(int(x) for x in re.findall(r"\d+", m2m_text)) or None
    tiles = ()
    tm = re.search(r"T((?:\([\d,\s*]*\))+)", rest)
    if tm:
        tiles = tuple(tuple(None if x.strip() == "*" else int(x) for x in group.split(",") if x.strip())
                      for group in re.findall(r"\(([^)]*)\)", tm.group(1)))
        tiles = tuple(t for t in tiles if t)
    sm = re.search(r"S\((\d+)\)", rest)
    em = re.search(r"E\((\d+)\)", rest)
    return m2m, tiles, int(sm.group(1)) if sm else 0, int(em.group(1)) if em else None


def arrays(shape_text: str) -> list[HloArray]:
    """Every array in a shape (a tuple shape has several), with its layout.

    >>> [str(a) for a in arrays("(f32[8]{0}, bf16[2,3]{1,0}, u32[])")]
    ['f32[8]', 'bf16[2,3]', 'u32[]']
    """
    return list(_arrays(shape_text))


@lru_cache(maxsize=4096)  # a module repeats a few shapes many times
def _arrays(shape_text: str) -> tuple[HloArray, ...]:
    out = []
    for m in _ARRAY.finditer(shape_text):
        if m.group(1) == "mesh":
            continue
        dims = tuple(int(x.replace("<=", "")) for x in m.group(2).replace(" ", "").split(",") if x)
        m2m, tiles, space, bits = _layout(m.group(3))
        out.append(HloArray(m.group(1), dims, m2m, tiles, space, bits))
    return tuple(out)
