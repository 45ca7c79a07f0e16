"""The "derive" generators (closed forms graded by equivalence) and the GPU-internals and SuperPod generators:
deterministic, checked by their second route for many seeds, variants that differ, and the book's figures."""

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.problems.registry import exact_routes, generators, make_problem

DERIVE = ("derive_all_to_all", "derive_reduce_scatter", "derive_backward_comms")
GPU = ("gpu_sm_internals", "gpu_superpod")


def _s(name):
    return sp.Symbol(name, positive=True)


@pytest.mark.parametrize("name", DERIVE + GPU)
def test_deterministic_checked_and_varied(name):
    gen = generators()[name]
    problems = [make_problem(gen, seed) for seed in range(25)]  # make_problem refuses a failed second route
    assert make_problem(gen, 7) == problems[7]
    assert len({tuple(sorted(p.params.items())) for p in problems}) >= (5 if name == "gpu_superpod" else 10)


@pytest.mark.parametrize("name", DERIVE)
def test_derive_answers_are_formulas_over_their_declared_symbols(name):
    for seed in range(10):
        p = make_problem(generators()[name], seed)
        for a in p.answers:
            if a.kind == "expression":
                names = {n for n, _ in a.symbols}
                assert {s.name for s in a.value.free_symbols} <= names and "W" in names


def test_all_to_all_is_a_quarter_of_an_all_gather():
    # sharding.md S-11: on a bidirectional ring T_AllToAll = V/(4 W_ici), a quarter of an AllGather (V/W_ici)
    for seed in range(10):
        p = make_problem(generators()["derive_all_to_all"], seed)
        V = p.params["bytes"] * _s(p.params["d1"]) * _s(p.params["d2"])
        assert sp.simplify(p.answer("t_all_to_all").value - V / (4 * _s("W"))) == 0
        assert sp.simplify(p.answer("t_all_gather").value - V / _s("W")) == 0
        assert p.answer("ratio").value == sp.Rational(1, 4)


def test_reduce_scatter_is_the_transpose_of_all_gather():
    # sharding.md: the backward pass of AllGather_X is ReduceScatter_X; S-8 T = (V/W)(|X|-1)/|X| with the
    # bidirectional W; S-9/S-10 AllReduce = ReduceScatter + AllGather, twice the time
    for seed in range(10):
        p = make_problem(generators()["derive_reduce_scatter"], seed)
        a = p.answer("backward")
        assert a.choices[int(a.value)] == f"ReduceScatter over {p.params['axis']}"
        X, W = _s(p.params["axis"]), _s("W")
        V = p.params["bytes"] * _s(p.params["d1"]) * _s(p.params["d2"])
        assert sp.simplify(p.answer("t_reduce_scatter").value - V * (X - 1) / (X * W)) == 0
        assert sp.simplify(p.answer("t_all_reduce").value - 2 * V * (X - 1) / (X * W)) == 0


@pytest.mark.parametrize("scheme, fwd_bytes", [("dp", 0), ("fsdp", 1)], ids=["data-parallel", "fsdp"])
def test_backward_pass_moves_the_weight_twice(scheme, fwd_bytes):
    # training.md: DP all-reduces the weight gradient (2V per device, bandwidth-bound); FSDP gathers the weight
    # again and reduce-scatters its gradient (V + V), and gathers it once in the forward pass (V)
    gen = generators()["derive_backward_comms"]
    seen = 0
    for seed in range(30):
        p = make_problem(gen, seed)
        if p.params["scheme"] != scheme:
            continue
        seen += 1
        X, W = _s(p.params["axis"]), _s("W")
        V = p.params["bytes"] * _s(p.params["d"]) * _s(p.params["f"])
        assert sp.simplify(p.answer("t_bwd").value - 2 * V * (X - 1) / (X * W)) == 0
        assert sp.simplify(p.answer("t_fwd").value - fwd_bytes * V * (X - 1) / (X * W)) == 0
        assert sp.simplify(p.answer("t_bwd").accept[0].value - 2 * V / W) == 0
        a = p.answer("collectives")
        assert ("AllReduce" if scheme == "dp" else "ReduceScatter") in a.choices[int(a.value)]
    assert seen


# gpus.md worked answers (copied from the reference's part4-gpus records):
SM_ROWS = [
    # ERRATUM 4 / gpus-ex01: exactly 1024 FLOPs per Tensor Core per cycle needs a 1.83 GHz clock on an H100
    ("h100", 256, {"clock": (Fraction(183, 100) * 10**9, Fraction(1, 100)), "tensor_cores": (528, 0),
                   # gpus-ex04: 4 x 16384 x 4 bytes = 262,144 B per SM; gpus-quiz1-q5: 132 x 256 KiB = 33.0 MiB
                   "sm_registers": (262144, 0), "smem": (33 * 2**20, Fraction(1, 100)),
                   # 65,536 registers / 256 per thread = 256 threads = 8 warps (hand count)
                   "warps": (8, 0)}),
    # gpus-ex02: B200 2250 TFLOPs/s over 148 SMs x 4 Tensor Cores x 2048 FLOPs/cycle: about 1.86 GHz
    ("b200", 128, {"clock": (Fraction(186, 100) * 10**9, Fraction(1, 100)), "tensor_cores": (592, 0),
                   "warps": (16, 0)}),
    # A100: 310 TFLOPs/s over 108 x 4 x 512 FLOPs/cycle, about its 1.41 GHz boost clock (published spec)
    ("a100", 32, {"clock": (Fraction(141, 100) * 10**9, Fraction(1, 100)), "warps": (64, 0)}),
]


@pytest.mark.parametrize("chip, r_thread, expected", SM_ROWS, ids=["h100", "b200", "a100"])
def test_sm_internals_against_the_book(chip, r_thread, expected):
    gen = generators()["gpu_sm_internals"]
    engine, other = exact_routes(gen, {"chip": chip, "r_thread": r_thread}, {"warps": expected.get("warps", (0,))[0]})
    for name, (value, tol) in expected.items():
        assert engine[name] == other[name]
        assert abs(Fraction(int(sp.numer(engine[name])), int(sp.denom(engine[name]))) / value - 1) <= tol, name


# gpus-quiz3-q1: the 1024-GPU DGX H100 SuperPod: 128 nodes, 4 SUs of 8 leaf switches, 16 spine switches,
# 2 cables per leaf-spine pair, 400 GB/s per node (8 x 400 Gbps); gpus-ex20: 256 GPUs per SU (32 nodes)
SUPERPOD_ROWS = [
    ("h100", 1024, {"nodes": 128, "leaf": 32, "spine": 16, "cables": 2, "egress": 400 * 10**9,
                    "switches": 128 * 4 + 32 + 16}),  # plus 4 NVSwitches per H100 node (gpus.md, node level)
    ("h100", 256, {"nodes": 32, "leaf": 8, "spine": 4, "cables": 8}),
    # B200 nodes: 2 NVLink-5 switch chips each (catalog), same NDR fabric
    ("b200", 2048, {"nodes": 256, "leaf": 64, "spine": 32, "cables": 1, "switches": 256 * 2 + 64 + 32}),
    # issue 28: 640 GPUs = 80 nodes, 3 units of 8 leaves (24), 12 spines; 32 uplinks / 12 = 8/3 cables, 2 whole:
    # 24 of each leaf's 32 uplinks cabled, 3/4 of full bisection (the quiz's 1024 GPUs keep all of it)
    ("h100", 640, {"nodes": 80, "leaf": 24, "spine": 12, "cables": 2, "bisection": Fraction(3, 4)}),
    ("h100", 1024, {"cables": 2, "bisection": 1}),
]


@pytest.mark.parametrize("chip, gpus, expected", SUPERPOD_ROWS, ids=["h100-1024-quiz3", "h100-256-one-su",
                                                                       "b200-2048", "h100-640-three-quarters",
                                                                       "h100-1024-full-bisection"])
def test_superpod_counts_against_the_book(chip, gpus, expected):
    p = make_problem(generators()["gpu_superpod"], 0)
    params = dict(p.params, chip=chip, gpus=gpus)
    engine, other = exact_routes(generators()["gpu_superpod"], params, expected)
    for name, value in expected.items():
        assert engine[name] == other[name] == value, name


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_superpod_key_reads_as_it_counts(seed):
    """Issue 28: no full bisection promised when whole cables leave uplinks empty (the key says what share is
    kept), ceilings not nested (each count named once worked out), switches and cables counted as such, and no
    other chip's figure in a step's reason (a B200 node annotated with the GB200 NVL72's NICs)."""
    from scalemath.problems.render import render_problem

    problem = make_problem(generators()["gpu_superpod"], seed)
    text, key = (render_problem(problem, "md", part) for part in ("statement", "solution"))
    a = problem.by_name
    assert "with full bisection bandwidth" not in text
    assert ("keeps full bisection bandwidth" in key) == (a["bisection"].value == 1)
    assert a["bisection"].value == a["cables"].value * a["spine"].value / 32  # 64-port switches: 32 uplinks
    assert r"\lceil{\frac{\left\lceil" not in key and r"\lceil{\left\lceil" not in key
    assert [a[n].unit for n in ("leaf", "spine", "cables", "switches")] == ["switch", "switch", "cable", "switch"]
    for n in ("leaf", "spine", "switches"):
        assert rf"{a[n].value}\,\mathrm{{switches}}" in key, n
    assert rf"{a['cables'].value}\,\mathrm{{cable" in key and "GB200" not in key
