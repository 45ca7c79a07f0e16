"""The rates a training run achieves on a chip, as the catalog sources them: the matmul throughput in a dtype,
the collective bandwidth of each network, and the fixed cost of one collective step on it.

Each comes with the catalog's source, or is marked assumed (a default fraction of the peak) where no
measurement is recorded, so ``plan`` can say which of its inputs were measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

from ..catalog import hardware
from ..catalog.efficiency import sustained_fraction, under_efficiency

__all__ = ["Rates", "rates", "NETWORKS"]

#: The networks a chip family's axes cross.
NETWORKS = {"gpu": ("nvlink", "nic"), "tpu": ("ici", "dcn")}


@dataclass(frozen=True)
class Rates:
    """Achievable rates of one chip in one dtype: FLOP/s, bytes/s per network, seconds per collective step."""

    chip: str
    dtype: str
    matmul: Fraction
    attention: Fraction  # a fused attention kernel's rate
    bandwidth: Mapping[str, Fraction]
    latency: Mapping[str, Fraction]
    sources: Mapping[str, tuple[str, bool]]  # figure -> (where it comes from, measured or assumed)
    sustained: Fraction | None = None  # the sustained fraction the matmul and attention rates carry, if any

    #: The figures the sustained fraction scales (keys of ``sources``).
    KERNELS = ("matmul", "attention")

    def values(self) -> list[Fraction]:
        """The figures in the order of ``sources``."""
        return [self.matmul, self.attention, *self.bandwidth.values(), *self.latency.values()]

    def lines(self) -> list[str]:
        """One short line per figure: its value, measured or assumed (``hardware show`` gives the sources)."""
        from ..values.printing import with_unit

        out = [("matmul", with_unit(self.matmul, "FLOP/s")), ("fused attention", with_unit(self.attention, "FLOP/s"))]
        out += [(f"{NAMES[n]}", with_unit(v, "byte/s")) for n, v in self.bandwidth.items()]
        out += [(f"{NAMES[n]} step", with_unit(v, "s")) for n, v in self.latency.items()]
        scaled = "" if self.sustained is None else f" x {float(self.sustained):g} sustained (fitted)"
        return [f"{name} {value} ({'measured' if measured else 'assumed'}{scaled if key in self.KERNELS else ''})"
                for (name, value), (key, (_, measured)) in zip(out, self.sources.items())]


#: How the report names each network.
NAMES = {"nvlink": "NVLink", "nic": "scale-out NIC", "ici": "ICI", "dcn": "DCN"}


def _seconds(achieved) -> Fraction:
    return Fraction(achieved.value) / 10**9


def rates(chip: hardware.Chip, dtype: str, efficiency: str = "kernel") -> Rates:
    """The achievable rates of ``chip`` for a run whose matmuls are in ``dtype``; under the ``efficiency``
    convention "sustained" the matmul and attention rates are times the chip's sustained fraction."""
    networks = NETWORKS[chip.family]
    flops = under_efficiency(chip, chip.achievable_flops(dtype), efficiency)
    attention = under_efficiency(chip, chip.achievable_attention_flops(dtype), efficiency)
    fraction = sustained_fraction(chip) if efficiency == "sustained" else None
    sources = {"matmul": (flops.source, flops.measured), "attention": (attention.source, attention.measured)}
    bandwidth, latency = {}, {}
    for n in networks:
        got = chip.achievable_bandwidth(n)
        bandwidth[n] = Fraction(got.value)
        sources[f"{n} bandwidth"] = (got.source, got.measured)
    for n in networks:
        got = chip.collective_latency(n)
        latency[n] = _seconds(got)
        sources[f"{n} latency"] = (got.source, got.measured)
    return Rates(chip.key, dtype, Fraction(flops.value), Fraction(attention.value), bandwidth, latency, sources,
                 None if fraction is None else Fraction(fraction.value))
