"""The quantity reference, generated at build time from the registry.

``.. quantity-reference:: TOPIC`` writes one entry per registered quantity of that topic, grouped by the
first part of its name (``roofline.``, ``matmul.``, ...): its closed form and steps (LaTeX from
``scalemath derive ... --format json``, rendered by Sphinx's math), its parameters with meaning, unit and what
binds them, its source in the book, and a worked example that ``scalemath derive`` computes during the build
on a real chip (see :mod:`quantity_examples`). ``.. quantity-topics::`` lists the topics with their counts.

Each entry is a ``quantity`` object: ``:quantity:`roofline.critical_intensity``` links to it from any page,
and its HTML anchor is ``std-quantity-<name>``, which the tests count against the registry.

Builders other than HTML (the doctest builder reads every page too) get one line instead of the entries:
they would run every derivation for nothing.
"""

from __future__ import annotations

import functools

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_id
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
#: What binds a parameter that a chip or dtype gives, as text parts (see ``_text``).
DTYPE_OPTIONS = {"b_x": [("code", "--dtype")], "b_o": [("code", "--dtype")],
                 "b_w": [("code", "--weight-dtype"), ", else ", ("code", "--dtype")],
                 "b_kv": [("code", "--kv-dtype"), ", else ", ("code", "--dtype")],
                 "C": [("code", "--chip"), " and ", ("code", "--dtype")],
                 "W": [("code", "--chip"), " and ", ("code", "--level")]}


def escape(text: str) -> str:
    """``text`` as literal reST inline text: every character that could start markup is escaped."""
    return "".join("\\" + c if c in "\\*`|_[]<>:" else c for c in text)


@functools.cache
def symbol_latex() -> dict[str, str]:
    """Each parameter's LaTeX, by name, as the registry declares it."""
    from scalemath import quantities

    return {p.name: p.info.latex for q in quantities.QUANTITIES.values() for p in q.params}


def _bound_by(name: str, from_chip: bool) -> list:
    if not from_chip:
        return [("code", "--set")]
    if name in quantity_examples.MODEL_BOUND:
        return [("code", "--model")]
    return DTYPE_OPTIONS.get(name, [("code", "--chip")])


# The entries are built as nodes, not as reST to parse: 369 entries of tables, lists and formulas took most of
# the build's reading time through the parser.

def _text(*parts) -> list[nodes.Node]:
    """Nodes for ``parts``: a str is text, ``("code", s)`` a literal, ``("math", tex)`` inline math,
    ``("strong", s)`` bold."""
    out = []
    for part in parts:
        if isinstance(part, str):
            if part:
                out.append(nodes.Text(part))
        elif part[0] == "code":
            out.append(nodes.literal(part[1], part[1]))
        elif part[0] == "math":
            out.append(nodes.math(part[1], part[1]))
        else:
            out.append(nodes.strong(part[1], part[1]))
    return out


def _para(*parts, classes=()) -> nodes.paragraph:
    node = nodes.paragraph(classes=list(classes))
    node += _text(*parts)
    return node


class _Builder:
    """Nodes of the entries, in one directive's document."""

    def __init__(self, directive: SphinxDirective):
        self.directive, self.env, self.document = directive, directive.env, directive.state.document

    def section(self, title: list[nodes.Node], name: str) -> nodes.section:
        section = nodes.section()
        section += nodes.title("", "", *title)
        section["names"].append(nodes.fully_normalize_name(name))
        self.document.note_implicit_target(section, section)
        return section

    def math_block(self, latex: str, classes=()) -> nodes.math_block:
        node = nodes.math_block(latex, latex, classes=list(classes), docname=self.env.docname, number=None,
                                label=None, nowrap=False)
        self.directive.set_source_info(node)
        return node

    def target(self, name: str) -> nodes.target:
        """The ``quantity`` object's anchor (what ``.. quantity:: NAME`` makes): ``std-quantity-NAME``."""
        node_id = make_id(self.env, self.document, "std:quantity", name)
        node = nodes.target("", "", ids=[node_id])
        self.directive.set_source_info(node)
        self.document.note_explicit_target(node)
        self.env.domains.standard_domain.note_object("quantity", name, node_id, location=node)
        return node

    def table(self, q: dict) -> nodes.table:
        latex = symbol_latex()
        table = nodes.table(classes=["sm-params", "colwidths-given"])
        group = nodes.tgroup(cols=4)
        table += group
        for width in (14, 56, 14, 16):
            group += nodes.colspec(colwidth=width)
        rows = [[["symbol"], ["meaning"], ["unit"], ["from"]]]
        for p in q["params"]:
            tex = latex.get(p["name"], p["name"])
            symbol = [("math", tex)] + ([] if tex == p["name"] else [" (", ("code", p["name"]), ")"])
            rows.append([symbol, [p["meaning"]], [p["unit"]], _bound_by(p["name"], p["from_chip_or_dtype"])])
        head, body = nodes.thead(), nodes.tbody()
        group += [head, body]
        for i, cells in enumerate(rows):
            row = nodes.row()
            for cell in cells:
                entry = nodes.entry()
                entry += _para(*cell)
                row += entry
            (head if i == 0 else body).append(row)
        return table

    def entry(self, q: dict) -> list[nodes.Node]:
        """One quantity's target and section."""
        name = q["name"]
        example = quantity_examples.example(q)
        sym = example.report  # the closed form and steps are the same with or without the example's values
        unit = "dimensionless" if q["unit"] == "1" else q["unit"]
        section = self.section([nodes.literal(name, name)], name)
        section += _para(f"{q['title'][:1].upper() + q['title'][1:]} [{unit}]. Source: {q['source']}.")
        steps = sym["steps"]
        section += self.math_block(f"{steps[-1]['label']} = {sym['latex']}" if steps else sym["latex"])
        if len(steps) > 1:
            section += _para("Steps:")
            listing = nodes.enumerated_list(enumtype="arabic", prefix="", suffix=".")
            for step in steps:
                item = nodes.list_item()
                item += [_para(step["why"]), self.math_block(f"{step['label']} = {step['latex']}", ["sm-step"])]
                listing += item
            section += listing
        elif steps:
            section += _para(f"Why: {steps[0]['why']}.")
        if q["params"]:
            section += self.table(q)
            if q["uses_level"]:
                section += _para(("code", "--level"), " picks the bandwidth ", ("math", "W"), " (",
                                 ("code", "hbm"), " by default).")
        else:
            section += _para("No parameters: the value is a constant.")
        section += self.example(q, example)
        return [self.target(name), section]

    def example(self, q: dict, ex: quantity_examples.Example) -> list[nodes.Node]:
        meaning = {p["name"]: p["meaning"] for p in q["params"]}
        parts: list = [("strong", "Worked example")]
        if ex.chip:
            parts += [f" on the {quantity_examples.CHIPS.get(ex.chip, ex.chip)} (", ("code", f"--chip {ex.chip}"), ")"]
        if ex.model:
            parts += [f" for {quantity_examples.MODELS.get(ex.model, ex.model)} (", ("code", f"--model {ex.model}"),
                      ")"]
        if not ex.chip and not ex.model:
            parts.append(" (no chip figure needed)")
        parts.append(".")
        if ex.bound:
            which = "chip, dtype and model" if ex.chip and ex.model else "chip and dtype" if ex.chip else "model"
            parts.append(f" The {which} bind ")
            for i, n in enumerate(ex.bound):
                parts += [", " if i else "", ("code", n)]
            parts.append(".")
        if ex.given:
            parts += [" Set for this example with ", ("code", "--set"), ", as no chip or model gives them: "]
            for i, (n, v) in enumerate(ex.given.items()):
                parts += ["; " if i else "", ("code", n), " = ", ("code", v), f" ({meaning[n]})"]
            parts.append(".")
        text = f"$ scalemath {sm_cli.command_line(list(ex.args))}\n{ex.output.rstrip()}"
        block = nodes.literal_block(text, text, language="console")
        block["highlight_args"] = {}
        self.directive.set_source_info(block)
        return [_para(*parts), block]

    def topic(self, topic: str) -> list[nodes.Node]:
        """Every quantity of ``topic``, grouped by the first part of the name, in registry order."""
        groups: dict[str, list[dict]] = {}
        for q in sm_cli.quantities():
            if q["topic"] == topic:
                groups.setdefault(q["name"].split(".")[0], []).append(q)
        out = []
        for prefix, qs in groups.items():
            section = self.section([nodes.literal(prefix + ".*", prefix + ".*")], prefix + ".*")
            section += _para(f"{len(qs)} quantit{'y' if len(qs) == 1 else 'ies'}.")
            for q in qs:
                section += self.entry(q)
            out.append(section)
        return out


class QuantityReference(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        topic = self.arguments[0]
        if topic not in TOPICS:
            raise self.error(f"unknown topic {topic!r}: one of {', '.join(TOPICS)}")
        if self.env.app.builder.name not in HTML_BUILDERS:
            return [nodes.paragraph(text=f"The {topic} quantities are listed in the HTML build.")]
        return _Builder(self).topic(topic)


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
