"""The book's worked training answers (training.md, applied-training.md and the GPU chapter's
'Rooflines for LLM Scaling on GPUs'), through the quantity registry.

Each row names a registered quantity, the context and the values the question fixes, and
compares the exact result with the book's printed figure at the tolerance its rounding allows
(0 means exact). The figures are copied here; the comment on each row cites the worked record's
id, or the chapter section where the figure has no record of its own. Where a record carries a
corrected value (an erratum), the corrected value is tested and the row says so.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import sympy as sp

from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic.symbols import sym

V5P, H100, B200, GB200 = (Context(chip=c) for c in ("tpu-v5p", "h100", "b200", "gb200"))
NONE = Context()
DAY, YEAR = 86400, 365 * 86400
R = sp.Rational

LLAMA3_70B = {"P": 70 * 10**9, "tokens": 15 * 10**12}       # the book rounds the parameters to 70e9
ADAM = {"b_opt": 8}                                           # two fp32 moments per parameter
BATCH_4M = 4 * 1024 * 1024                                    # 1024 sequences of 4096 tokens
V3_ACTIVATIONS = 2 * 8192 * 4 * 10**6 * 2 * 80               # 2 bytes x D x B x 2 checkpoints x L = 10.5 TB

# (id, quantity, context, given, expected, rel)
ROWS = [
    # training-ex4: FSDP (and DP) is compute-bound above C/W_ici = 4.59e14 / 1.8e11 = 2550 tokens per chip
    ("training-ex4-2550", "parallel.fsdp.min_batch_per_device", V5P, {"M_X": 1}, 2550, 0),
    ("training-ex4-dp-2550", "parallel.dp.min_batch_per_device", V5P, {"M_X": 1}, 2550, 0),
    # training-ex3: over all 3 axes, 850 per chip and 850 x 8960 = 7.6M tokens per pod (exact 7,616,000)
    ("training-ex3-850", "parallel.dp.min_batch_per_device", V5P, {"M_X": 3}, 850, 0),
    ("training-ex3-7.6M-per-pod", "parallel.dp.min_batch", V5P, {"M_X": 3, "X": 8960}, 7.6e6, 0.01),
    # training-ex1: largest model pure DP fits on a v5p: 96e9 / 10 bytes = 9.6e9 (the book says 9e9)
    ("training-ex1-9e9-params", "parallel.dp.max_params", V5P, ADAM, 9e9, 0.1),
    # training-ex6 (P5-09): a 16M batch over 3-axis FSDP uses 16e6 / 850 = 18,823 chips
    ("training-ex6-18823-chips", "parallel.fsdp.max_devices", V5P, {"B": 16 * 10**6, "M_X": 3}, 18823, 0.001),
    # P5-09: DeepSeek-V2's 40M batch needs 40e6 / 850 = 47,000 chips (about 5 pods)
    ("p5-09-deepseek-47000-chips", "parallel.fsdp.max_devices", V5P, {"B": 40 * 10**6, "M_X": 3}, 47000, 0.01),
    # training-ex8: TP for LLaMA-3-70B (F about 30k): F/2550 = 11.8, so 8-way is fine and 16-way comms-bound
    ("training-ex8-max-tp-11.8", "parallel.tp.max_degree", V5P, {"F": 30000, "M_Y": 1}, 11.76, 0.001),
    # training-ex8: 8-way TP needs F >= 8 x 2550 = 20.4k
    ("training-ex8-20.4k", "parallel.tp.min_f", V5P, {"Y": 8, "M_Y": 1}, 20400, 0),
    # training-ex9: Gemma-7B (F about 50k) becomes comms-bound at about 19-way TP (exact 19.6)
    ("training-ex9-19-way", "parallel.tp.max_degree", V5P, {"F": 50000, "M_Y": 1}, 19, 0.05),
    # training-ex10, corrected: X_opt = sqrt(48000/32768 x 2 x 64) = 13.69; the book's 13.9 needs F = 32,000
    ("training-ex10-x-opt-13.69", "parallel.fsdp_tp.x_opt", NONE,
     {"B": 48000, "F": 32768, "n_dev": 64, "M_X": 2, "M_Y": 1}, 13.69, 0.001),
    ("training-ex10-x-opt-book-f", "parallel.fsdp_tp.x_opt", NONE,
     {"B": 48000, "F": 32000, "n_dev": 64, "M_X": 2, "M_Y": 1}, 13.9, 0.005),
    # training-ex12: on 4096 chips with F = 32,768 every scheme is comms-bound below about 4e5 tokens
    ("training-ex12-4e5", "parallel.fsdp_tp.min_batch", V5P, {"n_dev": 4096, "F": 32768, "M_X": 2, "M_Y": 1},
     4e5, 0.05),
    # P5-15: mixed FSDP + TP, overlapped communication: 2550^2 / (2F) tokens per chip
    ("p5-15-99", "parallel.fsdp_tp.min_batch_per_chip", V5P, {"F": 32768, "M_X": 2, "M_Y": 1}, 99, 0.01),
    ("p5-15-113", "parallel.fsdp_tp.min_batch_per_chip", V5P, {"F": 28672, "M_X": 2, "M_Y": 1}, 113, 0.01),
    ("p5-15-108", "parallel.fsdp_tp.min_batch_per_chip", V5P, {"F": 30000, "M_X": 2, "M_Y": 1}, 108, 0.01),
    ("p5-15-235", "parallel.fsdp_tp.min_batch_per_chip", V5P, {"F": 13824, "M_X": 2, "M_Y": 1}, 235, 0.01),
    # P5-16: the older text summed the two communications: 2 x 2550^2 / F per chip
    ("p5-16-sum-397", "parallel.fsdp_tp.min_batch_per_chip_sum_policy", V5P, {"F": 32768, "M_X": 2, "M_Y": 1},
     397, 0.01),
    ("p5-16-sum-453", "parallel.fsdp_tp.min_batch_per_chip_sum_policy", V5P, {"F": 28672, "M_X": 2, "M_Y": 1},
     453, 0.01),
    ("p5-16-sum-940", "parallel.fsdp_tp.min_batch_per_chip_sum_policy", V5P, {"F": 13824, "M_X": 2, "M_Y": 1},
     940, 0.01),
    # training-ex15: LLaMA-3-70B with a 2M batch: at most 2e6/850 = 2,400 FSDP chips, 108 per chip mixed,
    # so about 18k chips; TP up to F/2550 = 11 per axis
    ("training-ex15-fsdp-2400", "parallel.fsdp.max_devices", V5P, {"B": 2 * 10**6, "M_X": 3}, 2400, 0.03),
    ("training-ex15-mixed-108", "parallel.fsdp_tp.min_batch_per_chip", V5P, {"F": 30000, "M_X": 2, "M_Y": 1},
     108, 0.01),
    ("training-ex15-mixed-18k", "parallel.fsdp_tp.max_chips", V5P,
     {"B": 2 * 10**6, "F": 30000, "M_X": 2, "M_Y": 1}, 18000, 0.03),
    ("training-ex15-tp-11", "parallel.tp.max_degree", V5P, {"F": 30000, "M_Y": 1}, 11, 0.07),
    # training-ex16: a 1M batch per pod is about 111 tokens per chip
    ("training-ex16-111", "parallel.batch_per_device", NONE, {"B": 10**6, "n_dev": 8960}, 111, 0.01),
    # training-ex13 / P5-20: across pods over DCN each slice needs C/W_dcn = 4.59e14 / 6.25e9 = 73,440 tokens
    ("p5-20-dcn-73440", "parallel.dcn.min_batch_per_slice", V5P, {}, 73440, 0),
    # P5-20 version note: an older text used C = 4.46e14 and got 71,360
    ("p5-20-dcn-older-71360", "parallel.dcn.min_batch_per_slice", V5P, {"C": 446 * 10**12}, 71360, 0),
    # training-v1-ex1, corrected: 8000 x 4.5e14 over 2000 hosts x 2.5e10 is 72,000 per pod (the text printed 76,000)
    ("training-v1-ex1-corrected-72000", "parallel.dcn.min_batch_per_slice", V5P, {"C": 450 * 10**12}, 72000, 0),
    # training-q3b: pure FSDP over 4096 chips needs 850 x 4096 = 3,481,600 tokens, more than the 3M batch
    ("training-q3b-3.48M", "parallel.fsdp.min_batch", V5P, {"X": 4096, "M_X": 3}, 3481600, 0),
    # training-q3b, corrected: the question asks per device: (130 GB + 7.86 TB) / 4096 = 1.95 GB
    ("training-q3b-corrected-1.95GB", "parallel.memory_per_device.fsdp", NONE,
     {"P": 13 * 10**9, "b_w": 2, **ADAM, "A_act": 7864320000000, "X": 4096}, 1.95e9, 0.01),
    # training.md 'Some Problems to Work' Q3: step time 6 x 3e6 x 13e9 / (4096 x 4.6e14 x 0.4) = 0.31 s
    ("p5-24-step-0.31s", "parallel.step_time", NONE,
     {"P": 13 * 10**9, "B": 3 * 10**6, "n_dev": 4096, "C": 46 * 10**13, "MFU": "0.4"}, 0.31, 0.01),
    # applied-training-pq2: 6 x 70e9 / 4.59e14 = about 1 ms per token on one chip (exact 0.92 ms)
    ("applied-pq2-1ms-per-token", "parallel.training_time", V5P,
     {"P": 70 * 10**9, "tokens": 1, "n_dev": 1, "MFU": 1}, 1e-3, 0.1),
    # P6-03: one chip would need about 435 years for 15T tokens
    ("p6-03-435-years", "parallel.training_time", V5P, {**LLAMA3_70B, "n_dev": 1, "MFU": 1}, 435 * YEAR, 0.005),
    # applied-training-pq4: a full pod (8960 chips) at 40% MFU: 3.8e6 s, 44 days
    ("applied-pq4-3.8e6s", "parallel.training_time", V5P, {**LLAMA3_70B, "n_dev": 8960, "MFU": "0.4"}, 3.8e6, 0.02),
    ("applied-pq4-44-days", "parallel.training_time", V5P, {**LLAMA3_70B, "n_dev": 8960, "MFU": "0.4"},
     44 * DAY, 0.01),
    # applied-training-pq4 (engine_derived): a 4M-token step on the pod takes about 1.07 s
    ("applied-pq4-step-1.07s", "parallel.step_time", V5P,
     {"P": 70 * 10**9, "B": 4190000, "n_dev": 8960, "MFU": "0.4"}, 1.07, 0.01),
    # training-ex6: 16M batch on 18,823 chips at 50% MFU: about 17 days (16.9)
    ("training-ex6-17-days", "parallel.training_time", V5P, {**LLAMA3_70B, "n_dev": 18823, "MFU": "0.5"},
     17 * DAY, 0.01),
    # P6-05 (newest text, 2 checkpoints per layer): 140 GB + 560 GB + 10.5 TB = 11.2 TB over 96 GB: 117 chips
    ("p6-05-11.2TB-over-hbm", "parallel.min_chips_memory", V5P,
     {"P": 70 * 10**9, **ADAM, "A_act": V3_ACTIVATIONS}, 117, 0),  # whole chips (exact value 116.5 is a step)
    # P6-05: on 117 chips at 40% MFU the run takes 44 x 8960 / 117 = 3369 days (the book scales the rounded 44)
    ("p6-05-3369-days", "parallel.training_time", V5P, {**LLAMA3_70B, "n_dev": 117, "MFU": "0.4"},
     3369 * DAY, 0.01),
    # P6-06: on all 8960 chips that is about 1.25 GB per chip
    ("p6-06-1.25GB-per-chip", "parallel.memory_per_device.fsdp", V5P,
     {"P": 70 * 10**9, **ADAM, "A_act": V3_ACTIVATIONS, "X": 8960}, 1.25e9, 0.01),
    # P6-08: FSDP over batch and sequence: 4M / 8960 = 468 tokens per chip, below 850: comms-bound
    ("p6-08-468", "parallel.batch_per_device", NONE, {"B": BATCH_4M, "n_dev": 8960}, 468, 0.001),
    # applied-training-pq9: mixed threshold 2550^2 / (2 x 28,672) = 113 < 468, and X_opt = 1618
    ("applied-pq9-113", "parallel.fsdp_tp.min_batch_per_chip", V5P, {"F": 28672, "M_X": 2, "M_Y": 1}, 113, 0.005),
    ("applied-pq9-x-opt-1618", "parallel.fsdp_tp.x_opt", NONE,
     {"B": 4190000, "F": 28672, "n_dev": 8960, "M_X": 2, "M_Y": 1}, 1618, 0.001),
    # applied-training-pq9: 4-way TP is under F/2550 = 11.2
    ("applied-pq9-tp-11.2", "parallel.tp.max_degree", V5P, {"F": 28672, "M_Y": 1}, 11.2, 0.005),
    # applied-training-wp2b (engine_derived): 405B on 8 pods: F = 53,248 gives 61.1 tokens per chip,
    # TP up to 20.9, X_opt 840 per pod with a 16M batch, and 32.1 days at 40% MFU
    ("applied-wp2b-61.1", "parallel.fsdp_tp.min_batch_per_chip", V5P, {"F": 53248, "M_X": 2, "M_Y": 1}, 61.1, 0.001),
    ("applied-wp2b-tp-20.9", "parallel.tp.max_degree", V5P, {"F": 53248, "M_Y": 1}, 20.9, 0.002),
    ("applied-wp2b-x-opt-840", "parallel.fsdp_tp.x_opt", NONE,
     {"B": 2097152, "F": 53248, "n_dev": 8960, "M_X": 2, "M_Y": 1}, 840, 0.001),
    ("applied-wp2b-32.1-days", "parallel.training_time", V5P,
     {"P": 405_850_000_000, "tokens": 15 * 10**12, "n_dev": 71680, "MFU": "0.4"}, 32.1 * DAY, 0.002),
    # -- GPUs (gpus.md, 'Rooflines for LLM Scaling on GPUs') --
    # gpus.md 'Data Parallelism': DP/ZeRO needs 990e12 / 450e9 = 2200 tokens per GPU inside a node ...
    ("gpu-dp-2200-in-node", "parallel.gpu.dp.min_batch_per_gpu_in_node", H100, {}, 2200, 0),
    # ... and 990e12 / 400e9 = 2475 across nodes
    ("gpu-dp-2475", "parallel.gpu.dp.min_batch_per_gpu", H100, {}, 2475, 0),
    # gpus-ex22: pure DP on 16,000 H100s needs 16000 x 2475 = 40M tokens per batch
    ("gpus-ex22-40M", "parallel.gpu.dp.min_batch", H100, {"X": 16000}, 40e6, 0.02),
    # gpus-ex24: MoE with k = 4 of E = 128 experts: 32 x 2475 = 79,200 tokens per GPU
    ("gpus-ex24-79200", "parallel.gpu.dp.min_batch_per_gpu_moe", H100, {"E": 128, "k": 4}, 79200, 0),
    # gpus-ex25: two-node DP halves it: 2475 / 2 = 1237.5 (the book truncates to 1237)
    ("gpus-ex25-1237", "parallel.gpu.dp.min_batch_per_gpu_few_nodes", H100, {"M_nodes": 2}, 1237, 0.001),
    # gpus-ex26: TP with F = 28,000: F/2200 = 12.7 in a node, F/2475 = 11 across nodes, 8 + 11.3 = 19 over two nodes
    ("gpus-ex26-in-node-12.7", "parallel.gpu.tp.max_degree_in_node", H100, {"F": 28000}, 12.7, 0.005),
    ("gpus-ex26-y-max-11", "parallel.gpu.tp.max_degree", H100, {"F": 28000}, 11.3, 0.005),
    ("gpus-ex26-two-nodes-19", "parallel.gpu.tp.max_degree_two_nodes", H100, {"F": 28000}, 19.3, 0.005),
    # gpus-ex26, erratum 21: with the model's real F = 28,672: 11.6 and 19.6
    ("gpus-ex26-erratum21-11.6", "parallel.gpu.tp.max_degree", H100, {"F": 28672}, 11.6, 0.005),
    ("gpus-ex26-erratum21-19.6", "parallel.gpu.tp.max_degree_two_nodes", H100, {"F": 28672}, 19.6, 0.005),
    # gpus.md Quiz 5, erratum 17, corrected: max TP in a node is 28672 / 2200 = 13.0 (the text divided by 1995)
    ("quiz5-erratum17-13.0", "parallel.gpu.tp.max_degree_in_node", H100, {"F": 28672}, 13.0, 0.005),
    # gpus-quiz5-q2b: 6 x 70e9 x 15e12 on 4096 H100s at 45% MFU: 3.5e6 s, 40 days
    ("gpus-quiz5-q2b-3.5e6s", "parallel.training_time", H100, {**LLAMA3_70B, "n_dev": 4096, "MFU": "0.45"},
     3.5e6, 0.02),
    ("gpus-quiz5-q2b-40-days", "parallel.training_time", H100, {**LLAMA3_70B, "n_dev": 4096, "MFU": "0.45"},
     40 * DAY, 0.005),
    # gpus-quiz5-q2c-i: 700 GB over 8-way TP is 87.5 GB per GPU, more than 80 GB (activations left out: 1 byte)
    ("gpus-quiz5-q2c-i-87.5GB", "parallel.memory_per_device.tp", H100,
     {"P": 70 * 10**9, **ADAM, "A_act": 1, "Y": 8}, 87.5e9, 1e-9),
    # gpus.md Quiz 5: 10 bytes per parameter, 700 GB: at least 9 H100s
    ("quiz5-700GB-9-h100s", "parallel.min_chips_memory", H100, {"P": 70 * 10**9, **ADAM, "A_act": 1}, 9, 0),
    # gpus-quiz5-q2c-ii: ZeRO-3 with a 4M batch over 4096 GPUs: 976 tokens per GPU, under 2475
    ("gpus-quiz5-q2c-ii-976", "parallel.batch_per_device", NONE, {"B": 4 * 10**6, "n_dev": 4096}, 976, 0.001),
    # gpus.md Quiz 5: with 8-way PP a model replica spans 8 nodes: 990e12 / 3200e9 = 309 per GPU
    ("quiz5-pp8-309", "parallel.gpu.dp.min_batch_per_gpu_model_sharded", H100, {"Y": 64}, 309, 0.002),
    # gpus-quiz5-q3, corrected (erratum 19: 2,472 -> 2,475): Megatron 70B with 16-way model sharding, 2 nodes:
    # 2475 / 2 = 1237.5 ("roughly 1k"); 314B with 64-way, 8 nodes: 309 ("roughly 300")
    ("gpus-quiz5-q3-70b-1237.5", "parallel.gpu.dp.min_batch_per_gpu_model_sharded", H100, {"Y": 16}, 1237.5, 0),
    ("gpus-quiz5-q3-314b-309", "parallel.gpu.dp.min_batch_per_gpu_model_sharded", H100, {"Y": 64}, 309.375, 0),
    ("gpus-quiz5-q3-70b-2048", "parallel.batch_per_device", NONE, {"B": 384 * 4096, "n_dev": 768}, 2048, 0),
    # gpus-ex30: LLaMA-3's 8 TP x 16 PP spans 16 nodes: 16x cheaper DP, 2475 / 16 = 155 < about 1k per GPU
    ("gpus-ex30-155", "parallel.gpu.dp.min_batch_per_gpu_model_sharded", H100, {"Y": 128}, 155, 0.005),
    ("gpus-ex30-1k-per-gpu", "parallel.batch_per_device", NONE, {"B": 16 * 10**6, "n_dev": 16384}, 1000, 0.05),
    # gpus-ex29: DeepSeek-V3: 4096 x 15360 tokens over 2048 H800s: 30k per GPU (exact 30,720)
    ("gpus-ex29-30k", "parallel.batch_per_device", NONE, {"B": 4096 * 15360, "n_dev": 2048}, 30000, 0.03),
    # gpus.md 'Data Parallelism', erratum 15 (kept at the book's figure): H800 at "300 GB/s": 3300 per GPU
    ("gpu-dp-deepseek-3300", "parallel.gpu.dp.min_batch_per_gpu", H100, {"W_node": 300 * 10**9}, 3300, 0),
    # gpus.md Quiz 5 Q1: a B200 DGX needs 2250e12 / 400e9 = 5625 per GPU across nodes
    ("quiz5-b200-5625", "parallel.gpu.dp.min_batch_per_gpu", B200, {}, 5625, 0),
    # gpus-ex31: GB200 NVL72: 2250e12 / 3.6e12 = 625 per GPU
    ("gpus-ex31-gb200-625", "parallel.gpu.dp.min_batch_per_gpu", GB200, {}, 625, 0),
    # gpus.md 'Expert Parallelism': wide EP needs F > 8 x 2475 = 19,800 on H100 nodes, 8 x 5625 = 45,000 on B200
    ("gpu-ep-h100-19800", "parallel.gpu.ep.min_f_limit", H100, {}, 19800, 0),
    ("gpu-ep-b200-45000", "parallel.gpu.ep.min_f_limit", B200, {}, 45000, 0),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_book_answer(row):
    _, name, ctx, given, expected, rel = row
    got = evaluate(get(name), ctx, given).value
    assert got.is_number, got
    if rel == 0:
        assert got == R(Fraction(str(expected)) if isinstance(expected, float) else expected)
    else:
        assert math.isclose(float(got), float(expected), rel_tol=rel), float(got)


def _steps(name, ctx, given):
    return {s.step.label: s.value for s in evaluate(get(name), ctx, given).steps}


def test_llama3_70b_flops():
    # applied-training-pq2: 6 x 70e9 = 4.2e11 FLOPs per token; P6-03: x 15e12 tokens = 6.3e24 FLOPs
    steps = _steps("parallel.training_time", V5P, {**LLAMA3_70B, "n_dev": 8960, "MFU": "0.4"})
    assert steps[r"\mathrm{FLOPs}/\mathrm{token}"] == 42 * 10**10
    assert steps[r"\mathrm{FLOPs}"] == 63 * 10**23
    # gpus-quiz5-q2b: 4096 H100s at 45% MFU deliver 1.8e18 FLOPs/s
    gpu = _steps("parallel.training_time", H100, {**LLAMA3_70B, "n_dev": 4096, "MFU": "0.45"})
    assert math.isclose(float(gpu[r"C_{\mathrm{eff}}"]), 1.8e18, rel_tol=0.02)


def test_117_chips_is_the_round_up():
    # P6-05: 11.2 TB / 96 GB = 116.5, so 117 chips (the newest text; older ones had 3 or 4 checkpoints per layer)
    n = evaluate(get("parallel.min_chips_memory"), V5P, {"P": 70 * 10**9, **ADAM, "A_act": V3_ACTIVATIONS}).value
    assert math.ceil(n) == 117
    steps = _steps("parallel.min_chips_memory", V5P, {"P": 70 * 10**9, **ADAM, "A_act": V3_ACTIVATIONS})
    assert math.isclose(float(steps[r"\mathrm{bytes}"]), 11.2e12, rel_tol=0.002)
    # gpus.md Quiz 5: 700 GB of state needs at least 9 H100s
    h100 = evaluate(get("parallel.min_chips_memory"), H100, {"P": 70 * 10**9, **ADAM, "A_act": 1}).value
    assert math.ceil(h100) == 9


def test_verdicts():
    v5p = lambda name, given: evaluate(get(name), V5P, given).value  # noqa: E731
    # training-q3a: pure DP of 13B: 130 GB of state per chip is more than 96 GB
    assert v5p("parallel.memory_per_device.dp", {"P": 13 * 10**9, **ADAM, "A_act": 7864320000000, "X": 4096}) \
        > 96 * 10**9
    # training-q3b: the 3M batch is below FSDP's 3.48M: comms-bound
    assert 3 * 10**6 < v5p("parallel.fsdp.min_batch", {"X": 4096, "M_X": 3})
    # P6-08 and applied-training-pq9: 468 per chip is below 850 (FSDP) but above 113 (FSDP + TP)
    per_chip = evaluate(get("parallel.batch_per_device"), NONE, {"B": BATCH_4M, "n_dev": 8960}).value
    assert v5p("parallel.fsdp_tp.min_batch_per_chip", {"F": 28672, "M_X": 2, "M_Y": 1}) < per_chip \
        < v5p("parallel.fsdp.min_batch_per_device", {"M_X": 3})
    # training-ex16: 111 per chip is just above 108 ("cutting it a bit close"); the pod's 1M >> 73,440
    assert v5p("parallel.fsdp_tp.min_batch_per_chip", {"F": 30000, "M_X": 2, "M_Y": 1}) < R(10**6, 8960)
    assert v5p("parallel.dcn.min_batch_per_slice", {}) < 10**6
    # training-ex10: X = 16, Y = 4 is the power of two nearest the optimum
    x_opt = evaluate(get("parallel.fsdp_tp.x_opt"), NONE,
                     {"B": 48000, "F": 32768, "n_dev": 64, "M_X": 2, "M_Y": 1}).value
    assert min((abs(math.log2(float(x_opt)) - e), 2**e) for e in range(7))[1] == 16
    # gpus-quiz5-q2c-ii: 976 tokens per GPU is below the ZeRO threshold of 2475
    assert R(4 * 10**6, 4096) < evaluate(get("parallel.gpu.dp.min_batch_per_gpu"), H100, {}).value


def test_book_thresholds_in_symbols():
    # gpus-ex41: multi-node EP pays off when F > 8 C / W_node (8-GPU nodes, bf16)
    limit = evaluate(get("parallel.gpu.ep.min_f_limit"), NONE, {"D_node": 8, "b_x": 2}).value
    assert sp.simplify(limit - 8 * sym("C") / sym("W_node")) == 0
    # gpus.md Quiz 5 Q1: on a B200 node the TP bound is Y < F / 2500
    y = evaluate(get("parallel.gpu.tp.max_degree_in_node"), B200, {}).value
    assert sp.simplify(y - sym("F") / 2500) == 0
    # training.md: the mixed threshold is alpha^2 / (2F) on a 3-D torus (M_X M_Y = 2), the sum policy 2 alpha^2 / F
    alpha = R(459 * 10**12, 18 * 10**10)
    over = evaluate(get("parallel.fsdp_tp.min_batch_per_chip"), V5P, {"M_X": 2, "M_Y": 1}).value
    summed = evaluate(get("parallel.fsdp_tp.min_batch_per_chip_sum_policy"), V5P, {"M_X": 2, "M_Y": 1}).value
    assert sp.simplify(over - alpha**2 / (2 * sym("F"))) == 0
    assert sp.simplify(summed - 2 * alpha**2 / sym("F")) == 0
