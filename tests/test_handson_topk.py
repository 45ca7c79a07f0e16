"""The hands-on MoE task with top-k routing (issue 29; jax-stuff.md, Problem 2 part 4: "Most MoEs route to multiple
(k) experts and then average the result ... B: int32[S, k]"). k = 1 or 2, drawn from the seed or given with --k;
a token's k experts differ, its result is the plain average of theirs; a task without k is top-1 as before.

Second routes: the unsharded answer by plain Python loops over tokens and choices; the draws of the sizes by
random.Random as draw_task makes them; the AllToAll V of the compiled reference solution against n*n*T_local*D.
"""

from __future__ import annotations

import importlib.util
import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.problems.coderun.sheet import task_of
from scalemath.problems.coderun.statements import draw_task, statement, stub
from scalemath.problems.coderun.tasks import make_task, task_from_json

HERE = Path(__file__).parent / "handson"
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (the xla extra)")
TOP_K = (HERE / "moe_top_k_solution.py").read_bytes()
TOP_1 = (HERE / "moe_all_to_all_solution.py").read_bytes()
SUMS = TOP_K.replace(b"jnp.mean(gathered, axis=1)", b"jnp.sum(gathered, axis=1)")  # forgets to average
FIRST = TOP_K.replace(b"expert.reshape(tokens, -1)", b"expert.reshape(tokens, -1)[:, :1]")  # first choice only
GATHER = b"""import jax, jax.numpy as jnp
def moe_layer(x, expert, w):
    ws = jax.lax.all_gather(w, 'x', axis=0, tiled=True)
    return jnp.mean(jnp.einsum('td,tjdf->tjf', x, ws[expert]), axis=1)
"""
assert SUMS != TOP_K and FIRST != TOP_K


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def moe(n, t_local, d, k=None, seed=5):
    params = {"n": n, "T_local": t_local, "D": d} | ({} if k is None else {"k": k})
    return make_task("moe_all_to_all", params, seed)


def loops(x, e, w):
    """out[t][f] = (1/k) sum_j sum_d x[t][d] W[e[t][j]][d][f], one number at a time."""
    out = []
    for t, row in enumerate(x.tolist()):
        choices = [int(c) for c in np.atleast_1d(e[t])]
        out.append([sum(sum(row[d] * float(w[c][d][f]) for d in range(len(row))) for c in choices) / len(choices)
                    for f in range(w.shape[2])])
    return out


TASKS = [  # (id, task)
    ("k1-n4", moe(4, 2, 8, 1, seed=1)),
    ("k2-n4", moe(4, 2, 8, 2, seed=1)),
    ("k2-n8", moe(8, 4, 12, 2, seed=7)),
    ("k2-n8-long", moe(8, 16, 8, 2, seed=123)),
    ("no-k-is-top-1", moe(4, 6, 8, None, seed=9)),
]


@pytest.mark.parametrize("case_id, task", TASKS, ids=[c[0] for c in TASKS])
def test_the_reference_is_the_average_of_the_k_experts(case_id, task):
    x, e, w = task.inputs()
    k = task.k
    assert e.shape == ((x.shape[0],) if k == 1 else (x.shape[0], k)) and e.dtype == np.int32
    assert e.min() >= 0 and e.max() < task.params["n"]
    if k > 1:
        assert all(len(set(row)) == k for row in e.tolist())  # the k experts of a token differ
    assert np.allclose(task.reference(), np.array(loops(x, e, w)), rtol=0, atol=1e-9)
    assert task.specs[0][1] == (["x"] if k == 1 else ["x", None])


def test_a_task_without_k_is_top_1_with_the_inputs_it_had():
    """A task file written before top-k (no k) grades as top-1, on the inputs drawn as before: x, then the experts
    as integers of shape [T], then W scaled by 1/sqrt(D)."""
    old = task_from_json({"task": "moe_all_to_all", "seed": 5, "params": {"n": 8, "T_local": 4, "D": 8}})
    assert old.k == 1 and old == moe(8, 4, 8, 1, seed=5)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 8)).astype(np.float32)
    e = rng.integers(0, 8, (32,)).astype(np.int32)
    w = (rng.standard_normal((8, 8, 8)) / np.sqrt(8)).astype(np.float32)
    for got, want in zip(old.inputs(), (x, e, w)):
        assert np.array_equal(got, want)
    # a set's key written before top-k: its problem's params name no k
    raw = {"generator": "handson_moe_all_to_all", "params": {"task_seed": 5, "n": 8, "T_local": 4, "D": 8}}
    assert task_of(raw) == old
    assert task_of({**raw, "params": {**raw["params"], "k": 2}}).k == 2


def test_draws_keep_the_sizes_and_add_k():
    """The sizes a seed drew before top-k are unchanged (k is drawn after them); both k appear."""
    ks = set()
    for seed in range(40):
        rng = random.Random(f"handson:moe_all_to_all:{seed}")
        sizes = {"n": rng.choice((4, 8)), "T_local": rng.choice((2, 4, 6, 8, 12, 16)),
                 "D": rng.choice((8, 12, 16, 24, 32))}
        task = draw_task("moe_all_to_all", seed)
        assert {key: task.params[key] for key in sizes} == sizes
        assert task.params["k"] == rng.choice((1, 2))
        ks.add(task.k)
    assert ks == {1, 2}


def test_the_statement_says_how_results_combine():
    two, one = moe(4, 2, 8, 2), moe(4, 2, 8, 1)
    text = statement(two)
    assert "plain average of its 2 experts" in text and "[8, 2]" in text and "No routing weights" in text
    assert "ragged_all_to_all" in text and "padded to a fixed capacity" in text
    assert "experts [2, 2] (2 different ones per token)" in stub(two) and "average" in stub(two)
    assert "average" not in statement(one) and "average" not in stub(one)


@pytest.mark.parametrize("k", [1, 2])
def test_handson_k_option(tmp_path, k):
    result = run("problems", "handson", "moe_all_to_all", "--seed", "3", "--k", str(k), "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "task.json").read_text())
    assert doc["params"]["k"] == k and task_from_json(doc).k == k


@pytest.mark.parametrize("args, words", [(["moe_all_to_all", "--k", "3"], "--k"),
                                         (["collective_matmul", "--k", "2"], "has no k")],
                         ids=["k-3", "k-for-matmul"])
def test_bad_k_is_one_line(tmp_path, args, words):
    result = run("problems", "handson", *args, "--out", str(tmp_path / "t"))
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())


def test_sheet_useful_share_counts_the_k_choices():
    """(d) of the sheet: k*T_local real rows of the n*T_local slots each expert computes."""
    from scalemath.problems.generators import handson_moe_all_to_all as gen

    for n, c, d, k in [(4, 2, 8, 1), (4, 2, 8, 2), (8, 16, 32, 2)]:
        p = {"n": n, "T_local": c, "D": d, "k": k}
        answers = {a.name: a.value for a in gen.solve(p)}
        assert answers["useful_share"] == gen.check(p)["useful_share"] == Fraction(k, n)
        assert answers["buffer_bytes"] == n * c * d * 4  # the capacity stays T_local: k experts differ


GRADED = [  # (id, task, code, verdict, words in the message)
    ("top-k-solution-k2", moe(8, 4, 8, 2), TOP_K, "right", "match"),
    ("top-k-solution-k1", moe(4, 6, 8, 1), TOP_K, "right", "match"),
    ("top-k-solution-old-task", moe(8, 4, 8, None), TOP_K, "right", "match"),
    ("forgets-to-average", moe(8, 4, 8, 2), SUMS, "wrong values", "the sum of the k experts' results"),
    ("first-choice-only", moe(4, 6, 8, 2, seed=11), FIRST, "wrong values", "first expert only"),
    ("top-1-solution-on-top-2", moe(4, 6, 8, 2), TOP_1, "error", "line"),
    ("gathers-the-experts", moe(4, 2, 8, 2), GATHER, "wrong collectives", "AllGather"),
]


@needs_jax
@pytest.mark.parametrize("case_id, task, code, verdict, words", GRADED, ids=[c[0] for c in GRADED])
def test_graded(case_id, task, code, verdict, words):
    from scalemath.problems.coderun import grade_code

    grade = grade_code(task, code)
    assert grade.verdict == verdict, (grade.verdict, grade.message, grade.printed)
    assert words in grade.message and "\n" not in grade.message
    if verdict == "right":  # two AllToAlls, each of V = n buffers of [n, T_local, D] (capacity T_local, any k)
        n, c, d = task.params["n"], task.params["T_local"], task.params["D"]
        assert list(grade.observed) == [("AllToAll", n * n * c * d)] * 2


@needs_jax
def test_grade_cli_names_the_mistake(tmp_path):
    run("problems", "handson", "moe_all_to_all", "--seed", "4", "--out", str(tmp_path))
    assert json.loads((tmp_path / "task.json").read_text())["params"]["k"] == 2
    (tmp_path / "right.py").write_bytes(TOP_K)
    (tmp_path / "sums.py").write_bytes(SUMS)
    right = run("problems", "grade", str(tmp_path / "right.py"))
    assert right.exit_code == 0 and ": right" in right.output and "AllToAll_x" in right.output
    wrong = run("problems", "grade", str(tmp_path / "sums.py"), "--format", "json")
    assert wrong.exit_code == 1
    doc = json.loads(wrong.output)
    assert doc["verdict"] == "wrong values" and "average them (divide by k)" in doc["message"]
