"""plan's predictions against runs people published (tests/published_runs.py holds the tables with their
citations): the layout each paper ran, pinned, priced from the catalog's achievable rates with no tuning per run.

Issue 27 asks for each predicted throughput within 15 % of the published one. Where the prediction is not, the row
is a strict xfail whose reason gives both numbers, so the gap stays visible and a fix that closes it is noticed."""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from decimal import Decimal
from fractions import Fraction
from importlib import resources
from pathlib import Path

import pytest

from scalemath.catalog import hardware, models
from scalemath.catalog.efficiency import sustained_fraction
from scalemath.conventions import parse
from scalemath.search import plan


def _load_runs():
    name = "published_runs"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("published_runs.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


RUNS = _load_runs()
WITHIN = Fraction(15, 100)


def _best(model: str, chip: str, gpus: int, tokens: int, seq_len: int, pins: dict, conventions, **kw):
    opts = plan.options(gpus, tokens, seq_len=seq_len, pins=pins, conventions=conventions, **kw)
    report = plan.plan(models.get_model(model), hardware.get_chip(chip), opts, None, 1)
    assert report["best"] is not None, "the published layout does not fit"
    return report


# Llama 3 405B, Table 4: TFLOP/s per GPU as Meta prints them; bf16 on H100 at the datasheet's peak, fp32 gradients as
# Meta accumulates and reduce-scatters them (Section 3.3.4, "Numerical stability"), a fused attention kernel, the
# interleaved schedule (Section 3.3.2) with its virtual stages and micro-batches searched (the paper does not print
# them). The paper does not say which FLOPs its TFLOP/s count; it cites PaLM for MFU, whose Appendix B counts
# attention over every position (6N + 12·L·H·Q·T, the convention attention=full), where a causal kernel computes
# half of that (attention=causal). The prediction is counted both ways, each against the printed figure, at the
# kernel rates (efficiency=kernel: an upper estimate) and at the share of them runs sustain (efficiency=sustained, the H100's
# fraction fitted to Megatron-Core's table below, not to these runs): held out, the three rows land within 5 %
# counting attention as PaLM does.
LLAMA_GAPS = {("kernel", "causal", "8K GPUs, 8K context"): "predicted 557.5 TFLOP/s per GPU against 430 (+30 %)",
              ("kernel", "causal", "16K GPUs, 8K context"): "predicted 514.9 TFLOP/s per GPU against 400 (+29 %)",
              ("kernel", "full", "8K GPUs, 8K context"): "predicted 579.8 TFLOP/s per GPU against 430 (+35 %)",
              ("kernel", "full", "16K GPUs, 8K context"): "predicted 535.5 TFLOP/s per GPU against 400 (+34 %)",
              ("kernel", "full", "16K GPUs, 128K context"): "predicted 564.4 TFLOP/s per GPU against 380 (+49 %)",
              ("sustained", "causal", "16K GPUs, 128K context"):
                  "predicted 271.4 TFLOP/s per GPU against 380 (-29 %): counting attention's causal half, the "
                  "long-context row falls short where the PaLM count matches"}


def _llama(row, attention: str, efficiency: str) -> Fraction:
    pins = {"tp": row.tp, "cp": row.cp, "pp": row.pp, "dp": row.dp, "fsdp": 1}
    report = _best(row.model, row.chip, row.gpus, row.seqs_per_dp * row.dp * row.seq_len, row.seq_len, pins,
                   parse([f"attention={attention}", "hardware=datasheet", "optimizer=mixed-precision",
                          f"efficiency={efficiency}"]))
    return report["achieved"]["flops_per_chip"] / 10**12


@pytest.mark.parametrize("efficiency, attention, row", [
    pytest.param(e, a, r, id=f"{e}-{a}-{r.id}", marks=pytest.mark.xfail(strict=True, reason=LLAMA_GAPS[e, a, r.id]))
    if (e, a, r.id) in LLAMA_GAPS else pytest.param(e, a, r, id=f"{e}-{a}-{r.id}")
    for e in ("kernel", "sustained") for a in ("causal", "full") for r in RUNS.LLAMA3_TABLE4])
def test_llama3_table4(efficiency, attention, row):
    predicted = _llama(row, attention, efficiency)
    assert abs(predicted / row.tflops_per_gpu - 1) <= WITHIN, (float(predicted), row.tflops_per_gpu)
    if (efficiency, attention) == ("sustained", "full"):  # what the catalog's note on the fraction says
        assert abs(predicted / row.tflops_per_gpu - 1) <= Fraction(5, 100)


# Megatron-LM, Table 1: achieved teraFLOP/s per GPU by the paper's Eq. 3 (full recomputation and attention over every
# position counted) over the predicted step. The run as Megatron-LM ran it in 2021: full recomputation (block),
# mixed-precision Adam with fp32 gradients, the interleaved schedule (Section 5.1), attention unfused (the scores in
# HBM; FlashAttention came in 2022), no sequence parallelism (Korthikanti et al. 2022 introduced it), the gradient
# all-reduce after the backward pass (its overlap came to Megatron-LM in 2023), no ZeRO (the paper's PTD-P keeps the
# optimizer state whole on each data-parallel rank; Section 5.2 compares it with ZeRO-3 as another system), and the
# GPT models' dropout (the framework's default; the paper does not print it)
MEGATRON_GAPS = {"megatron-gpt-310.1b": "+19 %", "megatron-gpt-529.6b": "+15.2 %", "megatron-gpt-1t": "+19 %"}


def _eq3(batch: int, s: int, layers: int, h: int, vocab: int) -> Fraction:
    """Narayanan et al. 2021, Eq. 3: FLOPs of one iteration of ``batch`` sequences, recomputation included."""
    return 96 * batch * s * layers * h**2 * (1 + Fraction(s, 6 * h) + Fraction(vocab, 16 * layers * h))


@pytest.mark.parametrize("row", [
    pytest.param(r, id=r.model, marks=pytest.mark.xfail(
        strict=True, reason=f"predicted above the published {r.tflops_per_gpu} TFLOP/s per GPU: "
                            f"{MEGATRON_GAPS[r.model]}"))
    if r.model in MEGATRON_GAPS else pytest.param(r, id=r.model) for r in RUNS.MEGATRON_TABLE1])
def test_megatron_table1(row):
    seq, vocab = RUNS.MEGATRON_SETUP["seq_len"], RUNS.MEGATRON_SETUP["vocab"]
    pins = {"tp": row.tp, "pp": row.pp, "dp": row.gpus // (row.tp * row.pp), "fsdp": 1, "cp": 1,
            "checkpointing": "block", "zero": 0}
    report = _best(row.model, row.chip, row.gpus, row.batch * seq, seq, pins,
                   parse(["optimizer=mixed-precision", "hardware=datasheet"]), attention_kernel="unfused",
                   dp_overlap=False, sequence_parallel=False, dropout=True)
    predicted = _eq3(row.batch, seq, row.layers, row.hidden, vocab) / Fraction(report["best"].step.value) \
        / row.gpus / 10**12
    assert abs(predicted / row.tflops_per_gpu - 1) <= WITHIN, (float(predicted), row.tflops_per_gpu)


# Megatron-Core r0.8.0 on H100 (NVIDIA's Megatron-LM README at f2e5db402c, the weak-scaling table): per-GPU
# teraFLOP/s by Megatron-LM's own count at that commit (attention over every position, no recomputation) over the
# predicted step. Priced as the README says the runs were made: the tensor-parallel collectives overlapped
# (--tp-comm-overlap, with sequence parallelism), the gradient reduction overlapped (--overlap-grad-reduce) and the
# distributed optimizer's weight AllGather under the next forward pass (--overlap-param-gather: ZeRO-1), fp32
# gradient reduction (Megatron-LM's rule for bf16), a fused attention kernel, the framework's default dropout; the
# micro-batches, virtual stages and checkpointing, which the README does not print, searched. At the kernel rates
# every row comes out far above NVIDIA's measurement: with everything overlapped the predicted step is nearly all
# matmuls at 794.5 TFLOP/s, where the measured step is 1.4 to 1.6 times longer. The H100's sustained fraction is
# fitted to these nine runs (test_the_h100_sustained_fraction_is_the_fit): under it each lands within 7 %, which
# shows the spread a single factor leaves, not a prediction.
MCORE_GAPS = {"1.7B": (596.9, 46), "7.1B": (669.1, 44), "16B": (702.3, 44), "32B": (720.7, 57), "70B": (676.9, 61),
              "119B": (660.3, 57), "177B": (655.3, 51), "314B": (651.6, 37), "462B": (664.7, 45)}
SEVEN = Fraction(7, 100)


def _mcore_flops(row) -> Fraction:
    """megatron/training/training.py at f2e5db402c, num_floating_point_operations, for these MHA GELU models."""
    B, s, L, h, V = row.batch, RUNS.MCORE_SETUP["seq_len"], row.layers, row.hidden, RUNS.MCORE_SETUP["vocab"]
    return 72 * B * s * L * h * h * (1 + Fraction(s, 6 * h) + Fraction(V, 12 * L * h))


def _mcore(row, efficiency: str, catalog=None) -> Fraction:
    """Predicted over measured per-GPU teraFLOP/s for one run of the table."""
    setup = RUNS.MCORE_SETUP
    assert setup["tp_comm_overlap"] and setup["overlap_grad_reduce"] and setup["overlap_param_gather"]
    opts = plan.options(row.gpus, row.batch * setup["seq_len"], seq_len=setup["seq_len"],
                        pins={"tp": row.tp, "pp": row.pp, "dp": row.dp, "fsdp": 1, "cp": 1, "zero": 1},
                        conventions=parse(["optimizer=mixed-precision", "hardware=datasheet",
                                           f"efficiency={efficiency}"]),
                        tp_overlap=True, dp_overlap=True, param_gather_overlap=True, dropout=True)
    chip = (catalog or hardware.default_catalog())[row.chip]
    report = plan.plan(models.get_model(row.model), chip, opts, None, 1, catalog=catalog)
    predicted = _mcore_flops(row) / Fraction(report["best"].step.value) / row.gpus / 10**12
    return predicted / Fraction(Decimal(row.tflops_per_gpu))


@pytest.mark.parametrize("row", [
    pytest.param(r, id=r.model, marks=pytest.mark.xfail(
        strict=True, reason=f"predicted {MCORE_GAPS[r.size][0]} TFLOP/s per GPU against {r.tflops_per_gpu} measured "
                            f"(+{MCORE_GAPS[r.size][1]} %)")) if r.size in MCORE_GAPS else pytest.param(r, id=r.model)
    for r in RUNS.MCORE_H100])
def test_megatron_core_h100_at_the_kernel_rates(row):
    assert abs(_mcore(row, "kernel") - 1) <= WITHIN


@pytest.mark.parametrize("row", RUNS.MCORE_H100, ids=[r.model for r in RUNS.MCORE_H100])
def test_megatron_core_h100_at_the_fitted_sustained_rates(row):
    assert abs(_mcore(row, "sustained") - 1) <= SEVEN


def _with_h100_fraction(tmp_path, fraction: Fraction):
    """The packaged hardware catalog with the H100's sustained fraction replaced."""
    text = (resources.files("scalemath.catalog") / "hardware.toml").read_text(encoding="utf-8")
    section = text.index("[chips.h100.achievable]")
    line = re.compile(r"^sustained_fraction = [0-9.]+", re.M)
    found = line.search(text, section)
    assert found and found.start() < text.index("[chips.h100.achievable.sources]")
    path = tmp_path / f"hw-{fraction.numerator}-{fraction.denominator}.toml"
    path.write_text(text[:found.start()] + f"sustained_fraction = {float(fraction)}" + text[found.end():],
                    encoding="utf-8")
    return hardware.load_catalog(path)


def test_the_h100_sustained_fraction_is_the_fit(tmp_path):
    # the catalog's figure, to two decimals, is the one whose geometric mean of predicted over measured across the
    # nine runs lies nearest 1 (in log terms): a hundredth either way does worse
    fraction = sustained_fraction(hardware.get_chip("h100")).value
    assert (fraction * 100).denominator == 1

    def miss(f: Fraction) -> float:
        catalog = _with_h100_fraction(tmp_path, f)
        return abs(sum(math.log(_mcore(r, "sustained", catalog)) for r in RUNS.MCORE_H100))

    assert miss(fraction) < miss(fraction - Fraction(1, 100)) and miss(fraction) < miss(fraction + Fraction(1, 100))


# DeepSeek-V3 on 2048 H800 as its report describes the run: PP 16 x EP 64 x DP 2 with ZeRO-1, the expert AllToAlls
# overlapped with computation (DualPipe), routing limited to 4 nodes, FP8 matmuls; 15,360 sequences of 4096 tokens.
# The report's pre-training GPU-hours imply about 19.9 s a step (2664K hours over 14.8T tokens at this batch); they
# also hold the batch-size ramp of the first 469B tokens and whatever the run lost, which no step model holds.
@pytest.mark.xfail(strict=True, reason="predicted 7.14 s a step against about 19.9 s implied (-64 %)")
def test_deepseek_v3_layout():
    run = RUNS.DEEPSEEK_V3
    report = _best("deepseek-v3", "h800", run.gpus, run.batch_final * run.seq_len, run.seq_len,
                   {"tp": 1, "pp": run.pp, "ep": run.ep, "dp": run.gpus // (run.pp * run.ep), "fsdp": 1, "cp": 1,
                    "zero": 1}, parse(["hardware=datasheet"]), ep_overlap=True, route_nodes=run.max_nodes_per_token,
                   dtype="fp8")
    hours = Fraction(run.gpu_hours_pretraining.rstrip("K")) * 1000
    implied = hours * 3600 / run.gpus / (Fraction(14_800) * 10**9 / (run.batch_final * run.seq_len))
    step = Fraction(report["best"].step.value)
    assert abs(step / implied - 1) <= WITHIN, (float(step), float(implied))


# Calculon (a peer that models interleaving and overlap) on LLaMA-3 405B, 16,384 H100, 16 Mi tokens, TP 8: its
# recorded runs rank TP8 x PP8 x DP256 (16 one-block chunks per rank) ahead of Meta's TP8 x PP16 x DP128 (8 per
# rank) by 2 % without TP/DP overlap and 5 % with it, and overlap shortens both. Its application is a
# parameter-matched MHA model of 128 blocks, not LLaMA-3's 126 GQA blocks. plan splits PP 16 as Calculon and Meta do
# (8 chunks of one layer) but PP 8 into at most 8 chunks, and exposes more of PP 8's gradient reduction (twice PP
# 16's bytes per GPU) beyond the last micro-batch's backward pass: it ranks PP 16 ahead, by 4.5 % and 5.4 %
CALCULON_ORDER = "plan ranks PP 16 ahead of PP 8 (5.05 s against 5.28 s; overlapped 4.26 against 4.50), Calculon " \
                 "PP 8 ahead (7.90 against 8.05 s; 5.89 against 6.23)"


@pytest.mark.parametrize("overlap", [False, True], ids=["no-overlap", "overlap"])
@pytest.mark.xfail(strict=True, reason=CALCULON_ORDER)
def test_calculon_ranks_the_layouts_as_plan_does(overlap):
    runs = {(r.pp, r.overlap): r for r in RUNS.CALCULON_405B}
    steps = {}
    for pp, dp in ((8, 256), (16, 128)):
        report = _best("llama3-405b", "h100", 16384, 16 * 2**20, 8192,
                       {"tp": 8, "pp": pp, "dp": dp, "fsdp": 1, "cp": 1},
                       parse(["hardware=datasheet", "optimizer=mixed-precision"]), tp_overlap=overlap)
        steps[pp] = report["best"].step.value
    calculon = {pp: Fraction(runs[(pp, overlap)].step_s) for pp in (8, 16)}
    assert (steps[8] < steps[16]) == (calculon[8] < calculon[16])


def test_overlap_shortens_the_step_as_in_calculon():
    runs = {(r.pp, r.overlap): Fraction(r.step_s) for r in RUNS.CALCULON_405B}
    for pp, dp in ((8, 256), (16, 128)):
        steps = [_best("llama3-405b", "h100", 16384, 16 * 2**20, 8192, {"tp": 8, "pp": pp, "dp": dp, "fsdp": 1, "cp": 1},
                       parse(["hardware=datasheet", "optimizer=mixed-precision"]), tp_overlap=o)["best"].step.value
                 for o in (False, True)]
        assert steps[1] < steps[0] and runs[(pp, True)] < runs[(pp, False)]
