"""Grading answer sheets against a generated set's manifest."""

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.errors import BadValueError
from scalemath.problems import sets
from scalemath.problems.grading import grade


@pytest.fixture(scope="module")
def key_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("set") / "s"
    sets.write_set(sets.build_set(n=15, seed=11), out, ("json",))
    return out


def _key(key_dir):
    return json.loads((key_dir / "manifest.json").read_text())


def _right(a, as_text=False):
    """The right answer to a manifest answer record, as a student would type it."""
    if a.get("kind") == "choice":
        return a["choices"][int(a["exact"])] if not as_text else "(" + "abcdefghij"[int(a["exact"])] + ")"
    if a.get("kind") == "whole":
        if not as_text:
            return int(a["exact"])
        return a["exact"] if a["unit"] == "1" else f"{a['exact']} {a['unit']}"  # a plain count has no unit
    if a.get("kind") == "expression":
        return a["exact"]  # the key's form, typed as the manifest writes it
    if as_text:
        from scalemath.values import printing as formatting
        from scalemath.values.parse import parse_number

        return formatting.with_unit(parse_number(a["exact"]), a["unit"])  # as the key prints it
    return a["value"]


#: a hands-on problem's code answer in these tables: graded "right" by the stand-in below, never run (the sandbox
#: runs real code answers in tests/test_grading_code.py)
PASSING_CODE = "# stands in for a passing submission"


@pytest.fixture(autouse=True)
def _code_stand_in(monkeypatch):
    from scalemath.problems.coderun import grade as code_grade
    from scalemath.problems.coderun import sheet

    def fake(task, source, *args, **kwargs):
        ok = source == PASSING_CODE.encode()
        return code_grade.CodeGrade("right" if ok else "wrong values", "stand-in verdict")

    monkeypatch.setattr(sheet, "grade_code", fake)


def _asked(p):
    """The answers a manifest problem asks for: its keyed answers, and a hands-on problem's code."""
    return [a["name"] for a in p["answers"]] + (["code"] if p["generator"].startswith("handson_") else [])


def _own_answers(key, as_text=False):
    return {p["id"]: {a["name"]: _right(a, as_text) for a in p["answers"]}
            | ({"code": PASSING_CODE} if p["generator"].startswith("handson_") else {}) for p in key["problems"]}


def test_blank_answers_file_lists_every_answer(key_dir):
    blank = json.loads((key_dir / "answers.json").read_text())
    key = _key(key_dir)
    # a hands-on problem also asks for its code (a path beside the sheet, or the code itself)
    assert blank == {"set": key["set_id"],
                     "answers": {p["id"]: {a["name"]: None for a in p["answers"]}
                                 | ({"code": None} if p["generator"].startswith("handson_") else {})
                                 for p in key["problems"]}}
    score, graded, _ = grade(blank, key)
    assert score == 0 and all(g.verdict == "missing" for g in graded)


def test_a_sheet_without_its_set_line_is_still_read(key_dir):
    key = _key(key_dir)
    blank = json.loads((key_dir / "answers.json").read_text())
    score, graded, warnings = grade({"answers": blank["answers"]}, key)
    assert not warnings and all(g.verdict == "missing" for g in graded) and graded


def test_a_sheet_of_another_set_is_refused(key_dir):
    key = _key(key_dir)
    blank = json.loads((key_dir / "answers.json").read_text())
    with pytest.raises(BadValueError, match="is a sheet of set 'f00ba47000', but the key is set"):
        grade(dict(blank, set="f00ba47000"), key)


@pytest.mark.parametrize("as_text", [False, True], ids=["numbers", "as-the-key-prints-them"])
def test_a_set_graded_against_its_own_key_scores_100(key_dir, as_text):
    key = _key(key_dir)
    score, graded, warnings = grade(_own_answers(key, as_text), key)
    assert score == 1 and not warnings and graded


def test_one_wrong_answer_scores_below_and_is_named_with_its_slip(key_dir):
    key = _key(key_dir)
    answers = _own_answers(key)
    victim = next(p for p in key["problems"] if p["answers"][0].get("kind", "number") == "number")
    name = victim["answers"][0]["name"]
    answers[victim["id"]][name] *= 2
    score, graded, _ = grade(answers, key)
    total = sum(len(_asked(p)) for p in key["problems"])
    assert score == Fraction(total - 1, total)
    wrong = [g for g in graded if g.verdict != "right"]
    assert [(g.problem, g.answer) for g in wrong] == [(victim["id"], name)]
    assert "a factor 2" in wrong[0].diagnosis


def test_unknown_ids_and_names_are_warned_not_fatal(key_dir):
    key = _key(key_dir)
    answers = _own_answers(key) | {"nope-1": {"x": 1}}
    answers[key["problems"][0]["id"]]["bogus"] = 3
    score, _, warnings = grade(answers, key)
    assert score == 1 and len(warnings) == 2


def test_unreadable_answer_is_graded_not_crashing(key_dir):
    key = _key(key_dir)
    answers = _own_answers(key)
    answers[key["problems"][0]["id"]][key["problems"][0]["answers"][0]["name"]] = "__import__('os')"
    _, graded, _ = grade(answers, key)
    assert sum(g.verdict == "unreadable" for g in graded) == 1


def test_cli_grade_text_and_json(key_dir, tmp_path):
    key = _key(key_dir)
    answers = _own_answers(key)
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    result = CliRunner().invoke(main, ["problems", "grade", str(path), "--key", str(key_dir / "manifest.json")])
    assert result.exit_code == 0 and "score:" in result.output and "= 100%" in result.output
    victim = [p for p in key["problems"] if p["answers"][0].get("kind", "number") == "number"][1]
    answers[victim["id"]][victim["answers"][0]["name"]] = 0.5 * victim["answers"][0]["value"]
    path.write_text(json.dumps(answers))
    result = CliRunner().invoke(main, ["problems", "grade", str(path), "--key", str(key_dir / "manifest.json"),
                                       "--format", "json"])
    data = json.loads(result.output)
    assert result.exit_code == 1 and 0 < data["score"] < 1
    assert [a["problem"] for a in data["answers"] if a["verdict"] == "wrong"] == [victim["id"]]


@pytest.mark.parametrize("answers,key,fragment", [
    ("{not json", None, "not valid JSON"),
    ("[1, 2]", None, "must be a JSON object"),
    ("{}", '{"problems": 3}', "not a scalemath manifest"),
    ("{}", '{"variants": []}', "has no variants"),
    ('{"variant": "v9", "answers": {}}', "variants", "unknown variant 'v9'"),
    ('{"answers": {}, "student": "a"}', "variants", "does not say which variant"),
    ("{}", '{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "chip", "exact": "2", '
           '"rel_tol": 0.01, "kind": "whole"}]}]}', "problems[0].answers[0].rounding is missing"),
    ("{}", '{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "1", "exact": "5", '
           '"rel_tol": 0, "kind": "choice", "choices": ["p", "q"]}]}]}', "index of one of its choices"),
    ("{}", '{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "1", "exact": "1", '
           '"rel_tol": 0, "kind": "guess"}]}]}', "must be number, whole, choice or expression"),
    ("{}", "missing", "No such file"),
    ("{}", '{"problems": []}', "has no problems"),
    ("{}", '{"problems": [{"id": "x", "params": [], "answers": []}]}', "problems[0].params must be an object"),
    ("{}", '{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "s", "exact": "1/0", '
           '"rel_tol": 0.01}]}]}', "problems[0].answers[0].exact must be an exact number"),
    ("{}", '{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "s", "exact": "1", '
           '"rel_tol": true}]}]}', "problems[0].answers[0].rel_tol must be a number"),
    ('{"a": NaN}', None, "NaN is not a JSON number"),
], ids=["bad-json", "not-object", "not-manifest", "no-variants", "unknown-variant", "no-variant-named",
        "whole-no-rounding", "choice-index", "unknown-kind", "no-key", "no-problems", "params-list", "exact-1/0",
        "rel-tol-bool", "nan-answer"])
def test_bad_files_are_clear_errors(tmp_path, key_dir, answers, key, fragment):
    a = tmp_path / "a.json"
    a.write_text(answers)
    if key is None:
        k = key_dir / "manifest.json"
    elif key == "variants":
        k = tmp_path / "k.json"
        k.write_text(json.dumps(_variants_manifest(key_dir, seeds=(11, 12))))
    elif key == "missing":
        k = tmp_path / "missing.json"
    else:
        k = tmp_path / "k.json"
        k.write_text(key)
    result = CliRunner().invoke(main, ["problems", "grade", str(a), "--key", str(k)])
    assert result.exit_code == 2 and fragment in result.output and "Traceback" not in result.output


# -- variants, answer kinds, a class --------------------------------------------------------------------

def _variants_manifest(key_dir, seeds=(11,)):
    """A manifest with variants, built by hand as the contract of issue 12 describes it (one per seed)."""
    from scalemath.problems import render

    variants = []
    for i, seed in enumerate(seeds):
        pset = sets.build_set(n=15, seed=seed)
        doc = json.loads(render.manifest(pset.problems, seed=seed, topics=pset.topics, n=15))
        variants.append({"id": f"v{i + 1:02d}", "student": None if i else "Ada", "problems": doc["problems"]})
    base = json.loads((key_dir / "manifest.json").read_text())
    return {k: v for k, v in base.items() if k != "problems"} | {"set_id": "test", "variants": variants}


@pytest.fixture(scope="module")
def class_dir(tmp_path_factory, key_dir):
    """sets/<id>/answers.json for three variants, and the manifest above them."""
    root = tmp_path_factory.mktemp("class")
    manifest = _variants_manifest(key_dir, seeds=(11, 12, 13))
    (root / "manifest.json").write_text(json.dumps(manifest))
    for v in manifest["variants"]:
        sheet = root / "sheets" / v["id"]
        sheet.mkdir(parents=True)
        answers = _own_answers({"problems": v["problems"]})
        (sheet / "answers.json").write_text(json.dumps({"variant": v["id"], "student": v["student"],
                                                        "answers": answers}))
    return root, manifest


def _whole_key(rounding="up", exact="2", unrounded="1848/1000", unit="chip"):
    return {"problems": [{"id": "min-1", "params": {"chips": 4}, "answers": [
        {"name": "min_chips", "description": "fewest chips", "unit": unit, "exact": exact, "value": float(exact),
         "rel_tol": 0.01, "kind": "whole", "rounding": rounding, "unrounded": unrounded},
        {"name": "bound", "description": "compute- or memory-bound", "unit": "1", "exact": "1", "value": 1.0,
         "rel_tol": 0, "kind": "choice", "choices": ["compute-bound", "memory-bound"]},
        {"name": "t", "description": "time", "unit": "s", "exact": "1/100", "value": 0.01, "rel_tol": 0.01,
         "accept": [{"exact": "1/80", "value": 0.0125, "why": "the book's V/W shortcut, without (N-1)/N"}]},
    ]}]}


@pytest.mark.parametrize("name,given,verdict,fragment", [
    ("min_chips", 2, "right", None),
    ("min_chips", "2 chips", "right", None),
    ("min_chips", "2.0", "right", None),
    ("min_chips", "1.848", "wrong", "round up: the question asks for whole chips (1.848 -> 2)"),
    ("min_chips", "1.85 chips", "wrong", "round up"),
    ("min_chips", 1, "wrong", None),
    ("min_chips", 4, "wrong", "a factor 2"),
    ("min_chips", "2 tokens", "unreadable", "count different things"),
    ("bound", "memory-bound", "right", None),
    ("bound", "  Memory-Bound ", "right", None),
    ("bound", "b", "right", None),
    ("bound", "(b)", "right", None),
    ("bound", "B", "right", None),
    ("bound", "a", "wrong", "you chose (a) compute-bound"),
    ("bound", "c", "unreadable", "give a letter (a), (b)"),
    ("bound", 1, "unreadable", "not one of the choices"),
    ("t", "10 ms", "right", None),
    ("t", "12.5 ms", "right", None),
    ("t", "20 ms", "wrong", "a factor 2"),
], ids=["whole", "whole-unit", "whole-float-text", "whole-unrounded", "whole-unrounded-unit", "whole-off",
        "whole-doubled", "whole-wrong-count", "choice-text", "choice-case-space", "choice-letter",
        "choice-paren-letter", "choice-capital", "choice-wrong", "choice-no-such-letter", "choice-number",
        "number", "accepted", "number-doubled"])
def test_answer_kinds(name, given, verdict, fragment):
    _, graded, _ = grade({"min-1": {name: given}}, _whole_key())
    g = next(g for g in graded if g.answer == name)
    assert g.verdict == verdict, g
    if fragment:
        assert fragment in g.diagnosis, g.diagnosis
    if name == "t" and given == "12.5 ms":
        assert "V/W shortcut" in g.note


@pytest.mark.parametrize("rounding,exact,given,fragment", [
    ("down", "57", "57.9", "round down: the question asks for whole chips (57.9 -> 57)"),
    ("nearest", "3", "2.6", "round to the nearest whole number"),
    ("up", "12223", "12222.2", "round up: the question asks for whole chips (12222.22 -> 12223)"),
], ids=["down", "nearest", "up-to-hundredths"])
def test_whole_roundings_are_named(rounding, exact, given, fragment):
    unrounded = {"57": "579/10", "3": "13/5", "12223": "1222222/100"}[exact]
    _, graded, _ = grade({"min-1": {"min_chips": given}}, _whole_key(rounding, exact, unrounded))
    assert fragment in graded[0].diagnosis


def test_variant_answers_are_graded_against_their_variant(class_dir):
    root, manifest = class_dir
    for v in manifest["variants"]:
        answers = json.loads((root / "sheets" / v["id"] / "answers.json").read_text())
        score, graded, warnings = grade(answers, manifest)
        assert score == 1 and not warnings
    # v02's answers against v01's problems: unknown ids and wrong values
    wrong = json.loads((root / "sheets" / "v02" / "answers.json").read_text()) | {"variant": "v01"}
    assert grade(wrong, manifest)[0] < 1


def test_a_plain_answers_file_against_a_one_variant_manifest(key_dir):
    manifest = _variants_manifest(key_dir)
    score, _, _ = grade(_own_answers({"problems": manifest["variants"][0]["problems"]}), manifest)
    assert score == 1


def _run(*args):
    return CliRunner().invoke(main, ["problems", "grade", *args])


def test_blank_sheets_are_counted_apart_from_the_most_missed(class_dir, tmp_path):
    """Two of three sheets handed in blank: 'most missed' is over the one answered sheet (its one wrong answer), not
    a tie of every answer the blank sheets miss; the class line says how many were blank."""
    import shutil

    root, manifest = class_dir
    copy = tmp_path / "class"
    shutil.copytree(root, copy)
    for v in manifest["variants"][1:]:
        path = copy / "sheets" / v["id"] / "answers.json"
        sheet = json.loads(path.read_text())
        path.write_text(json.dumps(sheet | {"answers": {}}))
    first = copy / "sheets" / manifest["variants"][0]["id"] / "answers.json"
    sheet = json.loads(first.read_text())
    problem = next(iter(sheet["answers"]))
    name = next(iter(sheet["answers"][problem]))
    sheet["answers"][problem][name] = "wrong"
    first.write_text(json.dumps(sheet))
    result = _run(str(copy))
    assert result.exit_code == 1, result.output  # not every answer right
    assert "class: 3 sheets graded (2 blank: no answer given)" in result.output
    missed = [line for line in result.output.splitlines() if "most missed" in line]
    assert missed == [f"  most missed: {problem} {name} (1 of the 1 answered sheets)"], missed


def test_class_folder_finds_its_manifest_and_grades_every_sheet(class_dir, tmp_path):
    root, manifest = class_dir
    result = _run(str(root))
    assert result.exit_code == 0, result.output
    assert result.output.count("== ") == 3 and "== Ada (v01): " in result.output and "class: 3 sheets graded" in result.output
    data = json.loads(_run(str(root), "--format", "json").output)
    assert [(s["variant"], s["student"], s["score"]) for s in data["students"]] == [
        ("v01", "Ada", 1.0), ("v02", "v02", 1.0), ("v03", "v03", 1.0)]
    # one sheet's manifest found from the sheet itself (two folders up)
    single = _run(str(root / "sheets" / "v02" / "answers.json"))
    assert single.exit_code == 0 and "= 100%" in single.output


def test_class_csv_has_a_row_per_student_and_question(class_dir):
    import csv
    import io

    from scalemath.cli.grading import CSV_COLUMNS

    root, manifest = class_dir
    result = _run(str(root), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.output)))
    assert tuple(rows[0]) == CSV_COLUMNS
    answers = [r for r in rows if r["verdict"] != "total"]
    assert len(answers) == sum(len(_asked(p)) for v in manifest["variants"] for p in v["problems"])
    assert {r["verdict"] for r in answers} == {"right"} and {r["student"] for r in rows} == {"Ada", "v02", "v03"}
    totals = [r for r in rows if r["verdict"] == "total"]
    assert [(r["student"], r["expected_value"]) for r in totals] == [("Ada", "1.0"), ("v02", "1.0"), ("v03", "1.0")]


def test_points_on_the_sheet_are_the_points_graded(tmp_path):
    """--points 10,30: a student who answers only the first problem earns 10 of 40 points (25 %), not the share
    of answer fields right."""
    import csv
    import io

    out = tmp_path / "set"
    made = CliRunner().invoke(main, ["problems", "generate", "--generator", "critical_intensity", "--generator",
                                     "dot_product", "--n", "2", "--seed", "3", "--points", "10,30", "--format",
                                     "json", "--out", str(out)])
    assert made.exit_code == 0, made.output
    key = json.loads((out / "manifest.json").read_text())
    assert [p["points"] for p in key["problems"]] == [10, 30]
    first = key["problems"][0]
    answers = {"set": key["set_id"], "answers": {first["id"]: {a["name"]: a["value"] for a in first["answers"]}}}
    (out / "answers.json").write_text(json.dumps(answers))
    text = _run(str(out / "answers.json"))
    assert "score: 10/40 points = 25%" in text.output, text.output
    rows = list(csv.DictReader(io.StringIO(_run(str(out / "answers.json"), "--format", "csv").output)))
    assert sum(float(r["points"]) for r in rows if r["verdict"] != "total") == 10
    assert rows[-1]["verdict"] == "total" and rows[-1]["given"] == "10/40 points = 25%"
    # a class folder of that sheet and a full one: the class line in points too
    (out / "sheets" / "a").mkdir(parents=True)
    (out / "sheets" / "b").mkdir(parents=True)
    (out / "sheets" / "a" / "answers.json").write_text(json.dumps(answers))
    full = {p["id"]: {a["name"]: a["value"] if a.get("kind") != "choice" else a["choices"][int(a["exact"])]
                      for a in p["answers"]} for p in key["problems"]}
    (out / "sheets" / "b" / "answers.json").write_text(json.dumps({"set": key["set_id"], "answers": full}))
    report = _run(str(out / "sheets"), "--key", str(out / "manifest.json"))
    assert "class: 2 sheets graded; 50/80 points = 62.5%" in report.output, report.output


def test_flat_folder_one_file_per_student_with_slips(key_dir, tmp_path):
    """A teacher's folder: alice.json right, bob.json with the usual slips, carol.json broken."""
    key = _key(key_dir)
    folder = tmp_path / "hw1"
    folder.mkdir()
    (folder / "alice.json").write_text(json.dumps(_own_answers(key)))
    bob = _own_answers(key)
    first = next(p for p in key["problems"] if p["answers"][0].get("kind", "number") == "number")
    bob[first["id"]][first["answers"][0]["name"]] = "=HYPERLINK(\"http://x\")"  # a formula in a CSV cell
    (folder / "bob.json").write_text(json.dumps(bob))
    (folder / "carol.json").write_text("{not json")
    result = _run(str(folder), "--key", str(key_dir / "manifest.json"))
    assert result.exit_code == 2
    assert "== alice: " in result.output and "== bob: " in result.output and "carol.json: not graded" in result.output
    assert "hw1/carol.json is not valid JSON" in result.output and "error: answers file" in result.output
    csv_text = _run(str(folder), "--key", str(key_dir / "manifest.json"), "--format", "csv").output
    assert "'=HYPERLINK" in csv_text and ",=HYPERLINK" not in csv_text
    assert "carol.json,,,error," in csv_text


def test_folder_without_a_manifest_asks_for_key(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    result = _run(str(tmp_path))
    assert result.exit_code == 2 and "pass the set's manifest with --key" in result.output


@pytest.mark.parametrize("exact,unit,shown", [
    ("262143", "FLOP", "262143 FLOPs"),
    ("67108864", "token", "67108864 tokens"),
    ("51112", "element", "51112 elements"),
    ("1", "chip", "1 chip"),
    ("1/100", "s", "10 ms"),
    ("75/52", "1", "1.442"),
    ("920000000000000", "FLOP/s", "920 TFLOP/s"),
    ("12800000000000", "byte/s", "12.8 TB/s"),
], ids=["flops-all-digits", "tokens-all-digits", "elements", "one-chip", "ms", "ratio", "rate-prefixed",
        "bandwidth-prefixed"])
def test_a_report_shows_the_key_value_as_the_key_has_it(exact, unit, shown):
    key = {"problems": [{"id": "p-1", "params": {}, "answers": [
        {"name": "x", "description": "x", "unit": unit, "exact": exact, "value": 1.0, "rel_tol": 0.01}]}]}
    _, graded, _ = grade({"p-1": {"x": "0"}}, key)
    assert graded[0].shown == shown


@pytest.mark.parametrize("given", ["10,0 ms", "1,000", "$0,01"], ids=["decimal-comma", "thousands", "dollars"])
def test_a_comma_in_a_number_is_named(given):
    _, graded, _ = grade({"min-1": {"t": given}}, _whole_key())
    g = next(g for g in graded if g.answer == "t")
    assert g.verdict == "unreadable" and "decimal point" in g.diagnosis, g


@pytest.mark.parametrize("given,fragment", [
    ("1.848", "round up: the question asks for whole chips (1.848 -> 2)"),
    ("3", None),
    (1, "your answer rounds 1.848 down (a floor); the question rounds up (a ceiling) to whole chips: 2"),
], ids=["unrounded-typed", "another-whole-number", "one-below-is-the-floor"])
def test_only_a_fraction_near_the_unrounded_value_is_a_rounding_slip(given, fragment):
    """A whole number that is wrong is not 'a rounding slip', even when it lies within the tolerance of the
    unrounded value."""
    _, graded, _ = grade({"min-1": {"min_chips": given}}, _whole_key("up", "2", "1848/1000"))
    g = graded[0]
    assert g.verdict == "wrong"
    if fragment:
        assert fragment in (g.diagnosis or ""), g
    else:
        assert "round" not in (g.diagnosis or ""), g


def test_a_wrong_whole_number_near_a_large_unrounded_value_is_not_a_rounding_slip():
    key = _whole_key("up", "288", "575/2")   # 287.5 rounds up to 288; 289 is within 1 % of 287.5
    _, graded, _ = grade({"min-1": {"min_chips": 289}}, key)
    assert graded[0].verdict == "wrong" and "round" not in (graded[0].diagnosis or ""), graded[0]


@pytest.mark.parametrize("right,cells,total", [
    # 10 points shared by the three answers of tpu_mxu_peak: a third each, rounded so the rows add up
    (3, ["3.333334", "3.333333", "3.333333"], "10.0"),
    (2, ["3.333334", "3.333333", "0.0"], "6.666667"),
    (1, ["3.333333", "0.0", "0.0"], "3.333333"),
    (0, ["0.0", "0.0", "0.0"], "0.0"),
], ids=["all-right", "two-right", "one-right", "none-right"])
def test_class_csv_total_row_is_the_sum_of_the_students_rows(tmp_path, right, cells, total):
    """The points column of a student's answer rows adds up, digit for digit, to their total row; the total
    row's 'given' states the same points (a second route: right answers x 10/3, rounded once)."""
    import csv
    import io
    from decimal import Decimal

    out = tmp_path / "set"
    made = CliRunner().invoke(main, ["problems", "generate", "--generator", "tpu_mxu_peak", "--n", "1", "--seed", "3",
                                     "--points", "10", "--format", "json", "--out", str(out)])
    assert made.exit_code == 0, made.output
    key = json.loads((out / "manifest.json").read_text())
    (problem,) = key["problems"]
    assert len(problem["answers"]) == 3
    given = {a["name"]: (a["value"] if k < right else -1) for k, a in enumerate(problem["answers"])}
    (out / "sheets" / "s1").mkdir(parents=True)
    (out / "sheets" / "s1" / "answers.json").write_text(json.dumps({"set": key["set_id"],
                                                                   "answers": {problem["id"]: given}}))
    rows = list(csv.DictReader(io.StringIO(_run(str(out / "sheets"), "--key", str(out / "manifest.json"),
                                                "--format", "csv").output)))
    answers, (last,) = rows[:-1], rows[-1:]
    assert [r["points"] for r in answers] == cells and last["verdict"] == "total" and last["points"] == total
    assert sum(Decimal(r["points"]) for r in answers) == Decimal(total)
    assert abs(Decimal(total) - Decimal(right) * 10 / 3) <= Decimal("0.0000005")
    shown, possible = last["given"].split(" points")[0].split("/")  # "6.667/10 points = 66.7%": 4 figures
    assert possible == "10" and abs(Decimal(shown) - Decimal(total)) <= Decimal("0.0005")
