"""The book's ideas index (docs/reference/book_ideas.toml) against the live registries and its page.

Every quantity, generator, book figure, plot kind and command the table names must exist, so the index cannot
go stale; every chapter of the book has rows; statuses and kinds come from fixed sets; a covered idea names a
place and a partial or absent one says what is missing; the page shows every chapter and counts what the table
holds (counted here again from the raw file, not through the extension's own counter).
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

import click
import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import book_ideas_table as table  # noqa: E402  (docs/_ext is not a package)

RAW = tomllib.loads((DOCS / "reference" / "book_ideas.toml").read_text())
IDEAS = [(s["chapter"], s["name"], idea) for s in RAW["section"] for idea in s["ideas"]]
PAGE = (DOCS / "reference" / "ideas.rst").read_text()

#: The book's chapters, one per markdown file of jax-ml/scaling-book (index.md is its introduction).
BOOK_CHAPTERS = ("index", "roofline", "tpus", "sharding", "transformers", "training", "applied-training",
                 "inference", "applied-inference", "profiling", "jax-stuff", "conclusion", "gpus")


def _quantities():
    from scalemath.quantities import QUANTITIES

    return set(QUANTITIES)


def _generators():
    from scalemath.problems.registry import generators

    return set(generators())


def _figures():
    from scalemath.plots.book import FIGURES

    return set(FIGURES)


def _plots():
    from scalemath.cli.plot import plot_group

    return set(plot_group.commands)


def _command_exists(path: str) -> bool:
    """Whether ``path`` ("shard", "problems handson") is a command of the CLI."""
    from scalemath.cli import main

    command = main
    for word in path.split():
        if not isinstance(command, click.Group):
            return False
        command = command.get_command(click.Context(command), word)
        if command is None:
            return False
    return True


REGISTRIES = {"quantities": _quantities, "generators": _generators, "figures": _figures, "plots": _plots}


@pytest.mark.parametrize("place", sorted(REGISTRIES))
def test_every_name_is_registered(place):
    known = REGISTRIES[place]()
    unknown = sorted({(chapter, name) for chapter, _, idea in IDEAS for name in idea.get(place, ())
                      if name not in known})
    assert not unknown, f"{place} the index names but the registry lacks: {unknown}"


def test_every_command_exists():
    named = sorted({c for _, _, idea in IDEAS for c in idea.get("commands", ())})
    assert named, "the index names no command"
    assert [c for c in named if not _command_exists(c)] == []


def test_every_docs_label_exists():
    """A row's ``docs`` names a section label (``.. _label:``) of some page of the manual."""
    labels = {m for page in DOCS.rglob("*.rst") for m in re.findall(r"^\.\. _([\w-]+):$", page.read_text(), re.M)}
    named = sorted({d for _, _, idea in IDEAS for d in idea.get("docs", ())})
    assert named, "the index names no page of the manual"
    assert [d for d in named if d not in labels] == []


@pytest.mark.parametrize("path,exists", [("shard", True), ("problems handson", True), ("hardware show", True),
                                         ("problems nothing", False), ("shard handson", False),
                                         ("nothing", False)], ids=str)
def test_the_command_check_itself(path, exists):
    assert _command_exists(path) is exists


def test_every_chapter_of_the_book_has_rows():
    assert set(RAW["chapters"]) == set(BOOK_CHAPTERS)
    per_chapter = Counter(chapter for chapter, _, _ in IDEAS)
    assert {c: per_chapter[c] for c in BOOK_CHAPTERS if per_chapter[c] == 0} == {}
    assert {c for c, _, _ in IDEAS} <= set(BOOK_CHAPTERS)
    assert sorted(RAW["chapters"][c]["part"] for c in BOOK_CHAPTERS) == list(range(len(BOOK_CHAPTERS)))


def test_sections_follow_the_book_order():
    """Sections are grouped by chapter in part order, so the file reads like the book."""
    parts = [RAW["chapters"][s["chapter"]]["part"] for s in RAW["section"]]
    assert parts == sorted(parts)
    assert all(s["ideas"] for s in RAW["section"])


@pytest.mark.parametrize("chapter,section,idea", IDEAS,
                         ids=[f"{c}-{n}" for n, (c, _, _) in enumerate(IDEAS)])
def test_each_row(chapter, section, idea):
    assert set(idea) <= table.FIELDS, f"unknown keys {set(idea) - table.FIELDS}"
    assert idea["status"] in ("covered", "partial", "absent")
    assert idea["kind"] in ("formula", "threshold", "rule", "fact", "figure", "problem", "concept")
    assert idea["idea"].strip() and section.strip()
    places = [(key, name) for key in table.PLACES for name in idea.get(key, ())]
    assert len(places) == len(set(places)), "a place named twice"
    if idea["status"] == "covered":
        assert places, "a covered idea names where it lives"
        assert "missing" not in idea, "a covered idea lacks nothing"
    else:
        assert idea.get("missing", "").strip(), "a partial or absent idea says what is missing"
    if idea["status"] == "absent":
        assert not places, "an absent idea lives nowhere"


def test_no_idea_twice():
    seen = Counter((chapter, idea["idea"]) for chapter, _, idea in IDEAS)
    assert [k for k, n in seen.items() if n > 1] == []


def test_the_extension_reads_the_same_rows():
    assert [(c, s, i["idea"]) for c, s, i in table.rows(table.load())] == [(c, s, i["idea"]) for c, s, i in IDEAS]


def test_the_printed_counts_agree_with_the_table():
    by_status = Counter(idea["status"] for _, _, idea in IDEAS)
    sentence = table.counts_text(table.load())
    assert sentence == (f"{len(IDEAS)} ideas from 13 chapters: {by_status['covered']} covered, "
                        f"{by_status['partial']} partial, {by_status['absent']} absent.")
    summary = "\n".join(table.summary_lines(table.load()))
    for chapter in BOOK_CHAPTERS:
        c = Counter(idea["status"] for ch, _, idea in IDEAS if ch == chapter)
        row = [sum(c.values()), c["covered"], c["partial"], c["absent"]]
        cells = re.search(rf"\(``{re.escape(chapter)}\.md``\)\n((?:     - \d+\n?){{4}})", summary).group(1)
        assert [int(x) for x in re.findall(r"\d+", cells)] == row, chapter


def test_each_chapter_table_has_every_row():
    data = table.load()
    for chapter in BOOK_CHAPTERS:
        lines = table.chapter_lines(data, chapter)
        assert sum(1 for line in lines if line.startswith("   * - ")) == 1 + sum(1 for c, _, _ in IDEAS if c == chapter)


def test_the_open_list_holds_every_partial_and_absent_idea():
    lines = table.open_lines(table.load())
    assert len(lines) == sum(1 for _, _, idea in IDEAS if idea["status"] != "covered")
    assert all(line.startswith(("- **partial**", "- **absent**")) for line in lines)


def test_the_page_shows_every_chapter_in_order_and_the_counts():
    shown = re.findall(r"^\.\. book-ideas:: (\S+)$", PAGE, re.M)
    assert shown == sorted(BOOK_CHAPTERS, key=lambda c: RAW["chapters"][c]["part"])
    assert PAGE.count(".. book-ideas-counts::") == 1 and PAGE.count(".. book-ideas-open::") == 1
    index = (DOCS / "index.rst").read_text()
    assert "reference/ideas" in index


def test_text_is_escaped_for_rest():
    assert table._escape("W_ici * 2 [x] `y` a|b <c> d:e") == r"W\_ici \* 2 \[x\] \`y\` a\|b \<c\> d\:e"
