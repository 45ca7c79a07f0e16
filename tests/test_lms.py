"""LMS exports: Moodle XML, QTI 2.1, Canvas QTI 1.2 and PrairieLearn, from a manifest with variants."""

import html
import importlib.util
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
import zipfile
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.problems import render, sets
from scalemath.values.units import parse_unit

SCHEMAS = Path(__file__).parent / "schemas"
QTI = "{http://www.imsglobal.org/xsd/imsqti_v2p1}"
CP = "{http://www.imsglobal.org/xsd/imscp_v1p1}"
SEEDS = (3, 4)
TOPICS = ("roofline", "gpu")  # every generator of these topics once (see manifest): the same ones in every variant


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    """A manifest with two variants, built by hand as issue 12's contract describes it."""
    from scalemath.problems import registry

    # the generators of these topics whose answers are numbers or choices: formulas export as essays graded by
    # hand, which tests/test_expression_answers.py holds
    names = [name for name, g in registry.generators().items() if g.topic in TOPICS
             and all(a.kind != "expression" for a in registry.make_problem(g, 1).answers)]
    variants = []
    for i, seed in enumerate(SEEDS):
        pset = sets.build_set(seed=seed, generator_names=names)
        doc = json.loads(render.manifest(pset.problems, seed=seed, topics=pset.topics, n=pset.n))
        variants.append({"id": f"v{i + 1:02d}", "student": None, "problems": doc["problems"]})
    doc = {k: v for k, v in doc.items() if k != "problems"} | {"set_id": "week1", "variants": variants}
    path = tmp_path_factory.mktemp("lms") / "manifest.json"
    path.write_text(json.dumps(doc))
    return path, doc


def _export(manifest_path, fmt, out, *extra):
    return CliRunner().invoke(main, ["problems", "export", str(manifest_path), "--format", fmt, "--out", str(out),
                                     *extra])


def _answers(doc):
    return [(v["id"], p, a) for v in doc["variants"] for p in v["problems"] for a in p["answers"]]


@pytest.fixture(scope="module")
def one_variant(manifest, tmp_path_factory):
    """The same manifest with its first variant only: no draw, so Moodle gets one numerical question per answer."""
    _, doc = manifest
    doc = dict(doc, variants=doc["variants"][:1])
    path = tmp_path_factory.mktemp("lms1") / "manifest.json"
    path.write_text(json.dumps(doc))
    return path, doc


def test_moodle_xml_questions_tolerances_units_and_categories(one_variant, tmp_path):
    path, doc = one_variant
    result = _export(path, "moodle", tmp_path / "quiz.xml")
    assert result.exit_code == 0, result.output
    quiz = ET.parse(tmp_path / "quiz.xml").getroot()
    stems = [q for q in quiz if q.get("type") == "description"]
    questions = [q for q in quiz if q.get("type") not in ("category", "description")]
    categories = [q.findtext("category/text") for q in quiz if q.get("type") == "category"]
    answers = _answers(doc)
    problems = doc["variants"][0]["problems"]
    assert len(questions) == len(answers)
    # one category per problem; a problem of several parts starts with a description holding its stem
    assert len(categories) == len(problems)
    assert len(stems) == sum(len(p["answers"]) > 1 for p in problems)
    assert all(c.startswith("$course$/top/scalemath week1/Q") for c in categories)
    for q, (variant, p, a) in zip(questions, answers):
        assert q.findtext("name/text") == f"{variant} {p['id']} {a['name']}"
        text = q.findtext("questiontext/text")
        if len(p["answers"]) == 1:  # the stem, with its math
            assert "\\(" in text or "\\[" in text
        else:  # the part's prompt only: the stem is the description's
            assert text.startswith("<p><strong>") and text.count("<p>") == 1, text
        kind = a.get("kind", "number")
        if kind == "choice":
            assert q.get("type") == "multichoice"
            right = [x.findtext("text") for x in q.findall("answer") if x.get("fraction") == "100"]
            assert right == [a["choices"][int(a["exact"])]]
            continue
        assert q.get("type") == "numerical"
        first = q.find("answer")
        assert first.get("fraction") == "100"
        if kind == "whole":
            assert float(first.findtext("text")) == int(a["exact"]) and first.findtext("tolerance") == "0"
        else:
            assert float(first.findtext("text")) == pytest.approx(a["value"], rel=1e-12)
            assert float(first.findtext("tolerance")) == pytest.approx(abs(a["value"]) * a["rel_tol"], rel=1e-9)
        units = [(u.findtext("unit_name"), float(u.findtext("multiplier"))) for u in q.findall("units/unit")]
        if a["unit"] == "1":
            assert units == []
        else:
            assert units[0] == (a["unit"], 1.0)
        if a["unit"] == "s":
            assert ("ms", 1000.0) in units and ("µs", pytest.approx(1e6)) in units
        if a["unit"] == "byte":
            assert ("GB", 1e-9) in units and ("GiB", pytest.approx(2**-30)) in units
        # wrong answers at the usual slips, with scalemath's feedback
        slips = [x for x in q.findall("answer") if x.get("fraction") == "0"]
        doubled = [x for x in slips if kind == "number" and float(x.findtext("text")) == pytest.approx(2 * a["value"])]
        if kind == "number" and a["value"] != 0:
            assert doubled and "2x the expected value: a factor 2" in doubled[0].findtext("feedback/text")


_CLOZE = re.compile(r"\{1:(NUMERICAL|MULTICHOICE|SHORTANSWER):((?:\\.|[^}])*)\}")


def _cloze_fields(text):
    """(type, [(fraction, answer, feedback)]) of every embedded field of a Cloze question text."""
    out = []
    for kind, body in _CLOZE.findall(text):
        options = []
        for opt in re.split(r"(?<!\\)~", body):
            mark = re.match(r"(=|%(\d+)%)?", opt)
            fraction = 100 if mark.group(1) == "=" else int(mark.group(2) or 0)
            value, _, feedback = opt[mark.end():].partition("#")
            if kind == "NUMERICAL":  # value:tolerance
                value = value.partition(":")[0]
            options.append((fraction, re.sub(r"\\(.)", r"\1", value), feedback))
        out.append((kind, options))
    return out


def test_moodle_variants_are_whole_cloze_questions(manifest, tmp_path):
    """With variants, every problem of a variant is one Cloze question in its problem's category: a quiz's random
    draw per category gives a student all the parts of one variant (never part (a) of v01 and (b) of v02)."""
    path, doc = manifest
    result = _export(path, "moodle", tmp_path / "quiz.xml")
    assert result.exit_code == 0, result.output
    quiz = ET.parse(tmp_path / "quiz.xml").getroot()
    categories = [q.findtext("category/text") for q in quiz if q.get("type") == "category"]
    questions = [q for q in quiz if q.get("type") != "category"]
    problems = [(v["id"], p) for v in doc["variants"] for p in v["problems"]]
    assert len(categories) == len({p["number"] for _, p in problems}) and len(questions) == len(problems)
    assert {q.get("type") for q in questions} == {"cloze"}
    by_name = {q.findtext("name/text"): q for q in questions}
    for variant, p in problems:
        q = by_name[f"Q{p['number']:02d} {variant}"]
        text = q.findtext("questiontext/text")
        fields = _cloze_fields(text)
        prompts = re.findall(r"<strong>([^<]*)</strong> \{1:", text)
        assert len(fields) == len(prompts) == len(p["answers"]), (variant, p["id"])
        for (kind, options), prompt, a in zip(fields, prompts, p["answers"]):
            right = [value for fraction, value, _ in options if fraction == 100]
            if a.get("kind") == "choice":
                assert kind == "MULTICHOICE" and right[0] == a["choices"][int(a["exact"])]
            elif a.get("kind") == "whole":
                assert kind == "NUMERICAL" and float(right[0]) == int(a["exact"])
            else:  # typed in the unit the prompt names: that unit times the number is the key's value
                assert kind == "NUMERICAL"
                unit = re.search(r" in (\S+):$", html.unescape(prompt))
                factor = parse_unit(unit.group(1))[0] / parse_unit(a["unit"])[0] if unit else 1
                assert float(right[0]) * float(factor) == pytest.approx(a["value"], rel=1e-9), (p["id"], a["name"])


def test_qti21_package(manifest, tmp_path):
    """The package's structure: what the schema cannot say (one item per problem and variant, one declaration,
    scoring condition and interaction per answer, QTI's relative tolerance as a percentage). Validity against
    IMS's XSD: test_qti21_package_is_valid_against_the_official_schema."""
    path, doc = manifest
    result = _export(path, "qti", tmp_path / "quiz.zip")
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(tmp_path / "quiz.zip") as z:
        names = z.namelist()
        cp = ET.fromstring(z.read("imsmanifest.xml"))
        assert cp.tag == f"{CP}manifest" and cp.findtext(f"{CP}metadata/{CP}schema") == "QTIv2.1 Package"
        resources = cp.findall(f"{CP}resources/{CP}resource")
        assert {r.get("href") for r in resources} == {n for n in names if n.startswith(("items/", "tests/"))}
        items = [r for r in resources if r.get("type") == "imsqti_item_xmlv2p1"]
        assert len(items) == sum(len(v["problems"]) for v in doc["variants"])
        assert len([r for r in resources if r.get("type") == "imsqti_test_xmlv2p1"]) == len(SEEDS)
        by_id = {(v["id"], p["id"]): p for v in doc["variants"] for p in v["problems"]}
        for r in items:
            item = ET.fromstring(z.read(r.get("href")))
            assert item.tag == f"{QTI}assessmentItem" and item.get("adaptive") == "false"
            variant, _, pid = item.get("identifier").partition("-")
            p = by_id[(variant, pid)]
            decls = item.findall(f"{QTI}responseDeclaration")
            assert len(decls) == len(p["answers"])
            conds = [c for c in item.findall(f"{QTI}responseProcessing/{QTI}responseCondition")
                     if c.find(f"{QTI}responseIf/{QTI}setOutcomeValue").get("identifier") == "SCORE"]
            assert len(conds) == len(p["answers"])
            for a, decl, cond in zip(p["answers"], decls, conds):
                kind = a.get("kind", "number")
                assert decl.get("baseType") == {"choice": "identifier", "whole": "integer"}.get(kind, "float")
                if kind == "number":
                    equal = cond.find(f"{QTI}responseIf/{QTI}equal")
                    assert equal.get("toleranceMode") == "relative"
                    assert float(equal.get("tolerance")) == pytest.approx(100 * a["rel_tol"])
            inputs = item.findall(f".//{QTI}textEntryInteraction") + item.findall(f".//{QTI}choiceInteraction")
            assert len(inputs) == len(p["answers"])


def test_qti21_package_reads_in_another_qti_tool(manifest, tmp_path):
    """Citolab's qti-convert (an independent QTI 2.x/3 implementation) finds every file the package refers to,
    the figures included, and upgrades every item to QTI 3 with one interaction per answer."""
    from qti_convert import fix_package_references_files, upgrade_package_files

    path, doc = manifest
    assert _export(path, "qti", tmp_path / "quiz.zip").exit_code == 0
    with zipfile.ZipFile(tmp_path / "quiz.zip") as z:
        files = {n: z.read(n) for n in z.namelist()}
    assert any(n.startswith("images/") for n in files), "the set has a figure"
    checked = fix_package_references_files(files)
    assert checked.fixed == [] and checked.unresolved == []
    without_figures = fix_package_references_files({n: d for n, d in files.items() if not n.startswith("images/")})
    assert without_figures.unresolved, "a missing figure must be found missing"
    upgraded = upgrade_package_files(files).files
    answers = {(v["id"], p["id"]): len(p["answers"]) for v in doc["variants"] for p in v["problems"]}
    items = [n for n in upgraded if n.startswith("items/")]
    assert len(items) == len(answers)
    for name in items:
        text = upgraded[name] if isinstance(upgraded[name], str) else upgraded[name].decode()
        item = ET.fromstring(text.encode())
        assert item.tag.endswith("qti-assessment-item")
        variant, _, pid = item.get("identifier").partition("-")
        interactions = [e for e in item.iter() if e.tag.split("}")[-1] in
                        ("qti-text-entry-interaction", "qti-choice-interaction", "qti-extended-text-interaction")]
        assert len(interactions) == answers[(variant, pid)], name


def test_canvas_package(manifest, tmp_path):
    path, doc = manifest
    result = _export(path, "canvas", tmp_path / "canvas.zip")
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(tmp_path / "canvas.zip") as z:
        cp = ET.fromstring(z.read("imsmanifest.xml"))
        ns = "{http://www.imsglobal.org/xsd/imsccv1p1/imscp_v1p1}"
        quiz = cp.find(f"{ns}resources/{ns}resource[@type='imsqti_xmlv1p2']")
        href = quiz.find(f"{ns}file").get("href")
        root = ET.fromstring(z.read(href))
        assert "assessment_meta.xml" in " ".join(z.namelist())
        # one quiz per variant, to assign to its student (question groups would draw each part on its own)
        quizzes = cp.findall(f"{ns}resources/{ns}resource[@type='imsqti_xmlv1p2']")
        assert len(quizzes) == len(doc["variants"])
        roots = [ET.fromstring(z.read(r.find(f"{ns}file").get("href"))) for r in quizzes]
    q = "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}"
    for variant, root in zip(doc["variants"], roots):
        assert root.find(f"{q}assessment").get("title") == f"scalemath week1 {variant['id']}"
        assert not root.findall(f"{q}assessment/{q}section/{q}section")  # no random groups
        items = root.findall(f".//{q}item")
        # a problem of several parts: a text-only stem (its id), then its parts, each with its prompt only
        assert [i.get("title") for i in items] == [t for p in variant["problems"] for t in
                                                    ([p["id"]] if len(p["answers"]) > 1 else []) +
                                                    [f"{p['id']} {a['name']}" for a in p["answers"]]]
        types = {f.findtext(f"{q}fieldentry") for f in root.iter(f"{q}qtimetadatafield")
                 if f.findtext(f"{q}fieldlabel") == "question_type"}
        assert types <= {"numerical_question", "multiple_choice_question", "text_only_question"}


def test_prairielearn_questions_validate_and_grade(manifest, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    path, doc = manifest
    result = _export(path, "prairielearn", tmp_path / "pl")
    assert result.exit_code == 0, result.output
    schema = json.loads((SCHEMAS / "prairielearn-infoQuestion.json").read_text())
    folders = sorted((tmp_path / "pl").iterdir())
    assert len(folders) == len(doc["variants"][0]["problems"])
    for folder in folders:
        info = json.loads((folder / "info.json").read_text())
        jsonschema.validate(info, schema)
        assert "scalemath" not in (folder / "server.py").read_text().split('"""', 2)[2].split("VARIANTS")[0]
    # run one question's server.py as PrairieLearn would: generate a variant, then grade submissions
    spec = importlib.util.spec_from_file_location("pl_server", folders[0] / "server.py")
    server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(server)
    seen = set()
    for seed in range(12):
        data = {"params": {}, "correct_answers": {}, "variant_seed": seed}
        server.generate(data)
        seen.add(data["params"]["variant"])
    assert seen == {"v01", "v02"}
    answers = data["params"]["answers"]
    right = {a["name"]: a["shown"] if a["kind"] != "whole" else a["exact"].split("/")[0] for a in answers}
    # pl-multiple-choice grades a choice before grade() runs, and grade() keeps its score
    chosen = {a["name"]: {"score": 1, "weight": 1} for a in answers if a["kind"] == "choice"}
    graded = {"params": data["params"], "submitted_answers": right, "partial_scores": dict(chosen), "feedback": {}}
    server.grade(graded)
    assert graded["score"] == 1, graded["feedback"]
    number = next(a for a in answers if a["kind"] == "number" and Fraction(a["exact"]) != 0)
    doubled = dict(right, **{number["name"]: repr(float(2 * Fraction(number["exact"])))})
    graded = {"params": data["params"], "submitted_answers": doubled, "partial_scores": dict(chosen), "feedback": {}}
    server.grade(graded)
    assert graded["partial_scores"][number["name"]]["score"] == 0
    # the same feedback as scalemath's own grader
    from scalemath.values.check import check_value
    from scalemath.values.parse import parse_number

    ours = check_value(parse_number(number["exact"]), number["unit"], doubled[number["name"]],
                       parse_number(number["rel_tol"])).diagnosis
    assert "a factor 2" in graded["partial_scores"][number["name"]]["feedback"]
    assert graded["partial_scores"][number["name"]]["feedback"].split(";")[0] == ours.split(";")[0]


def _choice_answer(doc):
    """The first choice answer of the first variant (gpu_fat_tree's bottleneck level), with its problem number."""
    return next((p["number"], a) for p in doc["variants"][0]["problems"] for a in p["answers"]
                if a.get("kind") == "choice")


def _moodle_choice(root, a, tmp_path):
    for q in root:
        if q.get("type") == "cloze":  # a set with variants: the choice is a MULTICHOICE field of a Cloze question
            for kind, options in _cloze_fields(q.findtext("questiontext/text")):
                if kind == "MULTICHOICE" and [value for _, value, _ in options] == a["choices"]:
                    return [value for _, value, _ in options], [value for f, value, _ in options if f == 100]
    q = next(q for q in root if q.get("type") == "multichoice" and q.findtext("name/text").endswith(a["name"]))
    assert q.findtext("single") == "true"
    texts = [x.findtext("text") for x in q.findall("answer")]
    right = [x.findtext("text") for x in q.findall("answer") if x.get("fraction") == "100"]
    return texts, right


def _qti_choice(zf, a, tmp_path):
    for name in zf.namelist():
        if not name.startswith("items/"):
            continue
        item = ET.fromstring(zf.read(name))
        for inter in item.iter(f"{QTI}choiceInteraction"):
            rid = inter.get("responseIdentifier")
            decl = next(d for d in item.iter(f"{QTI}responseDeclaration") if d.get("identifier") == rid)
            assert decl.get("cardinality") == "single" and decl.get("baseType") == "identifier"
            choices = {c.get("identifier"): c.text for c in inter.iter(f"{QTI}simpleChoice")}
            if list(choices.values()) == a["choices"]:
                # the prompt is the question itself: escaped once (no '&#x27;' left after parsing), no '?:'
                assert inter.findtext(f"{QTI}prompt") == a["description"]
                return list(choices.values()), [choices[decl.findtext(f"{QTI}correctResponse/{QTI}value")]]
    raise AssertionError("no choiceInteraction offers the choices")


def _canvas_choice(zf, a, tmp_path):
    ns = "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}"
    for name in zf.namelist():
        if not name.endswith(".xml") or name.endswith("imsmanifest.xml") or "assessment_meta" in name:
            continue
        root = ET.fromstring(zf.read(name))
        for item in root.iter(f"{ns}item"):
            labels = {r.get("ident"): r.findtext(f"{ns}material/{ns}mattext") for r in item.iter(f"{ns}response_label")}
            if list(labels.values()) == a["choices"]:
                right = [labels[v.text] for c in item.iter(f"{ns}respcondition") for v in c.iter(f"{ns}varequal")
                         if any(s.text == "100" for s in c.iter(f"{ns}setvar"))]
                return list(labels.values()), right
    raise AssertionError("no multiple_choice_question offers the choices")


@pytest.mark.parametrize("fmt,out", [("moodle", "quiz.xml"), ("qti", "quiz.zip"), ("canvas", "c.zip"),
                                     ("prairielearn", "pl")],
                         ids=["moodle-multichoice", "qti-choiceInteraction", "canvas-multiple_choice",
                              "prairielearn-pl-multiple-choice"])
def test_a_choice_is_exported_as_a_choice_with_its_right_answer(manifest, tmp_path, fmt, out):
    path, doc = manifest
    number, a = _choice_answer(doc)
    assert _export(path, fmt, tmp_path / out).exit_code == 0
    right_text = a["choices"][int(a["exact"])]
    if fmt == "moodle":
        texts, right = _moodle_choice(ET.parse(tmp_path / out).getroot(), a, tmp_path)
    elif fmt in ("qti", "canvas"):
        with zipfile.ZipFile(tmp_path / out) as zf:
            texts, right = (_qti_choice if fmt == "qti" else _canvas_choice)(zf, a, tmp_path)
    else:
        folder = sorted((tmp_path / out).iterdir())[number - 1]
        assert "<pl-multiple-choice answers-name=\"{{name}}\"" in (folder / "question.html").read_text()
        spec = importlib.util.spec_from_file_location("pl_choice", folder / "server.py")
        server = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(server)
        data = {"params": {}, "correct_answers": {}, "variant_seed": 0}
        server.generate(data)
        shown = next(x for x in data["params"]["answers"] if x["name"] == a["name"])
        assert shown["is_choice"] and a["name"] not in data["correct_answers"]  # the element keys it
        texts = [c["text"] for c in shown["choice_list"]]
        right = [c["text"] for c in shown["choice_list"] if c["correct"] == "true"]
        a = shown
        right_text = a["choices"][int(Fraction(a["exact"]))]
    assert texts == a["choices"] and right == [right_text]


@pytest.mark.parametrize("fmt,out", [("moodle", "quiz.xml"), ("qti", "quiz.zip"), ("canvas", "c.zip"),
                                     ("prairielearn", "pl")], ids=["moodle", "qti", "canvas", "prairielearn"])
def test_exports_never_overwrite_what_the_user_has(manifest, tmp_path, fmt, out):
    path, _ = manifest
    target = tmp_path / out
    if fmt == "prairielearn":
        target.mkdir()
        (target / "week1-q01").mkdir()
        (target / "week1-q01" / "mine.txt").write_text("keep")
    else:
        target.write_text("keep")
    result = _export(path, fmt, target)
    assert result.exit_code == 2 and "already exists" in result.output
    result = _export(path, fmt, target, "--force")
    assert result.exit_code == 2 and "did not write" in result.output
    if fmt == "prairielearn":
        assert (target / "week1-q01" / "mine.txt").read_text() == "keep"
    else:
        assert target.read_text() == "keep"
        target.unlink()
        assert _export(path, fmt, target).exit_code == 0
        assert _export(path, fmt, target, "--force").exit_code == 0  # scalemath's own file may be replaced


@pytest.mark.parametrize("content,fragment", [
    ("{not json", "not valid JSON"),
    ('{"problems": []}', "has no problems"),
    ('{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "s", "exact": "1", '
     '"rel_tol": 0.01}]}]}', "names no known generator and seed"),
], ids=["bad-json", "empty", "no-generator"])
def test_export_bad_manifest_is_one_clear_error(tmp_path, content, fragment):
    path = tmp_path / "m.json"
    path.write_text(content)
    result = _export(path, "moodle", tmp_path / "q.xml")
    assert result.exit_code == 2 and fragment in result.output and "Traceback" not in result.output
    assert not (tmp_path / "q.xml").exists()


def test_md_to_html_escapes_text_and_keeps_math():
    from scalemath.problems.lms.common import md_to_html

    html = md_to_html("<script>x</script> costs $a<b$ and\n\n$$\nT_{\\mathrm{x}}\n$$")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "\\(a&lt;b\\)" in html and "\\[\nT_{\\mathrm{x}}\n\\]" in html


@pytest.mark.parametrize("unit,typed,factor", [
    ("FLOP/s", "PFLOP/s", 10**15),
    ("FLOP/s", "TFLOP/s", 10**12),
    ("FLOP/s", "TFLOPS", 10**12),
    ("byte/s", "GB/s", 10**9),
    ("byte/s", "GiB/s", 2**30),
    ("byte/s", "Gbit/s", 125 * 10**6),
    ("FLOP/byte", "FLOPs/byte", 1),
    ("FLOP/byte", "FLOP/B", 1),
    ("token/s", "tokens/s", 1),
    ("token/s", "tokens/ms", 1000),
    ("s", "µs", Fraction(1, 10**6)),
], ids=["PFLOP/s", "TFLOP/s", "TFLOPS", "GB/s", "GiB/s", "Gbit/s", "FLOPs/byte", "FLOP/B", "tokens/s", "tokens/ms", "µs"])
def test_the_exports_take_a_unit_as_the_sheet_writes_it(unit, typed, factor):
    """Moodle's unit list and PrairieLearn's unit table (same_kind_units) hold the spellings the keys print and
    the grader reads, with the grader's factor."""
    from scalemath.values.units import parse_unit, same_kind_units

    table = same_kind_units(unit)
    assert table[typed] == factor == parse_unit(typed)[0] / parse_unit(unit)[0]


def test_every_unit_a_key_prints_is_in_the_exports_unit_table():
    from scalemath.values import printing as formatting
    from scalemath.problems.registry import generators, make_problem
    from scalemath.values.units import parse_unit, same_kind_units

    units = {a.unit for gen in generators().values() for seed in range(3)
             for a in make_problem(gen, seed).answers if a.kind in ("number", "whole") and a.unit not in ("1", "")}
    for unit in sorted(units):
        table = same_kind_units(unit)
        printed = {formatting.plural_unit(label) for _, label in formatting._PREFIXES.get(unit, [(1, unit)])}
        for text in printed - {unit}:
            assert text in table, (unit, text)
            assert table[text] == parse_unit(text)[0] / parse_unit(unit)[0], (unit, text)


@pytest.mark.parametrize("seed", [1, 2], ids=["seed1", "seed2"])
def test_a_full_set_exports_to_every_format_and_prairielearn_takes_the_key(tmp_path, seed):
    """Every generator once: irrational unrounded values (training_fsdp_tp's sqrt) and rationals close to 1
    (dot_product's 33554431/33554433) export, and each PrairieLearn question grades the key's own value right."""
    from scalemath.problems.registry import generators

    pset = sets.build_set(None, n=len(generators()), seed=seed)
    sets.write_set(pset, tmp_path / "set", ("json",))
    path = tmp_path / "set" / "manifest.json"
    for fmt, out in (("moodle", "q.xml"), ("qti", "q.zip"), ("canvas", "c.zip"), ("prairielearn", "pl")):
        result = _export(path, fmt, tmp_path / out)
        assert result.exit_code == 0, (fmt, result.output)
    for folder in sorted((tmp_path / "pl").iterdir()):
        spec = importlib.util.spec_from_file_location(f"pl_{folder.name}", folder / "server.py")
        server = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(server)
        data = {"params": {}, "correct_answers": {}, "variant_seed": 0}
        server.generate(data)
        for a in data["params"]["answers"]:
            if a["kind"] in ("number", "whole"):
                exact = Fraction(a["exact"])
                typed = str(exact.numerator) if exact.denominator == 1 else repr(float(exact))
                assert server.check(a, typed)[0] == 1, (folder.name, a["name"], typed)


def test_moodle_rounding_slip_catches_only_the_unrounded_value(one_variant, tmp_path):
    """The wrong answer at a count's unrounded value stops short of every whole number, and its feedback says how
    to round without giving the count away."""
    path, doc = one_variant
    assert _export(path, "moodle", tmp_path / "quiz.xml").exit_code == 0
    quiz = ET.parse(tmp_path / "quiz.xml").getroot()
    found = 0
    for q in quiz:
        if q.get("type") != "numerical" or q.find("answer").findtext("tolerance") != "0":
            continue
        whole = int(q.find("answer").findtext("text"))
        for x in q.findall("answer")[1:]:
            if "question asks for a whole number" not in x.findtext("feedback/text"):
                continue
            found += 1
            value, tol = float(x.findtext("text")), float(x.findtext("tolerance"))
            assert abs(value - round(value)) > tol, (q.findtext("name/text"), value, tol)
            assert str(whole) not in x.findtext("feedback/text")
    assert found


def test_a_cloze_formula_field_has_no_wildcard(tmp_path):
    """A Moodle short answer reads '*' as 'anything': a formula's products are escaped, so B*D/(4*X*W) is not
    taken for B*D/(4*W)."""
    from scalemath.problems.answer_key import _KeyAnswer
    from scalemath.problems.lms.common import Answer as LmsAnswer
    from scalemath.problems.lms.moodle import _cloze_field

    B, D, W = sp.symbols("B D W")
    key = _KeyAnswer("t", "s", B * D / (4 * W), sp.Integer(0), "expression")
    field = _cloze_field(LmsAnswer(key, "time", "s", sp.Integer(1), ()))
    body = field.split("=", 1)[1].split("#")[0]
    assert "*" in body and all(body[i - 1] == "\\" for i, c in enumerate(body) if c == "*"), field


def test_points_reach_canvas_and_moodle(tmp_path):
    """--points 10,30: Canvas's quiz is worth 40 and each question its problem's share; Moodle's questions carry the
    same grades (a Cloze question its problem's points)."""
    out = tmp_path / "set"
    made = CliRunner().invoke(main, ["problems", "generate", "--generator", "critical_intensity", "--generator",
                                     "dot_product", "--n", "2", "--seed", "3", "--points", "10,30", "--variants", "2",
                                     "--format", "json", "--out", str(out)])
    assert made.exit_code == 0, made.output
    assert _export(out / "manifest.json", "canvas", tmp_path / "c.zip").exit_code == 0
    with zipfile.ZipFile(tmp_path / "c.zip") as z:
        metas = [ET.fromstring(z.read(n)) for n in z.namelist() if n.endswith("assessment_meta.xml")]
    ns = "{http://canvas.instructure.com/xsd/cccv1p0}"
    assert [float(m.findtext(f"{ns}points_possible")) for m in metas] == [40.0, 40.0]
    assert _export(out / "manifest.json", "moodle", tmp_path / "q.xml").exit_code == 0
    grades = [float(q.findtext("defaultgrade")) for q in ET.parse(tmp_path / "q.xml").getroot()
              if q.get("type") == "cloze"]
    assert sorted(grades) == [10.0, 10.0, 30.0, 30.0]
    # QTI: each item reference weighs its right answers by their share of the points; the test sums them
    assert _export(out / "manifest.json", "qti", tmp_path / "q.zip").exit_code == 0
    with zipfile.ZipFile(tmp_path / "q.zip") as z:
        test = ET.fromstring(z.read(next(n for n in z.namelist() if n.startswith("tests/"))))
    weights = [float(w.get("value")) for w in test.iter(f"{QTI}weight")]
    refs = list(test.iter(f"{QTI}assessmentItemRef"))
    assert len(weights) == len(refs) == 2 and test.find(f"{QTI}outcomeProcessing") is not None
    key = json.loads((out / "manifest.json").read_text())["variants"][0]["problems"]
    assert weights == [p["points"] / len(p["answers"]) for p in key]


# -- the official QTI 2.1 schema (tests/schemas/qti21: IMS's XSDs, unchanged, as QTIWorks vendors them) ---------

QTI21_XSD = SCHEMAS / "qti21" / "www.imsglobal.org" / "xsd" / "imsqti_v2p1.xsd"


@pytest.fixture(scope="module")
def qti21_schema():
    """IMS's imsqti_v2p1.xsd with its imports (xml.xsd, XInclude.xsd, MathML 2, APIP) read from tests/schemas/qti21:
    the files are kept unchanged, so their absolute schemaLocation URLs are resolved to the local copies (laid
    out by host and path, as QTIWorks' XML catalog lays them out) and the network is never used."""
    etree = pytest.importorskip("lxml.etree")
    root = SCHEMAS / "qti21"

    class Local(etree.Resolver):
        def resolve(self, url, public_id, context):
            if not url.startswith(("http://", "https://")):
                return None  # a local file (the schema itself, a relative include of MathML's): lxml reads it
            local = root / url.partition("://")[2]
            if local.is_file():
                return self.resolve_filename(str(local), context)
            raise AssertionError(f"the QTI 2.1 schema imports {url}, which tests/schemas/qti21 does not hold")

    parser = etree.XMLParser(no_network=True, resolve_entities=False)
    parser.resolvers.add(Local())
    return etree, etree.XMLSchema(etree.parse(str(QTI21_XSD), parser))


def test_qti21_package_is_valid_against_the_official_schema(manifest, tmp_path, qti21_schema):
    """Every item and test of the package validates against imsqti_v2p1.xsd, and the schema is no rubber stamp:
    an item whose modal feedback lacks its outcome, or whose response processing sets an undeclared construct,
    fails."""
    etree, schema = qti21_schema
    path, doc = manifest
    assert _export(path, "qti", tmp_path / "quiz.zip").exit_code == 0
    with zipfile.ZipFile(tmp_path / "quiz.zip") as z:
        docs = {n: etree.fromstring(z.read(n)) for n in z.namelist() if n.startswith(("items/", "tests/"))}
    assert len([n for n in docs if n.startswith("items/")]) == sum(len(v["problems"]) for v in doc["variants"])
    for name, root in docs.items():
        assert schema.validate(root), (name, str(schema.error_log.last_error))
    item = next(root for name, root in docs.items() if name.startswith("items/"))
    broken = etree.fromstring(etree.tostring(item))
    del broken.find(f"{QTI}modalFeedback").attrib["outcomeIdentifier"]
    assert not schema.validate(broken)
    broken = etree.fromstring(etree.tostring(item))
    broken.find(f"{QTI}responseProcessing").append(etree.Element(f"{QTI}showFeedback"))
    assert not schema.validate(broken)


def _problems(doc):
    from scalemath.problems.registry import generators, make_problem

    gens = generators()
    return [(v["id"], p, make_problem(gens[p["generator"]], p["seed"], p["id"])) for v in doc["variants"]
            for p in v["problems"]]


@pytest.mark.parametrize("fmt,out", [("moodle", "quiz.xml"), ("qti", "quiz.zip"), ("canvas", "c.zip"),
                                     ("prairielearn", "pl")], ids=["moodle", "qti", "canvas", "prairielearn"])
@pytest.mark.parametrize("which", ["variants", "plain"])
def test_every_format_reports_one_question_per_problem_and_variant(manifest, one_variant, tmp_path, fmt, out, which):
    """One count everywhere: a question is one problem of one variant, whatever its number of answers; the count
    every format reports is the manifest's problems counted by hand."""
    path, doc = manifest if which == "variants" else one_variant
    result = _export(path, fmt, tmp_path / out)
    assert result.exit_code == 0, result.output
    n = sum(len(v["problems"]) for v in doc["variants"])
    assert result.output.startswith(f"wrote {n} questions ({len(doc['variants'])} variant"), result.output


@pytest.mark.parametrize("which", ["variants", "plain"])
def test_stems_are_written_once(manifest, one_variant, tmp_path, which):
    """A problem's stem is in one question text per problem and variant in Moodle and Canvas (never once per part);
    the parts that follow a stem hold their prompts only."""
    from scalemath.problems.lms.common import md_to_html

    path, doc = manifest if which == "variants" else one_variant
    firsts = [md_to_html(render.render_problem(problem, "md", "statement")).split("</p>")[0] + "</p>"
              for _, _, problem in _problems(doc)]
    for fmt, out in (("moodle", "q.xml"), ("canvas", "c.zip")):
        assert _export(path, fmt, tmp_path / out).exit_code == 0
        if fmt == "moodle":
            texts = [t.text or "" for t in ET.parse(tmp_path / out).getroot().iter("text")]
        else:
            with zipfile.ZipFile(tmp_path / out) as z:
                texts = [t.text or "" for n in z.namelist() if n.endswith(".xml") and "/" in n
                         for t in ET.fromstring(z.read(n)).iter("{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}mattext")]
        for first in firsts:
            assert sum(first in t for t in texts) == firsts.count(first), (fmt, first)


def _solution_starts(doc):
    """((variant, problem id), first paragraph of its worked solution as HTML), for every problem of every variant."""
    from scalemath.problems.lms.common import md_to_html

    return [((v, p["id"]), md_to_html(render.render_problem(problem, "md", "solution")).split("</p>")[0] + "</p>")
            for v, p, problem in _problems(doc)]


@pytest.mark.parametrize("which", ["variants", "plain"])
def test_moodle_carries_the_worked_solution_as_general_feedback(manifest, one_variant, tmp_path, which):
    path, doc = manifest if which == "variants" else one_variant
    assert _export(path, "moodle", tmp_path / "q.xml").exit_code == 0
    quiz = ET.parse(tmp_path / "q.xml").getroot()
    general = [q.findtext("generalfeedback/text") or "" for q in quiz if q.get("type") != "category"]
    for problem, start in _solution_starts(doc):
        # once per problem and variant (a plain set: on the last part only)
        assert sum(start in g for g in general) == [s for _, s in _solution_starts(doc)].count(start), problem
    assert all(g.startswith("<p><strong>Worked solution</strong></p>") for g in general if g)


def test_qti21_shows_the_solution_after_the_attempt_and_words_each_slip(manifest, tmp_path):
    """Response processing puts SOLUTION in FEEDBACK unconditionally (so the worked solution's modalFeedback shows
    after every attempt), and a number within tolerance of twice the key shows the factor-2 slip's feedback."""
    path, doc = manifest
    assert _export(path, "qti", tmp_path / "q.zip").exit_code == 0
    starts = dict(_solution_starts(doc))
    by_id = {(v["id"], p["id"]): p for v in doc["variants"] for p in v["problems"]}
    doubled = 0
    with zipfile.ZipFile(tmp_path / "q.zip") as z:
        for name in (n for n in z.namelist() if n.startswith("items/")):
            item = ET.fromstring(z.read(name))
            variant, _, pid = item.get("identifier").partition("-")
            decl = item.find(f"{QTI}outcomeDeclaration[@identifier='FEEDBACK']")
            assert decl.get("cardinality") == "multiple" and decl.get("baseType") == "identifier"
            first = item.find(f"{QTI}responseProcessing")[0]
            assert first.tag == f"{QTI}setOutcomeValue" and first.get("identifier") == "FEEDBACK"
            assert first.findtext(f"{QTI}multiple/{QTI}baseValue") == "SOLUTION"
            feedback = {f.get("identifier"): f for f in item.findall(f"{QTI}modalFeedback")}
            solution = feedback["SOLUTION"]
            assert solution.get("outcomeIdentifier") == "FEEDBACK" and solution.get("showHide") == "show"
            words = re.sub(r"<[^>]+>", "", html.unescape(starts[(variant, pid)]))
            assert words[:40] in "".join(solution.itertext()), name
            for cond in item.findall(f"{QTI}responseProcessing/{QTI}responseCondition"):
                branch = cond.find(f"{QTI}responseIf")
                setter = branch.find(f"{QTI}setOutcomeValue")
                if setter.get("identifier") != "FEEDBACK":
                    continue
                ident = setter.findtext(f"{QTI}multiple/{QTI}baseValue")
                index = int(branch.find(f"{QTI}equal/{QTI}variable").get("identifier").split("_")[1]) - 1
                a = by_id[(variant, pid)]["answers"][index]
                value = float(branch.findtext(f"{QTI}equal/{QTI}baseValue"))
                correct = float(item.findtext(f"{QTI}responseDeclaration[@identifier='RESPONSE_{index + 1}']/"
                                              f"{QTI}correctResponse/{QTI}value"))
                if correct and value == pytest.approx(2 * correct, rel=1e-12):
                    doubled += 1
                    assert "2x the expected value: a factor 2" in "".join(feedback[ident].itertext()), (name, a["name"])
    assert doubled


def test_canvas_carries_the_solution_and_the_slips(manifest, tmp_path):
    """The last part of every problem has the worked solution as its general feedback, shown whatever the answer;
    a number's wrong-answer comment lists the usual slips."""
    path, doc = manifest
    assert _export(path, "canvas", tmp_path / "c.zip").exit_code == 0
    q = "{http://www.imsglobal.org/xsd/ims_qtiasiv1p2}"
    starts = dict(_solution_starts(doc))
    with zipfile.ZipFile(tmp_path / "c.zip") as z:
        items = {i.get("ident"): i for n in z.namelist() if n.endswith(".xml") and "/" in n
                 and not n.endswith("assessment_meta.xml") for i in ET.fromstring(z.read(n)).iter(f"{q}item")}
    slips = 0
    for v in doc["variants"]:
        for p in v["problems"]:
            last = items[f"{v['id']}-{p['id']}-{p['answers'][-1]['name']}"]
            fb = last.find(f"{q}itemfeedback[@ident='general_fb']")
            assert starts[(v["id"], p["id"])] in fb.findtext(f"{q}flow_mat/{q}material/{q}mattext")
            shown = [c for c in last.iter(f"{q}respcondition")
                     if c.find(f"{q}displayfeedback[@linkrefid='general_fb']") is not None]
            assert len(shown) == 1 and shown[0].get("continue") == "Yes"
            assert shown[0].find(f"{q}conditionvar/{q}other") is not None
            for a in p["answers"][:-1]:  # the solution once, on the last part
                assert items[f"{v['id']}-{p['id']}-{a['name']}"].find(f"{q}itemfeedback[@ident='general_fb']") is None
            for a in p["answers"]:
                wrong = items[f"{v['id']}-{p['id']}-{a['name']}"].find(f"{q}itemfeedback[@ident='general_incorrect_fb']")
                if a.get("kind", "number") == "number" and Fraction(a["exact"]) != 0:
                    slips += 1
                    assert "a factor 2" in wrong.findtext(f"{q}flow_mat/{q}material/{q}mattext")
    assert slips


def test_prairielearn_shows_the_solution_in_its_answer_panel(manifest, tmp_path):
    path, doc = manifest
    assert _export(path, "prairielearn", tmp_path / "pl").exit_code == 0
    starts = dict(_solution_starts(doc))
    for folder in sorted((tmp_path / "pl").iterdir()):
        panel = (folder / "question.html").read_text().split("<pl-answer-panel>")[1].split("</pl-answer-panel>")[0]
        assert "{{{params.solution}}}" in panel
        spec = importlib.util.spec_from_file_location(f"pl_sol_{folder.name}", folder / "server.py")
        server = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(server)
        for seed in range(8):
            data = {"params": {}, "correct_answers": {}, "variant_seed": seed}
            server.generate(data)
            variant, pid = data["params"]["variant"], server.VARIANTS[0]["id"]
            chosen = next(x for x in server.VARIANTS if x["variant"] == variant)
            assert starts[(variant, chosen["id"])] in data["params"]["solution"], (folder.name, pid)


# -- what a student sees: a Moodle question with its general feedback, a QTI item's modal feedback, in Chromium --

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.mark.skipif((CHROMIUM is None or DRIVER is None or importlib.util.find_spec("selenium") is None)
                    and not os.environ.get("CI"),
                    reason="needs chromium, chromedriver (Debian: apt-get install chromium chromium-driver) and "
                           "selenium (the test extra); CI installs them and runs this test")
def test_a_student_sees_the_question_the_solution_and_a_slip_in_a_browser(manifest, tmp_path):
    """Rendered as a phone-width page (412 px): a Moodle Cloze question then its general feedback, and a QTI item's
    modal feedback (the solution and a slip's words). The text a student reads has the worked solution, no markup
    or Markdown shown as text (no '&lt;', '&amp;', '<p>', no stars of an emphasis outside math), and nothing is
    wider than the page. The screenshots are left in the test's tmp_path to look at."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    path, doc = manifest
    assert _export(path, "moodle", tmp_path / "q.xml").exit_code == 0
    assert _export(path, "qti", tmp_path / "q.zip").exit_code == 0
    quiz = ET.parse(tmp_path / "q.xml").getroot()
    cloze = next(q for q in quiz if q.get("type") == "cloze" and "<em>" in q.findtext("generalfeedback/text"))
    field = re.compile(r"\{1:(?:NUMERICAL|MULTICHOICE|SHORTANSWER):(?:\\.|[^}])*\}")
    moodle = (field.sub('<input size="10">', cloze.findtext("questiontext/text")) +
              '<div class="feedback">' + cloze.findtext("generalfeedback/text") + "</div>")
    with zipfile.ZipFile(tmp_path / "q.zip") as z:
        item = next(ET.fromstring(z.read(n)) for n in z.namelist() if n.startswith("items/")
                    and b"SLIP_" in z.read(n))
    ET.register_namespace("", QTI[1:-1])
    qti = "".join(f'<div class="feedback"><b>{html.escape(f.get("title"))}</b>' +
                  "".join(ET.tostring(c, encoding="unicode") for c in f) + "</div>"
                  for f in item.findall(f"{QTI}modalFeedback")[:2])
    style = "<style>body{font-family:sans-serif;margin:8px} .feedback{background:#fcefdc;padding:4px 8px}</style>"
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    browser = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        for name, body in (("moodle", moodle), ("qti", qti)):
            page = tmp_path / f"{name}.html"
            page.write_text(f"<!doctype html><meta charset=utf-8>{style}{body}")
            browser.set_window_size(412, 900)
            browser.get(page.as_uri())
            text = browser.execute_script("return document.body.innerText")
            prose = re.sub(r"\\\[.*?\\\]|\\\(.*?\\\)", " ", text, flags=re.S)  # MathJax's part: raw here
            assert "Worked solution" in text and text.count("the expected value") >= (name == "qti")
            assert not re.search(r"&lt;|&gt;|&amp;|</?p>|<em>|\*", prose), (name, prose[:400])
            assert browser.execute_script("return document.documentElement.scrollWidth") <= 412, name
            browser.set_window_size(412, browser.execute_script("return document.body.scrollHeight") + 20)
            assert browser.save_screenshot(str(tmp_path / f"{name}.png"))
    finally:
        browser.quit()
