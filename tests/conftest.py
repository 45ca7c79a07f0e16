"""Session-wide test settings.

scalemath keeps a persistent cache (compiled templates, solved crossovers; see scalemath/cache.py) in the
user's cache folder. The tests point it at a fresh temporary folder for the whole session, so they never
write to the home folder and every session starts cold. CLI subprocesses inherit the variable.
"""

from __future__ import annotations

import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="scalemath-test-cache-")
os.environ["SCALEMATH_CACHE_DIR"] = _CACHE


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)
