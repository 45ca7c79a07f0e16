"""Font subsets for PDF figures, made once: matplotlib's PDF writer embeds each TrueType font as a subset that
fontTools makes by parsing the whole font file (about 0.1 s). Here every figure's subset of a font holds one common
repertoire (printable ASCII and the signs figures use: µ, ×, −, a thin space, ...) together with the glyphs the
figure uses, so nearly every figure asks for the same subset; it is made once per font, kept in this process and
between runs in scalemath's persistent cache (kind ``fontsubset``, keyed by the font file, the glyphs and the
versions of fontTools and matplotlib), and every PDF that embeds it shows its text as before: the widths and the
character map a PDF writes are those of the glyphs it uses.
"""

from __future__ import annotations

import contextlib
import functools
import os

__all__ = ["subsets_remembered", "COMMON"]

#: The characters every subset holds: printable ASCII, and the signs and letters of figures' labels and notes.
COMMON = "".join(map(chr, range(0x20, 0x7F))) + ("\u00b5\u00d7\u00b7\u00b0\u00b2\u00b3\u2009\u2212\u2013\u2014"
                                                  "\u2026\u2248\u2264\u2265\u2192\u03b1\u03b2\u03bc")


#: Font subsets made for PDFs in this process: (font file, face, size, change time, glyphs) -> (the subset font's
#: bytes, the map from the font's glyph indices to the subset's).
_SUBSETS: dict[tuple, tuple[bytes, dict]] = {}
_MAX_SUBSETS = 64


class _SavedFont:
    """A subset font already saved: what matplotlib's PDF writer asks of one (``save`` into a file object)."""

    def __init__(self, data: bytes):
        self.data = data

    def save(self, file, reorderTables=False) -> None:  # noqa: N803 - fontTools' name
        file.write(self.data)


@contextlib.contextmanager
def subsets_remembered():
    """Inside: matplotlib's PDF writer asks for a subset of the glyphs a figure uses and gets one of those glyphs
    and :data:`COMMON`, made by fontTools once and remembered (the same bytes either way: fontTools sets no date in
    it). Used where the writer takes this shape (matplotlib >= 3.11: a context manager holding the subset font and
    the glyph map); any other version subsets as it always did."""
    from matplotlib.backends import _backend_pdf_ps as pdf_ps

    made = getattr(pdf_ps, "get_glyphs_subset", None)
    results = getattr(pdf_ps, "SubsetResults", None)
    saved = getattr(pdf_ps, "font_as_file", None)
    if made is None or results is None or saved is None or getattr(made, "remembers", False):
        yield
        return

    def remembered(fontfile, glyphs):
        path = os.fspath(fontfile)
        info = os.stat(path)
        face = getattr(fontfile, "face_index", 0)
        glyphs = frozenset(glyphs) | _common_glyphs(path, face, info.st_size, info.st_mtime_ns)
        key = (path, face, info.st_size, info.st_mtime_ns, glyphs)
        hit = _SUBSETS.get(key)
        if hit is None:
            hit = _stored_subset(key)
            if hit is None:
                with made(fontfile, glyphs) as subset:
                    hit = (saved(subset.font).getvalue(), dict(subset.glyph_index_map))
                _store_subset(key, hit)
            if len(_SUBSETS) >= _MAX_SUBSETS:
                _SUBSETS.clear()
            _SUBSETS[key] = hit
        return contextlib.nullcontext(results(_SavedFont(hit[0]), dict(hit[1])))

    remembered.remembers = True
    pdf_ps.get_glyphs_subset = remembered
    try:
        yield
    finally:
        pdf_ps.get_glyphs_subset = made


def _subset_key(key: tuple) -> str:
    """The persistent cache's key of a subset: the font file as :func:`subsets_remembered` names it, its glyphs,
    and the versions of fontTools and matplotlib that made it (the cache's own key covers scalemath's code only)."""
    import fontTools
    import matplotlib

    path, face, size, mtime, glyphs = key
    return (f"fontTools {fontTools.version} matplotlib {matplotlib.__version__} {path!r} face {face} size {size} "
            f"mtime {mtime} glyphs {sorted(glyphs)!r}")


def _stored_subset(key: tuple) -> tuple[bytes, dict] | None:
    """A subset an earlier run made (scalemath's persistent cache, authenticated), or None."""
    from .. import cache

    found = cache.load("fontsubset", _subset_key(key))
    if (isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], bytes) and isinstance(found[1], dict)
            and all(type(k) is int and type(v) is int for k, v in found[1].items())):
        return found
    return None


def _store_subset(key: tuple, hit: tuple[bytes, dict]) -> None:
    from .. import cache

    cache.store("fontsubset", _subset_key(key), hit)


@functools.lru_cache(maxsize=16)
def _common_glyphs(path: str, face: int, size: int, mtime: int) -> frozenset[int]:
    """The glyph indices of :data:`COMMON`'s characters in the font (those it has), read from its character map."""
    from fontTools.ttLib import TTFont

    with TTFont(path, fontNumber=face, lazy=True) as font:
        cmap = font.getBestCmap() or {}
        return frozenset(font.getGlyphID(cmap[ord(c)]) for c in COMMON if ord(c) in cmap)
