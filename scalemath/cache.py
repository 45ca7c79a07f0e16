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
- keyed by a hash of the package's own source files and templates, the Python and SymPy versions and the
  source files of jinja2 and latex2mathml: an edited checkout (an editable install) never reads an entry that an
  older version of the code wrote, it starts a folder of its own;
- safe: the base folder and every folder below it must be real folders (not links) that the user owns
  and nobody else can write, or the command runs uncached (never failing); they are checked once and
  held open, and every entry is opened relative to the folder held, without following a link, only as
  a regular file and only up to :data:`MAX_ENTRY_BYTES`. Each entry carries an HMAC-SHA256 under a
  key only the user can read (``entries.key`` in the base folder), checked before a byte is unpickled:
  a changed bit, a planted or swapped entry, or one written for another key is a miss and is rebuilt,
  never code that runs or an answer that changes. Entries are written by the one safe writer
  (:func:`scalemath.files.write_file`), so a reader never sees half an entry.

What is cached is only ever a faster route to the same value: output is byte-identical with the
cache on, off, empty or warm. SymPy expressions are stored as their class and arguments and rebuilt
without evaluating them again, so a derivation read back is the very tree that was built (plain pickle
would re-evaluate it: slower, and it flattens products the engine leaves unevaluated for display).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import io
import os
import pickle
import secrets
import stat
import sys
from fractions import Fraction
from pathlib import Path
from typing import Callable, TypeVar

from .errors import ScalemathError
from .files import read_user_bytes, write_file

_T = TypeVar("_T")

__all__ = ["ENV", "code_key", "dumps", "folder", "has", "kept", "load", "persistent", "store"]

#: The environment variable that moves the cache (a folder) or turns it off (``off``).
ENV = "SCALEMATH_CACHE_DIR"

_PACKAGE = Path(__file__).resolve().parent
_SUFFIXES = (".py", ".j2", ".toml", ".json", ".txt")
_KEY: str | None = None
_FOLDERS: dict[tuple[str, str], "_Slot | None"] = {}


def _library(name: str) -> str:
    """What identifies an installed library's code without importing it (importing jinja2 only to read its
    version would cost a short command about 40 ms, reading its metadata about 20): the name, size and change
    time of each of its source files. A new version changes them, so it never reads entries an older one wrote."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return "?"  # not installed as a package: the hash of our own sources still covers us
    parts = []
    for folder in spec.submodule_search_locations:
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for file in sorted(f for f in files if f.endswith(".py")):
                info = os.stat(os.path.join(root, file))
                parts.append(f"{os.path.relpath(os.path.join(root, file), folder)}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _own_files() -> list[str]:
    """The package's source, template and data files (``/``-separated, relative, sorted), compiled-code folders
    left unvisited."""
    found = []
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, _PACKAGE)
        found += [name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")
                  for name in files if os.path.splitext(name)[1] in _SUFFIXES]
    return sorted(found)


def code_key() -> str:
    """A hash of this package's own files (source, templates, data) and of the libraries whose
    output is cached: 16 hex digits, the name of this checkout's cache folder."""
    global _KEY
    if _KEY is None:
        import sympy

        digest = hashlib.sha256()
        digest.update(f"{sys.implementation.cache_tag}|{sympy.__version__}|{_library('jinja2')}|"
                      f"{_library('latex2mathml')}|{pickle.HIGHEST_PROTOCOL}".encode())
        for rel in _own_files():
            digest.update(b"\0" + rel.encode() + b"\0")
            with open(_PACKAGE / rel, "rb") as fh:
                digest.update(fh.read())
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


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_private(name: str, dir_fd: int | None) -> int:
    """An open descriptor of the folder ``name`` (made if missing, mode 0700), which must be a real folder (not a
    link) that this user owns and nobody else can write; OSError otherwise."""
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        pass
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        os.close(fd)
        raise PermissionError(f"{name} is not a folder private to this user")
    return fd


class _Slot:
    """One kind's folder, held open: every entry is opened relative to it, so nothing renamed above it later
    can put another folder in its place; and the key that authenticates its entries."""

    def __init__(self, fd: int, secret: bytes, path: Path):
        self.fd, self.secret, self.path = fd, secret, path


_SECRET = "entries.key"
_SECRET_BYTES = 32


def _secret(base_fd: int) -> bytes:
    """The key of the cache's HMACs, made once: a file in the base folder only this user can read."""
    from .files import write_file

    for _ in range(2):
        try:
            info = os.stat(_SECRET, dir_fd=base_fd, follow_symlinks=False)
        except FileNotFoundError:
            try:
                write_file(_SECRET, secrets.token_bytes(_SECRET_BYTES), mode=0o600, dir_fd=base_fd, what="cache key")
            except ScalemathError:  # another process made it this instant: read theirs
                pass
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise PermissionError("the cache key is not a file private to this user")
        secret = read_user_bytes(_SECRET, "cache key", _SECRET_BYTES, dir_fd=base_fd, follow_links=False)
        if len(secret) != _SECRET_BYTES:
            raise PermissionError("the cache key is not whole")
        return secret
    raise PermissionError("the cache key could not be made")


def _slot(kind: str) -> _Slot | None:
    base = _base()
    if base is None:
        return None
    if (base, kind) not in _FOLDERS:
        fds: list[int] = []
        slot = None
        try:
            Path(base).parent.mkdir(parents=True, exist_ok=True)
            fds.append(_open_private(base, None))  # the base itself and every folder below it: checked
            secret = _secret(fds[0])
            fds.append(_open_private(code_key(), fds[-1]))
            fds.append(_open_private(kind, fds[-1]))
            slot = _Slot(fds.pop(), secret, Path(base) / code_key() / kind)
        except (OSError, ValueError, ScalemathError, AttributeError):  # AttributeError: no os.getuid (not POSIX)
            slot = None
        finally:
            for fd in fds:
                os.close(fd)
        _FOLDERS[(base, kind)] = slot
    return _FOLDERS[(base, kind)]


def folder(kind: str) -> Path | None:
    """``<cache>/<code key>/<kind>``, made if missing; None when the cache is off or unusable (a folder on the
    way that is a link, or that another user owns or can write)."""
    slot = _slot(kind)
    return None if slot is None else slot.path


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


_MAGIC = b"scalemath-cache 2\n"
_MAC_BYTES = hashlib.sha256().digest_size
#: The largest entry read (a problem with its figures is well under 1 MiB).
MAX_ENTRY_BYTES = 64 * 2**20


def _name(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:32] + ".entry"


def _mac(slot: _Slot, kind: str, key: str, payload: bytes) -> bytes:
    head = f"{kind}\0{key}\0".encode()
    return hmac.new(slot.secret, head + payload, hashlib.sha256).digest()


def has(kind: str, key: str) -> bool:
    """Whether an entry is stored under ``key`` (without reading it: it may still prove bad when loaded)."""
    slot = _slot(kind)
    if slot is None:
        return False
    try:
        return stat.S_ISREG(os.stat(_name(key), dir_fd=slot.fd, follow_symlinks=False).st_mode)
    except (OSError, ValueError):
        return False


def load(kind: str, key: str):
    """The value stored under ``key`` (any string), or None: missing, not a regular file, unreadable, or not
    exactly the bytes this user's scalemath wrote for ``key`` (an HMAC under the user's private key is checked
    before anything is unpickled, so a changed bit or a planted file is a miss, never code that runs)."""
    slot = _slot(kind)
    if slot is None:
        return None
    try:
        data = read_user_bytes(_name(key), "cache entry", MAX_ENTRY_BYTES, dir_fd=slot.fd, follow_links=False)
    except ScalemathError:
        return None
    mac, payload = data[len(_MAGIC):len(_MAGIC) + _MAC_BYTES], data[len(_MAGIC) + _MAC_BYTES:]
    if not data.startswith(_MAGIC) or not hmac.compare_digest(mac, _mac(slot, kind, key, payload)):
        return None
    try:
        stored_key, value = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - authentic but unreadable (a library changed its classes): a miss
        return None
    return value if stored_key == key else None


def store(kind: str, key: str, value) -> None:
    """Keep ``value`` under ``key``, authenticated, through the one safe writer (a new file renamed over the
    entry). Errors (a full disk, a read-only folder, a value that cannot be pickled) are ignored."""
    slot = _slot(kind)
    if slot is None:
        return
    try:
        payload = dumps((key, value))
        data = _MAGIC + _mac(slot, kind, key, payload) + payload
        write_file(_name(key), data, replace=lambda name: True, mode=0o600, dir_fd=slot.fd, what="cache entry")
    except Exception:  # noqa: BLE001 - caching is an optimisation: never fail the command for it
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
