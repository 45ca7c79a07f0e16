"""Published memory figures, through the engine under the conventions they count by.

Each row cites where its figure is printed and compares the engine's exact value with it at the printed
precision: one unit of the last printed digit (the ZeRO paper's Table 1 cuts some entries rather than rounding
them, e.g. 4046.875 GB printed as 4046, so a half unit would refuse its own table). A second route, plain
arithmetic in the test, checks each engine value the paper does not print.

Sources:
* ZeRO: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models"
  (arXiv:1910.02054), Section 5.1-5.3 (the Figure 1 example) and Table 1 (p. 11).
* Korthikanti: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
  (arXiv:2205.05198), Equations 1, 2, 4, 6, Table 2, Section 5 and Table 3.
* Megatron: Megatron-LM's distributed-optimizer guide, https://docs.nvidia.com/megatron/dist-optimizer.md
  (bf16 parameters and fp32 gradients: 18 bytes per parameter, 6 + 12/d with the distributed optimizer).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
import sympy as sp
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.conventions import parse
from scalemath.quantities import Context, evaluate, get
from scalemath.symbolic.symbols import sym

GB = 10**9


def value(name: str, conventions: list[str], given: dict, ctx: Context | None = None) -> sp.Expr:
    ctx = dataclasses.replace(ctx or Context(), conventions=parse(conventions))
    return evaluate(get(name), ctx, given).value


def printed(ours, figure: str, scale=1) -> None:
    """``ours`` (exact) agrees with ``figure`` as printed, to one unit of its last printed digit."""
    unit = Fraction(1, 10 ** len(figure.partition(".")[2]))
    assert abs(Fraction(str(sp.Rational(ours) / scale)) - Fraction(figure)) < unit, (float(ours) / scale, figure)


# -- ZeRO ---------------------------------------------------------------------------------------------------------

ZERO_STAGES = {"P_os": "1", "P_os+g": "2", "P_os+g+p": "3"}
#: ZeRO paper, Table 1 (p. 11): GB per device by DP degree, for 7.5B, 128B and 1T parameters, each stage
ZERO_TABLE_1 = {
    75 * 10**8: {1: ("120", "120", "120"), 4: ("52.5", "41.3", "30"), 16: ("35.6", "21.6", "7.5"),
            64: ("31.4", "16.6", "1.88"), 256: ("30.4", "15.4", "0.47"), 1024: ("30.1", "15.1", "0.12")},
    128 * 10**9: {1: ("2048", "2048", "2048"), 4: ("896", "704", "512"), 16: ("608", "368", "128"),
            64: ("536", "284", "32"), 256: ("518", "263", "8"), 1024: ("513", "257", "2")},
    10**12: {1: ("16000", "16000", "16000"), 4: ("7000", "5500", "4000"), 16: ("4750", "2875", "1000"),
           64: ("4187", "2218", "250"), 256: ("4046", "2054", "62.5"), 1024: ("4011", "2013", "15.6")},
}
SIZE = {75 * 10**8: "7.5B", 128 * 10**9: "128B", 10**12: "1T"}
ZERO_ROWS = [(psi, nd, stage, figure) for psi, by_nd in ZERO_TABLE_1.items() for nd, figures in by_nd.items()
             for stage, figure in zip(ZERO_STAGES, figures)]


def _zero_hand(psi, nd, stage: str) -> Fraction:
    """The ZeRO paper's Section 5 by hand: 2 + 2 + K bytes with K = 12, the sharded ones over N_d."""
    psi, k = Fraction(psi), 12
    return {"0": (4 + k) * psi, "1": 4 * psi + k * psi / nd, "2": 2 * psi + (2 + k) * psi / nd,
            "3": (4 + k) * psi / nd}[stage]


@pytest.mark.parametrize("scheme", ["dp", "fsdp"])
@pytest.mark.parametrize("psi, nd, stage, figure", ZERO_ROWS,
                         ids=[f"zero-table1-{SIZE[p]}-Nd{n}-{s}" for p, n, s, _ in ZERO_ROWS])
def test_zero_table_1(psi, nd, stage, figure, scheme):
    """ZeRO paper, Table 1 (p. 11): model-state memory per device under each stage (optimizer=zero-paper)."""
    ours = value(f"parallel.memory_per_device.{scheme}", ["optimizer=zero-paper", f"zero={ZERO_STAGES[stage]}"],
                 {"P": psi, "X": nd, "A_act": 0, "b_w": 2})
    assert ours == _zero_hand(psi, nd, ZERO_STAGES[stage])
    printed(ours, figure, GB)


@pytest.mark.parametrize("stage, figure", [("0", "120"), ("1", "31.4"), ("2", "16.6"), ("3", "1.9")],
                         ids=["zero-fig1-baseline-120GB", "zero-fig1-Pos-31.4GB", "zero-fig1-Pos+g-16.6GB",
                              "zero-fig1-Pos+g+p-1.9GB"])
def test_zero_figure_1(stage, figure):
    """ZeRO paper, Figure 1 and Sections 5.1-5.3: Ψ = 7.5B, N_d = 64, K = 12."""
    ours = value("parallel.memory_per_device.dp", ["zero-paper", f"zero={stage}"],
                 {"P": 75 * 10**8, "X": 64, "A_act": 0, "b_w": 2})
    assert ours == _zero_hand(75 * 10**8, 64, stage)
    printed(ours, figure, GB)


def test_fsdp_keeps_the_books_number_unless_a_convention_is_chosen():
    """The book's FSDP shards weights and optimizer state (no gradients): 14Ψ/N_d = 1.64 GB with K = 12; the
    ZeRO paper's convention counts the gradients too (1.875 GB, printed 1.9)."""
    given = {"P": 75 * 10**8, "X": 64, "A_act": 0, "b_w": 2}
    assert value("parallel.memory_per_device.fsdp", [], given | {"b_opt": 12}) == Fraction(14 * 75 * 10**8, 64)
    assert value("parallel.memory_per_device.fsdp", ["optimizer=zero-paper"], given) == Fraction(16 * 75 * 10**8, 64)
    assert value("parallel.memory_per_device.fsdp", ["zero=3"], given | {"b_g": 2, "b_opt": 12}) == \
        Fraction(16 * 75 * 10**8, 64)


def test_zero_stages_over_the_tensor_parallel_shard():
    """fsdp_tp under a stage: the ZeRO forms over Ψ = P/Y per data-parallel rank, activations over X·Y."""
    got = value("parallel.memory_per_device.fsdp_tp", ["zero-paper", "zero=1"],
                {"P": 8 * 10**9, "X": 4, "Y": 8, "A_act": 64 * 10**9, "b_w": 2})
    assert got == 4 * 10**9 + 12 * 10**9 // 4 + 2 * 10**9


# -- Megatron's mixed precision and distributed optimizer ------------------------------------------------------------

@pytest.mark.parametrize("d", [1, 2, 8, 64, 1024], ids=lambda d: f"megatron-6+12/{d}")
def test_megatron_distributed_optimizer_bytes_per_parameter(d):
    """Megatron-LM's distributed-optimizer guide: bf16 parameters, fp32 gradients: 6 + 12/d bytes per parameter
    with the optimizer state sharded over d data-parallel ranks (ZeRO stage 1)."""
    per_param = value("parallel.memory_per_device.dp", ["optimizer=mixed-precision", "zero=1"],
                      {"P": 1, "X": d, "A_act": 0}, Context(weight_dtype="bf16"))
    assert per_param == 6 + Fraction(12, d)


@pytest.mark.parametrize("name, conventions, expected", [
    ("transformer.training_state_bytes_with_grads", ["optimizer=mixed-precision"], 18),
    ("transformer.training_state_bytes_with_grads", ["megatron"], 18),
    ("parallel.memory_per_device.dp", ["optimizer=mixed-precision", "zero=0"], 18),
    ("transformer.training_state_bytes_with_grads", ["optimizer=zero-paper"], 16),
    ("transformer.gradient_bytes", ["optimizer=mixed-precision"], 4),
    ("transformer.optimizer_bytes", ["optimizer=mixed-precision"], 12),
    ("transformer.optimizer_bytes", ["optimizer=zero-paper"], 12),
], ids=["megatron-18-non-distributed", "megatron-profile-18", "megatron-18-as-zero-stage-0", "zero-paper-16",
        "fp32-gradients-4", "master-and-moments-12", "zero-K-12"])
def test_bytes_per_parameter(name, conventions, expected):
    """Megatron-LM's guide (18 per parameter for bf16 parameters, fp32 gradients); ZeRO paper Section 3.1 (16)."""
    given = {"P": 1, "A_act": 0, "X": 1} if "memory_per_device" in name else {"P": 1}
    assert value(name, conventions, given, Context(weight_dtype="bf16")) == expected


def test_llama3_70b_tp8_dp8_distributed_optimizer():
    """LLaMA-3 70B on 64 GPUs, TP 8 × DP 8, Megatron's mixed precision with its distributed optimizer: the issue
    reports 67-68 GB per GPU (Megatron's formula and llm-analysis). By hand: the parameters from the published
    shape, 6 + 12/8 bytes per parameter over the 8 TP ranks, and one 8192-token sequence per micro-batch with one
    checkpoint per layer split over TP (sequence parallelism) plus the 20 intermediates of the layer recomputed."""
    L, D, F, N, K, H, V = 80, 8192, 28672, 64, 8, 128, 128256
    P = L * (2 * D * N * H + 2 * D * K * H + 3 * D * F + 2 * D) + 2 * V * D + D
    given = {"P": P, "P_exp": 0, "B": 4 * 2**20, "D": D, "L": L, "n_dp": 8, "n_fsdp": 1, "n_tp": 8, "n_pp": 1,
             "n_ep": 1, "n_zero": 8, "n_mb": 64, "n_ckpt": 1, "r_remat": 1}
    ours = value("parallel.config.memory_per_device", ["optimizer=mixed-precision"], given, Context(dtype="bf16"))
    states = Fraction(P, 8) * (6 + Fraction(12, 8))
    activations = 2 * D * 8192 // 8 * (L + 20)
    assert ours == states + activations
    assert 67 * GB <= ours <= 68 * GB, float(ours) / GB


# -- Korthikanti et al. ----------------------------------------------------------------------------------------------

s, b, h, a, t, L_ = sp.symbols("s b h a t L", positive=True)
#: Table 2, "Activations memory, in bytes, per transformer layer", each row as printed (s, b, h, a, t)
TABLE_2 = {
    "": s * b * h * (34 + 5 * a * s / h),
    "_tp": s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
    "_tp_sp": s * b * h * (34 / t + 5 * a * s / (h * t)),
    "_tp_selective": s * b * h * (10 + 24 / t),
    "_tp_sp_selective": s * b * h * (34 / t),
    "_full": s * b * h * 2,
}


@pytest.mark.parametrize("suffix", TABLE_2, ids=[f"korthikanti-table2{x or '-no-parallelism'}" for x in TABLE_2])
def test_korthikanti_table_2(suffix):
    """Korthikanti et al., Table 2, each row: our form over L layers with s·b = B tokens, h = D, a = N, t = n_TP and
    16-bit activations (b_x = 2) is the printed row times L."""
    mine = get(f"transformer.activation_bytes_korthikanti{suffix}").derivation.expr
    ours = mine.subs({sym("B"): s * b, sym("D"): h, sym("N"): a, sym("T"): s, sym("n_tp"): t, sym("L"): L_,
                      sym("b_x"): 2})
    assert sp.simplify(ours - TABLE_2[suffix] * L_) == 0


@pytest.mark.parametrize("conventions, suffix", [
    (["activations=korthikanti"], "_tp_sp"),
    (["activations=korthikanti", "recompute=selective"], "_tp_sp_selective"),
    (["activations=korthikanti,recompute=full"], "_full"),
    (["megatron"], "_full"),
], ids=["korthikanti-eq5", "korthikanti-eq6-selective", "korthikanti-full", "megatron-profile"])
def test_activation_bytes_takes_the_activations_axis(conventions, suffix):
    """transformer.activation_bytes under activations=korthikanti is Equation 5 (tensor and sequence parallel over
    n_TP, equal to Equation 1 at n_TP = 1), cut by the recompute axis (Equation 6; full: 2sbh)."""
    q = get("transformer.activation_bytes")
    assert q.under(parse(conventions)).expr == get(f"transformer.activation_bytes_korthikanti{suffix}").derivation.expr
    assert q.under(parse([])).expr == get("transformer.activation_bytes").derivation.expr  # the book's n_ckpt form


#: Table 3 (s = 2048, t = 8): heads, hidden size, layers, micro-batch
TABLE_3 = {"22B": (64, 6144, 48, 4), "175B": (96, 12288, 96, 1), "530B": (128, 20480, 105, 1),
           "1T": (160, 25600, 128, 1)}


@pytest.mark.parametrize("model, figure", [("175B", 80), ("530B", 64)],
                         ids=["korthikanti-sec5-gpt3-5as/h=80", "korthikanti-sec5-mtnlg-5as/h=64"])
def test_korthikanti_attention_term(model, figure):
    """Section 5: 5as/h = 80 for GPT-3 (a 96, s 2048, h 12288) and 64 for MT-NLG (a 128, s 2048, h 20480), read
    as the per-layer bytes over s·b·h without parallelism, less the 34."""
    heads, hidden, _, _ = TABLE_3[model]
    per_layer = value("transformer.activation_bytes_korthikanti", [], {"B": 2048, "D": hidden, "N": heads, "T": 2048,
                                                                        "L": 1}, Context(dtype="bf16"))
    assert per_layer / (2048 * hidden) - 34 == figure


@pytest.mark.parametrize("model, figure", [("175B", "70"), ("530B", "65")],
                         ids=["korthikanti-sec5-gpt3-saves-70%", "korthikanti-sec5-mtnlg-saves-65%"])
def test_korthikanti_selective_savings(model, figure):
    """Section 5: selective recomputation saves 70% (GPT-3) and 65% (MT-NLG) of the activation memory of
    Equation 5: one minus Equation 6 over Equation 5, at Table 3's shapes."""
    heads, hidden, layers, micro = TABLE_3[model]
    given = {"B": 2048 * micro, "D": hidden, "N": heads, "T": 2048, "L": layers, "n_tp": 8}
    ctx = Context(dtype="bf16")
    kept = value("transformer.activation_bytes_korthikanti_tp_sp", [], given, ctx)
    selective = value("transformer.activation_bytes_korthikanti_tp_sp_selective", [],
                      {k: v for k, v in given.items() if k not in ("N", "T")}, ctx)
    printed(100 * (1 - selective / kept), figure)


@pytest.mark.parametrize("model", TABLE_3, ids=[f"korthikanti-table3-{m}" for m in TABLE_3])
def test_korthikanti_table_3_models_by_hand(model):
    """Table 3's four models at t = 8, s = 2048: Equations 2, 5 and 6 and full recomputation (2sbhL) through the
    engine and by hand. The paper prints no byte totals for them (Figure 7 is a chart); its Section 6.1 says the
    two techniques together leave under 20% of Equation 2 and full recomputation about 10%."""
    heads, hidden, layers, micro = TABLE_3[model]
    sbh = 2048 * micro * hidden
    given = {"B": 2048 * micro, "D": hidden, "N": heads, "T": 2048, "L": layers, "n_tp": 8}
    ctx = Context(dtype="bf16")
    attention = Fraction(5 * heads * 2048, hidden)
    hand = {"_tp": sbh * layers * (10 + Fraction(24, 8) + attention / 8),
            "_tp_sp": sbh * layers * (34 + attention) / 8,
            "_tp_sp_selective": sbh * layers * Fraction(34, 8),
            "_full": 2 * sbh * layers}
    for suffix, expected in hand.items():
        q = get(f"transformer.activation_bytes_korthikanti{suffix}")
        names = {p.name for p in q.params}
        assert value(q.name, [], {k: v for k, v in given.items() if k in names}, ctx) == expected, suffix


# -- A_act = 0: model states only ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, out, code", [
    (["--set", "A_act=0"], "result: 1.641 GB", 0),
    (["--set", "A_act=-1"], "must be positive", 2),
], ids=["model-states-only", "negative-refused"])
def test_activation_bytes_zero_means_model_states_only(args, out, code):
    result = CliRunner().invoke(main, ["derive", "parallel.memory_per_device.fsdp", "--set", "P=7.5e9", "--set",
                                       "X=64", "--set", "b_w=2", "--set", "b_opt=12", *args])
    assert result.exit_code == code and out in result.output and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("conventions, given, chips", [
    ([], {"b_opt": 8}, 9),
    (["optimizer=mixed-precision"], {}, 16),
    (["optimizer=zero-paper"], {}, 14),
], ids=["book-10-bytes-9-h100s", "mixed-precision-18-bytes-16-h100s", "zero-paper-16-bytes-14-h100s"])
def test_fewest_chips_under_each_optimizer_convention(conventions, given, chips):
    """The GPU chapter's 70B on H100s (gpus.md: 10 bytes per parameter, 700 GB, at least 9 H100s); the same model
    under 18 and 16 bytes per parameter by hand: 18 x 70e9 / 80e9 = 15.75 -> 16, 16 x 70e9 / 80e9 = 14."""
    got = value("parallel.min_chips_memory", conventions, {"P": 70 * 10**9, "A_act": 0, **given},
                Context(chip="h100", weight_dtype="bf16"))
    assert got == chips
