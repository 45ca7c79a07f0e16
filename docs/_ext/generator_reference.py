"""The generator reference, generated at build time: every problem generator with a sample problem and its key.

``.. generator-reference:: TOPIC`` writes one entry per registered generator of that topic: its title, its
source in the book, the answers it asks for, and the problem and worked key it draws with seed 1, exactly as
``scalemath problems generate --seed 1`` writes them into ``problems.html`` and ``solutions.html`` (that
command draws one problem from each generator; ``--generator NAME --seed 1`` draws the same one alone).
The set is made once per build, in a temporary folder that is removed as soon as it is read.
``.. generator-topics::`` lists the topics with their counts.

Each entry is a ``generator`` object (``:generator:`critical_intensity``` links to it; its HTML anchor is
``generator-<name>``, which the tests count against the registry). Builders other than HTML get one line.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

import sm_cli
from quantity_reference import HTML_BUILDERS, escape

__all__ = ["setup", "SEED"]

SEED = 1


@functools.cache
def registered() -> dict[str, tuple[str, str, str]]:
    """(topic, title, source) of every registered generator, by name, sorted."""
    from scalemath.problems.registry import generators

    return {name: (g.topic, g.title, g.source) for name, g in generators().items()}


@functools.cache
def topics() -> dict[str, str]:
    from scalemath.problems.registry import TOPICS

    return dict(TOPICS)


def _sections(html: str) -> dict[str, str]:
    """The ``<section id="...">`` blocks of a set's HTML, by id."""
    return {m.group(1): m.group(2) for m in re.finditer(r'<section id="([^"]+)">\n(.*?)</section>', html, re.S)}


@functools.cache
def sample_set() -> tuple[dict, dict[str, str], dict[str, str]]:
    """(manifest, problem HTML by id, key HTML by id) of ``problems generate --seed 1``."""
    with tempfile.TemporaryDirectory(prefix="scalemath-docs-") as folder:
        out = Path(folder) / "set"
        sm_cli.run_ok(["problems", "generate", "--seed", str(SEED), "--format", "html,json", "--out", str(out),
                       "--jobs", "1"])
        manifest = json.loads((out / "manifest.json").read_text())
        problems = _sections((out / "problems.html").read_text())
        keys = _sections((out / "solutions.html").read_text())
    return manifest, problems, keys


def _without_heading(block: str) -> str:
    return re.sub(r"^<h2>.*?</h2>\n", "", block, count=1, flags=re.S)


def _key_only(block: str) -> str:
    """What follows the statement in the key: the worked solution and the answers."""
    at = block.find("<h3>Solution</h3>")
    if at < 0:
        raise ExtensionError("the key of a sample problem has no 'Solution' heading")
    return block[at + len("<h3>Solution</h3>"):]


def _raw(html: str, css: str) -> list[str]:
    return [".. raw:: html", "", f'   <div class="sm-problem {css}">',
            *("   " + line if line.strip() else "" for line in html.strip().splitlines()), "   </div>", ""]


def _answer(a: dict) -> str:
    unit = "" if a.get("unit") in (None, "", "1") else f" in {a['unit']}"
    kind = a.get("kind")
    if kind == "choice":
        how = "a choice"
    elif kind == "expression":
        how = "a formula"
    elif kind == "whole":
        how = f"a whole count{unit}"
    else:
        tol = a.get("rel_tol")
        how = f"a number{unit}" + (f" within {tol * 100:g} %" if tol else "")
    return f"``{a['name']}``, {escape(how)}: {escape(a['description'])}"


def entry(name: str) -> list[str]:
    topic, title, source = registered()[name]
    manifest, problems, keys = sample_set()
    found = [p for p in manifest["problems"] if p["generator"] == name]
    if not found:
        raise ExtensionError(f"the sample set of seed {SEED} has no problem of generator {name}")
    p = found[0]
    heading = f"``{name}``: {escape(title)}"
    return [f".. generator:: {name}", "", heading, "~" * len(heading), "",
            f"Source: {escape(source)}.", "", "Asks for:", "", *(f"- {_answer(a)}" for a in p["answers"]), "",
            f"This problem is what ``scalemath problems generate --generator {name} --seed {SEED}`` draws.", "",
            ".. rubric:: Problem", "", *_raw(_without_heading(problems[p["id"]]), "sm-sheet"),
            ".. rubric:: Key", "", *_raw(_key_only(keys[p["id"]]), "sm-key")]


class GeneratorReference(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        topic = self.arguments[0]
        if topic not in topics():
            raise self.error(f"unknown topic {topic!r}: one of {', '.join(topics())}")
        if self.env.app.builder.name not in HTML_BUILDERS:
            return [nodes.paragraph(text=f"The {topic} generators are listed in the HTML build.")]
        lines = []
        for name, (t, _, _) in registered().items():
            if t == topic:
                lines += entry(name)
        return nested_parse_to_nodes(self.state, "\n".join(lines), source=f"<generators {topic}>",
                                     allow_section_headings=True)


class GeneratorTopics(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 20 60 20", "",
                 "   * - topic", "     - what it covers", "     - generators"]
        names = registered()
        for topic, covers in topics().items():
            count = sum(1 for t, _, _ in names.values() if t == topic)
            lines += [f"   * - :doc:`{topic} <{topic}>`", f"     - {escape(covers)}", f"     - {count}"]
        lines += ["   * - all", "     -", f"     - {len(names)}"]
        return nested_parse_to_nodes(self.state, "\n".join(lines), source="<generator topics>")


def setup(app):
    app.add_crossref_type("generator", "generator", objname="problem generator")
    app.add_directive("generator-reference", GeneratorReference)
    app.add_directive("generator-topics", GeneratorTopics)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
