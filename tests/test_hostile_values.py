"""Values that got past the parsers and then broke a command or gave a wrong answer (issue 24).

Each table holds one kind of fault; every row names the outcome exactly: the exit code and the words of
the one ``error:`` line, or the right answer. The classes: a non-real number (``sqrt(-1)``, and ``min``/``max``
of one) typed into any numeric channel; ``derive --format python`` with an irrational value or float
arguments; integers in a ``--hardware-file`` past what any chip has (past 2^63 they overflowed NumPy); a
``serve`` or ``shard`` slice that the chip's pod cannot form; ``plan --optimizer-bytes 0`` (plain SGD);
``--points`` in non-ASCII digits; figures of values no axis can show.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import subprocess
import sys
from fractions import Fraction
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main


def run(args, cwd: Path) -> tuple[int, str, str]:
    """The CLI in-process in ``cwd``: (exit code, stdout, stderr)."""
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(main, [str(a) for a in args], prog_name="scalemath")
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def assert_error(code: int, out: str, err: str, expected_code: int, fragments: tuple[str, ...]) -> None:
    """One ``error:`` line (or click's usage error) holding every fragment, and the expected exit code."""
    assert "internal error" not in out + err and "Traceback" not in out + err, err[-2000:]
    assert code == expected_code, (code, out[-500:], err[-1000:])
    lines = err.rstrip("\n").split("\n")
    if lines[0].startswith("Usage:"):  # click: usage, a hint to try --help, a blank line, the error
        lines = lines[3:]
    assert len(lines) == 1 and lines[0].startswith(("error: ", "Error: ")), err[:1000]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# -- 1. a non-real value in every numeric channel ---------------------------------------------------------

PLAN = ["plan", "--model", "llama3-8b", "--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "1Mi"]
SERVE = ["serve", "--model", "llama3-8b", "--chip", "tpu-v5e"]
I_FRAGMENT = ("'sqrt(-1)'", "is not a real number (it is I)")
NOT_REAL = {
    # SymPy's Max and Min raised ValueError ("not comparable") on I: an internal error on every channel
    "derive-set-min": (["derive", "matmul.t_math", "--set", "C=min(sqrt(-1)),W=1"], I_FRAGMENT),
    "derive-set-max-sum": (["derive", "matmul.t_math", "--set", "C=max(2*sqrt(-1)+1)"], I_FRAGMENT),
    "solve-set": (["solve", "matmul.t_math", "--for", "B", "--set", "D=max(sqrt(-1))", "--equals", "1"], I_FRAGMENT),
    "solve-equals": (["solve", "matmul.t_math", "--for", "B", "--equals", "max(sqrt(-1))"], I_FRAGMENT),
    "check-answer": (["check", "roofline.critical_intensity", "--chip", "h100", "max(sqrt(-1))"], I_FRAGMENT),
    "check-rel-tol": (["check", "roofline.critical_intensity", "--chip", "h100", "--rel-tol", "min(sqrt(-1))",
                       "590"], I_FRAGMENT),
    "check-expr-max": (["check", "matmul.t_math", "--expr", "max(B, D, sqrt(-B))"],
                       ("'sqrt(-B)'", "is not a real number (it is I*sqrt(B))")),
    # the names stand for positive numbers: sqrt(-B) is imaginary wherever it is evaluated (it reached the
    # counterexample's printing, which could not turn a complex number into a float)
    "check-expr-sqrt": (["check", "matmul.t_math", "--expr", "sqrt(-B)*D"],
                        ("'sqrt(-B)'", "is not a real number (it is I*sqrt(B))")),
    "table-set": (["table", "matmul.t_math", "--set", "B=max(sqrt(-1))"], I_FRAGMENT),
    "shard-set": (["shard", "A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--set", "I=max(sqrt(-1))"],
                  I_FRAGMENT),
    "plan-chips": ([*PLAN[:6], "max(sqrt(-1))", *PLAN[7:]], I_FRAGMENT),
    "plan-batch-tokens": ([*PLAN[:8], "max(sqrt(-1))"], I_FRAGMENT),
    "plan-tokens": ([*PLAN, "--tokens", "max(sqrt(-1))"], I_FRAGMENT),
    "plan-mfu": ([*PLAN, "--mfu", "min(sqrt(-1))"], I_FRAGMENT),
    "plan-optimizer-bytes": ([*PLAN, "--optimizer-bytes", "max(sqrt(-1))"], I_FRAGMENT),
    "serve-mfu": ([*SERVE, "--mfu", "max(sqrt(-1))"], I_FRAGMENT),
    "serve-max-latency": ([*SERVE, "--max-latency", "max(sqrt(-1)) ms"], I_FRAGMENT),
    "plot-training-set": (["plot", "training", "--chip", "tpu-v5p", "--chips", "8", "--model", "llama3-8b",
                           "--set", "M_X=max(sqrt(-1))", "--out", "t.png"], I_FRAGMENT),
    "plot-pareto-max-latency": (["plot", "pareto", "--chip", "tpu-v5e", "--model", "llama3-8b", "--max-latency",
                                 "max(sqrt(-1))ms", "--out", "p.png"], I_FRAGMENT),
    "plot-plan-chips": (["plot", "plan", "--chip", "tpu-v5p", "--model", "llama3-8b", "--chips", "max(sqrt(-1))",
                         "--batch-tokens", "1Mi", "--out", "p.png"], I_FRAGMENT),
}


@pytest.mark.parametrize("args,fragments", [pytest.param(*v, id=k) for k, v in NOT_REAL.items()])
def test_non_real_value_is_refused(args, fragments, tmp_path):
    assert_error(*run(args, tmp_path), 2, fragments)


def test_serve_mfu_below_floats_is_refused(tmp_path):
    """An exact --mfu of 1e-900 became the float 0 in the prefill times, then a division by zero (a RuntimeWarning,
    an internal error where warnings are errors); found by the expression fuzz."""
    assert_error(*run([*SERVE, "--mfu", "(1e-3)**300"], tmp_path), 2, ("--mfu 1e-900 must be from 10^-6 to 1",))


def test_plan_mfu_below_single_precision_is_refused(tmp_path):
    """plan ranks its candidates in float32: an --mfu below about 1e-37 overflowed the cast (RuntimeWarnings, an
    internal error where warnings are errors); found by the expression fuzz. Its floor is serve's, 10^-6."""
    assert_error(*run([*PLAN, "--mfu", "1e-40"], tmp_path), 2, ("--mfu 1e-40 must be from 10^-6 to 1",))


ARITY = {
    # sqrt(4, 1) read the 1 as SymPy's evaluate flag and answered 2; floor(B, 3) raised TypeError (internal error)
    "sqrt-two-arguments": (["derive", "matmul.t_math", "--set", "C=sqrt(4, 1)"], "'C=sqrt(4, 1)': sqrt() at column 1"),
    "floor-two-arguments": (["check", "matmul.t_math", "--expr", "floor(B, 3)"], "'floor(B, 3)': floor() at column 1"),
    "ceiling-three-arguments": (["solve", "matmul.t_math", "--for", "B", "--equals", "ceiling(1, 2, 3)"],
                                "'ceiling(1, 2, 3)': ceiling() at column 1"),
}


@pytest.mark.parametrize("args,fragment", [pytest.param(*v, id=k) for k, v in ARITY.items()])
def test_one_argument_functions_take_one(args, fragment, tmp_path):
    assert_error(*run(args, tmp_path), 2, (fragment, "takes one plain argument"))


NOT_REAL_ANSWERED = {
    # --set split at every comma, so max(2, 3) fell apart into 'C=max(2' and ' 3)'
    "set-max-of-two": (["derive", "roofline.critical_intensity", "--set", "C=max(2, 3),W=1"], 0,
                       "result: 3 FLOP/byte"),
    # real for B > D, imaginary below: the random point where it is imaginary is shown as a complex number
    "expr-sometimes-imaginary": (["check", "matmul.t_math", "--expr", "sqrt(B-D)"], 1,
                                 "yours=0 + 3.377940889*I"),
}


@pytest.mark.parametrize("args,code,expected", [pytest.param(*v, id=k) for k, v in NOT_REAL_ANSWERED.items()])
def test_values_near_the_non_real_are_answered(args, code, expected, tmp_path):
    got, out, err = run(args, tmp_path)
    assert (got, err) == (code, ""), (got, err)
    assert expected in out, out


# -- 2. derive --format python: runnable, exact for exact arguments, floats for floats -------------------

PYTHON = {
    # an irrational bound value crashed the printer (it read .p of sqrt(2)); its default is now math.sqrt(2)
    "irrational-default": (["matmul.t_math", "--set", "B=sqrt(2),C=4,D=1,F=1"], "matmul_t_math()",
                           math.sqrt(2) / 2, float),
    "irrational-sum-default": (["matmul.t_math", "--set", "B=2**(1/3),C=1+sqrt(3),D=8,F=1"], "matmul_t_math()",
                               2 * 2 ** (1 / 3) * 8 / (1 + math.sqrt(3)), float),
    # the docstring promises a float for float arguments: Fraction(2*B*D*F) turned B = 1.5 into Fraction(3, 2)
    "float-argument": (["matmul.t_math"], "matmul_t_math(B=1.5, C=2, D=3, F=2.5)", 11.25, float),
    # and a Fraction for ints: 1/b_x printed as plain Python division gave the float 0.5
    "reciprocal-exact": (["dot.intensity_limit", "--dtype", "bf16"], "dot_intensity_limit()", Fraction(1, 2),
                         Fraction),
}


@pytest.mark.parametrize("args,call,expected,kind", [pytest.param(*v, id=k) for k, v in PYTHON.items()])
def test_python_format_runs_and_keeps_its_promise(args, call, expected, kind, tmp_path):
    code, out, err = run(["derive", *args, "--format", "python"], tmp_path)
    assert code == 0, err
    namespace: dict = {}
    exec(compile(out, "<derived>", "exec"), namespace)  # our own generated code, not user text
    value = eval(call, namespace)
    assert type(value) is kind, (type(value), value, out)
    assert value == expected if kind is Fraction else math.isclose(value, expected, rel_tol=1e-12), (value, expected)


# -- 3. hardware files with figures no chip has -----------------------------------------------------------

def _blocks() -> dict[str, str]:
    """The packaged catalog's tables by header (``chips.tpu-v5e``), each as its text."""
    text = resources.files("scalemath.catalog").joinpath("hardware.toml").read_text(encoding="utf-8")
    parts = re.split(r"^\[([^\]\n]+)\]\n", text, flags=re.M)
    return {parts[i]: f"[{parts[i]}]\n{parts[i + 1]}" for i in range(1, len(parts), 2)}


def catalog_file(folder: Path, tables: tuple[str, ...], edits: dict[tuple[str, str], str]) -> Path:
    """A hardware file of the packaged ``tables`` with the line of each (table, key) replaced by ``key = value``."""
    blocks = _blocks()
    out = []
    for table in tables:
        block = blocks[table]
        for (where, key), value in edits.items():
            if where == table:
                block, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", block, flags=re.M)
                assert n == 1, (table, key)
        out.append(block)
    path = folder / "mine.toml"
    path.write_text("\n".join(out), encoding="utf-8")
    return path


TPU = ("chips.tpu-v5e",)
GPU = ("chips.h100", "switches.nvswitch-gen3", "switches.ib-ndr")
V5E = "chips.tpu-v5e"
PLAN_V5E = ["plan", "--model", "llama3-8b", "--chip", "tpu-v5e", "--chips", "64", "--batch-tokens", "1Mi"]
SHARD_V5E = ["shard", "A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--chip", "tpu-v5e", "--set",
             "I=64,J=64,K=64"]
BIG = {
    # (tables, edits, command, fragments of the error); every one was read without a word, and those marked
    # crashed: NumPy cannot hold integers past 2^63
    "flops-2^63": (TPU, {(V5E, "flops_per_s"): f"{{ bf16 = {2**63} }}"}, PLAN_V5E,
                   ("chip 'tpu-v5e', key 'flops_per_s'", "from 1 to 10^18 FLOP/s for bf16")),
    "hbm-10^29": (TPU, {(V5E, "hbm_bytes"): str(10**29)}, SERVE,  # crashed serve's batch grid
                  ("key 'hbm_bytes'", "must be a whole number from 1 to 10^15 bytes")),
    "hbm-2^64": (TPU, {(V5E, "hbm_bytes"): str(2**64)}, SERVE,
                 ("key 'hbm_bytes'", "must be a whole number from 1 to 10^15 bytes")),
    "torus-dims-2^64-plan": (TPU, {(V5E, "torus_dims"): str(2**64)}, PLAN_V5E,  # crashed
                             ("key 'torus_dims'", "from 1 to 8")),
    "torus-dims-2^64-shard": (TPU, {(V5E, "torus_dims"): str(2**64)}, SHARD_V5E,  # crashed
                              ("key 'torus_dims'", "from 1 to 8")),
    "torus-dims-against-pod": (TPU, {(V5E, "torus_dims"): "3"}, SERVE,
                               ("key 'pod_shape' = [16, 16] has 2 axes but torus_dims = 3",)),
    "pod-shape-2^64": (TPU, {(V5E, "pod_shape"): f"[{2**64}, 16]"}, SERVE,
                       ("key 'pod_shape'", "whose product is at most 10^9")),
    "hop-latency-2^63": (TPU, {(V5E, "hop_latency_ns"): str(2**63)}, SERVE, ("from 1 to 10^12 ns",)),
    "price-2^64": (TPU, {(V5E, "price_cents_per_hour"): str(2**64)}, [*SERVE, "--objective", "cost"],
                   ("key 'price_cents_per_hour'", "from 1 to 10^10 cents per hour")),
    "ici-link-2^64": (TPU, {(V5E, "ici_link_bytes_per_s"): str(2**64)}, SHARD_V5E,
                      ("key 'ici_link_bytes_per_s'", "from 1 to 10^16 bytes/s")),
    "switch-ports-2^64": (GPU, {("switches.ib-ndr", "ports"): str(2**64)},
                          ["plan", "--model", "llama3-8b", "--chip", "h100", "--chips", "64", "--batch-tokens", "1Mi"],
                          ("switch 'ib-ndr', key 'ports'", "from 1 to 10^9")),
}


@pytest.mark.parametrize("tables,edits,args,fragments", [pytest.param(*v, id=k) for k, v in BIG.items()])
def test_hardware_file_figures_beyond_any_chip_are_refused(tables, edits, args, fragments, tmp_path):
    path = catalog_file(tmp_path, tables, edits)
    assert_error(*run([*args, "--hardware-file", path], tmp_path), 1, ("mine.toml: ", *fragments))


def test_hardware_file_figures_at_the_bounds_are_read(tmp_path):
    """The bounds are generous: a chip at every one of them is still priced."""
    edits = {(V5E, "flops_per_s"): f"{{ bf16 = {10**18} }}", (V5E, "hbm_bytes"): str(10**15),
             (V5E, "hbm_bytes_per_s"): str(10**16), (V5E, "hop_latency_ns"): str(10**12)}
    path = catalog_file(tmp_path, TPU, edits)
    code, out, err = run([*SERVE, "--hardware-file", path, "--format", "json"], tmp_path)
    assert code == 0, err
    assert json.loads(out)["chip"] == "tpu-v5e"


def test_serve_batch_beyond_the_search_is_refused(tmp_path):
    """Petabytes of HBM on ten million GPUs hold more sequences of a tiny model than 64-bit integers count."""
    config = json.loads((Path(__file__).parent / "configs" / "llama3.1-8b.json").read_text())
    config.update(hidden_size=8, intermediate_size=16, num_attention_heads=1, num_key_value_heads=1,
                  num_hidden_layers=1, head_dim=8, vocab_size=16, max_position_embeddings=8)
    (tmp_path / "tiny.json").write_text(json.dumps(config))
    path = catalog_file(tmp_path, GPU, {("chips.h100", "hbm_bytes"): str(10**15)})
    args = ["serve", "--model-config", "tiny.json", "--chip", "h100", "--chips", "10000000", "--context", "1",
            "--prompt", "1", "--hardware-file", path]
    assert_error(*run(args, tmp_path), 2, ("the largest batch that fits in memory, 3.12e+20 sequences",
                                           "beyond the 10^18 the search counts to; pin one with --batch"))


# -- 4. slices the pod cannot form ------------------------------------------------------------------------

V5E_SLICES = "the slices the search tries: 1x1, 2x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"
V5E_POD = ("a tpu-v5e pod (16x16, 256 chips) cannot form that slice", "the largest slice is 16x16", V5E_SLICES)
V5P_POD = ("a tpu-v5p pod (16x20x28, 8960 chips) cannot form that slice", "no axis longer than the pod's longest")
SLICES = {
    # serve priced each of these on ICI as if the pod could form it; serve models one slice, never DCN
    "serve-32x32": ([*SERVE, "--topology", "32x32"], ("--topology 32x32: ", *V5E_POD)),
    "serve-16x17": ([*SERVE, "--topology", "16x17"], ("--topology 16x17: ", *V5E_POD)),
    "serve-32x8": ([*SERVE, "--topology", "32x8"], ("--topology 32x8: ", *V5E_POD)),  # 256 chips, not in a 16x16
    "serve-4x4x4x4": ([*SERVE, "--topology", "4x4x4x4"], ("--topology 4x4x4x4: ", *V5E_POD)),
    "serve-chips-10^7": ([*SERVE, "--chips", "10000000"], ("--chips 10000000 (a 3125x3200 slice): ", *V5E_POD)),
    "serve-chips-prime-side": ([*SERVE, "--chips", "254"], ("--chips 254 (a 2x127 slice): ", *V5E_POD)),
    "serve-v5p-4-axes": (["serve", "--model", "llama3-8b", "--chip", "tpu-v5p", "--topology", "4x4x4x4"],
                         ("--topology 4x4x4x4: ", *V5P_POD)),
    "serve-v5p-long-axis": (["serve", "--model", "llama3-8b", "--chip", "tpu-v5p", "--topology", "1x1x29"],
                            ("--topology 1x1x29: ", *V5P_POD)),
    "shard-slice-32x32": ([*SHARD_V5E, "--slice", "32x32"],
                          ("--slice 32x32: a tpu-v5e pod (16x16, 256 chips) cannot form that slice",)),
    "shard-slice-16x17": ([*SHARD_V5E, "--slice", "16x17"], ("--slice 16x17: a tpu-v5e pod",)),
    "shard-mesh-512": (["shard", "A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=16,Y=16,Z=2", "--chip", "tpu-v5e"],
                       ("the mesh has 512 devices, more than a tpu-v5e pod's 256 (16x16)",)),
}


@pytest.mark.parametrize("args,fragments", [pytest.param(*v, id=k) for k, v in SLICES.items()])
def test_slice_the_pod_cannot_form_is_refused(args, fragments, tmp_path):
    assert_error(*run(args, tmp_path), 2, fragments)


# -- 5. --optimizer-bytes 0: plain SGD keeps no optimizer state -------------------------------------------

ZERO_STATE = {
    # refused before with "b_opt = 0 must be positive", a symbol the user never typed
    "plan-text": ([*PLAN, "--optimizer-bytes", "0"], "optimizer 0 B, activations"),
    "plan-zero1": ([*PLAN, "--optimizer-bytes", "0", "--zero1"], "optimizer 0 B, activations"),
    "derive": (["derive", "transformer.optimizer_bytes", "--model", "llama3-8b", "--set", "b_opt=0"], "result: 0 B"),
}


@pytest.mark.parametrize("args,expected", [pytest.param(*v, id=k) for k, v in ZERO_STATE.items()])
def test_optimizer_bytes_zero_is_plain_sgd(args, expected, tmp_path):
    code, out, err = run(args, tmp_path)
    assert (code, err) == (0, ""), err
    assert expected in out, out


def test_optimizer_bytes_zero_in_json_is_no_memory(tmp_path):
    code, out, err = run([*PLAN, "--optimizer-bytes", "0", "--format", "json"], tmp_path)
    assert code == 0, err
    best = json.loads(out)["results"][0]
    assert best["memory"]["optimizer"] == {"exact": "0", "value": 0.0}, best["memory"]
    assert sum(int(best["memory"][k]["exact"]) for k in ("weights", "gradients", "activations")) == \
        int(best["memory_per_chip"]["exact"])


# -- 6. --points in ASCII digits only ---------------------------------------------------------------------

POINTS = {"arabic-indic": "٣", "fullwidth": "３", "in-a-list": "2,٣", "underscore": "1_0", "plus": "+3",
          "spaced-sign": " +3 "}  # int() read every one of these as a number


@pytest.mark.parametrize("value", [pytest.param(v, id=k) for k, v in POINTS.items()])
def test_points_are_ascii_digits(value, tmp_path):
    args = ["problems", "generate", "--topic", "roofline", "--n", "2", "--format", "json", "--out", "set",
            "--points", value]
    assert_error(*run(args, tmp_path), 2, ("--points", "(ASCII digits, e.g. 2 or 2,3,5)"))
    assert not (tmp_path / "set").exists()


# -- 7. figures of values no axis can show ----------------------------------------------------------------

FIGURES = {
    # an op with B=1e-300 has an intensity of 1e-300 FLOP/byte; B=1e-2000 made a grid of 13000 powers of two
    "roofline-op-tiny": (["plot", "roofline", "--chip", "h100", "--op", "matmul B=1e-300 D=1 F=1", "--out", "f.svg"],
                         ("its arithmetic intensity, 1e-300 FLOP/byte, is beyond what the roofline shows",
                          "(10^-25 to 10^25 FLOP/byte)")),
    # times of 1e300 s: matplotlib's log axis overflowed (a RuntimeWarning); 1e-100 s: its layout collapsed
    "training-mesh-tiny": (["plot", "training", "--chip", "tpu-v5p", "--chips", "64", "--model", "llama3-8b",
                            "--set", "M_X=1e-300", "--out", "f.svg"],
                           ("a value to draw, 2.61e297, is beyond what a figure can show (magnitudes 1e-30 to 1e30)",)),
    "training-mesh-huge": (["plot", "training", "--chip", "tpu-v5p", "--chips", "64", "--model", "llama3-8b",
                            "--set", "M_X=1e100", "--out", "f.svg"],
                           ("a value to draw, 2.61e-103, is beyond what a figure can show",)),
}


@pytest.mark.parametrize("args,fragments", [pytest.param(*v, id=k) for k, v in FIGURES.items()])
def test_figure_of_values_no_axis_shows_is_refused(args, fragments, tmp_path):
    assert_error(*run(args, tmp_path), 2, fragments)
    assert not (tmp_path / "f.svg").exists()


def test_roofline_of_a_huge_op_is_drawn_at_once(tmp_path):
    """floor(log(x, 2)) of a rational of 600 digits ran for minutes in SymPy (the intensity of matmul B=1e300
    is about D*F/(D+F)); a real process, so that a hang is stopped by the timeout."""
    args = ["plot", "roofline", "--chip", "h100", "--op", "matmul B=1e300 D=8192 F=8192", "--out", "f.svg"]
    proc = subprocess.run([sys.executable, "-m", "scalemath", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("wrote f.svg"), proc.stderr[-1000:]
