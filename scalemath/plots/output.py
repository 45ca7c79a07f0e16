"""Saving a figure: format from the suffix, bytes that depend only on the figure, never over a user's file.

Every file carries a digest in its metadata (SVG ``dc:identifier``, PNG ``tEXt`` chunk, PDF ``/Subject``):
``scalemath-plot sha256:<hex>``, the sha256 of the file with those 64 hex digits written as zeros. A file
at ``--plot`` / ``--out`` is replaced only with ``--force``, and then only when it carries a digest that
still matches: scalemath wrote it and nobody changed it since (as problem sets treat their folders).
The file is written by the one safe writer (:func:`scalemath.files.write_file`), which asks again
just before the swap.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import struct
import zlib
from pathlib import Path

from ..errors import BadValueError, OutputExistsError, ScalemathError
from ..files import FileAppearedError, file_label, read_user_bytes, write_file
from .common import FORMATS, _STYLE, Figure, _pyplot, render
from . import fontsubset

__all__ = ["save", "check_target", "figure_bytes", "plot_format", "written_by_scalemath", "TAG"]

TAG = b"scalemath-plot sha256:"
_ZEROS = b"0" * 64
_DIGEST = re.compile(re.escape(TAG) + b"([0-9a-f]{64})")
MAX_OWN_BYTES = 64 * 2**20  # a file larger than this is not a plot scalemath wrote


def plot_format(path: str | os.PathLike, option: str = "--plot") -> str:
    """``png``, ``svg`` or ``pdf`` from the file's suffix; a clear error for anything else."""
    suffix = Path(os.fspath(path)).suffix.lower()
    if suffix not in FORMATS:
        raise BadValueError(f"{option} {file_label(path)}: the file name must end in .png, .svg or .pdf "
                            f"(the suffix sets the format), not {suffix or 'nothing'!r}")
    return FORMATS[suffix]


def _png_fix_crc(data: bytes, at: int) -> bytes:
    """``data`` with the CRC of the PNG chunk holding byte ``at`` recomputed."""
    pos = 8
    while pos < len(data):
        length = struct.unpack(">I", data[pos:pos + 4])[0]
        end = pos + 8 + length
        if pos <= at < end:
            crc = zlib.crc32(data[pos + 4:end]) & 0xFFFFFFFF
            return data[:end] + struct.pack(">I", crc) + data[end + 4:]
        pos = end + 4
    return data


def _with_digest(data: bytes, fmt: str, digest: bytes) -> bytes:
    m = _DIGEST.search(data)
    out = data[:m.start(1)] + digest + data[m.end(1):]
    return _png_fix_crc(out, m.start(1)) if fmt == "png" else out


_META = {"svg": lambda title: {"Date": None, "Creator": "scalemath", "Title": title},
         "png": lambda title: {"Software": "scalemath", "Title": title},
         "pdf": lambda title: {"CreationDate": None, "ModDate": None, "Creator": "scalemath", "Producer": "scalemath",
                               "Title": title}}


def saved_bytes(figure: Figure, fmt: str, extra: dict | None = None, style: dict | None = None,
                before=None) -> bytes:
    """``figure`` drawn and saved as ``fmt`` with deterministic metadata (no dates, no random PDF /ID), so the
    same figure always gives the same bytes. ``extra`` adds metadata, ``style`` rc settings over the
    house style, and ``before(fig)`` runs on the drawn figure inside them, before saving."""
    return saved_files(figure, (fmt,), {fmt: extra or {}}, style, before)[fmt]


def saved_files(figure: Figure, fmts, extra: dict | None = None, style: dict | None = None,
                before=None) -> dict[str, bytes]:
    """:func:`saved_bytes` in each of ``fmts`` (``extra`` maps a format to its added metadata) from one drawing,
    laid out once: the constrained layout is worked out before saving, the same way whichever formats are
    asked for, so a file's bytes never depend on what was saved with it."""
    plt = _pyplot()
    fig = render(figure)
    out: dict[str, bytes] = {}
    try:
        with plt.rc_context({**_STYLE, **(style or {})}):
            _no_ligatures(fig)
            if before is not None:
                before(fig)
            engine = fig.get_layout_engine()
            if engine is not None:  # places the axes, for good: no save lays the figure out again. The layout
                engine.execute(fig)  # alone (draw_without_rendering also walks every artist: the same bytes, slower)
            with plt.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}), \
                    fontsubset.subsets_remembered():
                fig.set_layout_engine(None)  # (savefig sets the engine back when done: to None in here)
                for fmt in fmts:
                    buffer = io.BytesIO()
                    fig.savefig(buffer, format=fmt,
                                metadata={**_META[fmt](figure.title), **(extra or {}).get(fmt, {})})
                    data = buffer.getvalue()
                    if fmt == "pdf":  # the trailer's /ID is random unless the environment fixes it
                        data = re.sub(rb"/ID \[ *<[0-9a-fA-F]+> *<[0-9a-fA-F]+> *\]",
                                      lambda m: b" " * len(m.group(0)), data)
                    out[fmt] = data
    finally:
        plt.close(fig)
    return out


def _no_ligatures(fig) -> None:
    """The letters of every text as letters: matplotlib 3.11 shapes text, and puts a ligature ("fl", "ff") into a
    second embedded copy of the font in a PDF, subset again: about 0.2 s more per figure, for a look no reader of
    a plot misses. (Tick labels, made while drawing, are numbers and units.)"""
    from matplotlib.axis import Axis
    from matplotlib.text import Text

    def texts(artist):
        for child in artist.get_children():
            if isinstance(child, Text):
                yield child
            if isinstance(child, Axis):  # its label only: asking an axis for its children makes all its ticks
                yield child.label
            else:
                yield from texts(child)

    for text in texts(fig):
        if hasattr(text, "set_fontfeatures"):  # matplotlib >= 3.11; earlier versions set no ligatures
            text.set_fontfeatures(["-liga"])


def figure_bytes(figure: Figure, fmt: str) -> bytes:
    """The file's bytes: deterministic metadata (no dates), the digest filled in."""
    marker = (TAG + _ZEROS).decode()
    extra = {"svg": {"Identifier": marker}, "png": {"Comment": marker}, "pdf": {"Subject": marker}}[fmt]
    data = saved_bytes(figure, fmt, extra)
    return _with_digest(data, fmt, hashlib.sha256(data).hexdigest().encode())


def written_by_scalemath(path: str | os.PathLike) -> bool:
    """True when ``path`` is a regular file (not a link) carrying a digest that matches its bytes."""
    try:
        data = read_user_bytes(path, "plot", MAX_OWN_BYTES, follow_links=False)
    except ScalemathError:
        return False
    m = _DIGEST.search(data)
    if m is None:
        return False
    fmt = "png" if data.startswith(b"\x89PNG") else "other"
    blank = _with_digest(data, fmt, _ZEROS)
    return hashlib.sha256(blank).hexdigest().encode() == m.group(1)


def check_target(path: str | os.PathLike, force: bool = False, option: str = "--plot") -> str:
    """The format of ``path``, once it is known that the file may be written (call it before long work)."""
    fmt = plot_format(path, option)
    label = file_label(path)
    if os.path.lexists(path):
        if not force:
            raise OutputExistsError(f"{label} already exists; pass --force to replace a plot scalemath wrote, "
                                    f"or give {option} another file")
        if not written_by_scalemath(path):
            raise OutputExistsError(f"{label} exists and is not a plot scalemath wrote (or was changed since); "
                                    "it is left alone: choose another file name")
    return fmt


def save(figure: Figure, path: str | os.PathLike, force: bool = False, option: str = "--plot") -> Path:
    """Write ``figure`` to ``path`` in the format its suffix names; return the path."""
    fmt = check_target(path, force, option)
    out = Path(os.fspath(path))
    label = file_label(out)
    data = figure_bytes(figure, fmt)
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScalemathError(f"cannot create the folder {file_label(parent)} for {option}: "
                             f"{exc.strerror or exc}; choose another path") from None
    try:
        write_file(out, data, replace=written_by_scalemath if force else None, what="plot")
    except FileAppearedError:
        raise OutputExistsError(f"{label} appeared or changed while the plot was drawn, and scalemath did not "
                                "write it; it is left alone") from None
    return out
