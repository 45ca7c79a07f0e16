"""Hand-picked parameters for each "tpu" generator: the engine route (solve) and the second
route (check) must both give the value worked out by hand in the row's comment.

Generators are looked up through the registry (which imports every generator module), and
their own ``solve`` and ``check`` are called directly, so no drawing is involved.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import pytest
import sympy as sp

from scalemath.problems import registry

MS, US = Fr(1, 10**3), Fr(1, 10**6)

# (id, generator, params, {answer: exact expected value})
ROWS = [
    # 200e9 bf16 params over 32 v4p chips: 200e9 * 2 / 32 = 12.5e9 B per chip; / 1.2e12 B/s = 1/96 s (10.42 ms)
    ("weights-v4p-bf16", "tpu_weights_load",
     {"chip": "tpu-v4p", "dtype": "bf16", "params": 200 * 10**9, "n_dev": 32},
     {"load_time": Fr(1, 96)}),
    # 70e9 int4 params over 8 v5e chips: 70e9 * 0.5 / 8 = 4.375e9 B; / 8.2e11 B/s = 7/1312 s (5.335 ms)
    ("weights-v5e-int4", "tpu_weights_load",
     {"chip": "tpu-v5e", "dtype": "int4", "params": 70 * 10**9, "n_dev": 8},
     {"load_time": Fr(7, 1312)}),

    # full v5p pod 16x20x28 = 8960 chips; / 4 per host = 2240; x 2 cores = 17920;
    # x 4.59e14 = 4.11264e18 FLOP/s; x 96e9 B = 8.6016e14 B
    ("pod-v5p-full", "tpu_pod_totals",
     {"chip": "tpu-v5p", "shape": "16x20x28", "pod": 1, "host_shape": "2x2x1"},
     {"chips": 8960, "hosts": 2240, "cores": 17920, "flops": 8960 * 459 * 10**12, "hbm": 860_160 * 10**9}),
    # v5e 4x8 slice = 32 chips; / 8 per host = 4; x 1 core = 32; x 1.97e14 = 6.304e15; x 16e9 = 5.12e11 B
    ("pod-v5e-4x8", "tpu_pod_totals",
     {"chip": "tpu-v5e", "shape": "4x8", "pod": 0, "host_shape": "4x2"},
     {"chips": 32, "hosts": 4, "cores": 32, "flops": 6_304 * 10**12, "hbm": 512 * 10**9}),

    # v6e over PCIe at 3.2e10: approx C/W = 9.2e14 / 3.2e10 = 28750. Exact, with F = 4D, D = 2^17:
    # B = C*D*F / (D*F*W - C*(D + F)) = C*F / (F*W - 5C) = 9.2e14 * 524288 / (524288 * 3.2e10 - 4.6e15)
    #   = 4.8234496e20 / 1.2177216e16 = 39610.45
    ("pcie-v6e-r4", "tpu_pcie_matmul", {"chip": "tpu-v6e", "ratio": 4, "D": 2**17},
     {"batch_approx": 28750, "batch_exact": Fr(7536640000, 190269)}),
    # v5e at 1.6e10: approx 1.97e14 / 1.6e10 = 12312.5. Exact with D = 2^15, F = 2^17:
    # 1.97e14 * 131072 / (131072 * 1.6e10 - 5 * 1.97e14) = 2.5821184e19 / 1.112152e15 = 23217.3
    ("pcie-v5e-r4", "tpu_pcie_matmul", {"chip": "tpu-v5e", "ratio": 4, "D": 2**15},
     {"batch_approx": Fr(24625, 2), "batch_exact": Fr(3227648000, 139019)}),

    # the book's Q4 on v5e, int8, D = 4096, F = 16384, every operand 1 byte:
    # B = C*D*F / (2*D*F*W - C*(D + F)) = 394e12 * 2^26 / (2^27 * 8.2e11 - 394e12 * 20480) = 259.25;
    # from VMEM at 22 x 8.2e11 = 1.804e13 B/s the same formula gives 10.96
    ("memory-v5e-int8-book", "tpu_memory_level",
     {"chip": "tpu-v5e", "dtype": "int8", "model": "book Q4", "D": 4096, "F": 16384, "ratio": 22},
     {"batch_hbm": Fr(80691200, 311247), "batch_vmem": Fr(80691200, 7364559)}),
    # v6e bf16, LLaMA-3 8B MLP (4096, 14336), 2 bytes per element:
    # B = C*D*F / (D*F*W - C*(D + F)) = 9.2e14 * 58720256 / (58720256 * 1.6e12 - 9.2e14 * 18432) = 701.6;
    # from VMEM at 16 x 1.6e12 = 2.56e13 B/s: 36.35
    ("memory-v6e-bf16", "tpu_memory_level",
     {"chip": "tpu-v6e", "dtype": "bf16", "model": "LLaMA-3 8B", "D": 4096, "F": 14336, "ratio": 16},
     {"batch_hbm": Fr(16486400, 23497), "batch_vmem": Fr(16486400, 453577)}),

    # the book's Q6 with exact bytes: int8[2^17, 2^17] = 2^34 B on a v5e 4x4 slice, batch 8:
    # PCIe 2^34 / (16 * 1.6e10) = 67.1 ms; ICI 2^34 * 15/16 / (2 * 4.5e10) = 179.0 ms;
    # HBM 2^34 / 8.2e11 = 20.95 ms; FLOPs 2 * 8 * 2^34 / 1.97e14 = 1.395 ms; lower = ICI; upper = sum = 268.4 ms
    ("staged-v5e-book", "tpu_staged_copy",
     {"chip": "tpu-v5e", "slice": "4x4", "dtype": "int8", "rows": 2**17, "cols": 2**17, "batch": 8},
     {"t_pcie": Fr(2**34, 16 * 16 * 10**9), "t_ici": Fr(15 * 2**30, 90 * 10**9),
      "t_hbm": Fr(2**34, 820 * 10**9), "t_flops": Fr(2**38, 197 * 10**12),
      "t_lower": Fr(15 * 2**30, 90 * 10**9),
      "t_upper": Fr(2**34, 256 * 10**9) + Fr(15 * 2**30, 90 * 10**9) + Fr(2**34, 820 * 10**9)
      + Fr(2**38, 197 * 10**12)}),
    # v6e 2x4 (8 chips), bf16[2^14, 2^16] = 2^31 B, batch 32: PCIe 2^31 / (8 * 3.2e10) = 8.389 ms;
    # ICI 2^31 * 7/8 / 1.8e11 = 10.44 ms; HBM 2^31 / 1.6e12 = 1.342 ms; FLOPs 2 * 32 * 2^30 / 9.2e14 = 74.7 us
    ("staged-v6e-2x4", "tpu_staged_copy",
     {"chip": "tpu-v6e", "slice": "2x4", "dtype": "bf16", "rows": 2**14, "cols": 2**16, "batch": 32},
     {"t_pcie": Fr(2**28, 32 * 10**9), "t_ici": Fr(7 * 2**28, 180 * 10**9), "t_hbm": Fr(2**31, 1600 * 10**9),
      "t_flops": Fr(2**36, 920 * 10**12), "t_lower": Fr(7 * 2**28, 180 * 10**9),
      "t_upper": Fr(2**28, 32 * 10**9) + Fr(7 * 2**28, 180 * 10**9) + Fr(2**31, 1600 * 10**9)
      + Fr(2**36, 920 * 10**12)}),

    # v5e 8x16: only the 16-long axis wraps; 7 + floor(16/2) = 15 hops; longest axis 8 hops
    ("torus-v5e-8x16", "tpu_torus_hops",
     {"chip": "tpu-v5e", "shape": "8x16", "rule": "size16", "wrapping": "Y", "longest": 16, "longest_wraps": 1},
     {"diameter": 15, "longest_axis": 8}),
    # v5p 4x4x8: whole cubes, all axes wrap: 2 + 2 + 4 = 8 hops; longest axis floor(8/2) = 4
    ("torus-v5p-4x4x8", "tpu_torus_hops",
     {"chip": "tpu-v5p", "shape": "4x4x8", "rule": "cube", "wrapping": "X, Y, Z", "longest": 8,
      "longest_wraps": 1},
     {"diameter": 8, "longest_axis": 4}),
    # v4p 2x2x4: smaller than a cube, nothing wraps: 1 + 1 + 3 = 5 hops; longest axis 4 - 1 = 3
    ("torus-v4p-2x2x4", "tpu_torus_hops",
     {"chip": "tpu-v4p", "shape": "2x2x4", "rule": "cube", "wrapping": "none", "longest": 4,
      "longest_wraps": 0},
     {"diameter": 5, "longest_axis": 3}),

    # the book's Q5: v5e (0,0) -> (3,3), bf16[8,128,8192] = 2^24 B over 2 links of 4.5e10:
    # latency 6 x 1 us = 6 us; bulk 16777216 / 9e10 = 186.4 us; total 192.4 us
    ("ici-v5e-book", "tpu_ici_transfer",
     {"chip": "tpu-v5e", "slice": "4x4", "src": "0, 0", "dst": "3, 3", "dims": "8x128x8192", "hops": 6, "links": 2},
     {"latency": 6 * US, "bulk": Fr(2**24, 90 * 10**9), "total": 6 * US + Fr(2**24, 90 * 10**9)}),
    # v5p 2x2x4, (0,0,0) -> (1,0,3): 4 hops over 2 links of 9e10; bf16[1,128,1024] = 2^18 B:
    # latency 4 us; bulk 262144 / 1.8e11 = 1.456 us; total 5.456 us
    ("ici-v5p-3d", "tpu_ici_transfer",
     {"chip": "tpu-v5p", "slice": "2x2x4", "src": "0, 0, 0", "dst": "1, 0, 3", "dims": "1x128x1024",
      "hops": 4, "links": 2},
     {"latency": 4 * US, "bulk": Fr(2**18, 180 * 10**9), "total": 4 * US + Fr(2**18, 180 * 10**9)}),

    # v5e: 2 * 128^2 = 32768 FLOPs per cycle; x 4 MXUs x 1.5e9 Hz = 1.96608e14 FLOP/s
    # and a 1024 x 8192 x 28672 matmul at 50 percent: 2 x 1024 x 8192 x 28672 / 9.8304e13 = 4.893 ms
    ("mxu-v5e", "tpu_mxu_peak", {"chip": "tpu-v5e", "cores": 1, "catalog_bf16": 197 * 10**12, "model": "m",
                                 "B": 1024, "D": 8192, "F": 28672, "mfu": 50},
     {"per_cycle": 32768, "peak": 196_608 * 10**9, "t_matmul": Fr(2 * 1024 * 8192 * 28672, 98_304 * 10**9)}),
    # v5p: 32768 x (2 cores x 4 MXUs) x 1.75e9 Hz = 4.58752e14 FLOP/s
    # and 64 x 4096 x 14336 at 70 percent: 2 x 64 x 4096 x 14336 / 3.211264e14 = 23.41 us
    ("mxu-v5p", "tpu_mxu_peak", {"chip": "tpu-v5p", "cores": 2, "catalog_bf16": 459 * 10**12, "model": "m",
                                 "B": 64, "D": 4096, "F": 14336, "mfu": 70},
     {"per_cycle": 32768, "peak": 458_752 * 10**9, "t_matmul": Fr(2 * 64 * 4096 * 14336, 3_211_264 * 10**8)}),

    # sharding.md Pop Quiz 2(1): a v5e axis of 4 has no wraparound (only axes of 16 do); the AllGather of a
    # 2048 x 8192 bf16 array (33,554,432 B) along it: the end chip receives 3 shards of 8,388,608 B through one
    # link at 4.5e10 B/s = 559.2 us (the book: 560 us). Y = 8 is open too: 7/8 x V through one link = 652.4 us.
    # X as a ring: two opposite rings carry 3/4 of V/2 per link direction = 279.6 us.
    ("wrap-v5e-4x8-popquiz2", "tpu_wraparound_cost",
     {"chip": "tpu-v5e", "rule": "size16", "slice": "4x8", "dims": 2, "model": "m", "D": 2048, "F": 8192,
      "V": 33554432, "x_wraps": 0},
     {"t_X": Fr(3 * 8388608, 45 * 10**9), "t_Y": Fr(7 * 33554432, 8 * 45 * 10**9),
      "t_X_other": Fr(3 * 33554432, 8 * 45 * 10**9)}),
]


@pytest.mark.parametrize("generator, params, expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_solve_and_check(generator, params, expected):
    gen = registry.get_generator(generator)
    solved, checked = registry.exact_routes(gen, params, expected)
    assert set(solved) == set(expected) == set(checked)
    for name, value in expected.items():
        exact = Fr(value)
        assert solved[name] == sp.Rational(exact.numerator, exact.denominator), name
        assert Fr(checked[name]) == exact, name


def test_every_tpu_generator_has_a_row():
    names = {name for name, gen in registry.generators().items() if gen.topic == "tpu" and name.startswith("tpu_")}
    core = {"tpu_mxu_padding", "tpu_vpu_reduce"}  # rows in tests/test_gen_tpu_core.py
    assert names == {r[1] for r in ROWS} | core


#: Choice answers of the rows above: which axes wrap, by the slice rules of tpus.md (the rows' comments)
CHOICES = [
    ("torus-v5e-8x16", "wrapping", "Y only"),        # v5e: only an axis spanning the pod's 16 chips wraps
    ("torus-v5p-4x4x8", "wrapping", "X, Y and Z"),   # v5p: whole 4x4x4 cubes wrap on every axis
    ("torus-v4p-2x2x4", "wrapping", "none"),         # v4p: less than a cube wraps on none
    ("wrap-v5e-4x8-popquiz2", "wrap_X", "open (a line with two ends)"),   # v5e: 4 chips, no wraparound
    ("wrap-v5e-4x8-popquiz2", "wrap_Y", "open (a line with two ends)"),   # 8 chips: neither
]


@pytest.mark.parametrize("row, answer, text", CHOICES, ids=[f"{r}-{a}" for r, a, _ in CHOICES])
def test_hand_picked_choices(row, answer, text, keyed_choice):
    keyed_choice(ROWS, row, answer, text)
