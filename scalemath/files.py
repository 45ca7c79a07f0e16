"""Reading the files a user names (answers, manifests, catalogs, config.json), and writing every file.

Every file read goes through :func:`read_user_bytes` (:func:`read_user_file` decodes it as UTF-8),
which never blocks and never reads without bound: it refuses anything that is not a regular file (a
directory, a FIFO, a device such as ``/dev/zero``, a socket) before reading and reads at most
``max_bytes + 1`` bytes.
:func:`load_json_file` and :func:`load_toml_file` add the parsers' own hazards (deep nesting,
integers too long to convert, NaN and Infinity). Every problem is one :class:`ScalemathError` line
that names the file and says what to do; which subclass (and so which exit code) is the caller's.

Every file scalemath writes goes through :func:`write_file`: a random temporary name created
exclusively, no link followed, a file replaced only when the caller says it is scalemath's, asked again
just before the swap.

>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as d:
...     p = pathlib.Path(d, "a.json")
...     _ = p.write_text('{"x": [1, 2.5]}')
...     load_json_file(p, "answers file")
{'x': [1, 2.5]}
>>> load_json_file("/dev/null", "answers file")
Traceback (most recent call last):
...
scalemath.errors.BadValueError: cannot read answers file /dev/null: it is a device, not a regular file; give the path of the answers file itself
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import stat
import tomllib
from typing import Any, Callable

from .errors import BadValueError, OutputExistsError, ScalemathError

__all__ = ["MAX_BYTES", "MAX_INT_DIGITS", "read_user_file", "read_user_bytes", "write_file", "FileAppearedError", "load_json_file", "loads_json", "loads_toml",
           "load_toml_file", "file_label", "size_text"]

#: Largest file read (4 MiB): manifests of the largest sets are about 2 MB, catalogs a few kB.
MAX_BYTES = 4 * 2**20
#: Longest integer literal accepted in a JSON file (Python's own int/str conversion limit).
MAX_INT_DIGITS = 4300

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def file_label(path: str | os.PathLike) -> str:
    """The path as shown in a message: as typed, or quoted when it holds control characters."""
    text = os.fspath(path)
    text = text.decode("utf-8", "backslashreplace") if isinstance(text, bytes) else text
    return text if text.isprintable() else repr(text)


def size_text(n: int) -> str:
    """``4 MiB``, ``1 MB`` or ``1,234 bytes``: a limit as it reads best."""
    if n % 2**20 == 0:
        return f"{n // 2**20} MiB"
    if n % 10**6 == 0:
        return f"{n // 10**6} MB"
    return f"{n:,} bytes"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_user_file(path: str | os.PathLike, what: str, max_bytes: int = MAX_BYTES, *,
                   error: type[ScalemathError] = BadValueError) -> str:
    """The text of the regular file ``path`` (a ``what``, e.g. "answers file"), at most ``max_bytes``.

    :func:`read_user_bytes`, then decoded as UTF-8 (a leading byte-order mark is dropped). Raises ``error``.
    """
    data = read_user_bytes(path, what, max_bytes, error=error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {file_label(path)} is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}); "
                    f"save it as UTF-8") from None


def read_user_bytes(path: str | os.PathLike, what: str, max_bytes: int = MAX_BYTES, *,
                    error: type[ScalemathError] = BadValueError, dir_fd: int | None = None,
                    follow_links: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``), at most ``max_bytes``: the one safe reader.

    Refuses directories, FIFOs, devices and sockets without blocking (the file is opened with
    ``O_NONBLOCK`` and checked with ``fstat`` before any read) and files larger than ``max_bytes``.
    ``dir_fd`` reads ``path`` relative to an open folder; ``follow_links=False`` refuses a symbolic link
    (``O_NOFOLLOW``). Raises ``error``.
    """
    label = file_label(path)

    def fail(message: str) -> ScalemathError:
        return error(f"cannot read {what} {label}: {message}")

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise fail("No such file (check the path)") from None
    except PermissionError:
        raise fail("permission denied (check the file's permissions)") from None
    except IsADirectoryError:
        raise fail(f"it is a directory, not a regular file; give the path of the {what} itself") from None
    except ValueError:  # an embedded NUL byte
        raise fail("the path contains a NUL byte") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO on some systems
            raise fail(f"it is not a regular file; give the path of the {what} itself") from None
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
            raise fail("it is a symbolic link, which is not followed here") from None
        raise fail(f"{exc.strerror or exc} (check the path)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise fail(f"it is {_kind(info.st_mode)}, not a regular file; give the path of the {what} itself")
        if info.st_size > max_bytes:
            raise _too_large(label, what, max_bytes, error)
        chunks, size = [], 0
        while size <= max_bytes:
            try:
                chunk = os.read(fd, min(max_bytes + 1 - size, 2**20))
            except BlockingIOError:  # cannot happen for a regular file; never wait for one
                raise fail("the file is not ready to be read") from None
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise fail(f"{exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # the file grew while it was read
        raise _too_large(label, what, max_bytes, error)
    return data


def _too_large(label: str, what: str, max_bytes: int, error: type[ScalemathError]) -> ScalemathError:
    return error(f"{label} is larger than {size_text(max_bytes)}; is it the right {what}?")


# -- JSON -------------------------------------------------------------------------------------------

class _Refused(ValueError):
    """Raised by the parser hooks below; its message is shown after the file's name."""


def _no_constant(name: str):
    raise _Refused(f"{name} is not a JSON number (write a finite number, or null)")


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"an integer has {digits} digits; at most {MAX_INT_DIGITS} are read")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"{text[:40]} is too large for a number (it overflows to infinity)")
    return value


def loads_json(text: str, label: str, what: str, *, error: type[ScalemathError] = BadValueError) -> Any:
    """Parse JSON text read from ``label``; refuses NaN, Infinity, overflowing floats, integers of
    more than :data:`MAX_INT_DIGITS` digits and nesting too deep to parse, each as one ``error``."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_int=_int, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise error(f"{what} {label} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") \
            from None
    except _Refused as exc:
        raise error(f"{what} {label} is not valid JSON: {exc}") from None
    except RecursionError:
        raise error(f"{what} {label} is not valid JSON: it is nested too deeply to read") from None
    except ValueError as exc:  # any other conversion limit of the json module
        raise error(f"{what} {label} is not valid JSON: {exc}") from None


def load_json_file(path: str | os.PathLike, what: str, max_bytes: int = MAX_BYTES, *,
                   error: type[ScalemathError] = BadValueError) -> Any:
    """:func:`read_user_file` then :func:`loads_json`."""
    return loads_json(read_user_file(path, what, max_bytes, error=error), file_label(path), what, error=error)


# -- TOML -------------------------------------------------------------------------------------------

def loads_toml(text: str, label: str, *, error: type[ScalemathError] = BadValueError) -> dict:
    """Parse TOML text read from ``label``; invalid TOML, nesting too deep and integers too long
    to convert are each one ``error`` naming ``label``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{label}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{label}: not valid TOML: arrays or tables are nested too deeply to read") from None
    except ValueError as exc:  # int() of a literal beyond Python's digit limit, and the like
        if "digits" in str(exc):
            raise error(f"{label}: not valid TOML: an integer has more than {MAX_INT_DIGITS} digits; "
                        "write a smaller number") from None
        raise error(f"{label}: not valid TOML: {exc}") from None


def load_toml_file(path: str | os.PathLike, what: str, max_bytes: int = MAX_BYTES, *,
                   error: type[ScalemathError] = BadValueError) -> dict:
    """:func:`read_user_file` then :func:`loads_toml`."""
    return loads_toml(read_user_file(path, what, max_bytes, error=error), file_label(path), error=error)


# -- writing --------------------------------------------------------------------------------------

class FileAppearedError(OutputExistsError):
    """The target of :func:`write_file` exists and may not be replaced (it appeared, or is not scalemath's)."""


def _exists(path: str | os.PathLike, dir_fd: int | None) -> bool:
    try:
        os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def write_file(path: str | os.PathLike, data: bytes, *, replace: Callable[[str | os.PathLike], bool] | None = None,
               what: str = "file", mode: int = 0o666, dir_fd: int | None = None) -> None:
    """Write ``data`` to ``path``, whole or not at all: the one safe writer.

    The bytes go to a new hidden file beside ``path`` with a random name, created exclusively
    (``O_CREAT | O_EXCL | O_NOFOLLOW``: a link or file planted at that name is never written through),
    with ``mode`` less the umask. Then:

    - ``path`` missing: the new file is hard-linked to ``path``, which fails if anything appeared there
      meanwhile (on a file system without hard links, ``path`` is created exclusively instead);
    - ``path`` present: it is replaced only when ``replace(path)`` says so, asked again just before the
      atomic rename (a symbolic link at ``path`` is replaced itself, never followed).

    Anything else raises :class:`FileAppearedError` (nothing is written) or :class:`ScalemathError`
    (the folder cannot be written). ``dir_fd`` makes ``path`` relative to an open folder.
    """
    path = os.fspath(path)
    folder, name = os.path.split(path)
    label = file_label(path)
    if name in ("", ".", ".."):
        raise BadValueError(f"{label} is not a file name; give the {what}'s file name")

    def refused() -> FileAppearedError:
        return FileAppearedError(f"{label} exists and scalemath did not write it (or it appeared or changed "
                                 "meanwhile); it is left alone: move it or choose another file name")

    def failed(exc: OSError) -> ScalemathError:
        return ScalemathError(f"cannot write {label}: {exc.strerror or exc}; choose another place for the {what}")

    temp = os.path.join(folder, f".{name[:40]}.{secrets.token_hex(8)}.scalemath-new")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(temp, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise failed(exc) from None
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            if _exists(path, dir_fd):
                if replace is None or not replace(path):
                    raise refused()
                os.replace(temp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                return
            try:
                os.link(temp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise refused() from None
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                    raise
                _write_exclusive(path, data, flags, mode, dir_fd, refused)
        except ScalemathError:  # (an OutputExistsError is an OSError too)
            raise
        except OSError as exc:
            raise failed(exc) from None
    finally:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass


def _write_exclusive(path: str, data: bytes, flags: int, mode: int, dir_fd: int | None, refused) -> None:
    """Create ``path`` itself exclusively and write it (a file system without hard links)."""
    try:
        fd = os.open(path, flags, mode, dir_fd=dir_fd)
    except FileExistsError:
        raise refused() from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
