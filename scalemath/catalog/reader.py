"""Reading a catalog file (``hardware.toml``, ``models.toml`` or a user's own) into entries.

>>> label, entries = read_entries(None, "hardware.toml", "chips", "hardware", lambda label, key, table: table["name"])
>>> label, entries["tpu-v5e"]
('hardware.toml (packaged)', 'TPU v5e')
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, TypeVar

from ..errors import CatalogError
from ..files import file_label, load_toml_file, loads_toml

__all__ = ["read_document", "entries", "read_entries", "KEY_PATTERN", "MAX_DIGITS", "too_long", "shown"]

T = TypeVar("T")

#: What a chip or model key may be: it is typed on the command line and printed in tables.
KEY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")
#: Most digits of an integer in a catalog (10^30 FLOP/s or bytes is far beyond any chip or model).
MAX_DIGITS = 30


def too_long(value: Any) -> bool:
    """Whether ``value`` is an integer with more than :data:`MAX_DIGITS` digits.

    >>> too_long(10**30 - 1), too_long(10**30), too_long("x")
    (False, True, False)
    """
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_DIGITS


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages (an integer by its digit count).

    >>> shown(10**40), shown("x" * 100, 12)
    ('<an integer of 41 digits>', "'xxxxxxxx...")
    """
    if too_long(value):
        return f"<an integer of {len(str(abs(value))) + (value < 0)} digits>"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def read_document(path: str | Path | None, packaged: str, kind: str) -> tuple[str, dict]:
    """The parsed TOML of a catalog file, with the label messages name it by (``path`` None reads the
    packaged file ``packaged``)."""
    if path is None:
        label = f"{packaged} (packaged)"
        text = resources.files(__package__).joinpath(packaged).read_text(encoding="utf-8")
        return label, loads_toml(text, label, error=CatalogError)
    return file_label(path), load_toml_file(path, f"{kind} file", error=CatalogError)


def entries(label: str, data: Mapping[str, Any], section: str, kind: str,
            build: Callable[[str, str, Any], T]) -> Mapping[str, T]:
    """The ``[section.KEY]`` tables of a parsed catalog, each built by ``build(label, key, table)``.

    Keys are case-insensitive (stored lower case); every problem is a :class:`CatalogError` naming the
    file, and the entry where there is one.
    """
    tables = data.get(section)
    if not isinstance(tables, dict) or not tables:
        raise CatalogError(f"{label}: no [{section}.NAME] tables found")
    out: dict[str, T] = {}
    for raw_key, table in tables.items():
        if not KEY_PATTERN.match(raw_key):
            raise CatalogError(f"{label}: {section.rstrip('s')} name {shown(raw_key)} is not allowed; a name is 1 to 64 "
                               "letters, digits, '.', '_', '+' or '-', starting with a letter or digit "
                               "(e.g. tpu-v5e or llama3-70b)")
        key = raw_key.lower()
        if key in out:
            raise CatalogError(f"{label}: {kind} {raw_key!r} is defined twice (names are case-insensitive)")
        out[key] = build(label, key, table)
    return MappingProxyType(out)


def read_entries(path: str | Path | None, packaged: str, section: str, kind: str,
                 build: Callable[[str, str, Any], T]) -> tuple[str, Mapping[str, T]]:
    """:func:`read_document`, then :func:`entries` of its one ``section``."""
    label, data = read_document(path, packaged, kind)
    return label, entries(label, data, section, kind, build)
