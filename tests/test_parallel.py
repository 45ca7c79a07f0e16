"""Problems made in worker processes (scalemath/problems/parallel.py): the same files as made in one process,
also when a worker fails a problem or is killed; never forked from a process that runs other threads.

Each run is a fresh Python process (the test process may run threads of its own, from jax, and then never
forks), which reports how many problems its workers made: a parallel case that made none would prove nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.cli import main

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")

RUN = r"""
import json, os, sys
from pathlib import Path
from scalemath.problems import parallel, registry, sets

mode, jobs, out, spec = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4])
parent = os.getpid()
made = []
ahead = parallel.make_ahead
def counted(*args, **kwargs):
    keys = ahead(*args, **kwargs)
    made.append(len(keys))
    return keys
parallel.make_ahead = counted
make = registry.make_problem
def failing(gen, seed, problem_id=None):
    if os.getpid() != parent and gen.name == spec["victim"]:
        if mode == "killed":
            os._exit(1)
        raise RuntimeError("a worker failed")
    return make(gen, seed, problem_id)
if mode in ("failed", "killed"):
    registry.make_problem = failing
ticks = []
pset = sets.build_set(spec["topics"], spec["n"], spec["seed"], generator_names=spec["generators"],
                      variants=spec["variants"], jobs=jobs, formats=spec["formats"], progress=ticks.append)
sets.write_set(pset, out, spec["formats"])
print(json.dumps({"made": sum(made), "ticks": sum(ticks), "problems": len(pset.all_problems)}))
"""

SETS = {
    "roofline and figures": {"topics": ["roofline"], "generators": ["figure_collective_read"], "n": 14, "seed": 3,
                             "variants": None, "formats": ["md", "tex", "html", "json"]},
    "variants": {"topics": ["tpu", "transformer"], "generators": [], "n": 6, "seed": 5, "variants": 3,
                 "formats": ["md", "html", "json"]},
}


def _run(tmp_path: Path, name: str, mode: str, jobs: int, cache_dir: str = "off", victim: str = "") -> tuple[Path, dict]:
    out = tmp_path / f"{name}-{mode}-{jobs}-{cache_dir == 'off'}".replace(" ", "_")
    spec = dict(SETS[name], victim=victim)
    env = dict(os.environ, SCALEMATH_CACHE_DIR=cache_dir)
    result = subprocess.run([sys.executable, "-c", RUN, mode, str(jobs), str(out), json.dumps(spec)],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return out, json.loads(result.stdout.strip().splitlines()[-1])


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    """Each set made in one process, with the cache off: the reference."""
    tmp = tmp_path_factory.mktemp("serial")
    return {name: _files(_run(tmp, name, "plain", 1)[0]) for name in SETS}


@pytest.mark.parametrize("name", list(SETS), ids=list(SETS))
def test_workers_write_the_same_files(tmp_path, serial, name):
    out, report = _run(tmp_path, name, "plain", 2)
    assert report["made"] == report["problems"] == report["ticks"]  # every problem made ahead, each counted once
    assert _files(out) == serial[name]
    if "figures" in name:  # the figures drawn by workers too
        assert {Path(f).suffix for f in serial[name] if f.startswith("figures/")} == {".svg", ".pdf"}


def test_workers_fill_the_cache_that_a_later_run_reads(tmp_path, serial):
    cache_dir = str(tmp_path / "cache")
    first, report = _run(tmp_path, "variants", "plain", 2, cache_dir)
    assert report["made"] == report["problems"]
    again, report = _run(tmp_path / "again", "variants", "plain", 2, cache_dir)
    assert report["made"] == 0  # read back from the cache the workers wrote, not made again
    assert _files(first) == _files(again) == serial["variants"]


@pytest.mark.parametrize("mode", ["failed", "killed"], ids=["a worker raises", "a worker is killed"])
def test_a_problem_a_worker_lost_is_made_here(tmp_path, serial, mode):
    manifest = json.loads(serial["variants"]["manifest.json"])
    victim = manifest["variants"][0]["problems"][0]["generator"]
    out, report = _run(tmp_path, "variants", mode, 2, victim=victim)
    assert report["made"] < report["problems"]
    assert report["ticks"] >= report["problems"]
    assert _files(out) == serial["variants"]


def test_never_forks_beside_another_thread():
    script = ("import threading; from scalemath.problems import parallel; before = parallel.can_fork(); "
              "stop = threading.Event(); t = threading.Thread(target=stop.wait); t.start(); "
              "print(before, parallel.can_fork()); stop.set(); t.join()")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["True", "False"], result.stderr[-2000:]


@pytest.mark.parametrize("value, message", [
    ("0", "0 must be at least 1"),
    ("two", "is not a whole number"),
    ("65", "must be at most 64"),
], ids=["zero", "a word", "too many"])
def test_cli_refuses_a_bad_jobs_count(tmp_path, value, message):
    result = CliRunner().invoke(main, ["problems", "generate", "--n", "2", "--jobs", value, "--out",
                                       str(tmp_path / "set")])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "set").exists()


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:  # the field after the state: the parent's pid
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how, after", [("ctrl-c", 0), ("ctrl-c", 1.5), ("sigterm", 0)],
                         ids=["Ctrl-C to the terminal's group", "Ctrl-C while results arrive", "SIGTERM to the command"])
def test_stopping_the_command_stops_its_workers(tmp_path, how, after):
    """The command stops, its workers with it, whenever the signal comes: a Ctrl-C raised inside the pool's
    wait once left a future's lock held, and the shutdown waited for ever (a CI run timed out here)."""
    out = tmp_path / "set"
    command = subprocess.Popen([sys.executable, "-m", "scalemath", "problems", "generate", "--n", "44", "--variants",
                                "20", "--seed", "81", "--jobs", "2", "--out", str(out)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env=dict(os.environ, SCALEMATH_CACHE_DIR="off"))
    workers: set[int] = set()
    for _ in range(1200):  # until both workers run (at most a minute)
        workers = _children(command.pid)
        if len(workers) == 2 or command.poll() is not None:
            break
        time.sleep(0.05)
    assert len(workers) == 2, "the workers never started"
    time.sleep(after)
    if how == "ctrl-c":
        os.killpg(command.pid, signal.SIGINT)
    else:
        command.send_signal(signal.SIGTERM)
    _, stderr = command.communicate(timeout=120)
    assert command.returncode == (130 if how == "ctrl-c" else -signal.SIGTERM)
    if how == "ctrl-c":
        assert stderr.strip() == "error: interrupted"  # no worker's traceback
    for _ in range(100):
        if not any(_alive(w) for w in workers):
            break
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "a worker outlived the command"
    assert not out.exists()


class _NoPool:
    """A pool that starts no worker: every task is lost, as if the workers had been killed (the draw makes them)."""

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, *args):
        from concurrent.futures.process import BrokenProcessPool

        raise BrokenProcessPool("no workers in this test")

    def shutdown(self, **kwargs):
        pass


# (id, problems with a figure, others, jobs, whether matplotlib is imported before the fork)
DRAWING_ROWS = [("two-drawing-workers", 6, 4, 2, True), ("one-drawing-worker", 5, 6, 2, False),
                ("no-figures", 0, 12, 2, False), ("three-drawing-workers", 12, 0, 3, True)]


@pytest.mark.parametrize("figured,others,jobs,loaded", [r[1:] for r in DRAWING_ROWS], ids=[r[0] for r in DRAWING_ROWS])
def test_matplotlib_is_imported_before_the_fork_only_when_several_workers_draw(monkeypatch, figured, others, jobs,
                                                                                loaded):
    from scalemath.problems import figures, parallel, registry, render

    calls = []
    monkeypatch.setattr(parallel, "can_fork", lambda: True)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", _NoPool)
    monkeypatch.setattr(registry, "in_cache", lambda *key: False)
    monkeypatch.setattr(registry, "ensure_loaded", lambda name: None)
    monkeypatch.setattr(render, "prepare_workers", lambda: None)
    monkeypatch.setattr(figures, "has_figure", lambda name: name == "drawn")
    monkeypatch.setattr(figures, "load_drawing", lambda: calls.append("loaded"))
    keys = [("drawn", k, f"p{k}") for k in range(figured)] + [("plain", k, f"q{k}") for k in range(others)]
    assert parallel.make_ahead(keys, jobs, ("md",)) == set()
    assert calls == (["loaded"] if loaded else [])


def test_load_drawing_imports_what_a_figure_is_drawn_with():
    from scalemath.problems import figures

    figures.load_drawing()
    assert {"matplotlib.pyplot", "matplotlib.backends.backend_pdf", "matplotlib.backends.backend_svg",
            "fontTools.subset"} <= set(sys.modules)
