"""Code answers on an answer sheet (issue 29): a set holding hands-on problems graded from one answers.json whose
"code" answers are paths of the students' .py files (relative to the sheet) or the code itself, run in the
sandbox as 'problems grade FILE.py' runs them; a path leaving the sheet's folder is refused in one line.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.errors import BadValueError
from scalemath.problems.coderun.sheet import code_source

HERE = Path(__file__).parent / "handson"
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (the xla extra)")
GENERATORS = ("handson_collective_matmul", "handson_moe_all_to_all", "critical_intensity")


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A set of two hands-on problems and a numeric one; its manifest's exact answers."""
    out = tmp_path_factory.mktemp("set") / "set"
    args = ["problems", "generate", "--seed", "3", "--format", "json", "--out", str(out), "--jobs", "1"]
    for g in GENERATORS:
        args += ["--generator", g]
    result = run(*args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    return out, manifest


def _right_numbers(manifest):
    return {p["id"]: {a["name"]: a["exact"] for a in p["answers"]} for p in manifest["problems"]}


def _ids(manifest):
    return {p["generator"]: p["id"] for p in manifest["problems"]}


def test_the_blank_sheet_asks_for_code(made):
    out, manifest = made
    blank = json.loads((out / "answers.json").read_text())
    body = blank.get("answers", blank)
    ids = _ids(manifest)
    assert body[ids["handson_collective_matmul"]]["code"] is None
    assert "code" not in body[ids["critical_intensity"]]


@needs_jax
def test_a_sheet_with_a_right_and_a_wrong_code_answer(made, tmp_path):
    out, manifest = made
    sheet = tmp_path / "alice"
    (sheet / "work").mkdir(parents=True)
    (sheet / "work" / "matmul.py").write_bytes((HERE / "collective_matmul_solution.py").read_bytes())
    ids = _ids(manifest)
    answers = _right_numbers(manifest)
    answers[ids["handson_collective_matmul"]]["code"] = "work/matmul.py"  # a path, relative to the sheet
    # the code itself, wrong: every token comes back unchanged
    answers[ids["handson_moe_all_to_all"]]["code"] = "def moe_layer(x, e, w):\n    return x\n"
    doc = {"set": manifest.get("set_id"), "answers": answers}
    (sheet / "answers.json").write_text(json.dumps(doc))
    result = run("problems", "grade", str(sheet / "answers.json"), "--key", str(out / "manifest.json"),
                 "--format", "json")
    assert result.exit_code == 1, result.output
    graded = {(g["problem"], g["answer"]): g for g in json.loads(result.output)["answers"]}
    right = graded[(ids["handson_collective_matmul"], "code")]
    wrong = graded[(ids["handson_moe_all_to_all"], "code")]
    assert right["verdict"] == "right" and right["given"] == "work/matmul.py"
    assert wrong["verdict"] == "wrong" and wrong["diagnosis"].startswith("wrong")
    assert wrong["given"] == "(code, 2 lines)"
    numbers = [g for (pid, name), g in graded.items() if name != "code"]
    assert numbers and all(g["verdict"] == "right" for g in numbers)
    # the class CSV: one row per answer, the code rows among them
    table = run("problems", "grade", str(tmp_path), "--key", str(out / "manifest.json"), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(table.output)))
    code_rows = {r["problem"]: r["verdict"] for r in rows if r["answer"] == "code"}
    assert code_rows == {ids["handson_collective_matmul"]: "right", ids["handson_moe_all_to_all"]: "wrong"}
    assert [r["student"] for r in rows if r["verdict"] == "total"] == ["alice"]


def test_a_path_leaving_the_folder_is_refused_in_one_line(made, tmp_path):
    out, manifest = made
    ids = _ids(manifest)
    (tmp_path / "secret.py").write_text("def collective_matmul(a, w):\n    return a @ w\n")
    sheet = tmp_path / "bob"
    sheet.mkdir()
    os.symlink(tmp_path, sheet / "up")
    os.symlink(tmp_path / "secret.py", sheet / "link.py")
    answers = {ids["handson_collective_matmul"]: {"code": "../secret.py"},
               ids["handson_moe_all_to_all"]: {"code": "up/secret.py"}}
    (sheet / "answers.json").write_text(json.dumps(answers))
    result = run("problems", "grade", str(sheet / "answers.json"), "--key", str(out / "manifest.json"))
    lines = result.output.splitlines()
    assert result.exit_code == 1 and "Traceback" not in result.output
    i = next(k for k, line in enumerate(lines) if line.startswith("unreadable") and " code" in line)
    assert "leaves the sheet's folder" in lines[i + 1]
    assert any("'up' is a symbolic link, which is not followed" in line for line in lines)


CODE_PATHS = [  # (given, message) refused before anything is read
    ("../x.py", "leaves the sheet's folder"),
    ("/etc/passwd.py", "leaves the sheet's folder"),
    ("a/../../x.py", "leaves the sheet's folder"),
    ("~/x.py", "leaves the sheet's folder"),
    ("C:/x.py", "leaves the sheet's folder"),
    ("a\\x.py", "separate folders with '/'"),
    ("link.py", "symbolic link"),
    ("missing.py", "No such file"),
    ("sub.py", "directory"),
    ("hard.py", "hard link"),
    (17, "give the path of your .py file"),
]


@pytest.mark.parametrize("given,message", CODE_PATHS, ids=[str(c[0]) for c in CODE_PATHS])
def test_code_paths_are_read_inside_the_folder_only(tmp_path, given, message):
    (tmp_path / "outside.py").write_text("x = 1\n")
    folder = tmp_path / "sheet"
    folder.mkdir()
    (folder / "sub.py").mkdir()
    os.symlink(tmp_path / "outside.py", folder / "link.py")
    os.link(tmp_path / "outside.py", folder / "hard.py")
    with pytest.raises(BadValueError, match=message.replace("(", r"\(")) as caught:
        code_source(given, folder)
    assert "\n" not in str(caught.value)


def test_a_path_inside_and_inline_code_are_read(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "mine.py").write_bytes(b"def f():\n    pass\n")
    assert code_source("./a/mine.py", tmp_path) == (b"def f():\n    pass\n", "./a/mine.py")
    assert code_source("def f(): pass", tmp_path) == (b"def f(): pass", "(code, 1 lines)")
