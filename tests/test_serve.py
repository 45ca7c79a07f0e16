"""scalemath serve: topology search, decode step, throughput, cost, trade-off table, bad input."""

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.cli import main

P70 = 70_553_698_304           # LLaMA-3 70B parameters (its public config)
KV70 = 2 * 80 * 8 * 128        # cached elements per token: 2 (K and V) x L x K x H


def serve(*args):
    result = CliRunner().invoke(main, ["serve", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_llama3_70b_int8_on_v5e_by_hand():
    data = serve("--model", "llama3-70b", "--chip", "tpu-v5e", "--dtype", "int8", "--batch", "32", "--context", "8192")
    # second route: search the v5e slices directly; weights 1 byte/param, int8 KV cache
    need = P70 + 32 * 8192 * KV70
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    chips = next(n for n in sizes if n * 16_000_000_000 >= need)
    assert (data["topology"], data["chips"]) == ("2x4", chips) == ("2x4", 8)
    # the book's step model: KV load + max(compute, weight load), all per chip over 8 chips
    t_kv = Fraction(32 * 8192 * KV70, 8 * 820_000_000_000)
    t_w = Fraction(P70, 8 * 820_000_000_000)
    t_c = Fraction(2 * 32 * P70, 8 * 197_000_000_000_000)
    book = t_kv + max(t_w, t_c)
    # plus the collectives (inference.md F7.14, F7.23): 4 per layer (AllGather + ReduceScatter around attention and
    # around the MLP) of the bf16 [32, 8192] activations over the 2x4 slice's 2 axes, each at least the hop latency
    # of floor(2/2) + floor(4/2) = 3 hops of 1 us; the bandwidth term 2*32*8192 B / (2 x 9e10 B/s) = 2.9 us is smaller
    per_collective = max(Fraction(3, 10**6), Fraction(2 * 32 * 8192, 2 * 90_000_000_000))
    step = book + 4 * 80 * per_collective
    assert Fraction(data["step_time"]["exact"]) == step
    assert Fraction(data["parts"]["t_comms"]["exact"]) == 4 * 80 * per_collective == Fraction(96, 100_000)
    assert data["bound"] == "t_weights"
    # --comms none is the book's F7.11 (what serve reported before the collectives were counted)
    none = serve("--model", "llama3-70b", "--chip", "tpu-v5e", "--dtype", "int8", "--batch", "32", "--comms", "none")
    assert Fraction(none["step_time"]["exact"]) == book and none["comms"]["t_comms"] is None
    assert Fraction(data["throughput_per_chip"]["exact"]) == 32 / (8 * step)
    # inference.md: int8 weights with bf16 compute become compute-bound at about 120 tokens
    assert round(data["critical_batch"]["value"]) == 120
    # cost: 8 chips x $1.20/h for 32 tokens per step
    assert Fraction(data["cost_cents_per_million_tokens"]["exact"]) == Fraction(10**6 * 8 * 120) * step / (32 * 3600)


def test_trade_off_table_grows_in_both_directions():
    data = serve("--model", "llama3-70b", "--chip", "h100", "--chips", "8", "--batch", "64")
    steps = [row["step_time"]["value"] for row in data["sweep"]]
    rates = [row["tokens_per_s_per_chip"]["value"] for row in data["sweep"]]
    assert steps == sorted(steps) and rates == sorted(rates)
    assert data["sweep"][-1]["batch"] <= data["max_batch"]


def test_formats():
    args = ["--model", "llama3-70b", "--chip", "tpu-v5e", "--dtype", "int8"]
    assert "latency-throughput trade-off" in CliRunner().invoke(main, ["serve", *args]).output
    assert CliRunner().invoke(main, ["serve", *args, "--format", "markdown"]).output.startswith("# Serving")
    assert "\\toprule" in CliRunner().invoke(main, ["serve", *args, "--format", "latex"]).output


def test_tensor_parallel_limits_say_what_they_are():
    """The limits are the largest useful tensor-parallel degrees, in chips, and the text says so with the same
    numbers as the JSON (the line was "compute-bound (F8.11) 13.1; memory-bound at batch 104 (F7.14) 15.13")."""
    args = ["--model", "llama3-8b", "--chip", "tpu-v5e", "--topology", "2x4"]
    text = CliRunner().invoke(main, ["serve", *args]).output
    limits = serve(*args)["tp_limits"]
    line = next(x for x in text.splitlines() if x.startswith("tensor parallelism"))
    compute, memory, latency = (f"{limits[k]['value']:.4g}" for k in ("compute_bound", "memory_bound", "latency_bound"))
    assert line.startswith(f"tensor parallelism (8-way here): the largest useful degree is {compute} chips when "
                           f"decode is compute-bound (F8.11) and {memory} chips when it is memory-bound"), line
    assert f"above {latency} chips the collectives" in line and "latency-bound" in line

@pytest.mark.parametrize("args,code,fragment", [
    (["--model", "llama3-70b", "--chip", "tpu-v5e", "--dtype", "int8", "--topology", "2x2"], 1,
     "the smallest topology that fits is 2x4"),
    (["--model", "llama3-70b", "--chip", "tpu-v5e", "--context", "16384"], 2, "longer than llama3-70b allows"),
    (["--model", "llama3-70b", "--chip", "tpu-v5e", "--batch", "0"], 2, "at least 1"),
    (["--model", "llama3-70b", "--chip", "tpu-v5e", "--topology", "4xx"], 2, "slice shape"),
    (["--model", "llama3-70b", "--chip", "v100", "--dtype", "bf16"], 2, "no bf16 rate"),
    (["--model", "llama3-70b", "--chip", "tpu-v5e", "--topology", "2x4", "--chips", "8"], 2, "not both"),
    (["--chip", "tpu-v5e"], 2, "--model"),
], ids=["does-not-fit", "context-too-long", "zero-batch", "bad-topology", "dtype-missing", "both", "no-model"])
def test_bad_input(args, code, fragment):
    result = CliRunner().invoke(main, ["serve", *args])
    assert result.exit_code == code, result.output
    assert fragment in result.output and "Traceback" not in result.output
