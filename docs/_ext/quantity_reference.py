"""The quantity reference, generated at build time from the registry.

``.. quantity-reference:: TOPIC`` writes one entry per registered quantity of that topic, grouped by the
first part of its name (``roofline.``, ``matmul.``, ...): its closed form and steps (LaTeX, rendered by
Sphinx's math; taken from ``scalemath derive ... --format json``), its parameters with meaning, unit and what binds them, its source in the book, and a
worked example that ``scalemath derive`` computes during the build on a real chip (see
:mod:`quantity_examples`). ``.. quantity-topics::`` lists the topics with their counts.

Each entry is a ``quantity`` object: ``:quantity:`roofline.critical_intensity``` links to it from any page,
and its HTML anchor is ``quantity-<name>``, which the tests count against the registry.

Builders other than HTML (the doctest builder reads every page too) get one line instead of the entries:
they would run every derivation for nothing.
"""

from __future__ import annotations

import functools

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

import quantity_examples
import sm_cli

__all__ = ["setup"]

#: The registry's topics in reading order, with a heading each.
TOPICS = {
    "roofline": "Rooflines and matmuls",
    "tpu": "TPUs",
    "collectives": "Collectives on TPU tori",
    "jax": "The JAX chapter: shard_map collectives and collective matmuls",
    "gpu": "GPUs",
    "transformer": "Transformer parameters, FLOPs and memory",
    "parallelism": "Parallelism for training",
    "inference": "Inference and serving",
}
HTML_BUILDERS = frozenset({"html", "dirhtml", "singlehtml"})
DTYPE_OPTIONS = {"b_x": "``--dtype``", "b_o": "``--dtype``", "b_w": "``--weight-dtype``, else ``--dtype``",
                 "b_kv": "``--kv-dtype``, else ``--dtype``", "C": "``--chip`` and ``--dtype``",
                 "W": "``--chip`` and ``--level``"}


def escape(text: str) -> str:
    """``text`` as literal reST inline text: every character that could start markup is escaped."""
    return "".join("\\" + c if c in "\\*`|_[]<>:" else c for c in text)


@functools.cache
def symbol_latex() -> dict[str, str]:
    """Each parameter's LaTeX, by name, as the registry declares it."""
    from scalemath import quantities

    return {p.name: p.info.latex for q in quantities.QUANTITIES.values() for p in q.params}


def _bound_by(name: str, from_chip: bool) -> str:
    if not from_chip:
        return "``--set``"
    if name in quantity_examples.MODEL_BOUND:
        return "``--model``"
    return DTYPE_OPTIONS.get(name, "``--chip``")


def _math(tex: str) -> str:
    return f":math:`{tex}`"


def _indent(text: str, by: str = "   ") -> list[str]:
    return [by + line if line.strip() else "" for line in text.splitlines()]


def entry(q: dict) -> list[str]:
    """The reST of one quantity's entry (a section at the third level)."""
    name, latex = q["name"], symbol_latex()
    example = quantity_examples.example(q)
    sym = example.report  # the closed form and steps are the same with or without the example's values
    unit = "dimensionless" if q["unit"] == "1" else q["unit"]
    title = f"``{name}``"
    lines = [f".. quantity:: {name}", "", title, "~" * len(title), "",
             f"{escape(q['title'][:1].upper() + q['title'][1:])} [{escape(unit)}]. "
             f"Source: {escape(q['source'])}.", "",
             ".. math::", "", f"   {sym['steps'][-1]['label']} = {sym['latex']}" if sym["steps"] else f"   {sym['latex']}",
             ""]
    if len(sym["steps"]) > 1:
        lines += ["Steps:", ""]
        for s in sym["steps"]:
            lines += [f"#. {escape(s['why'])}", "", "   .. math::", "      :class: sm-step", "",
                      f"      {s['label']} = {s['latex']}", ""]
    elif sym["steps"]:
        lines += [f"Why: {escape(sym['steps'][0]['why'])}.", ""]
    if q["params"]:
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 14 56 14 16", "   :class: sm-params", "",
                  "   * - symbol", "     - meaning", "     - unit", "     - from"]
        for p in q["params"]:
            tex = latex.get(p["name"], p["name"])
            lines += [f"   * - {_math(tex)}" + ("" if tex == p["name"] else f" (``{p['name']}``)"),
                      f"     - {escape(p['meaning'])}", f"     - {escape(p['unit'])}",
                      f"     - {_bound_by(p['name'], p['from_chip_or_dtype'])}"]
        lines.append("")
        if q["uses_level"]:
            lines += ["``--level`` picks the bandwidth :math:`W` (``hbm`` by default).", ""]
    else:
        lines += ["No parameters: the value is a constant.", ""]
    lines += _example(q, example)
    return lines


def _example(q: dict, ex: quantity_examples.Example) -> list[str]:
    meaning = {p["name"]: p["meaning"] for p in q["params"]}
    where = []
    if ex.chip:
        where.append(f"on the {quantity_examples.CHIPS.get(ex.chip, ex.chip)} (``--chip {ex.chip}``)")
    if ex.model:
        where.append(f"for {quantity_examples.MODELS.get(ex.model, ex.model)} (``--model {ex.model}``)")
    text = "**Worked example** " + (" ".join(where) if where else "(no chip figure needed)") + "."
    bound = [f"``{n}``" for n in ex.bound]
    if bound:
        text += f" The {'chip, dtype and model' if ex.chip and ex.model else 'chip and dtype' if ex.chip else 'model'}"
        text += f" bind {', '.join(bound)}."
    if ex.given:
        parts = [f"``{n}`` = ``{v}`` ({escape(meaning[n])})" for n, v in ex.given.items()]
        text += " Set for this example with ``--set``, as no chip or model gives them: " + "; ".join(parts) + "."
    return [text, "", ".. code-block:: console", "", f"   $ scalemath {sm_cli.command_line(list(ex.args))}",
            *_indent(ex.output.rstrip("\n")), ""]


def topic_rst(topic: str) -> list[str]:
    """Every quantity of ``topic``, grouped by the first part of the name, in registry order."""
    groups: dict[str, list[dict]] = {}
    for q in sm_cli.quantities():
        if q["topic"] == topic:
            groups.setdefault(q["name"].split(".")[0], []).append(q)
    lines = []
    for prefix, qs in groups.items():
        heading = f"``{prefix}.*``"
        lines += [heading, "-" * len(heading), "", f"{len(qs)} quantit{'y' if len(qs) == 1 else 'ies'}.", ""]
        for q in qs:
            lines += entry(q)
    return lines


class QuantityReference(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        topic = self.arguments[0]
        if topic not in TOPICS:
            raise self.error(f"unknown topic {topic!r}: one of {', '.join(TOPICS)}")
        if self.env.app.builder.name not in HTML_BUILDERS:
            return [nodes.paragraph(text=f"The {topic} quantities are listed in the HTML build.")]
        return nested_parse_to_nodes(self.state, "\n".join(topic_rst(topic)), source=f"<quantities {topic}>",
                                     allow_section_headings=True)


class QuantityTopics(SphinxDirective):
    """A table of the topics: their page, how many quantities, the prefixes of their names."""

    has_content = False
    option_spec = {"pages": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        counts: dict[str, list[str]] = {t: [] for t in TOPICS}
        for q in sm_cli.quantities():
            counts.setdefault(q["topic"], []).append(q["name"])
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 40 10 50", "",
                 "   * - topic", "     - quantities", "     - names begin with"]
        for topic, names in counts.items():
            prefixes = ", ".join(f"``{p}.``" for p in dict.fromkeys(n.split(".")[0] for n in names))
            lines += [f"   * - :doc:`{TOPICS.get(topic, topic)} <{topic}>`", f"     - {len(names)}",
                      f"     - {prefixes}"]
        lines += ["   * - all", f"     - {sum(len(n) for n in counts.values())}", "     -"]
        return nested_parse_to_nodes(self.state, "\n".join(lines), source="<quantity topics>")


def setup(app):
    app.add_crossref_type("quantity", "quantity", objname="quantity")
    app.add_directive("quantity-reference", QuantityReference)
    app.add_directive("quantity-topics", QuantityTopics)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
