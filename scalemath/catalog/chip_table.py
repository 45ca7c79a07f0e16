"""Reading one ``[chips.KEY]`` or ``[switches.KEY]`` table of a hardware catalog into its record: every key
known, every value of its type and within bounds; a :class:`CatalogError` names the file, the record and the
key otherwise."""

from __future__ import annotations

from dataclasses import fields
from types import MappingProxyType
from typing import Any, Mapping

from .achievable import parse_chip_table
from .chip import DATASHEET_KEYS_EXCLUDED, DTYPE_BYTES, Chip, Datasheet, Switch, _product
from .reader import KEY_PATTERN, MAX_DIGITS, shown, too_long
from ..errors import CatalogError

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
_FIELDS = {f.name for f in fields(Chip)} - {"key", "datasheet", "figures", "achievable"}
#: The bounds by unit an achievable figure is read with.
ACHIEVABLE_LIMITS = MappingProxyType({"flops": MAX_FLOPS, "bytes_per_s": MAX_BYTES_PER_S, "ns": MAX_NS})
_CHECKS.update({name: _upto(*_limit(name)) for name in sorted(_FIELDS - set(_CHECKS))})


#: What a [chips.KEY.datasheet] table may give: its source and notes, and the chip's published figures.
_DATASHEET_FIGURES = _FIELDS - DATASHEET_KEYS_EXCLUDED


def _datasheet(path: str, key: str, table: Any) -> Datasheet:
    """A chip's ``[chips.KEY.datasheet]`` table: the vendor's figures, each checked as the chip's own key is."""
    where = f"{path}: chip {key!r}, [chips.{key}.datasheet]"
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: chip {key!r}, key 'datasheet' must be a table ([chips.{key}.datasheet]) of the "
                           "vendor's published figures with their source")
    if "source" not in table:
        raise CatalogError(f"{where} lacks required key source (the page or datasheet the figures are printed on)")
    values: dict[str, Any] = {}
    for name, raw in table.items():
        if name not in _DATASHEET_FIGURES and name not in ("source", "notes"):
            raise CatalogError(f"{where} has unknown key {shown(name)}; it takes source, notes and the chip's "
                               f"figures: {', '.join(sorted(_DATASHEET_FIGURES))}")
        try:
            values[name] = _CHECKS.get(name, _pos_int)(raw)
        except TypeError as exc:
            raise CatalogError(f"{path}: chip {key!r}, key 'datasheet.{name}' = {shown(raw)} must be {exc}") from None
    source, notes = values.pop("source"), values.pop("notes", "")
    if not values:
        raise CatalogError(f"{where} gives no figure; give the vendor's figures that differ from the book's "
                           "(e.g. hbm_bytes_per_s = 2039000000000) or leave the table out")
    return Datasheet(source=source, figures=MappingProxyType(values), notes=notes)


def _chip_from_table(path: str, key: str, table: Any) -> Chip:
    datasheet = achievable = None
    if isinstance(table, dict) and "datasheet" in table:
        table = dict(table)
        datasheet = _datasheet(path, key, table.pop("datasheet"))
    if isinstance(table, dict) and "achievable" in table:
        table = dict(table)
        achievable = parse_chip_table(path, key, table.get("family"), table.pop("achievable"), DTYPE_BYTES,
                                      ACHIEVABLE_LIMITS)
    values = _record(path, "chip", key, table, _CHECKS, _REQUIRED, _FIELDS, _pos_int)
    dims = values.get("torus_dims")
    for name in ("pod_shape", "host_shape"):
        if dims is not None and name in values and len(values[name]) != dims:
            raise CatalogError(f"{path}: chip {key!r}, key {name!r} = {list(values[name])} has {len(values[name])} "
                               f"axes but torus_dims = {dims}")
    return Chip(key=key, **values, datasheet=datasheet, achievable=achievable)
