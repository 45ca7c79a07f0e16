"""scalemath serve on a mixture of experts: a decode step reads only the experts its batch touches (issue 27).

Second route: plain arithmetic from the models' published dimensions and the chips' catalog figures. At batch B
each MoE layer reads, in expectation, E·(1 − (1 − k/E)^B) of its E experts (uniform, independent routing).
"""

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from scalemath import quantities
from scalemath.catalog import hardware
from scalemath.catalog.models import get_model
from scalemath.cli import main
from scalemath.quantities import Context

# Mixtral 8x7B, Jiang et al. 2024 (arXiv:2401.04088), Table 1: dim 4096, n_layers 32, head_dim 128,
# hidden_dim 14336, n_heads 32, n_kv_heads 8, vocab_size 32000, num_experts 8, top_k_experts 2 (SwiGLU experts)
MX = dict(D=4096, F=14336, L=32, N=32, K=8, H=128, V=32000, E=8, k=2)
MX_ATTENTION = 2 * MX["D"] * (MX["N"] + MX["K"]) * MX["H"]       # q, o (N heads) and k, v (K heads)
MX_EXPERT = 3 * MX["D"] * MX["F"]                                # gate, up and down of one SwiGLU expert
MX_LAYER = MX_ATTENTION + 2 * MX["D"] + MX["E"] * MX["D"]       # attention, two norms, the router: always read
MX_P = MX["L"] * (MX_LAYER + MX["E"] * MX_EXPERT) + 2 * MX["D"] * MX["V"]
MX_EXPERTS = MX["L"] * MX["E"] * MX_EXPERT                       # what routing can leave unread
MX_KV_TOKEN = 2 * MX["L"] * MX["K"] * MX["H"] * 2                # K and V, bf16


def serve(*args):
    result = CliRunner().invoke(main, ["serve", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def frac(value) -> Fraction:
    """An exact SymPy rational as a Fraction (without text: an exact value may have thousands of digits)."""
    return Fraction(int(value.p), int(value.q))


def _mixtral_read(b: int) -> Fraction:
    """Parameters one step of b tokens reads, by hand: everything but the expected unread experts."""
    touched = MX["E"] * (1 - Fraction(MX["E"] - MX["k"], MX["E"]) ** b)
    return MX_P - MX_EXPERTS + MX["L"] * touched * MX_EXPERT


# (batch, hand step in ms as the brief's hand count printed it: about 4.4 ms at 1 and 17.2 ms at 64)
MIXTRAL_ROWS = [(1, Fraction(2)), (8, 8 * (1 - Fraction(3, 4) ** 8)), (64, 8 * (1 - Fraction(3, 4) ** 64))]


@pytest.mark.parametrize("batch,touched", MIXTRAL_ROWS, ids=["batch-1", "batch-8", "batch-64"])
def test_mixtral_on_two_h100_by_hand(batch, touched):
    data = serve("--model", "mixtral-8x7b", "--chip", "h100", "--chips", "2", "--batch", str(batch),
                 "--context", "2176", "--prompt", "2048", "--generate", "128")
    h100 = hardware.get_chip("h100")
    W, C, n, S = h100.bandwidth("hbm"), h100.flops("bf16"), 2, 2176
    assert data["layout"] == "1D tensor parallel over 2" and data["step_quantity"] == "inference.moe.step_time_comms"
    # experts each MoE layer reads: k = 2 at batch 1, 8·(1 − (3/4)^B) after
    assert Fraction(data["experts"]["read_per_moe_layer"]["exact"]) == touched
    assert (data["experts"]["per_moe_layer"], data["experts"]["per_token"], data["experts"]["moe_layers"]) == (8, 2, 32)
    t_weights = _mixtral_read(batch) * 2 / (n * W)                   # bf16 weights, sharded over both GPUs
    t_kv = Fraction(batch * S * MX_KV_TOKEN, n * W)
    active = MX_P - MX_EXPERTS + MX["L"] * MX["k"] * MX_EXPERT
    t_math = Fraction(2 * batch * active, n * C)
    # two AllReduces of the bf16 [B, D] activations per layer over NVLink, each at least the catalog's floor
    volume = 2 * batch * MX["D"]
    per_ar = max(h100.nvlink_collective_latency_s, 2 * Fraction(volume * (n - 1), n * h100.nvlink_bytes_per_s))
    t_comms = 2 * MX["L"] * per_ar
    assert Fraction(data["parts"]["t_weights"]["exact"]) == t_weights
    assert Fraction(data["parts"]["t_comms"]["exact"]) == t_comms
    assert Fraction(data["step_time"]["exact"]) == t_kv + max(t_math, t_weights) + t_comms


@pytest.mark.parametrize("batch,low,high", [(1, Fraction(43, 10), Fraction(45, 10)),
                                            (64, Fraction(171, 10), Fraction(173, 10))], ids=["batch-1", "batch-64"])
def test_mixtral_matches_the_issues_hand_figures(batch, low, high):
    # issue 27's hand count: about 4.4 ms at batch 1 (14.5 ms before, every expert read) and about 17.2 ms at 64
    data = serve("--model", "mixtral-8x7b", "--chip", "h100", "--chips", "2", "--batch", str(batch),
                 "--context", "2176", "--prompt", "2048", "--generate", "128")
    assert low <= Fraction(data["step_time"]["exact"]) * 1000 <= high


# -- published parameter counts -----------------------------------------------------------------------------------

@pytest.mark.parametrize("model,batch,published,expected", [
    # Jiang et al. 2024, section 2: "each token has access to 47B parameters, but only uses 13B active parameters"
    ("mixtral-8x7b", 1, 13 * 10**9, MX_P - MX_EXPERTS + MX["L"] * MX["k"] * MX_EXPERT),
    ("mixtral-8x7b", 10**6, 47 * 10**9, MX_P),
], ids=["mixtral-one-token-13B", "mixtral-saturated-47B"])
def test_params_read_against_published_counts(model, batch, published, expected):
    read = quantities.evaluate(quantities.get("inference.moe.params_read"), Context(model=model), {"B": batch}).value
    assert abs(frac(read) - expected) < Fraction(1, 10**12) * expected
    assert abs(frac(read) - published) <= Fraction(1, 2) * 10**9      # printed to the billion


def test_deepseek_v3_at_batch_1_and_256():
    # DeepSeek-V3 Technical Report (arXiv:2412.19437), section 2 and 4.2: 61 layers, the first 3 dense; each MoE
    # layer 1 shared and 256 routed experts of intermediate size 2048, 8 routed per token; hidden size 7168;
    # abstract: "671B total parameters with 37B activated for each token"
    m = get_model("deepseek-v3")
    experts = 58 * 256 * 3 * 7168 * 2048
    assert m.expert_param_count() == experts
    assert abs(m.param_count() - 671 * 10**9) <= 10**9 // 2
    h200 = hardware.get_chip("h200")
    for batch, touched in ((1, Fraction(8)), (256, 256 * (1 - Fraction(31, 32) ** 256))):
        data = serve("--model", "deepseek-v3", "--chip", "h200", "--dtype", "fp8", "--chips", "8", "--batch",
                     str(batch), "--context", "4096")
        assert Fraction(data["experts"]["read_per_moe_layer"]["exact"]) == touched
        read = m.param_count() - experts + 58 * touched * 3 * 7168 * 2048
        assert Fraction(data["parts"]["t_weights"]["exact"]) == read * 1 / (8 * h200.bandwidth("hbm"))  # fp8
    # one token reads what it activates (the book's all-weights count); the published 37B leaves out the input
    # embedding table V·D, a lookup of B rows that the book's step reads in full
    one = m.param_count() - experts + 58 * 8 * 3 * 7168 * 2048
    assert one == m.active_param_count("all-weights")
    assert abs(one - 7168 * 129280 - 37 * 10**9) <= 10**9 // 2
    # at 256 tokens all but 256·(31/32)^256 = 0.076 experts per layer are read (a share (31/32)^256 = 2.95e-4 of
    # the routed experts unread): within 0.03 % of every weight, and below it
    assert Fraction(9997, 10000) * m.param_count() / (8 * h200.bandwidth("hbm")) < \
        Fraction(data["parts"]["t_weights"]["exact"]) < m.param_count() / (
        8 * h200.bandwidth("hbm"))


def test_prefill_reads_every_expert_and_is_priced_as_before():
    data = serve("--model", "mixtral-8x7b", "--chip", "h100", "--chips", "2", "--batch", "1", "--context", "2176",
                 "--prompt", "2048", "--generate", "128")
    # 2048 tokens: (3/4)^2048 < 10^-255; the form stops the exponent at B_sat = 40·⌈E/k⌉ = 160, (3/4)^160 < 10^-19
    assert 8 - Fraction(data["experts"]["read_at_prefill"]["exact"]) == 8 * Fraction(3, 4) ** 160
    active = MX_P - MX_EXPERTS + MX["L"] * MX["k"] * MX_EXPERT
    h100 = hardware.get_chip("h100")
    assert Fraction(data["prefill_time"]["exact"]) == Fraction(2 * active * 2048, 2 * h100.flops("bf16")) * 2  # MFU 1/2


def test_the_report_says_how_many_experts_a_layer_reads():
    args = ["serve", "--model", "mixtral-8x7b", "--chip", "h100", "--chips", "2", "--batch", "1", "--context", "2176",
            "--prompt", "2048", "--generate", "128"]
    text = CliRunner().invoke(main, args).output
    assert "experts read: 2 of 8 per MoE layer at batch 1" in text and "prefill's 2048 tokens read 8" in text
    assert "E_read = 2 expert" in text and "uniform" in text
    markdown = CliRunner().invoke(main, args + ["--format", "markdown"]).output
    assert "experts read: 2 of 8 per MoE layer at batch 1" in markdown


def test_a_dense_model_is_unchanged():
    data = serve("--model", "llama3-70b", "--chip", "tpu-v5e", "--dtype", "int8", "--batch", "32", "--context", "8192")
    assert data["experts"] is None and data["step_quantity"] == "inference.decode.step_time_comms"
    # the touched-experts forms reduce to the book's for a dense model: E = k = 1, P_exp = 0
    ctx = Context(model="llama3-70b", chip="tpu-v5e", dtype="int8")
    given = {"B": 32, "S": 8192, "n_dev": 8, "t_comms": Fraction(96, 100_000)}
    moe = quantities.evaluate(quantities.get("inference.moe.step_time_comms"), ctx, given).value
    assert quantities.evaluate(quantities.get("inference.moe.params_read"), ctx, {"B": 32}).value == 70_553_698_304
    book = quantities.evaluate(quantities.get("inference.decode.step_time_comms"), ctx, given).value
    assert moe == book


MOE_MODELS = ["mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "llama4-maverick", "gpt-oss-120b"]


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MOE_MODELS), b1=st.integers(1, 5000), extra=st.integers(0, 10**7))
def test_bytes_read_grow_with_the_batch_and_stay_under_every_expert(model, b1, extra):
    ctx = Context(model=model)
    q = quantities.get("inference.moe.params_read")
    low, high = (frac(quantities.evaluate(q, ctx, {"B": b}).value) for b in (b1, b1 + extra))
    m = get_model(model)
    assert m.active_param_count("all-weights") <= low <= high <= m.param_count()


def test_brute_force_picks_the_same_mixture_winner():
    """A plain loop over a small Mixtral space (tensor and expert parallel on 2 and 4 H100), every candidate
    evaluated exactly with the touched-experts step; the vectorised search must pick the same."""
    from scalemath.search import serve_space as search

    ctx = Context(chip="h100", dtype="bf16", weight_dtype="bf16", model="mixtral-8x7b")
    m, c = ctx.get_model(), ctx.get_chip()
    slices, kv, limit = [("2", 2), ("4", 4)], m.kv_elements_per_token() * 2, Fraction(9, 1000)
    space = search.build(ctx, c, m, slices, ["bf16"], ["bf16"], [kv], 8192, None, True)
    search.evaluate(ctx, c, space, 8192, 2048, 512, Fraction(1, 2), "critical", limit)
    _, ranked = search.rank(space, "throughput", limit)
    best = None
    for lay in search.layouts(c, m, slices):
        fits = quantities.evaluate(quantities.get("inference.memory.max_batch"), ctx,
                                   {"S": 8192, "n_dev": lay.n, "kv_token": kv}).value
        name = search.comm_quantity(lay.kind, True)
        params = {p.name for p in quantities.get(name).params}
        for b in range(1, int(fits) + 1):
            point = {**lay.point(), "B": b, **search.comm_fixed(c)}
            comm = quantities.evaluate(quantities.get(name), ctx, {k: v for k, v in point.items() if k in params})
            step = frac(quantities.evaluate(quantities.get("inference.moe.step_time_comms"), ctx, {
                "B": b, "S": 8192, "n_dev": lay.n, "kv_token": kv, "t_comms": comm.value}).value)
            if step > limit:
                continue
            key = (-Fraction(b) / (lay.n * step), lay.n, step, b)
            if best is None or key < best[0]:
                best = (key, lay, b)
    winner = int(ranked[0])
    assert {lay.kind for lay in search.layouts(c, m, slices)} == {"tp", "ep"}
    assert (space.layouts[int(space.layout[winner])], int(space.batch[winner])) == (best[1], best[2])
