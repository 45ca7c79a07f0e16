"""``scalemath shard PATTERN --xla``: jax.jit compiles the pattern on simulated CPU devices (jax-stuff.md's 'jax.jit'
with in/out shardings, and with_sharding_constraint for a reshard) and XLA's collectives are shown beside shard's.

The expected collectives are counted by hand from the book's rules (sharding.md's four cases; a reshard's AllToAll)
and the element counts from the sizes given; XLA's answer must be them. Needs the ``xla`` extra."""

import json

import pytest
from click.testing import CliRunner

from scalemath.cli import main

pytest.importorskip("jax", reason="jax is not installed; shard --xla needs the xla extra")

SIZES = "I=64,J=128,K=256"
CASES = [
    # id, pattern, mesh, sizes, XLA's collectives, the plan it carries out (None for a reshard)
    # jax-stuff.md, 'jax.jit': In bf16[8, 2048] P('X', 'Y'), W [2048, 8192] P('Y', None), out_shardings P('X', None)
    # on a 2x2 mesh; the chapter's HLO is 'AllReduce = bf16[4,8192]': 4 x 8192 = 32,768 elements over Y
    ("the-chapters-jit-example", "In[B_X, D_Y] @ W[D_Y, F] -> Out[B_X, F]", "X=2,Y=2", "B=8,D=2048,F=8192",
     ["AllReduce_Y (32768 elements)"], 1),
    ("case-1-no-communication", "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "X=2,Y=4", SIZES, [], 1),
    # case 3: both inputs sharded along J over Y: partial sums [I/X, K] = 32 x 256 = 8192 elements all-reduced
    ("case-3-all-reduce", "A[I_X, J_Y] @ B[J_Y, K] -> C[I_X, K]", "X=2,Y=4", SIZES, ["AllReduce_Y (8192 elements)"], 1),
    # case 2 with a sharded output: the J-sharded partial products reduce-scattered onto K: [I/X, K] in, so
    # ReduceScatter of 8192 elements
    ("case-3-reduce-scatter", "A[I_X, J_Y] @ B[J_Y, K] -> C[I_X, K_Y]", "X=2,Y=4", SIZES,
     ["ReduceScatter_Y (8192 elements)"], None),
    # with_sharding_constraint from I-sharded to J-sharded over all 8 devices: one AllToAll of the whole array
    ("reshard-all-to-all", "A[I_X, J] -> A[I, J_X]", "X=8", "I=256,J=512", ["AllToAll_X (131072 elements)"], None),
    # dropping Y from a two-axis sharding: an AllGather over Y into the [64, 512] block each X row holds (32,768)
    ("reshard-all-gather", "A[I_XY, J] -> A[I_X, J]", "X=4,Y=2", "I=256,J=512", ["AllGather_Y (32768 elements)"],
     None),
]


def _run(*args):
    return CliRunner().invoke(main, ["shard", *args])


@pytest.mark.parametrize("pattern, mesh, sizes, collectives, plan", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_xla_agrees_with_shard(pattern, mesh, sizes, collectives, plan):
    result = _run(pattern, "--mesh", mesh, "--set", sizes, "--xla", "--format", "json")
    assert result.exit_code == 0, result.output
    xla = json.loads(result.output)["xla"]
    assert xla["verdict"] == "agrees", xla["detail"]
    assert xla["xla"] == collectives
    if plan is not None:
        assert xla["plan"] == plan and xla["exact"]


def test_text_report_names_the_verdict():
    result = _run("A[I_X, J_Y] @ B[J_Y, K] -> C[I_X, K]", "--mesh", "X=2,Y=4", "--set", SIZES, "--xla")
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("XLA (jax.jit on 8 simulated CPU devices): AllReduce_Y (8192 elements)\n"
                                           "agrees: XLA carries out plan 1")


@pytest.mark.parametrize("args, message", [
    pytest.param(["A[I_X, J] -> A[I, J_X]", "--mesh", "X=8", "--xla"], "give every dimension's size with --set",
                 id="no-sizes"),
    pytest.param(["A[I_X, J] @ B[J, K] -> C[I_X, K]", "--mesh", "X=2", "--set", "I=8", "--xla"], "J=1024,K=1024",
                 id="some-sizes"),
    pytest.param(["A[I_X, J]", "--mesh", "X=2", "--set", "I=8,J=8", "--xla"], "--xla needs a reshard",
                 id="one-layout"),
    pytest.param(["A[I_X, J] @ B[J, K] -> C[I_X, K]", "--mesh", "X=2", "--set", "I=8,J=8,K=8", "--xla", "--format",
                  "latex"], "--xla prints text or JSON", id="latex"),
])
def test_refusals(args, message):
    result = _run(*args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, result.output
