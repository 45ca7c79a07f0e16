"""Hostile files and sizes: the inputs that used to hang scalemath or exhaust its memory.

Each row makes its input in the row's own folder and runs the real command line as
``tests/test_hostile.py`` does: in-process under the watchdog on the main thread's CPU clock, or, where
only a process boundary helps (a read that would block on a FIFO, a memory limit), in a subprocess with
a wall-clock timeout. The promise is the same: one ``error:`` line (that names what is wrong) and exit
code 1 or 2, or, for input that is odd but fine, the normal output; never a traceback, never a hang.

- HLO and profile files go through the safe reader: a FIFO is refused at once, never waited on.
- HLO comments are stripped in one pass: a line of 200,000 unclosed ``/*`` is not quadratic.
- A trace's numbers are bounded as JSON is parsed: ``1e999999999`` or a 5000-digit integer is refused at
  once (exactly, it would be a billion-digit integer); a negative or non-finite time names its event.
- A gzip trace is inflated a piece at a time and refused once it passes the reader's bound.
- ``plan`` counts its space before it allocates anything and refuses one past its cap, naming the count
  and the pins that shrink it; the counted space is the one a brute-force enumeration lists.
"""

from __future__ import annotations

import _thread
import contextlib
import faulthandler
import gzip
import itertools
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import traceback
import zlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from scalemath.catalog import hardware, models
from scalemath.xla import trace as profile_trace
from scalemath.search import train_space as training
from scalemath.search.space import Space, choices
from scalemath.files import size_text

CPU_SECONDS = 20.0  # per row, as in test_hostile: the child's user + sys, or in-process the main thread's
TIMEOUT = 60  # wall seconds of a subprocess row
HANG = 120  # wall seconds after which an in-process row stuck in C code (no watchdog reaches it) ends the session
MAX_LINE = 1000  # characters of the error line


# -- running a row: in-process under a CPU watchdog, or in a subprocess with a timeout ------------------------

class Runaway(BaseException):
    """Raised in the main thread by the watchdog once the command used more than CPU_SECONDS."""


@contextlib.contextmanager
def _cpu_limit(seconds: float):
    """Interrupt the main thread once its own CPU clock has run ``seconds``; yields the CPU seconds used so far."""
    main = threading.main_thread()
    clock = time.pthread_getcpuclockid(main.ident)
    start, done = time.clock_gettime(clock), threading.Event()

    def watch():
        while not done.wait(0.05):
            if time.clock_gettime(clock) - start > seconds:
                _thread.interrupt_main(signal.SIGUSR1)
                return

    def runaway(signum, frame):
        raise Runaway(f"more than {seconds} s of CPU")

    previous = signal.signal(signal.SIGUSR1, runaway)
    watchdog = threading.Thread(target=watch, name="cpu-limit", daemon=True)
    watchdog.start()
    try:
        yield lambda: time.clock_gettime(clock) - start
    finally:
        done.set()
        watchdog.join()
        signal.signal(signal.SIGUSR1, previous)


def run_in_process(args, cwd: Path):
    """(exit code, stdout, stderr, CPU seconds) of the click command; an escaping exception becomes the
    traceback the real command would print."""
    from click.testing import CliRunner

    from scalemath.cli import main

    faulthandler.dump_traceback_later(HANG, exit=True)
    try:
        with contextlib.chdir(cwd), _cpu_limit(CPU_SECONDS) as used:
            result = CliRunner().invoke(main, list(args), prog_name="scalemath")
    finally:
        faulthandler.cancel_dump_traceback_later()
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        err += "Traceback (most recent call last):\n" + "".join(traceback.format_exception(*result.exc_info))
    return result.exit_code, result.stdout, err, used()


def run_process(args, cwd: Path, program=("-m", "scalemath")):
    """(exit code, stdout, stderr, CPU seconds) of ``python -m scalemath`` (or ``python *program``) in a
    subprocess."""
    env = {k: v for k, v in os.environ.items() if k != "SCALEMATH_DEBUG"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, *program, *args], cwd=cwd, env=env, capture_output=True,
                          timeout=TIMEOUT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"), cpu


def check(code, out, err, cpu, expect: str, contains: str):
    """"error": exit 1 or 2 and one ``error:`` line holding ``contains``; "ok": exit 0, ``contains`` in stdout."""
    both = out + err
    assert "Traceback" not in both and "internal error" not in both and "MemoryError" not in both, err[-2000:]
    assert cpu < CPU_SECONDS, f"{cpu:.1f} s of CPU"
    if expect == "error":
        assert code in (1, 2), (code, out[:500], err[:500])
        lines = err.rstrip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) <= MAX_LINE, err[:1000]
        assert contains in lines[0], lines[0]
        assert not out.strip(), out[:500]
    else:
        assert expect == "ok" and code == 0, (code, err[-2000:])
        assert contains in out and not err.strip(), (out[:2000], err[:2000])

HLO_FILE = Path(__file__).resolve().parent.parent / "scalemath" / "xla" / "corpus" / "case2-gather-A-x4y2.hlo.txt"


@dataclass(frozen=True)
class Case:
    """A row whose input is made in its folder: ``make(folder)`` writes it and returns the argv."""

    id: str
    make: Callable[[Path], list[str]]
    expect: str = "error"
    contains: str = ""  # in the error line, or in the output of an accepted row
    process: bool = False

    def param(self):
        return pytest.param(self, id=self.id)


def _fifo(folder: Path, name: str = "pipe") -> str:
    path = folder / name
    os.mkfifo(path)  # nobody writes to it: opening it for reading the ordinary way blocks for ever
    return str(path)


def _write(folder: Path, name: str, data: bytes | str) -> str:
    path = folder / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


# -- a trace, as a TPU profile writes it, with one field replaced by raw JSON text ---------------------------

def _trace_text(ts="0", dur="5", args='{"flops": 1000}') -> str:
    return ('{"traceEvents": ['
            '{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:TPU:0"}}, '
            '{"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "XLA Ops"}}, '
            f'{{"ph": "X", "pid": 1, "tid": 2, "ts": {ts}, "dur": {dur}, "name": "fusion.1", "args": {args}}}]}}')


def profile(**fields) -> Callable[[Path], list[str]]:
    return lambda d: ["profile", _write(d, "t.json", _trace_text(**fields)), "--chip", "tpu-v5e"]


def _good_trace(folder: Path) -> str:
    return _write(folder, "good.trace.json.gz", gzip.compress(_trace_text().encode()))


# -- gzip bombs ------------------------------------------------------------------------------------------

BOMB = profile_trace.MAX_TRACE_BYTES + 2**24  # zeros: 16 MiB past the reader's bound
INFLATES = f"inflates to more than {size_text(profile_trace.MAX_TRACE_BYTES)}"


def _bomb_one_member(folder: Path) -> list[str]:
    """One gzip member of BOMB zeros (about 1.2 MB of file), compressed a piece at a time."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    zeros = bytes(2**24)
    parts = [deflate.compress(zeros) for _ in range(BOMB // len(zeros))] + [deflate.flush()]
    return ["profile", _write(folder, "bomb.trace.json.gz", b"".join(parts)), "--chip", "tpu-v5e"]


def _bomb_members(folder: Path) -> list[str]:
    """The same zeros as many small gzip members, one after another (gzip reads them as one stream)."""
    member = gzip.compress(bytes(2**20))
    return ["profile", _write(folder, "bomb.trace.json.gz", member * (BOMB // 2**20)), "--chip", "tpu-v5e"]


def _gzip_truncated(folder: Path) -> list[str]:
    data = gzip.compress(_trace_text().encode())
    return ["profile", _write(folder, "cut.trace.json.gz", data[: len(data) // 2]), "--chip", "tpu-v5e"]


def _gzip_padded(folder: Path) -> list[str]:
    """Two members and zeros after them, as gzip(1) accepts: a trace."""
    text = _trace_text().encode()
    data = gzip.compress(text[:40]) + gzip.compress(text[40:]) + bytes(1000)
    return ["profile", _write(folder, "two.trace.json.gz", data), "--chip", "tpu-v5e"]


def _gzip_trailing_garbage(folder: Path) -> list[str]:
    data = gzip.compress(_trace_text().encode()) + b"not gzip"
    return ["profile", _write(folder, "junk.trace.json.gz", data), "--chip", "tpu-v5e"]


# -- HLO text ----------------------------------------------------------------------------------------------

def _hlo(text: str) -> Callable[[Path], list[str]]:
    return lambda d: ["hlo", _write(d, "m.hlo.txt", text)]


def _commented_module() -> str:
    """The corpus module with an XLA-style comment before every operand and 100,000 closed ones on a line."""
    text = HLO_FILE.read_text()
    return text.replace("(%", "(/*index=0*/ %").replace("\n}", " /*x*/" * 100_000 + "\n}", 1)


def _profile_dir_with_fifo(folder: Path) -> list[str]:
    run = folder / "log" / "plugins" / "profile" / "2025_01_01_00_00_00"
    run.mkdir(parents=True)
    _fifo(run, "host.trace.json.gz")
    return ["profile", str(folder / "log"), "--chip", "tpu-v5e"]


CASES = [
    # a FIFO that nobody writes to: refused before any read (a subprocess, so that a hang is a timeout)
    Case("hlo-fifo", lambda d: ["hlo", _fifo(d)], contains="FIFO", process=True),
    Case("profile-hlo-fifo", lambda d: ["profile", _good_trace(d), "--chip", "tpu-v5e", "--hlo", _fifo(d)],
         contains="FIFO", process=True),
    Case("profile-trace-fifo", lambda d: ["profile", _fifo(d, "t.trace.json.gz"), "--chip", "tpu-v5e"],
         contains="FIFO", process=True),
    Case("profile-xplane-fifo", lambda d: ["profile", _fifo(d, "t.xplane.pb"), "--chip", "tpu-v5e"], process=True),
    Case("profile-run-dir-with-fifo", _profile_dir_with_fifo, contains="FIFO", process=True),
    Case("hlo-device", lambda d: ["hlo", "/dev/zero"], contains="device"),
    Case("profile-hlo-device", lambda d: ["profile", _good_trace(d), "--chip", "tpu-v5e", "--hlo", "/dev/zero"],
         contains="device"),
    # comments: linear in the text, the result as before
    Case("hlo-unclosed-comments-600k", _hlo("/* " * 200_000), contains="not HLO text"),
    Case("hlo-unclosed-comment-lines", _hlo(("/* " * 1000 + "\n") * 200), contains="not HLO text"),
    Case("hlo-closed-comments", lambda d: ["hlo", _write(d, "m.hlo.txt", _commented_module())], "ok",
         "all-gather"),
    # numbers a trace's JSON holds
    Case("trace-float-overflow", profile(dur="1e999999999"), contains="1e999999999"),
    Case("trace-float-underflow", profile(ts="1e-999999999"), contains="1e-999999999"),
    Case("trace-float-overflow-in-args", profile(args='{"flops": 1e999999999}'), contains="1e999999999"),
    Case("trace-long-integer", profile(dur="9" * 5000), contains="5000 digits"),
    Case("trace-long-integer-in-args", profile(args='{"flops": ' + "9" * 5000 + "}"), contains="5000 digits"),
    Case("trace-long-decimal", profile(dur="0." + "1" * 5000), contains="characters"),
    Case("trace-exponent-as-text", profile(dur='"1e999999999"'), contains="fusion.1"),
    Case("trace-exponent-as-text-in-stats", profile(args='{"flops": "1e999999999"}'), "ok", "fusion.1"),
    Case("trace-nan", profile(dur="NaN"), contains="fusion.1"),
    Case("trace-infinity", profile(ts="-Infinity"), contains="fusion.1"),
    # times and counts that cannot be
    Case("trace-negative-duration", profile(dur="-5"), contains="'fusion.1' has a negative duration"),
    Case("trace-negative-timestamp", profile(ts="-1.5"), contains="'fusion.1' starts at a negative time"),
    Case("trace-negative-flops", profile(args='{"flops": -1000}'), contains="'fusion.1'"),
    Case("trace-negative-bytes-as-text", profile(args='{"bytes_accessed": "-8"}'), contains="'fusion.1'"),
    Case("trace-zero-duration", profile(dur="0"), "ok", "fusion.1"),
    # gzip: inflated a piece at a time, refused past the bound
    Case("gzip-bomb", _bomb_one_member, contains=INFLATES),
    Case("gzip-bomb-many-members", _bomb_members, contains=INFLATES),
    Case("gzip-truncated", _gzip_truncated, contains="not a readable gzip"),
    Case("gzip-trailing-garbage", _gzip_trailing_garbage, contains="not a readable gzip"),
    Case("gzip-members-and-padding", _gzip_padded, "ok", "fusion.1"),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_hostile_file(case: Case, tmp_path):
    args = case.make(tmp_path)
    run = run_process if case.process else run_in_process
    check(*run(args, tmp_path), case.expect, case.contains)


# an XPlane without jax: jaxlib's ProfileData replaced by one that reads the bytes it is given (one op event
# lasting as many ns as the file's text says), so the channel is checked where jax is not installed
FAKE_PROFILE_DATA = """
import sys, types
from scalemath.xla import trace as profile_trace

class ProfileData:
    @classmethod
    def from_serialized_xspace(cls, data: bytes):
        event = types.SimpleNamespace(name="fusion.1", start_ns=1500, duration_ns=float(data), stats={})
        line = types.SimpleNamespace(name="XLA Ops", events=[event])
        return types.SimpleNamespace(planes=[types.SimpleNamespace(name="/device:TPU:0", lines=[line])])

profile_trace._profile_data = lambda: ProfileData
from scalemath.cli import main
main(sys.argv[1:], prog_name="scalemath")
"""


@pytest.mark.parametrize("content,expect,contains", [
    pytest.param(None, "error", "FIFO", id="xplane-fifo"),
    pytest.param("2000", "ok", "fusion.1", id="xplane-2-us"),
    pytest.param("-3", "error", "'fusion.1' has a negative duration (dur=-3.0 ns)", id="xplane-negative-duration"),
    pytest.param("nan", "error", "'fusion.1' has a time that is not a number", id="xplane-nan"),
])
def test_xplane_channel(content, expect, contains, tmp_path):
    path = _fifo(tmp_path, "t.xplane.pb") if content is None else _write(tmp_path, "t.xplane.pb", content)
    result = run_process(["profile", path, "--chip", "tpu-v5e"], tmp_path, program=("-c", FAKE_PROFILE_DATA))
    check(*result, expect, contains)


def test_comment_stripping_is_the_regex_it_replaced():
    """The one-pass stripping gives what ``re.sub(r"/\\*.*?\\*/", "")`` gave, on every short text of its letters."""
    import re

    from scalemath.xla.parse import strip_comments

    regex = re.compile(r"/\*.*?\*/")
    for n in range(9):
        for letters in itertools.product("/*\nx", repeat=n):
            text = "".join(letters)
            assert strip_comments(text) == regex.sub("", text), repr(text)


def test_comments_change_no_analysis_of_the_corpus():
    """Every corpus module, and the one with comments everywhere, reads as before: the regex's text, and the
    commented module's report is the plain one's."""
    import re

    from scalemath.xla import analysis as hlo_analysis
    from scalemath.xla.parse import strip_comments
    from scalemath.xla.report import as_json

    regex = re.compile(r"/\*.*?\*/")
    for path in sorted(HLO_FILE.parent.glob("*.hlo.txt")):
        text = path.read_text()
        assert strip_comments(text) == regex.sub("", text), path.name
    commented = _commented_module()
    assert strip_comments(commented) == regex.sub("", commented)
    plain = as_json(hlo_analysis.analyse(HLO_FILE.read_text(), None, None, None, source="m"))
    assert as_json(hlo_analysis.analyse(commented, None, None, None, source="m")) == plain


# -- plan: the space counted before it is built, refused past the cap -----------------------------------------

# 735,134,400 has 1,344 divisors: as many FSDP, DP and micro-batch values, 757,158,144 configurations; the
# divisors^3 table of (FSDP, DP, micro-batch) it once built asked numpy for 18 GiB
HUGE = "735134400"
PLAN = ["plan", "--model", "llama3-8b", "--chip", "tpu-v5e", "--seq-len", "1"]


# The command run with at most 1 GiB of address space, the limit set by the child itself before scalemath is
# imported (a preexec_fn would fork this process, and once jax is imported here its fork hook warns, which the
# suite's warnings-as-errors turns into a failure)
LIMITED = ("-c", "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
                 "sys.argv[0] = 'scalemath'; from scalemath.cli import run; run()")


@pytest.mark.parametrize("args,expect,contains", [
    pytest.param(PLAN + ["--chips", HUGE, "--batch-tokens", HUGE], "error", "4,577,082,624 configurations",
                 id="plan-735134400-sequences"),
    pytest.param(PLAN + ["--chips", "7207200", "--batch-tokens", "7207200"], "error", "369,814,752 configurations",
                 id="plan-7207200-sequences"),
    pytest.param(PLAN + ["--chips", "1441440", "--batch-tokens", "1441440", "--dtype", "bf16,int8"], "error",
                 "(144,548,928 for each of 2 dtypes)", id="plan-two-dtypes-past-the-cap"),
    pytest.param(PLAN + ["--chips", HUGE, "--batch-tokens", HUGE, "--fsdp", "1", "--micro-batch", "1"], "ok",
                 "best:", id="plan-735134400-sequences-pinned"),
])
def test_plan_space_is_counted_first(args, expect, contains, tmp_path):
    code, out, err, cpu = run_process(args, tmp_path, program=LIMITED)
    check(code, out, err, cpu, expect, contains)
    if expect == "error":  # names the pins that shrink the space, the largest first
        assert "pin a degree to shrink it: --fsdp (" in err and "--micro-batch (" in err and "--tp (" in err, err


def _brute_force(options: dict, opts) -> list[tuple]:
    """Every candidate by nested loops, in the space's order: model row, then (FSDP x DP, FSDP, DP, micro-batch),
    then checkpointing and ZeRO-1."""
    seqs, out = opts.batch // opts.seq_len, []
    for tp, ep, pp in itertools.product(options["tp"], options["ep"], options["pp"]):
        if tp * pp > opts.chips:
            continue
        data = sorted((f * d, f, d, mb) for f, d, mb in itertools.product(options["fsdp"], options["dp"], options["mb"])
                      if seqs % (f * d * mb) == 0 and f * d * tp * pp <= opts.chips and d % ep == 0)
        out += [(tp, ep, pp, f, d, mb, c, z) for _, f, d, mb in data
                for c, z in itertools.product(options["ckpt"], options["zero"])]
    return out


SPACES = [("llama3-8b", "h100", 64, 240 * 8, 8, {}), ("mixtral-8x7b", "tpu-v5e", 100, 360, 1, {}),
          ("deepseek-v3", "h800", 256, 96, 1, {"dp": 2}),
          ("mixtral-8x7b", "h100", 48, 720, 1, {"mb": 2, "zero1": True}),
          ("llama3-8b", "tpu-v5p", 1, 4096, 4096, {}),
          ("llama3-8b", "tpu-v5p", 7, 7 * 4096, 4096, {"checkpointing": "none"})]
SPACE_IDS = [f"{m}-{c}-{n}-chips-{b // s}-seqs" + "".join(f"-{k}" for k in p) for m, c, n, b, s, p in SPACES]


@pytest.mark.parametrize("model,chip,chips,batch,seq_len,pins", SPACES, ids=SPACE_IDS)
def test_counted_space_is_the_enumerated_one(model, chip, chips, batch, seq_len, pins):
    opts = training.Options(chips=chips, batch=batch, seq_len=seq_len, mfu=Fraction(2, 5), pins=pins)
    options = choices(models.get_model(model), hardware.get_chip(chip), opts)
    space = Space(options, opts)
    expected = _brute_force({k: v.tolist() for k, v in options.items()}, opts)
    assert space.total == len(expected)
    rows = space.rows(np.arange(space.total))
    got = list(zip(*(rows[k].tolist() for k in ("tp", "ep", "pp", "fsdp", "dp", "mb", "ckpt", "zero"))))
    assert got == expected
