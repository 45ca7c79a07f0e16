"""Hand-picked parameters for each "gpu" generator: the engine route (solve) and the second route
(check) must both give the value worked out by hand in the row's comment. Rows that reproduce a
worked answer of gpus.md cite the record id (or the chapter section where it has none).

Generators are looked up through the registry and their own ``solve`` and ``check`` are called
directly, so no drawing is involved. At the end every generator is rendered for seeds 0..100 in
every format.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import pytest
import sympy as sp

from scalemath.problems import registry

G = 10**9
T = 10**12
QUIZ2_Q3 = 2 * 4096 * 65536     # bf16[4096, 65536] = 536,870,912 B ("512MB")
MLP_70B = 2 * 8192 * 28672      # bf16[8192, 28672] = 469,762,048 B


def node(chip, op, variant, n, rows, cols, **extra):
    domain = {"gb200": 72}.get(chip, 8)
    return {"chip": chip, "op": op, "variant": variant, "N": n, "domain": domain, "model": "m", "rows": rows,
            "cols": cols, "what": "weights"} | extra


def tree(chip, d_leaf, d_spine, leaves, uplinks, d, f):
    return {"chip": chip, "D_leaf": d_leaf, "D_spine": d_spine, "leaves": leaves, "uplinks": uplinks, "down": 0,
            "model": "m", "D": d, "F": f}


def a2a(chip, m, tokens, d, k=1, e=256):
    return {"chip": chip, "M": m, "model": "m", "E": e, "k": k, "tokens": tokens, "D": d}


def nodebw(chip, switches, ports):
    return {"chip": chip, "switches": switches, "ports": ports}


# (id, generator, params, {answer: exact expected value})
ROWS = [
    # -- gpu_node_collective --------------------------------------------------------------------------------
    # gpus.md Quiz 2 Q3 (sheet F15; no worked record): AllGather of bf16[4096, 65536] over an 8xH100 node:
    # 536,870,912 x 7 / (8 x 450e9) = 1.044 ms; the many-GPU limit is V / 450e9 = 1.193 ms (erratum 1's correction)
    ("node-ag-quiz2-q3", "gpu_node_collective", node("h100", "AllGather", "plain", 8, 4096, 65536),
     {"t": Fr(QUIZ2_Q3 * 7, 8 * 450 * G), "t_approx": Fr(QUIZ2_Q3, 450 * G)}),
    # gpus-ex14 on B200: ReduceScatter of bf16[8192, 28672] over 8 GPUs: V x 7 / (8 x 900e9) = 456.7 us
    ("node-rs-b200", "gpu_node_collective", node("b200", "ReduceScatter", "plain", 8, 8192, 28672),
     {"t": Fr(MLP_70B * 7, 8 * 900 * G)}),
    # gpus-ex14 (AllReduce = 2x) and gpus-quiz4-q2 (SHARP: exactly V / W): 8xH100, bf16[8192, 28672]:
    # ring 2 x 7/8 x V / 450e9 = 1.827 ms; SHARP V / 450e9 = 1.044 ms; predicted speed-up 2 x 7/8 = 1.75 (sheet F22)
    ("node-ar-sharp-h100", "gpu_node_collective", node("h100", "AllReduce", "sharp", 8, 8192, 28672),
     {"t": Fr(2 * MLP_70B * 7, 8 * 450 * G), "t_sharp": Fr(MLP_70B, 450 * G), "speedup": Fr(7, 4)}),
    # gpus-ex16: 8xH100 AllReduce at the measured 370 GB/s bus bandwidth instead of 450:
    # 2 x 7/8 x V / 370e9 = 2.222 ms against 1.827 ms on paper
    ("node-ar-measured-h100", "gpu_node_collective",
     node("h100", "AllReduce", "measured", 8, 8192, 28672, measured=370),
     {"t": Fr(2 * MLP_70B * 7, 8 * 450 * G), "t_measured": Fr(2 * MLP_70B * 7, 8 * 370 * G)}),
    # gpus.md 'Intra-node collectives' (sheet F19): AllToAll of bf16[65536, 8192] (2^30 B) over 8 H100s:
    # V x 7 / (64 x 450e9) = 261.0 us; ragged with k = 2 of 8 GPUs (F20): a quarter of that, 65.2 us
    ("node-a2a-ragged-h100", "gpu_node_collective", node("h100", "AllToAll", "ragged", 8, 65536, 8192, k=2),
     {"t": Fr(2**30 * 7, 64 * 450 * G), "t_ragged": Fr(2**30 * 7, 4 * 64 * 450 * G)}),
    # part of a GB200 NVL72 domain: AllGather over 36 of its 72 GPUs, bf16[16384, 53248] = 1,744,830,464 B:
    # V x 35 / (36 x 900e9) = 1.885 ms; limit V / 900e9 = 1.939 ms
    ("node-ag-gb200-36", "gpu_node_collective", node("gb200", "AllGather", "plain", 36, 16384, 53248),
     {"t": Fr(2 * 16384 * 53248 * 35, 36 * 900 * G), "t_approx": Fr(2 * 16384 * 53248, 900 * G)}),

    # -- gpu_fat_tree ---------------------------------------------------------------------------------------
    # gpus-ex18 and gpus-quiz3-q1: the 1024-GPU DGX H100 SuperPod, 32 nodes per unit under 8 leaf switches with
    # 32 uplinks each (W_su = 8 x 32 x 50e9 = 12.8e12), 4 units. Node 450e9 x 8/7 = 514 GB/s, leaf 400e9 x 32/31 =
    # 413 GB/s, spine 12.8e12 x 4/3 = 17.1 TB/s: the leaf level limits the tree to 413 GB/s.
    # AllGather of bf16[8192, 28672]: V x 31 / (32 x 400e9) = 1.138 ms
    ("tree-superpod", "gpu_fat_tree", tree("h100", 32, 4, 8, 32, 8192, 28672),
     {"w_su": 128 * 10**11, "bw_node": Fr(450 * G * 8, 7), "bw_leaf": Fr(400 * G * 32, 31),
      "bw_spine": Fr(128 * 10**11 * 4, 3), "bw_eff": Fr(400 * G * 32, 31), "t": Fr(MLP_70B * 31, 32 * 400 * G)}),
    # gpus-quiz4-q5: over 2 H100 nodes the cross-node ring (800 GB/s) is faster than NVLink inside the node
    # (514 GB/s): the node level is the bottleneck, T = 7V/(8 x 450e9). Here with 2 units of 2 nodes under
    # 2 leaves of 8 uplinks: W_su = 800 GB/s, spine 1.6 TB/s
    ("tree-two-nodes", "gpu_fat_tree", tree("h100", 2, 2, 2, 8, 8192, 28672),
     {"w_su": 800 * G, "bw_node": Fr(450 * G * 8, 7), "bw_leaf": 800 * G, "bw_spine": 1600 * G,
      "bw_eff": Fr(450 * G * 8, 7), "t": Fr(MLP_70B * 7, 8 * 450 * G)}),
    # GB200 NVL72: node egress 72 x 50e9 = 3.6 TB/s (gpus-ex13); 4 racks per unit under 8 leaves of 16 uplinks
    # (W_su = 6.4 TB/s), 4 units. Node 900e9 x 72/71 = 912.7 GB/s, leaf 3.6e12 x 4/3 = 4.8 TB/s, spine 8.53 TB/s:
    # NVLink inside the rack is the bottleneck. bf16[4608, 36864]: V x 71 / (72 x 900e9) = 372.2 us
    ("tree-gb200", "gpu_fat_tree", tree("gb200", 4, 4, 8, 16, 4608, 36864),
     {"w_su": 64 * 10**11, "bw_node": Fr(900 * G * 72, 71), "bw_leaf": Fr(36 * 10**11 * 4, 3),
      "bw_spine": Fr(64 * 10**11 * 4, 3), "bw_eff": Fr(900 * G * 72, 71),
      "t": Fr(2 * 4608 * 36864 * 71, 72 * 900 * G)}),

    # -- gpu_cross_node_alltoall ------------------------------------------------------------------------------
    # gpus-ex19 (corrected): V = bf16[65536, 8192] = 2^30 B. In one H100 node 7V/(64 x 450e9) = 261.0 us; over
    # 2 nodes V/(4 x 400e9) = 671.1 us; slowdown 64 x 450 / (7 x 4 x 400) = 18/7 = 2.57 (the text's "4x" mixes
    # the approximations)
    ("a2a-h100-2-nodes", "gpu_cross_node_alltoall", a2a("h100", 2, 65536, 8192),
     {"t_node": Fr(2**30 * 7, 64 * 450 * G), "t_cross": Fr(2**30, 4 * 400 * G), "ratio": Fr(18, 7)}),
    # DeepSeek-V3 (D = 7168, k = 8 experts per token) over 4 B200 nodes, 2^14 tokens: V = 2 x 8 x 16384 x 7168 =
    # 1,879,048,192 B; inside 7V/(64 x 900e9) = 228.4 us; across 3V/(16 x 400e9) = 880.8 us (8 NICs of 50 GB/s);
    # ratio 3 x 64 x 900 / (16 x 400 x 7) = 27/7 = 3.857
    ("a2a-deepseek-b200-4-nodes", "gpu_cross_node_alltoall", a2a("b200", 4, 16384, 7168, k=8),
     {"t_node": Fr(2 * 8 * 16384 * 7168 * 7, 64 * 900 * G), "t_cross": Fr(2 * 8 * 16384 * 7168 * 3, 16 * 400 * G),
      "ratio": Fr(27, 7)}),
    # GB200 NVL72 over 32 racks, V = bf16[131072, 16384] = 2^32 B: inside 71V/(72^2 x 900e9) = 65.4 us;
    # across 31V/(32^2 x 3.6e12) = 36.1 us; ratio 31 x 5184 x 900 / (1024 x 3600 x 71) = 5022/9088 = 0.5526
    ("a2a-gb200-32-racks", "gpu_cross_node_alltoall", a2a("gb200", 32, 131072, 16384),
     {"t_node": Fr(2**32 * 71, 72 * 72 * 900 * G), "t_cross": Fr(2**32 * 31, 32 * 32 * 3600 * G),
      "ratio": Fr(31 * 72 * 72 * 900, 32 * 32 * 3600 * 71)}),

    # -- gpu_node_bandwidth -----------------------------------------------------------------------------------
    # gpus-ex11, Quiz 2 Q1 (sheet F13) and gpus-quiz2-q2: 8xH100, 18 links of 25 GB/s per GPU = 450 GB/s;
    # 4 NVSwitches x 64 ports x 25e9 = 6.4 TB/s; GPUs 8 x 450e9 = 3.6 TB/s; peak min = 3.6 TB/s; bisection 3.6 TB/s
    ("nodebw-h100", "gpu_node_bandwidth", nodebw("h100", 4, 64),
     {"w_gpu": 450 * G, "gpu_cap": 36 * 10**11, "switch_cap": 64 * 10**11, "peak": 36 * 10**11,
      "bisection": 36 * 10**11}),
    # A100: 12 x 25e9 = 300 GB/s; 6 x 36 x 25e9 = 5.4 TB/s of switches; 2.4 TB/s of GPUs, peak and bisection
    ("nodebw-a100", "gpu_node_bandwidth", nodebw("a100", 6, 36),
     {"w_gpu": 300 * G, "gpu_cap": 24 * 10**11, "switch_cap": 54 * 10**11, "peak": 24 * 10**11,
      "bisection": 24 * 10**11}),
    # B200: 18 x 50e9 = 900 GB/s; 2 x 72 x 50e9 = 7.2 TB/s = 8 x 900e9: switches and GPUs match exactly
    ("nodebw-b200", "gpu_node_bandwidth", nodebw("b200", 2, 72),
     {"w_gpu": 900 * G, "gpu_cap": 72 * 10**11, "switch_cap": 72 * 10**11, "peak": 72 * 10**11,
      "bisection": 72 * 10**11}),
    # GB200 NVL72: 18 switch chips x 72 ports x 50e9 = 64.8 TB/s = 72 x 900e9
    ("nodebw-gb200", "gpu_node_bandwidth", nodebw("gb200", 18, 72),
     {"w_gpu": 900 * G, "gpu_cap": 648 * 10**11, "switch_cap": 648 * 10**11, "peak": 648 * 10**11,
      "bisection": 648 * 10**11}),
]


@pytest.mark.parametrize("name, params, expected", [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_hand_picked(name, params, expected):
    gen = registry.get_generator(name)
    engine, second = registry.exact_routes(gen, params, expected)
    assert sorted(engine) == sorted(second) == sorted(expected)
    for answer, value in expected.items():
        exact = Fr(value)
        assert engine[answer] == sp.Rational(exact.numerator, exact.denominator), (answer, engine[answer], value)
        assert Fr(second[answer]) == exact, (answer, second[answer], value)


def test_superpod_leaf_level_is_413_gb_per_s():
    # gpus-ex18: 514 / 413 / 17.1e12 to the book's three figures
    gen = registry.get_generator("gpu_fat_tree")
    a = {x.name: x.value for x in gen.solve(tree("h100", 32, 4, 8, 32, 8192, 28672))}
    assert [round(float(a[k]) / 1e9) for k in ("bw_node", "bw_leaf", "bw_eff")] == [514, 413, 413]
    assert float(a["bw_spine"]) == pytest.approx(17.1e12, rel=0.002)


def test_fat_tree_draws_respect_the_leaf_switch_ports():
    gen = registry.get_generator("gpu_fat_tree")
    for seed in range(80):
        p = registry.make_problem(gen, seed).params
        assert p["down"] + p["uplinks"] <= 64 and p["D_leaf"] >= 2 and p["D_spine"] >= 2


def test_node_collective_measured_variant_is_slower_and_sharp_faster():
    gen = registry.get_generator("gpu_node_collective")
    for seed in range(120):
        p = registry.make_problem(gen, seed)
        a = p.by_name
        if "t_measured" in a:
            assert a["t_measured"].value > a["t"].value
        if "t_sharp" in a:
            assert a["t_sharp"].value < a["t"].value


def test_expert_parallelism_is_drawn_only_for_mixtures_of_experts():
    """Issue 28: "Expert parallelism in LLaMA-2 13B" (a dense model) in 37 of 41 draws. Every draw is a catalog
    mixture of experts with its own width, at least one expert per device in both layouts, and the key reads
    the ratio the right way round (slower above 1, faster below)."""
    from scalemath.catalog.models import default_models
    from scalemath.problems.render import render_problem

    moe = {m.name: m for m in default_models() if m.is_moe}
    gen = registry.get_generator("gpu_cross_node_alltoall")
    seen, below = set(), 0
    for seed in range(60):
        prob = registry.make_problem(gen, seed)
        p, ratio = prob.params, prob.by_name["ratio"].value
        model = moe[p["model"]]
        n = {"gb200": 72}.get(p["chip"], 8)
        assert (p["D"], p["k"], p["E"]) == (model.D, model.k, model.E) and p["M"] * n <= model.E, p
        seen.add(p["model"])
        text, key = render_problem(prob, "md", "statement"), render_problem(prob, "md", "solution")
        assert "slowdown" not in text + key and model.name in text
        assert ("times slower" in key) == (ratio > 1) and ("below 1" in key) == (ratio < 1), (seed, ratio)
        below += bool(ratio < 1)
    assert len(seen) >= 5 and 0 < below < 60, (seen, below)


#: Choice answers of the rows above, by the books' reading of the same numbers (the comments on those rows)
CHOICES = [
    ("tree-superpod", "bottleneck", "the leaf level (the nodes' network cards)"),      # gpus-quiz3: 413 GB/s leaf
    ("tree-two-nodes", "bottleneck", "the node level (NVLink inside each node)"),      # gpus-quiz4-q5
    ("tree-gb200", "bottleneck", "the node level (NVLink inside each node)"),          # 912.7 GB/s < 4.8 TB/s
]


@pytest.mark.parametrize("row, answer, text", CHOICES, ids=[f"{r}-{a}" for r, a, _ in CHOICES])
def test_hand_picked_choices(row, answer, text, keyed_choice):
    keyed_choice(ROWS, row, answer, text)
