"""A persistent cache of deterministic one-time work, kept between runs like Python's ``__pycache__``.

A cold command spends most of its time on work whose result never changes for a given checkout:
compiling the jinja2 templates, solving the crossovers' equations, building derivations (the registered
quantities' and the generators' own builders, :func:`persistent`), simulating a sharded matmul, converting
LaTeX to MathML, drawing figures, and making (and checking by both routes) a set's problems. This
module keeps such results on disk (one folder per kind; the problems grow with every new seed, and
deleting the folder is always safe):

- where: the user's cache folder (``platformdirs.user_cache_dir("scalemath")``, e.g.
  ``~/.cache/scalemath`` on Linux), or the folder ``SCALEMATH_CACHE_DIR`` names;
  ``SCALEMATH_CACHE_DIR=off`` turns the cache off;
- keyed by a hash of the package's own source files and templates, the Python, SymPy, jinja2 and
  latex2mathml versions: an edited checkout (an editable install) never reads an entry that an
  older version of the code wrote, it starts a folder of its own;
- safe: entries are written to a temporary file and renamed into place (a reader never sees half
  an entry); an unreadable, corrupt or stale entry is ignored and rebuilt; a folder that cannot be
  written, or that is not private to the user (code could be planted in it), leaves the command
  running uncached, never failing.

What is cached is only ever a faster route to the same value: output is byte-identical with the
cache on, off, empty or warm. SymPy expressions are stored as their class and arguments and rebuilt
without evaluating them again, so a derivation read back is the very tree that was built (plain pickle
would re-evaluate it: slower, and it flattens products the engine leaves unevaluated for display).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
import stat
import sys
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Callable, TypeVar

_T = TypeVar("_T")

__all__ = ["ENV", "code_key", "dumps", "folder", "has", "kept", "load", "persistent", "store"]

#: The environment variable that moves the cache (a folder) or turns it off (``off``).
ENV = "SCALEMATH_CACHE_DIR"

_PACKAGE = Path(__file__).resolve().parent
_SUFFIXES = (".py", ".j2", ".toml", ".json", ".txt")
_KEY: str | None = None
_FOLDERS: dict[tuple[str, str], Path | None] = {}


def code_key() -> str:
    """A hash of this package's own files (source, templates, data) and of the libraries whose
    output is cached: 16 hex digits, the name of this checkout's cache folder."""
    global _KEY
    if _KEY is None:
        import jinja2
        import sympy

        try:
            from importlib.metadata import version
            l2m = version("latex2mathml")
        except Exception:  # noqa: BLE001 - no metadata (a vendored copy): the source hash still covers us
            l2m = "?"
        digest = hashlib.sha256()
        digest.update(f"{sys.implementation.cache_tag}|{sympy.__version__}|{jinja2.__version__}|{l2m}|"
                      f"{pickle.HIGHEST_PROTOCOL}".encode())
        for path in sorted(p for p in _PACKAGE.rglob("*") if p.suffix in _SUFFIXES and p.is_file()
                           and "__pycache__" not in p.parts):
            digest.update(b"\0" + path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
        _KEY = digest.hexdigest()[:16]
    return _KEY


def _base() -> str | None:
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() == "off":
        return None
    if setting:
        return setting
    try:
        import platformdirs
    except ImportError:  # a broken install: run uncached rather than fail
        return None
    return platformdirs.user_cache_dir("scalemath", appauthor=False)


def _private(path: Path) -> bool:
    info = os.lstat(path)
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def folder(kind: str) -> Path | None:
    """``<cache>/<code key>/<kind>``, made if missing; None when the cache is off or unusable."""
    base = _base()
    if base is None:
        return None
    slot = (base, kind)
    if slot not in _FOLDERS:
        path = Path(base) / code_key() / kind
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            usable = _private(path) and _private(path.parent)
        except (OSError, AttributeError):  # AttributeError: no os.getuid (not POSIX)
            usable = False
        _FOLDERS[slot] = path if usable else None
    return _FOLDERS[slot]


def _rebuild(cls, args):
    """A SymPy object from its class and arguments, exactly as it was: not evaluated again (evaluating
    would flatten a product written unevaluated on purpose, and costs most of the loading time)."""
    try:
        return cls(*args, evaluate=False)
    except TypeError:  # a class without the evaluate option rebuilds as it is
        return cls(*args)


class _Pickler(pickle.Pickler):
    """pickle, with SymPy expressions stored as (class, arguments) and rebuilt by :func:`_rebuild`."""

    def reducer_override(self, obj):
        basic = sys.modules.get("sympy.core.basic")
        if basic is not None and isinstance(obj, basic.Basic) and not obj.is_Atom \
                and type(obj).__getnewargs__ is basic.Basic.__getnewargs__:
            return _rebuild, (type(obj), obj.args)
        return NotImplemented


def dumps(value) -> bytes:
    """``value`` pickled as the cache stores it (SymPy trees rebuilt as they were, :func:`_rebuild`); read back
    with ``pickle.loads``."""
    out = io.BytesIO()
    _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return out.getvalue()


def _entry(kind: str, key: str) -> Path | None:
    where = folder(kind)
    return None if where is None else where / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".pickle")


def has(kind: str, key: str) -> bool:
    """Whether an entry is stored under ``key`` (without reading it: it may still prove stale when loaded)."""
    path = _entry(kind, key)
    return path is not None and path.is_file()


def load(kind: str, key: str):
    """The value stored under ``key`` (any string), or None: missing, unreadable, corrupt or written for
    another key (the key is stored beside the value and compared)."""
    path = _entry(kind, key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            stored_key, value = pickle.load(f)
    except Exception:  # noqa: BLE001 - a bad entry is a miss; store() will replace it
        return None
    return value if stored_key == key else None


def store(kind: str, key: str, value) -> None:
    """Keep ``value`` under ``key``: written to a temporary file, then renamed over the entry. Errors
    (a full disk, a read-only folder, a value that cannot be pickled) are ignored."""
    path = _entry(kind, key)
    if path is None:
        return
    tmp = None
    try:
        data = dumps((key, value))
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        tmp = None
    except Exception:  # noqa: BLE001 - caching is an optimisation: never fail the command for it
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def kept(kind: str, key: str, build: Callable[[], _T], valid: type | tuple[type, ...]) -> _T:
    """The value stored under ``key`` when it is a ``valid`` one (never None), else ``build()``, stored for the
    next run."""
    found = load(kind, key)
    if found is not None and isinstance(found, valid):
        return found
    built = build()
    store(kind, key, built)
    return built


_PLAIN = (str, int, bool, type(None), Fraction)


def _plain(value) -> bool:
    """A value whose ``repr`` names it for good: str, int, bool, None, Fraction, and tuples of them."""
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, _PLAIN)


#: The builders made :func:`persistent`, to clear their in-process caches (the tests read them back from disk).
PERSISTENT: list = []


def persistent(build: Callable[..., _T]) -> Callable[..., _T]:
    """``functools.cache`` for a builder of symbolic derivations, its results also kept between runs (kind
    ``builder``, keyed by the builder's module, name and arguments): SymPy spends much of a cold run comparing
    the terms of a Max or Min it builds. Arguments must be plain values (see :func:`_plain`); a call with
    others is built and remembered in this process only."""
    name = f"{build.__module__}.{build.__qualname__}"

    @functools.cache
    @functools.wraps(build)
    def wrapper(*args):
        if not _plain(args):
            return build(*args)
        return kept("builder", name + repr(args), lambda: build(*args), object)

    PERSISTENT.append(wrapper)
    return wrapper
