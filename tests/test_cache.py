"""The persistent cache (scalemath/cache.py): where it lives, what it refuses, and that it never changes
output: a set generated with the cache off, empty, warm, and warmed by another seed is the same bytes."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from scalemath import cache
from scalemath.problems import environment


@pytest.fixture
def base(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(folder))
    return folder


@pytest.mark.parametrize("value", [
    {"a": 1},
    [("x", 2)],
    "text",
], ids=["dict", "list of tuples", "string"])
def test_round_trip(base, value):
    assert cache.load("kind", "key") is None
    cache.store("kind", "key", value)
    assert cache.load("kind", "key") == value
    entry = cache.folder("kind")
    assert entry.parent.name == cache.code_key() and entry.parent.parent == base
    assert [p.suffix for p in entry.iterdir()] == [".entry"]  # no temporary file left behind


@pytest.mark.parametrize("setting", ["off", "OFF", " off "], ids=["off", "upper case", "spaces"])
def test_off(monkeypatch, tmp_path, setting):
    monkeypatch.setenv(cache.ENV, setting)
    monkeypatch.chdir(tmp_path)
    assert cache.folder("kind") is None
    cache.store("kind", "key", 1)
    assert cache.load("kind", "key") is None
    assert list(tmp_path.iterdir()) == []  # not a folder named "off"


def test_default_is_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # where platformdirs looks first on Linux
    if sys.platform != "linux":
        pytest.skip("XDG_CACHE_HOME is the Linux convention")
    assert cache.folder("kind") == tmp_path / "scalemath" / cache.code_key() / "kind"


@pytest.mark.parametrize("bad", [
    b"",
    b"not a pickle",
    pickle.dumps(("another key", "its value")),
    pickle.dumps("no key stored beside it"),
], ids=["empty file", "garbage", "written for another key", "wrong shape"])
def test_a_bad_entry_is_a_miss_and_is_replaced(base, bad):
    cache.store("kind", "key", "good")
    (entry,) = cache.folder("kind").iterdir()
    entry.write_bytes(bad)
    assert cache.load("kind", "key") is None
    cache.store("kind", "key", "rebuilt")
    assert cache.load("kind", "key") == "rebuilt"


def test_an_unusable_folder_runs_uncached(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(cache.ENV, str(blocker / "cache"))
    assert cache.folder("kind") is None
    cache.store("kind", "key", 1)  # no error
    assert cache.load("kind", "key") is None


def test_a_folder_others_can_write_is_not_used(base):
    keyed = base / cache.code_key()
    keyed.mkdir(parents=True)
    keyed.chmod(0o777)  # code could be planted in it: pickles and compiled templates are code
    assert cache.folder("kind") is None


def test_the_key_follows_the_source(tmp_path, monkeypatch):
    (tmp_path / "module.py").write_text("x = 1\n")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.j2").write_text("{{ x }}")
    monkeypatch.setattr(cache, "_PACKAGE", tmp_path)
    keys = []
    for change in (None, ("module.py", "x = 2\n"), ("templates/t.j2", "{{ y }}")):
        if change:
            (tmp_path / change[0]).write_text(change[1])
        monkeypatch.setattr(cache, "_KEY", None)
        keys.append(cache.code_key())
    assert len(set(keys)) == 3  # an edited source or template gets a folder of its own


@pytest.mark.parametrize("content", [b"", b"garbage", b"j2" + b"\x00" * 40, "not bytes"],
                         ids=["empty", "garbage", "bad header", "not bytes"])
def test_a_corrupt_compiled_template_is_compiled_afresh(base, content):
    bcc = environment._BytecodeCache("jinja2-test")
    env = jinja2.Environment(loader=jinja2.DictLoader({"t": "{{ 1 + 1 }}"}), bytecode_cache=bcc)
    bucket = jinja2.bccache.Bucket(env, "k", "checksum")
    cache.store("jinja2-test", "k", content)  # authentic, but not compiled code jinja2 can read
    bcc.load_bytecode(bucket)
    assert bucket.code is None
    assert env.get_template("t").render() == "2"


def test_a_compiled_template_is_read_back(base):
    bcc = environment._BytecodeCache("jinja2-test")
    env = jinja2.Environment(loader=jinja2.DictLoader({"t": "{{ 1 + 1 }}"}), bytecode_cache=bcc)
    assert env.get_template("t").render() == "2"
    (entry,) = cache.folder("jinja2-test").iterdir()
    again = jinja2.Environment(loader=jinja2.DictLoader({"t": "{{ 1 + 1 }}"}), bytecode_cache=bcc)
    bucket = bcc.get_bucket(again, "t", None, "{{ 1 + 1 }}")
    assert bucket.code is not None  # read from the entry, not compiled again


def test_a_compiled_template_that_cannot_be_written_is_ignored(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(cache.ENV, str(blocker / "cache"))
    assert environment._bytecode_cache() is None
    bcc = environment._BytecodeCache("jinja2-test")
    env = jinja2.Environment(loader=jinja2.DictLoader({"t": "{{ 1 + 1 }}"}), bytecode_cache=bcc)
    assert env.get_template("t").render() == "2"


# seed 3 draws a design problem (the builder kind), a figure and a solve (roots) among its 10 problems
GENERATE = [sys.executable, "-m", "scalemath", "problems", "generate", "--n", "10", "--seed", "3",
            "--format", "md,tex,html,json"]


def _generate(out: Path, cache_dir: str, seed: str = "3") -> dict[str, bytes]:
    env = dict(os.environ, SCALEMATH_CACHE_DIR=cache_dir)
    subprocess.run(GENERATE[:-3] + [seed, "--format", "md,tex,html,json", "--out", str(out)], check=True,
                   env=env, capture_output=True, timeout=600)
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_output_is_the_same_bytes_with_and_without_the_cache(tmp_path):
    store = tmp_path / "cache"
    off = _generate(tmp_path / "off", "off")
    cold = _generate(tmp_path / "cold", str(store))
    (keyed,) = [p for p in store.iterdir() if p.is_dir()]  # one code key's folder, beside the entries' key
    kinds = sorted(p.name for p in keyed.iterdir())
    # the cold run filled every kind
    assert kinds == ["builder", "derivation", "figure", "fontsubset", "jinja2-env2", "mathml", "problem", "roots"]
    warm = _generate(tmp_path / "warm", str(store))
    other = tmp_path / "other-seed-cache"
    _generate(tmp_path / "seed6", str(other), seed="6")
    after_other = _generate(tmp_path / "after-other", str(other))
    assert len(off) >= 8
    for name, data in off.items():
        assert cold[name] == data, f"{name}: an empty cache changed it"
        assert warm[name] == data, f"{name}: a warm cache changed it"
        assert after_other[name] == data, f"{name}: a cache warmed by another seed changed it"
    assert off.keys() == cold.keys() == warm.keys() == after_other.keys()


def test_every_registered_derivation_reads_back_as_built(base):
    """A derivation read from the cache is the very tree that was built, step by step (plain pickle would
    evaluate it again and flatten the products the engine leaves unevaluated for display)."""
    import sympy as sp

    from scalemath import quantities

    changed = []
    for name, q in quantities.QUANTITIES.items():
        built = q.build()
        cache.store("derivation-test", name, built)
        read = cache.load("derivation-test", name)
        if read != built or [sp.srepr(s.expr) for s in read.steps] != [sp.srepr(s.expr) for s in built.steps]:
            changed.append(name)
    assert not changed


_IMPORTS = """
import sys
from scalemath.cli import main
try:
    main(["problems", "generate", "--generator", "figure_roofline_read", "--n", "1", "--seed", "3",
          "--format", "md,html", "--out", sys.argv[1]], standalone_mode=False)
finally:
    print("imported:", *(m.rsplit(".", 1)[-1] for m in ("matplotlib", "scalemath.problems.generators.dot_product",
                                                       "scalemath.problems.generators.figure_roofline_read")
                         if m in sys.modules))
"""


def test_a_cached_figure_imports_no_matplotlib(tmp_path):
    """matplotlib is imported only to draw a figure the cache does not hold; a set imports only the generator
    modules it draws (dot_product is in the figure's topic but not drawn); a problem read back from the cache
    needs its generator's module only to name its figure."""
    def imported(out: str, cache_dir: str) -> list[str]:
        env = dict(os.environ, SCALEMATH_CACHE_DIR=cache_dir)
        return subprocess.run([sys.executable, "-c", _IMPORTS, str(tmp_path / out)], check=True, env=env,
                              capture_output=True, text=True, timeout=600).stdout.split("imported:")[-1].split()

    store = str(tmp_path / "cache")
    assert imported("off", "off") == ["matplotlib", "figure_roofline_read"]
    assert imported("cold", store) == ["matplotlib", "figure_roofline_read"]
    assert imported("warm", store) == ["figure_roofline_read"]
    assert (tmp_path / "warm" / "problems.md").read_bytes() == (tmp_path / "off" / "problems.md").read_bytes()


@pytest.mark.parametrize("name, seed", [("derive_all_to_all", 4), ("sharding_matmul_case", 2), ("training_gpu", 9),
                                        ("inference_min_topology", 5), ("figure_roofline_read", 1)],
                         ids=["formulas", "simulated", "whole-counts", "rounded-by-engine", "figure"])
def test_a_problem_reads_back_as_made(name, seed):
    """A problem read from the cache is the problem made afresh: every answer's value, its evaluated steps'
    trees and the parameters (srepr compares trees, not just values)."""
    import sympy as sp

    from scalemath.problems import registry

    made = registry.make_problem(registry.get_generator(name), seed, "p-1")
    assert registry.made_problem(name, seed, "p-1") == made  # made and stored
    read = registry.made_problem(name, seed, "p-1")  # read back
    assert read == made and read is not made
    for a, b in zip(read.answers, made.answers):
        assert sp.srepr(a.value) == sp.srepr(b.value)
        if b.evaluated is not None:
            assert [sp.srepr(s.value) for s in a.evaluated.steps] == [sp.srepr(s.value) for s in b.evaluated.steps]


_CALLS: list[tuple] = []


@cache.persistent
def _toy(*args):
    """A builder for the tests: records each time it really builds."""
    import sympy as sp

    _CALLS.append(args)
    x = sp.Symbol("x", positive=True)
    return sp.Max(x * len(repr(args)), x**2)


@pytest.mark.parametrize("args, built_again", [
    ((3,), False),
    ((3, "half"), False),
    ((3, (1, 2)), False),
    ((3, 0.5), True),  # a float's repr is no name for good: built again in every process, never stored
], ids=["int", "int and str", "tuple", "float"])
def test_a_persistent_builder_is_read_back_not_built_again(base, args, built_again):
    import sympy as sp

    _toy.cache_clear()
    _CALLS.clear()
    first = _toy(*args)
    _toy.cache_clear()  # a new process, as far as the builder can tell
    second = _toy(*args)
    assert _CALLS == [args] * (2 if built_again else 1)
    assert sp.srepr(second) == sp.srepr(first)


def _trees(value) -> list[str]:
    """Every SymPy tree inside a builder's result (derivations, dicts, tuples, dataclasses), as srepr."""
    import dataclasses

    import sympy as sp

    from scalemath.symbolic.derivation import Derivation

    if isinstance(value, sp.Basic):
        return [sp.srepr(value)]
    if isinstance(value, Derivation):
        return [sp.srepr(s.expr) for s in value.steps] + [s.label + s.why + s.unit for s in value.steps]
    if isinstance(value, dict):
        return [t for k in sorted(value, key=repr) for t in [repr(k)] + _trees(value[k])]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _trees(v)]
    if dataclasses.is_dataclass(value):
        return [t for f in dataclasses.fields(value) for t in _trees(getattr(value, f.name))]
    return [repr(value)]


@pytest.mark.parametrize("generator, seed", [
    ("tpu_staged_copy", 1), ("gpu_node_bandwidth", 2), ("gpu_cross_node_alltoall", 3),
    ("sharding_gather_or_reduce", 4), ("sharding_matmul_case", 2), ("sharding_memory", 5),
    ("sharding_choose_layout", 6),
])
def test_every_persistent_builder_reads_back_as_built(base, monkeypatch, generator, seed):
    """What a generator's persistent builders store is, read back, the very trees a fresh build gives."""
    from scalemath.problems.registry import get_generator, make_problem

    calls = []
    real = cache.kept
    monkeypatch.setattr(cache, "kept", lambda kind, key, build, valid: calls.append((kind, key, build))
                        or real(kind, key, build, valid))
    for builder in cache.PERSISTENT:
        builder.cache_clear()
    make_problem(get_generator(generator), seed, f"{generator}-1")
    stored = [(key, build) for kind, key, build in calls if kind == "builder"]
    assert stored, f"{generator} used no persistent builder"
    for key, build in stored:
        assert _trees(cache.load("builder", key)) == _trees(build()), key


@pytest.mark.parametrize("change", ["a file's text", "a new file", "a file in a subpackage"])
def test_a_library_whose_code_changes_gets_another_key(tmp_path, monkeypatch, change):
    """The cache key covers jinja2's and latex2mathml's code through their files (not their metadata): a library
    whose sources change, as an upgrade changes them, never reads the entries the old code wrote."""
    import importlib

    from scalemath import cache

    package = tmp_path / "fakelib_for_key"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("VERSION = '1.0'\n")
    (package / "sub" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    before = cache._library("fakelib_for_key")
    if change == "a file's text":
        (package / "__init__.py").write_text("VERSION = '1.10'\n")
    elif change == "a new file":
        (package / "filters.py").write_text("")
    else:
        (package / "sub" / "__init__.py").write_text("X = 1\n")
    assert before != "?" and cache._library("fakelib_for_key") != before
