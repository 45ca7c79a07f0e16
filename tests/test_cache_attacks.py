"""The cache under attack: nothing another user (or a flipped bit) puts in it runs as code or changes an answer.

Each row plants something where the cache reads, then asks for the entry: the answer is the value stored or a
miss (None), never another value, never a hang, and the pickle that would create CANARY never runs. The last
tests run whole sets against a cache whose every entry was tampered with, and compare with the cache off.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import pytest

from scalemath import cache


class _Payload:
    """Unpickling this runs ``touch`` on the canary: the code an attacker would plant."""

    def __init__(self, canary: Path):
        self.canary = canary

    def __reduce__(self):
        return (os.system, (f"touch {self.canary}",))


@pytest.fixture
def base(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(folder))
    monkeypatch.setattr(cache, "_FOLDERS", {})  # slots are held per process: start afresh
    return folder


@pytest.fixture
def canary(tmp_path):
    path = tmp_path / "CANARY"
    yield path
    assert not path.exists(), "a planted pickle ran"


@contextmanager
def _no_hang(seconds: int = 20):
    def expire(signum, frame):
        raise AssertionError("the cache blocked on a planted entry")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


VALUE = ("1320/67", Fraction(1320, 67))


def _entry_path(kind: str, key: str) -> Path:
    return cache.folder(kind) / cache._name(key)


def test_every_single_bit_flip_is_a_miss(base):
    cache.store("kind", "key", VALUE)
    path = _entry_path("kind", "key")
    good = path.read_bytes()
    assert cache.load("kind", "key") == VALUE
    for bit in range(len(good) * 8):
        flipped = bytearray(good)
        flipped[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(flipped))
        assert cache.load("kind", "key") is None, f"bit {bit} flipped was read as a value"
    path.write_bytes(good)
    assert cache.load("kind", "key") == VALUE


def _plant_fifo(path, canary, other):
    os.mkfifo(path)


def _plant_link(path, canary, other):
    os.symlink(other, path)  # a valid entry of another key, reached through a link


def _plant_folder(path, canary, other):
    path.mkdir()


def _plant_huge(path, canary, other):
    with open(path, "wb") as fh:
        fh.truncate(cache.MAX_ENTRY_BYTES + 1)


def _plant_raw_pickle(path, canary, other):
    path.write_bytes(pickle.dumps(("key", _Payload(canary))))


def _plant_forged(path, canary, other):
    path.write_bytes(cache._MAGIC + b"\0" * cache._MAC_BYTES + pickle.dumps(("key", _Payload(canary))))


def _plant_other_key(path, canary, other):
    path.write_bytes(other.read_bytes())  # authentic, but written for another key


PLANTS = [_plant_fifo, _plant_link, _plant_folder, _plant_huge, _plant_raw_pickle, _plant_forged, _plant_other_key]


@pytest.mark.parametrize("plant", PLANTS, ids=["fifo", "symlink", "folder", "huge", "raw pickle",
                                               "forged header", "another key's entry"])
def test_a_planted_entry_is_a_miss_and_never_runs(base, canary, plant):
    cache.store("kind", "other", "another value")
    other = _entry_path("kind", "other")
    path = _entry_path("kind", "key")
    plant(path, canary, other)
    with _no_hang():
        assert cache.load("kind", "key") is None
    cache.store("kind", "key", VALUE)  # rebuilt over what was planted (a folder stays: still a miss)
    with _no_hang():
        assert cache.load("kind", "key") in (VALUE, None)


@pytest.mark.parametrize("swapped", ["kind", "code key", "base"])
def test_a_folder_swapped_in_mid_run_is_never_read(base, canary, swapped):
    cache.store("kind", "key", VALUE)
    kind = cache.folder("kind")
    target = {"kind": kind, "code key": kind.parent, "base": base}[swapped]
    target.rename(target.with_name(target.name + ".moved"))
    # the attacker's copy of the tree, entries named as scalemath names them, each a pickle that runs code
    for folder in (base, kind.parent, kind):
        folder.mkdir(mode=0o700, exist_ok=True)
    (kind / cache._name("key")).write_bytes(pickle.dumps(("key", _Payload(canary))))
    (kind / cache._name("new")).write_bytes(cache._MAGIC + b"\0" * 32 + pickle.dumps(("new", _Payload(canary))))
    assert cache.load("kind", "key") == VALUE  # read from the folder checked and held, not the one swapped in
    assert cache.load("kind", "new") is None
    cache._FOLDERS.clear()  # a new process: it checks the new tree (this user's, private) and reads no forgery
    assert cache.load("kind", "key") is None
    assert cache.load("kind", "new") is None


@pytest.mark.parametrize("setup", [
    lambda base: (base.mkdir(), base.chmod(0o777)),
    lambda base: (base.with_name("real").mkdir(), base.symlink_to(base.with_name("real"))),
    lambda base: (base.mkdir(mode=0o700), (base / "entries.key").write_bytes(b"k" * 32),
                  (base / "entries.key").chmod(0o644)),
    lambda base: (base.mkdir(mode=0o700), (base / "entries.key").symlink_to(base.with_name("elsewhere"))),
    lambda base: (base.mkdir(mode=0o700), os.mkfifo(base / "entries.key", 0o600)),
    lambda base: (base.mkdir(mode=0o700), (base / "entries.key").write_bytes(b"short"),
                  (base / "entries.key").chmod(0o600)),
], ids=["base others can write", "base is a link", "key others can read", "key is a link", "key is a fifo",
        "key cut short"])
def test_an_unsafe_base_runs_uncached(base, setup):
    setup(base)
    with _no_hang():
        assert cache.folder("kind") is None
        cache.store("kind", "key", VALUE)
        assert cache.load("kind", "key") is None


def test_the_key_is_private_and_made_once(base):
    cache.store("kind", "key", VALUE)
    key = base / "entries.key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    first = key.read_bytes()
    cache._FOLDERS.clear()
    assert cache.load("kind", "key") == VALUE and key.read_bytes() == first


GENERATE = [sys.executable, "-m", "scalemath", "problems", "generate", "--n", "8", "--seed", "11", "--jobs", "1",
            "--format", "md,html,json"]


def _generate(out: Path, cache_dir: str, cwd: Path) -> dict[str, bytes]:
    env = dict(os.environ, SCALEMATH_CACHE_DIR=cache_dir)
    subprocess.run(GENERATE + ["--out", str(out)], check=True, env=env, capture_output=True, timeout=600, cwd=cwd)
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _flip_one_bit(path: Path, canary: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def _forge(path: Path, canary: Path) -> None:
    path.write_bytes(cache._MAGIC + b"\0" * 32 + pickle.dumps(("?", _Payload(canary))))


@pytest.mark.parametrize("tamper", [_flip_one_bit, _forge], ids=["one bit flipped in every entry",
                                                                 "every entry a forged pickle"])
def test_a_tampered_cache_changes_no_byte_of_a_set(tmp_path, canary, tamper):
    off = _generate(tmp_path / "off", "off", tmp_path)
    store = tmp_path / "cache"
    _generate(tmp_path / "warm", str(store), tmp_path)
    entries = [p for p in store.rglob("*.entry")]
    assert len(entries) > 20
    for path in entries:
        tamper(path, canary)
    tampered = _generate(tmp_path / "tampered", str(store), tmp_path)
    assert tampered == off
