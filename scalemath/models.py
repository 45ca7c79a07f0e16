"""The model catalog: transformer configurations as frozen records, loaded lazily from ``models.toml``.

>>> m = get_model("llama3-70b")
>>> (m.D, m.F, m.N, m.K, m.H, m.L)
(8192, 28672, 64, 8, 128, 80)
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from .errors import CatalogError, UnknownNameError

__all__ = ["Model", "ModelCatalog", "load_models", "default_models", "get_model", "SYMBOL_FIELDS"]

#: Model fields that bind engine symbols (symbol name -> field).
SYMBOL_FIELDS: Mapping[str, str] = {"D": "D", "F": "F", "N": "N", "K": "K", "H": "H", "L": "L",
                                    "V_vocab": "V", "E": "E", "k": "k"}


@dataclass(frozen=True)
class Model:
    """A transformer's shape. Letters are the book's: D d_model, F d_ff, N query heads, K KV heads,
    H head dim, L layers, V vocabulary, E experts (1 for a dense model), k experts per token."""

    key: str
    name: str
    source: str
    D: int
    F: int
    N: int
    K: int
    H: int
    L: int
    V: int
    E: int = 1
    k: int = 1
    gated: bool = True
    tied: bool = False
    max_context: int | None = None
    notes: str = field(default="", compare=False)

    @property
    def is_moe(self) -> bool:
        return self.E > 1


@dataclass(frozen=True)
class ModelCatalog:
    path: str
    models: Mapping[str, Model]

    def __getitem__(self, key: str) -> Model:
        try:
            return self.models[key.lower()]
        except KeyError:
            raise UnknownNameError("model", key, self.models, hint="'scalemath models list' shows them") from None

    def __iter__(self):
        return iter(self.models.values())

    def __len__(self) -> int:
        return len(self.models)


_FIELDS = {f.name: f for f in fields(Model)}


def _model(path: str, key: str, table: Any) -> Model:
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: model {key!r} must be a table ([models.{key}])")
    values = {}
    for name, raw in table.items():
        if name not in _FIELDS or name == "key":
            raise CatalogError(f"{path}: model {key!r} has unknown key {name!r}; known: "
                               f"{', '.join(sorted(n for n in _FIELDS if n != 'key'))}")
        kind = _FIELDS[name].type
        if "bool" in str(kind):
            ok = isinstance(raw, bool)
        elif "str" in str(kind):
            ok = isinstance(raw, str) and bool(raw.strip())
        else:
            ok = isinstance(raw, int) and not isinstance(raw, bool) and raw > 0
        if not ok:
            raise CatalogError(f"{path}: model {key!r}, key {name!r} = {raw!r} has the wrong type")
        values[name] = raw
    required = ("name", "source", "D", "F", "N", "K", "H", "L", "V")
    missing = [n for n in required if n not in values]
    if missing:
        raise CatalogError(f"{path}: model {key!r} lacks {', '.join(missing)}")
    return Model(key=key, **values)


def load_models(path: str | Path | None = None) -> ModelCatalog:
    if path is None:
        text = resources.files("scalemath").joinpath("models.toml").read_text(encoding="utf-8")
        label = "models.toml (packaged)"
    else:
        label = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CatalogError(f"cannot read model file {label}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{label}: not valid TOML: {exc}") from None
    tables = data.get("models")
    if not isinstance(tables, dict) or not tables:
        raise CatalogError(f"{label}: no [models.NAME] tables found")
    return ModelCatalog(label, {k.lower(): _model(label, k.lower(), t) for k, t in tables.items()})


@functools.cache
def default_models() -> ModelCatalog:
    return load_models()


def get_model(name: str, catalog: ModelCatalog | None = None) -> Model:
    return (catalog or default_models())[name]
