"""`scalemath problems generate` never loses a user's files.

--force replaces only a folder scalemath wrote (its .scalemath-set.json lists every
entry, unchanged), never ".", "..", the home folder or a folder above the current
one; concurrent runs and kills leave either the old folder or a complete new set,
and no hidden staging folder. Most cases run in-process through click's CliRunner
(fast; the umask too, set for the call and put back); the ones about processes (env,
races, signals, hash randomisation) run the real CLI in a subprocess.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.errors import BadValueError, OutputExistsError
from scalemath.problems import outfolder, sets

ARGS = ["problems", "generate", "--topic", "roofline", "--n", "2", "--seed", "1", "--format", "md,json"]
GEN = [sys.executable, "-m", "scalemath", *ARGS]
SET_FILES = ["answers.json", "manifest.json", "problems.md", "solutions.md"]
MARKER = ".scalemath-set.json"


# --- helpers -------------------------------------------------------------------------------------

def snapshot(root: Path) -> dict:
    """Every entry under ``root``: files by their bytes, symlinks by their target, folders by name."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                seen[rel] = ("dir",)
            else:
                seen[rel] = ("file", path.read_bytes())
    return seen


def helpers_left(parent: Path) -> list[str]:
    """Hidden entries scalemath may have left in ``parent`` (staging or old sets)."""
    return sorted(n for n in os.listdir(parent) if n.startswith("."))


def assert_one_error(code: int, stdout: str, stderr: str, expected_code: int, fragment: str) -> None:
    assert code == expected_code, (code, stdout, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in stdout + stderr


def make_set(folder: Path, seed: int = 1) -> Path:
    sets.write_set(sets.build_set(["roofline"], 2, seed), folder, ("md", "json"))
    return folder


def assert_complete_set(folder: Path, seed: int | None = None) -> None:
    """The set's files (and the figures of problems that have one, in figures/), each listed in the marker with
    its hash, and nothing else."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MARKER)
    figures = [f for f in files if f not in SET_FILES]
    assert all(f.startswith("figures/") and f.endswith(".svg") for f in figures), files
    assert sorted(os.listdir(folder)) == sorted(SET_FILES + [MARKER] + (["figures"] if figures else []))
    marker = json.loads((folder / MARKER).read_text())
    assert marker["written_by"] == "scalemath"
    assert marker["files"] == {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in SET_FILES + figures}
    if seed is not None:
        assert json.loads((folder / "manifest.json").read_text())["seed"] == seed


def cli(args, cwd: Path, monkeypatch, home: Path | None = None):
    monkeypatch.chdir(cwd)
    if home is not None:
        monkeypatch.setenv("HOME", str(home))
    return CliRunner().invoke(main, args)


# A stand-in for `python -m scalemath` whose render step can wait: "barrier" makes every
# process wait in its first render call until BARRIER_N processes got there (so they
# all render at once, whatever the machine's speed); "hang" sleeps until killed.
DRIVER = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path

    # started as from a terminal: SIGHUP at its default even when the suite runs under nohup, which would
    # otherwise hand the ignored SIGHUP down (and generate rightly keeps ignoring what its caller ignores)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    from scalemath.problems import render

    original = render.render_document
    calls = []

    def patched(*args, **kwargs):
        calls.append(1)
        mode = os.environ["DRIVER_MODE"]
        if mode == "barrier" and len(calls) == 1:
            here = Path(os.environ["BARRIER_DIR"])
            (here / str(os.getpid())).touch()
            deadline = time.monotonic() + 120
            while len(os.listdir(here)) < int(os.environ["BARRIER_N"]) and time.monotonic() < deadline:
                time.sleep(0.01)
        elif mode == "hang":
            time.sleep(600)
        return original(*args, **kwargs)

    render.render_document = patched
    from scalemath.cli import main
    main(args=sys.argv[1:], prog_name="scalemath")
""")


@pytest.fixture
def driver(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "driver.py").write_text(DRIVER)
    (tools / "barrier").mkdir()

    def start(args, cwd, mode, n=1):
        env = dict(os.environ, DRIVER_MODE=mode, BARRIER_DIR=str(tools / "barrier"), BARRIER_N=str(n))
        return subprocess.Popen([sys.executable, str(tools / "driver.py"), *args], cwd=cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return start


# --- --force refuses what scalemath did not write ---------------------------------------------------

def _dot(t):
    return t / "work", ".", "is the current folder", None


def _dot_spelled(t):
    return t / "work", "./.", "is the current folder", None


def _dotdot(t):
    return t / "work" / "sub", "..", "contains the current folder", None


def _dotdot_spelled(t):
    return t / "work" / "sub", "../sub/..", "contains the current folder", None


def _cwd_absolute(t):
    return t / "work", str(t / "work"), "is the current folder", None


def _ends_in_dotdot(t):
    make_set(t / "work" / "set")  # set/x/.. is the set itself; the spelling alone is refused
    return t / "work", "set/x/..", "ends in '.' or '..'", None


def _home(t):
    return t / "work", str(t / "home"), "your home folder", t / "home"


def _home_parent(t):
    return t / "work", str(t), "contains the current folder", t / "home"


def _user_folder(t):
    (t / "work" / "mine").mkdir()
    (t / "work" / "mine" / "notes.txt").write_text("my notes\n")
    return t / "work", "mine", "did not write (notes.txt", None


def _user_subfolder(t):
    (t / "work" / "mine" / "drafts").mkdir(parents=True)
    return t / "work", "mine", "drafts/", None


def _answers_edited(t):
    folder = make_set(t / "work" / "set")
    (folder / "answers.json").write_text('{"critical_intensity-1": {"I": 240}}\n')
    return t / "work", "set", "answers.json changed", None


def _set_plus_notes(t):
    folder = make_set(t / "work" / "set")
    (folder / "notes.txt").write_text("mine\n")
    return t / "work", "set", "(notes.txt)", None


def _marker_removed(t):
    folder = make_set(t / "work" / "set")
    (folder / MARKER).unlink()
    return t / "work", "set", f"no {MARKER}", None


def _marker_forged(t):
    folder = make_set(t / "work" / "set")
    (folder / "notes.txt").write_text("mine\n")
    marker = json.loads((folder / MARKER).read_text())
    marker["files"]["notes.txt"] = "0" * 64
    (folder / MARKER).write_text(json.dumps(marker))
    return t / "work", "set", "notes.txt changed", None


def _file_became_symlink(t):
    folder = make_set(t / "work" / "set")
    (t / "work" / "mine.json").write_text("{}\n")
    (folder / "answers.json").unlink()
    (folder / "answers.json").symlink_to(t / "work" / "mine.json")
    return t / "work", "set", "answers.json changed", None


def _symlink_to_set(t):
    make_set(t / "work" / "set")
    (t / "work" / "link").symlink_to("set")
    return t / "work", "link", "symbolic link", None


def _symlink_to_user(t):
    (t / "work" / "mine").mkdir()
    (t / "work" / "mine" / "notes.txt").write_text("my notes\n")
    (t / "work" / "link").symlink_to("mine")
    return t / "work", "link", "symbolic link", None


def _a_file(t):
    (t / "work" / "set").write_text("not a folder\n")
    return t / "work", "set", "not a folder", None


REFUSED = [_dot, _dot_spelled, _dotdot, _dotdot_spelled, _cwd_absolute, _ends_in_dotdot, _home, _home_parent,
           _user_folder, _user_subfolder, _answers_edited, _set_plus_notes, _marker_removed, _marker_forged,
           _file_became_symlink, _symlink_to_set, _symlink_to_user]


def _setup(tmp_path, case):
    for d in ("work/sub", "home"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "work" / "notes.txt").write_text("a user's file in the current folder\n")
    (tmp_path / "work" / "sub" / "essay.md").write_text("a user's file in a subfolder\n")
    (tmp_path / "home" / ".bashrc").write_text("export EDITOR=vi\n")
    (tmp_path / "keep.txt").write_text("a user's file above the current folder\n")
    return case(tmp_path)


@pytest.mark.parametrize("case", REFUSED, ids=[c.__name__.strip("_").replace("_", "-") for c in REFUSED])
def test_force_refuses_folders_scalemath_did_not_write(tmp_path, monkeypatch, case):
    cwd, out, fragment, home = _setup(tmp_path, case)
    before = snapshot(tmp_path)
    result = cli([*ARGS, "--out", out, "--force"], cwd, monkeypatch, home)
    assert_one_error(result.exit_code, result.stdout, result.stderr, 2, fragment)
    assert snapshot(tmp_path) == before  # byte for byte, and no hidden staging folder anywhere


def test_a_file_at_out_is_kept(tmp_path, monkeypatch):
    cwd, out, fragment, home = _setup(tmp_path, _a_file)
    before = snapshot(tmp_path)
    result = cli([*ARGS, "--out", out, "--force"], cwd, monkeypatch, home)
    assert_one_error(result.exit_code, result.stdout, result.stderr, 2, "exists and is not a folder")
    with pytest.raises(OutputExistsError, match="exists and is not a folder"):
        sets.write_set(sets.build_set(["roofline"], 2, 1), cwd / out, ("md",), force=True)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", [_dot, _dotdot, _home], ids=["dot", "dotdot", "home"])
def test_force_refusals_through_a_real_process(tmp_path, case):
    cwd, out, fragment, home = _setup(tmp_path, case)
    env = dict(os.environ, HOME=str(home or tmp_path / "home"))
    before = snapshot(tmp_path)
    result = subprocess.run([*GEN, "--out", out, "--force"], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=300)
    assert_one_error(result.returncode, result.stdout, result.stderr, 2, fragment)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out", [".", ".."], ids=["dot", "dotdot"])
def test_dot_is_refused_without_force_too(tmp_path, monkeypatch, out):
    (tmp_path / "work").mkdir()
    result = cli([*ARGS, "--out", out], tmp_path / "work", monkeypatch)
    assert_one_error(result.exit_code, result.stdout, result.stderr, 2, "never replaces")


# --- --force replaces scalemath's own sets, atomically ----------------------------------------------

def _unchanged(folder):
    pass


def _student_deleted_a_file(folder):
    (folder / "problems.md").unlink()


def _empty_folder(folder):
    for name in os.listdir(folder):
        (folder / name).unlink()


@pytest.mark.parametrize("change", [_unchanged, _student_deleted_a_file, _empty_folder],
                         ids=["unchanged", "file-deleted", "empty-folder"])
def test_force_replaces_a_set_scalemath_wrote(tmp_path, monkeypatch, change):
    change(make_set(tmp_path / "set", seed=1))
    (tmp_path / "notes.txt").write_text("next to the set\n")
    result = cli([*ARGS[:-4], "--seed", "2", "--format", "md,json", "--out", "set", "--force"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert_complete_set(tmp_path / "set", seed=2)
    assert helpers_left(tmp_path) == []  # the old set is gone, no staging folder
    assert (tmp_path / "notes.txt").read_text() == "next to the set\n"
    assert MARKER not in result.stdout


def test_force_puts_the_old_set_back_if_the_new_one_cannot_go_in(tmp_path, monkeypatch):
    make_set(tmp_path / "set", seed=1)
    before = snapshot(tmp_path)
    real_rename = os.rename

    def rename(src, dst):
        if str(src).endswith(".scalemath-new") and Path(dst).name == "set":
            raise OSError(errno.EIO, "Input/output error (simulated)")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    result = cli([*ARGS, "--seed", "2", "--out", "set", "--force"], tmp_path, monkeypatch)
    assert_one_error(result.exit_code, result.stdout, result.stderr, 1, "nothing was replaced")
    assert snapshot(tmp_path) == before


def test_force_keeps_the_new_set_if_the_old_one_cannot_be_deleted(tmp_path, monkeypatch, caplog):
    make_set(tmp_path / "set", seed=1)
    real_rmtree = sets.shutil.rmtree
    monkeypatch.setattr(sets.shutil, "rmtree", lambda path, *a, **k: None if str(path).endswith(
        ".scalemath-old") else real_rmtree(path, *a, **k))
    result = cli([*ARGS[:-4], "--seed", "2", "--format", "md,json", "--out", "set", "--force"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert_complete_set(tmp_path / "set", seed=2)
    [old] = helpers_left(tmp_path)
    assert old.endswith(".scalemath-old") and "could not be deleted" in caplog.text and old in caplog.text


# --- races ---------------------------------------------------------------------------------------

def test_two_generates_at_once_one_wins_the_other_exits_2(tmp_path, driver):
    work = tmp_path / "work"
    work.mkdir()
    procs = [driver([*ARGS, "--out", "set"], work, "barrier", n=2) for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert sorted(code for code, _, _ in results) == [0, 2], results
    loser = next(r for r in results if r[0] == 2)
    assert_one_error(*loser, 2, "appeared while the set was being written; nothing was replaced")
    assert_complete_set(work / "set", seed=1)
    assert helpers_left(work) == []


def test_two_forced_generates_at_once_both_leave_a_complete_set(tmp_path, driver):
    work = tmp_path / "work"
    make_set(work / "set", seed=5)
    procs = [driver([*ARGS, "--out", "set", "--force"], work, "barrier", n=2) for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert [code for code, _, _ in results] == [0, 0], results
    assert_complete_set(work / "set", seed=1)
    assert helpers_left(work) == []


def _user_makes_folder(out: Path):
    out.mkdir()
    (out / "notes.txt").write_text("third party\n")


def _user_makes_empty_folder(out: Path):
    out.mkdir()


def _user_adds_file(out: Path):
    (out / "notes.txt").write_text("third party\n")


@pytest.mark.parametrize("existing,meanwhile,force,fragment", [
    (False, _user_makes_folder, False, "appeared while the set was being written; nothing was replaced"),
    (False, _user_makes_empty_folder, False, "appeared while the set was being written; nothing was replaced"),
    (False, _user_makes_folder, True, "appeared while the set was being written and holds files"),
    (True, _user_adds_file, True, "changed while the set was being written and holds files"),
], ids=["user-folder", "user-empty-folder", "user-folder-force", "file-added-to-set-force"])
def test_a_folder_made_by_someone_else_while_rendering_is_kept(tmp_path, monkeypatch, existing, meanwhile,
                                                                force, fragment):
    out = tmp_path / "set"
    if existing:
        make_set(out)
    original, calls = sets.render.render_document, []

    def render_document(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            meanwhile(out)
        return original(*args, **kwargs)

    monkeypatch.setattr(sets.render, "render_document", render_document)
    result = cli([*ARGS, "--out", "set", *(["--force"] if force else [])], tmp_path, monkeypatch)
    assert_one_error(result.exit_code, result.stdout, result.stderr, 2, fragment)
    if meanwhile is not _user_makes_empty_folder:
        assert (out / "notes.txt").read_text() == "third party\n"
    if existing:
        assert (out / "answers.json").exists()  # the old set is still there, with the user's file
    assert helpers_left(tmp_path) == []


# --- signals -------------------------------------------------------------------------------------

@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)],
                         ids=["sigterm", "sigint", "sighup (a closed terminal)"])
def test_a_killed_generate_leaves_nothing_behind(tmp_path, driver, signum, code):
    work = tmp_path / "work"
    work.mkdir()
    proc = driver([*ARGS, "--out", "set"], work, "hang")
    deadline = time.monotonic() + 120
    while not helpers_left(work):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no staging folder appeared: {proc.communicate()}")
        time.sleep(0.01)
    [staging] = helpers_left(work)
    assert len(os.fsencode(staging)) < 100
    proc.send_signal(signum)
    assert proc.wait(timeout=120) == code
    stdout, stderr = proc.communicate()
    assert "Traceback" not in stderr, stderr
    assert os.listdir(work) == []  # no staging folder, no partial set


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_write_set_restores_the_signal_handlers(tmp_path, signum):
    before = signal.getsignal(signum)
    make_set(tmp_path / "a")
    with pytest.raises(OutputExistsError, match="already holds a different set"):
        make_set(tmp_path / "a", seed=2)  # refused after the new set was built, inside the handler's scope
    assert signal.getsignal(signum) is before


# the same command run twice (the README's first command, copied again): nothing is written, nothing is refused;
# any difference, or any edit, and the folder is left alone with an error
RERUNS = [
    pytest.param(1, None, "unchanged", id="same-set"),
    pytest.param(2, None, "already holds a different set", id="other-seed"),
    pytest.param(1, "problems.md", "already exists: it holds files scalemath did not write (problems.md changed)",
                 id="edited"),
]


@pytest.mark.parametrize("seed, edit, outcome", RERUNS)
def test_the_same_command_again_writes_nothing(tmp_path, seed, edit, outcome):
    folder = make_set(tmp_path / "a")
    if edit:
        with open(folder / edit, "a") as fh:
            fh.write("my note\n")
    before = {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.read_bytes()) for p in folder.rglob("*")
              if p.is_file()}
    if outcome == "unchanged":
        assert sets.write_set(sets.build_set(["roofline"], 2, seed), folder, ("md", "json")).unchanged
    else:
        with pytest.raises(OutputExistsError) as err:
            sets.write_set(sets.build_set(["roofline"], 2, seed), folder, ("md", "json"))
        assert outcome in str(err.value)
    after = {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.read_bytes()) for p in folder.rglob("*")
             if p.is_file()}
    assert after == before  # the very same files, not rewritten
    assert sorted(os.listdir(tmp_path)) == ["a"]  # no staging folder left


# --- modes, names, formats -------------------------------------------------------------------------

@pytest.mark.parametrize("umask,dir_mode,file_mode", [(0o022, 0o755, 0o644), (0o027, 0o750, 0o640)],
                         ids=["022", "027"])
def test_new_set_follows_the_umask(tmp_path, monkeypatch, umask, dir_mode, file_mode):
    previous = os.umask(umask)  # the process's umask, read whenever a file or folder is made
    try:
        result = cli([*ARGS, "--out", "set"], tmp_path, monkeypatch)
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "set").stat().st_mode & 0o777 == dir_mode
    for name in SET_FILES + [MARKER]:
        assert (tmp_path / "set" / name).stat().st_mode & 0o777 == file_mode, name


@pytest.mark.parametrize("name,must_fail", [
    ("a" * 250, False), ("b" * 255, False), ("c" * 300, True), ("d" * 300 + "/set", True), ("é" * 128, True),
], ids=["250", "255", "300", "300-parent", "256-bytes-utf8"])
def test_long_out_names_work_or_get_a_clear_error(tmp_path, monkeypatch, name, must_fail):
    result = cli([*ARGS, "--out", name], tmp_path, monkeypatch)
    if result.exit_code == 0 and not must_fail:
        assert_complete_set(tmp_path / name)
    else:
        assert_one_error(result.exit_code, result.stdout, result.stderr, 2, "bytes long, more than the")
        assert os.listdir(tmp_path) == []
    assert helpers_left(tmp_path) == []


def test_hidden_helper_names_stay_short(tmp_path):
    folder = outfolder._hidden_dir(tmp_path, "é" * 127, "new")
    assert folder.name.startswith(".") and len(os.fsencode(folder.name)) <= 64


@pytest.mark.parametrize("formats", ["", ",", " , "], ids=["empty", "comma", "spaces"])
def test_empty_format_list_is_refused(tmp_path, monkeypatch, formats):
    result = cli([*ARGS[:-2], "--format", formats, "--out", "set"], tmp_path, monkeypatch)
    assert_one_error(result.exit_code, result.stdout, result.stderr, 2, "md, tex, html, json, pdf")
    assert os.listdir(tmp_path) == []


def test_write_set_refuses_no_formats(tmp_path):
    with pytest.raises(BadValueError, match="md, tex, html, json, pdf"):
        sets.write_set(sets.build_set(["roofline"], 2, 1), tmp_path / "set", [])
    assert os.listdir(tmp_path) == []


# --- determinism -----------------------------------------------------------------------------------

def test_same_seed_gives_byte_identical_folders_with_the_marker(tmp_path):
    for name in ("a", "b"):  # two processes: no dependence on hash randomisation either
        result = subprocess.run([*GEN, "--out", name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert MARKER not in result.stdout
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")
    assert_complete_set(tmp_path / "a", seed=1)


def test_write_set_returns_the_files_without_the_marker(tmp_path):
    files = sets.write_set(sets.build_set(["roofline"], 2, 1), tmp_path / "set", ("md", "json"))
    assert [f.name for f in files] == SET_FILES and all(f.parent == tmp_path / "set" for f in files)
