"""The documentation builds offline with warnings as errors, every example in it runs, and the generated
references cover the registries.

Three kinds of example:

- ``>>>`` blocks, run by Sphinx's doctest builder (the API docstrings included). Their output is compared
  whole: the pages use no ``ELLIPSIS`` (a test below holds them to that).
- ``$ scalemath ...`` lines in ``.. code-block:: console`` blocks of the pages and in ```` ```console ````
  blocks of the README, run here through click's test runner in one fresh folder per page (in order: a later
  command may read what an earlier one wrote; ``docs/examples`` is copied into it as ``examples/``). The
  lines under a command, up to the next ``$`` line or the end of the block, are its whole expected output;
  ``  # exits N`` after a command gives its exit code when it is not 0. Outputs are compared after the
  rules of :func:`normalise`, and no others.
- The tour notebook, executed with nbclient (its outputs carry the LaTeX and HTML reprs).

The HTML build's generated references are counted against the registries: one entry per quantity and per
problem generator, each with its worked example or sample problem and key, and one entry per command.
Needs the docs extra: pip install -e '.[docs]'.
"""

from __future__ import annotations

import html as html_module
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(p for p in DOCS.rglob("*.rst") if "_build" not in p.parts)


def sphinx(builder: str, out: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("sphinx_click", reason="the docs extra is not installed (pip install -e '.[docs]')")
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder, str(DOCS),
                           str(out)], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    run = sphinx("html", out)
    assert run.returncode == 0, run.stderr
    return out


def test_html_builds_without_warnings(html):
    api = (html / "api.html").read_text()
    for name in ("derive", "solve", "check", "plan", "serve", "generate", "grade", "hlo"):
        assert f'id="scalemath.api.{name}"' in api, name  # every function has its reference entry
    for page in ("quickstart", "guides/homework", "guides/check", "guides/papers", "guides/plan",
                 "guides/serve", "guides/hlo", "guides/plots", "reference/cli"):
        assert (html / f"{page}.html").is_file(), page
    assert (html / "_downloads").is_dir()  # the tour notebook is offered for download
    pages = "".join(p.read_text() for p in html.rglob("*.html"))
    assert "mathjax" not in pages.lower() and "<math" in pages  # formulas are MathML, no script from a CDN


def _anchors(html: Path, folder: str, kind: str) -> Counter:
    found = Counter()
    for page in (html / "reference" / folder).glob("*.html"):
        found.update(re.findall(rf'id="std-{kind}-([^"]+)"', page.read_text()))
    return found


def _plain(folder: Path) -> str:
    """The text of every page in ``folder``, without its markup."""
    return "".join(html_module.unescape(re.sub(r"<[^>]+>", "", p.read_text())) for p in folder.glob("*.html"))


def test_every_quantity_has_its_entry(html):
    from scalemath import quantities

    registered = set(quantities.QUANTITIES)
    found = _anchors(html, "quantities", "quantity")
    assert set(found) == registered, (sorted(registered - set(found)), sorted(set(found) - registered))
    assert all(n == 1 for n in found.values()), [q for q, n in found.items() if n > 1]
    assert len(registered) > 300
    text = _plain(html / "reference" / "quantities")
    for name in registered:  # the worked example: the command and the first line of what it printed
        assert re.search(rf"^\$ scalemath derive {re.escape(name)}( |$)", text, re.M), name
        assert re.search(rf"^{re.escape(name)}: ", text, re.M), name


def test_every_generator_has_its_sample(html):
    from scalemath.problems.registry import generators

    registered = set(generators())
    found = _anchors(html, "generators", "generator")
    assert set(found) == registered, (sorted(registered - set(found)), sorted(set(found) - registered))
    assert all(n == 1 for n in found.values())
    text = "".join(p.read_text() for p in (html / "reference" / "generators").glob("*.html"))
    assert text.count('<div class="sm-problem sm-sheet">') == len(registered)  # a problem ...
    assert text.count('<div class="sm-problem sm-key">') == len(registered)  # ... and its key, for each


def test_every_command_has_its_reference(html):
    import click

    from scalemath.cli import main

    def commands(group, path):
        for name in group.list_commands(click.Context(group)):
            command = group.get_command(click.Context(group), name)
            yield f"{path} {name}"
            if isinstance(command, click.Group):
                yield from commands(command, f"{path} {name}")

    text = (html / "reference" / "cli.html").read_text()
    for command in commands(main, "scalemath"):
        assert f'id="{command.replace(" ", "-")}"' in text, command


def test_every_doctest_passes(tmp_path):
    run = sphinx("doctest", tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr
    summary = (tmp_path / "output.txt").read_text()
    counted = re.search(r"(\d+) tests\s+(\d+) failures in tests", summary)
    assert counted and int(counted.group(1)) >= 60 and counted.group(2) == "0", summary[-2000:]


@pytest.mark.parametrize("page", [*PAGES, README], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_example_hides_its_output(page):
    """No doctest flag that lets an example's output be partly anything."""
    assert "ELLIPSIS" not in page.read_text()


# -- console examples -------------------------------------------------------------------------------------------

def normalise(output: str) -> str:
    """The rules an output is compared by, the same for the page and for the command:

    1. trailing whitespace on every line and blank lines at the end are dropped (editors strip them);
    2. the CPU time that ``plan`` and ``serve`` report for their search (``in 0.23 s CPU``) varies from run to
       run and machine to machine: its number becomes ``<t>``.
    """
    lines = [line.rstrip() for line in output.rstrip().splitlines()]
    return "\n".join(re.sub(r"\bin \d+(?:\.\d+)? s CPU\b", "in <t> s CPU", line) for line in lines)


def _blocks(text: str, markdown: bool) -> list[list[str]]:
    """The lines of each console block, unindented."""
    lines, blocks, i = text.splitlines(), [], 0
    while i < len(lines):
        opening = lines[i].strip() == ("```console" if markdown else ".. code-block:: console")
        i += 1
        if not opening:
            continue
        block = []
        if markdown:
            while lines[i].strip() != "```":
                block.append(lines[i])
                i += 1
        else:
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
                block.append(lines[i][3:])
                i += 1
        blocks.append(block)
    return blocks


def console_examples(page: Path) -> list[tuple[str, int, str]]:
    """(command, exit code, expected output) of each ``$ scalemath`` line in ``page``'s console blocks."""
    out = []
    for block in _blocks(page.read_text(), page.suffix == ".md"):
        current = None
        for line in block:
            if line.startswith("$ "):
                command, _, comment = line[2:].partition("  # ")
                code = re.match(r"exits (\d+)", comment)
                current = (command, int(code.group(1)) if code else 0, [])
                out.append(current)
            elif current is not None:
                current[2].append(line)
    return [(command, code, "\n".join(lines)) for command, code, lines in out]


EXAMPLES = [(page, *example) for page in [*PAGES, README] for example in console_examples(page)]


def test_console_examples_are_found():
    assert len(EXAMPLES) >= 60 and all(cmd.startswith("scalemath ") for _, cmd, _, _ in EXAMPLES)
    assert all(expected.strip() for _, _, _, expected in EXAMPLES), "every example shows what it prints"
    assert {p for p, *_ in EXAMPLES} >= {README, DOCS / "quickstart.rst", DOCS / "guides" / "homework.rst"}


@pytest.mark.parametrize("page", sorted({p for p, *_ in EXAMPLES}), ids=lambda p: str(p.relative_to(ROOT)))
def test_console_examples_run(page, tmp_path, monkeypatch):
    """A page's commands run in order in one folder; each prints exactly what the page shows."""
    from click.testing import CliRunner

    from scalemath.cli import main

    shutil.copytree(DOCS / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for _, command, code, expected in (e for e in EXAMPLES if e[0] == page):
        result = CliRunner().invoke(main, shlex.split(command)[1:], prog_name="scalemath")
        assert result.exit_code == code, f"{command}\n{result.output}"
        assert normalise(result.output) == normalise(expected), f"$ {command}"


@pytest.mark.parametrize("output, shown", [
    ("searched 8,184 configurations in 0.23 s CPU; 898 fit  \n\n", "searched 8,184 configurations in 7 s CPU; 898 fit"),
    ("39653 candidates, searched in 0.891 s CPU", "39653 candidates, searched in 1.2 s CPU"),
], ids=["plan", "serve"])
def test_the_normalisation_rules(output, shown):
    assert normalise(output) == normalise(shown)
    assert normalise("in 0.23 s CPU") != normalise("in 0.23 ms CPU")  # only the search's seconds


# -- the tour notebook ------------------------------------------------------------------------------------------

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


def test_the_readme_counts_the_quantities_there_are():
    from scalemath.quantities import QUANTITIES

    said = re.search(r"Derive any of the (\d+) registered quantities", README.read_text())
    assert said and int(said.group(1)) == len(QUANTITIES)
