"""Exports of a set's manifest to learning-management systems: Moodle XML, IMS QTI 2.1, Canvas
(QTI 1.2) and PrairieLearn. Every format is written from the same manifest (plain or with variants)
and the same statements (:mod:`scalemath.problems.lms.common`).

Every format counts its questions alike (:attr:`Written.questions`): a question is one problem of one variant,
whatever its number of answers, so a set of 12 problems in 2 variants is 24 questions in every format (Moodle:
24 questions, a plain set's problem of several parts a description and its parts; QTI: 24 items; Canvas: 24
problems, a problem of several parts a text-only stem and its parts; PrairieLearn: 12 folders, each drawing one
of its 2 variants). Each carries the problem's worked solution, shown after the attempt.

Output never replaces what the user has: a file (moodle, qti, canvas) is refused if it exists,
unless ``force`` is given and scalemath wrote it (a Moodle file starts with scalemath's comment, a
zip holds ``scalemath-export.json``); each question folder of a PrairieLearn export
(``<out>/<set>-qNN``) goes through :func:`scalemath.problems.outfolder.publish`.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ...errors import BadValueError, OutputExistsError, ScalemathError
from ...files import file_label, read_user_bytes, write_file

__all__ = ["FORMATS", "Written", "export"]

FORMATS = ("moodle", "qti", "canvas", "prairielearn")
_MOODLE_MARK = b"<!-- written by scalemath problems export -->"
_ZIP_MARK = "scalemath-export.json"


@dataclass(frozen=True)
class Written:
    path: Path
    questions: int  # problems of all variants: one question, whatever its number of answers
    variants: int
    hand_graded: int = 0  # formula answers the format cannot grade (Moodle essay, QTI extended text, Canvas essay)
    in_cloze: int = 0  # of those, Moodle's short-answer fields of Cloze questions (scalemath's form only)
    folders: int = 0  # PrairieLearn: question folders (one per position in the set)


_MAX_EXPORT_BYTES = 256 * 2**20


def _ours(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link) that scalemath's export wrote."""
    try:
        data = read_user_bytes(path, "export", _MAX_EXPORT_BYTES, follow_links=False)
        if _MOODLE_MARK in data[:4096]:
            return True
        if data.startswith(b"PK"):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                return _ZIP_MARK in z.namelist()
    except (ScalemathError, zipfile.BadZipFile):
        return False
    return False


def _write_file(out: Path, data: bytes, force: bool) -> None:
    if os.path.lexists(out):
        if not force:
            raise OutputExistsError(f"{file_label(out)} already exists; pass --force to replace it, or --out another file")
        if not _ours(out):
            raise OutputExistsError(f"{file_label(out)} exists and scalemath did not write it; move it or choose "
                                    "another --out")
    if out.name in ("", ".", ".."):
        raise BadValueError(f"--out {file_label(out)} is not a file name")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScalemathError(f"cannot write {file_label(out)}: {exc.strerror or exc}; choose another --out") from None
    write_file(out, data, replace=_ours if force else None, what="export")


def export(manifest: Path, fmt: str, out: Path, force: bool = False) -> Written:
    """Write the ``fmt`` export of ``manifest`` to ``out``."""
    from .common import load_items, set_name

    if fmt not in FORMATS:
        raise BadValueError(f"unknown export format {fmt!r}; one of {', '.join(FORMATS)}")
    if fmt != "prairielearn" and os.path.lexists(out) and not force:  # fail before the slow part
        raise OutputExistsError(f"{file_label(out)} already exists; pass --force to replace it, or --out another file")
    raw, key, items = load_items(manifest)
    name = set_name(raw)
    variants = len(key.variants)
    formulas = sum(a.key.kind == "expression" for item in items for a in item.answers)
    if fmt == "prairielearn":
        from ..outfolder import publish
        from .prairielearn import prairielearn_files

        files, n = prairielearn_files(items, name)
        folders: dict[str, dict[str, bytes]] = {}
        for rel, data in files.items():
            folder, _, leaf = rel.partition("/")
            folders.setdefault(folder, {})[leaf] = data
        for folder, content in folders.items():  # each question folder written whole, never over a user's

            def fill(target: Path, content=content) -> None:
                for leaf, data in content.items():
                    write_file(target / leaf, data, what="export")

            publish(out / folder, force, fill)
        return Written(out, n, variants, folders=len(folders))
    if fmt == "moodle":
        from .moodle import moodle_xml

        data, n = moodle_xml(items, name)
        data = data.replace(b"?>\n", b"?>\n" + _MOODLE_MARK + b"\n", 1)
    else:
        from .canvas import canvas_zip
        from .qti import qti21_zip

        data, n = (qti21_zip if fmt == "qti" else canvas_zip)(items, name)
        buf = io.BytesIO(data)
        with zipfile.ZipFile(buf, "a") as z:
            info = zipfile.ZipInfo(_ZIP_MARK, (2000, 1, 1, 0, 0, 0))
            z.writestr(info, '{"written_by": "scalemath"}\n')
        data = buf.getvalue()
    _write_file(out, data, force)
    in_cloze = 0
    if fmt == "moodle" and variants > 1:  # Moodle: with variants, every problem is one Cloze question
        in_cloze = formulas
    return Written(out, n, variants, formulas, in_cloze)
