"""The GPU collective, SHARP, ragged AllToAll, serving breakdown and speculative decoding figures: their plotted
points against plain-Python arithmetic from published figures (H100: 450 GB/s NVLink egress, 50 GB/s per NIC, 8 per
node; the catalog's 8 µs collective floors) and the book's worked answers; every kind written as PNG, SVG and PDF;
bad options one line."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from scalemath import quantities as Q
from scalemath.catalog import hardware, models
from scalemath.cli import main
from scalemath.errors import BadValueError
from scalemath.plots import gpu_collective, serving

CATALOG = hardware.default_catalog()
MODELS = models.default_models()
W_GPU, W_NODE, FLOOR = 450e9, 8 * 50e9, 8e-6  # H100: NVLink egress, node egress (8 x 400 Gb/s NICs), floors


def ctx(chip="h100", **kw):
    return Q.Context(chip=chip, catalog=CATALOG, model_catalog=MODELS if kw.get("model") else None,
                     **{"dtype": "bf16", **kw})


def close(a, b, rel=1e-9):
    return math.isclose(float(a), float(b), rel_tol=rel)


# -- GPU collectives: max(floor, bytes over bandwidth), in a node and across nodes ---------------------

HAND = {  # per byte, by hand: a ring moves (N-1)/N of V per step pattern; across nodes the slower level
    "all-gather": (lambda n: (n - 1) / (n * W_GPU), lambda m: max(1 / W_GPU, 1 / W_NODE)),
    "reduce-scatter": (lambda n: (n - 1) / (n * W_GPU), lambda m: max(1 / W_GPU, 1 / W_NODE)),
    "all-reduce": (lambda n: 2 * (n - 1) / (n * W_GPU), lambda m: 2 * max(1 / W_GPU, 1 / W_NODE)),
    "all-to-all": (lambda n: (n - 1) / (n * n * W_GPU), lambda m: (m - 1) / (m * m * W_NODE)),
}


@pytest.mark.parametrize("collective", list(HAND), ids=list(HAND))
@pytest.mark.parametrize("gpus, nodes", [(None, 4), (4, 2)], ids=["node-of-8", "4-gpus-2-nodes"])
def test_gpu_collective_points_by_hand(collective, gpus, nodes):
    fig = gpu_collective.data(ctx(), collective, gpus, nodes)
    n = gpus or 8
    inside, across = HAND[collective]
    for x, t in zip(fig.meta["sizes"], fig.meta["inside"]):
        assert close(t, max(FLOOR, x * inside(n)))
    for x, t in zip(fig.meta["sizes_across"], fig.meta["across"]):
        assert close(t, max(FLOOR, x * across(nodes)))
    assert close(fig.meta["crossover_inside"], FLOOR / inside(n))
    assert close(fig.meta["crossover_across"], FLOOR / across(nodes))
    assert fig.meta["crossover_inside"] in fig.meta["sizes"]  # the corner is drawn, not cut


def test_allreduce_bus_bandwidth_tops_out_at_nvlink_egress():
    # gpus.md: nccl-tests' busBW = 2 (N-1)/N x V / t; the model reaches the full 450 GB/s for large messages
    # (the book measures about 370 GB/s, only near 10 GB per device: the catalog's achievable figure)
    fig = gpu_collective.data(ctx(), "all-reduce")
    assert close(fig.meta["bus"][-1], W_GPU)
    x, t = fig.meta["sizes"][0], fig.meta["inside"][0]
    assert close(fig.meta["bus"][0], 2 * 7 / 8 * x / t)


def test_sharp_against_ring_by_hand():
    fig = gpu_collective.sharp_data(ctx())
    assert fig.meta["speedup"] == pytest.approx(2 * 7 / 8)  # gpus.md: SHARP saves the (N-1)/N twice over
    for x, t in zip(fig.meta["sizes_sharp"], fig.meta["sharp"]):
        assert close(t, max(FLOOR, x / W_GPU))
    for x, t in zip(fig.meta["sizes_ring"], fig.meta["ring"]):
        assert close(t, max(FLOOR, 2 * 7 * x / (8 * W_GPU)))
    assert close(fig.meta["crossover_sharp"], FLOOR * W_GPU)  # 3.6 MB


@pytest.mark.parametrize("n, k, approx, exact", [
    (8, 4, 0.4375, 0.3621), (8, 8, 0.875, 0.5743), (16, 8, 0.4688, 0.3781),
], ids=["Z=8,K=4", "Z=8,K=8", "Z=16,K=8"])
def test_ragged_factors_are_the_worked_answers(n, k, approx, exact):
    # worked/part4-gpus.yaml gpus-ex33 (Appendix B): min(K/Z, 1)(Z-1)/Z against (1 - ((Z-1)/Z)^K)(Z-1)/Z;
    # the plotted time is that factor times V / (Z W)
    nbytes = 2**30
    fig = gpu_collective.ragged_data(ctx(), n, nbytes)
    i = fig.meta["k"].index(k)
    unit = nbytes / (n * W_GPU)
    assert float(fig.meta["approx"][i]) / unit == pytest.approx(approx, abs=1e-4)
    assert float(fig.meta["exact"][i]) / unit == pytest.approx(exact, abs=1e-4)
    assert close(fig.meta["dense"], nbytes * (n - 1) / (n * n * W_GPU))


@pytest.mark.parametrize("make", [gpu_collective.data, gpu_collective.sharp_data, gpu_collective.ragged_data],
                         ids=["collective", "sharp", "ragged"])
def test_gpu_figures_refuse_a_tpu(make):
    with pytest.raises(BadValueError, match="not a GPU"):
        make(ctx("tpu-v5e"))


# -- the serving breakdown: parameters, KV caches, FLOPs ---------------------------------------------

def test_serving_breakdown_llama3_70b_by_hand():
    # LLaMA 3-70B: L = 80, K = 8, H = 128 (bf16 KV: 2 L K H x 2 bytes = 327,680 bytes per token); about
    # 70.6e9 parameters (the book rounds to 70e9); H100: 3.35e12 B/s HBM, 990e12 bf16 FLOP/s; 8 chips
    fig = serving.breakdown_data(ctx(model="llama3-70b"), 8, 8192)
    P, kv, S, n = 70.55e9, 2 * 80 * 8 * 128 * 2, 8192, 8
    parts = fig.meta["parts"]
    for i, b in enumerate(fig.meta["batch"]):
        t_w, t_kv, t_math = (parts[q][i] for q, _ in serving.PARTS)
        assert float(t_w) == pytest.approx(2 * P / (n * 3.35e12), rel=0.01)
        assert close(t_kv, b * S * kv / (n * 3.35e12))
        assert float(t_math) == pytest.approx(2 * P * b / (n * 990e12), rel=0.01)
        assert close(fig.meta["step_time"][i], t_kv + max(t_math, t_w))
    bars = fig.panels[1]
    assert bars.values[-1] == fig.meta["step_time"][fig.meta["batch"].index(fig.meta["at"])]


def test_serving_breakdown_refuses_a_batch_that_does_not_fit():
    with pytest.raises(BadValueError, match="fit"):
        serving.breakdown_data(ctx(model="llama3-70b"), 8, 8192, 10**6)


# -- speculative decoding -----------------------------------------------------------------------------

def _speedup(a, g, c):
    return (1 - a ** (g + 1)) / (1 - a) / (1 + g * c)


def test_speculative_points_by_hand():
    fig = serving.speculative_data("0.05", (1, 4, 8))
    for g, ys in fig.meta["by_alpha"].items():
        for a, y in zip(fig.meta["alphas"], ys):
            assert close(y, _speedup(float(a), g, 0.05))


def test_speculative_best_depth_near_the_books_chinchilla_figure():
    # inference.md Appendix D (worked inference-appD-spec-depth): Chinchilla 70B with a 4B drafter works
    # best at 3-4 drafted tokens on XSum; with c = 4/70 the model's best depth is 4 at α = 0.6 (α our choice)
    fig = serving.speculative_data("4/70", (1,), ("0.6",))
    ys = next(iter(fig.meta["by_draft"].values()))
    assert max(range(8), key=lambda i: ys[i]) + 1 == 4


# -- the commands: every format, and bad options ------------------------------------------------------

COMMANDS = {
    "collective-h100": ["collective", "--chip", "h100", "--collective", "all-reduce"],
    "collective-b200-gather": ["collective", "--chip", "b200", "--gpus", "4"],
    "sharp": ["sharp", "--chip", "h100"],
    "ragged": ["ragged", "--chip", "h100", "--bytes", "1000000"],
    "serving": ["serving", "--model", "llama3-8b", "--chip", "h100", "--chips", "1", "--context", "4096"],
    "speculative": ["speculative", "--draft-cost", "1/20", "--drafts", "1,3", "--rates", "0.7"],
}


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_commands_write_every_format(name, suffix, tmp_path):
    out = tmp_path / f"f{suffix}"
    result = CliRunner().invoke(main, ["plot", *COMMANDS[name], "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG")
    elif suffix == ".pdf":
        assert data.startswith(b"%PDF-")
    else:
        ET.fromstring(data)


BAD = [
    (["collective", "--chip", "h100", "--ring", "4"], "is a GPU"),
    (["collective", "--chip", "tpu-v5e", "--gpus", "4"], "is a TPU"),
    (["sharp", "--chip", "tpu-v5e"], "not a GPU"),
    (["ragged", "--chip", "tpu-v5p"], "not a GPU"),
    (["sharp", "--chip", "a100"], "no NVSwitch with in-network reduction"),
    (["serving", "--model", "llama3-70b", "--chip", "h100", "--chips", "1"], "does not fit"),
    (["speculative", "--draft-cost", "x"], "not a number"),
    (["speculative", "--draft-cost", "2"], "at most 1"),
    (["speculative", "--drafts", "9"], "draft lengths 1 to 8"),
    (["speculative", "--rates", "1"], "below 1"),
]


@pytest.mark.parametrize("args, fragment", BAD, ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(BAD)])
def test_bad_options_one_line_exit_2(args, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["plot", *args, "--out", "x.png"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: ") and fragment in errors[0], result.stderr
    assert "Traceback" not in result.output and not list(tmp_path.iterdir())


# -- the book's figures ------------------------------------------------------------------------------

def test_serving_book_figure_is_the_books():
    # applied-inference.md, 'Visualizing the Latency Throughput Tradeoff' (reference part 8): LLaMA 3-70B,
    # int8 weights and KV, 16 TPU v5e: parameter load 70e9 / (16 x 8.2e11) = 5.34 ms at small batch (the exact
    # 70.55e9 parameters give 5.38 ms); at 8k context the largest batch is about 137, and its step 20.1 ms
    from scalemath.plots import book

    fig = book.make("serving-latency-breakdown", None, CATALOG, MODELS)
    weights = fig.meta["parts"]["inference.decode.t_weights"][0]
    assert float(weights) == pytest.approx(70.55e9 / (16 * 8.2e11), rel=1e-3)
    assert float(weights) == pytest.approx(5.34e-3, rel=0.01)
    assert abs(fig.meta["batch"][-1] - 137) <= 1
    assert float(fig.meta["step_time"][-1]) == pytest.approx(20.1e-3, rel=0.02)


@pytest.mark.parametrize("name", ["gpu-allreduce-bandwidth", "gpu-sharp-allreduce", "ragged-all-to-all"])
def test_gpu_book_figures_redraw_for_another_gpu_and_refuse_a_tpu(name):
    from scalemath.plots import book

    assert "B200" in book.make(name, ["b200"], CATALOG, MODELS).title
    with pytest.raises(BadValueError, match="not a GPU"):
        book.make(name, ["tpu-v5e"], CATALOG, MODELS)


# -- Pop Quiz 3: a collective over X of bf16[D_X, F_Y] against Y ---------------------------------------

def test_pop_quiz_3_against_the_worked_values():
    # worked/part4-gpus.yaml gpus-popquiz3 (D = 8192, F = 32768, 2DF = 536,870,912 bytes, one SU of 32 H100
    # nodes, 400 GB/s per node): Y = 16 -> 0.671 ms, 32 -> 0.336 ms, 64 -> 0.168 ms, i.e. 2DF / (Y x 50 GB/s);
    # for Y <= 8 the book's 2DF x 31 / (32 x 400e9) = 1.300 ms, where the engine's form (no ring factor) gives
    # 2DF / 400e9 = 1.342 ms (the book's own Y > 8 formula at Y = 8)
    from scalemath.plots import gpu_sharded

    fig = gpu_sharded.data(ctx())
    t = dict(zip(fig.meta["Y"], fig.meta["time"]))
    v = 2 * 8192 * 32768
    for y in (16, 32, 64):
        assert close(t[y], v / (y * 50e9))
    for y in (1, 2, 4, 8):
        assert close(t[y], v / 400e9) and float(t[y]) == pytest.approx(1.300e-3, rel=0.035)
    # from Y = 128 the form binds at the node term V / (8 W_gpu) = 149 µs, where the book's curve keeps falling
    # (83.9 µs at 128, 41.9 µs at 256): the book's F26 and its Pop Quiz 3 plot disagree above the node
    assert close(t[128], v / (8 * W_GPU)) and close(t[256], v / (8 * W_GPU))
    # the general tree form (gpu.fat_tree.sharded_time over one SU of 32 nodes) is the book's Y <= 8 value,
    # 2DF x 31 / (32 x 400e9) = 1.300 ms, and keeps its (D-1)/D above: 2DF x 31 x 8 / (32 x Y x 400e9)
    general = dict(zip(fig.meta["Y"], fig.meta["general"]))
    for y in fig.meta["Y"]:
        assert close(general[y], v * 31 * 8 / (32 * max(y, 8) * 400e9))
    assert float(general[1]) == pytest.approx(1.300e-3, rel=1e-3)
    assert float(general[128]) == pytest.approx(83.9e-6, rel=0.04)  # the book's 83.9 µs, less its 31/32


def test_pop_quiz_3_command_and_refusal(tmp_path):
    out = tmp_path / "s.svg"
    assert CliRunner().invoke(main, ["plot", "sharded", "--chip", "h100", "--out", str(out)]).exit_code == 0
    ET.fromstring(out.read_bytes())
    result = CliRunner().invoke(main, ["plot", "sharded", "--chip", "tpu-v5e", "--out", str(tmp_path / "x.png")])
    assert result.exit_code == 2 and "not a GPU" in result.stderr


def test_plotted_values_are_exact():
    import sympy as sp

    from scalemath.plots import gpu_sharded

    figs = [gpu_collective.data(ctx(), "all-reduce"), gpu_collective.sharp_data(ctx()), gpu_collective.ragged_data(ctx()),
            serving.breakdown_data(ctx(model="llama2-70b", weight_dtype="int8", kv_dtype="int8"), 4, 4096),
            serving.speculative_data("1/20"), gpu_sharded.data(ctx())]
    for fig in figs:
        for panel in fig.panels:
            values = panel.values if hasattr(panel, "values") else [y for s in panel.series for y in s.y]
            assert all(sp.sympify(v).is_Rational for v in values), fig.title
