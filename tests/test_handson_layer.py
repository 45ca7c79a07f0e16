"""The hands-on layout task ``layer_sharding`` (profiling.md, Problem 2: a layer's naive sharding fixed): the student
writes ``shardings()`` for a fixed MLP block ``gelu(x @ W_in) @ W_out``; the grader runs the block with it in the
sandbox and holds its collectives' bytes per device to a budget, Megatron's one AllReduce of the output.

Routes: the naive layout's and Megatron's bytes by the engine (layer.layout_plan) against plain integers by hand
and against what XLA compiles on simulated CPU devices (the graded rows, skipped without jax); the roofline model's
time of the naive and Megatron layouts from their closed forms against the same model read off their compiled HLO;
the unsharded answer against plain Python loops with math.erf.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.problems.coderun import layer
from scalemath.problems.coderun._child_layout import LayoutError, check
from scalemath.problems.coderun.statements import draw_task, statement, stub
from scalemath.problems.coderun.tasks import make_task

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (the xla extra)")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's limits are Linux's")


def task(n, b, d, f, seed=7):
    return make_task("layer_sharding", {"n": n, "B": b, "D": d, "F": f}, seed)


def layout(**arrays) -> bytes:
    """A submission returning ``arrays`` (the Megatron layout's entries where not given)."""
    doc = {"x": (None, None), "w_in": (None, "x"), "w_out": ("x", None), "out": (None, None), **arrays}
    return f"def shardings():\n    return {doc!r}\n".encode()


EIGHT = task(8, 8, 1024, 4096)  # the naive layout and Megatron's on 8 devices
FOUR = task(4, 12, 768, 2048, seed=3)
ODD = task(8, 12, 256, 2048, seed=5)  # B = 12 does not divide over 8 devices
ESCAPE = Path("/tmp") / f"scalemath-escape-layer-{uuid.uuid4().hex}"
WRITES_OUT = (f"def shardings():\n    open({str(ESCAPE)!r}, 'w').write('x')\n"  # test_sandbox's jax-write-tmp
              "    return {'x': (None, None), 'w_in': (None, 'x'), 'w_out': ('x', None), "
              "'out': (None, None)}\n").encode()


# -- the engine's closed forms against plain integers --------------------------------------------------------

HAND = [  # (id, params, budget = B D 4, naive = (B F + B D) 4, FLOPs = 2 (2 B D F / n))
    # 8 x 1024 x 4 = 32,768; 8 x 4096 x 4 = 131,072, + 32,768 = 163,840; 4 x 8 x 1024 x 4096 / 8 = 16,777,216
    ("n8-B8-D1024-F4096", {"n": 8, "B": 8, "D": 1024, "F": 4096}, 32_768, 163_840, 16_777_216),
    # 12 x 768 x 4 = 36,864; 12 x 2048 x 4 = 98,304, + 36,864 = 135,168; 4 x 12 x 768 x 2048 / 4 = 18,874,368
    ("n4-B12-D768-F2048", {"n": 4, "B": 12, "D": 768, "F": 2048}, 36_864, 135_168, 18_874_368),
    # 16 x 256 x 4 = 16,384; 16 x 3072 x 4 = 196,608, + 16,384 = 212,992; 4 x 16 x 256 x 3072 / 8 = 6,291,456
    ("n8-B16-D256-F3072", {"n": 8, "B": 16, "D": 256, "F": 3072}, 16_384, 212_992, 6_291_456),
]


@pytest.mark.parametrize("case_id, p, budget, naive, flops", HAND, ids=[c[0] for c in HAND])
def test_closed_forms_by_hand(case_id, p, budget, naive, flops):
    assert layer.budget_bytes(p) == budget
    assert layer.naive_bytes(p) == naive
    assert layer.megatron_flops(p) == flops
    kinds = {name: [(c.kind, int(c.bytes)) for c in layer.layout_plan(p, name)[0]] for name in layer.LAYOUTS}
    assert kinds["megatron"] == [("AllReduce", budget)]
    assert kinds["naive"] == [("AllReduce", p["B"] * p["F"] * 4), ("AllGather", p["B"] * p["D"] * 4)]
    assert layer.layout_plan(p, "naive")[1] == flops  # the naive layout does the same work per device


def test_the_generators_keys_for_one_seed():
    """Seed 1 draws n = 8, B = 16, D = 256, F = 4096. By hand: the budget 16 x 256 x 4 = 16,384 B; the naive
    layout AllReduces the [16, 4096] partial sums (262,144 B) and gathers the [16, 256] output (16,384 B):
    278,528 B; Megatron's FLOPs 2 x (2 x 16 x 256 x 512) = 8,388,608."""
    from scalemath.problems.registry import get_generator, make_problem

    problem = make_problem(get_generator("handson_layer_sharding"), 1)  # make_problem holds the two routes equal
    assert {k: problem.params[k] for k in ("n", "B", "D", "F")} == {"n": 8, "B": 16, "D": 256, "F": 4096}
    assert {a.name: int(a.value) for a in problem.answers} == {"budget_bytes": 16_384, "naive_bytes": 278_528,
                                                               "flops": 8_388_608}
    assert draw_task("layer_sharding", problem.params["task_seed"]).params == \
        {k: problem.params[k] for k in ("n", "B", "D", "F")}


def test_the_reference_is_plain_arithmetic():
    """One entry of gelu(x @ W_in) @ W_out by loops, gelu(h) = h (1 + erf(h / sqrt 2)) / 2 (jax.nn.gelu,
    approximate=False)."""
    small = task(4, 8, 256, 2048, seed=11)
    x, w_in, w_out = small.inputs()
    i, j = 5, 17
    hidden = [sum(float(x[i, k]) * float(w_in[k, f]) for k in range(256)) for f in range(2048)]
    gelu = [h * (1 + math.erf(h / math.sqrt(2))) / 2 for h in hidden]
    want = sum(g * float(w_out[f, j]) for f, g in enumerate(gelu))
    assert abs(small.reference()[i, j] - want) < 1e-9


# -- what the student reads; the CLI --------------------------------------------------------------------------

def test_the_stub_is_the_naive_layout_and_the_statement_says_the_numbers():
    for seed in range(4):
        t = draw_task("layer_sharding", seed)
        namespace = {}
        exec(compile(stub(t), "stub.py", "exec"), namespace)
        assert namespace["shardings"]() == layer.spec_of("naive") == \
            {"x": (None, None), "w_in": ("x", None), "w_out": (None, "x"), "out": (None, None)}
        text = statement(t)
        for number in (layer.naive_bytes(t.params), layer.budget_bytes(t.params)):
            assert f"{number:,} bytes per device" in text
        assert "not measurements" in text and "tpu-v5e" in text and "approximate=False" in text


def test_the_statement_needs_no_jax(without_jax):
    out = without_jax("from scalemath.problems.coderun.statements import draw_task, statement\n"
                      "print(statement(draw_task('layer_sharding', 2))[:40])")
    assert "fix a layer's sharding" in out


@pytest.mark.parametrize("name", ["layer_sharding", "handson_layer_sharding"])
def test_handson_accepts_both_names(tmp_path, name):
    result = CliRunner().invoke(main, ["problems", "handson", name, "--seed", "9", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "task.json").read_text())
    assert doc["task"] == "layer_sharding" and doc["params"] == draw_task("layer_sharding", 9).params
    assert "def shardings():" in (tmp_path / "stub.py").read_text()


# -- the child's checks of a returned layout (no jax) ---------------------------------------------------------

SHAPES = {"x": (12, 768), "w_in": (768, 2048), "w_out": (2048, 768)}
MEGATRON = {"x": (None, None), "w_in": (None, "x"), "w_out": ("x", None), "out": (None, None)}
CHECKS = [  # (id, layout, words of the one-line refusal, or None when accepted)
    ("megatron", MEGATRON, None),
    ("lists-and-hidden", {**MEGATRON, "w_in": [None, "x"], "hidden": (None, "x")}, None),
    ("hidden-none", {**MEGATRON, "hidden": None}, None),
    ("not-a-dict", [("x", None)], "must return a dict"),
    ("wrong-key", {**MEGATRON, "w_mid": (None, None)}, "the key 'w_mid'"),
    ("missing-key", {k: v for k, v in MEGATRON.items() if k != "out"}, "returned no 'out'"),
    ("wrong-length", {**MEGATRON, "w_out": ("x",)}, "has 1 entry"),
    ("not-a-tuple", {**MEGATRON, "x": "x"}, "must be a tuple"),
    ("axis-y", {**MEGATRON, "w_in": (None, "y")}, "is 'y': the mesh has one axis"),
    ("axis-twice", {**MEGATRON, "w_in": ("x", "x")}, "uses 'x' for 2 dimensions"),
    ("non-dividing", {**MEGATRON, "x": ("x", None)}, "shards B = 12 over the 8 devices"),
]


@pytest.mark.parametrize("case_id, doc, words", CHECKS, ids=[c[0] for c in CHECKS])
def test_the_childs_checks(case_id, doc, words):
    if words is None:
        got = check(doc, SHAPES, 8)
        assert set(got) == set(doc) - ({"hidden"} if doc.get("hidden", 0) is None else set())
        assert all(isinstance(v, tuple) for v in got.values())
        return
    with pytest.raises(LayoutError) as caught:
        check(doc, SHAPES, 8)
    assert words in str(caught.value) and "\n" not in str(caught.value)


# -- graded in the sandbox: XLA's collectives against the closed forms ----------------------------------------

GRADED = [  # (id, task, code, verdict, words in the message)
    ("naive-stub-n8", EIGHT, stub(EIGHT).encode(), "over budget", "163,840 bytes per device"),
    ("naive-stub-n4", FOUR, stub(FOUR).encode(), "over budget", "135,168 bytes per device"),
    ("megatron-n8", EIGHT, layout(), "right", "32,768 bytes per device (AllReduce 32,768)"),
    ("megatron-reduce-scatter", FOUR, layout(out=(None, "x"), hidden=(None, "x")), "right", "ReduceScatter 36,864"),
    ("fsdp-gathers-weights", FOUR, layout(x=("x", None), w_in=("x", None), w_out=("x", None), out=("x", None)),
     "over budget", "12,582,912 bytes per device"),
    ("replicated-weights", FOUR, layout(w_in=(None, None), w_out=(None, None)), "bad layout", "W_in and W_out"),
    ("wrong-key", FOUR, layout(w_mid=(None, None)), "bad layout", "the key 'w_mid'"),
    ("wrong-length", FOUR, layout(w_in=(None, "x", None)), "bad layout", "has 3 entries"),
    ("axis-y", FOUR, layout(w_out=("y", None)), "bad layout", "is 'y'"),
    ("non-dividing", ODD, layout(x=("x", None)), "bad layout", "shards B = 12 over the 8 devices"),
    ("writes-outside", FOUR, WRITES_OUT, "forbidden operation", "for writing"),
]


@linux_only
@needs_jax
@pytest.mark.parametrize("case_id, t, code, verdict, words", GRADED, ids=[c[0] for c in GRADED])
def test_graded(case_id, t, code, verdict, words):
    from scalemath.problems.coderun import grade_code

    grade = grade_code(t, code)
    assert grade.verdict == verdict, (grade.verdict, grade.message, grade.printed)
    assert words in grade.message and "\n" not in grade.message and "Traceback" not in grade.message
    assert not ESCAPE.exists()
    p = t.params
    if case_id.startswith(("naive", "megatron-n8")):  # XLA's collectives and the model's time, by the closed forms
        name = "naive" if case_id.startswith("naive") else "megatron"
        want = [(c.kind, int(c.bytes)) for c in layer.layout_plan(p, name)[0]]
        assert [(m["kind"], m["bytes"]) for m in grade.details["moved"]] == want
        assert grade.details["collective_bytes"] == (layer.naive_bytes(p) if name == "naive" else layer.budget_bytes(p))
        assert grade.details["model_seconds"]["submission"] == float(layer.layout_seconds(p, name))
    if verdict in ("right", "over budget"):
        assert grade.details["budget_bytes"] == p["B"] * p["D"] * 4
        assert f"budget of {p['B'] * p['D'] * 4:,}" in grade.message and "not a measurement" in grade.message
