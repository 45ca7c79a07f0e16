"""IMS QTI 2.1 content packages (any QTI 2.1 player), and the helpers Canvas's QTI 1.2 packages share.

QTI 2.1: one ``assessmentItem`` per problem and variant, a ``textEntryInteraction`` per number
(``baseType="float"``, graded with ``equal toleranceMode="relative"``: QTI's relative tolerance is a
percentage), integers matched exactly for whole counts, a ``choiceInteraction`` per choice; an
``assessmentTest`` per variant; ``imsmanifest.xml`` lists them all. Numbers are asked in the unit the
key prints (``in ms``), since a QTI float response carries no unit. Response processing sets the ``FEEDBACK``
outcome: ``SOLUTION`` (the worked solution's ``modalFeedback``) after every attempt, and ``SLIP_<i>_<k>`` when a
number lands on a usual slip (a doubled value, GiB for GB, ...), whose ``modalFeedback`` words it.

Canvas's QTI 1.2 packages are written by :mod:`scalemath.problems.lms.canvas`, with this module's helpers.

A closed-form answer (a formula) is graded by hand in both: an ``extendedTextInteraction`` (QTI 2.1) with
the expected form in a ``rubricBlock`` only scorers see, an ``essay_question`` (Canvas) with the expected
form in its general feedback (shown after submission); QTI's own operators cannot decide whether two formulas are equivalent.

A figure is an SVG file of the package, ``images/figure-<hash>.svg``: QTI 2.1 items link it relatively and list it
among their resource's files; Canvas links it through ``$IMS-CC-FILEBASE$`` (URL-escaped, as Canvas's own exports
write it) and the manifest lists it as ``webcontent``. Canvas drops images written as ``data:`` URIs.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import xml.etree.ElementTree as ET
import zipfile

import sympy as sp

from ..figures import linked_files
from .common import Answer, Item, answer_points, prompt, shown_slips, symbols_text

__all__ = ["qti21_zip", "QTI_NS"]

QTI_NS = "http://www.imsglobal.org/xsd/imsqti_v2p1"
CP_NS = "http://www.imsglobal.org/xsd/imscp_v1p1"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
QTI_XSD = "http://www.imsglobal.org/xsd/qti/qtiv2p1/imsqti_v2p1.xsd"
_FIXED = (2000, 1, 1, 0, 0, 0)  # zip entry times: the same manifest gives the same bytes
#: Where a package keeps the figures' SVG files, and how Canvas names that package's root in question HTML.
IMAGES = "images/"
CANVAS_FILEBASE = "%24IMS-CC-FILEBASE%24/"


def _num(value: sp.Expr) -> str:
    return repr(float(sp.N(value, 17)))


def _ident(*parts: str) -> str:
    text = "-".join(p for p in parts if p)
    text = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    return text if text[:1].isalpha() else "I" + text


def _xml(el: ET.Element) -> bytes:
    ET.indent(el)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(el, encoding="utf-8") + b"\n"


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, _FIXED)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue()


# -- QTI 2.1 ----------------------------------------------------------------------------------------

def _html_into(parent: ET.Element, html_text: str, ns: str) -> None:
    """Parse our statement HTML (paragraphs of escaped text) into QTI elements of namespace ``ns``."""
    wrapper = ET.fromstring(f"<div>{html_text}</div>")
    for p in wrapper:
        el = ET.SubElement(parent, f"{{{ns}}}p")
        el.text = "".join(p.itertext())
        for img in p.iter("img"):  # a figure: a file of the package (scalemath.problems.figures.linked_files)
            ET.SubElement(el, f"{{{ns}}}img", {"src": img.get("src", ""), "alt": img.get("alt", "")})


def _item21(item: Item) -> bytes:
    q = f"{{{QTI_NS}}}"
    ident = _ident(item.variant or "", item.id)
    root = ET.Element(f"{q}assessmentItem", {f"{{{XSI}}}schemaLocation": f"{QTI_NS} {QTI_XSD}",
                                              "identifier": ident, "title": item.title or item.id,
                                              "adaptive": "false", "timeDependent": "false"})
    for i, a in enumerate(item.answers):
        rid = f"RESPONSE_{i + 1}"
        key = a.key
        base = {"choice": "identifier", "whole": "integer", "expression": "string"}.get(key.kind, "float")
        decl = ET.SubElement(root, f"{q}responseDeclaration", identifier=rid, cardinality="single", baseType=base)
        if key.kind == "expression":
            continue  # graded by hand: no correct response a QTI player could match
        correct = ET.SubElement(decl, f"{q}correctResponse")
        value = (f"C{int(key.expected) + 1}" if key.kind == "choice" else str(int(key.expected))
                 if key.kind == "whole" else _num(key.expected / a.scale))
        ET.SubElement(correct, f"{q}value").text = value
    ET.SubElement(root, f"{q}outcomeDeclaration", identifier="SCORE", cardinality="single", baseType="float")
    # FEEDBACK: the modal feedback response processing shows: SOLUTION always, SLIP_<answer>_<k> for a usual slip
    ET.SubElement(root, f"{q}outcomeDeclaration", identifier="FEEDBACK", cardinality="multiple", baseType="identifier")
    body = ET.SubElement(root, f"{q}itemBody")
    _html_into(body, item.statement, QTI_NS)
    for i, a in enumerate(item.answers):
        rid = f"RESPONSE_{i + 1}"
        if a.key.kind == "choice":
            inter = ET.SubElement(body, f"{q}choiceInteraction", responseIdentifier=rid, shuffle="false",
                                  maxChoices="1")
            ET.SubElement(inter, f"{q}prompt").text = html.unescape(prompt(a))  # XML text: escaped once, by ET
            for k, choice in enumerate(a.key.choices):
                ET.SubElement(inter, f"{q}simpleChoice", identifier=f"C{k + 1}").text = choice
        elif a.key.kind == "expression":
            inter = ET.SubElement(body, f"{q}extendedTextInteraction", responseIdentifier=rid, expectedLines="2",
                                  format="plain")
            ET.SubElement(inter, f"{q}prompt").text = html.unescape(prompt(a)) + " Type the formula as text, e.g. (N-1)/N * V/W."
            rubric = ET.SubElement(body, f"{q}rubricBlock", view="scorer")
            ET.SubElement(rubric, f"{q}p").text = _key_text(a)
        else:
            p = ET.SubElement(body, f"{q}p")
            p.text = html.unescape(prompt(a)) + " "
            ET.SubElement(p, f"{q}textEntryInteraction", responseIdentifier=rid, expectedLength="12")
    proc = ET.SubElement(root, f"{q}responseProcessing")
    _show(proc, "SOLUTION")  # the worked solution, after every attempt
    for i, a in enumerate(item.answers):
        rid = f"RESPONSE_{i + 1}"
        if a.key.kind == "expression":
            continue  # scored by hand
        cond = ET.SubElement(proc, f"{q}responseCondition")
        branch = ET.SubElement(cond, f"{q}responseIf")
        if a.key.kind == "number":
            test = ET.SubElement(branch, f"{q}equal", toleranceMode="relative",
                                 tolerance=repr(float(100 * a.key.rel_tol)))
        else:
            test = ET.SubElement(branch, f"{q}match")
        ET.SubElement(test, f"{q}variable", identifier=rid)
        ET.SubElement(test, f"{q}correct", identifier=rid)
        setter = ET.SubElement(branch, f"{q}setOutcomeValue", identifier="SCORE")
        total = ET.SubElement(setter, f"{q}sum")
        ET.SubElement(total, f"{q}variable", identifier="SCORE")
        ET.SubElement(total, f"{q}baseValue", baseType="float").text = "1"
    slips = _slip_conditions(proc, item)
    solution = ET.SubElement(root, f"{q}modalFeedback", outcomeIdentifier="FEEDBACK", showHide="show",
                             identifier="SOLUTION", title="Worked solution")
    _html_into(solution, item.solution, QTI_NS)
    for ident, a, text in slips:
        fb = ET.SubElement(root, f"{q}modalFeedback", outcomeIdentifier="FEEDBACK", showHide="show",
                           identifier=ident, title=a.name)
        ET.SubElement(fb, f"{q}p").text = f"{html.unescape(prompt(a, with_unit=False)).rstrip(':')}: {text}"
    return _xml(root)


def _show(proc: ET.Element, ident: str, parent: ET.Element | None = None) -> None:
    """Add ``ident`` to the FEEDBACK outcome (the modal feedback shown after the attempt)."""
    q = f"{{{QTI_NS}}}"
    setter = ET.SubElement(proc if parent is None else parent, f"{q}setOutcomeValue", identifier="FEEDBACK")
    both = ET.SubElement(setter, f"{q}multiple")
    ET.SubElement(both, f"{q}variable", identifier="FEEDBACK")
    ET.SubElement(both, f"{q}baseValue", baseType="identifier").text = ident


def _slip_conditions(proc: ET.Element, item: Item) -> list[tuple[str, Answer, str]]:
    """A response condition per usual slip of each number (a response within the tolerance of the slipped value
    shows the slip's feedback); the (identifier, answer, feedback) of each."""
    q = f"{{{QTI_NS}}}"
    out = []
    for i, a in enumerate(item.answers):
        if a.key.kind not in ("number", "whole"):
            continue
        for k, (value, text) in enumerate(shown_slips(a)):
            ident = f"SLIP_{i + 1}_{k + 1}"
            branch = ET.SubElement(ET.SubElement(proc, f"{q}responseCondition"), f"{q}responseIf")
            test = ET.SubElement(branch, f"{q}equal", toleranceMode="relative",
                                 tolerance=repr(float(100 * a.key.rel_tol)) if a.key.rel_tol else "0.5")
            ET.SubElement(test, f"{q}variable", identifier=f"RESPONSE_{i + 1}")
            ET.SubElement(test, f"{q}baseValue", baseType="float").text = _num(value / a.scale)
            _show(proc, ident, branch)
            out.append((ident, a, text))
    return out


def _key_text(a: Answer) -> str:
    """The expected form for whoever grades a formula by hand."""
    text = f"Graded by hand. Expected (any equivalent form is right): {a.key.expected}; symbols: {symbols_text(a.key)}."
    return text + "".join(f" Also right: {alt.expected} ({alt.why})." for alt in a.key.accept)


def _test21(variant: str, items: list[tuple[Item, str]]) -> bytes:
    q = f"{{{QTI_NS}}}"
    root = ET.Element(f"{q}assessmentTest", {f"{{{XSI}}}schemaLocation": f"{QTI_NS} {QTI_XSD}",
                                             "identifier": _ident("test", variant), "title": f"scalemath {variant}"})
    ET.SubElement(root, f"{q}outcomeDeclaration", identifier="SCORE", cardinality="single", baseType="float")
    part = ET.SubElement(root, f"{q}testPart", identifier=_ident("part", variant), navigationMode="nonlinear",
                         submissionMode="simultaneous")
    section = ET.SubElement(part, f"{q}assessmentSection", identifier=_ident("section", variant),
                            title=variant, visible="true")
    for item, href in items:
        ref = ET.SubElement(section, f"{q}assessmentItemRef", identifier=_ident("ref", item.variant or "", item.id),
                            href=f"../{href}")
        if item.problem.points is not None:  # an item's SCORE counts its right answers, each worth its share
            ET.SubElement(ref, f"{q}weight", identifier="POINTS", value=_num(answer_points(item)))
    # the test's SCORE: the items' scores, each weighted by its points (weight 1 where there is none)
    setter = ET.SubElement(ET.SubElement(root, f"{q}outcomeProcessing"), f"{q}setOutcomeValue", identifier="SCORE")
    ET.SubElement(ET.SubElement(setter, f"{q}sum"), f"{q}testVariables", variableIdentifier="SCORE",
                  weightIdentifier="POINTS")
    return _xml(root)


def qti21_zip(items: list[Item], set_name: str) -> tuple[bytes, int]:
    ET.register_namespace("", QTI_NS)
    ET.register_namespace("xsi", XSI)
    files: dict[str, bytes] = {}
    by_variant: dict[str, list[tuple[Item, str]]] = {}
    images: dict[str, list[str]] = {}  # item file -> the figure files it shows
    for item in items:
        href = f"items/{_ident(item.variant or '', item.id)}.xml"
        statement, shown = linked_files(item.statement, "../" + IMAGES)
        files[href] = _item21(dataclasses.replace(item, statement=statement))
        images[href] = [IMAGES + name for name, _ in shown]
        files.update((IMAGES + name, base64.b64decode(data)) for name, data in shown)
        by_variant.setdefault(item.variant or "set", []).append((item, href))
    for variant, members in by_variant.items():
        files[f"tests/{_ident(variant)}.xml"] = _test21(variant, members)
    ET.register_namespace("", CP_NS)
    c = f"{{{CP_NS}}}"
    manifest = ET.Element(f"{c}manifest", {"identifier": _ident("scalemath", set_name),
                                           f"{{{XSI}}}schemaLocation": f"{CP_NS} http://www.imsglobal.org/xsd/imscp_v1p1.xsd"})
    meta = ET.SubElement(manifest, f"{c}metadata")
    ET.SubElement(meta, f"{c}schema").text = "QTIv2.1 Package"
    ET.SubElement(meta, f"{c}schemaversion").text = "1.0.0"
    ET.SubElement(manifest, f"{c}organizations")
    resources = ET.SubElement(manifest, f"{c}resources")
    for name in files:
        if name.startswith(IMAGES):
            continue  # listed with the items that show it
        kind = "imsqti_item_xmlv2p1" if name.startswith("items/") else "imsqti_test_xmlv2p1"
        res = ET.SubElement(resources, f"{c}resource", identifier=_ident("R", name.removesuffix(".xml")),
                            type=kind, href=name)
        for listed in (name, *images.get(name, ())):
            ET.SubElement(res, f"{c}file", href=listed)
    files = {"imsmanifest.xml": _xml(manifest)} | files
    return _zip(files), len(items)
