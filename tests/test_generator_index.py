"""The generator index (scalemath/problems/generator_index.py) against the registered generators.

Listing the generators and choosing a set read the index instead of importing every generator module;
this file holds the index to what the modules register, exactly, and shows that a set imports only the
modules of the generators it draws. On a mismatch the assertion prints the index to paste.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from scalemath.problems import generator_index
from scalemath.problems.registry import generators


def _quoted(text: str, indent: str) -> str:
    """``text`` as one or more adjacent string literals, each line under 120 characters."""
    parts = textwrap.wrap(text, 100, drop_whitespace=False, break_on_hyphens=False) or [""]
    return f"\n{indent}".join(repr(p) for p in parts)


_HEAD = '''"""Every generator by name: its module, topic, title and source, so that listing the generators or
choosing a set's needs no import of their modules (only the drawn generators' modules are imported).

Written by tests/test_generator_index.py (``index_text``), which holds it to the registered generators
exactly and prints the text to paste here when a generator is added, renamed or retitled.
"""

from __future__ import annotations

__all__ = ["INDEX"]

#: name -> (module under scalemath.problems.generators, topic, title, source)
'''


def index_text() -> str:
    """The text of generator_index.py for the generators registered now."""
    rows = []
    for name, g in generators().items():
        module = g.draw.__module__.rsplit(".", 1)[1]
        rows.append(f"    {name!r}: ({module!r}, {g.topic!r},\n"
                    f"        {_quoted(g.title, ' ' * 8)},\n"
                    f"        {_quoted(g.source, ' ' * 8)}),")
    return _HEAD + "INDEX: dict[str, tuple[str, str, str, str]] = {\n" + "\n".join(rows) + "\n}\n"


def test_index_is_the_registered_generators_exactly():
    registered = {name: (g.draw.__module__.rsplit(".", 1)[1], g.topic, g.title, g.source)
                  for name, g in generators().items()}
    assert generator_index.INDEX == registered, \
        "scalemath/problems/generator_index.py is stale; replace it with:\n\n" + index_text()


def test_index_file_is_as_written():
    with open(generator_index.__file__, encoding="utf-8") as f:
        assert f.read() == index_text()


def test_index_lines_fit():
    with open(generator_index.__file__, encoding="utf-8") as f:
        assert max(len(line) for line in f.read().splitlines()) < 120


_PROBE = """
import sys
from scalemath.problems.sets import build_set
pset = build_set(None, {n}, {seed})
print(",".join(sorted({{p.generator for p in pset.problems}})))
print(",".join(sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("scalemath.problems.generators."))))
"""


# A generator module may import another for its engine route (training_gpu imports transformer_params), so a set
# loads its drawn generators' modules and what they import: far fewer than all of them for a few problems.
@pytest.mark.parametrize("n, seed", [(3, 1), (5, 7)], ids=["n3-seed1", "n5-seed7"])
def test_a_set_imports_only_the_modules_it_draws(n, seed):
    out = subprocess.run([sys.executable, "-c", _PROBE.format(n=n, seed=seed)], capture_output=True, text=True,
                         check=True, env=dict(os.environ, SCALEMATH_CACHE_DIR="off")).stdout.split()
    drawn, loaded = set(out[0].split(",")), set(out[1].split(","))
    assert len(drawn) == n
    assert drawn <= loaded
    assert len(loaded) <= 3 * n < len(generator_index.INDEX)


def test_listing_imports_no_generator_module():
    code = ("import sys; from click.testing import CliRunner; from scalemath.cli import main; "
            "r = CliRunner().invoke(main, ['problems', 'list']); "
            "print(r.exit_code, sum(m.startswith('scalemath.problems.generators.') for m in sys.modules)); "
            "print(r.output.count('\\n'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[:2] == ["0", "0"]
    assert int(out[2]) == len(generator_index.INDEX) + 7  # a line per generator and per topic
