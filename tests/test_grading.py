"""Grading answer sheets against a generated set's manifest."""

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.problems import sets
from scalemath.problems.grading import grade


@pytest.fixture(scope="module")
def key_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("set") / "s"
    sets.write_set(sets.build_set(n=15, seed=11), out, ("json",))
    return out


def _key(key_dir):
    return json.loads((key_dir / "manifest.json").read_text())


def _own_answers(key, as_text=False):
    out = {}
    for p in key["problems"]:
        out[p["id"]] = {a["name"]: (f"{a['value']!r} {a['unit']}" if as_text and a["unit"] in ("s", "byte")
                                    else a["value"]) for a in p["answers"]}
    return out


def test_blank_answers_file_lists_every_answer(key_dir):
    blank = json.loads((key_dir / "answers.json").read_text())
    key = _key(key_dir)
    assert blank == {p["id"]: {a["name"]: None for a in p["answers"]} for p in key["problems"]}
    score, graded, _ = grade(blank, key)
    assert score == 0 and all(g.verdict == "missing" for g in graded)


@pytest.mark.parametrize("as_text", [False, True], ids=["numbers", "text-with-units"])
def test_a_set_graded_against_its_own_key_scores_100(key_dir, as_text):
    key = _key(key_dir)
    score, graded, warnings = grade(_own_answers(key, as_text), key)
    assert score == 1 and not warnings and graded


def test_one_wrong_answer_scores_below_and_is_named_with_its_slip(key_dir):
    key = _key(key_dir)
    answers = _own_answers(key)
    victim = key["problems"][0]
    name = victim["answers"][0]["name"]
    answers[victim["id"]][name] *= 2
    score, graded, _ = grade(answers, key)
    total = sum(len(p["answers"]) for p in key["problems"])
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
    victim = key["problems"][1]
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
    ("{}", "missing", "No such file"),
    ("{}", '{"problems": []}', "has no problems"),
    ("{}", '{"problems": [{"id": "x", "params": [], "answers": []}]}', "problems[0].params must be an object"),
    ("{}", '{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "s", "exact": "1/0", '
           '"rel_tol": 0.01}]}]}', "problems[0].answers[0].exact must be an exact number"),
    ("{}", '{"problems": [{"id": "x", "params": {}, "answers": [{"name": "a", "unit": "s", "exact": "1", '
           '"rel_tol": true}]}]}', "problems[0].answers[0].rel_tol must be a number"),
    ('{"a": NaN}', None, "NaN is not a JSON number"),
], ids=["bad-json", "not-object", "not-manifest", "no-key", "no-problems", "params-list", "exact-1/0",
        "rel-tol-bool", "nan-answer"])
def test_bad_files_are_clear_errors(tmp_path, key_dir, answers, key, fragment):
    a = tmp_path / "a.json"
    a.write_text(answers)
    if key is None:
        k = key_dir / "manifest.json"
    elif key == "missing":
        k = tmp_path / "missing.json"
    else:
        k = tmp_path / "k.json"
        k.write_text(key)
    result = CliRunner().invoke(main, ["problems", "grade", str(a), "--key", str(k)])
    assert result.exit_code == 2 and fragment in result.output and "Traceback" not in result.output
