"""The output folder of a problem set: written whole or not at all, and never over a user's files.

A set is written into a hidden staging folder next to ``out`` (created with the user's
umask) and moved into place with one atomic rename under a lock on the parent folder, so
two generates to the same folder cannot both win, and a folder that appeared meanwhile is
never replaced. ``force`` replaces only a folder that scalemath wrote and nobody changed
since: its :data:`MARKER` (:mod:`.setmarker`) lists every file with its sha256. The old folder is moved aside,
the new one put in place, then the old one deleted. ``/``, the home folder, the current
folder and the folders above it are never replaced. A SIGTERM or SIGHUP while writing removes the
staging folder. Without ``force``, the same command run again is not an error: when the folder is
an unedited set of scalemath's with exactly the files the new one has, nothing is written.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import shutil
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from ..errors import BadValueError, OutputExistsError, ScalemathError
from .setmarker import MARKER, _not_replaceable, _read_marker, _write_marker

__all__ = ["MARKER", "Files", "publish"]

_PREFIX_BYTES = 40  # of the out name, in hidden helper names: ".<prefix>.<8 hex>.scalemath-new"
_log = logging.getLogger("scalemath")


class Files(list):
    """The files :func:`publish` wrote (not the marker); ``unchanged`` when ``out`` already held exactly them."""

    unchanged = False


def publish(out: Path, force: bool, fill: Callable[[Path], None]) -> Files:
    """Create ``out`` with the files ``fill(folder)`` writes into an empty folder; return them (not the marker).

    Without ``force``, an existing ``out`` is refused, unless it is an unedited set of scalemath's with exactly
    these files, byte for byte (the same command run again): then nothing is written and the result says
    ``unchanged``.
    """
    _check_out_path(out)
    existed = os.path.lexists(out)
    if existed:
        problem = _not_replaceable(out)
        if problem and force:
            raise OutputExistsError(f"{out} {problem}")
        if problem:  # not even --force would replace it: say why
            raise OutputExistsError(_exists_because(out, problem))
        if not force and _read_marker(out) is None:
            raise OutputExistsError(f"{out} already exists; pass --force to replace it, or --out another folder")
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScalemathError(f"cannot create the folder {parent} for --out: {exc.strerror or exc}; "
                             "choose another --out") from None
    staging: Path | None = None
    replaced: list[Path] = []  # the old set, moved aside, once the new one is in place
    result = Files()
    with _sigterm_exits():
        try:
            with signals_held_back():  # a kill between mkdir and this assignment would leak the folder
                staging = _hidden_dir(parent, out.name, "new")
            fill(staging)
            files = _write_marker(staging)
            if existed and not force:  # the same command again, or another set for the same folder?
                problem = _not_replaceable(out)  # edited while the new set was made
                if problem:
                    raise OutputExistsError(_exists_because(out, problem))
                if _read_marker(staging) != _read_marker(out):
                    raise OutputExistsError(f"{out} already holds a different set (other options, or another "
                                            "version of scalemath); pass --force to replace it, or --out another "
                                            "folder")
                result.unchanged = True
            else:
                _move_into_place(staging, out, force, existed, replaced)
        finally:
            with signals_held_back():
                if staging is not None and os.path.lexists(staging):
                    shutil.rmtree(staging, ignore_errors=True)
                for old in replaced:
                    _remove_old(old, out)
    result.extend(out / name for name in sorted(files))
    return result


def _exists_because(out: Path, problem: str) -> str:
    """The error for an existing ``out`` that --force would not replace either (``problem`` says why)."""
    if problem.startswith("exists and "):
        return f"{out} already exists and {problem.removeprefix('exists and ')}"
    return f"{out} already exists: it {problem}"




MAX_OUT_DEPTH = 64  # folders in --out (creating the missing ones recurses once per folder)
MAX_OUT_BYTES = 4096  # bytes of the absolute path (Linux's PATH_MAX)


def _check_out_path(out: Path) -> None:
    """Refuse ``.``/``..``, ``/``, the home folder, the current folder and its ancestors; and too long names."""
    if len(out.parts) > MAX_OUT_DEPTH:
        raise BadValueError(f"--out is {len(out.parts)} folders deep; at most {MAX_OUT_DEPTH}; choose a shorter --out")
    lexical = Path(os.path.abspath(out))
    if len(os.fsencode(str(lexical))) >= MAX_OUT_BYTES:
        raise BadValueError(f"--out is {len(os.fsencode(str(lexical)))} bytes long as an absolute path, more than the "
                            f"{MAX_OUT_BYTES - 1} a path may have; choose a shorter --out")
    try:
        real = out.resolve()
    except (OSError, RuntimeError):
        real = lexical
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        cwd = None
    try:
        home = Path.home().resolve()
    except (OSError, RuntimeError, KeyError):
        home = None
    for target in (lexical, real):
        what = None
        if target == Path(target.anchor):
            what = "the root folder"
        elif cwd is not None and target == cwd:
            what = "the current folder"
        elif cwd is not None and target in cwd.parents:
            what = "a folder that contains the current folder"
        elif home is not None and target == home:
            what = "your home folder"
        elif home is not None and target in home.parents:
            what = "a folder that contains your home folder"
        if what:
            raise BadValueError(f"--out {out} is {what}, which scalemath never replaces, even with --force; "
                                "give a new folder, e.g. --out sets/week1")
    if out.name in ("", ".", ".."):
        raise BadValueError(f"--out {out} ends in '.' or '..', which names an existing folder, not a new one; "
                            "give the new folder's own name, e.g. --out sets/week1")
    limit = _name_max(lexical.parent)
    for part in out.parts:
        size = len(os.fsencode(part))
        if part != out.anchor and size > limit:
            short = part if len(part) <= 24 else part[:20] + "..."
            raise BadValueError(f"--out: the name {short!r} is {size} bytes long, more than the {limit} "
                                "this file system allows for one name; choose a shorter --out")


def _name_max(folder: Path) -> int:
    """The longest file name the file system of ``folder`` (or its nearest existing ancestor) allows."""
    probe = str(folder)
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    try:
        return int(os.pathconf(probe, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError, TypeError):
        return 255


def _hidden_dir(parent: Path, name: str, kind: str) -> Path:
    """Create an empty hidden folder ``.<prefix of name>.<token>.scalemath-<kind>`` in ``parent``.

    ``os.mkdir`` (not ``tempfile.mkdtemp``) so the folder gets the user's umask;
    the name stays short whatever the length of ``name``.
    """
    prefix = ""
    for ch in name:
        if len(os.fsencode(prefix + ch)) > _PREFIX_BYTES:
            break
        prefix += ch
    last: OSError | None = None
    for _ in range(100):
        path = parent / f".{prefix}.{secrets.token_hex(4)}.scalemath-{kind}"
        try:
            os.mkdir(path)
            return path
        except FileExistsError as exc:
            last = exc
        except OSError as exc:
            raise ScalemathError(f"cannot write in {parent}: {exc.strerror or exc}; choose another --out") from None
    raise ScalemathError(f"cannot find a free hidden name in {parent} ({last}); choose another --out")


def _move_into_place(staging: Path, out: Path, force: bool, existed: bool, replaced: list[Path]) -> None:
    """Rename ``staging`` to ``out``; with ``force``, swap out the old set and append its new path to ``replaced``.

    The check and the renames run under an exclusive ``flock`` on the parent folder
    (so concurrent scalemath runs take turns) with SIGTERM/SIGINT held back (so a
    kill cannot leave ``out`` missing). A folder that appeared at ``out`` meanwhile
    is never replaced unless ``force`` is given and scalemath wrote it.
    """
    with _parent_locked(out.parent), signals_held_back():
        if not os.path.lexists(out):
            try:
                os.rename(staging, out)  # onto an empty folder that appeared this instant: nothing lost
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                    raise OutputExistsError(f"{out} appeared while the set was being written; nothing was "
                                            "replaced; move it away or choose another --out") from None
                raise
            return
        if not force:
            raise OutputExistsError(f"{out} appeared while the set was being written; nothing was replaced; "
                                    "move it away or pass --force to replace a set scalemath wrote")
        problem = _not_replaceable(out)
        if problem:
            when = "changed" if existed else "appeared"
            raise OutputExistsError(f"{out} {when} while the set was being written and {problem}; "
                                    "nothing was replaced")
        old = _hidden_dir(out.parent, out.name, "old")
        try:
            os.rename(out, old)  # replaces the empty placeholder: atomic
        except OSError as exc:
            os.rmdir(old)
            raise ScalemathError(f"cannot move the old set at {out} aside: {exc.strerror or exc}; "
                                 "nothing was replaced") from None
        problem = _not_replaceable(old)  # a file written into it just before the move
        error: type[ScalemathError] = OutputExistsError
        if problem is None:
            try:
                os.rename(staging, out)
                replaced.append(old)  # while signals are held back: the caller always learns of it
                return
            except OSError as exc:
                problem, error = f"could not be replaced ({exc.strerror or exc})", ScalemathError
        try:
            os.rename(old, out)  # put the old set back
        except OSError:
            raise error(f"{out} {problem}; the old set is kept at {old}") from None
        raise error(f"{out} {problem}; nothing was replaced")


def _remove_old(old: Path, out: Path) -> None:
    """Delete the replaced set; if that fails or it gained files, keep it and warn (the new set is in place)."""
    if _not_replaceable(old) is None:
        shutil.rmtree(old, ignore_errors=True)
    if os.path.lexists(old):
        _log.warning(f"warning: the new set is at {out}, but the old one could not be deleted: "
                     f"delete {old} by hand")


@contextmanager
def _parent_locked(parent: Path) -> Iterator[None]:
    """An exclusive flock on ``parent``'s folder descriptor, released on exit (or when the process dies)."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:  # unreadable parent: the atomic rename alone still never replaces a full folder
            fd = None
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # a file system without flock
                pass
        yield
    finally:
        if fd is not None:
            os.close(fd)


HELD_BACK = {getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)}


@contextmanager
def signals_held_back() -> Iterator[None]:
    """Hold SIGTERM, SIGINT and SIGHUP back in this thread; they arrive when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_BACK)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


#: The signals that end a command by default and can be caught: a kill, and a closed terminal.
_ENDING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """While writing, turn SIGTERM and SIGHUP (a closed terminal) into SystemExit(128 + the signal) so
    ``finally`` clean-ups run; then restore.

    Only in the main thread (elsewhere ``signal.signal`` raises ValueError), and
    not for a signal that is ignored (a caller who ignores it, as ``nohup`` does, keeps ignoring it).
    """
    installed: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _ENDING:
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN:
                continue
            try:
                signal.signal(signum, _exit_on_signal)
                installed[signum] = previous
            except (ValueError, OSError):
                pass
    try:
        yield
    finally:
        for signum, previous in installed.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
