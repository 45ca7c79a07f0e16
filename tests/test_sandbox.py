"""The code-grading sandbox attacked: every hostile submission ends as a graded failure with a clear message and
nothing written outside its scratch folder; the reference solutions graded right, wrong ones wrong (issue 29).

The hostile table runs in the sandbox's plain mode (no jax: a second each); the jax table repeats the worst of
them under the real shard_map harness, where numpy and jax are loaded before the limits are set.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytest

from scalemath.problems.coderun import Limits, grade_code, make_task, run_submission

HERE = Path(__file__).parent / "handson"
TMP = Path(tempfile.gettempdir())
FAST = Limits(wall_seconds=30, cpu_seconds=2, memory_bytes=512 * 2**20, file_bytes=2**20, open_files=64)
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's limits are Linux's")
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (the xla extra)")

#: (id, source with {mark} for a unique path, expected status, words of the message, path that must not appear)
HOSTILE = [
    ("loop-forever", "while True:\n    pass\n", "resource limit", "CPU time", None),
    ("sleep-forever", "import time\ntime.sleep(3600)\n", "timeout", "wall-clock", None),
    ("allocate-10GB", "x = bytearray(10 * 2**30)\n", "resource limit", "out of memory", None),
    ("numpy-10GB", "import numpy as np\nx = np.ones(10 * 2**30 // 8)\n", "resource limit", "out of memory", None),
    ("write-parent", "open('../{mark}', 'w').write('x')\n", "forbidden operation", "for writing", "{parent}/{mark}"),
    ("write-tmp", "open('{tmp}/{mark}', 'w').write('x')\n", "forbidden operation", "for writing", "{tmp}/{mark}"),
    ("os-open-tmp", "import os\nos.open('{tmp}/{mark}', os.O_CREAT | os.O_WRONLY)\n", "forbidden operation",
     "for writing", "{tmp}/{mark}"),
    ("symlink-out", "import os\nos.symlink('{tmp}/{mark}', 'link')\nopen('link', 'w').write('x')\n",
     "forbidden operation", "outside its scratch folder", "{tmp}/{mark}"),
    ("rename-out", "open('a', 'w').write('x')\nimport os\nos.rename('a', '{tmp}/{mark}')\n", "forbidden operation",
     "os.rename", "{tmp}/{mark}"),
    ("socket-connect", "import socket\ns = socket.socket()\ns.connect(('192.0.2.1', 80))\n",
     "forbidden operation", "socket", None),
    ("os-fork", "import os\nif os.fork() == 0:\n    open('{tmp}/{mark}', 'w')\n", "forbidden operation",
     "os.fork", "{tmp}/{mark}"),
    ("subprocess", "import subprocess\nsubprocess.run(['touch', '{tmp}/{mark}'])\n", "forbidden operation",
     "subprocess", "{tmp}/{mark}"),
    ("os-system", "import os\nos.system('touch {tmp}/{mark}')\n", "forbidden operation", "os.system",
     "{tmp}/{mark}"),
    ("os-exec", "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch {tmp}/{mark}'])\n", "forbidden operation",
     "os.exec", "{tmp}/{mark}"),
    ("kill-parent", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", "forbidden operation",
     "signal", None),
    ("import-grader", "import scalemath.problems.answer_key\n", "forbidden operation", "scalemath", None),
    ("importlib-grader", "import importlib\nimportlib.import_module('scalemath')\n", "forbidden operation",
     "scalemath", None),
    ("read-answer-key", "print(open('{key}').read())\n", "forbidden operation", "read", None),
    ("ctypes-system", "import ctypes\nctypes.CDLL(None).system(b'touch {tmp}/{mark}')\n", "forbidden operation",
     "ctypes", "{tmp}/{mark}"),
    ("ctypes-pythonapi", "import ctypes\nctypes.pythonapi.Py_GetVersion\n", "forbidden operation", "ctypes", None),
    ("huge-output", "while True:\n    print('x' * 10**6)\n", "resource limit", "larger than", None),
    ("many-files", "for i in range(1000):\n    open(f'f{{i}}', 'w')\n", "forbidden operation", "more than", None),
    ("catch-and-go-on", "try:\n    open('{tmp}/{mark}', 'w')\nexcept BaseException:\n    pass\n"
     "def f(a, b):\n    return a @ b\n", "forbidden operation", "for writing", "{tmp}/{mark}"),
    ("forge-report", "import os, json\nopen('result.json', 'w').write(json.dumps({{'status': 'ok'}}))\n"
     "os._exit(0)\n", "error", "", None),
    ("syntax-error", "def f(a, b)\n    return a\n", "error", "SyntaxError", None),
    ("no-function", "x = 1\n", "error", "no function f", None),
    ("exit-early", "raise SystemExit(0)\n", "error", "SystemExit", None),
]


@pytest.fixture(scope="module")
def answer_key():
    with tempfile.TemporaryDirectory() as d:
        key = Path(d, "manifest.json")
        key.write_text('{"secret": 42}')
        yield key


def _fill(text: str, mark: str, key: Path, parent: Path = TMP) -> str:
    return text.format(mark=mark, tmp=TMP, key=key, parent=parent)


@linux_only
@pytest.mark.parametrize("case_id, source, status, words, escape", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_plain(case_id, source, status, words, escape, answer_key, tmp_path):
    """Each run's scratch folder is made in tmp_path, so '../x' lands (if anything escaped) in tmp_path itself,
    and what is left there afterwards is exactly what escaped."""
    mark = f"scalemath-escape-{uuid.uuid4().hex}"
    limits = Limits(wall_seconds=3, cpu_seconds=2, memory_bytes=512 * 2**20, file_bytes=2**20) \
        if case_id == "sleep-forever" else FAST
    code = _fill(source, mark, answer_key, tmp_path).encode()
    result = run_submission(code, "f", [np.ones((2, 2)), np.ones((2, 2))], mode="plain", limits=limits,
                            scratch_parent=tmp_path)
    assert result.status == status, (result.status, result.message, result.printed)
    assert words in result.message, result.message
    assert "\n" not in result.message.strip() or status == "error"
    if escape:
        assert not Path(_fill(escape, mark, answer_key, tmp_path)).exists()
    assert not list(tmp_path.iterdir()), f"left behind: {list(tmp_path.iterdir())}"
    assert "42" not in result.printed


@linux_only
def test_protections_are_reported():
    result = run_submission(b"def f(a, b):\n    return a + b\n", "f", [np.ones(3), np.ones(3)], mode="plain",
                            limits=FAST)
    assert result.status == "ok" and np.array_equal(result.output, np.full(3, 2.0))
    text = " | ".join(result.protections)
    for words in ("python -I", "CPU time", "address space", "audit hook"):
        assert words in text, text


def test_unreadable_submission_is_one_line(tmp_path):
    from scalemath.errors import BadValueError

    with pytest.raises(BadValueError, match="No such file"):
        run_submission(tmp_path / "missing.py", "f", [], mode="plain")
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (300 * 1024))
    with pytest.raises(BadValueError, match="larger than"):
        run_submission(big, "f", [], mode="plain")


# -- under jax: the tasks, their reference solutions, wrong solutions, and the worst attacks again ---------------

CM = make_task("collective_matmul", {"n": 8, "B": 8, "D_local": 4, "F_local": 2}, seed=3)
MOE = make_task("moe_all_to_all", {"n": 8, "T_local": 4, "D": 8}, seed=5)
GATHER = b"""import jax
def collective_matmul(a, w):
    return jax.lax.all_gather(a, 'x', axis=1, tiled=True) @ w
"""
OFF_BY_ONE = (HERE / "collective_matmul_solution.py").read_bytes().replace(b"(me + step) % n", b"(me + step + 1) % n")
MOE_GATHER = b"""import jax, jax.numpy as jnp
def moe_layer(x, expert, w):
    ws = jax.lax.all_gather(w, 'x', axis=0, tiled=True)
    return jnp.einsum('td,tdf->tf', x, ws[expert])
"""
#: jax loads _posixsubprocess, whose fork_exec raises no audit event: the seccomp filter is the wall behind the hook
NATIVE_FORK = b"""import os, sys
r, w = os.pipe()
sys.modules['_posixsubprocess'].fork_exec(
    [b'/bin/sh', b'-c', b'touch /tmp/scalemath-escape-jax'], [b'/bin/sh'], True, (), None, None,
    -1, -1, -1, -1, -1, -1, r, w, False, False, -1, None, None, None, -1, None, False)
"""
JAX_CASES = [
    ("collective-matmul-reference", CM, (HERE / "collective_matmul_solution.py").read_bytes(), "right", "match"),
    ("moe-reference", MOE, (HERE / "moe_all_to_all_solution.py").read_bytes(), "right", "match"),
    ("collective-matmul-allgather", CM, GATHER, "wrong collectives", "AllGather"),
    ("collective-matmul-off-by-one", CM, OFF_BY_ONE, "wrong values", "unsharded answer"),
    ("moe-gathers-experts", MOE, MOE_GATHER, "wrong collectives", "AllGather"),
    ("moe-stub", MOE, b"def moe_layer(x, expert, w):\n    raise NotImplementedError('write the body')\n", "error",
     "NotImplementedError"),
    ("jax-loop", CM, b"def collective_matmul(a, w):\n    while True:\n        pass\n", "resource limit", "CPU"),
    ("jax-10GB", CM, b"import numpy as np\ndef collective_matmul(a, w):\n    np.ones(10 * 2**30 // 8)\n",
     "resource limit", "memory"),
    ("jax-socket", CM, b"import socket\nsocket.create_connection(('192.0.2.1', 80))\n", "forbidden operation",
     "socket"),
    ("jax-grader", CM, b"from scalemath.problems import coderun\n", "forbidden operation", "scalemath"),
    ("jax-native-fork", CM, NATIVE_FORK, "forbidden operation", "start a process"),
    ("jax-write-tmp", CM, b"import tempfile\nopen('/tmp/scalemath-escape-jax', 'w')\n", "forbidden operation",
     "for writing"),
]


@linux_only
@needs_jax
@pytest.mark.parametrize("case_id, task, code, verdict, words", JAX_CASES, ids=[c[0] for c in JAX_CASES])
def test_graded_under_jax(case_id, task, code, verdict, words):
    if case_id == "jax-native-fork" and platform.machine() != "x86_64":
        pytest.skip("the seccomp filter is written for x86-64 Linux")
    limits = Limits(wall_seconds=120, cpu_seconds=20, memory_bytes=2**30)
    grade = grade_code(task, code, limits)
    assert grade.verdict == verdict, (grade.verdict, grade.message, grade.printed)
    assert words in grade.message
    assert not Path("/tmp/scalemath-escape-jax").exists()
    if verdict == "right":
        kinds = {c.split("_")[0] for c in grade.collectives}
        assert kinds == set(task.spec["required"])


@linux_only
@needs_jax
def test_native_code_cannot_write_outside():
    """jax's profiler writes its trace from C++, past the audit hook: Landlock is the wall there."""
    target = TMP / f"scalemath-escape-{uuid.uuid4().hex}"
    code = (f"import jax, jax.numpy as jnp\njax.profiler.start_trace({str(target)!r})\n"
            "jnp.ones(4).block_until_ready()\njax.profiler.stop_trace()\n").encode()
    grade = grade_code(CM, code, Limits(wall_seconds=120, cpu_seconds=20))
    if not any("Landlock" in p for p in grade.protections):
        assert not target.exists() or pytest.fail(f"{target} was written: no Landlock on this kernel")
        pytest.skip("this kernel has no Landlock")
    assert grade.verdict == "forbidden operation" and "outside its scratch folder" in grade.message, grade.message
    assert not target.exists()


def test_reference_is_plain_arithmetic():
    """The grader's numpy answer against a second route: the sums written out for one entry."""
    a, w = CM.inputs()
    ref = CM.reference()
    assert ref.shape == (8, 16)
    assert abs(ref[2, 5] - sum(float(a[2, k]) * float(w[k, 5]) for k in range(32))) < 1e-9
    x, e, ws = MOE.inputs()
    want = MOE.reference()
    t = 7
    row = [sum(float(x[t, d]) * float(ws[e[t], d, f]) for d in range(8)) for f in range(8)]
    assert np.allclose(want[t], row, rtol=0, atol=1e-9)
