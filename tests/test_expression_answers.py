"""Closed-form answers (kind "expression"): the manifest record, grading a typed formula, and the LMS exports."""

import json
import zipfile

import pytest
import sympy as sp
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.errors import BadValueError
from scalemath.problems import sets
from scalemath.problems.grading import grade
from scalemath.problems.lms import export
from scalemath.problems.model import Accepted, Answer

V, N, W = (sp.Symbol(n, positive=True) for n in ("V", "N", "W"))
SYMBOLS = {"V": "bytes of the array", "N": "devices on the ring", "W": "bandwidth, both directions"}


def _manifest(exact, accept=(), symbols=SYMBOLS):
    a = {"name": "t", "description": "time", "unit": "s", "kind": "expression", "exact": exact,
         "symbols": symbols, "rel_tol": 0.0}
    if accept:
        a["accept"] = [{"exact": e, "why": why} for e, why in accept]
    return {"problems": [{"id": "p1", "params": {}, "answers": [a]}]}


# The book's ring costs (sharding.md, 'What Have We Learned?' and S-8, S-11): an AllGather or ReduceScatter
# moves (N-1)/N of V per device, V/W bandwidth-bound; an AllToAll a quarter of that, V/(4W).
RING = "V*(N - 1)/(N*W)"
GRADE_CASES = [
    ("(N-1)/N * V/W", RING, "right", None),
    ("V/W - V/(N*W)", RING, "right", None),
    ("(1 - 1/N) * V * W**-1", RING, "right", None),
    ("V/W", RING, "wrong", "(N-1)/N factor is missing"),
    ("2*V/W", RING, "wrong", "not all of it), and your answer is 2x"),
    ("2*(N-1)/N * V/W", RING, "wrong", "2x the expected value"),
    ("V/(4*W)", "V/(4*W)", "right", None),
    ("0.25*V/W", "V/(4*W)", "right", None),
    ("V/W", "V/(4*W)", "wrong", "4x the expected value"),
    ("V/(2*W)", "V/(4*W)", "wrong", "2x the expected value"),
    ("V*N/W", "V/(4*W)", "wrong", None),
    ("V/(4*W", "V/(4*W)", "unreadable", "cannot read"),
    ("__import__('os').system('true')", "V/(4*W)", "unreadable", "not allowed"),
    ("V/(4*B)", "V/(4*W)", "unreadable", "unknown name 'B'"),
    (42, "V/(4*W)", "wrong", None),
    (["V"], "V/(4*W)", "unreadable", "give a formula in V, N, W"),
    (None, "V/(4*W)", "missing", None),
]


@pytest.mark.parametrize("given, exact, verdict, fragment", GRADE_CASES,
                         ids=["ring-as-written", "ring-expanded", "ring-negative-power", "ring-dropped",
                              "ring-dropped-and-2x", "ring-2x", "a2a", "a2a-decimal", "a2a-4x", "a2a-2x",
                              "a2a-other-form", "unbalanced", "python-call", "unknown-name", "a-number",
                              "a-list", "blank"])
def test_a_typed_formula_is_graded_by_equivalence_and_its_slip_named(given, exact, verdict, fragment):
    score, graded, _ = grade({"p1": {"t": given}}, _manifest(exact))
    g = graded[0]
    assert g.verdict == verdict, g
    if fragment:
        assert fragment in (g.diagnosis or ""), g.diagnosis
    assert g.as_dict()["expected"] == exact and g.as_dict()["expected_value"] is None


def test_an_accepted_form_is_right_with_its_reason():
    key = _manifest("V/W", accept=[(RING, "the exact ring cost, (N-1)/N kept")])
    _, graded, _ = grade({"p1": {"t": "(N - 1) * V / (N * W)"}}, key)
    assert graded[0].verdict == "right" and graded[0].note == "the exact ring cost, (N-1)/N kept"


BAD_KEYS = [
    (_manifest("V/W", symbols={}), "symbols must map"),
    (_manifest("V/W", symbols={"V": 1}), "symbols must map"),
    (_manifest("V/W", symbols={"2x": "bad"}), "symbols must map"),
    (_manifest("V/Q"), "unknown name 'Q'"),
    (_manifest("__import__('os')"), "not allowed"),
    (_manifest(3), "exact must be text"),
    (_manifest("V/W", accept=[("V/", "broken")]), "accept[0].exact"),
]


@pytest.mark.parametrize("key, fragment", BAD_KEYS, ids=["no-symbols", "meaning-not-text", "bad-name",
                                                         "form-uses-unknown", "form-is-code", "form-not-text",
                                                         "accepted-form-broken"])
def test_a_broken_expression_key_is_one_clear_error(key, fragment):
    with pytest.raises(BadValueError, match="manifest") as info:
        grade({}, key)
    assert fragment in str(info.value)


def test_answer_record_and_its_checks():
    a = Answer("t", "time", V * (N - 1) / (N * W), "s", kind="expression",
               symbols=tuple(SYMBOLS.items()), accept=(Accepted(V / W, "large ring"),))
    rec = a.as_manifest()
    assert rec["kind"] == "expression" and rec["exact"] == RING and rec["symbols"] == SYMBOLS
    assert rec["accept"] == [{"exact": "V/W", "why": "large ring"}] and "value" not in rec
    score, _, _ = grade({"p1": {"t": "V/W*(N-1)/N"}}, {"problems": [{"id": "p1", "params": {}, "answers": [rec]}]})
    assert score == 1
    with pytest.raises(ValueError, match="not among its symbols"):
        Answer("t", "time", V / sp.Symbol("Q", positive=True), "s", kind="expression", symbols=tuple(SYMBOLS.items()))
    with pytest.raises(ValueError, match="names its symbols"):
        Answer("t", "time", V / W, "s", kind="expression")


# -- a generated set: sheet, answers.json, grading, exports -------------------------------------------

@pytest.fixture(scope="module")
def derive_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("derive") / "s"
    pset = sets.build_set(n=3, seed=3, generator_names=["derive_all_to_all", "derive_reduce_scatter",
                                                        "derive_backward_comms"])
    sets.write_set(pset, out, ("md", "json"))
    return out


def test_sheet_says_formula_and_symbols_and_blank_answers(derive_set):
    sheet = (derive_set / "problems.md").read_text()
    assert "a formula in s, over" in sheet and "any equivalent way of writing it is right" in sheet
    blank = json.loads((derive_set / "answers.json").read_text())["answers"]
    key = json.loads((derive_set / "manifest.json").read_text())
    forms = [a for p in key["problems"] for a in p["answers"] if a.get("kind") == "expression"]
    assert forms and all(blank[p["id"]][a["name"]] is None for p in key["problems"] for a in p["answers"])
    right = {p["id"]: {a["name"]: (a["exact"] if a.get("kind") == "expression" else
                                   a["choices"][int(a["exact"])] if a.get("kind") == "choice" else a["value"])
                       for a in p["answers"]} for p in key["problems"]}
    score, graded, _ = grade(right, key)
    assert score == 1, [g for g in graded if g.verdict != "right"]


def test_exports_ask_formulas_in_each_format(derive_set, tmp_path):
    manifest = derive_set / "manifest.json"
    key = json.loads(manifest.read_text())
    n_forms = sum(a.get("kind") == "expression" for p in key["problems"] for a in p["answers"])
    first = next(a for p in key["problems"] for a in p["answers"] if a.get("kind") == "expression")

    moodle = export(manifest, "moodle", tmp_path / "m.xml")
    text = (tmp_path / "m.xml").read_text()
    assert moodle.hand_graded == n_forms and text.count('type="essay"') == n_forms
    assert "<graderinfo" in text and first["exact"].replace("*", "*") in text

    qti = export(manifest, "qti", tmp_path / "q.zip")
    with zipfile.ZipFile(tmp_path / "q.zip") as z:
        items = "".join(z.read(n).decode() for n in z.namelist() if n.startswith("items/"))
    assert qti.hand_graded == n_forms and items.count("extendedTextInteraction ") == n_forms
    assert items.count('rubricBlock view="scorer"') == n_forms and 'baseType="string"' in items

    export(manifest, "canvas", tmp_path / "c.zip")
    with zipfile.ZipFile(tmp_path / "c.zip") as z:
        quiz = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".xml"))
    assert quiz.count("essay_question") == n_forms

    export(manifest, "prairielearn", tmp_path / "pl")
    html = "".join(p.read_text() for p in (tmp_path / "pl").glob("*/question.html"))
    assert "pl-symbolic-input" in html and 'variables="{{variables}}"' in html
    server = next((tmp_path / "pl").glob("*-q01/server.py"))
    ns: dict = {}
    exec(compile(server.read_text(), str(server), "exec"), ns)  # the exported file, as PrairieLearn runs it
    data = {"variant_seed": 1, "params": {}, "correct_answers": {}}
    ns["generate"](data)
    forms = [a for a in data["params"]["answers"] if a["kind"] == "expression"]
    assert forms and all(a["is_expression"] and a["variables"] for a in forms)
    assert all(data["correct_answers"][a["name"]] == a["form"] for a in forms)
    # pl-symbolic-input has scored the formulas before grade() runs: their scores stand
    data.update(submitted_answers={}, feedback={}, partial_scores={a["name"]: {"score": 1} for a in forms})
    ns["grade"](data)
    assert all(data["partial_scores"][a["name"]] == {"score": 1} for a in forms)
    assert data["score"] == pytest.approx(len(forms) / len(data["params"]["answers"]))


def test_cli_export_summary_says_formulas_are_graded_by_hand(derive_set, tmp_path):
    r = CliRunner().invoke(main, ["problems", "export", str(derive_set / "manifest.json"), "--format", "moodle",
                                  "--out", str(tmp_path / "x.xml")])
    assert r.exit_code == 0, r.output
    assert "graded by hand" in r.output and "Moodle has no symbolic question type" in r.output
