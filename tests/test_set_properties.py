"""Properties of every generator over a table of seeds: whole counts, no repeated question or step,
every key number checked by the second route (issue 12)."""

import re
from collections import Counter

import pytest

from scalemath.problems import registry, render

GENERATORS = sorted(registry.generators())
SEEDS = range(12)

#: Units that count whole things: an answer in one of them is a whole number.
COUNT_UNITS = {"chip", "device", "host", "node", "server", "stage", "sequence", "GPU", "core", "hop", "link",
               "expert", "layer", "param", "element"}
#: Answers in tokens or a count unit that are not counts, with the reason (every other such answer is whole).
NOT_COUNTS = {
    ("explain_why", "figure"): "the book's compute-bound TP limit Y* (11.24 for F = 28672 on a v5p), a threshold "
                               "asked exactly; in the FSDP scenario the tokens per chip FSDP needs, also a threshold",
    ("explain_why", "bf16"): "the same TP limit in bf16",
    ("explain_why", "mlp_batch"): "the MLPs' critical batch, a threshold asked exactly",
    ("training_mesh_round", "x_opt"): "the real-valued optimum X_opt = sqrt(2BN/F) before it is rounded to a mesh",
    ("inference_speculative", "tokens"): "the expected number of tokens a round yields, an average",
    ("inference_disaggregated", "freed"): "tokens freed per step on average as requests finish",
    ("transformer_flops", "crossover_T"): "a sequence length where two FLOP counts meet, asked exactly",
    ("transformer_flops", "crossover_book"): "the book's rule-of-thumb crossover, asked exactly",
    ("inference_speculative", "best_draft"): "a whole draft length already",
    ("inference_local_attention", "crossover"): "a sequence length where attention's FLOPs meet the matmuls', "
                                                "asked exactly",
    ("inference_local_attention", "plain"): "the same crossover with every layer global, asked exactly",
    ("derive_weight_stationary_2d", "x_opt"): "a closed form for the best X, sqrt(nD/(2F)), before any rounding",
    ("derive_weight_stationary_2d", "n_star"): "the chip count where 2D and 1D communicate equally, a threshold "
                                               "asked exactly (72 for F = 4D)",
}


def _problems(name):
    gen = registry.get_generator(name)
    return [registry.make_problem(gen, seed) for seed in SEEDS]   # raises if the second route disagrees


@pytest.mark.parametrize("name", GENERATORS)
def test_count_answers_are_whole(name):
    for problem in _problems(name):
        for a in problem.answers:
            counted = (a.unit in COUNT_UNITS or a.unit == "token") and (name, a.name) not in NOT_COUNTS
            if counted:
                assert a.value.is_Integer, (problem.seed, a.name, a.value, a.unit)
            if a.kind == "whole":
                assert a.value.is_Integer and a.unrounded is not None and a.rounding in ("up", "down", "nearest", "pow2")
                if a.rounding == "pow2":
                    assert a.value > 0 and int(a.value) & (int(a.value) - 1) == 0, (problem.seed, a.name)
                if a.rounding == "up":
                    assert a.value - 1 < a.unrounded <= a.value, (problem.seed, a.name)
                elif a.rounding == "down":
                    assert a.value <= a.unrounded < a.value + 1, (problem.seed, a.name)
            if a.kind == "choice":
                assert 0 <= a.value < len(a.choices) and len(set(a.choices)) == len(a.choices)
            if a.accept and a.kind in ("number", "whole"):
                assert name in ACCEPTING, (problem.seed, a.name, "add the generator to ACCEPTING")


def _blocks(text: str) -> list[str]:
    return [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]


@pytest.mark.parametrize("name", GENERATORS)
def test_no_question_or_step_repeats(name):
    for problem in _problems(name)[:6]:
        statement = render.render_problem(problem, "md", "statement")
        parts = [b for b in _blocks(statement) if re.match(r"\(\w\)", b)]
        asked = Counter(re.sub(r"^\(\w\)\s*", "", b) for b in parts)
        assert not [q for q, n in asked.items() if n > 1], (problem.seed, asked)
        solution = render.render_problem(problem, "md", "solution")
        steps = Counter(b for b in re.findall(r"\$\$\n(.*?)\n\$\$", solution, re.S) if "aligned" in b)
        assert not [s for s, n in steps.items() if n > 1], (problem.seed, [s[:80] for s, n in steps.items() if n > 1])


#: Markup that shows when a helper's LaTeX or HTML was escaped as if it were prose.
ESCAPED_MARKUP = {"tex": (r"\textbackslash{}[", r"\textbackslash{}(", r"\textbackslash{}left", r"\textbackslash{}mathrm"),
                  "html": ("&lt;math", "&lt;div", "&lt;span", "&lt;p")}


@pytest.mark.parametrize("name", GENERATORS)
def test_no_markup_is_escaped_into_the_text(name):
    for problem in _problems(name)[:4]:
        for fmt, marks in ESCAPED_MARKUP.items():
            for part in ("statement", "solution"):
                text = render.render_problem(problem, fmt, part)
                assert not [m for m in marks if m in text], (problem.seed, fmt, part, [m for m in marks if m in text])


@pytest.mark.parametrize("name", GENERATORS)
def test_no_relation_is_doubled(name):
    """'= ≈ 154.1 µs' (a template's '=' before a value that carries its own relation) reads as a typo."""
    for problem in _problems(name)[:4]:
        text = render.render_problem(problem, "md", "solution")
        assert not re.search(r"=\s*\$?\s*\\approx", text), (problem.seed, re.search(r".{40}=\s*\$?\s*\\approx.{20}", text))


def test_critical_decode_batch_part_two_is_another_mix():
    for problem in _problems("inference_critical_batch"):
        assert (problem.params["dtype"], problem.params["weight_dtype"]) != ("bf16", "bf16")


@pytest.mark.parametrize("name", GENERATORS)
def test_weights_are_stored_in_a_dtype_the_chip_has(name):
    from scalemath.catalog.hardware import get_chip
    for problem in _problems(name):
        p = problem.params
        if "chip" in p and "weight_dtype" in p:
            assert p["weight_dtype"] in get_chip(p["chip"]).flops_per_s, (problem.seed, p["chip"], p["weight_dtype"])


def _ring_factor(ratio) -> int | None:
    """k when ``ratio`` is (k - 1)/k or k/(k - 1) for a whole k >= 2 (the ring's share of V), else None."""
    import sympy as sp

    r = sp.nsimplify(ratio)
    small = min(r, 1 / r)
    if not (small.is_Rational and 0 < small < 1):
        return None
    k = 1 / (1 - small)
    return int(k) if k.is_Integer and k >= 2 else None


#: Generators whose numeric answers accept another collective model's value (test_count_answers_are_whole
#: checks that no other generator does, so a new one is held to the property below)
ACCEPTING = ("sharding_collective_time",)


@pytest.mark.parametrize("name", ACCEPTING)
def test_an_accepted_value_is_the_same_collective_under_the_other_model(name):
    """A problem prices its collectives with one model; the other model's value is only an accepted
    alternative, and it differs from the key by exactly the ring factor (N-1)/N, so an alternative that
    also changed V, W or the count of hops (a mix of models) would fail here. The grader names it."""
    import json

    from scalemath.problems.grading import grade

    found = 0
    for seed in range(40):
        problem = registry.make_problem(registry.get_generator(name), seed)
        key = json.loads(render.manifest([problem], seed=seed, topics=[problem.topic], n=1))
        for a in problem.answers:
            for acc in (a.accept if a.kind in ("number", "whole") else ()):
                found += 1
                assert acc.value != a.value and acc.why.strip(), (seed, a.name)
                assert _ring_factor(a.value / acc.value) is not None, (seed, a.name, a.value, acc.value)
                _, graded, _ = grade({problem.id: {a.name: float(acc.value)}}, key)
                g = next(g for g in graded if g.answer == a.name)
                assert g.verdict == "right" and g.note == acc.why, g
    assert found
