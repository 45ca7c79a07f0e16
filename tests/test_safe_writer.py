"""The one safe writer (scalemath.files.write_file) and the commands that write through it.

Rows plant what an attacker or a race would: a symbolic link at a temporary name (the fixed names scalemath used
before, and the random name it uses now, made predictable here), a link or a user's file at the target, and a
file that appears while a plot is drawn or an export is built. Nothing a user has is ever written through or
replaced, and no temporary file is left behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath import files as userfiles
from scalemath.cli import main
from scalemath.errors import OutputExistsError, ScalemathError
from scalemath.plots import output as plot_output
from scalemath.problems import render, sets
from scalemath.files import FileAppearedError, write_file

PRECIOUS = b"a user's file\n"
TOKEN = "0123456789abcdef"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_bytes(PRECIOUS)
    yield path
    assert path.read_bytes() == PRECIOUS, "a file the user had was written through"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "scalemath-new" in p.name or "scalemath-tmp" in p.name)


# -- the writer itself ------------------------------------------------------------------------------

def _new(path, victim):
    pass


def _users_file(path, victim):
    path.write_bytes(PRECIOUS)


def _link_to_victim(path, victim):
    path.symlink_to(victim)


def _dangling_link(path, victim):
    path.symlink_to(victim.with_name("not-yet"))


@pytest.mark.parametrize("setup, replace, outcome", [
    (_new, None, "written"),
    (_new, lambda p: False, "written"),
    (_users_file, None, "refused"),
    (_users_file, lambda p: False, "refused"),
    (_users_file, lambda p: True, "replaced"),
    (_link_to_victim, None, "refused"),
    (_link_to_victim, lambda p: False, "refused"),
    (_link_to_victim, lambda p: True, "replaced"),  # the link itself is replaced, never followed
    (_dangling_link, None, "refused"),  # a link to a file not yet made is not followed to make it
], ids=["new", "new, replace asked", "user's file", "user's file, not ours", "our file", "link", "link, not ours",
        "link, ours", "dangling link"])
def test_write_file(tmp_path, victim, setup, replace, outcome):
    path = tmp_path / "out.bin"
    setup(path, victim)
    if outcome == "refused":
        with pytest.raises(FileAppearedError, match="scalemath did not write it"):
            write_file(path, b"new", replace=replace)
    else:
        write_file(path, b"new", replace=replace)
        assert not path.is_symlink() and path.read_bytes() == b"new"
    assert not victim.with_name("not-yet").exists()
    assert _leftovers(tmp_path) == []


def test_a_link_planted_at_the_temporary_name_is_never_written_through(tmp_path, victim, monkeypatch):
    monkeypatch.setattr(userfiles.secrets, "token_hex", lambda n: TOKEN)
    path = tmp_path / "out.bin"
    planted = tmp_path / f".out.bin.{TOKEN}.scalemath-new"
    planted.symlink_to(victim)
    with pytest.raises(ScalemathError, match="cannot write"):
        write_file(path, b"attack")
    assert not path.exists() and planted.is_symlink()


def test_the_replace_test_is_asked_again_after_the_bytes_are_written(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"ours")
    asked = []
    write_file(path, b"new", replace=lambda p: asked.append(p) or True)
    assert asked == [str(path)] and path.read_bytes() == b"new"


def test_a_file_system_without_hard_links_still_never_replaces(tmp_path, monkeypatch):
    def no_links(*args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(userfiles.os, "link", no_links)
    path = tmp_path / "out.bin"
    write_file(path, b"new")
    assert path.read_bytes() == b"new"
    with pytest.raises(FileAppearedError):
        write_file(path, b"newer")
    assert path.read_bytes() == b"new" and _leftovers(tmp_path) == []


# -- plots: a file that appears while the figure is drawn -------------------------------------------

@pytest.mark.parametrize("force", [False, True], ids=["without --force", "with --force"])
@pytest.mark.parametrize("appears", [_users_file, _link_to_victim], ids=["a user's file", "a link"])
def test_a_file_appearing_while_a_plot_draws_is_left_alone(tmp_path, victim, monkeypatch, force, appears):
    target = tmp_path / "r.svg"
    real = plot_output.figure_bytes

    def slow_figure(figure, fmt):
        data = real(figure, fmt)
        appears(target, victim)  # meanwhile, somebody's file at the target
        return data

    monkeypatch.setattr(plot_output, "figure_bytes", slow_figure)
    args = ["plot", "roofline", "--chip", "tpu-v5e", "--out", str(target)] + (["--force"] if force else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "appeared or changed while the plot was drawn" in result.output
    assert target.is_symlink() or target.read_bytes() == PRECIOUS
    assert _leftovers(tmp_path) == []


# -- exports: links at the temporary names, a file appearing meanwhile ------------------------------

@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    pset = sets.build_set(topics=("roofline",), seed=2)
    path = tmp_path_factory.mktemp("export") / "manifest.json"
    path.write_text(render.manifest(pset.problems, seed=2, topics=pset.topics, n=pset.n))
    return path


EXPORTS = [("moodle", "quiz.xml"), ("qti", "quiz.zip"), ("canvas", "canvas.zip")]


@pytest.mark.parametrize("fmt, name", EXPORTS, ids=[f for f, _ in EXPORTS])
@pytest.mark.parametrize("planted", ["old fixed name", "random name"])
def test_an_export_never_writes_through_a_link_at_a_temporary_name(tmp_path, victim, manifest, monkeypatch, fmt,
                                                                     name, planted):
    out = tmp_path / name
    if planted == "old fixed name":
        link = tmp_path / f".{name}.scalemath-tmp"
    else:
        monkeypatch.setattr(userfiles.secrets, "token_hex", lambda n: TOKEN)
        link = tmp_path / f".{name}.{TOKEN}.scalemath-new"
    link.symlink_to(victim)
    result = CliRunner().invoke(main, ["problems", "export", str(manifest), "--format", fmt, "--out", str(out)])
    if planted == "old fixed name":
        assert result.exit_code == 0, result.output
        assert out.is_file() and not out.is_symlink()
    else:
        assert result.exit_code == 1 and "cannot write" in result.output and not out.exists()
    assert link.is_symlink()


@pytest.mark.parametrize("fmt, name", EXPORTS, ids=[f for f, _ in EXPORTS])
def test_an_export_over_its_own_file_leaves_a_file_that_appears_alone(tmp_path, manifest, monkeypatch, fmt, name):
    out = tmp_path / name
    assert CliRunner().invoke(main, ["problems", "export", str(manifest), "--format", fmt, "--out", str(out)]) \
        .exit_code == 0
    real = userfiles.write_file

    def swapped_meanwhile(path, data, **kwargs):
        os.unlink(path)
        Path(path).write_bytes(PRECIOUS)  # the user's file, put there after the up-front check
        return real(path, data, **kwargs)

    monkeypatch.setattr("scalemath.problems.lms.write_file", swapped_meanwhile)
    result = CliRunner().invoke(main, ["problems", "export", str(manifest), "--format", fmt, "--out", str(out),
                                       "--force"])
    assert result.exit_code == 2 and "did not write" in result.output
    assert out.read_bytes() == PRECIOUS and _leftovers(tmp_path) == []


def test_every_write_in_the_package_goes_through_the_safe_writer():
    """No module writes a file by itself: open for writing, write_text/bytes, os.replace/rename of files."""
    root = Path(userfiles.__file__).parent
    allowed = {"files.py": {"os.replace(", "os.link(", "os.fdopen("},
               "problems/outfolder.py": {"os.rename("}}  # folders, moved whole under a lock
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        for needle in (".write_text(", ".write_bytes(", "os.replace(", "os.rename(", "os.link(", "os.fdopen(",
                       'open(path, "w', "mkstemp(", "NamedTemporaryFile("):
            if needle in text and needle not in allowed.get(rel, set()):
                lines = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line
                         and not line.lstrip().startswith((">>>", "...", "#"))]
                found += [f"{rel}:{n}: {needle}" for n in lines]
    assert found == [], json.dumps(found, indent=1)
