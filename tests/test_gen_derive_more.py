"""Derive problems beyond collectives (issue 29): the einsum FLOPs rule with batch dimensions, the tiled matmul's
bytes and intensity, and the pipeline's communication. Each key is held against a count made by brute force at
small sizes (loops over every index, tiles walked one by one, a schedule stepped through), not the formula."""

import itertools
import random

import numpy as np
import pytest
import sympy as sp

from scalemath.problems.generators import derive_einsum_batch as einsum
from scalemath.problems.generators import derive_pipeline_comms as pipe
from scalemath.problems.generators import derive_tiled_matmul as tiled
from scalemath.problems.generators.derive_common import name

SIZES = [2, 3, 5, 7, 4, 6]


def _at(expr, values):
    return expr.subs({name(k): v for k, v in values.items()})


@pytest.mark.parametrize("seed", range(12))
def test_einsum_flops_count_every_multiply_add(seed):
    p = einsum.draw(random.Random(seed))
    letters = einsum._letters(p)
    sizes = dict(zip(letters, SIZES))
    madds = sum(1 for _ in itertools.product(*(range(sizes[d]) for d in letters)))  # one per index combination
    a = {x.name: x for x in einsum.solve(p)}
    assert _at(a["flops"].value, sizes) == 2 * madds
    if p["sharded"]:
        X = 2 if sizes[p["sharded"]] % 2 == 0 else sizes[p["sharded"]]
        # each device's block: the same count over its share of the sharded letter
        local = dict(sizes, **{p["sharded"]: sizes[p["sharded"]] // X})
        assert _at(a["flops_device"].value, sizes | {"X": X}) == 2 * sp.Mul(*local.values())
        assert a["collectives"].value == 0


def test_einsum_sharded_blocks_multiply_alone():
    """Batch-sharded blocks reproduce the whole einsum with no communication (numpy)."""
    rng = np.random.default_rng(0)
    A, W = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 5, 2))
    whole = np.einsum("bij,bjk->bik", A, W)
    blocks = [np.einsum("bij,bjk->bik", A[i:i + 2], W[i:i + 2]) for i in (0, 2)]
    assert np.allclose(np.concatenate(blocks), whole)


@pytest.mark.parametrize("seed", range(10))
def test_tiled_matmul_walks_the_tiles(seed):
    p = tiled.draw(random.Random(seed))
    R, K, C, tm, tn = 8, 6, 12, 4, 3
    moved = 0
    for _i, _j in itertools.product(range(R // tm), range(C // tn)):
        moved += tm * K * p["bx"] + K * tn * p["bw"]  # this tile's rows of A and columns of W
    moved += R * C * p["bo"]
    values = {p["rows"]: R, p["inner"]: K, p["cols"]: C, p["tm"]: tm, p["tn"]: tn}
    a = {x.name: x for x in tiled.solve(p)}
    assert _at(a["bytes"].value, values) == moved
    assert _at(a["intensity"].value, values) == sp.Rational(2 * R * K * C, moved)


def test_tiled_matmul_one_tile_reads_each_input_once():
    p = {"rows": "B", "inner": "D", "cols": "F", "bx": 2, "bw": 2, "bo": 2, "tm": "P", "tn": "Q",
         "dx": "bf16", "dw": "bf16", "do": "bf16"}
    a = {x.name: x for x in tiled.solve(p)}
    # one tile as big as the output: A and W read once, O stored once (roofline.md's untiled count)
    assert sp.simplify(_at(a["bytes"].value, {"P": name("B"), "Q": name("F")})
                       - 2 * (name("B") * name("D") + name("D") * name("F") + name("B") * name("F"))) == 0


@pytest.mark.parametrize("stages, micro", [(2, 1), (4, 4), (4, 8), (8, 16), (3, 5)], ids=str)
def test_pipeline_schedule_stepped_through(stages, micro):
    # microbatch m reaches boundary s (between stage s and s+1) at step m + s: step one schedule and find the last
    last = max(m + s for m in range(micro) for s in range(stages - 1)) + 1 if stages > 1 else 0
    p = {"d1": "B", "d2": "D", "dtype": "bf16", "bytes": 2, "stages": "Z", "micro": "M"}
    a = {x.name: x for x in pipe.solve(p)}
    hop = _at(a["t_hop"].value, {"B": 1024, "D": 512, "M": micro, "W": 10**9})
    assert hop == sp.Rational(2 * (1024 // micro) * 512, 10**9) if 1024 % micro == 0 else True
    total = _at(a["t_pipeline"].value, {"B": 1024, "D": 512, "M": micro, "Z": stages, "W": 10**9})
    assert total == last * hop


# -- a switch's byte accounting (SHARP) ------------------------------------------------------------------------

from scalemath.problems.generators import derive_switch_bytes as switch  # noqa: E402


@pytest.mark.parametrize("gpus", [2, 4, 8, 72], ids=lambda g: f"G{g}")
def test_switch_bytes_by_shards(gpus):
    p = {"array": "A", "d1": "B", "d2": "D", "dtype": "bf16", "bytes": 2, "gpus": "G"}
    a = {x.name: x for x in switch.solve(p)}
    vals = {"B": 1024, "D": 512, "G": gpus}
    V = 2 * 1024 * 512
    shard = sp.Rational(V, gpus)
    # walk the GPUs: each sends its G - 1 foreign partial shards, then its own reduced shard for the multicast
    sent = [sum(shard for other in range(gpus) if other != g) + shard for g in range(gpus)]
    assert all(s == V for s in sent)
    assert _at(a["gpu_bytes"].value, vals) == V
    assert _at(a["switch_bytes"].value, vals) == sum(sent)
    assert _at(a["ratio"].value, vals) == sp.Rational(2 * (gpus - 1), gpus)


def test_switch_ratio_book():
    # gpus.md, SHARP: predicted gain over a ring AllReduce 2(N-1)/N = 1.75 for an 8-GPU node
    p = {"array": "A", "d1": "B", "d2": "D", "dtype": "bf16", "bytes": 2, "gpus": "G"}
    ratio = {x.name: x for x in switch.solve(p)}["ratio"].value
    assert _at(ratio, {"G": 8}) == sp.Rational(7, 4)


# -- the online softmax's merge ------------------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from scalemath.symbolic.transformer.online_softmax import block_stats, online_softmax_merge  # noqa: E402

scores = st.lists(st.integers(-4, 5), min_size=1, max_size=4)


@settings(max_examples=30, deadline=None)
@given(s1=scores, s2=scores, data=st.data())
def test_merge_is_the_softmax_over_all_keys(s1, s2, data):
    v1 = data.draw(st.lists(st.integers(-5, 9), min_size=len(s1), max_size=len(s1)))
    v2 = data.draw(st.lists(st.integers(-5, 9), min_size=len(s2), max_size=len(s2)))
    merged = online_softmax_merge(block_stats(s1, v1, "1"), block_stats(s2, v2, "2")).at({})
    s, v = np.array(s1 + s2, float), np.array(v1 + v2, float)
    w = np.exp(s - s.max())
    assert float(merged.value) == pytest.approx(float(w @ v / w.sum()), rel=1e-12, abs=1e-12)
    assert float(merged.steps[7].value) == pytest.approx(float(w.sum()), rel=1e-12)
    # the merge does not care which block came first
    other = online_softmax_merge(block_stats(s2, v2, "2"), block_stats(s1, v1, "1")).at({})
    assert float(other.value) == pytest.approx(float(merged.value), rel=1e-12, abs=1e-12)


def test_merge_book_shape():
    # transformers.md: the rescale factor exp(m_i - m) is 1 for the block holding the overall max
    d = online_softmax_merge(block_stats([0, 2], [1, 3], "1"), block_stats([5], [7], "2")).at({})
    assert d.steps[6].value == 5
    assert sp.simplify(d.steps[7].value - (sp.exp(-5) + sp.exp(-3) + 1)) == 0
