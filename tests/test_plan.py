"""scalemath plan: the vectorized search against the exact forms and a brute-force search, figures we
did not write (a hand count, llm-analysis, Calculon), the book's configurations, and bad input."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from click.testing import CliRunner

from scalemath.catalog import hardware, models
from scalemath import quantities
from scalemath.search import plan
from scalemath.cli import main
from scalemath.search.plan import parse_count
from scalemath.search import train_space as search
from scalemath.search.train_space import Options

C_H100, C_A100, C_V5P = 990 * 10**12, 310 * 10**12, 459 * 10**12


def run(model: str, chip: str, chips: int, batch: int, seq_len: int, mfu=Fraction(2, 5), top=5, **options) -> dict:
    pins = {k: options.pop(k) for k in ("tp", "pp", "ep", "fsdp", "dp", "mb", "checkpointing", "zero1")
            if k in options}
    return plan.plan(models.get_model(model), hardware.get_chip(chip),
                     Options(chips=chips, batch=batch, seq_len=seq_len, mfu=mfu, pins=pins, **options), top=top)


def cli(*args):
    result = CliRunner().invoke(main, ["plan", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


# -- the vectorized forms equal the exact ones ----------------------------------------------------------------

SPACES = [
    ("llama3-70b", "h100", 64, 4 * 2**20, 8192),
    ("mixtral-8x7b", "h100", 256, 1024 * 4096, 4096),
    ("deepseek-v3", "h100", 2048, 2048 * 4096, 4096),
    ("llama3-70b", "tpu-v5p", 17920, 2048 * 4096, 4096),  # two pods: data parallelism over DCN
    ("gemma3-27b", "tpu-v5e", 256, 256 * 4096, 4096),
]


@pytest.mark.parametrize("model,chip,chips,batch,seq_len", SPACES, ids=[f"{m}-{c}-{n}" for m, c, n, _, _ in SPACES])
def test_vectorized_equals_exact(model, chip, chips, batch, seq_len):
    m, c = models.get_model(model), hardware.get_chip(chip)
    opts = Options(chips=chips, batch=batch, seq_len=seq_len, mfu=Fraction(2, 5))
    forms = search.compiled(m, c, opts)
    table = next(search.chunks(m, c, opts, forms))
    rows = np.random.default_rng(7).choice(len(table["tp"]), size=25, replace=False)
    for i in rows:
        row = {k: v[i].item() for k, v in table.items()}
        candidate = plan._exact(row, search.Result(0, 0, 0, {}, {}, forms[0], forms[1], ""), opts, c.hbm_bytes, c)
        for value, exact in ((row["memory"], candidate.memory.value), (row["step"], candidate.step.value)):
            assert math.isclose(value, float(exact), rel_tol=1e-9), (row, value, exact)


# -- a brute-force search, sharing nothing with the vectorized one but the closed forms --------------------------

def brute_force(model: str, chips: int, seqs: int, seq_len: int):
    """Every configuration of a small GPU run, by nested loops and the exact forms."""
    m, chip = models.get_model(model), hardware.get_chip("h100")
    ctx = quantities.Context(chip="h100", dtype="bf16", model=model)
    memory, step = quantities.get("parallel.config.memory_per_device"), quantities.get("parallel.config.step_time")
    found = []
    for tp in (t for t in range(1, 9) if m.N % t == 0):
        for pp in (p for p in range(1, m.L + 1) if m.L % p == 0 or p & (p - 1) == 0):
            for fsdp in (f for f in range(1, seqs + 1) if seqs % f == 0):
                for dp in (d for d in range(1, seqs // fsdp + 1) if seqs % (fsdp * d) == 0):
                    if tp * pp * fsdp * dp > chips:
                        continue
                    for mb in (b for b in range(1, seqs + 1) if seqs % (fsdp * dp * b) == 0):
                        # NVLink for an axis inside the 8-GPU node together with the axes inside it, else the NIC
                        w = {name: 450 * 10**9 if inner <= 8 else 50 * 10**9 for name, inner in
                             (("W_tp", tp), ("W_ep", tp), ("W_pp", tp * pp), ("W_fsdp", tp * pp * fsdp),
                              ("W_dp", tp * pp * fsdp * dp))}
                        point = {"B": seqs * seq_len, "n_dp": dp, "n_fsdp": fsdp, "n_tp": tp, "n_pp": pp, "n_ep": 1,
                                 "n_zero": 1, "n_mb": seqs // (fsdp * dp * mb), "n_ckpt": 1, "r_remat": 1,
                                 "MFU": Fraction(1, 2), "b_g": 2, "b_opt": 8, "k": 1, "f_bubble": 1, **w}
                        mem = quantities.evaluate(memory, ctx, {k: v for k, v in point.items()
                                                                if k in {p.name for p in memory.params}}).value
                        if mem > chip.hbm_bytes:
                            continue
                        ev = quantities.evaluate(step, ctx, {k: v for k, v in point.items() if k not in
                                                             ("n_zero", "n_ckpt", "b_opt")})
                        comms = next(s.value for s in ev.steps if s.step.label == r"T_{\mathrm{comms}}")
                        found.append((ev.value, tp * pp * fsdp * dp, comms, mem, (tp, pp, fsdp, dp, mb)))
    # the documented order: fastest (steps within a relative 1e-7 tie), fewer chips, less communication, less memory
    fastest = min(f[0] for f in found)
    tied = [f for f in found if f[0] <= fastest * (1 + sp.Rational(1, 10**7))]
    return min(tied, key=lambda f: f[1:4])


def test_brute_force_picks_the_same_winner():
    # llama3-8b on 16 H100, 32 sequences of 2048, block rematerialisation and no ZeRO-1 pinned in both
    t, chips, comms, mem, (tp, pp, fsdp, dp, mb) = brute_force("llama3-8b", 16, 32, 2048)
    report = run("llama3-8b", "h100", 16, 32 * 2048, 2048, mfu=Fraction(1, 2), checkpointing="block", zero1=False)
    best = report["best"]
    assert (best.config["tp"], best.config["pp"], best.config["fsdp"], best.config["dp"]) == (tp, pp, fsdp, dp)
    assert best.config["micro_batch"] == mb and best.step.value == t and best.memory.value == mem


# -- figures we did not write -------------------------------------------------------------------------------------

def test_llama3_70b_on_64_h100_fits_where_the_old_plan_found_nothing():
    # the comparison run: 512 x 8192 tokens on 64 H100; scalemath used to put 182.8 GB on each GPU and refuse
    report = run("llama3-70b", "h100", 64, 512 * 8192, 8192)
    assert report["search"]["feasible"] > 0 and report["best"].memory.value <= 80 * 10**9
    # compute-bound at MFU 0.4: 6 P B / (64 C MFU) = 70.06 s, the hand count of the comparison
    p = models.get_model("llama3-70b").param_count()
    assert math.isclose(float(report["best"].step.value), 6 * p * 512 * 8192 / (64 * C_H100 * 0.4), rel_tol=1e-12)


# TP 8 x DP 8, ZeRO-1, micro-batch 1, full recomputation, fp32 master weights and Adam moments (12 bytes)
PEERS = [
    # gradients in bf16: the comparison's hand count, weights 17.6 + gradients 17.6 + optimizer 13.2 GB + 1.3 GB of
    # layer-input checkpoints and one layer's working set: "about 50 GB"; Calculon: 54.2 GB with 11 % more parameters
    ("bf16-grads-hand-count", "bf16", 50.0e9, 0.01),
    # gradients in fp32: llm-analysis 0.2.2 prints 67.03 GB (weights 17.38, gradients 34.75, optimizer 13.03,
    # activations 1.87; its LM head is tied, 1.5 % fewer parameters)
    ("fp32-grads-llm-analysis", "fp32", 67.03e9, 0.015),
]


@pytest.mark.parametrize("name,grad_dtype,expected,tol", PEERS, ids=[p[0] for p in PEERS])
def test_memory_against_a_hand_count_and_the_peers(name, grad_dtype, expected, tol):
    report = run("llama3-70b", "h100", 64, 512 * 8192, 8192, tp=8, dp=8, mb=1, checkpointing="block", zero1=True,
                 grad_dtype=grad_dtype, optimizer_bytes=Fraction(12))
    best = report["best"]
    assert best.config["micro_batches"] == 64
    assert math.isclose(float(best.memory.value), expected, rel_tol=tol)
    parts = {s.step.label: s.value for s in best.memory.steps}
    assert parts[r"\mathrm{bytes}_{w}"] == 70553698304 * 2 // 8  # 17.64 GB
    assert parts[r"\mathrm{bytes}_{\mathrm{opt}}"] == 70553698304 * 12 // 64  # 13.23 GB


def test_llama2_7b_zero3_on_8_a100_against_llm_analysis():
    # llm-analysis 0.2.2: 25.70 s per step at 50 % of peak, counting recomputation and attention FLOPs; scalemath
    # counts 8·P per token (6 plus the recomputed forward), as the book counts MFU, so it is lower by about the
    # attention share; by hand 8 P B / (8 C 0.5) = 22.79 s. The A100 NIC (25 GB/s) now lets the plan run at all.
    report = run("llama2-7b", "a100", 8, 128 * 4096, 4096, mfu=Fraction(1, 2), fsdp=8, checkpointing="block")
    t = float(report["best"].step.value)
    p = models.get_model("llama2-7b").param_count()
    assert math.isclose(t, 8 * p * 128 * 4096 / (8 * C_A100 * 0.5), rel_tol=1e-12)
    assert 1.05 < 25.70 / t < 1.20


# -- the book's configurations ----------------------------------------------------------------------------------

def test_llama3_405b_on_16k_h100_finds_the_books_layout():
    # gpus.md, Examples: LLaMA-3 on 16k H100 with 16M tokens: 8-way TP in the node, 16-way PP, 128-way ZeRO-1 DP
    report = run("llama3-405b", "h100", 16384, 16 * 2**20, 8192)
    layouts = [(c.config["tp"], c.config["pp"], c.config["dp"], c.config["fsdp"], c.config["zero1"])
               for c in report["ranked"][:3]]
    assert (8, 16, 128, 1, True) in layouts
    book = next(c for c in report["ranked"] if (c.config["tp"], c.config["pp"], c.config["dp"]) == (8, 16, 128))
    assert book.step.value / report["best"].step.value < 1.01


def test_llama3_70b_on_a_v5p_pod_uses_8192_chips():
    # applied-training.md: 4M = 1024 x 4096 tokens on a 8960-chip pod: 1024-way data x 8-way model parallelism on
    # 8192 chips (the book: 1024 DP x 2 sequence x 4 TP), compute-bound; step 6 P B / (8192 C MFU) = 1.18 s
    report = run("llama3-70b", "tpu-v5p", 8960, 1024 * 4096, 4096)
    best = report["best"].config
    assert best["chips"] == 8192 and best["dp"] * best["fsdp"] == 1024 and best["tp"] * best["pp"] == 8
    assert plan.bottleneck(report["best"]) == "compute-bound"
    p = models.get_model("llama3-70b").param_count()
    assert math.isclose(float(report["best"].step.value), 6 * p * 1024 * 4096 / (8192 * C_V5P * 0.4), rel_tol=1e-12)


def test_across_pods_only_data_parallelism_crosses_dcn():
    # applied-training.md worked problem: 405B on 8 v5p pods: DP across pods over DCN, FSDP + TP inside each pod
    report = run("llama3-405b", "tpu-v5p", 8 * 8960, 16 * 2**20, 8192)
    best = report["best"].config
    assert best["chips"] > 8960 and best["chips"] // best["dp"] <= 8960
    assert best["bandwidths"]["W_dp"] == hardware.get_chip("tpu-v5p").bandwidth("dcn")


def test_deepseek_v3_layout_is_bound_by_its_expert_alltoalls():
    # gpus.md, Examples: DeepSeek-V3 on 2048 GPUs: 64-way EP over 8 nodes x 16-way PP x 2-way ZeRO-1 DP, 15360 x 4096
    # tokens, 30,720 per GPU; 'Expert Parallelism': with F = 2048 < (C/W_node)(Z - 8)/k = 2475·56/8 = 17,325 the
    # AllToAlls outlast the expert matmuls, so this layout is communication-bound in the book's own model
    report = run("deepseek-v3", "h100", 2048, 15360 * 4096, 4096, ep=64, pp=16, dp=2, tp=1, fsdp=1, zero1=True)
    best = report["best"]
    assert best.config["chips"] == 2048 and best.config["replicas"] == 128 and 15360 * 4096 // 2048 == 30720
    assert plan.describe(best).startswith("EP 64 x PP 16 x DP 2 (2048 chips)")
    assert plan.bottleneck(best).startswith("bound by expert AllToAlls")


def test_deepseek_v3_published_setup_on_h800_against_a_hand_count():
    # DeepSeek-V3's own run (technical report, § 3.1-3.2): 2048 H800 (8 per node, NVLink inside, one 400 Gb/s =
    # 50 GB/s InfiniBand NIC per GPU), 16-way pipeline, 64-way expert parallelism over 8 nodes, ZeRO-1 data
    # parallelism; batch 15360 x 4096. Pinned here with one-sequence micro-batches and block rematerialisation.
    report = run("deepseek-v3", "h800", 2048, 15360 * 4096, 4096, tp=1, pp=16, ep=64, dp=2, fsdp=1, zero1=True, mb=1,
                 checkpointing="block", top=1)
    best = report["best"]
    assert best.config["chips"] == 2048 and best.config["micro_batches"] == 120
    # EP 64 spans 8 nodes: the InfiniBand NIC; TP (none here) would get the H800's 200 GB/s of NVLink
    assert best.config["bandwidths"]["W_ep"] == 50 * 10**9 and best.config["bandwidths"]["W_tp"] == 200 * 10**9
    # hand count: routed experts 58 MoE layers x 256 x 3·7168·2048 = 653,908,770,816 parameters; the rest of the
    # published 671B total (report, § 1) stays with every stage; 61 layers over 16 stages: 4 in the fullest
    p_exp = 58 * 256 * 3 * 7168 * 2048
    p_rest = 671 * 10**9 - p_exp
    weights = 2 * (p_rest + p_exp / 64) / 16           # bf16, a stage's share, 1/64 of the experts
    optimizer = 8 * 671 * 10**9 / (128 * 16)           # Adam's 8 B, ZeRO-1 over the 128 replicas (experts over 128/64)
    acts = 2 * 7168 * 4096 * (1 * 4 * 16 + 20)         # block: each layer's input, 4 layers x 16 in flight + 20
    expected = 2 * weights + optimizer + acts          # weights + bf16 gradients + optimizer + activations = 14.38 GB
    assert math.isclose(float(best.memory.value), expected, rel_tol=2e-3)
    assert best.memory.value < hardware.get_chip("h800").hbm_bytes  # feasible in 80 GB
    # the step: each GPU's 491,520 tokens send k = 8 copies of D = 7168 bf16 values, 63/64 of them off the GPU, in 6
    # AllToAlls per MoE layer (dispatch and combine, forward, recomputed forward, backward), 58/16 MoE layers a stage,
    # at 50 GB/s: 24.14 s against 8·P_active·B/(2048 C) = 9.32 s of compute: AllToAll-bound
    t_ep = 6 * 8 * 2 * 7168 * (15360 * 4096 // 128) * 63 / 64 * 58 / 16 / 50e9
    steps = {s.step.label: s.value for s in best.step.steps}
    assert math.isclose(float(steps[r"T_{\mathrm{EP}}"]), t_ep, rel_tol=1e-12)
    assert plan.bottleneck(best).startswith("bound by expert AllToAlls")
    # DeepSeek reports 180K H800 hours per trillion tokens: 180e3 x 3600 / 1e12 x 62,914,560 / 2048 = 19.9 s a
    # step; without its fp8 matmuls, node-limited routing (4 nodes a token) and overlapped AllToAlls the closed
    # form is slower, but within a small factor
    published = 180_000 * 3600 / 10**12 * 15360 * 4096 / 2048
    assert 1 < float(best.step.value) / published < 5


def test_moe_data_parallelism_is_not_priced_with_dense_thresholds():
    # 30,720 tokens per GPU was called compute-bound with the dense 2475; for a mixture the gradient traffic is that
    # of all E experts while compute is that of k: gpus.md's threshold is (E/k)·2475 = 79,200 for DeepSeek's E/k = 32.
    # Pure FSDP over 1920 GPUs (the largest degree dividing the 15360 sequences): 8 x 4096 = 32,768 tokens per GPU
    report = run("deepseek-v3", "h100", 2048, 15360 * 4096, 4096, tp=1, pp=1, ep=1, dp=1, fsdp=1920, zero1=False,
                 checkpointing="block", top=1)
    best = report["best"]
    assert best.config["chips"] == 1920 and plan.bottleneck(best).startswith("bound by FSDP weight gathers")


# -- the CLI --------------------------------------------------------------------------------------------------------

def test_json_carries_the_search_and_the_winners_derivations():
    data = cli("--model", "llama3-8b", "--chip", "h100", "--chips", "64", "--batch-tokens", "1Mi", "--tokens", "15T")
    assert set(data["search"]) == {"candidates", "feasible", "seconds"}
    assert data["search"]["candidates"] >= data["search"]["feasible"] > 0
    assert data["results"][0]["fits"] and data["derivations"]["step_time"]["quantity"] == "parallel.run.step_time"
    assert data["pricing"] == "run" and 0 < data["achieved"]["mfu"]["value"] < 1
    assert data["training_time"]["value"] > 0 and all(r["why"] for r in data["results"][1:])


@pytest.mark.parametrize("pins,expected", [
    (["--tp", "4"], {"tp": 4}), (["--pp", "4", "--tp", "2"], {"pp": 4, "tp": 2}),
    (["--micro-batch", "2", "--checkpointing", "none"], {"micro_batch": 2, "checkpointing": "none"}),
    (["--no-zero1", "--dp", "2"], {"zero1": False, "dp": 2}),
], ids=["tp", "pp-tp", "micro-batch-policy", "no-zero1"])
def test_pins_are_kept(pins, expected):
    data = cli("--model", "llama3-8b", "--chip", "h100", "--chips", "64", "--batch-tokens", "1Mi", *pins)
    for result in data["results"]:
        assert {k: result["config"][k] for k in expected} == expected


def test_dtypes_are_searched_and_8_bit_matmuls_keep_bf16_weights():
    data = cli("--model", "llama3-8b", "--chip", "h100", "--chips", "64", "--batch-tokens", "1Mi", "--dtype", "bf16,fp8")
    single = cli("--model", "llama3-8b", "--chip", "h100", "--chips", "64", "--batch-tokens", "1Mi")
    assert data["search"]["candidates"] == 2 * single["search"]["candidates"]
    best = data["results"][0]["config"]
    # fp8 runs at twice the bf16 peak on an H100, so the best configuration uses it, on bf16 weights
    assert (best["dtype"], best["weight_dtype"]) == ("fp8", "bf16")
    assert data["results"][0]["memory"]["weights"]["value"] == 2 * 8030257152 / (best["tp"] * best["pp"] * best["fsdp"])


def test_text_markdown_latex():
    args = ["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "8960", "--batch-tokens", "4Mi"]
    text = CliRunner().invoke(main, ["plan", *args]).output
    assert "best: TP" in text and "where the time goes (parallel.run.step_time)" in text and "runners-up:" in text
    md = CliRunner().invoke(main, ["plan", *args, "--format", "markdown"]).output
    assert md.startswith("# Training plan") and "| mix | configuration |" in md
    tex = CliRunner().invoke(main, ["plan", *args, "--format", "latex"]).output
    assert "\\toprule" in tex and "\\begin{itemize}" in tex


@pytest.mark.parametrize("text,expected", [
    ("4M", 4_000_000), ("4Mi", 4 * 2**20), ("15T", 15 * 10**12), ("8960", 8960), ("1024*4096", 4194304),
    ("2K", 2000),
], ids=["mega", "mebi", "tera", "plain", "product", "kilo"])
def test_counts(text, expected):
    assert parse_count(text, "x") == expected


BASE = ["--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "4Mi"]


@pytest.mark.parametrize("args,fragment", [
    (["--model", "llama3-7b", *BASE], "did you mean"),
    (["--model", "llama3-70b", "--chip", "tpu-v5", "--chips", "8", "--batch-tokens", "4Mi"], "did you mean"),
    (["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "0", "--batch-tokens", "4Mi"], "positive whole"),
    (["--model", "llama3-70b", *BASE, "--mfu", "1.5"], "from 10^-6 to 1"),
    (["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "4.5"], "positive whole"),
    (["--model", "llama3-70b", *BASE, "--seq-len", "100000"], "longer than"),
    (["--model", "llama3-70b", *BASE, "--tp", "3"], "--tp 3 is not possible"),
    (["--model", "llama3-70b", *BASE, "--ep", "2"], "has no experts"),
    (["--model", "llama3-70b", *BASE, "--pp", "81"], "--pp 81 is not possible"),
    (["--model", "llama3-70b", *BASE, "--optimizer-bytes", "-1"], "0 to 64"),
    (["--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "4Mi"], "--model"),
    (["--model", "llama3-70b", "--chip", "v100", "--chips", "8", "--batch-tokens", "4Mi"], "bf16"),
    (["--model", "llama3-70b", *BASE, "--dtype", "bf16,bf17"], "did you mean 'bf16'"),
    (["--model", "llama3-70b", *BASE, "--dtype", ","], "names no dtype"),
], ids=["model-typo", "chip-typo", "zero-chips", "mfu", "fractional-batch", "seq-len",
        "tp-not-dividing-heads", "ep-dense", "pp-past-layers", "optimizer-bytes", "no-model", "dtype-missing",
        "dtype-typo-in-list", "dtype-empty-list"])
def test_bad_input(args, fragment):
    result = CliRunner().invoke(main, ["plan", *args])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output


def test_dask_backend_gives_the_same_search():
    pytest.importorskip("dask.array")
    numpy_report = run("mixtral-8x7b", "h100", 256, 1024 * 4096, 4096)
    dask_report = run("mixtral-8x7b", "h100", 256, 1024 * 4096, 4096, backend="dask")
    assert dask_report["search"]["candidates"] == numpy_report["search"]["candidates"]
    assert [c.config for c in dask_report["ranked"]] == [c.config for c in numpy_report["ranked"]]


@pytest.mark.parametrize("args, shown, not_shown", [
    (["--chips", "1", "--batch-tokens", "8192", "--seq-len", "2048", "--chip", "b200", "--optimizer-bytes", "0"],
     "best: one chip, micro-batch", "(1 chips)"),
    (["--chips", "1", "--batch-tokens", "4096", "--seq-len", "4096", "--chip", "h100"], "(1 sequence of 4096)",
     "1 sequences"),
], ids=["one chip", "one sequence"])
def test_counts_read_as_words(args, shown, not_shown):
    from click.testing import CliRunner

    from scalemath.cli import main

    out = CliRunner().invoke(main, ["plan", "--model", "llama3-8b", *args]).output
    assert shown in out and not_shown not in out
