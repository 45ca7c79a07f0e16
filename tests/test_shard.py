"""scalemath shard: cases, collectives, costs, the cheaper plan, bad input."""

import json

import pytest
import sympy as sp
from click.testing import CliRunner

from scalemath.cli import main

SIZES = "I=8192,J=8192,K=32768"


def shard(*args):
    result = CliRunner().invoke(main, ["shard", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("pattern,case,kinds", [
    ("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "1", [[]]),
    ("A[I, J_X] @ B[J, K] -> C[I, K]", "2", [["AllGather"], ["AllReduce"]]),
    ("A[I, J_X] @ B[J_X, K] -> C[I, K]", "3", [["AllReduce"]]),
    ("A[I, J_X] @ B[J_X, K] -> C[I, K_X]", "3", [["ReduceScatter"]]),
    ("A[I_X, J] @ B[J, K_X] -> C[I, K_X]", "4", [["AllGather"], ["AllGather", "AllToAll"]]),
    ("A[I_X, J] @ B[J, K] -> C[I, K_X]", "1", [["AllToAll"]]),
], ids=["case1", "case2", "case3-allreduce", "case3-reducescatter", "case4", "output-alltoall"])
def test_cases_and_collectives(pattern, case, kinds):
    data = shard(pattern, "--mesh", "X=4,Y=2", "--chip", "tpu-v5p", "--set", SIZES)
    assert data["case"] == case
    assert [[c["kind"] for c in p["collectives"]] for p in data["plans"]] == kinds
    assert sum(p.get("cheapest", False) for p in data["plans"]) == 1


def test_numbers_for_the_gather_plan_by_hand():
    # A[I, J_X] gathered over X=4: V = 2*8192*8192 bytes; on a v5p ring with wraparound the
    # AllGather takes V*(4-1)/4 / 1.8e11 = 559.24 µs (latency 4/2 µs is smaller);
    # the local matmul is 2*8192*8192*32768 FLOPs at 4.59e14 FLOP/s.
    plan = shard("A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--chip", "tpu-v5p", "--set", SIZES)["plans"][0]
    v = 2 * 8192 * 8192
    assert plan["collectives"][0]["bytes_exact"] == str(v)
    assert sp.Rational(plan["collectives"][0]["time_exact"]) == sp.Rational(v * 3, 4 * 18 * 10**10)
    assert sp.Rational(plan["t_math_exact"]) == sp.Rational(2 * 8192 * 8192 * 32768, 459 * 10**12)
    assert plan["bound"] == "compute"


@pytest.mark.parametrize("b,d,winner", [
    # sharding.md Q4: with B < C/W_ici (~2550 on v5p) strategy 2 (multiply the shards, AllReduce)
    # wins when D > 2B; with B large it wins only when D > 2C/W_ici (~5100). The engine keeps the
    # ring's (N-1)/N = 3/4 on both collectives, which moves that threshold to 1.5 C/W_ici (~3825).
    (128, 8192, "AllReduce_X C"),
    (16384, 8192, "AllReduce_X C"),
    (16384, 2048, "AllGather_X B"),
], ids=["small-batch", "large-batch-wide", "large-batch-narrow"])
def test_gather_or_reduce_regimes(b, d, winner):
    data = shard("A[I, J] @ B[J_X, K] -> C[I, K]", "--mesh", "X=4", "--chip", "tpu-v5p",
                 "--set", f"I={b},J={d},K=32768")
    assert next(p["name"] for p in data["plans"] if p["cheapest"]) == winner


def test_gpu_prices_with_nvlink():
    data = shard("A[I, J_X] @ B[J_X, K] -> C[I, K_X]", "--mesh", "X=8", "--chip", "h100", "--set", SIZES)
    c = data["plans"][0]["collectives"][0]
    # gpus.md: ReduceScatter in a node, V(N-1)/(N W_gpu) with W_gpu = 450 GB/s
    assert sp.Rational(c["time_exact"]) == sp.Rational(2 * 8192 * 32768 * 7, 8 * 450 * 10**9)
    assert "NVLink" in c["how"]


def test_symbolic_without_sizes():
    data = shard("A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4")
    assert data["plans"][0]["collectives"][0]["bytes_exact"] == "2*I*J"
    assert "cheapest" not in data["plans"][0]


def test_text_and_latex():
    text = CliRunner().invoke(main, ["shard", "A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4",
                                     "--chip", "tpu-v5e", "--set", SIZES]).output
    assert "case 2" in text and "(cheapest)" in text and "-bound" in text
    latex = CliRunner().invoke(main, ["shard", "A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4",
                                      "--set", SIZES, "--format", "latex"]).output
    assert latex.count("\\begin{align*}") == 2


@pytest.mark.parametrize("args,fragment", [
    (["A[I_X, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4"], "used twice"),
    (["A[I_W, J] @ B[J, K] -> C[I, K]", "--mesh", "X=4"], "unknown mesh axis"),
    (["A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=four"], "NAME=SIZE"),
    (["A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--set", "I=10,J=10,K=8"], "does not split evenly"),
    (["A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--set", "Q=8"], "unknown dimension"),
    (["A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--set", "I=0"], "positive whole number"),
    (["A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--chip", "tpu-v9"], "did you mean"),
], ids=["axis-twice", "unknown-axis", "bad-mesh", "not-divisible", "unknown-dim", "zero", "chip-typo"])
def test_bad_input(args, fragment):
    result = CliRunner().invoke(main, ["shard", *args])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("pattern", [
    "A[N, M_X] @ B[M, K] -> C[N, K_X]",      # N is SymPy's N() when a string is parsed back
    "A[S, O_X] @ B[O, Q] -> C[S, Q]",         # S, O and Q are SymPy objects too
    "A[E, I_X] @ B[I, beta] -> C[E, beta]",   # E (Euler's number), I (the imaginary unit), beta (a function)
], ids=["N", "S-O-Q", "E-I-beta"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_dimension_letter_works(pattern, fmt):
    result = CliRunner().invoke(main, ["shard", pattern, "--mesh", "X=4", "--format", fmt])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert "plan 1" in result.output if fmt == "text" else json.loads(result.output)["plans"]
