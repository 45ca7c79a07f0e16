"""Workers only where they pay (issue 28): the default number of worker processes is the CPUs this process may
use that the machine's other processes leave idle (the processes running now, or the load average). The files are the same whatever the
number (tests/test_parallel.py); these rows hold the arithmetic of the default."""

from __future__ import annotations

import os

import pytest

from scalemath.problems import parallel

# (id, CPUs of the machine, CPUs this process may use, processes running now with this one, expected default)
ROWS = [
    ("idle-2", 2, 2, 1, 2),
    ("one-other-of-2", 2, 2, 2, 1),
    ("overloaded-2", 2, 2, 10, 1),
    ("idle-16-capped", 16, 16, 1, parallel.MAX_JOBS),
    ("busy-64-affinity-4", 64, 4, 31, 4),
    ("busy-64-affinity-4-nearly-full", 64, 4, 63, 2),
    ("single-cpu", 1, 1, 1, 1),
]


@pytest.mark.parametrize("machine,allowed,load,expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_default_jobs_leaves_busy_cpus_alone(monkeypatch, tmp_path, machine, allowed, load, expected):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"9.00 9.00 9.00 {load}/400 12345\n", encoding="ascii")  # the average is not read
    monkeypatch.setattr(parallel, "_LOADAVG", str(loadavg))
    monkeypatch.setattr(os, "cpu_count", lambda: machine)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(allowed)), raising=False)
    assert parallel.default_jobs() == expected
    assert 0 <= parallel.idle_cpus() <= machine


# (id, the load average where /proc/loadavg cannot be read, expected idle CPUs of 4)
AVERAGE_ROWS = [("average-idle", 0.2, 4), ("average-busy", 3.4, 1), ("average-overloaded", 12.0, 0),
                ("no-average", None, 4)]


@pytest.mark.parametrize("average,expected", [r[1:] for r in AVERAGE_ROWS], ids=[r[0] for r in AVERAGE_ROWS])
def test_without_proc_the_load_average_or_every_cpu(monkeypatch, tmp_path, average, expected):
    def loadavg():
        if average is None:
            raise OSError("no load average")
        return (average, average, average)

    monkeypatch.setattr(parallel, "_LOADAVG", str(tmp_path / "absent"))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(os, "getloadavg", loadavg)
    assert parallel.idle_cpus() == expected
    assert parallel.default_jobs() == max(1, expected)
