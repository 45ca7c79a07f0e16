"""Session-wide test settings.

scalemath keeps a persistent cache (compiled templates, solved crossovers; see scalemath/cache.py) in the
user's cache folder. The tests point it at a fresh temporary folder for the whole session, so they never
write to the home folder and every session starts cold. CLI subprocesses inherit the variable.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CACHE = tempfile.mkdtemp(prefix="scalemath-test-cache-")
os.environ["SCALEMATH_CACHE_DIR"] = _CACHE


@pytest.fixture
def jax8():
    """jax with 8 simulated CPU devices (the xla extra), or the test skipped: without jax, or when jax started
    with fewer devices before the test could ask for 8."""
    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
    jax = pytest.importorskip("jax", reason="jax is not installed (pip install -e '.[xla]')")
    if len(jax.devices("cpu")) < 8:
        pytest.skip("jax started with fewer than 8 CPU devices before this test could ask for 8")
    return jax


@pytest.fixture
def without_jax():
    """``run(code)``: the standard output of ``code`` run in a fresh interpreter where ``import jax`` fails (what a
    user without the xla extra has); the test fails, showing stderr, if the code does not exit 0."""
    import subprocess
    import sys

    def run(code: str, timeout: int = 120) -> str:
        done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['jax'] = None\n" + code],
                              capture_output=True, text=True, timeout=timeout, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


@pytest.fixture
def keyed_choice():
    """``check(rows, row, answer, text)``: in the generator table ``rows`` ((id, generator, params, ...)), the
    choice answer ``answer`` of row ``row`` is keyed to the choice reading ``text``, by the engine and by the
    second route alike."""
    from scalemath.problems import registry

    def check(rows, row, answer, text):
        name, params = next((r[1], r[2]) for r in rows if r[0] == row)
        gen = registry.get_generator(name)
        key = next(a for a in gen.solve(params) if a.name == answer)
        assert key.kind == "choice" and key.choices[int(key.value)] == text
        assert gen.check(params)[answer] == key.choices.index(text)

    return check


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)
