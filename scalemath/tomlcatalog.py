"""Reading a catalog file (``hardware.toml``, ``models.toml`` or a user's own) into entries.

>>> label, entries = read_entries(None, "hardware.toml", "chips", "hardware", lambda label, key, table: table["name"])
>>> label, entries["tpu-v5e"]
('hardware.toml (packaged)', 'TPU v5e')
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, TypeVar

from .errors import CatalogError

__all__ = ["read_entries"]

T = TypeVar("T")


def read_entries(path: str | Path | None, packaged: str, section: str, kind: str,
                 build: Callable[[str, str, Any], T]) -> tuple[str, Mapping[str, T]]:
    """``[section.KEY]`` tables of a TOML file, each built by ``build(label, key, table)``.

    ``path`` None reads the packaged file. Keys are case-insensitive (stored lower case);
    every problem is a :class:`CatalogError` naming the file, and the entry where there is one.
    """
    if path is None:
        text = resources.files("scalemath").joinpath(packaged).read_text(encoding="utf-8")
        label = f"{packaged} (packaged)"
    else:
        label = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CatalogError(f"cannot read {kind} file {label}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise CatalogError(f"{label}: not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{label}: not valid TOML: {exc}") from None
    tables = data.get(section)
    if not isinstance(tables, dict) or not tables:
        raise CatalogError(f"{label}: no [{section}.NAME] tables found")
    out: dict[str, T] = {}
    for raw_key, table in tables.items():
        key = raw_key.lower()
        if key in out:
            raise CatalogError(f"{label}: {kind} {raw_key!r} is defined twice (names are case-insensitive)")
        out[key] = build(label, key, table)
    return label, MappingProxyType(out)
