"""Code answers on an answer sheet: a hands-on problem (generators ``handson_*``) is graded from the sheet's
``answers.json`` like the others, with one more answer, ``"code"``: the path of the student's ``.py`` file,
relative to the sheet (``"code": "matmul.py"``, ``"code": "work/matmul.py"``), or the code itself (any text
that is not one line ending in ``.py``). The code runs in the sandbox for the task the key names (its
``task_seed`` and sizes), as ``problems grade FILE.py`` runs it, and is graded ``right`` or ``wrong`` with the
sandbox's verdict and message; a path that cannot be read is ``unreadable`` with why.

Paths stay inside the sheet's folder: relative, no ``..``, no symbolic link anywhere on the way (each folder is
opened without following links, the file read by the one safe reader with ``O_NOFOLLOW``) and no hard link.

>>> code_source("def f(x):\\n    return x\\n", ".")[1]
'(code, 2 lines)'
>>> try:
...     code_source("../answers/other.py", ".")
... except BadValueError as e:
...     print(str(e).split(":")[0])
code path '../answers/other.py' leaves the sheet's folder
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PureWindowsPath
from typing import Any

import sympy as sp

from ...errors import BadValueError, ScalemathError
from ...files import file_label, read_user_bytes
from .grade import grade_code
from .sandbox import MAX_SOURCE_BYTES
from .tasks import TASKS, HandsOnTask, make_task

__all__ = ["CODE_ANSWER", "task_of", "code_source", "grade_code_answer"]

#: the answer name a hands-on problem's code goes under
CODE_ANSWER = "code"
PREFIX = "handson_"


def task_of(raw: Any) -> HandsOnTask | None:
    """The hands-on task of a manifest problem (its generator and params), or None for any other problem."""
    generator = raw.get("generator") if isinstance(raw, dict) else None
    if not isinstance(generator, str) or not generator.startswith(PREFIX) or generator[len(PREFIX):] not in TASKS:
        return None
    name = generator[len(PREFIX):]
    params = raw.get("params") or {}
    defaults = TASKS[name].get("defaults", {})  # a key written before the task grew a parameter
    chosen = {k: params.get(k) for k in TASKS[name]["params"] if k in params or k not in defaults}
    return make_task(name, chosen, params.get("task_seed"))


def _shown(path: str) -> str:
    return repr(file_label(path)) if len(path) <= 80 else repr(file_label(path[:77]) + "...")


def _parts(path: str) -> list[str]:
    leaves = (f"code path {_shown(path)} leaves the sheet's folder: give a path inside it, relative to the answers "
              "file (no '..', no absolute path)")
    if "\0" in path or not path.isprintable():
        raise BadValueError(f"code path {_shown(path)} holds control characters")
    if os.path.isabs(path) or PureWindowsPath(path).drive or path.startswith(("~", "\\")):
        raise BadValueError(leaves)
    if "\\" in path:
        raise BadValueError(f"code path {_shown(path)}: separate folders with '/'")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise BadValueError(leaves)
    return parts


def _read_inside(folder: str | os.PathLike, path: str) -> bytes:
    parts = _parts(path)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder, flags)
    except OSError as exc:
        raise BadValueError(f"cannot open the sheet's folder {file_label(folder)}: {exc.strerror or exc}") from None
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                inner = os.open(part, flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
            except OSError as exc:
                where = "/".join(parts[:i + 1])
                why = ("is a symbolic link, which is not followed: put the file itself in the sheet's folder"
                       if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(os.path.join(folder, where))
                       else "is not a folder" if exc.errno == errno.ENOTDIR
                       else "does not exist" if exc.errno == errno.ENOENT else exc.strerror or str(exc))
                raise BadValueError(f"code path {_shown(path)}: {where!r} {why}") from None
            os.close(fd)
            fd = inner
        try:
            info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except OSError:
            info = None  # the reader below says why
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise BadValueError(f"code path {_shown(path)} is a hard link, which may reach a file outside the sheet's "
                                "folder: put a copy of the file itself there")
        return read_user_bytes(parts[-1], f"code file {_shown(path)}", MAX_SOURCE_BYTES, dir_fd=fd,
                               follow_links=False)
    finally:
        os.close(fd)


def code_source(given: Any, folder: str | os.PathLike) -> tuple[bytes, str]:
    """(the code's bytes, how to show what was given): a path read inside ``folder``, or the code itself."""
    if not isinstance(given, str) or not given.strip():
        raise BadValueError("give the path of your .py file, relative to the answers file, or the code itself")
    text = given.strip()
    if "\n" not in text and text.endswith(".py"):
        return _read_inside(folder, text), text
    data = given.encode("utf-8", "surrogatepass")
    return data, f"(code, {len(given.strip().splitlines())} lines)"


def grade_code_answer(p, given: Any, folder: str | os.PathLike | None):
    """The sheet's code answer for problem ``p`` (a key problem whose ``raw`` names a hands-on task), graded."""
    from ..verdicts import Graded

    task = task_of(p.raw)
    base = dict(problem=p.id, answer=CODE_ANSWER, expected=sp.Symbol("right"), unit="", kind="code",
                shown=f"code that passes the {task.name} task (seed {task.seed})" if task else "code")
    if given is None:
        return Graded(verdict="missing", given=None, **base)
    try:
        source, shown = code_source(given, folder if folder is not None else ".")
        grade = grade_code(task, source)
    except ScalemathError as exc:
        shown = given if isinstance(given, str) and "\n" not in given else "(code)"
        return Graded(verdict="unreadable", given=shown, diagnosis=str(exc), **base)
    verdict = "right" if grade.verdict == "right" else "wrong"
    why = grade.message if verdict == "right" else f"{grade.verdict}: {grade.message}"
    return Graded(verdict=verdict, given=shown, diagnosis=None if verdict == "right" else why,
                  note=None, **base)
