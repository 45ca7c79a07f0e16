"""What a teacher puts on a sheet besides the problems, and the class roster for per-student variants.

A :class:`Sheet` holds the title, course, instructions, points per question, the name/date line
and the paper size; :func:`load_config` reads them from a small TOML file (``--config sheet.toml``)
and :func:`read_roster` reads a CSV roster (``--students roster.csv``: a header, an ``id`` column,
an optional ``name`` column). Both go through :mod:`scalemath.files`, which bounds sizes and
refuses devices and FIFOs; every problem is one :class:`BadValueError` (exit 2) naming the file.

>>> Sheet(points=(2, 3)).points_for(1), Sheet(points=(5,)).points_for(7), Sheet().points_for(0)
(3, 5, None)
"""

from __future__ import annotations

import csv
import functools
import io
import re
import shutil
import subprocess
from dataclasses import dataclass, fields, replace
from pathlib import Path

from ..errors import BadValueError
from ..files import file_label, loads_toml, read_user_bytes, read_user_file

__all__ = ["Sheet", "PAPERS", "load_config", "read_roster", "check_text", "VARIANT_ID", "MAX_VARIANTS",
           "CONFIG_BYTES", "ROSTER_BYTES", "ROSTER_SEPARATORS", "tex_can_set", "tex_student", "untypeset_students", "UNTYPESET_HELP"]

PAPERS = ("letter", "a4")
MAX_VARIANTS = 500
CONFIG_BYTES = 64 * 1024
ROSTER_BYTES = 1024 * 1024
#: A variant id names a folder (sheets/<id>/): letters, digits, '.', '_', '-', not starting with '.'.
VARIANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_LIMITS = {"title": 200, "course": 200, "instructions": 4000, "student": 200}


@dataclass(frozen=True)
class Sheet:
    """The parts of a sheet a teacher chooses. ``points``: one number for every question, or one per question."""

    title: str | None = None
    course: str | None = None
    instructions: str | None = None
    points: tuple[int, ...] = ()
    name_line: bool = False
    paper: str = "letter"
    #: a sheet printed and answered by hand: a box under each answer, lines to work on, no answers.json
    on_paper: bool = False

    def points_for(self, index: int) -> int | None:
        if not self.points:
            return None
        return self.points[index] if len(self.points) > 1 else self.points[0]

    def merged(self, **options) -> "Sheet":
        """This sheet with the options that were given (not None) put over it."""
        return replace(self, **{k: v for k, v in options.items() if v is not None})


def check_text(value: str, what: str, limit: int | None = None, multiline: bool = False) -> str:
    """A title, course, instructions or student name: printable, not too long; returned stripped."""
    limit = limit or _LIMITS.get(what, 200)
    if not isinstance(value, str):
        raise BadValueError(f"{what} must be text, not {type(value).__name__}")
    text = value.strip()
    if len(text) > limit:
        raise BadValueError(f"{what} is {len(text)} characters long; at most {limit}")
    bad = [c for c in text if not (c.isprintable() or (multiline and c == "\n"))]
    if bad:
        raise BadValueError(f"{what} holds a control character ({bad[0]!r}); write plain text")
    return text


def _points(value, label: str) -> tuple[int, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > 1000:
        raise BadValueError(f"{label}: points must be a whole number or a list of 1 to 1000 whole numbers")
    for p in items:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 1000:
            raise BadValueError(f"{label}: points must be whole numbers from 0 to 1000, not {p!r}")
    return tuple(items)


def load_config(path) -> Sheet:
    """A :class:`Sheet` from a TOML file with keys ``title``, ``course``, ``instructions``, ``points``
    (a number, or a list with one per question), ``name_line`` (true/false), ``paper`` (a4 or letter) and ``on_paper`` (true/false: answered by hand)."""
    label = file_label(path)
    data = loads_toml(read_user_file(path, "sheet config", CONFIG_BYTES), label)
    known = {f.name for f in fields(Sheet)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise BadValueError(f"{label}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(known))}")
    out: dict = {}
    for key in ("title", "course", "instructions"):
        if key in data:
            out[key] = check_text(data[key], f"{label}: {key}", _LIMITS[key], multiline=key == "instructions")
    if "points" in data:
        out["points"] = _points(data["points"], label)
    for key in ("name_line", "on_paper"):
        if key in data:
            if not isinstance(data[key], bool):
                raise BadValueError(f"{label}: {key} must be true or false")
            out[key] = data[key]
    if "paper" in data:
        if data["paper"] not in PAPERS:
            raise BadValueError(f"{label}: paper must be one of {', '.join(PAPERS)}, not {data['paper']!r}")
        out["paper"] = data["paper"]
    return Sheet(**out)


#: The separators a roster may use: comma, semicolon (spreadsheets in locales with a decimal comma), tab.
ROSTER_SEPARATORS = (",", ";", "\t")
_SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}


def _roster_text(path, label: str) -> str:
    """A roster's text: UTF-8 (with or without Excel's byte-order mark) or UTF-16 with its mark (Excel's
    "Unicode text")."""
    data = read_user_bytes(path, "roster", ROSTER_BYTES)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise BadValueError(f"roster {label} starts like UTF-16 text but is not; save it as CSV UTF-8") from None
    return read_user_file(path, "roster", ROSTER_BYTES)


def _roster_rows(text: str, label: str) -> tuple[str, list[list[str]]]:
    """(separator, non-blank rows): the first of :data:`ROSTER_SEPARATORS` whose header has an ``id`` column,
    else the one that splits the header into most columns (the caller then names what is missing)."""
    best: tuple[int, str, list[list[str]]] | None = None
    for sep in ROSTER_SEPARATORS:
        try:
            rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=sep))
        except csv.Error as exc:
            raise BadValueError(f"roster {label} is not valid CSV: {exc}") from None
        rows = [r for r in rows if any(cell.strip() for cell in r)]
        if not rows:
            return sep, rows
        if "id" in (h.strip().lower() for h in rows[0]):
            return sep, rows
        if best is None or len(rows[0]) > best[0]:
            best = (len(rows[0]), sep, rows)
    return best[1], best[2]


def read_roster(path) -> list[tuple[str, str | None]]:
    """``(id, name or None)`` for every student of a CSV roster, in file order.

    The first row is the header; it must have an ``id`` column and may have ``name`` (other columns
    are ignored). Columns are separated by commas, semicolons or tabs (whichever gives the header its
    ``id`` column), as spreadsheets export them; a byte-order mark is dropped. A row with more fields
    than the header is refused (an unquoted separator in a name). Ids name folders, so they are letters,
    digits, ``.``, ``_`` and ``-`` (64 at most); an id twice, an empty id, or more than
    :data:`MAX_VARIANTS` students are refused.
    """
    label = file_label(path)
    sep, rows = _roster_rows(_roster_text(path, label), label)
    if not rows:
        raise BadValueError(f"roster {label} is empty; write a header line 'id,name' and one line per student")
    header = [h.strip().lower() for h in rows[0]]
    if "id" not in header:
        shown = ", ".join(header)[:80]
        raise BadValueError(f"roster {label} has no 'id' column in its header ({shown}); the first line must name "
                            "the columns, e.g. 'id,name' (columns separated by commas, semicolons or tabs)")
    i_id, i_name = header.index("id"), header.index("name") if "name" in header else None
    students: list[tuple[str, str | None]] = []
    seen: dict[str, int] = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) > len(header):  # an unquoted comma in a name would cut it, or shift the columns
            raise BadValueError(f"roster {label}, line {line} has {len(row)} fields but the header names "
                                f"{len(header)}; put a name that holds a {_SEPARATOR_NAMES[sep]} in double quotes "
                                f"(\"Diaz{sep if sep != chr(9) else ','} Carol\")")
        sid = row[i_id].strip() if i_id < len(row) else ""
        if not VARIANT_ID.fullmatch(sid):
            shown = sid if sid.isprintable() else repr(sid)
            raise BadValueError(f"roster {label}, line {line}: id {shown[:70]!r} is not usable; ids are 1 to 64 "
                                "letters, digits, '.', '_' or '-', starting with a letter or digit")
        if sid.lower() in seen:
            raise BadValueError(f"roster {label}, line {line}: id {sid!r} is already on line {seen[sid.lower()]}; "
                                "every student needs their own id")
        seen[sid.lower()] = line
        name = row[i_name].strip() if i_name is not None and i_name < len(row) else ""
        students.append((sid, check_text(name, f"roster {label}, line {line}: name") or None))
        if len(students) > MAX_VARIANTS:
            raise BadValueError(f"roster {label} has more than {MAX_VARIANTS} students; split the class")
    if not students:
        raise BadValueError(f"roster {label} has a header but no students")
    return students


# -- names in the LaTeX sheets ---------------------------------------------------------------------------------

#: What a user can do when the LaTeX sheets cannot print some names.
UNTYPESET_HELP = ("the LaTeX and PDF sheets name only their variant, the student's id: pdflatex's fonts here "
                  "(T1, Latin Modern) have no Cyrillic, Greek or CJK letters. The HTML and Markdown sheets and the "
                  "manifest show every name; for a PDF with the names, print the HTML sheets to PDF from a browser")
#: Latin-1 and Latin Extended-A: what T1 encodes when LaTeX's own tables cannot be read
_FALLBACK = frozenset(range(0x20, 0x7F)) | frozenset(range(0xA0, 0x180))


@functools.cache
def _tex_code_points() -> frozenset[int]:
    """The characters pdflatex typesets with ``[utf8]{inputenc}`` and ``[T1]{fontenc}`` here: ASCII and
    whatever LaTeX's T1 and TS1 tables (t1enc.dfu, ts1enc.dfu) map."""
    kpsewhich = shutil.which("kpsewhich")
    if kpsewhich is None:
        return _FALLBACK
    try:
        found = subprocess.run([kpsewhich, "t1enc.dfu", "ts1enc.dfu"], capture_output=True, text=True, timeout=20,
                               check=False).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return _FALLBACK
    points = set(range(0x20, 0x7F))
    for name in found:
        try:
            text = Path(name).read_text(encoding="latin-1")
        except OSError:
            continue
        points |= {int(h, 16) for h in re.findall(r"\\DeclareUnicodeCharacter\{([0-9A-Fa-f]{4,6})\}", text)}
    return frozenset(points) if len(points) > 0x7F - 0x20 else _FALLBACK


def tex_can_set(text: str) -> bool:
    """Whether pdflatex with the sheets' fonts can typeset every character of ``text``.

    >>> tex_can_set("Zoë Łukasiewicz"), tex_can_set("Дмитрий Иванов"), tex_can_set("李雷")
    (True, False, False)
    """
    points = _tex_code_points()
    return all(ord(c) in points for c in text)


def tex_student(student: str | None) -> str | None:
    """A student's name as the LaTeX sheets print it: the name, or None (the sheet then names only its variant,
    the student's id, and a name line stays blank) when the fonts lack one of its letters."""
    return student if student is None or tex_can_set(student) else None


def untypeset_students(variants) -> list[tuple[str, str]]:
    """``(id, name)`` of every variant whose student's name the LaTeX sheets cannot print."""
    return [(v.id, v.student) for v in variants if v.student is not None and not tex_can_set(v.student)]
