"""plan's predictions against runs people published (tests/published_runs.py holds the tables with their
citations): the layout each paper ran, pinned, priced from the catalog's achievable rates with no tuning per run.

Issue 27 asks for each predicted throughput within 15 % of the published one. Where the prediction is not, the row
is a strict xfail whose reason gives both numbers, so the gap stays visible and a fix that closes it is noticed."""

from __future__ import annotations

import importlib.util
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from scalemath.catalog import hardware, models
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


# Llama 3 405B, Table 4: TFLOP/s per GPU as Meta prints them; Meta counts FLOPs as PaLM does, which it cites, so the
# prediction counts attention's causal dot products (the convention named), bf16 on H100 at the datasheet's peak
LLAMA_GAPS = {
    "8K GPUs, 8K context": "predicted 558 TFLOP/s per GPU against 430 published (+30 %)",
    "16K GPUs, 8K context": "predicted 499 TFLOP/s per GPU against 400 published (+25 %)",
    "16K GPUs, 128K context": "predicted 548 TFLOP/s per GPU against 380 published (+44 %)",
}


@pytest.mark.parametrize("row", [
    pytest.param(r, id=r.id, marks=pytest.mark.xfail(strict=True, reason=LLAMA_GAPS[r.id])) if r.id in LLAMA_GAPS
    else pytest.param(r, id=r.id) for r in RUNS.LLAMA3_TABLE4])
def test_llama3_table4(row):
    pins = {"tp": row.tp, "cp": row.cp, "pp": row.pp, "dp": row.dp, "fsdp": 1}
    report = _best(row.model, row.chip, row.gpus, row.seqs_per_dp * row.dp * row.seq_len, row.seq_len, pins,
                   parse(["attention=causal", "hardware=datasheet"]))
    predicted = report["achieved"]["flops_per_chip"] / 10**12
    assert abs(predicted / row.tflops_per_gpu - 1) <= WITHIN, (float(predicted), row.tflops_per_gpu)


# Megatron-LM, Table 1: achieved teraFLOP/s per GPU by the paper's Eq. 3 (full recomputation and attention over every
# position counted) over the predicted step. The run as Megatron-LM ran it in 2021: full recomputation (block),
# mixed-precision Adam with fp32 gradients, the interleaved schedule (Section 5.1), attention unfused (the scores in
# HBM; FlashAttention came in 2022), no sequence parallelism (Korthikanti et al. 2022 introduced it), the gradient
# all-reduce after the backward pass (its overlap came to Megatron-LM in 2023), and the GPT models' dropout (the
# framework's default; the paper does not print it)
MEGATRON_GAPS = {"megatron-gpt-310.1b": "+23 %", "megatron-gpt-529.6b": "+21 %", "megatron-gpt-1t": "+27 %"}


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
            "checkpointing": "block"}
    report = _best(row.model, row.chip, row.gpus, row.batch * seq, seq, pins,
                   parse(["optimizer=mixed-precision", "hardware=datasheet"]), attention_kernel="unfused",
                   dp_overlap=False, sequence_parallel=False, dropout=True)
    predicted = _eq3(row.batch, seq, row.layers, row.hidden, vocab) / Fraction(report["best"].step.value) \
        / row.gpus / 10**12
    assert abs(predicted / row.tflops_per_gpu - 1) <= WITHIN, (float(predicted), row.tflops_per_gpu)
