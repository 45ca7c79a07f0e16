"""The book's ideas index, generated at build time from ``docs/reference/book_ideas.toml``.

``.. book-ideas-counts::`` writes how many ideas the table holds and how many are covered, partial and absent,
overall and per chapter; ``.. book-ideas:: CHAPTER`` writes one chapter's ideas as a table, each with the
quantities (linked to their reference entries), generators, figures, plot kinds and commands where it lives;
``.. book-ideas-open::`` lists the partial and absent ideas with what each is missing. The reST comes from
:mod:`book_ideas_table`, which the tests read too.
"""

from __future__ import annotations

from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

import book_ideas_table as table

__all__ = ["setup"]


class _Directive(SphinxDirective):
    def _parse(self, lines: list[str], what: str):
        self.env.note_dependency(str(table.TABLE))
        return nested_parse_to_nodes(self.state, "\n".join(lines), source=f"<book ideas {what}>",
                                     allow_section_headings=False)


class BookIdeasCounts(_Directive):
    def run(self):
        return self._parse(table.summary_lines(table.load()), "counts")


class BookIdeas(_Directive):
    required_arguments = 1

    def run(self):
        data = table.load()
        chapter = self.arguments[0]
        if chapter not in data["chapters"]:
            raise ExtensionError(f"book-ideas: no chapter {chapter!r} in {table.TABLE.name}")
        return self._parse(table.chapter_lines(data, chapter), chapter)


class BookIdeasOpen(_Directive):
    def run(self):
        return self._parse(table.open_lines(table.load()), "open")


def setup(app):
    app.add_directive("book-ideas-counts", BookIdeasCounts)
    app.add_directive("book-ideas", BookIdeas)
    app.add_directive("book-ideas-open", BookIdeasOpen)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
