"""The design generators (choose a layout, a mesh, a serving topology; say which axes wrap): each one's key and
numbers against a case worked by hand from the book's figures, written out in the comments; and properties of
the keys over many seeds (the chosen option is one that qualifies, and no qualifying option beats it)."""

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.problems.registry import exact_routes, generators, make_problem

DESIGN = ("sharding_choose_layout", "training_choose_mesh", "inference_choose_topology", "tpu_wraparound_cost")


def _near(value, expected, rel=Fraction(1, 1000)):
    return abs(Fraction(str(sp.N(value, 20))) - Fraction(expected)) <= rel * abs(Fraction(expected))


# -- tpu_wraparound_cost ----------------------------------------------------------------------------------

def _wrap_params(chip, rule, shape, D, F):
    return {"chip": chip, "rule": rule, "slice": "x".join(map(str, shape)), "dims": len(shape), "model": "hand",
            "D": D, "F": F, "V": 2 * D * F, "x_wraps": 0}


WRAP_CASES = [
    # sharding.md Pop Quiz 2(1): AllGather_Y([E_Y, F]) on a v5e mesh {X: 8, Y: 4}, E = 2048, F = 8192, bf16.
    # A v5e axis of 4 has no wraparound (only axes of 16 do): the end chip receives the 3 missing shards of
    # 8,388,608 bytes through one link at 4.5e10 B/s: 3 x 8388608 / 4.5e10 = 559.2 us (the book: 560 us).
    # Here the open axis of 4 is X of a 4x8 slice, the weight W[D, F] with D = 2048, F = 8192.
    # With a wraparound link the two opposite rings carry 3/4 of V/2 each way: 33554432 x 3/8 / 4.5e10
    # = 279.6 us (the book's "naive" 377 us is V/W_bidi, without the (N - 1)/N factor).
    pytest.param(("tpu-v5e", "size16", (4, 8), 2048, 8192), ("open", "open"),
                 {"t_X": Fraction(3 * 8388608, 45 * 10**9), "t_X_other": Fraction(3 * 33554432, 8 * 45 * 10**9)},
                 id="v5e-popquiz2-open-axis-of-4"),
    # A full v5e pod side: 16 chips wrap (tpus.md). 8x16: X = 8 open, Y = 16 a ring. Y's AllGather of
    # V = 2 x 4096 x 14336 = 117,440,512 bytes: 15/16 of V/2 over each link direction at 4.5e10 B/s
    # = 117440512 x 15 / 32 / 4.5e10 = 1.2233 ms; X (open, 8): 7/8 V through one link = 2.2836 ms.
    pytest.param(("tpu-v5e", "size16", (8, 16), 4096, 14336), ("open", "ring"),
                 {"t_Y": Fraction(117440512 * 15, 32 * 45 * 10**9), "t_X": Fraction(117440512 * 7, 8 * 45 * 10**9)},
                 id="v5e-8x16-ring-on-16"),
    # sharding.md Q2.1: a full 4x4x4 v4p cube wraps on every axis; a 4x8x8 slice is two whole cubes, so it
    # wraps too (tpus.md: slices of whole cubes get wraparound). X = 4: 3/4 of V/2 per link direction.
    pytest.param(("tpu-v4p", "cube", (4, 8, 8), 1024, 4096), ("ring", "ring", "ring"),
                 {"t_X": Fraction(2 * 1024 * 4096 * 3, 8 * 45 * 10**9)}, id="v4p-whole-cubes-wrap"),
    # tpus.md: a v5p slice smaller than whole cubes (8x4x2: Z = 2 is not a multiple of 4) has no wraparound.
    # X = 8 open: 7/8 of V through the end chip's one link at 9e10 B/s.
    pytest.param(("tpu-v5p", "cube", (8, 4, 2), 1024, 4096), ("open", "open", "open"),
                 {"t_X": Fraction(2 * 1024 * 4096 * 7, 8 * 9 * 10**10)}, id="v5p-part-cube-open"),
]


@pytest.mark.parametrize("setup, wraps, times", WRAP_CASES)
def test_wraparound_against_hand_counts(setup, wraps, times):
    gen = generators()["tpu_wraparound_cost"]
    p = _wrap_params(*setup)
    answers = {a.name: a for a in gen.solve(p)}
    for axis, expected in zip("XYZ", wraps):
        a = answers[f"wrap_{axis}"]
        assert a.choices[int(a.value)].startswith("wraps" if expected == "ring" else "open"), axis
    engine, other = exact_routes(gen, p)
    for name, expected in times.items():
        assert engine[name] == expected == other[name], name


# -- sharding_choose_layout --------------------------------------------------------------------------------

LAYOUTS = ("In[B_XY, D] @ W[D, F] -> Out[B_XY, F]", "In[B_X, D] @ W[D, F_Y] -> Out[B_X, F_Y]",
           "In[B_XY, D] @ W[D_XY, F] -> Out[B_XY, F]", "In[B_X, D_Y] @ W[D_Y, F] -> Out[B_X, F]")


def _layout_params(limit):
    p = {"chip": "tpu-v5e", "slice": "16x16", "X": 16, "Y": 16, "model": "LLaMA-2 7B", "D": 4096, "F": 11008,
         "B": 4096, "layouts": "; ".join(LAYOUTS), "limit": limit}
    return p | {f"layout_{x}": s.replace(" @ ", " · ") for x, s in zip("abcd", LAYOUTS)}


# A v5e 16x16 (every axis a 16-chip ring), LLaMA-2 7B's up-projection, B = 4096, D = 4096, F = 11008, bf16.
# Bytes per chip (2 bytes per element):
#   (a) In[B_XY, D] W[D, F] Out[B_XY, F]: 2(4096·4096/256 + 4096·11008 + 4096·11008/256) = 90,660,864
#   (b) In[B_X, D] W[D, F_Y] Out[B_X, F_Y]: 2(4096·4096/16 + 4096·11008/16 + 4096·11008/256) = 8,085,504
#   (c) In[B_XY, D] W[D_XY, F] Out[B_XY, F]: 2(65,536 + 176,128 + 176,128) = 835,584
#   (d) In[B_X, D_Y] W[D_Y, F] Out[B_X, F]: 2(65,536 + 2,818,048 + 2,818,048) = 11,403,264
# Every layout does 2·4096·4096·11008/256 = 1,442,840,576 FLOPs per chip: T_math = that / 1.97e14 = 7.324 us.
#   (a), (b): no communication, 7.324 us.
#   (c): AllGather W over both axes, V = 2·4096·11008 = 90,177,536 bytes, (255/256)V over 2 axes x 9e10 B/s
#        = 499.0 us.
#   (d): AllReduce over Y (16) of the local [B/16, F] partial sums, V = 5,636,096 bytes:
#        2 x (15/16)V / 9e10 = 117.4 us.
# Limit 10 MB: (a) and (d) do not fit; (b) fits and ties (a) for the fastest: key (b), 7.324 us, 8,085,504 B.
# Limit 1 MB: only (c) fits: key (c), 499.0 us, 835,584 B.
LAYOUT_CASES = [
    pytest.param(10_000_000, 1, Fraction(1442840576, 197 * 10**12), 8085504, id="10MB-keeps-tp-over-Y"),
    pytest.param(1_000_000, 2, Fraction(90177536 * 255, 256 * 18 * 10**10), 835584, id="1MB-forces-fsdp"),
    # with room for everything, the tie between (a) and (b) goes to the smaller: (b)
    pytest.param(100_000_000, 1, Fraction(1442840576, 197 * 10**12), 8085504, id="no-limit-tie-to-fewer-bytes"),
]


@pytest.mark.parametrize("limit, key, t_best, mem_best", LAYOUT_CASES)
def test_layout_choice_against_hand_count(limit, key, t_best, mem_best):
    gen = generators()["sharding_choose_layout"]
    p = _layout_params(limit)
    answers = {a.name: a for a in gen.solve(p)}
    assert int(answers["layout"].value) == key
    assert gen.check(p)["layout"] == key
    engine, other = exact_routes(gen, p)
    assert engine["t_best"] == t_best == other["t_best"]
    assert engine["mem_best"] == mem_best == other["mem_best"]


# -- inference_choose_topology -----------------------------------------------------------------------------

def _serve_params(options, target):
    from scalemath.problems.generators.inference_common import model_fields

    p = dict(model_fields("llama2-13b")) | {"chip": "tpu-v5e", "dtype": "bf16", "weight_dtype": "bf16",
                                           "kv_dtype": "bf16", "S": 2048, "hbm": 16 * 10**9, "link": 45 * 10**9,
                                           "t_hop": "1/1000000", "target": str(target)}
    for x, (shape, batch) in zip("abcd", options):
        p |= {f"slice_{x}": shape, f"n_{x}": _chips(shape), f"B_{x}": batch}
    return p


def _chips(shape):
    a, b = (int(n) for n in shape.split("x"))
    return a * b


# LLaMA-2 13B on TPU v5e (16 GB HBM, 8.2e11 B/s, 1.97e14 FLOP/s, 4.5e10 B/s per ICI link, 1 us per hop),
# bf16 weights and cache, S = 2048. P = 40(4·5120² + 3·5120·13824) + 2·32000·5120 + 2·5120·40 (norms)
# = 13,015,859,200: weights 26.03 GB. One token's cache: 2·40 layers·40 heads·128·2 bytes = 819,200 B,
# a sequence 2048 x 819,200 = 1.678 GB. Largest batch: floor((n·16e9 - 26.03e9)/1.678e9):
# 2x2 -> 22, 2x4 -> 60, 4x4 -> 137. Step = KV load + max(weights load, compute) + 4·40 collectives,
# each max(hops·1 us, B·5120·2 / (2 axes · 9e10)), hops = 1+2 on 2x4, 2+2 on 4x4, 1+1 on 2x2:
#   (a) 2x4, B=32:  8.184 ms + 3.968 ms + 160·3 us    = 12.63 ms, 32/(8·12.63 ms)    = 316.7 tok/s/chip
#   (b) 4x4, B=128: 16.37 ms + 1.984 ms + 160·7.28 us = 19.52 ms, 128/(16·19.52 ms) = 409.9 tok/s/chip
#   (c) 4x4, B=32:  4.092 ms + 1.984 ms + 160·4 us    = 6.716 ms, 32/(16·6.716 ms)  = 297.8 tok/s/chip
#   (d) 2x2, B=16:  8.184 ms + 7.936 ms + 160·2 us    = 16.44 ms, 16/(4·16.44 ms)   = 243.3 tok/s/chip
# Target 15 ms rules out (b) and (d): key (a). Target 20 ms: (b). Target 7 ms: only (c).
SERVE_OPTIONS = (("2x4", 32), ("4x4", 128), ("4x4", 32), ("2x2", 16))
SERVE_CASES = [
    pytest.param(Fraction(15, 1000), 0, Fraction(1263, 100000), Fraction(3167, 10), 60, id="15ms-2x4"),
    pytest.param(Fraction(20, 1000), 1, Fraction(1952, 100000), Fraction(4099, 10), 137, id="20ms-4x4-large-batch"),
    pytest.param(Fraction(7, 1000), 2, Fraction(6716, 1000000), Fraction(2978, 10), 137, id="7ms-4x4-small-batch"),
]


@pytest.mark.parametrize("target, key, t_step, throughput, held", SERVE_CASES)
def test_serving_choice_against_hand_count(target, key, t_step, throughput, held):
    gen = generators()["inference_choose_topology"]
    p = _serve_params(SERVE_OPTIONS, target)
    answers = {a.name: a for a in gen.solve(p)}
    assert int(answers["option"].value) == key == gen.check(p)["option"]
    assert _near(answers["t_step"].value, t_step, Fraction(1, 500))   # the comment's figures: 4 digits
    assert _near(answers["throughput"].value, throughput, Fraction(1, 500))
    assert answers["max_batch"].kind == "whole" and answers["max_batch"].value == held
    engine, other = exact_routes(gen, p, {"max_batch": held})
    assert engine == {k: sp.Rational(v) for k, v in other.items()}


def test_serving_batch_that_does_not_fit_is_never_chosen():
    # 2x2 holds 22 sequences beside the weights (above): B = 64 there does not fit, however fast it would be
    gen = generators()["inference_choose_topology"]
    p = _serve_params((("2x2", 64), ("2x4", 32), ("4x4", 32), ("4x4", 128)), Fraction(1))
    answers = {a.name: a for a in gen.solve(p)}
    assert int(answers["option"].value) == 3     # 4x4 at B = 128, 409.9 tok/s/chip, the best of those that fit


# -- training_choose_mesh -----------------------------------------------------------------------------------

def _mesh_params(meshes):
    p = {"chip": "tpu-v5e", "model": "llama2-13b", "model_name": "LLaMA-2 13B", "n": 256, "seq_len": 4096,
         "seqs": 64, "B": 262144, "L": 40, "D": 5120, "hbm": 16 * 10**9, "w_ici": 9 * 10**10, "mfu": "1/2"}
    for x, m in zip("abcd", meshes):
        p[f"mesh_{x}"] = ",".join(map(str, m))
        p[f"name_{x}"] = str(m)
    return p


# LLaMA-2 13B (P = 13,015,859,200, L = 40, D = 5120) on 256 TPU v5e (16 GB, 1.97e14 FLOP/s, 9e10 B/s per torus
# axis, 16x16), B = 64 x 4096 = 262,144 tokens, MFU 1/2, block remat (8P FLOPs per token), 12 bytes of state
# per parameter. T_math = 8·P·B/(256·1.97e14) = 0.5412 s for every mesh.
#   (a) FSDP 256: state 12P/256 = 610,118,400 B + saved inputs 2·5120·1024·(40 + 20) = 629,145,600 B: fits.
#       FSDP over two torus axes (1.8e11 B/s): 8P·(255/256)/1.8e11 = 0.5762 s > T_math: step 1.1524 s.
#   (b) FSDP 64 x TP 4: state 12P/256 + 2·5120·(4096/4)·60 = 1,239,264,000 B: fits. TP on one axis:
#       24·5120·4096·40·(3/4)/9e10 = 0.1678 s; FSDP on the one axis left: 8(P/4)(63/64)/9e10 = 0.2847 s;
#       both under T_math: step 2 x 0.5412 = 1.0825 s.
#   (c) DP 256: 12P = 156 GB per chip: does not fit.  (d) DP 64 x TP 4: 12P/4 = 39 GB: does not fit.
# Key (b): 1,239,264,000 B and 8·P·B/(256·1.97e14)/(1/2) s.
def test_mesh_choice_against_hand_count():
    gen = generators()["training_choose_mesh"]
    p = _mesh_params([(1, 256, 1, 1, 1), (1, 64, 4, 1, 1), (256, 1, 1, 1, 1), (64, 1, 4, 1, 1)])
    answers = {a.name: a for a in gen.solve(p)}
    assert int(answers["mesh"].value) == 1 == gen.check(p)["mesh"]
    P = 13015859200
    assert answers["memory"].value == 12 * P // 256 + 2 * 5120 * 1024 * 60 == 1239264000
    assert answers["t_step"].value == sp.Rational(8 * P * 262144, 256 * 197 * 10**12) * 2
    engine, other = exact_routes(gen, p)
    assert engine == {k: sp.Rational(v) for k, v in other.items()}


def test_mesh_choice_prefers_a_fitting_mesh_to_a_faster_one_that_does_not_fit():
    # without (b), (a) is the only mesh that fits: 1.1524 s, although DP 256 would compute as fast as (b)
    gen = generators()["training_choose_mesh"]
    p = _mesh_params([(256, 1, 1, 1, 1), (1, 256, 1, 1, 1), (64, 1, 4, 1, 1), (16, 1, 16, 1, 1)])
    answers = {a.name: a for a in gen.solve(p)}
    assert int(answers["mesh"].value) == 1
    assert answers["t_step"].value == 8 * 13015859200 * sp.Rational(255, 256) / (18 * 10**10) * 2


# -- properties over seeds ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", DESIGN)
def test_choices_are_graded_as_choices_with_distinct_options(name):
    for seed in range(6):
        p = make_problem(generators()[name], seed)
        choices = [a for a in p.answers if a.kind == "choice"]
        assert choices
        for a in choices:
            assert a.rel_tol == 0 and len(set(a.choices)) == len(a.choices) >= 2


@pytest.mark.parametrize("name, answer", [("sharding_choose_layout", "layout"), ("training_choose_mesh", "mesh"),
                                          ("inference_choose_topology", "option")])
def test_keys_vary_over_seeds(name, answer):
    # the right option is not always the same letter
    keys = {int(make_problem(generators()[name], seed).answer(answer).value) for seed in range(12)}
    assert len(keys) >= 2
