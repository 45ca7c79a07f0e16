"""The marker of a problem set's folder: which files scalemath wrote there, with their sha256, and so whether
``--force`` may replace the folder (only when it holds nothing else, each file unchanged)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Sequence

from ..files import write_file

__all__ = ["MARKER"]

# Written last into every set folder: {"files": {name: sha256 hex}, "written_by": "scalemath"}.
# --force replaces a folder only if every entry in it is listed here, unchanged.
MARKER = ".scalemath-set.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def _tree(folder: Path) -> tuple[list[str], list[str], list[str]]:
    """Every file below ``folder`` as a '/'-separated relative path, every entry that is neither a
    plain file nor a real folder (a link, a FIFO ...), and every real subfolder; each sorted."""
    files, odd, dirs = [], [], []
    for dirpath, dirnames, filenames in os.walk(folder, onerror=_raise):
        rel = Path(dirpath).relative_to(folder)
        for name in sorted(dirnames):
            if os.path.islink(os.path.join(dirpath, name)):
                odd.append((rel / name).as_posix())
            else:
                dirs.append((rel / name).as_posix())
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in filenames:
            path = (rel / name).as_posix()
            mode = os.lstat(os.path.join(dirpath, name)).st_mode
            (files if stat.S_ISREG(mode) else odd).append(path)
    return sorted(files), sorted(odd), sorted(dirs)


def _raise(exc: OSError) -> None:
    raise exc


def _write_marker(folder: Path) -> list[str]:
    """Write :data:`MARKER` last: every file of the set (in subfolders too, as ``sheets/v01/problems.md``)
    and its sha256. Return the file names."""
    names, _, _ = _tree(folder)
    files = {name: _sha256(folder / name) for name in names}
    text = json.dumps({"files": files, "written_by": "scalemath"}, indent=2, sort_keys=True) + "\n"
    write_file(folder / MARKER, text.encode("utf-8"), what="problem set")
    return names


def _read_marker(folder: Path) -> dict[str, str] | None:
    """The marker's {name: sha256}, or None if it is missing, not a plain file or not scalemath's."""
    path = folder / MARKER
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("written_by") != "scalemath" or not isinstance(data.get("files"), dict):
        return None
    return {k: v for k, v in data["files"].items() if isinstance(k, str) and isinstance(v, str)}


def _listing(names: Sequence[str], most: int = 4) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _not_replaceable(folder: Path) -> str | None:
    """Why --force must not replace ``folder`` (a sentence fragment with the fix), or None if it may.

    It may if it is a real folder that is empty (nothing to lose) or that holds
    the marker and nothing else than the files listed in it, each unchanged.
    """
    try:
        mode = os.lstat(folder).st_mode
        if stat.S_ISLNK(mode):
            return ("is a symbolic link; --force replaces only a real folder that scalemath wrote, "
                    "so remove the link or choose another --out")
        if not stat.S_ISDIR(mode):
            return "exists and is not a folder; choose another --out"
        entries = sorted(os.listdir(folder))
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc}); choose another --out"
    if not entries:
        return None
    listed = _read_marker(folder)
    if listed is None:
        shown = [e + ("/" if os.path.isdir(folder / e) and not os.path.islink(folder / e) else "") for e in entries]
        return (f"holds files scalemath did not write ({_listing(shown)}; no {MARKER} in it); "
                "move them or choose another --out")
    foreign = []
    try:
        files, odd, dirs = _tree(folder)
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc}); choose another --out"
    ours = {"/".join(name.split("/")[:k]) for name in listed for k in range(1, name.count("/") + 1)}
    theirs = [d for d in dirs if d not in ours]
    theirs = [d for d in theirs if not any(d.startswith(t + "/") for t in theirs)]  # the outermost only
    foreign.extend(d + "/" for d in theirs)
    foreign.extend(name + (" changed" if name in listed else "") for name in odd)  # a listed file now a link
    for name in files:
        if name == MARKER or any(name.startswith(t + "/") for t in theirs):
            continue
        try:
            if name not in listed:
                foreign.append(name)
            elif _sha256(folder / name) != listed[name]:
                foreign.append(f"{name} changed")
        except OSError:
            foreign.append(f"{name} unreadable")
    if foreign:
        return f"holds files scalemath did not write ({_listing(foreign)}); move them or choose another --out"
    return None
