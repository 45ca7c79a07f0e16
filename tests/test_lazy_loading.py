"""A command loads what it uses: the main group imports one command module, the registry one topic module."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from scalemath.quantities import registry

_PROBE = """
import json, sys
from click.testing import CliRunner
from scalemath.cli import main
result = CliRunner().invoke(main, {argv!r})
assert result.exit_code == 0, result.output
print(json.dumps(sorted(m for m in sys.modules if m.startswith("scalemath."))))
"""

_TOPICS = {f"scalemath.quantities.{m}" for m in registry.TOPIC_MODULES}
_COMMAND_MODULES = {f"scalemath.cli.{m}" for m in ("engine", "catalog", "search", "problems", "xla", "plot",
                                                    "grading")}


def _loaded(argv: list[str]) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv)], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("argv, topics, commands", [
    (["derive", "roofline.critical_intensity", "--chip", "tpu-v5e"], {"roofline"}, {"engine"}),
    (["derive", "transformer.params"], {"transformer"}, {"engine"}),
    (["derive", "pod.flops_per_s", "--chip", "tpu-v5p"], {"tpu", "chips"}, {"engine"}),
    (["hardware", "show", "h100"], set(), {"catalog"}),
    (["quantities", "--topic", "roofline"], set(registry.TOPIC_MODULES), {"engine"}),
], ids=["a roofline quantity", "a transformer quantity", "a prefix two topics share", "a catalog command",
        "the listing loads every topic"])
def test_a_command_loads_its_own_modules(argv, topics, commands):
    loaded = _loaded(argv)
    assert loaded & _TOPICS == {f"scalemath.quantities.{t}" for t in topics}
    assert loaded & _COMMAND_MODULES == {f"scalemath.cli.{c}" for c in commands}


def test_the_prefix_table_names_the_module_of_every_quantity():
    """Each quantity's first name part maps to the module that registers it, and the table has no pair unused."""
    used = set()
    for module in registry.TOPIC_MODULES:
        for q in importlib.import_module(f"scalemath.quantities.{module}").ENTRIES:
            prefix = q.name.split(".", 1)[0]
            assert module in registry.MODULES_BY_PREFIX.get(prefix, ()), (q.name, module)
            used.add((prefix, module))
    assert used == {(p, m) for p, ms in registry.MODULES_BY_PREFIX.items() for m in ms}


def test_the_listing_order_does_not_depend_on_what_was_loaded_first():
    code = ("import json; from scalemath.quantities import QUANTITIES, get; get('inference.decode.critical_batch'); "
            "get('pod.flops_per_s'); print(json.dumps(list(QUANTITIES)))")
    late = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    expected = [q.name for m in registry.TOPIC_MODULES
                for q in importlib.import_module(f"scalemath.quantities.{m}").ENTRIES]
    assert late == expected and len(set(late)) == len(late)


@pytest.mark.parametrize("argv, loads_the_breaker", [
    (["derive", "roofline.critical_intensity", "--chip", "tpu-v5e"], False),
    (["derive", "roofline.critical_intensity", "--chip", "tpu-v5e", "--format", "latex"], True),
    (["check", "roofline.critical_intensity", "240", "--chip", "tpu-v5e"], False),
], ids=["text", "latex", "a check"])
def test_the_latex_line_breaker_loads_only_for_latex(argv, loads_the_breaker):
    loaded = _loaded(argv)
    assert ("scalemath.values.display" in loaded) == loads_the_breaker
    assert ("scalemath.values.check" in loaded) == (argv[0] == "check")


def test_threads_asking_for_one_topic_at_once_register_it_once():
    code = ("import threading; from scalemath.quantities import get, QUANTITIES\n"
            "errors = []\n"
            "def ask():\n"
            "    try: get('parallel.training_time')\n"
            "    except Exception as exc: errors.append(exc)\n"
            "threads = [threading.Thread(target=ask) for _ in range(8)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\n"
            "assert not errors, errors; print(len(QUANTITIES))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(registry.QUANTITIES)
