"""scalemath plan: the book's LLaMA-3 training chapter, GPU configurations, bad input."""

import json
import math

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.plan import parse_count


def plan(*args):
    result = CliRunner().invoke(main, ["plan", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_llama3_70b_on_a_v5p_pod_reproduces_applied_training():
    # applied-training.md: batch 4M = 1024 x 4096 tokens on 8960 v5p chips
    data = plan("--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "8960", "--batch-tokens", "1024*4096",
                "--tokens", "15T")
    schemes = {s["scheme"]: s for s in data["schemes"]}
    fsdp = schemes["FSDP"]
    # 4*1024*1024/8960 = 468 tokens per chip < 2550/3 = 850: FSDP alone is communication-bound
    assert round(fsdp["numbers"]["batch per chip"]["value"]) == 468
    assert fsdp["numbers"]["threshold"]["value"] == 850 and not fsdp["ok"]
    mixed = schemes["FSDP + tensor parallelism"]
    # 2550^2 / (2 * 28672) = 113 tokens per chip; X_opt = sqrt(2 * 4.19e6 * 8960 / 28672) = 1618
    assert round(mixed["numbers"]["threshold"]["value"]) == 113
    assert round(mixed["numbers"]["X_opt"]["value"]) == 1619
    assert mixed["mesh"] == {"X": 2048, "Y": 4} and mixed["ok"]
    assert data["recommended"]["chips_used"] == 8192
    # step time 6 P B / (N C MFU) with N = 8192 chips used, P = 70.55e9, MFU 0.4
    p = data["params"]["value"]
    assert math.isclose(data["step_time"]["value"], 6 * p * 4194304 / (8192 * 4.59e14 * 0.4), rel_tol=1e-12)
    assert math.isclose(data["training_time"]["value"], 6 * p * 15e12 / (8192 * 4.59e14 * 0.4), rel_tol=1e-12)


def test_gpu_plan_uses_pipeline_stages_across_nodes():
    data = plan("--model", "llama3-405b", "--chip", "h100", "--chips", "16384", "--batch-tokens", "16Mi")
    # gpus.md: pure FSDP across nodes needs 2475 tokens per GPU; 1024 is too few
    assert not data["schemes"][0]["ok"] and data["schemes"][0]["numbers"]["threshold"]["value"] == 2475
    assert "pipeline" in data["recommended"]["scheme"]
    mesh = data["recommended"]["mesh"]
    assert mesh["X"] * mesh["Y"] * mesh["Z"] == 16384 and mesh["Y"] == 8


def test_text_markdown_latex():
    args = ["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "8960", "--batch-tokens", "4Mi"]
    text = CliRunner().invoke(main, ["plan", *args]).output
    assert "recommended: FSDP + tensor parallelism" in text
    md = CliRunner().invoke(main, ["plan", *args, "--format", "markdown"]).output
    assert md.startswith("# Training plan") and "| scheme | works | why |" in md
    tex = CliRunner().invoke(main, ["plan", *args, "--format", "latex"]).output
    assert "\\toprule" in tex and "\\begin{itemize}" in tex


@pytest.mark.parametrize("text,expected", [
    ("4M", 4_000_000), ("4Mi", 4 * 2**20), ("15T", 15 * 10**12), ("8960", 8960), ("1024*4096", 4194304),
    ("2K", 2000),
], ids=["mega", "mebi", "tera", "plain", "product", "kilo"])
def test_counts(text, expected):
    assert parse_count(text, "x") == expected


@pytest.mark.parametrize("args,fragment", [
    (["--model", "llama3-7b", "--chip", "tpu-v5p", "--chips", "8", "--batch-tokens", "4M"], "did you mean"),
    (["--model", "llama3-70b", "--chip", "tpu-v5", "--chips", "8", "--batch-tokens", "4M"], "did you mean"),
    (["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "0", "--batch-tokens", "4M"], "positive whole"),
    (["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "32"], "smaller than --chips"),
    (["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "4M", "--mfu", "1.5"], "(0, 1]"),
    (["--model", "llama3-70b", "--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "4.5"], "positive whole"),
    (["--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "4M"], "--model"),
], ids=["model-typo", "chip-typo", "zero-chips", "batch-below-chips", "mfu", "fractional-batch", "no-model"])
def test_bad_input(args, fragment):
    result = CliRunner().invoke(main, ["plan", *args])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output
