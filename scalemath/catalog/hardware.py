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
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from .achievable import Achieved, attach
from .chip import DTYPE_BYTES, LEVELS, Chip, Switch, dtype_bytes
from .chip_table import ACHIEVABLE_LIMITS, _chip_from_table, _switch_from_table
from .reader import entries, read_document
from ..errors import CatalogError, UnknownNameError

__all__ = [
    "Achieved",
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
    chips = attach(label, data, chips, ACHIEVABLE_LIMITS, replace)  # measured figures checked, defaults added
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
