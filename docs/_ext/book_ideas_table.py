"""The book's ideas index (``docs/reference/book_ideas.toml``) read and written out as reST, without Sphinx.

:mod:`book_ideas` turns what these functions return into the page ``reference/ideas``; the tests call them too,
so the counts the page prints are the ones the table holds. Each row names where an idea lives: quantities
(linked with the ``:quantity:`` role), generators (``:generator:``), book figures, plot kinds, commands and
pages of this manual (``docs``: a section label, linked with ``:ref:``).
"""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

__all__ = ["TABLE", "STATUSES", "KINDS", "PLACES", "FIELDS", "load", "rows", "counts", "counts_text",
           "summary_lines", "chapter_lines", "open_lines"]

#: The table, beside the page that shows it.
TABLE = Path(__file__).resolve().parent.parent / "reference" / "book_ideas.toml"
STATUSES = ("covered", "partial", "absent")
KINDS = ("formula", "threshold", "rule", "fact", "figure", "problem", "concept")
#: The keys of a row that name places in scalemath, in the order the page lists them.
PLACES = ("quantities", "generators", "figures", "plots", "commands", "docs")
FIELDS = frozenset({"idea", "kind", "status", "missing", *PLACES})


def load(path: Path = TABLE) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def rows(table: dict, chapter: str | None = None) -> list[tuple[str, str, dict]]:
    """(chapter, section, idea) for every idea, in the file's order; one chapter's if ``chapter`` is given."""
    return [(s["chapter"], s["name"], idea) for s in table["section"] for idea in s["ideas"]
            if chapter is None or s["chapter"] == chapter]


def counts(table: dict, chapter: str | None = None) -> Counter:
    return Counter(idea["status"] for _, _, idea in rows(table, chapter))


def counts_text(table: dict) -> str:
    c = counts(table)
    return (f"{sum(c.values())} ideas from {len(table['chapters'])} chapters: {c['covered']} covered, "
            f"{c['partial']} partial, {c['absent']} absent.")


def _escape(text: str) -> str:
    """``text`` as literal reST inline text."""
    return "".join("\\" + ch if ch in "\\*`|_[]<>:" else ch for ch in text)


def _places(idea: dict) -> str:
    parts = [f":quantity:`{q}`" for q in idea.get("quantities", ())]
    parts += [f":generator:`{g}`" for g in idea.get("generators", ())]
    parts += [f"``plot --book-figure {f}``" for f in idea.get("figures", ())]
    parts += [f"``plot {p}``" for p in idea.get("plots", ())]
    parts += [f"``{c}``" for c in idea.get("commands", ())]
    parts += [f":ref:`{d}`" for d in idea.get("docs", ())]
    return ", ".join(parts) or "(nowhere yet)"


def _status(idea: dict) -> str:
    if idea["status"] == "covered":
        return "covered"
    return f"**{idea['status']}**: {_escape(idea['missing'])}"


def _ordered(table: dict) -> list[str]:
    return sorted(table["chapters"], key=lambda name: table["chapters"][name]["part"])


def summary_lines(table: dict) -> list[str]:
    """The whole table's counts, then a table of chapters with theirs."""
    lines = [counts_text(table), "", ".. list-table::", "   :header-rows: 1", "",
             "   * - part", "     - chapter", "     - ideas", "     - covered", "     - partial", "     - absent"]
    for name in _ordered(table):
        c = counts(table, name)
        lines += [f"   * - {table['chapters'][name]['part']}", f"     - {_escape(table['chapters'][name]['title'])} "
                  f"(``{name}.md``)", f"     - {sum(c.values())}", f"     - {c['covered']}", f"     - {c['partial']}",
                  f"     - {c['absent']}"]
    return lines


def chapter_lines(table: dict, chapter: str) -> list[str]:
    """One chapter's ideas as a table: section (on its first row), idea, where it lives, status."""
    c = counts(table, chapter)
    lines = [f"``{chapter}.md``: {sum(c.values())} ideas, {c['covered']} covered, {c['partial']} partial, "
             f"{c['absent']} absent.", "", ".. list-table::", "   :header-rows: 1", "   :widths: 18 34 32 16", "",
             "   * - section", "     - idea", "     - where it lives", "     - status"]
    previous = None
    for _, section, idea in rows(table, chapter):
        shown = _escape(section) if section != previous else ""
        previous = section
        lines += [f"   * - {shown}", f"     - {_escape(idea['idea'])} ({idea['kind']})",
                  f"     - {_places(idea)}", f"     - {_status(idea)}"]
    return lines


def open_lines(table: dict) -> list[str]:
    """Every partial and absent idea, with what is missing: the work that remains."""
    lines = []
    for status in ("partial", "absent"):
        for chapter, section, idea in rows(table):
            if idea["status"] == status:
                lines.append(f"- **{status}** ``{chapter}.md``, {_escape(section)}: {_escape(idea['idea'])}. "
                             f"Missing: {_escape(idea['missing'])}")
    return lines
