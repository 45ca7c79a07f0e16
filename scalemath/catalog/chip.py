"""A chip's record and the figures derived from it (per-level bandwidths, pod and host sizes, torus
wraparound), a network switch's, and the dtypes the engine knows with their bytes per element."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from fractions import Fraction
from types import MappingProxyType
from typing import Mapping

from ..errors import BadValueError, UnknownNameError
from .achievable import (Achievable, Achieved, achieved_attention_flops, achieved_bandwidth, achieved_flops,
                         achieved_latency)

__all__ = ["DATASHEET_KEYS_EXCLUDED", "DTYPE_BYTES", "FIGURES", "LEVELS", "Chip", "Datasheet", "Switch", "dtype_bytes"]

#: Whose figures a chip record holds: the book's rounded ones, or the vendors' published ones where they differ.
FIGURES = ("book", "datasheet")

#: Chip keys a datasheet table may not give: names, notes, switch keys, rules and shapes are the catalog's own.
DATASHEET_KEYS_EXCLUDED = frozenset({"key", "name", "family", "source", "notes", "spec_table", "nvlink_switch",
                                     "scaleout_switch", "wraparound", "megacore", "pod_shape", "host_shape",
                                     "datasheet", "figures", "achievable"})


@dataclass(frozen=True)
class Datasheet:
    """A vendor's published figures for one chip where they differ from the book's (a ``[chips.KEY.datasheet]``
    table): the chip's own keys (a ``flops_per_s`` table holds only the dtypes the vendor prints), the page they
    are printed on (``source``) and how a figure was read off it (``notes``)."""

    source: str
    figures: Mapping[str, object] = field(hash=False)
    notes: str = field(default="", compare=False)

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
    datasheet: Datasheet | None = field(default=None, compare=False, hash=False, repr=False)
    figures: str | None = None  # "datasheet" when the vendor's figures replace the book's (None: the book's)
    achievable: Achievable | None = field(default=None, compare=False, hash=False, repr=False)

    # -- what a GEMM and a collective really reach (catalog/achievable.py) --------------------------

    def achievable_flops(self, dtype: str) -> Achieved:
        """A large dense GEMM's FLOP/s in ``dtype``: measured, else the catalog's default share of the peak."""
        return achieved_flops(self, dtype)

    def achievable_attention_flops(self, dtype: str) -> Achieved:
        """A fused causal attention kernel's FLOP/s in ``dtype`` over one forward plus one backward pass: measured,
        else the catalog's default share of the achievable matmul rate."""
        return achieved_attention_flops(self, dtype)

    def achievable_bandwidth(self, network: str) -> Achieved:
        """A collective's bandwidth (the book's W) on ``nvlink``/``nic`` (GPU) or ``ici``/``dcn`` (TPU)."""
        return achieved_bandwidth(self, network)

    def collective_latency(self, network: str) -> Achieved:
        """The fixed cost of one collective on ``network``, in ns (a small message's time)."""
        return achieved_latency(self, network)

    # -- the book's figures or the vendor's ---------------------------------------

    def under(self, hardware: str) -> "Chip":
        """This chip with the book's figures (``hardware="book"``) or the vendor's published ones where the
        datasheet prints them, the book's elsewhere (``"datasheet"``): the ``hardware`` convention.

        >>> from scalemath.catalog.hardware import get_chip
        >>> a100 = get_chip("a100").under("datasheet")
        >>> a100.flops("bf16"), a100.hbm_bytes_per_s, a100.flops("fp32"), a100.figures
        (312000000000000, 2039000000000, 19500000000000, 'datasheet')
        """
        if hardware not in FIGURES:
            raise UnknownNameError("hardware figures", hardware, FIGURES)
        if hardware == (self.figures or "book"):
            return self
        if hardware == "book":
            raise BadValueError(f"{self.key}: a chip with the datasheet's figures does not keep the book's; look it "
                                "up in the catalog again")
        return self._datasheet_view

    @functools.cached_property
    def _datasheet_view(self) -> "Chip":
        values = dict(self.datasheet.figures) if self.datasheet is not None else {}
        if "flops_per_s" in values:
            values["flops_per_s"] = MappingProxyType({**self.flops_per_s, **values["flops_per_s"]})
        return replace(self, **values, figures="datasheet")

    def datasheet_differences(self) -> dict[str, tuple[object, object]]:
        """Each figure whose published value differs from the book's, by key (``flops_per_s.bf16`` for a
        rate), as (the book's, the datasheet's); the book's is None where the book gives none.

        >>> from scalemath.catalog.hardware import get_chip
        >>> get_chip("tpu-v5p").datasheet_differences()["hbm_bytes_per_s"]
        (2800000000000, 2765000000000)
        """
        if self.datasheet is None:
            return {}
        out: dict[str, tuple[object, object]] = {}
        for key, value in self.datasheet.figures.items():
            if key == "flops_per_s":
                for dtype, rate in value.items():
                    if self.flops_per_s.get(dtype) != rate:
                        out[f"flops_per_s.{dtype}"] = (self.flops_per_s.get(dtype), rate)
            elif getattr(self, key) != value:
                out[key] = (getattr(self, key), value)
        return out

    # -- derived views -------------------------------------------------------------

    def require(self, name: str):
        """The catalog value ``name``; a :class:`BadValueError` naming the chip and the field when it is missing.

        >>> from scalemath.catalog.hardware import get_chip
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

        >>> from scalemath.catalog.hardware import get_chip
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

        >>> from scalemath.catalog.hardware import get_chip
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
