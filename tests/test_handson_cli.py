"""``scalemath problems handson`` and ``problems grade FILE.py``: the task files, grading a submission, bad input
as one line with exit 2 (issue 29)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.problems.coderun.statements import draw_task, statement, stub
from scalemath.problems.coderun.tasks import TASKS, make_task

HERE = Path(__file__).parent / "handson"
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (the xla extra)")


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("name", list(TASKS))
def test_handson_writes_the_three_files(tmp_path, name):
    out = tmp_path / "task"
    result = run("problems", "handson", name, "--seed", "11", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["TASK.md", "stub.py", "task.json"]
    doc = json.loads((out / "task.json").read_text())
    assert doc["task"] == name and doc["seed"] == 11 and doc["params"] == draw_task(name, 11).params
    compile((out / "stub.py").read_text(), "stub.py", "exec")  # the stub is valid Python
    assert TASKS[name]["entry"] in (out / "stub.py").read_text()
    again = run("problems", "handson", name, "--seed", "11", "--out", str(out))
    assert again.exit_code == 2 and "nothing was written" in again.output


@pytest.mark.parametrize("name", list(TASKS))
def test_the_generators_name_is_the_same_task(tmp_path, name):
    short, long = tmp_path / "short", tmp_path / "long"
    assert run("problems", "handson", name, "--seed", "5", "--out", str(short)).exit_code == 0
    result = run("problems", "handson", f"handson_{name}", "--seed", "5", "--out", str(long))
    assert result.exit_code == 0, result.output
    assert all((short / f).read_bytes() == (long / f).read_bytes() for f in ("TASK.md", "stub.py", "task.json"))


@pytest.mark.parametrize("name", list(TASKS))
def test_seeds_vary_the_task(name):
    """At least 30 different tasks (sizes and inputs) among the seeds a class would use."""
    drawn = {(tuple(sorted(draw_task(name, s).params.items())), s) for s in range(40)}
    sizes = {d[0] for d in drawn}
    assert len(drawn) >= 30 and len(sizes) >= 8
    for s in range(5):
        task = draw_task(name, s)
        assert task == draw_task(name, s)  # one seed, one task
        text = statement(task)
        assert str(task.params["n"]) in text and "scalemath problems grade" in text
        # a function to write starts as NotImplementedError; a layout to fix starts as the naive layout
        assert ("raise NotImplementedError" in stub(task)) == (TASKS[name].get("mode") != "layout")


BAD_TASKS = [
    ("not-an-object", "[1, 2]", "must be"),
    ("unknown-task", '{"task": "nope", "seed": 1, "params": {}}', "unknown hands-on task"),
    ("bad-size", '{"task": "collective_matmul", "seed": 1, "params": {"n": 3, "B": 8, "D_local": 4, "F_local": 2}}',
     "n must be one of"),
    ("huge-size", '{"task": "moe_all_to_all", "seed": 1, "params": {"n": 8, "T_local": 100000000, "D": 8}}',
     "T_local must be one of"),
    ("extra-param", '{"task": "moe_all_to_all", "seed": 1, "params": {"n": 8, "T_local": 4, "D": 8, "x": 1}}',
     "exactly"),
    ("bad-seed", '{"task": "moe_all_to_all", "seed": -1, "params": {"n": 8, "T_local": 4, "D": 8}}', "seed"),
    ("not-json", "{", "not valid JSON"),
]


@pytest.mark.parametrize("case_id, text, words", BAD_TASKS, ids=[c[0] for c in BAD_TASKS])
def test_bad_task_file_is_one_line(tmp_path, case_id, text, words):
    (tmp_path / "task.json").write_text(text)
    (tmp_path / "mine.py").write_text("def moe_layer(x, e, w):\n    return x\n")
    result = run("problems", "grade", str(tmp_path / "mine.py"), "--key", str(tmp_path / "task.json"))
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_submission_without_a_task_is_one_line(tmp_path):
    (tmp_path / "mine.py").write_text("x = 1\n")
    result = run("problems", "grade", str(tmp_path / "mine.py"))
    assert result.exit_code == 2 and "--key task.json" in result.output


def test_missing_submission_is_one_line(tmp_path):
    run("problems", "handson", "moe_all_to_all", "--out", str(tmp_path))
    result = run("problems", "grade", str(tmp_path / "missing.py"), "--key", str(tmp_path / "task.json"))
    assert result.exit_code == 2 and "No such file" in result.output


def test_task_parameters_are_checked():
    from scalemath.errors import BadValueError

    with pytest.raises(BadValueError, match="B must be one of"):
        make_task("collective_matmul", {"n": 8, "B": True, "D_local": 4, "F_local": 2}, 0)


@needs_jax
@pytest.mark.parametrize("name, solution", [("collective_matmul", "collective_matmul_solution.py"),
                                            ("moe_all_to_all", "moe_top_k_solution.py")])
def test_grade_a_submission(tmp_path, name, solution):
    """The reference solution right (exit 0, the collectives listed) with task.json found beside it; the stub an
    error (exit 1) in JSON."""
    run("problems", "handson", name, "--seed", "4", "--out", str(tmp_path))
    (tmp_path / "mine.py").write_bytes((HERE / solution).read_bytes())
    right = run("problems", "grade", str(tmp_path / "mine.py"))
    assert right.exit_code == 0, right.output
    assert ": right" in right.output and "audit hook" in right.output
    kind = TASKS[name]["required"][0]
    assert f"{kind}_x" in right.output
    stub_result = run("problems", "grade", str(tmp_path / "stub.py"), "--format", "json")
    assert stub_result.exit_code == 1
    doc = json.loads(stub_result.output)
    assert doc["verdict"] == "error" and "NotImplementedError" in doc["message"]


@needs_jax
@pytest.mark.parametrize("generator, solution", [("handson_collective_matmul", "collective_matmul_solution.py"),
                                                 ("handson_moe_all_to_all", "moe_top_k_solution.py")])
@pytest.mark.parametrize("seed", [1, 2])
def test_sheet_answers_are_what_the_compiled_program_shows(generator, solution, seed):
    """The hands-on sheet's numbers against a third route: the collectives XLA compiled for the reference solution
    of the very task the sheet names (its task seed), read from the HLO by the grader."""
    from scalemath.problems.coderun import grade_code
    from scalemath.problems.registry import get_generator, make_problem

    problem = make_problem(get_generator(generator), seed)
    name = generator.removeprefix("handson_")
    task = draw_task(name, problem.params["task_seed"])
    assert {k: problem.params[k] for k in task.params} == task.params
    grade = grade_code(task, (HERE / solution).read_bytes())
    assert grade.verdict == "right", grade.message
    a = problem.by_name
    if name == "collective_matmul":
        assert [k for k, _ in grade.observed] == ["CollectivePermute"] * int(a["permutes"].value)
        assert {v * 4 for _, v in grade.observed} == {int(a["block_bytes"].value)}  # float32
    else:
        assert [k for k, _ in grade.observed] == ["AllToAll", "AllToAll"]
        assert {v for _, v in grade.observed} == {int(a["v_elements"].value)}
        assert int(a["buffer_bytes"].value) == 4 * int(a["v_elements"].value) // task.params["n"]


def test_the_books_collective_matmul_example():
    """jax-stuff.md, 'Example: Collective Matmul' (worked record jax-ex-collective-matmul): A[B_X, D_Y] with
    B = 1024, D = 2048, F = 8192 on X = 2, Y = 4, int32 (4 bytes): 3 ppermutes of 1,048,576 bytes each. One row
    of X is the sheet's one-axis task with B/X = 512 rows and n = Y = 4 (solve taken with those sizes)."""
    from scalemath.problems.generators import handson_collective_matmul as gen

    params = {"n": 4, "B": 1024 // 2, "D_local": 2048 // 4, "F_local": 8192 // 4, "D": 2048, "F": 8192}
    answers = {a.name: a.value for a in gen.solve(params)}
    assert answers["permutes"] == 3
    assert answers["block_bytes"] == 1048576
    assert gen.check(params)["block_bytes"] == 1048576 and gen.check(params)["permutes"] == 3
