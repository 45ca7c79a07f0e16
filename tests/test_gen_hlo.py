"""The HLO corpus and the generator that asks a student to read it (hlo_read_module).

The corpus is real XLA output; its index records what each module does. Without jax: the committed
text is read again and must say what the index says, and the generator's answers are held against hand
counts. With the xla extra: every module is compiled again and must do the same collectives, with the
same element counts and FLOPs (the text itself drifts between jax releases; what it does may not).
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import re  # noqa: E402
from fractions import Fraction  # noqa: E402

import pytest  # noqa: E402
import sympy as sp  # noqa: E402

from scalemath.errors import CheckFailedError  # noqa: E402
from scalemath.xla.corpus import entries, entry  # noqa: E402
from scalemath.xla.corpus.build import PROGRAMS, TPU_PROGRAMS, record  # noqa: E402
from scalemath.problems.generators import hlo_read_module as gen_module  # noqa: E402
from scalemath.problems.registry import get_generator, make_problem  # noqa: E402
from scalemath.problems.render import render_problem  # noqa: E402

GEN = get_generator("hlo_read_module")
NAMES = [e.name for e in entries()]


def _signature(rec):
    return sorted((c["kind"], tuple(c["axes"] or ()), c["elements"], c["dtype"]) for c in rec["collectives"]), \
        rec["flops"]


def test_corpus_is_the_programs_the_builder_lists_and_small():
    assert [e.name for e in entries()] == [p[0] for p in PROGRAMS + TPU_PROGRAMS]
    total = sum(len(e.text.encode()) for e in entries())
    assert total < 300_000, total  # a few hundred kB at most, as package data
    for e in entries():  # no file paths of the machine that compiled it
        assert "FileNames" not in e.text and not re.search(r'"(/|[A-Z]:\\)', e.text), e.name


# What XLA did, counted by hand from the program (f32; mesh X=4, Y=2 unless said; I, J, K = 256, 512, 1024):
HAND = [
    # gather A[I, J_X] over X: the whole A, 256 x 512 elements; the local matmul 2 x 256 x 512 x 1024
    pytest.param("case2-gather-A-x4y2", [("AllGather", ("X",), 256 * 512)], 2 * 256 * 512 * 1024, id="case2"),
    # partial sums C[I, K] of a J/4 block: AllReduce of 256 x 1024 over X; local 2 x 256 x 128 x 1024
    pytest.param("case3-allreduce-x4y2", [("AllReduce", ("X",), 256 * 1024)], 2 * 256 * 128 * 1024, id="case3"),
    pytest.param("case3-reducescatter-x4y2", [("ReduceScatter", ("X",), 256 * 1024)], 2 * 256 * 128 * 1024,
                 id="case3-scatter"),
    # J over both axes (8 blocks of 64): AllReduce over XY of 256 x 1024; local 2 x 256 x 64 x 1024
    pytest.param("case3-allreduce-xy-x4y2", [("AllReduce", ("X", "Y"), 256 * 1024)], 2 * 256 * 64 * 1024,
                 id="case3-xy"),
    # gather B[J, K_X] over X (512 x 1024); local 2 x 64 x 512 x 1024
    pytest.param("case4-gather-B-x4y2", [("AllGather", ("X",), 512 * 1024)], 2 * 64 * 512 * 1024, id="case4"),
    pytest.param("case1-no-comms-x4y2", [], 2 * 64 * 512 * 512, id="case1"),
    # A[I_X, J] -> A[I, J_X]: the 256 x 512 array the 4 devices of a group share; no matmul
    pytest.param("reshard-alltoall-x4y2", [("AllToAll", ("X",), 256 * 512)], 0, id="alltoall"),
    # A[I_Y, J] -> A[I_X, J] on 2 x 2: each device sends its 128 x 512 block to one other
    pytest.param("reshard-permute-x2y2", [("CollectivePermute", ("X", "Y"), 128 * 512)], 0, id="permute"),
    # the same on a TPU v5e 2x4 slice (bf16): gather A over X; the ReduceScatter as a fusion of %all-reduce-scatter
    pytest.param("tpu-case2-gather-A-x4y2", [("AllGather", ("X",), 256 * 512)], 2 * 256 * 512 * 1024, id="tpu-case2"),
    pytest.param("tpu-case3-reducescatter-x4y2", [("ReduceScatter", ("X",), 256 * 1024)], 2 * 256 * 128 * 1024,
                 id="tpu-case3-scatter"),
]


@pytest.mark.parametrize("name,collectives,flops", HAND)
def test_corpus_index_against_hand_counts(name, collectives, flops):
    e = entry(name)
    assert [(c["kind"], tuple(c["axes"]), c["elements"]) for c in e.collectives] == collectives
    assert e.flops == flops


@pytest.mark.parametrize("name", NAMES)
def test_committed_text_does_what_its_index_says(name):
    e = entry(name)
    assert _signature(record(e.text, e.mesh)) == _signature({"collectives": e.collectives, "flops": e.flops})


@pytest.mark.parametrize("name", NAMES)
def test_recompiling_reproduces_the_corpus(name):
    jax = pytest.importorskip("jax", reason="recompiling the corpus needs the xla extra (pip install -e '.[xla]')")
    if len(jax.devices("cpu")) < 8:
        pytest.skip("jax started with fewer than 8 CPU devices; run in a fresh process")
    from scalemath.xla.corpus.build import compile_program, strip_paths

    e = entry(name)
    if e.backend.startswith("tpu"):
        pytest.importorskip("libtpu", reason="compiling for a TPU without one needs libtpu (its compile-only client)")
        from scalemath.xla.corpus.build import compile_tpu

        text = strip_paths(compile_tpu(e.program, e.pattern, e.mesh, e.sizes, e.backend.split()[1]))
    else:
        text = strip_paths(compile_program(e.program, e.pattern, e.mesh, e.sizes))
    assert _signature(record(text, e.mesh)) == _signature({"collectives": e.collectives, "flops": e.flops})


# -- the generator ----------------------------------------------------------------------------------------

def _params(name, chip, seed=0):
    """A draw with the entry and chip fixed (choices drawn as the generator draws them)."""
    import random

    rng = random.Random(seed)
    while True:
        p = GEN.draw(rng)
        if p["entry"] == name:
            break
    return {**p, "chip": chip}


# Hand counts: V in bytes (f32, 4 per element) and the time on the slice, every axis an open line (the end
# chip receives through one link, W_ici/2; the far end N - 1 hops away). W_ici = 2 x the one-way link:
# v5e 4.5e10, v6e 9e10 one-way (hardware.md C6: the book's ICI table); t_hop = 1 us (hardware.md S1).
ROWS = [
    # AllGather of A over X = 4: V = 256*512*4; time = V*(3/4)/(W_ici/2) = 393216/4.5e10 > 3 hops of 1 us
    pytest.param("case2-gather-A-x4y2", "tpu-v5e", "AllGather over X", 524288, Fraction(393216, 45 * 10**9),
                 id="allgather-v5e"),
    # ReduceScatter over X of 256x1024 f32: V = 1048576; V*(3/4)/(9e10/2) on v6e (W_ici 1.8e11)
    pytest.param("case3-reducescatter-x4y2", "tpu-v6e", "ReduceScatter over X", 1048576,
                 Fraction(786432, 90 * 10**9), id="reducescatter-v6e"),
    # AllReduce over X and Y (8 devices, two open axes: W_ici x 1): 2 x V*(7/8)/9e10, above 4 hops
    pytest.param("case3-allreduce-xy-x4y2", "tpu-v5e", "AllReduce over X and Y", 1048576,
                 2 * Fraction(917504, 90 * 10**9), id="allreduce-xy-v5e"),
    # AllToAll over X = 4 of the 256x512 array: V/(2 W_ici) = 524288/3.6e11 = 1.46 us < 3 hops = 3 us
    pytest.param("reshard-alltoall-x4y2", "tpu-v6e", "AllToAll over X", 524288, Fraction(3, 10**6),
                 id="alltoall-latency-v6e"),
    # permute on 2 x 2: each device sends 128x512 f32 = 262144 B through one link one way: 2V/W_ici on v6e
    pytest.param("reshard-permute-x2y2", "tpu-v6e", "CollectivePermute over X and Y", 262144,
                 Fraction(524288, 180 * 10**9), id="permute-v6e"),
    # compiled for the v5e itself, bf16: AllGather of A (256x512 x 2 B): V*(3/4)/(W_ici/2) = 196608/4.5e10
    pytest.param("tpu-case2-gather-A-x4y2", "tpu-v5e", "AllGather over X", 262144, Fraction(196608, 45 * 10**9),
                 id="tpu-allgather-v5e"),
    # the TPU's ReduceScatter fusion of C (256x1024 bf16 = 524288 B): 393216/4.5e10
    pytest.param("tpu-case3-reducescatter-x4y2", "tpu-v5e", "ReduceScatter over X", 524288,
                 Fraction(393216, 45 * 10**9), id="tpu-reducescatter-v5e"),
]


@pytest.mark.parametrize("name,chip,collective,v,seconds", ROWS)
def test_answers_against_hand_counts(name, chip, collective, v, seconds):
    p = _params(name, chip)
    engine = {a.name: a for a in GEN.solve(p)}
    other = GEN.check(p)
    assert engine["collective"].choices[int(engine["collective"].value)] == collective
    assert other["collective"] == int(engine["collective"].value)
    assert engine["bytes"].value == v == other["bytes"]
    assert engine["time"].value == sp.Rational(seconds.numerator, seconds.denominator) == other["time"]
    assert gen_module.words(entry(name).pattern) == engine["program"].choices[int(engine["program"].value)]


@pytest.mark.parametrize("seed", range(40))
def test_every_draw_passes_both_routes_and_hides_the_answer(seed):
    problem = make_problem(GEN, seed)
    e = entry(problem.params["entry"])
    statement = render_problem(problem, "md", "statement")
    for giveaway in ("sharding=", "metadata=", "op_name", "mesh['", "jit_", "HloModule"):
        assert giveaway not in problem.params["hlo"], giveaway  # annotations that name the sharding or the op
    for giveaway in (e.pattern, problem.params["reading"], "metadata=", "sharding={"):
        assert giveaway not in statement, giveaway
    programs = problem.answer("program").choices
    assert len(programs) == len(set(programs)) >= 3
    assert problem == make_problem(GEN, seed)  # deterministic per seed


def test_draws_cover_every_entry_with_one_collective():
    import random

    seen = {GEN.draw(random.Random(s))["entry"] for s in range(300)}
    assert seen == {e.name for e in entries() if len(e.collectives) == 1}


def test_a_key_that_disagrees_with_the_engine_plan_is_never_emitted(monkeypatch):
    # the shown all-gather edited to gather twice the elements: the key (read from the text) then says V is
    # twice what the engine's plan for the compiled sharding moves, and the problem is refused
    seed = next(s for s in range(200) if make_problem(GEN, s).params["entry"] == "case2-gather-A-x4y2")
    real = gen_module.shown_hlo

    def doubled(name):
        return real(name).replace("%all-gather = f32[256,512]", "%all-gather = f32[256,1024]")

    assert doubled("case2-gather-A-x4y2") != real("case2-gather-A-x4y2")
    monkeypatch.setattr(gen_module, "shown_hlo", doubled)
    with pytest.raises(CheckFailedError, match="answer bytes"):
        make_problem(GEN, seed)
