"""IMS QTI 2.1 content packages (any QTI 2.1 player) and Canvas's QTI 1.2 quiz packages.

QTI 2.1: one ``assessmentItem`` per problem and variant, a ``textEntryInteraction`` per number
(``baseType="float"``, graded with ``equal toleranceMode="relative"``: QTI's relative tolerance is a
percentage), integers matched exactly for whole counts, a ``choiceInteraction`` per choice; an
``assessmentTest`` per variant; ``imsmanifest.xml`` lists them all. Numbers are asked in the unit the
key prints (``in ms``), since a QTI float response carries no unit.

Canvas: one quiz per variant (one for a plain set), to assign to its student: Canvas's question groups draw
each question on its own, which would mix the parts of different variants. ``numerical_question`` items with
the accepted range, ``multiple_choice_question`` for choices.

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
from .common import Answer, Item, answer_points, prompt, symbols_text

__all__ = ["qti21_zip", "canvas_zip", "QTI_NS"]

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
    return _xml(root)


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


# -- Canvas (QTI 1.2) ---------------------------------------------------------------------------------

def _field(meta: ET.Element, label: str, entry: str) -> None:
    f = ET.SubElement(meta, "qtimetadatafield")
    ET.SubElement(f, "fieldlabel").text = label
    ET.SubElement(f, "fieldentry").text = entry


def _canvas_item(section: ET.Element, item: Item, a: Answer, images: dict[str, str]) -> None:
    """One question of a Canvas bank; the figures it shows are added to ``images`` (name -> base64)."""
    key = a.key
    el = ET.SubElement(section, "item", ident=_ident(item.variant or "", item.id, a.name), title=f"{item.id} {a.name}")
    meta = ET.SubElement(ET.SubElement(el, "itemmetadata"), "qtimetadata")
    _field(meta, "question_type", {"choice": "multiple_choice_question", "expression": "essay_question"}.get(
        key.kind, "numerical_question"))
    _field(meta, "points_possible", _num(answer_points(item)))
    pres = ET.SubElement(el, "presentation")
    mat = ET.SubElement(pres, "material")
    statement, shown = linked_files(item.statement, CANVAS_FILEBASE + IMAGES)
    images.update(shown)
    ET.SubElement(mat, "mattext", texttype="text/html").text = f"{statement}\n<p><strong>{prompt(a)}</strong></p>"
    proc = ET.SubElement(el, "resprocessing")
    ET.SubElement(ET.SubElement(proc, "outcomes"), "decvar", maxvalue="100", minvalue="0", varname="SCORE",
                  vartype="Decimal")
    if key.kind == "expression":  # an essay, graded by hand; the key as the comment graders see
        resp = ET.SubElement(pres, "response_str", ident="response1", rcardinality="Single")
        ET.SubElement(ET.SubElement(resp, "render_fib"), "response_label", ident="answer1", rshuffle="No")
        cond = ET.SubElement(proc, "respcondition", {"continue": "No"})
        ET.SubElement(ET.SubElement(cond, "conditionvar"), "other")
        fb = ET.SubElement(el, "itemfeedback", ident="general_fb")
        ET.SubElement(ET.SubElement(ET.SubElement(fb, "flow_mat"), "material"), "mattext",
                      texttype="text/plain").text = _key_text(a)
        return
    if key.kind == "choice":
        resp = ET.SubElement(pres, "response_lid", ident="response1", rcardinality="Single")
        render = ET.SubElement(resp, "render_choice")
        for i, choice in enumerate(key.choices):
            label = ET.SubElement(render, "response_label", ident=f"c{i + 1}")
            ET.SubElement(ET.SubElement(label, "material"), "mattext", texttype="text/plain").text = choice
        cond = ET.SubElement(proc, "respcondition", {"continue": "No"})
        ET.SubElement(ET.SubElement(cond, "conditionvar"), "varequal", respident="response1").text = \
            f"c{int(key.expected) + 1}"
    else:
        resp = ET.SubElement(pres, "response_str", ident="response1", rcardinality="Single")
        ET.SubElement(ET.SubElement(resp, "render_fib", fibtype="Decimal"), "response_label", ident="answer1")
        values = [(key.expected, sp.Integer(0) if key.kind == "whole" else key.rel_tol)]
        values += [(alt.expected, key.rel_tol) for alt in key.accept]
        for value, tol in values:
            cond = ET.SubElement(proc, "respcondition", {"continue": "No"})
            var = ET.SubElement(cond, "conditionvar")
            shown = value / a.scale
            if tol == 0:
                ET.SubElement(var, "varequal", respident="response1").text = _num(shown)
            else:
                either = ET.SubElement(var, "or")
                ET.SubElement(either, "varequal", respident="response1").text = _num(shown)
                both = ET.SubElement(either, "and")
                lo, hi = sorted((shown * (1 - tol), shown * (1 + tol)))
                ET.SubElement(both, "vargte", respident="response1").text = _num(lo)
                ET.SubElement(both, "varlte", respident="response1").text = _num(hi)
            ET.SubElement(cond, "setvar", action="Set", varname="SCORE").text = "100"
        return
    ET.SubElement(cond, "setvar", action="Set", varname="SCORE").text = "100"


def _canvas_quiz(quiz_id: str, title: str, items: list[Item], images: dict[str, str]) -> tuple[bytes, bytes, int]:
    """One Canvas quiz (its QTI and its assessment_meta) holding ``items`` in order, and its number of questions."""
    root = ET.Element("questestinterop", xmlns="http://www.imsglobal.org/xsd/ims_qtiasiv1p2")
    assessment = ET.SubElement(root, "assessment", ident=quiz_id, title=title)
    top = ET.SubElement(assessment, "section", ident="root_section")
    n, points = 0, sp.Integer(0)
    for item in sorted(items, key=lambda i: i.number):
        for a in item.answers:
            _canvas_item(top, item, a, images)
            n += 1
            points += answer_points(item)
    meta = ET.Element("quiz", identifier=quiz_id, xmlns="http://canvas.instructure.com/xsd/cccv1p0")
    ET.SubElement(meta, "title").text = title
    ET.SubElement(meta, "description").text = "Generated by scalemath: every answer checked by a second route."
    ET.SubElement(meta, "quiz_type").text = "assignment"
    ET.SubElement(meta, "points_possible").text = _num(points)
    return _xml(root), _xml(meta), n


def canvas_zip(items: list[Item], set_name: str) -> tuple[bytes, int]:
    """A Canvas package: one quiz for a plain set; one quiz per variant for a set with variants ("scalemath <set>
    v01 (student)"), to assign to its student. Canvas's question groups draw each question on its own, so
    drawing variants in one quiz would give a student the parts of a problem from different variants."""
    variants: dict[str | None, list[Item]] = {}
    for item in items:
        variants.setdefault(item.variant, []).append(item)
    manifest = ET.Element("manifest", identifier=_ident("manifest", set_name),
                          xmlns="http://www.imsglobal.org/xsd/imsccv1p1/imscp_v1p1")
    ET.SubElement(ET.SubElement(manifest, "metadata"), "schema").text = "IMS Content"
    ET.SubElement(manifest, "organizations")
    resources = ET.SubElement(manifest, "resources")
    files: dict[str, bytes] = {}
    images: dict[str, str] = {}
    n = 0
    for variant, members in variants.items():
        quiz_id = _ident("scalemath", set_name, variant if len(variants) > 1 else "")
        student = members[0].student
        title = f"scalemath {set_name}" + (f" {variant}" + (f" ({student})" if student else "")
                                           if len(variants) > 1 else "")
        qti, meta, count = _canvas_quiz(quiz_id, title, members, images)
        n += count
        res = ET.SubElement(resources, "resource", identifier=quiz_id, type="imsqti_xmlv1p2")
        ET.SubElement(res, "file", href=f"{quiz_id}/{quiz_id}.xml")
        ET.SubElement(res, "dependency", identifierref=quiz_id + "_meta")
        meta_res = ET.SubElement(resources, "resource", identifier=quiz_id + "_meta",
                                 type="associatedcontent/imscc_xmlv1p1/learning-application-resource",
                                 href=f"{quiz_id}/assessment_meta.xml")
        ET.SubElement(meta_res, "file", href=f"{quiz_id}/assessment_meta.xml")
        files[f"{quiz_id}/{quiz_id}.xml"] = qti
        files[f"{quiz_id}/assessment_meta.xml"] = meta
    for name in sorted(images):
        figure = ET.SubElement(resources, "resource", identifier=_ident("image", name.removesuffix(".svg")),
                               type="webcontent", href=IMAGES + name)
        ET.SubElement(figure, "file", href=IMAGES + name)
    files = {"imsmanifest.xml": _xml(manifest), **files}
    files.update((IMAGES + name, base64.b64decode(data)) for name, data in sorted(images.items()))
    return _zip(files), n
