"""The hardware catalog: frozen chip records loaded lazily from a TOML file.

Numbers are integers in SI base units named by the key's suffix
(``_flops_per_s``, ``_bytes``, ``_bytes_per_s``, ``_hz``, ``_ns``); see the header
of ``hardware.toml`` for every key. A malformed file raises :class:`CatalogError`
naming the file, the chip and the key.

>>> chip = get_chip("tpu-v5e")
>>> chip.flops("bf16"), chip.hbm_bytes_per_s
(197000000000000, 820000000000)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from .tomlcatalog import MAX_DIGITS, read_entries, shown, too_long
from .errors import BadValueError, CatalogError, UnknownNameError

__all__ = [
    "DTYPE_BYTES",
    "LEVELS",
    "Chip",
    "Catalog",
    "load_catalog",
    "default_catalog",
    "get_chip",
    "dtype_bytes",
]

#: Bytes per element of each dtype the engine knows (int4/fp4 are half a byte).
DTYPE_BYTES: Mapping[str, Fraction] = MappingProxyType(
    {
        "fp32": Fraction(4),
        "bf16": Fraction(2),
        "fp16": Fraction(2),
        "fp8": Fraction(1),
        "int8": Fraction(1),
        "int4": Fraction(1, 2),
        "fp4": Fraction(1, 2),
    }
)

#: Memory or network levels a bandwidth can be taken from, with what each means.
LEVELS: Mapping[str, str] = MappingProxyType(
    {
        "hbm": "HBM <-> compute cores, per chip",
        "vmem": "VMEM <-> MXU, per chip (TPU on-chip scratchpad)",
        "ici": "ICI, bidirectional per torus axis (2 x one-way link), per chip",
        "ici-link": "ICI, one link in one direction",
        "pcie": "PCIe host link, each way, per chip",
        "dcn": "data-centre network egress per chip (TPU DCN, GPU scale-out NIC)",
        "nvlink": "NVLink egress per GPU, one direction",
    }
)


def dtype_bytes(dtype: str) -> Fraction:
    """Bytes per element of ``dtype``.

    >>> dtype_bytes("int4")
    Fraction(1, 2)
    """
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise UnknownNameError("dtype", dtype, DTYPE_BYTES) from None


def _shape(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or len(value) > 8 or not all(_is_pos_int(v) for v in value):
        raise TypeError(f"a list of 1 to 8 positive integers of at most {MAX_DIGITS} digits, e.g. [16, 16]")
    return tuple(value)


def _is_pos_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0 and not too_long(value)


def _pos_int(value: Any) -> int:
    if not _is_pos_int(value):
        raise TypeError(f"a positive integer of at most {MAX_DIGITS} digits" if too_long(value)
                        else "a positive integer")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError("a non-empty string")
    if len(value) > 2000 or any(not c.isprintable() for c in value):
        raise TypeError("one line of at most 2000 printable characters")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _choice(*options: str):
    def check(value: Any) -> str:
        if value not in options:
            raise TypeError("one of " + ", ".join(options))
        return value

    return check


def _flops_table(value: Any) -> Mapping[str, int]:
    if not isinstance(value, dict) or not value:
        raise TypeError("a table of dtype = FLOP/s, e.g. { bf16 = 197000000000000 }")
    for dtype, rate in value.items():
        if dtype not in DTYPE_BYTES:
            raise TypeError(f"a known dtype ({', '.join(DTYPE_BYTES)}), not {shown(dtype)}")
        if not _is_pos_int(rate):
            raise TypeError(f"a positive integer of at most {MAX_DIGITS} digits for {dtype}, not {shown(rate)}")
    return MappingProxyType(dict(value))


@dataclass(frozen=True)
class Chip:
    """One accelerator's numbers; ``None`` where the catalog has no value."""

    key: str
    name: str
    family: str
    source: str
    flops_per_s: Mapping[str, int] = field(hash=False)
    hbm_bytes: int
    hbm_bytes_per_s: int
    # on-chip memory
    vmem_bytes: int | None = None
    vmem_bytes_per_s: int | None = None
    smem_bytes: int | None = None
    vreg_bytes: int | None = None
    l2_bytes: int | None = None
    register_bytes_per_sm: int | None = None
    tmem_bytes_per_sm: int | None = None
    # compute units
    cores_per_chip: int | None = None
    megacore: bool | None = None
    mxus_per_core: int | None = None
    mxu_side: int | None = None
    clock_hz: int | None = None
    sms: int | None = None
    tensor_cores: int | None = None
    cuda_cores: int | None = None
    boost_clock_hz: int | None = None
    # TPU interconnect
    ici_link_bytes_per_s: int | None = None
    ici_links: int | None = None
    torus_dims: int | None = None
    pod_shape: tuple[int, ...] | None = None
    host_shape: tuple[int, ...] | None = None
    wraparound: str | None = None
    hop_latency_ns: int | None = None
    dcn_bytes_per_s: int | None = None
    # GPU interconnect
    nvlink_links: int | None = None
    nvlink_link_bytes_per_s: int | None = None
    nvlink_bytes_per_s: int | None = None
    nvlink_domain: int | None = None
    nvswitches: int | None = None
    nic_bytes_per_s: int | None = None
    # host and price
    pcie_bytes_per_s: int | None = None
    price_cents_per_hour: int | None = None
    notes: str = field(default="", compare=False)

    # -- derived views -------------------------------------------------------------

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(sorted(self.flops_per_s))

    def flops(self, dtype: str) -> int:
        """Peak dense FLOP/s (OP/s for integer dtypes) in ``dtype``."""
        if dtype not in DTYPE_BYTES:
            raise UnknownNameError("dtype", dtype, DTYPE_BYTES)
        try:
            return self.flops_per_s[dtype]
        except KeyError:
            raise BadValueError(
                f"{self.key} has no {dtype} rate in the catalog; it has {', '.join(self.dtypes)} "
                f"(pick one with --dtype, or give the rate with --set C=...)"
            ) from None

    @property
    def pod_chips(self) -> int | None:
        return _product(self.pod_shape)

    @property
    def host_chips(self) -> int | None:
        return _product(self.host_shape)

    @property
    def hop_latency_s(self) -> Fraction | None:
        return None if self.hop_latency_ns is None else Fraction(self.hop_latency_ns, 10**9)

    def bandwidth(self, level: str) -> int:
        """Bytes/s at a memory or network ``level`` (see :data:`LEVELS`)."""
        if level not in LEVELS:
            raise UnknownNameError("level", level, LEVELS)
        value = {
            "hbm": self.hbm_bytes_per_s,
            "vmem": self.vmem_bytes_per_s,
            "ici": None if self.ici_link_bytes_per_s is None else 2 * self.ici_link_bytes_per_s,
            "ici-link": self.ici_link_bytes_per_s,
            "pcie": self.pcie_bytes_per_s,
            "dcn": self.dcn_bytes_per_s if self.family == "tpu" else self.nic_bytes_per_s,
            "nvlink": self.nvlink_bytes_per_s,
        }[level]
        if value is None:
            raise BadValueError(
                f"{self.key} has no {level} bandwidth in the catalog (give the bandwidth with --set, or pick "
                f"another --level{'; for GPU networks use the gpu.* quantities' if self.family == 'gpu' else ''})"
            )
        return value

    def wraps(self, shape: tuple[int, ...]) -> tuple[bool, ...]:
        """Which axes of a slice of this chip have wraparound links.

        Cube rule (v4p, v5p): a slice built of whole 4x4x4 cubes wraps on every
        axis; smaller slices wrap on none. Size-16 rule (v5e, v6e): an axis wraps
        only when it spans the full 16 chips of the pod's side.

        >>> get_chip("tpu-v5e").wraps((8, 16))
        (False, True)
        >>> get_chip("tpu-v5p").wraps((4, 4, 8))
        (True, True, True)
        """
        if self.wraparound == "size16":
            return tuple(n == 16 for n in shape)
        if self.wraparound == "cube":
            whole_cubes = len(shape) == 3 and all(n % 4 == 0 for n in shape)
            return tuple(whole_cubes for _ in shape)
        raise BadValueError(f"the catalog gives no wraparound rule for {self.key}")


def _product(shape: tuple[int, ...] | None) -> int | None:
    if shape is None:
        return None
    out = 1
    for n in shape:
        out *= n
    return out


_CHECKS = {
    "name": _text,
    "family": _choice("tpu", "gpu"),
    "source": _text,
    "notes": _text,
    "flops_per_s": _flops_table,
    "megacore": _flag,
    "pod_shape": _shape,
    "host_shape": _shape,
    "wraparound": _choice("cube", "size16", "unknown"),
}
_REQUIRED = ("name", "family", "source", "flops_per_s", "hbm_bytes", "hbm_bytes_per_s")
_FIELDS = {f.name for f in fields(Chip)} - {"key"}


def _chip_from_table(path: str, key: str, table: Any) -> Chip:
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: chip {key!r} must be a table ([chips.{key}])")
    missing = [k for k in _REQUIRED if k not in table]
    if missing:
        raise CatalogError(f"{path}: chip {key!r} lacks required key(s) {', '.join(missing)}")
    values = {}
    for name, raw in table.items():
        if name not in _FIELDS:
            raise CatalogError(
                f"{path}: chip {key!r} has unknown key {shown(name)}; known keys: {', '.join(sorted(_FIELDS))}"
            )
        try:
            values[name] = _CHECKS.get(name, _pos_int)(raw)
        except TypeError as exc:
            raise CatalogError(f"{path}: chip {key!r}, key {name!r} = {shown(raw)} must be {exc}") from None
    return Chip(key=key, **values)


@dataclass(frozen=True)
class Catalog:
    """A set of chips by key, with the file it came from."""

    path: str
    chips: Mapping[str, Chip]

    def __getitem__(self, key: str) -> Chip:
        try:
            return self.chips[key.lower()]
        except KeyError:
            raise UnknownNameError(
                "chip", key, self.chips, hint="'scalemath hardware list' shows them"
            ) from None

    def __iter__(self):
        return iter(self.chips.values())

    def __len__(self) -> int:
        return len(self.chips)


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load a catalog file (the packaged ``hardware.toml`` when ``path`` is None)."""
    label, chips = read_entries(path, "hardware.toml", "chips", "hardware", _chip_from_table)
    return Catalog(label, chips)


@functools.cache
def default_catalog() -> Catalog:
    """The packaged catalog, loaded once on first use."""
    return load_catalog()


def get_chip(name: str, catalog: Catalog | None = None) -> Chip:
    """A chip by its lower-case key (``tpu-v5e``, ``h100``, ...)."""
    return (catalog or default_catalog())[name]
