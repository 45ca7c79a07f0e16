"""scalemath shard with batch dimensions (in both inputs and the output): A[B_X, I, J] @ C[B_X, J, K] -> D[B_X, I, K].

Every plan is run by the numpy fake-mesh simulation (the second route: split the arrays, run the collectives,
compare with the unsharded einsum, count bytes); FLOPs per device by hand. The XLA check is in
tests/test_xla_shardmap.py.
"""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.reports.simulate import simulate
from scalemath.symbolic.notation import parse_contraction
from scalemath.symbolic.sharding import plans

MESH = {"X": 4, "Y": 2}
SIZES = {"B": 8, "I": 4, "J": 8, "K": 8}

CASES = [
    # pattern, the first plan's collectives, FLOPs per device of the first plan (by hand)
    ("A[B_X, I, J] @ C[B_X, J, K] -> D[B_X, I, K]", [], 2 * (8 // 4) * 4 * 8 * 8),
    # C is replicated along B: each device slices its B block (free); partial sums over Y
    ("A[B_X, I, J_Y] @ C[B, J_Y, K] -> D[B_X, I, K]", ["AllReduce_Y D[B_X, I, K]{U_Y} -> D[B_X, I, K]"],
     2 * 2 * 4 * 4 * 8),
    ("A[B_XY, I, J] @ C[B_X, J, K] -> D[B_XY, I, K]", [], 2 * 1 * 4 * 8 * 8),
    # X shards A's I and C's B: gather C's B first, then the output's B is moved onto X
    ("A[B, I_X, J] @ C[B_X, J, K] -> D[B_X, I, K]",
     ["AllGather_X C[B_X, J, K] -> C[B, J, K]", "AllToAll_X D[B, I_X, K] -> D[B_X, I, K]"], 2 * 8 * 1 * 8 * 8),
    ("A[B_Y, I, J] @ C[B_Y, J, K_X] -> D[B_Y, I, K_X]", [], 2 * 4 * 4 * 8 * 2),
    ("A[B_X, I, J] @ C[B_X, J, K] -> D[B, I, K]", ["AllGather_X D[B_X, I, K] -> D[B, I, K]"], 2 * 2 * 4 * 8 * 8),
]


@pytest.mark.parametrize("pattern,first,flops", CASES, ids=[c[0] for c in CASES])
def test_batch_plans_simulate_exactly(pattern, first, flops):
    c = parse_contraction(pattern, MESH)
    assert c.batch == ("B",)
    found = plans(c, MESH, SIZES, 2)
    assert [str(x) for x in found[0].collectives] == first
    assert found[0].flops == flops
    for i, plan in enumerate(found):
        sim = simulate(c, MESH, SIZES, plan, 2, np.random.default_rng(i))
        assert sim.result_ok and sim.flops_per_device == plan.flops
        for (_, received), x in zip(sim.per_collective, plan.collectives, strict=True):
            # a ring AllGather brings each device the V (N - 1) / N bytes it lacks; nothing moves more than V
            if x.kind == "AllGather":
                assert received == x.bytes * (x.group - 1) / x.group
            assert 0 < received <= x.bytes


def test_the_cli_accepts_batch_dimensions():
    result = CliRunner().invoke(main, ["shard", "A[B_X, I, J] @ C[B_X, J, K] -> D[B_X, I, K]", "--mesh", "X=4",
                                       "--chip", "tpu-v5e", "--set", "B=8,I=1024,J=2048,K=4096", "--format", "json"])
    assert result.exit_code == 0, result.output
    (plan,) = json.loads(result.output)["plans"]
    # no communication; 2 * (8/4) * 1024 * 2048 * 4096 FLOPs per device, the work done once over the mesh
    assert plan["collectives"] == [] and plan["flops"] == 2 * 2 * 1024 * 2048 * 4096 and plan["repeated"] == "1"
