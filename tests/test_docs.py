"""The documentation builds offline with warnings as errors, and every example in it runs.

Three kinds of example: ``>>>`` blocks (Sphinx's doctest builder runs them, the API docstrings included),
``$ scalemath ...`` lines in ``console`` blocks (run here through click's test runner; each output line
written under a command must appear in what it prints; ``# exits N`` says a command's exit code when it is
not 0) and the tour notebook (executed with nbclient: its outputs carry the LaTeX and HTML reprs).
Needs the docs extra: pip install -e '.[docs]'.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(DOCS.rglob("*.rst"))


def sphinx(builder: str, out: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder, str(DOCS),
                           str(out)], capture_output=True, text=True, env=env, timeout=600)


def test_html_builds_without_warnings(tmp_path):
    run = sphinx("html", tmp_path)
    assert run.returncode == 0, run.stderr
    api = (tmp_path / "api.html").read_text()
    for name in ("derive", "solve", "check", "plan", "serve", "generate", "grade", "hlo"):
        assert f'id="scalemath.api.{name}"' in api, name  # every function has its reference entry
    for page in ("teacher", "student", "researcher", "engineer"):
        assert (tmp_path / "howto" / f"{page}.html").is_file()
    assert (tmp_path / "_downloads").is_dir()  # the tour notebook is offered for download


def test_every_doctest_passes(tmp_path):
    run = sphinx("doctest", tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr
    summary = (tmp_path / "output.txt").read_text()
    counted = re.search(r"(\d+) tests\s+(\d+) failures in tests", summary)
    assert counted and int(counted.group(1)) >= 40 and counted.group(2) == "0", summary[-2000:]


def console_examples(page: Path) -> list[tuple[str, int, list[str]]]:
    """(command, exit code, expected output lines) of each ``$ scalemath`` line in ``page``'s console blocks."""
    out = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != ".. code-block:: console":
            i += 1
            continue
        i += 1
        block = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
            block.append(lines[i][3:])
            i += 1
        for line in block:
            if line.startswith("$ "):
                command, _, comment = line[2:].partition("  # ")
                code = re.match(r"exits (\d+)", comment)
                out.append((command, int(code.group(1)) if code else 0, []))
            elif line.strip() and out:
                out[-1][2].append(line.strip())
    return out


EXAMPLES = [(page, *example) for page in PAGES for example in console_examples(page)]


def test_console_examples_are_found():
    assert len(EXAMPLES) >= 15 and all(cmd.startswith("scalemath ") for _, cmd, _, _ in EXAMPLES)


@pytest.mark.parametrize("page", sorted({p for p, *_ in EXAMPLES}), ids=lambda p: p.stem)
def test_console_examples_run(page, tmp_path, monkeypatch):
    """A page's commands run in order in one folder (a later one may read what an earlier one wrote)."""
    from click.testing import CliRunner

    from scalemath.cli import main

    shutil.copytree(DOCS / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for _, command, code, expected in (e for e in EXAMPLES if e[0] == page):
        result = CliRunner().invoke(main, shlex.split(command)[1:], prog_name="scalemath")
        assert result.exit_code == code, f"{command}\n{result.output}"
        for line in expected:
            assert line in result.output, f"{command}: {line!r} not in\n{result.output}"


def test_tour_notebook_shows_latex_and_html(tmp_path):
    """The notebook runs top to bottom; its outputs hold the derivation's LaTeX and HTML and the plan's table."""
    nbformat = pytest.importorskip("nbformat", reason="the docs extra is not installed")
    nbclient = pytest.importorskip("nbclient", reason="the docs extra is not installed")
    pytest.importorskip("ipykernel", reason="the docs extra is not installed")
    nb = nbformat.read(DOCS / "examples" / "tour.ipynb", as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    data = [o.get("data", {}) for o in outputs]
    derivation = data[0]  # r = scalemath.derive("matmul.critical_batch_approx", chip="h100"); r
    assert derivation["text/latex"].startswith("$$") and r"\begin{aligned}" in derivation["text/latex"]
    assert r"B^* &= \frac{C b_w}{2 W}" in derivation["text/latex"]
    assert "<table" in derivation["text/html"] and "<math" in derivation["text/html"]
    assert "295.5 token" in derivation["text/html"] and "19800/67" in derivation["text/html"]
    assert "Rational(19800, 67)" in data[1]["text/plain"] or "19800/67" in data[1]["text/plain"]
    plan_table = next(d["text/html"] for d in data if "<b>plan</b>" in d.get("text/html", ""))
    assert "<table" in plan_table and "llama3-8b on 256 x tpu-v5p" in plan_table
    assert any("<svg" in d.get("image/svg+xml", "") for d in data)  # the plan's figure, inline
