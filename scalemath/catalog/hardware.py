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

from .reader import KEY_PATTERN, MAX_DIGITS, entries, read_document, shown, too_long
from ..errors import BadValueError, CatalogError, UnknownNameError

__all__ = [
    "DTYPE_BYTES",
    "LEVELS",
    "Chip",
    "Switch",
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


#: The largest figure a catalog integer may hold, by the unit its key names: far beyond any chip (the packaged
#: catalog's largest are 9e15 FLOP/s, 1.9e11 bytes, 1.8e13 bytes/s, 2e9 Hz, 8e3 ns, a 9216-chip pod), and small
#: enough that what the searches form from them (a figure times chips, layers, batches) stays within 64-bit
#: integers. A larger figure is refused when the file is read.
MAX_FLOPS, MAX_BYTES, MAX_BYTES_PER_S, MAX_HZ, MAX_NS = 10**18, 10**15, 10**16, 10**12, 10**12
MAX_CENTS_PER_HOUR, MAX_COUNT, MAX_POD_CHIPS = 10**10, 10**9, 10**9


def _limit(key: str) -> tuple[int, str]:
    """The largest value of the integer ``key`` and its unit.

    >>> _limit("hbm_bytes_per_s"), _limit("tmem_bytes_per_sm"), _limit("sms")
    ((10000000000000000, 'bytes/s'), (1000000000000000, 'bytes'), (1000000000, ''))
    """
    if key.endswith("_bytes_per_s"):
        return MAX_BYTES_PER_S, "bytes/s"
    for part, limit, unit in (("_bytes", MAX_BYTES, "bytes"), ("_hz", MAX_HZ, "Hz"), ("_ns", MAX_NS, "ns"),
                              ("_cents_per_hour", MAX_CENTS_PER_HOUR, "cents per hour")):
        if part in key:
            return limit, unit
    return MAX_COUNT, ""


def _power_of_ten(value: int) -> str:
    return f"10^{len(str(value)) - 1}" if str(value).strip("0") == "1" else str(value)


def _upto(limit: int, unit: str = ""):
    """A check: a whole number from 1 to ``limit`` (``unit`` named in the message)."""
    def check(value: Any) -> int:
        if not _is_pos_int(value) or value > limit:
            raise TypeError(f"a whole number from 1 to {_power_of_ten(limit)}{' ' + unit if unit else ''}")
        return value

    return check


def _shape(value: Any) -> tuple[int, ...]:
    if (not isinstance(value, list) or not value or len(value) > 8 or not all(_is_pos_int(v) for v in value)
            or _product(tuple(value)) > MAX_POD_CHIPS):
        raise TypeError(f"a list of 1 to 8 positive integers whose product is at most {_power_of_ten(MAX_POD_CHIPS)}, "
                        "e.g. [16, 16]")
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
        if not _is_pos_int(rate) or rate > MAX_FLOPS:
            raise TypeError(f"a whole number from 1 to {_power_of_ten(MAX_FLOPS)} FLOP/s for {dtype}, not {shown(rate)}")
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
    l2_bytes_per_s: int | None = None
    # inside an SM (GPU) or a TensorCore's vector unit (TPU)
    subpartitions_per_sm: int | None = None
    cuda_cores_per_subpartition: int | None = None
    registers_per_subpartition: int | None = None
    max_registers_per_thread: int | None = None
    max_warps_per_sm: int | None = None
    tensor_core_flops_per_cycle: int | None = None
    vpu_sublanes: int | None = None
    vpu_lanes: int | None = None
    vpu_alus_per_lane: int | None = None
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
    nvlink_collective_latency_ns: int | None = None
    nvswitches: int | None = None
    nic_bytes_per_s: int | None = None
    nvlink_switch: str | None = None
    scaleout_switch: str | None = None
    su_nodes: int | None = None
    rack_chips: int | None = None
    # host and price
    pcie_bytes_per_s: int | None = None
    price_cents_per_hour: int | None = None
    spec_table: bool = True
    notes: str = field(default="", compare=False)

    # -- derived views -------------------------------------------------------------

    def require(self, name: str):
        """The catalog value ``name``; a :class:`BadValueError` naming the chip and the field when it is missing.

        >>> get_chip("b200").require("clock_hz")
        Traceback (most recent call last):
        ...
        scalemath.errors.BadValueError: b200 has no clock_hz in the catalog; give it with --set
        """
        value = getattr(self, name)
        if value is None:
            raise BadValueError(f"{self.key} has no {name} in the catalog; give it with --set")
        return value

    @property
    def node_egress_bytes_per_s(self) -> int | None:
        """Scale-out egress of one NVLink node: a NIC per GPU times the GPUs of the domain."""
        if self.nic_bytes_per_s is None or self.nvlink_domain is None:
            return None
        return self.nic_bytes_per_s * self.nvlink_domain

    @property
    def ici_egress_bytes_per_s(self) -> int | None:
        """ICI egress of one TPU over all its links, one direction."""
        if self.ici_link_bytes_per_s is None or self.ici_links is None:
            return None
        return self.ici_link_bytes_per_s * self.ici_links

    def derived(self) -> dict[str, int]:
        """Totals that follow from the catalog's own fields (for ``hardware show``)."""
        out = {
            "pod_chips": self.pod_chips,
            "host_chips": self.host_chips,
            "pod_hbm_bytes": None if self.pod_chips is None else self.pod_chips * self.hbm_bytes,
            "pod_hbm_bytes_per_s": None if self.pod_chips is None else self.pod_chips * self.hbm_bytes_per_s,
            "ici_axis_bytes_per_s": None if self.ici_link_bytes_per_s is None else 2 * self.ici_link_bytes_per_s,
            "ici_egress_bytes_per_s": self.ici_egress_bytes_per_s,
            "nvlink_both_directions_bytes_per_s": None if self.nvlink_bytes_per_s is None
            else 2 * self.nvlink_bytes_per_s,
            "node_nvlink_bytes_per_s": None if self.nvlink_bytes_per_s is None or self.nvlink_domain is None
            else self.nvlink_bytes_per_s * self.nvlink_domain,
            "node_egress_bytes_per_s": self.node_egress_bytes_per_s,
            "su_chips": None if self.su_nodes is None or self.nvlink_domain is None
            else self.su_nodes * self.nvlink_domain,
            "cuda_cores_per_sm": None if self.sms is None or self.cuda_cores is None else self.cuda_cores // self.sms,
            "tensor_cores_per_sm": None if self.sms is None or self.tensor_cores is None
            else self.tensor_cores // self.sms,
            "smem_bytes_per_chip": None if self.sms is None or self.smem_bytes is None
            else self.sms * self.smem_bytes,
            "register_bytes_per_chip": None if self.sms is None or self.register_bytes_per_sm is None
            else self.sms * self.register_bytes_per_sm,
        }
        return {k: v for k, v in out.items() if v is not None}

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

    def slice_fits(self, shape: tuple[int, ...]) -> bool:
        """Whether this TPU's pod can form a slice of ``shape`` (True when the catalog gives no pod).

        A 2-D pod is one fixed torus: the slice fits inside it, its axes in some order. A 3-D pod (v4p, v5p,
        TPU7x) joins 4x4x4 cubes through optical switches, so its slices are not sub-boxes of one shape: a
        slice has at most 3 axes, no more chips than the pod and no axis longer than the pod's longest.

        >>> v5e, v5p = get_chip("tpu-v5e"), get_chip("tpu-v5p")
        >>> v5e.slice_fits((16, 8)), v5e.slice_fits((32, 8)), v5e.slice_fits((16, 17)), v5e.slice_fits((4, 4, 4))
        (True, False, False, False)
        >>> v5p.slice_fits((8, 8, 8)), v5p.slice_fits((4, 4, 4, 4)), v5p.slice_fits((1, 1, 29))
        (True, False, False)
        """
        pod = self.pod_shape
        if pod is None:
            return True
        if len(shape) > len(pod) or _product(shape) > _product(pod):
            return False
        if len(pod) == 3:
            return max(shape) <= max(pod)
        padded = sorted(shape + (1,) * (len(pod) - len(shape)), reverse=True)
        return all(a <= b for a, b in zip(padded, sorted(pod, reverse=True)))

    @property
    def host_chips(self) -> int | None:
        return _product(self.host_shape)

    @property
    def hop_latency_s(self) -> Fraction | None:
        return None if self.hop_latency_ns is None else Fraction(self.hop_latency_ns, 10**9)

    @property
    def nvlink_collective_latency_s(self) -> Fraction | None:
        """Least time of one collective inside the NVLink domain (a GPU's latency floor), in seconds."""
        if self.nvlink_collective_latency_ns is None:
            return None
        return Fraction(self.nvlink_collective_latency_ns, 10**9)

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


@dataclass(frozen=True)
class Switch:
    """A network switch: an NVSwitch inside a node, or an InfiniBand / Ethernet switch above it."""

    key: str
    name: str
    kind: str
    source: str
    ports: int
    port_bytes_per_s: int
    notes: str = field(default="", compare=False)

    @property
    def capacity_bytes_per_s(self) -> int:
        """Every port at once, one direction."""
        return self.ports * self.port_bytes_per_s


_SWITCH_CHECKS = {"name": _text, "kind": _choice("nvswitch", "infiniband", "ethernet"), "source": _text,
                  "notes": _text, "ports": _upto(*_limit("ports")),
                  "port_bytes_per_s": _upto(*_limit("port_bytes_per_s"))}
_SWITCH_REQUIRED = ("name", "kind", "source", "ports", "port_bytes_per_s")


def _record(path: str, kind: str, key: str, table: Any, checks: Mapping[str, Any], required: tuple[str, ...],
            known: set[str], default=None) -> dict[str, Any]:
    """One [chips.key] or [switches.key] table's values, each checked; errors name the file, record and key."""
    if not isinstance(table, dict):
        section = {"chip": "chips", "switch": "switches"}[kind]
        raise CatalogError(f"{path}: {kind} {key!r} must be a table ([{section}.{key}])")
    missing = [k for k in required if k not in table]
    if missing:
        raise CatalogError(f"{path}: {kind} {key!r} lacks required key(s) {', '.join(missing)}")
    values = {}
    for name, raw in table.items():
        if name not in known:
            raise CatalogError(f"{path}: {kind} {key!r} has unknown key {shown(name)}; "
                               f"known keys: {', '.join(sorted(known))}")
        try:
            values[name] = checks.get(name, default)(raw)
        except TypeError as exc:
            raise CatalogError(f"{path}: {kind} {key!r}, key {name!r} = {shown(raw)} must be {exc}") from None
    return values


def _switch_from_table(path: str, key: str, table: Any) -> Switch:
    return Switch(key=key, **_record(path, "switch", key, table, _SWITCH_CHECKS, _SWITCH_REQUIRED,
                                     set(_SWITCH_CHECKS)))


def _key_text(value: Any) -> str:
    if not isinstance(value, str) or not KEY_PATTERN.match(value):
        raise TypeError("the key of a [switches.NAME] table, e.g. \"ib-ndr\"")
    return value.lower()


_CHECKS = {
    "name": _text,
    "family": _choice("tpu", "gpu"),
    "source": _text,
    "notes": _text,
    "flops_per_s": _flops_table,
    "megacore": _flag,
    "spec_table": _flag,
    "pod_shape": _shape,
    "host_shape": _shape,
    "wraparound": _choice("cube", "size16", "unknown"),
    "nvlink_switch": _key_text,
    "scaleout_switch": _key_text,
    "torus_dims": _upto(8),
}
_REQUIRED = ("name", "family", "source", "flops_per_s", "hbm_bytes", "hbm_bytes_per_s")
_FIELDS = {f.name for f in fields(Chip)} - {"key"}
_CHECKS.update({name: _upto(*_limit(name)) for name in sorted(_FIELDS - set(_CHECKS))})


def _chip_from_table(path: str, key: str, table: Any) -> Chip:
    values = _record(path, "chip", key, table, _CHECKS, _REQUIRED, _FIELDS, _pos_int)
    dims = values.get("torus_dims")
    for name in ("pod_shape", "host_shape"):
        if dims is not None and name in values and len(values[name]) != dims:
            raise CatalogError(f"{path}: chip {key!r}, key {name!r} = {list(values[name])} has {len(values[name])} "
                               f"axes but torus_dims = {dims}")
    return Chip(key=key, **values)


@dataclass(frozen=True)
class Catalog:
    """A set of chips by key, with the file it came from."""

    path: str
    chips: Mapping[str, Chip]
    switches: Mapping[str, Switch] = field(default_factory=lambda: MappingProxyType({}))

    def switch(self, key: str) -> Switch:
        """A switch by its key (``ib-ndr``, ``nvswitch-gen3`` ...)."""
        try:
            return self.switches[key.lower()]
        except KeyError:
            raise UnknownNameError("switch", key, self.switches,
                                   hint="'scalemath hardware list' shows them") from None

    def chip_switch(self, chip: Chip, which: str) -> Switch:
        """The NVLink (``which="nvlink"``) or scale-out (``"scaleout"``) switch of ``chip``."""
        name = f"{which}_switch"
        return self.switch(chip.require(name))

    def __getitem__(self, key: str) -> Chip:
        try:
            return self.chips[key.lower()]
        except KeyError:
            raise UnknownNameError(
                "chip", key, self.chips, hint="'scalemath hardware list' shows them"
            ) from None

    def __iter__(self):
        """The chips of the book's spec tables (what problem generators draw from); see :meth:`every_chip`."""
        return iter([c for c in self.chips.values() if c.spec_table])

    def __len__(self) -> int:
        return sum(1 for c in self.chips.values() if c.spec_table)

    def every_chip(self) -> list[Chip]:
        """Every chip, including those the book names outside its spec tables (H800, TPU v2)."""
        return list(self.chips.values())


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load a catalog file (the packaged ``hardware.toml`` when ``path`` is None)."""
    label, data = read_document(path, "hardware.toml", "hardware")
    chips = entries(label, data, "chips", "hardware", _chip_from_table)
    switches: Mapping[str, Switch] = MappingProxyType({})
    if "switches" in data:  # optional
        switches = entries(label, data, "switches", "hardware", _switch_from_table)
    for chip in chips.values():
        for name in ("nvlink_switch", "scaleout_switch"):
            key = getattr(chip, name)
            if key is not None and key not in switches:
                raise CatalogError(f"{label}: chip {chip.key!r}, key {name!r} = {key!r} names no [switches.{key}] "
                                   f"table{'; known switches: ' + ', '.join(switches) if switches else ''}")
    return Catalog(label, chips, switches)


@functools.cache
def default_catalog() -> Catalog:
    """The packaged catalog, loaded once on first use."""
    return load_catalog()


def get_chip(name: str, catalog: Catalog | None = None) -> Chip:
    """A chip by its lower-case key (``tpu-v5e``, ``h100``, ...)."""
    return (catalog or default_catalog())[name]
