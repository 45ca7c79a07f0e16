"""The "explain why" generator: a claim and its reason picked from choices, the right pair keyed by the engine's
numbers for the draw. Rows hold one draw per scenario with the book's statement of the answer beside it."""

import random

import pytest

from scalemath.problems.generators import explain_why as ex

BASE = {"claim_order": [0, 1, 2], "reason_order": [0, 1, 2, 3, 4]}


def answers(p):
    return {a.name: a for a in ex.solve(p)}


@pytest.mark.parametrize("params, claim, words", [
    # inference.md, 'What about attention?': decode attention is memory-bound whatever the batch (LLaMA-3 70B's
    # GQA: about 2N/(K·b) = 8 FLOPs/byte against the v5e's 240)
    (dict(ex.model_fields("llama3-70b"), scenario="decode_attention", chip="tpu-v5e", dtype="bf16", S=8192, B=64),
     0, "Memory-bound at every batch"),
    # training.md, 'Tensor Parallelism': "int8 has alpha = 5100 but half the bytes": on the v5p the limit stays
    (dict(scenario="tp_precision", chip="tpu-v5p", dtype="bf16", low="int8", F=28672, M_Y=1), 0, "It stays"),
    # ...but the v4p runs int8 at the bf16 rate: only the bytes halve, and the engine says the limit doubles
    (dict(scenario="tp_precision", chip="tpu-v4p", dtype="bf16", low="int8", F=28672, M_Y=1), 1, "It grows"),
    # sharding.md: a bidirectional ring halves an AllGather
    (dict(scenario="bidirectional_ring", chip="tpu-v5e", N=16, MiB=256), 0, "half"),
    # gpus.md, 'Pipeline Parallelism': ZeRO-3 needs a gather per microbatch: 4352/32 = 136 tokens < 2189 (v5e)
    (dict(scenario="pipeline_zero3", chip="tpu-v5e", dtype="bf16", n_mb=32, tokens=4352), 0, "communication-bound"),
    (dict(scenario="pipeline_zero3", chip="tpu-v5e", dtype="bf16", n_mb=2, tokens=8192), 1, "stays compute-bound"),
    # inference.md: no FSDP for generation: gathering 140 GB of weights over ICI is far slower than HBM
    (dict(ex.model_fields("llama3-70b"), scenario="generation_fsdp", chip="tpu-v5p", dtype="bf16",
          weight_dtype="bf16", n=16), 0, "gather the weights every step"),
], ids=["decode-attn-v5e", "tp-int8-v5p", "tp-int8-v4p", "bidir-v5e", "zero3-pp-32", "zero3-pp-2", "gen-fsdp"])
def test_the_engine_keys_the_claim_and_its_reason(params, claim, words):
    p = BASE | params
    a = answers(p)
    assert int(a["claim"].value) == claim and words in a["claim"].choices[claim]
    assert int(a["reason"].value) == claim  # the reason bound to the true claim
    second = ex.check(p)
    assert second["claim"] == claim and second["reason"] == claim
    assert float(a["figure"].value) == pytest.approx(float(second["figure"]), rel=1e-12)


def test_the_book_figures():
    # training.md: v5p bf16 alpha = 2550 -> Y* = F/2550 per axis; 28672/2550 = 11.24
    p = BASE | dict(scenario="tp_precision", chip="tpu-v5p", dtype="bf16", low="int8", F=28672, M_Y=1)
    assert float(answers(p)["bf16"].value) == pytest.approx(28672 / 2550, rel=1e-3)
    # the v5e's FSDP threshold per chip: C/W_ici = 197e12/90e9 = 2189 tokens (training.md uses 2550 on the v5p)
    p = BASE | dict(scenario="pipeline_zero3", chip="tpu-v5e", dtype="bf16", n_mb=32, tokens=4352)
    assert float(answers(p)["figure"].value) == pytest.approx(197e12 / 90e9, rel=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_shuffled_choices_keep_the_pair(seed):
    """Whatever the order shown, the right letters point at the true claim and its own reason."""
    rng = random.Random(seed)
    from scalemath.problems.registry import Reject
    try:
        p = ex.draw(rng)
    except Reject:
        pytest.skip("a rejected draw")
    a, second = answers(p), ex.check(p)
    true = p["claim_order"][int(a["claim"].value)]
    assert p["reason_order"][int(a["reason"].value)] == true
    assert (second["claim"], second["reason"]) == (int(a["claim"].value), int(a["reason"].value))
    assert len(set(a["claim"].choices)) == 3 and len(set(a["reason"].choices)) == 5


def test_every_scenario_is_drawn():
    seen = set()
    for seed in range(200):
        try:
            seen.add(ex.draw(random.Random(seed))["scenario"])
        except Exception:
            continue
    assert seen == set(ex.SCENARIOS)
