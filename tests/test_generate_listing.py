"""What `problems generate` says it wrote: a figures folder as one line with its count (a class of thirty listed
480 figure files one by one), and a warning when the set has no key to grade against."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.cli.problems import _listing

LISTINGS = [
    ("no-figures", ["answers.json", "problems.md"], ["answers.json", "problems.md"]),
    ("one-figure", ["figures/a-1.svg", "problems.md"], ["figures/ (1 figure file)", "problems.md"]),
    ("set-and-sheets", ["figures/a.pdf", "figures/a.svg", "manifest.json", "sheets/v01/figures/a.svg",
                        "sheets/v01/problems.md"],
     ["figures/ (2 figure files)", "manifest.json", "sheets/v01/figures/ (1 figure file)", "sheets/v01/problems.md"]),
]


@pytest.mark.parametrize("paths, shown", [r[1:] for r in LISTINGS], ids=[r[0] for r in LISTINGS])
def test_listing(paths, shown):
    assert _listing([Path(p) for p in paths]) == shown


@pytest.mark.parametrize("fmt, warned", [("md", True), ("md,json", False)], ids=["no-json", "with-json"])
def test_a_set_without_a_key_says_so(fmt, warned, tmp_path):
    result = CliRunner().invoke(main, ["problems", "generate", "--generator", "critical_intensity", "--seed", "1",
                                       "--format", fmt, "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert ("cannot be graded" in result.output) == warned
    assert (tmp_path / "s" / "manifest.json").exists() == (not warned)
