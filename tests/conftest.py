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
