"""The command line through click's CliRunner: every command and every bad-input case."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main


def run(*args, cwd=None):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_help_lists_commands():
    result = run("--help")
    assert result.exit_code == 0
    for command in ("derive", "solve", "hardware", "problems", "quantities"):
        assert command in result.output


def test_hardware_list_has_every_chip():
    result = run("hardware", "list")
    assert result.exit_code == 0
    for chip in ("tpu-v3", "tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x",
                 "v100", "a100", "h100", "h200", "b200", "gb200"):
        assert chip in result.output


def test_hardware_show_json_matches_catalog():
    result = run("hardware", "show", "tpu-v5e", "--format", "json")
    data = json.loads(result.output)
    assert data["flops_per_s"]["bf16"] == 197 * 10**12 and data["hbm_bytes_per_s"] == 82 * 10**10


def test_hardware_show_text():
    result = run("hardware", "show", "h100")
    assert result.exit_code == 0 and "3.35 TB/s" in result.output


def test_quantities_lists_names_and_units():
    result = run("quantities")
    assert "roofline.critical_intensity" in result.output and "[FLOP/byte]" in result.output
    data = json.loads(run("quantities", "--format", "json").output)
    names = {q["name"] for q in data}
    assert {"matmul.critical_batch", "pod.hosts", "transfer.time", "ici.p2p_time"} <= names


def test_derive_json_critical_intensity_v5e():
    # the acceptance example: ≈ 240.24, exact 9850/41 with the 8.2e11 bandwidth
    data = json.loads(run("derive", "roofline.critical_intensity", "--chip", "tpu-v5e", "--dtype", "bf16",
                          "--format", "json").output)
    assert data["exact"] == "9850/41"
    assert abs(data["value"] - 240.24) < 0.01
    assert data["given"] == {"C": 197 * 10**12, "W": 82 * 10**10}
    assert set(data) >= {"quantity", "unit", "expression", "latex", "given", "value", "exact", "steps", "source"}
    assert data["steps"][0]["why"]


def test_derive_latex_is_an_align_environment():
    out = run("derive", "matmul.critical_batch", "--chip", "tpu-v5e", "--set", "D=8192,F=32768",
              "--format", "latex").output
    assert "\\begin{align*}" in out and "\\end{align*}" in out and "&=" in out


def test_derive_symbolic_without_chip():
    out = run("derive", "matmul.intensity").output
    assert "result: 2*B*D*F/(B*D*b_x + B*F*b_o + D*F*b_w)" in out


@pytest.mark.parametrize("chip,expected", [
    # exact crossover 2BDF/C = (2BD + 2DF + 2BF)/W for D=8192, F=32768 (bf16)
    ("tpu-v5e", "161382400/647119"),
    ("h100", "81100800/262057"),
], ids=["tpu-v5e", "h100"])
def test_solve_exact_crossover(chip, expected):
    data = json.loads(run("solve", "matmul.t_math", "--for", "B", "--against", "matmul.t_comms",
                          "--chip", chip, "--set", "D=8192,F=32768", "--format", "json").output)
    assert data["exact"] == expected


def test_solve_against_many_chips_and_approximation():
    exact = json.loads(run("solve", "matmul.t_math", "--for", "B", "--against", "matmul.t_comms",
                           "--chip", "tpu-v5e,h100,b200", "--set", "D=8192,F=32768", "--format", "json").output)
    approx = json.loads(run("solve", "matmul.intensity_approx", "--for", "B",
                            "--against", "roofline.critical_intensity",
                            "--chip", "tpu-v5e,h100,b200", "--format", "json").output)
    assert [r["chip"] for r in exact] == ["tpu-v5e", "h100", "b200"]
    for e, a in zip(exact, approx):
        assert 1 < e["value"] / a["value"] < 1.1  # counting activations raises the threshold a little


def test_solve_equals_number():
    data = json.loads(run("solve", "matmul.intensity_approx", "--for", "B", "--equals", "240",
                          "--dtype", "bf16", "--format", "json").output)
    assert data["exact"] == "240"


@pytest.mark.parametrize("args,code,fragment", [
    (["derive", "roofline.critical_intensty"], 2, "did you mean 'roofline.critical_intensity'"),
    (["derive", "roofline.critical_intensity", "--chip", "tpu-v5"], 2, "did you mean"),
    (["derive", "roofline.critical_intensity", "--chip", "h10"], 2, "'h100'"),
    (["derive", "matmul.flops", "--set", "D"], 2, "NAME=VALUE"),
    (["derive", "matmul.flops", "--set", "D=__import__('os')"], 2, "calling a function"),
    (["derive", "matmul.flops", "--set", "D=0"], 2, "must be positive"),
    (["derive", "matmul.flops", "--set", "D=-5"], 2, "must be positive"),
    (["derive", "matmul.flops", "--set", "Q=5"], 2, "parameter of matmul.flops"),
    (["derive", "roofline.critical_intensity", "--chip", "v100", "--dtype", "bf16"], 2, "fp16, fp32"),
    (["derive", "roofline.critical_intensity", "--chip", "tpu-v5p", "--level", "vmem"], 2, "no vmem bandwidth"),
    (["derive", "roofline.critical_intensity", "--dtype", "bf17"], 2, "Invalid value"),
    (["solve", "matmul.t_math", "--for", "B"], 2, "exactly one of"),
    (["solve", "matmul.t_math", "--for", "Q", "--equals", "1"], 2, "symbol to solve for"),
    (["solve", "matmul.t_math", "--for", "B", "--equals", "1", "--set", "B=3"], 2, "do not also --set"),
    (["derive", "roofline.critical_intensity", "--hardware-file", "/nonexistent.toml"], 1, "cannot read"),
    (["problems", "generate", "--topic", "roofs"], 2, "did you mean 'roofline'"),
    (["problems", "generate", "--n", "0"], 2, "at least 1"),
    (["problems", "generate", "--format", "docx"], 2, "unknown format"),
], ids=["quantity-typo", "chip-typo", "chip-typo-2", "set-malformed", "set-hostile", "set-zero",
        "set-negative", "set-unknown-symbol", "dtype-missing-on-chip", "level-missing-on-chip",
        "dtype-unknown", "solve-no-target", "solve-unknown-symbol", "solve-unknown-also-set",
        "hardware-file-missing", "topic-typo", "n-zero", "format-unknown"])
def test_bad_input_is_one_clean_line(args, code, fragment):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == code, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_user_hardware_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('[chips.mychip]\nname = "My chip"\nfamily = "tpu"\nsource = "my lab"\n'
                    'hbm_bytes = 1000\nhbm_bytes_per_s = 1000\n[chips.mychip.flops_per_s]\nbf16 = 300000\n')
    data = json.loads(run("derive", "roofline.critical_intensity", "--chip", "mychip",
                          "--hardware-file", str(path), "--format", "json").output)
    assert data["exact"] == "300"


def test_generate_writes_folder_and_refuses_to_overwrite(tmp_path, monkeypatch):
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    # three generators without figures (a problem with one adds figures/), so the layout is the plain one
    args = ["problems", "generate", "--generator", "dot_product", "--generator", "matmul_bounds",
            "--generator", "tpu_memory_level", "--seed", "3", "--n", "3"]
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    folder = Path("output/dot_product-matmul_bounds-tpu_memory_level-seed3-n3")
    files = sorted(p.name for p in folder.iterdir())
    assert files == [".scalemath-set.json", "answers.json", "manifest.json", "problems.html", "problems.md",
                     "problems.tex", "solutions.html", "solutions.md", "solutions.tex"]
    same = runner.invoke(main, args)  # the same command again: the folder already holds this set
    assert same.exit_code == 0 and "unchanged; nothing written" in same.output, same.output
    (folder / "problems.md").write_text("my edits")
    again = runner.invoke(main, args)
    assert again.exit_code == 2 and "problems.md changed" in again.output and "move them" in again.output
    assert (folder / "problems.md").read_text() == "my edits"
    # an edited file is the user's now: --force refuses to replace it
    refused = runner.invoke(main, [*args, "--force"])
    assert refused.exit_code == 2 and "problems.md changed" in refused.output
    assert (folder / "problems.md").read_text() == "my edits"
    (folder / "problems.md").unlink()
    forced = runner.invoke(main, [*args, "--force"])
    assert forced.exit_code == 0 and (folder / "problems.md").read_text() != "my edits"


def test_generate_out_and_format(tmp_path):
    out = tmp_path / "set"
    result = run("problems", "generate", "--generator", "dot_product", "--generator", "matmul_bounds", "--n", "2",
                 "--format", "md,json", "--out", str(out))
    assert result.exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == [".scalemath-set.json", "answers.json", "manifest.json",
                                                     "problems.md", "solutions.md"]


@pytest.mark.parametrize("spelling", [
    pytest.param(["--generator", "dot_product,matmul_bounds"], id="comma-list"),
    pytest.param(["--generator", "dot_product", "--generator", "matmul_bounds"], id="repeated"),
    pytest.param(["--generator", " dot_product , matmul_bounds"], id="spaces"),
])
def test_generate_takes_generators_as_topics_are_taken(tmp_path, spelling):
    result = run("problems", "generate", *spelling, "--n", "2", "--format", "json", "--out", str(tmp_path / "set"))
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "set" / "manifest.json").read_text())
    assert sorted(p["generator"] for p in manifest["problems"]) == ["dot_product", "matmul_bounds"]


def test_generate_refuses_an_empty_generator_name(tmp_path):
    result = run("problems", "generate", "--generator", "dot_product,", "--out", str(tmp_path / "set"))
    assert result.exit_code == 2 and "a generator name is empty" in result.output, result.output


@pytest.mark.parametrize("n, variants, said", [
    ("1", None, "wrote 1 problem (set"), ("2", None, "wrote 2 problems (set"),
    ("1", "2", "wrote 2 variants of 1 problem (set"),
])
def test_generate_counts_in_words(tmp_path, n, variants, said):
    """One problem is "1 problem", not "1 problems"; and the second run says "this problem" for one."""
    args = ["problems", "generate", "--generator", "dot_product", "--n", n, "--format", "json",
            "--out", str(tmp_path / "set")] + (["--variants", variants] if variants else [])
    first, again = run(*args), run(*args)
    assert first.exit_code == 0 and said in first.output, first.output
    if n == "1" and variants is None:
        assert "already holds this 1 problem (set" in again.output, again.output

@pytest.mark.parametrize("fmt, mark", [("markdown", "- "), ("latex", "% ")])
def test_table_says_under_it_which_chips_it_left_out(fmt, mark):
    """Without --chip the table is the spec tables' chips that have what the quantity needs: H800 and TPU v2 (outside
    the tables) and V100 (no bf16 rate) are named under the table on stdout, once each, and stderr is empty (only
    V100 was named, on stderr)."""
    result = CliRunner().invoke(main, ["table", "roofline.critical_intensity", "--format", fmt])
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    last_row = max(i for i, line in enumerate(lines) if line.startswith(("|", "\\end{tabular}")))
    notes = [line for line in lines[last_row + 1:] if line.strip("% ")]
    assert notes == [f"{mark}tpu-v2, h800: left out (named by the book outside its spec tables; without --chip the "
                     "table shows the spec tables' chips only: name them with --chip to include them)",
                     f"{mark}v100: left out (v100 has no bf16 rate in the catalog; it has fp16, fp32 (pick one with "
                     "--dtype, or give the rate with --set C=...))"]
    assert sum("tpu-v2" in line or "TPU v2" in line for line in lines) == 1

@pytest.mark.parametrize("args, message", [
    (["problems", "generate", "--topic", "jax"], "unknown topic 'jax'; known: gpu, inference, roofline, sharding, tpu, "
     "training, transformer ('scalemath problems list' shows what each holds)"),
    (["problems", "generate", "--topic", "roofline,jax"], "unknown topic 'jax'; known: gpu, inference, roofline, "
     "sharding, tpu, training, transformer ('scalemath problems list' shows what each holds)"),
    (["problems", "generate", "--topic", "rofline"], "unknown topic 'rofline'; did you mean 'roofline'? (topics: "
     "roofline, tpu, sharding, gpu, transformer, training, inference)"),
    (["quantities", "--topic", "zzz"], "unknown topic 'zzz'; known: collectives, gpu, inference, jax, parallelism, "
     "roofline, tpu, transformer ('scalemath quantities' shows what each holds)"),
], ids=["nothing-close", "in-a-list", "a-typo", "quantities"])
def test_an_unknown_topic_lists_the_topics_once(args, message):
    """"unknown topic 'jax'; known: gpu, ... (topics: roofline, ...)" named every topic twice; a typo still gets
    its did-you-mean with the list beside it."""
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and result.stderr == f"error: {message}\n"

def test_problems_list_shows_generators():
    out = run("problems", "list").output
    assert "critical_intensity" in out and "roofline:" in out and "tpu:" in out


def test_cli_import_does_not_load_sympy():
    import subprocess
    import sys

    code = "import sys, scalemath.cli; assert 'sympy' not in sys.modules, 'sympy imported'"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_python_dash_m_runs():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "scalemath", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and "version" in result.stdout


def test_models_list_and_show():
    out = run("models", "list").output
    for key in ("llama3-70b", "llama3-405b", "deepseek-v3", "mixtral-8x7b", "gpt3-175b", "llama2-13b"):
        assert key in out
    data = json.loads(run("models", "show", "llama3-70b", "--format", "json").output)
    assert (data["D"], data["F"], data["L"]) == (8192, 28672, 80)


@pytest.mark.parametrize("args", [["models", "list"], ["hardware", "list"], ["hardware", "list", "--switches"]])
def test_list_columns_fit_their_content(args):
    """Between every two columns of a list runs a gutter at least two spaces wide through the header and every
    row (fixed widths let llama4-maverick, qwen3-235b-a22b and the GPUs with two peak rates push their rows out of
    line)."""
    import re

    lines = [line.removesuffix("  *") for line in run(*args).output.split("\n\n")[0].splitlines()]
    width = max(map(len, lines))
    blank = "".join("s" if all(line.ljust(width)[i] == " " for line in lines) else "x" for i in range(width))
    assert len(re.split("s{2,}", blank.strip("s"))) == len(re.split(" {2,}", lines[0])), "\n".join(lines)


@pytest.mark.parametrize("args,fragment", [
    (["models", "show", "llama3-70"], "'llama3-70b'"),
    (["derive", "matmul.flops", "--model", "lama3-70b"], "did you mean"),
    (["derive", "matmul.flops", "--model", "llama3-70b", "--model-config", "x.json"], "not both"),
    (["derive", "matmul.flops", "--model-config", "/nonexistent/config.json"], "config"),
], ids=["show-typo", "derive-typo", "both", "missing-config"])
def test_model_bad_input(args, fragment):
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (1, 2) and fragment in result.output and "Traceback" not in result.output


def test_model_config_binds_dimensions(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                               "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                               "vocab_size": 128256, "hidden_act": "silu"}))
    data = json.loads(run("derive", "matmul.flops", "--model-config", str(cfg), "--set", "B=1",
                          "--format", "json").output)
    assert data["exact"] == str(2 * 4096 * 14336)


# -- the real command's exit: output whole, codes kept, exit handlers run ------------------------------------------

@pytest.mark.parametrize("args, code", [
    (["quantities"], 0),
    (["derive", "roofline.critical_intensity", "--chip", "tpu-v5e", "--format", "json"], 0),
    (["check", "roofline.critical_intensity", "--chip", "h100", "590"], 1),
    (["derive", "no.such.quantity"], 2),
    (["derive", "--no-such-option"], 2),
], ids=["long output", "json", "wrong answer", "unknown name", "usage error"])
def test_the_command_exits_with_its_output_whole(args, code, tmp_path):
    """``scalemath`` (``cli.run``) skips the interpreter's teardown: everything printed still arrives, through a
    file as through a pipe, with the exit code click gives."""
    import subprocess
    import sys

    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        proc = subprocess.run([sys.executable, "-m", "scalemath", *args], stdout=fh, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    expected = CliRunner().invoke(main, args)  # click >= 8.2 keeps .stdout apart from .stderr
    assert proc.returncode == code == expected.exit_code
    assert out.read_text() == expected.stdout
    assert "Traceback" not in proc.stderr


def test_exit_handlers_run_before_the_fast_exit(tmp_path):
    """What Python runs at exit (atexit handlers, finalizers of temporary folders) still runs."""
    import subprocess
    import sys

    flag = tmp_path / "ran"
    code = ("import atexit, sys; from pathlib import Path; atexit.register(Path(sys.argv[1]).write_text, 'yes'); "
            "sys.argv = ['scalemath', 'derive', 'roofline.critical_intensity', '--chip', 'h100']; "
            "from scalemath.cli import run; run()")
    proc = subprocess.run([sys.executable, "-c", code, str(flag)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "295.5" in proc.stdout
    assert flag.read_text() == "yes"


def test_a_closed_pipe_is_quiet():
    import subprocess
    import sys

    proc = subprocess.run(f"{sys.executable} -m scalemath quantities | head -1", shell=True, capture_output=True,
                          text=True, timeout=300)
    assert proc.stdout.count("\n") == 1 and "Traceback" not in proc.stderr and "Error" not in proc.stderr
