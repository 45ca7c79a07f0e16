"""Run a submitted Python file in a sandboxed child process and collect what it computed.

The submission never runs in the grader's process. :func:`run_submission` makes a fresh scratch folder, copies
the submission (read through the bounded reader) and the inputs (``.npy``, written with ``allow_pickle=False``)
into it, and starts ``python -I`` on the bootstrap :mod:`._child` in a new session with a minimal environment
and the scratch folder as working directory. The child isolates itself (network namespace, resource limits, an
audit hook; see its docstring) before the submission's first line. The parent waits at most ``wall_seconds``,
then kills the child's whole process group, and reads back ``result.json``, ``output.npy``
(``allow_pickle=False``, never unpickled) and ``hlo.txt`` through the safe reader, refusing links. The scratch
folder is removed afterwards.

What is not protected: the child runs as the grader's user (it cannot drop to another user when the Python
installation is private to that user). The audit hook is a tripwire for Python-level operations, not a wall
against native code; the walls are the seccomp filter (x86-64 Linux: no fork, exec or socket) and Landlock
(writes only beneath the scratch folder), each listed in ``protections`` only when the kernel accepted it.
Without them, native code could start a process or write a file, which is why ctypes, cffi and
process-starting modules are refused outright either way. A submission could also overwrite its own report files
in the scratch folder; the values are still compared by the parent, so it cannot pass without computing them.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ...errors import BadValueError, ScalemathError
from ...files import read_user_bytes, write_file

__all__ = ["Limits", "RunResult", "run_submission", "describe", "CHILD", "MAX_SOURCE_BYTES"]

CHILD = Path(__file__).with_name("_child.py")
#: Largest submission read (a function body, not a data file).
MAX_SOURCE_BYTES = 256 * 1024
#: Largest output array or HLO text read back.
MAX_OUTPUT_BYTES = 64 * 2**20
#: Bytes of the child's printed output kept for the message.
TAIL_BYTES = 2000
_FORBIDDEN, _NO_MEMORY = 87, 86


@dataclass(frozen=True)
class Limits:
    """The child's limits: wall-clock and CPU seconds, address space added to what numpy and jax use, the size
    of any file it writes, open files."""

    wall_seconds: float = 120.0
    cpu_seconds: int = 60
    memory_bytes: int = 2 * 2**30
    file_bytes: int = 16 * 2**20
    open_files: int = 256

    def as_dict(self) -> dict:
        return {"cpu_seconds": self.cpu_seconds, "memory_bytes": self.memory_bytes, "file_bytes": self.file_bytes,
                "open_files": self.open_files}


@dataclass(frozen=True)
class RunResult:
    """How the child ended: ``ok``, ``error`` (``message``: the exception), ``bad layout`` (a layout task's
    layout broke a rule), ``timeout``, ``resource limit``, ``forbidden operation``; the output array and HLO text
    when ``ok``; the protections it had."""

    status: str
    message: str = ""
    output: np.ndarray | None = None
    hlo: str | None = None
    protections: tuple[str, ...] = ()
    printed: str = ""
    seconds: float = 0.0
    extra: Mapping[str, object] = field(default_factory=dict)


def _env(mesh_devices: int) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": ".", "TMPDIR": ".",
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={max(mesh_devices, 1)}",
            "JAX_PLATFORMS": "cpu", "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
            "JAX_ENABLE_COMPILATION_CACHE": "0"}


def _read(folder_fd: int, name: str, limit: int) -> bytes | None:
    try:
        return read_user_bytes(name, f"sandbox file {name}", limit, dir_fd=folder_fd, follow_links=False)
    except ScalemathError:
        return None


def _tail(folder_fd: int, name: str) -> str:
    """The last :data:`TAIL_BYTES` of a file the child wrote (its printed output), never following a link."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:
        return ""
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(size - TAIL_BYTES, 0), os.SEEK_SET)
        text = os.read(fd, TAIL_BYTES).decode("utf-8", "replace")
        return ("..." if size > TAIL_BYTES else "") + text
    except OSError:
        return ""
    finally:
        os.close(fd)


def _write_inputs(folder: Path, inputs: Sequence[np.ndarray]) -> list[str]:
    (folder / "in").mkdir()
    names = []
    for i, array in enumerate(inputs):
        name = f"in{i}.npy"
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(array), allow_pickle=False)
        write_file(folder / "in" / name, buffer.getvalue(), what="an input array")
        names.append(name)
    return names


def run_submission(source: str | os.PathLike | bytes, entry: str, inputs: Sequence[np.ndarray], *,
                   mode: str = "shard_map", mesh: Sequence[tuple[str, int]] = (("x", 8),),
                   in_specs: Sequence[Sequence] = (), out_spec: Sequence = (), limits: Limits = Limits(),
                   scratch_parent: str | os.PathLike | None = None) -> RunResult:
    """Run ``entry`` of the submission (a file path, or its bytes) on ``inputs`` in a sandboxed child.

    ``mode`` ``"shard_map"`` runs it as ``jax.jit(jax.shard_map(entry, mesh, in_specs, out_spec))`` on simulated
    CPU devices and reads back the compiled HLO; ``"layout"`` calls ``entry()`` for the layout of the fixed block
    of :mod:`._child_layout` (inputs x, w_in, w_out), runs that block jitted with it and reads back its HLO (a
    layout that breaks a rule is status ``bad layout``); ``"plain"`` calls it on numpy arrays (no jax). The scratch
    folder is made in ``scratch_parent`` (default: the system's temporary folder) and removed after. A submission
    that cannot be read raises :class:`BadValueError`; anything it does is a :class:`RunResult`.
    """
    if mode not in ("shard_map", "plain", "layout"):
        raise ValueError(f"mode {mode!r}: 'shard_map', 'plain' or 'layout'")
    if isinstance(source, bytes):
        code = source
    else:
        code = read_user_bytes(source, "submission", MAX_SOURCE_BYTES, error=BadValueError)
    if len(code) > MAX_SOURCE_BYTES:
        raise BadValueError(f"the submission is larger than {MAX_SOURCE_BYTES // 1024} KiB; submit the function only")
    devices = 1
    for _, n in mesh:
        devices *= int(n)
    folder = Path(tempfile.mkdtemp(prefix="scalemath-run-", dir=scratch_parent))
    try:
        os.chmod(folder, 0o700)
        write_file(folder / "submission.py", code, what="the submission")
        task = {"entry": entry, "mode": mode, "mesh": [[a, int(n)] for a, n in mesh],
                "in_specs": [list(s) for s in in_specs], "out_spec": list(out_spec),
                "inputs": _write_inputs(folder, inputs), "limits": limits.as_dict()}
        write_file(folder / "task.json", json.dumps(task).encode(), what="the task")
        return _run(folder, devices, limits)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(folder: Path, devices: int, limits: Limits) -> RunResult:
    start = time.monotonic()
    with open(folder / "stdout.txt", "xb") as out, open(folder / "stderr.txt", "xb") as err:
        child = subprocess.Popen([sys.executable, "-I", str(CHILD), str(folder)], cwd=folder, env=_env(devices),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                 close_fds=True)
    timed_out = False
    try:
        child.wait(timeout=limits.wall_seconds)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the child and anything it left behind in its session
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()
    seconds = time.monotonic() - start
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return _collect(fd, child.returncode, timed_out, seconds, limits)
    finally:
        os.close(fd)


def _collect(fd: int, code: int, timed_out: bool, seconds: float, limits: Limits) -> RunResult:
    raw = _read(fd, "result.json", 2**20)
    try:
        report = json.loads(raw) if raw else {}
        report = report if isinstance(report, dict) else {}
    except ValueError:
        report = {}
    listed = report.get("protections")
    if not isinstance(listed, list):
        try:
            listed = json.loads(_read(fd, "protections.json", 2**16) or b"[]")
        except ValueError:
            listed = []
    protections = tuple(str(p) for p in (listed if isinstance(listed, list) else []) if isinstance(p, str))[:20]
    printed = (_tail(fd, "stdout.txt") + _tail(fd, "stderr.txt")).strip()
    base = dict(protections=protections, printed=printed, seconds=seconds)
    if timed_out:
        return RunResult("timeout", f"the submission did not finish within {limits.wall_seconds:g} s of wall-clock "
                                    "time (an endless loop, or waiting on something); it was stopped", **base)
    if code == _FORBIDDEN:
        why = (_read(fd, "violation.txt", 4096) or b"forbidden operation").decode("utf-8", "replace")
        return RunResult("forbidden operation", why.strip() + "; it was stopped there", **base)
    if code == _NO_MEMORY or report.get("status") == "memory":
        return RunResult("resource limit", f"the submission ran out of memory (it may use "
                                           f"{limits.memory_bytes // 2**20} MiB beyond numpy and jax)", **base)
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return RunResult("resource limit", f"the submission used more than {limits.cpu_seconds} s of CPU time; "
                                           "it was stopped", **base)
    if code != 0:
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        return RunResult("error", f"the child process ended with {how} before reporting"
                                  + (f": {printed[-300:]}" if printed else ""), **base)
    status = report.get("status")
    if status == "layout":
        message = " ".join(str(report.get("message", "the layout breaks a rule")).split())[:2000]
        return RunResult("bad layout", message, **base)
    if status == "error":
        message = str(report.get("message", "an error"))[:2000]
        if message.startswith("PermissionError: [Errno 1] Operation not permitted") and \
                any("seccomp" in p for p in protections):
            return RunResult("forbidden operation", "forbidden operation: the submission tried to start a process or "
                                                    f"open a socket, which the sandbox refuses ({message})", **base)
        if ("PERMISSION_DENIED" in message or "[Errno 13]" in message) and any("Landlock" in p for p in protections):
            return RunResult("forbidden operation", "forbidden operation: the submission tried to write outside its "
                                                    f"scratch folder, which the sandbox refuses ({message})", **base)
        if "File too large" in message or "[Errno 27]" in message:
            return RunResult("resource limit", f"the submission wrote a file larger than {limits.file_bytes} bytes "
                                               f"({message})", **base)
        return RunResult("error", message, **base)
    if status != "ok":
        return RunResult("error", "the child process ended without a report", **base)
    data = _read(fd, "output.npy", MAX_OUTPUT_BYTES)
    if data is None:
        return RunResult("error", "the function returned nothing that could be read back as an array", **base)
    try:
        output = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        return RunResult("error", f"the returned array could not be read back ({exc})", **base)
    hlo = _read(fd, "hlo.txt", MAX_OUTPUT_BYTES)
    return RunResult("ok", output=output, hlo=hlo.decode("utf-8", "replace") if hlo is not None else None, **base)


def describe(result: RunResult) -> str:
    return f"{result.status}: {result.message}" if result.message else result.status
