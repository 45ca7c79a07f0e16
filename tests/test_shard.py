"""scalemath shard: cases, collectives, costs, the cheaper plan, bad input."""

import json
from fractions import Fraction

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
    # A[I, J_X] gathered over X=4: V = 2*8192*8192 bytes; on a v5p ring with wraparound (X is one axis of a
    # 4x4x4 cube) the AllGather takes V*(4-1)/4 / 1.8e11 = 559.24 µs (latency 4/2 µs is smaller);
    # the local matmul is 2*8192*8192*32768 FLOPs at 4.59e14 FLOP/s.
    plan = shard("A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--chip", "tpu-v5p", "--slice", "4x4x4",
                 "--set", SIZES)["plans"][0]
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


def _link_load(n: int, ring: bool) -> Fraction:
    """Shards on the busiest directed link of an AllGather over n chips, a count that shares no code with the
    engine: each chip forwards every shard it receives, so a shard crosses a link at most once; it travels the
    shortest way to each chip, split evenly between the two ways when they tie (the far side of an even ring)."""
    load = {}
    for src in range(n):
        mine = {}  # the share of src's shard each directed link carries
        for dst in range(n):
            if dst == src:
                continue
            if ring:
                right, left = (dst - src) % n, (src - dst) % n
            else:
                right, left = (dst - src, None) if dst > src else (None, src - dst)
            shortest = min(d for d in (right, left) if d is not None)
            ways = [step for step, dist in ((1, right), (-1, left)) if dist == shortest]
            for step in ways:
                at = src
                for _ in range(shortest):
                    nxt = (at + step) % n
                    mine[(at, nxt)] = max(mine.get((at, nxt), 0), Fraction(1, len(ways)))
                    at = nxt
        for link, share in mine.items():
            load[link] = load.get(link, 0) + share
    return max(load.values())


@pytest.mark.parametrize("n,chip,ring", [
    (8, "tpu-v5e", False), (16, "tpu-v5e", True), (4, "tpu-v6e", False), (16, "tpu-v6e", True),
], ids=["v5e-8-open", "v5e-16-ring", "v6e-4-open", "v6e-16-ring"])
def test_open_and_wrapped_axes_against_a_link_count(n, chip, ring):
    """topology-aware shard: an AllGather's time is the busiest link's bytes at one link's one-way bandwidth."""
    from scalemath.catalog import hardware
    from scalemath.reports.shard import analyse

    report = analyse("A[I, J_X] @ B[J, K] -> C[I, K]", f"X={n}", hardware.get_chip(chip), "bf16",
                     {"I": sp.Integer(1024), "J": sp.Integer(n * 1024), "K": sp.Integer(64)})
    assert report["wraps"] == {"X": ring}
    gather = report["plans"][0]["_values"]["collectives"][0]
    shard_bytes = gather[0] / n
    link = hardware.get_chip(chip).bandwidth("ici-link")
    expected = _link_load(n, ring) * shard_bytes / link
    assert gather[1] == max(expected, hardware.get_chip(chip).hop_latency_s * (n / 2 if ring else n - 1))


@pytest.mark.parametrize("args,wraps,fragment", [
    # a 4-chip v5p slice is smaller than a cube: no wraparound, the AllGather takes twice the ring's time
    (["--mesh", "X=4", "--chip", "tpu-v5p"], {"X": False}, "X=4 is an open line"),
    (["--mesh", "X=4", "--chip", "tpu-v5p", "--slice", "4x4x4"], {"X": True}, "X=4 wraps"),
    # a mesh axis shorter than its slice axis is a segment of the ring: open
    (["--mesh", "X=8", "--chip", "tpu-v5e", "--slice", "16x16"], {"X": False}, "X=8 is an open line"),
    (["--mesh", "X=16,Y=16", "--chip", "tpu-v6e"], {"X": True, "Y": True}, "Y=16 wraps"),
    (["--mesh", "X=8,Y=16", "--chip", "tpu-v5e"], {"X": False, "Y": True}, "X=8 is an open line"),
    (["--mesh", "X=8", "--chip", "h100"], None, ""),
], ids=["v5p-small", "v5p-cube", "v5e-segment", "v6e-16x16", "v5e-8x16", "gpu"])
def test_which_axes_wrap(args, wraps, fragment):
    result = CliRunner().invoke(main, ["shard", "A[I, J_X] @ B[J, K] -> C[I, K]", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["wraps"] == wraps and fragment in (data["topology"] or "")


def test_an_open_axis_costs_twice_the_ring():
    times = []
    for extra in ([], ["--slice", "4x4x4"]):
        data = shard("A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--chip", "tpu-v5p", *extra, "--set", SIZES)
        times.append(sp.Rational(data["plans"][0]["collectives"][0]["time_exact"]))
    assert times[0] == 2 * times[1]


@pytest.mark.parametrize("args,fragment", [
    (["--mesh", "X=4", "--chip", "h100", "--slice", "4x4"], "describes a TPU slice"),
    (["--mesh", "X=4", "--chip", "tpu-v5p", "--slice", "4x4"], "3 sizes"),
    (["--mesh", "X=8", "--chip", "tpu-v5e", "--slice", "4x4"], "does not fit"),
], ids=["gpu", "wrong-dims", "too-big"])
def test_bad_slices(args, fragment):
    result = CliRunner().invoke(main, ["shard", "A[I, J_X] @ B[J, K] -> C[I, K]", *args])
    assert result.exit_code == 2 and fragment in result.output, result.output


def reshard(*args):
    result = CliRunner().invoke(main, ["shard", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("pattern,mesh,kinds", [
    ("A[I_X, J] -> A[I, J]", "X=4", ["AllGather"]),          # sharding.md: gather a sharded dimension
    ("A[I, J] -> A[I_X, J]", "X=4", []),                     # slicing is free
    ("A[I_X, J] -> A[I, J_X]", "X=4", ["AllToAll"]),         # an axis moving to another dimension
    ("C[I, K]{U_X} -> C[I, K]", "X=4", ["AllReduce"]),       # partial sums, summed everywhere
    ("C[I, K]{U_X} -> C[I_X, K]", "X=4", ["ReduceScatter"]),  # partial sums, each device keeping its block
    ("A[I_XY, J] -> A[I_X, J]", "X=2,Y=2", ["AllGather"]),   # gather the trailing axis only
    ("A[I_XY, J] -> A[I, J_XY]", "X=2,Y=2", ["AllToAll"]),    # both axes move together: one AllToAll over XY
    ("A[I_XY, J] -> A[I, J_YX]", "X=2,Y=2", ["AllToAll", "AllToAll"]),  # J wants Y first: Y moves, then X
    ("A[I_X, J] -> A[I_Y, J]", "X=2,Y=2", ["CollectivePermute"]),        # a new axis of the same size
    ("A[I_Y, J] -> A[I_X, J]", "X=4,Y=2", ["CollectivePermute"]),        # the new block inside an old one
    ("A[I_X, J] -> A[I_Y, J]", "X=4,Y=2", ["CollectivePermute", "AllGather"]),  # permute to I_YX, gather X
    ("A[I_X, J_Y] -> A[I_Y, J_X]", "X=4,Y=2", ["AllGather", "AllToAll"]),  # Y is in use: no permute
    ("A[I_XY, J] -> A[I_YX, J]", "X=4,Y=2", ["CollectivePermute"]),        # the same axes reordered
    ("A[I_XY, J] -> A[I_Y, J]", "X=4,Y=2", ["CollectivePermute", "AllGather"]),  # keep the minor axis only
    ("A[I_XY, J] -> A[I_Y, J_X]", "X=4,Y=2", ["CollectivePermute", "AllToAll"]),  # X made trailing, then moved
], ids=["gather", "slice", "all-to-all", "all-reduce", "reduce-scatter", "partial-gather", "all-to-all-XY",
        "all-to-all-Y-then-X", "permute", "permute-to-finer", "permute-then-gather", "swap-in-use", "reorder",
        "keep-minor-axis", "permute-then-all-to-all"])
def test_reshard_collectives(pattern, mesh, kinds):
    sizes = ",".join(f"{d}=64" for d in "IJK" if f"{d}" in pattern.split("->")[0])
    data = reshard(pattern, "--mesh", mesh, "--set", sizes)
    assert [c["kind"] for c in data["collectives"]] == kinds


def test_reshard_gather_time_by_hand():
    # AllGather of a bf16 [8192, 8192] array over X=16 on a v5e 16-chip ring: V (N-1)/(N W_ici), W_ici = 9e10
    data = reshard("A[I_X, J] -> A[I, J]", "--mesh", "X=16", "--chip", "tpu-v5e", "--set", "I=8192,J=8192")
    v = 2 * 8192 * 8192
    assert data["collectives"][0]["bytes_exact"] == str(v)
    assert sp.Rational(data["time_exact"]) == sp.Rational(v * 15, 16 * 9 * 10**10)


def test_reshard_all_to_all_over_two_axes_time_by_hand():
    # sharding.md (S-12): an AllToAll on an A x B torus takes V max(A, B) / (4 N W_ici), V the whole array.
    # bf16 [32768, 32768] over a 16 x 16 v5e slice (both axes wrap: 16 chips), W_ici = 2 x 4.5e10 = 9e10
    data = reshard("A[I_XY, J] -> A[I, J_XY]", "--mesh", "X=16,Y=16", "--chip", "tpu-v5e",
                   "--set", "I=32768,J=32768")
    v = 2 * 32768 * 32768
    assert [(c["kind"], c["axes"], c["bytes_exact"]) for c in data["collectives"]] == [("AllToAll", ["X", "Y"], str(v))]
    assert sp.Rational(data["time_exact"]) == sp.Rational(v * 16, 4 * 256 * 9 * 10**10)


def test_reshard_permute_time_by_hand():
    # jax.lax.ppermute (jax-stuff.md): each device sends its block over one link one way, V / W_link, W_link =
    # 4.5e10 on v5e (tpus.md). A[I_Y, J] -> A[I_X, J], X = Y = 16: the block is bf16 [32768/16, 32768]
    data = reshard("A[I_Y, J] -> A[I_X, J]", "--mesh", "X=16,Y=16", "--chip", "tpu-v5e",
                   "--set", "I=32768,J=32768")
    v = 2 * 32768 // 16 * 32768
    assert [(c["kind"], c["bytes_exact"]) for c in data["collectives"]] == [("CollectivePermute", str(v))]
    assert sp.Rational(data["time_exact"]) == sp.Rational(v, 45 * 10**9)


@pytest.mark.parametrize("pattern,mesh,local,shards,replicas,per_device", [
    # sharding.md: A[I_X, J_Y] on a 4x2x2 mesh: each device holds [I/4, J/2]; the Z axis replicates it
    ("A[I_X, J_Y]", "X=4,Y=2,Z=2", ["256", "512"], 8, 2, 2 * 256 * 512),
    ("A[I_XY, J]", "X=4,Y=2", ["128", "1024"], 8, 1, 2 * 128 * 1024),
    ("A[I, J]", "X=4", ["1024", "1024"], 1, 4, 2 * 1024 * 1024),
], ids=["two-axes-and-replica", "two-axes-one-dim", "replicated"])
def test_layout_of_a_partition_spec(pattern, mesh, local, shards, replicas, per_device):
    layout = reshard(pattern, "--mesh", mesh, "--set", "I=1024,J=1024")["layouts"][0]
    assert (layout["local_shape"], layout["shards"], layout["replicas"]) == (local, shards, replicas)
    devices = sp.prod([int(kv.split("=")[1]) for kv in mesh.split(",")])
    assert layout["bytes_per_device"] == str(per_device) and layout["bytes_over_mesh"] == str(per_device * devices)


@pytest.mark.parametrize("pattern,fragment", [
    ("A[I_X, J] -> A[J, I]", "same dimensions"),
    ("C[I, K] -> C[I, K]{U_X}", "cannot become unreduced"),
], ids=["dims-reordered", "new-unreduced"])
def test_reshard_bad_patterns(pattern, fragment):
    result = CliRunner().invoke(main, ["shard", pattern, "--mesh", "X=4"])
    assert result.exit_code == 2 and fragment in result.output and "Traceback" not in result.output


def test_matmul_reports_work_repeated_on_unused_axes():
    # A[I_X, J] @ B[J, K] on X=4, Y=2: Y shards nothing, so every Y replica does the same work: twice over the mesh
    data = shard("A[I_X, J] @ B[J, K] -> C[I_X, K]", "--mesh", "X=4,Y=2", "--set", "I=1024,J=1024,K=1024")
    plan = data["plans"][0]
    assert plan["repeated"] == "2" and plan["flops_mesh_exact"] == str(2 * 2 * 1024**3)


@pytest.mark.parametrize("pattern,kind", [
    ("A[I, J] · B[J, K] → C[I, K]", "matmul"),   # the book's operators, three arrays: a matmul
    ("A[I, J] * B[J, K] -> C[I, K]", "matmul"),
    ("A[I_X, J] → A[I, J]", "reshard"),          # two arrays and an arrow: a reshard, either arrow
    ("A[I_X, J]", "layout"),
], ids=["unicode-matmul", "star-matmul", "unicode-reshard", "layout"])
def test_pattern_kinds(pattern, kind):
    data = reshard(pattern, "--mesh", "X=4")
    assert ("plans" in data) == (kind == "matmul") and ("collectives" in data) == (kind == "reshard")
