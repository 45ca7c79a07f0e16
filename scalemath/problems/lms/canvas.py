"""Canvas's QTI 1.2 quiz packages: one quiz per variant (one for a plain set), to assign to its student: Canvas's
question groups draw each question on its own, which would mix the parts of different variants.
``numerical_question`` items with the accepted range, ``multiple_choice_question`` for choices, ``essay_question``
for a formula (graded by hand, the expected form in its general feedback). A problem of several parts is a
``text_only_question`` holding its stem, then one question per part holding only its prompt; the worked solution
is the general feedback (``itemfeedback general_fb``) of a problem's last part, the usual slips the feedback for a
wrong answer (``general_incorrect_fb``). A figure is linked through ``$IMS-CC-FILEBASE$`` (URL-escaped, as
Canvas's own exports write it) and the manifest lists it as ``webcontent``: Canvas drops ``data:`` URIs.
"""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET

import sympy as sp

from ..figures import linked_files
from .common import Answer, Item, answer_points, html_text, prompt, shown_slips, solution_html
from .qti import CANVAS_FILEBASE, IMAGES, _ident, _key_text, _num, _xml, _zip

__all__ = ["canvas_zip"]


# -- Canvas (QTI 1.2) ---------------------------------------------------------------------------------

def _field(meta: ET.Element, label: str, entry: str) -> None:
    f = ET.SubElement(meta, "qtimetadatafield")
    ET.SubElement(f, "fieldlabel").text = label
    ET.SubElement(f, "fieldentry").text = entry


def _canvas_html(text: str, images: dict[str, str]) -> str:
    """Question HTML with its figures linked as files of the package (added to ``images``: name -> base64)."""
    text, shown = linked_files(text, CANVAS_FILEBASE + IMAGES)
    images.update(shown)
    return text


def _canvas_feedback(el: ET.Element, ident: str, text: str) -> None:
    fb = ET.SubElement(el, "itemfeedback", ident=ident)
    ET.SubElement(ET.SubElement(ET.SubElement(fb, "flow_mat"), "material"), "mattext", texttype="text/html").text = text


def _canvas_stem(section: ET.Element, item: Item, images: dict[str, str]) -> None:
    """The stem of a problem of several parts, written once: a text-only question the parts follow."""
    el = ET.SubElement(section, "item", ident=_ident(item.variant or "", item.id), title=item.id)
    meta = ET.SubElement(ET.SubElement(el, "itemmetadata"), "qtimetadata")
    _field(meta, "question_type", "text_only_question")
    _field(meta, "points_possible", "0.0")
    mat = ET.SubElement(ET.SubElement(el, "presentation"), "material")
    parts = len(item.answers)
    ET.SubElement(mat, "mattext", texttype="text/html").text = (
        _canvas_html(item.statement, images) + f"\n<p><em>The next {parts} questions are the parts of this one.</em></p>")


def _canvas_item(section: ET.Element, item: Item, a: Answer, images: dict[str, str], stem: bool = True,
                 solution: bool = True) -> None:
    """One question (one answer of a problem) of a Canvas quiz: the stem unless the parts follow a text-only stem
    (``stem`` False); the worked solution as its general feedback (``solution``: on a problem's last part) and the
    usual slips as its feedback for a wrong answer. The figures it shows are added to ``images`` (name -> base64)."""
    key = a.key
    el = ET.SubElement(section, "item", ident=_ident(item.variant or "", item.id, a.name), title=f"{item.id} {a.name}")
    meta = ET.SubElement(ET.SubElement(el, "itemmetadata"), "qtimetadata")
    _field(meta, "question_type", {"choice": "multiple_choice_question", "expression": "essay_question"}.get(
        key.kind, "numerical_question"))
    _field(meta, "points_possible", _num(answer_points(item)))
    pres = ET.SubElement(el, "presentation")
    mat = ET.SubElement(pres, "material")
    ET.SubElement(mat, "mattext", texttype="text/html").text = (
        (_canvas_html(item.statement, images) + "\n" if stem else "") + f"<p><strong>{prompt(a)}</strong></p>")
    proc = ET.SubElement(el, "resprocessing")
    ET.SubElement(ET.SubElement(proc, "outcomes"), "decvar", maxvalue="100", minvalue="0", varname="SCORE",
                  vartype="Decimal")
    general = solution_html(item) if solution else ""
    if key.kind == "expression":  # an essay, graded by hand; the key, then the solution, as the general feedback
        general = f"<p>{html_text(_key_text(a))}</p>\n{general}"
    if general:  # shown after the attempt, whatever the answer
        show = ET.SubElement(proc, "respcondition", {"continue": "Yes"})
        ET.SubElement(ET.SubElement(show, "conditionvar"), "other")
        ET.SubElement(show, "displayfeedback", feedbacktype="Response", linkrefid="general_fb")
    slips = shown_slips(a) if key.kind in ("number", "whole") else []
    wrong = ("<p>If your answer was wrong, a usual slip may explain it:</p>\n<ul>" + "".join(
        f"<li>{html_text(text)}</li>" for _, text in slips) + "</ul>") if slips else ""
    if key.kind == "expression":
        resp = ET.SubElement(pres, "response_str", ident="response1", rcardinality="Single")
        ET.SubElement(ET.SubElement(resp, "render_fib"), "response_label", ident="answer1", rshuffle="No")
        cond = ET.SubElement(proc, "respcondition", {"continue": "No"})
        ET.SubElement(ET.SubElement(cond, "conditionvar"), "other")
    else:
        _canvas_scoring(pres, proc, a)
    if wrong:  # Canvas's "incorrect" comment, after the conditions a right answer stops at
        show = ET.SubElement(proc, "respcondition", {"continue": "No"})
        ET.SubElement(ET.SubElement(show, "conditionvar"), "other")
        ET.SubElement(show, "displayfeedback", feedbacktype="Response", linkrefid="general_incorrect_fb")
    if general:
        _canvas_feedback(el, "general_fb", _canvas_html(general, images))
    if wrong:
        _canvas_feedback(el, "general_incorrect_fb", wrong)


def _canvas_scoring(pres: ET.Element, proc: ET.Element, a: Answer) -> None:
    """The response field of a choice or a number and the conditions that score it 100."""
    key = a.key
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
    """One Canvas quiz (its QTI and its assessment_meta) holding ``items`` in order, and its number of questions
    (problems: a problem of several parts is a text-only stem followed by one question per part)."""
    root = ET.Element("questestinterop", xmlns="http://www.imsglobal.org/xsd/ims_qtiasiv1p2")
    assessment = ET.SubElement(root, "assessment", ident=quiz_id, title=title)
    top = ET.SubElement(assessment, "section", ident="root_section")
    n, points = 0, sp.Integer(0)
    for item in sorted(items, key=lambda i: i.number):
        several = len(item.answers) > 1
        if several:
            _canvas_stem(top, item, images)
        for k, a in enumerate(item.answers):
            _canvas_item(top, item, a, images, stem=not several, solution=k == len(item.answers) - 1)
            points += answer_points(item)
        n += 1
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
