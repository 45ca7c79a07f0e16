"""shardmap's ppermute with explicit permutations (jax-stuff.md writes perm=[(j, (j - 1) % axis_size) ...]):
parsed, never evaluated; values per device, bytes and the torus price, each checked by hand in the test.
The jax cross-check of the same programs is in tests/test_xla_shardmap.py.
"""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from scalemath.cli import main
from scalemath.symbolic.notation import NotationError
from scalemath.symbolic.shardmap import parse_program
from scalemath.symbolic.shardmap_run import run

A = np.arange(8 * 16).reshape(8, 16)  # A: f32[8, 16] P(X, Y) on X=2, Y=4: device (x, y) holds a [4, 4] block
ZERO = np.zeros((4, 4))


def _block(x, y):
    return A[4 * x:4 * x + 4, 4 * y:4 * y + 4]


def _devices():
    return [(d, d // 4, d % 4) for d in range(8)]  # row-major: X major


# (body, what device (x, y) holds, by hand, as a function of x, y)
PERMS = [
    ("s = ppermute(A, Y, perm=[(0, 1), (1, 2), (2, 3), (3, 0)])", lambda x, y: _block(x, (y - 1) % 4)),
    # the chapter's form: the axis size from psum(1, 'Y'), jax.lax. and axis_name= as it writes them
    ("n = jax.lax.psum(1, axis_name='Y'); s = jax.lax.ppermute(A, axis_name='Y', "
     "perm=[(j, (j - 1) % n) for j in range(n)])", lambda x, y: _block(x, (y + 1) % 4)),
    ("s = ppermute(A, 'Y', perm=[(i, (i + 1) % 4) for i in range(4)])", lambda x, y: _block(x, (y - 1) % 4)),
    # the reference solution's form: jax.lax.axis_size, and a perm given positionally
    ("n = jax.lax.axis_size('Y'); s = jax.lax.ppermute(A, 'Y', [(j, (j - 1) % n) for j in range(n)])",
     lambda x, y: _block(x, (y + 1) % 4)),
    # devices 0 and 1 along Y send to 2 and 3; 0 and 1 receive nothing: zeros, as jax gives
    ("s = ppermute(A, Y, perm=[(0, 2), (1, 3)])", lambda x, y: _block(x, y - 2) if y >= 2 else ZERO),
    ("s = ppermute(A, Y, perm=[(0, 0), (1, 2), (2, 1)])",
     lambda x, y: {0: _block(x, 0), 1: _block(x, 2), 2: _block(x, 1), 3: ZERO}[y]),
    ("s = ppermute(A, Y, perm=[(k, 3 - k) for k in range(1, 3)])",
     lambda x, y: {1: _block(x, 2), 2: _block(x, 1)}.get(y, ZERO)),
    ("s = ppermute(A, X, perm=[(0, 1)])", lambda x, y: _block(0, y) if x == 1 else ZERO),
    # over (X, Y): positions 4x + y; 0 <-> 5 and 3 -> 7
    ("s = ppermute(A, (X, Y), perm=[(0, 5), (5, 0), (3, 7)])",
     lambda x, y: {(1, 1): _block(0, 0), (0, 0): _block(1, 1), (1, 3): _block(0, 3)}.get((x, y), ZERO)),
    ("s = ppermute(A, Y, perm=[])", lambda x, y: ZERO),
]


@pytest.mark.parametrize("body,want", PERMS, ids=[f"perm{i}" for i in range(len(PERMS))])
def test_each_device_holds_what_the_permutation_sends(body, want):
    r = run(parse_program("X=2,Y=4", ["A: f32[8, 16] P(X, Y)"], body, ["s: P(X, Y)"]))
    for d, x, y in _devices():
        np.testing.assert_array_equal(r.steps[-1].values[d], want(x, y), err_msg=f"device {d}")
    (e,) = r.events[-1:]
    assert (e.kind, e.elements, e.bytes) == ("CollectivePermute", 16, 64)  # a [4, 4] f32 block per device


def test_the_collective_matmul_as_the_chapter_writes_it():
    # jax-stuff.md's loop unrolled, its ppermute verbatim: the product equals A @ W
    step = ("A = jax.lax.ppermute(A, axis_name='Y', perm=[(j, (j - 1) % axis_size) for j in range(axis_size)])")
    body = ["axis_size = jax.lax.psum(1, axis_name='Y')", "idx = jax.lax.axis_index('Y')",
            "o = A @ jax.lax.dynamic_slice_in_dim(W, idx * 4, 4, axis=0)"]
    for k in (1, 2, 3):
        body += [step, f"o = o + A @ jax.lax.dynamic_slice_in_dim(W, (idx + {k}) % axis_size * 4, 4, axis=0)"]
    r = run(parse_program("X=2,Y=4", ["A: f32[8, 16] P(X, Y)", "W: f32[16, 8] P(None, Y)"], body, ["o: P(X, Y)"]))
    np.testing.assert_array_equal(r.outputs["o"], A @ np.arange(128).reshape(16, 8))
    assert [e.perm for e in r.events if e.kind == "CollectivePermute"] == [((0, 3), (1, 0), (2, 1), (3, 2))] * 3


BAD = [
    ("s = ppermute(A, Y, perm=[(0, 1), (0, 2)])", "names source 0 twice"),
    ("s = ppermute(A, Y, perm=[(0, 1), (2, 1)])", "names target 1 twice"),
    ("s = ppermute(A, Y, perm=[(0, 4)])", "perm pair (0, 4) is out of range: positions run from 0 to 3"),
    ("s = ppermute(A, Y, perm=[(-1, 0)])", "out of range"),
    ("s = ppermute(A, Y, perm=[(0, 1), (1, 2), (2, 3), (3, 0), (0, 0)])", "5 pairs for 4 devices"),
    ("s = ppermute(A, Y, perm=[(i, i) for i in range(99999999)])", "99999999 pairs for 4 devices"),
    ("s = ppermute(A, Y, perm=[(i, (i + 1) % m) for i in range(4)])", "'m' is not a number known before"),
    ("s = ppermute(A, Y, perm=[(i, (i + 1) % 0) for i in range(4)])", "modulo 0"),
    ("s = ppermute(A, Y, perm=[(0, 1, 2)])", "a pair (source, target)"),
    ("s = ppermute(A, Y, perm=[(0.5, 1)])", "not a number known before"),
    ("s = ppermute(A, Y, perm=(0, 1))", "perm is a list"),
    ("s = ppermute(A, Y, perm=[(0, 1)], shift=1)", "not both"),
    ("s = ppermute(A, Q, perm=[(0, 1)])", "unknown mesh axis 'Q'"),
    ("i = axis_index(Y); s = ppermute(A, Y, perm=[(i, 0)])", "'i' is not a number known before"),
    ("s = ppermute(A, Y, perm=[(i, 0) for i in enumerate(4)])", "in range(...)"),
    ("s = ppermute(A, Y, perm=[(__import__('os'), 0)])", "unknown function"),
    ("s = os.system('ls')", "unknown function 'os.system'"),
    ("s = A.T", "a dotted name is only a call"),
    ("s = ppermute(A, Y, (X, Y))", "whole number"),
    ("s = ppermute(A, (X, Y), shift=1)", "over several, give perm="),
]


@pytest.mark.parametrize("body,message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_permutations_are_one_clear_line(body, message):
    result = CliRunner().invoke(main, ["shardmap", "--mesh", "X=2,Y=4", "--in", "A: f32[8, 16] P(X, Y)", "--body",
                                       body, "--out", "s: P(X, Y)"])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert sum(line.startswith("error:") for line in result.output.splitlines()) == 1


def test_parse_errors_raise_notation_errors():
    with pytest.raises(NotationError, match="names source 0 twice"):
        parse_program("Y=4", ["a: f32[4] P(Y)"], "s = ppermute(a, Y, perm=[(0, 1), (0, 2)])", ["s: P(Y)"])


def _price(body, mesh="X=2,Y=4", chip="tpu-v5e"):
    out = CliRunner().invoke(main, ["shardmap", "--mesh", mesh, "--in", "A: f32[8, 16] P(X, Y)", "--body", body,
                                    "--out", "s: P(X, Y)", "--chip", chip, "--format", "json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["steps"][-1]["collectives"][0]


LINK = 4.5e10  # v5e: 45 GB/s one way per ICI link (the book's 4.5e10)

HOP = 1e-6  # v5e: the catalog's 1 us per ICI hop

LINE = [  # body, hops by hand on a v5e 2x4 slice (v5e axes wrap only at 16 chips: both are open lines), words
    ("s = ppermute(A, Y, perm=[(0, 1), (1, 2), (2, 3), (3, 0)])", 3, "3 -> 0, is 3 hop(s)"),
    ("s = ppermute(A, Y, perm=[(0, 3), (3, 0)])", 3, "0 -> 3, is 3 hop(s)"),  # no wraparound link joins them
    ("s = ppermute(A, Y, perm=[(0, 2), (1, 3)])", 2, "the longest path, 0 -> 2, is 2 hop(s)"),
    ("s = ppermute(A, (X, Y), perm=[(0, 6)])", 3, "is 3 hop(s)"),  # (0,0) -> (1,2): 1 along X + 2 along Y
    ("s = ppermute(A, (X, Y), perm=[(0, 1), (1, 0)])", 1, "is 1 hop(s)"),
    ("s = ppermute(A, Y, perm=[(0, 0)])", 0, "nothing moves"),
    ("s = ppermute(A, Y, shift=3)", 3, "shift 3 on an open line of 4"),
]


@pytest.mark.parametrize("body,hops,how", LINE, ids=[f"line{i}" for i in range(len(LINE))])
def test_tpu_price_is_the_longest_path(body, hops, how):
    c = _price(body)
    assert c["bytes"] == 64 and how in c["how"]
    # tpus.md, Question 5: a point-to-point transfer streams cut-through, V/W_link plus t_hop per hop
    assert c["time"] == pytest.approx(64 / LINK + hops * HOP) if hops else c["time_exact"] == "0"


RING = [  # body, hops by hand on Y=16 of a v5e pod (it spans the 16 chips: a ring, either way round), whether
    # several blocks go more than one hop (then the price is a lower bound if their paths share links)
    ("s = ppermute(A, Y, shift=3)", 3, True),
    ("s = ppermute(A, Y, shift=-1)", 1, False),
    ("s = ppermute(A, Y, shift=13)", 3, True),
    ("s = ppermute(A, Y, perm=[(0, 15)])", 1, False),
    ("s = ppermute(A, Y, perm=[(0, 8), (8, 0)])", 8, True),
    ("s = ppermute(A, Y, perm=[(2, 12)])", 6, False),
]


@pytest.mark.parametrize("body,hops,shared", RING, ids=[f"ring{i}" for i in range(len(RING))])
def test_tpu_price_on_a_ring(body, hops, shared):
    c = _price(body, mesh="X=1,Y=16")  # a local [8, 1] f32 block: 32 B
    assert c["bytes"] == 32 and f"{hops} hop(s)" in c["how"]
    assert c["time"] == pytest.approx(32 / LINK + hops * HOP)
    assert ("lower bound" in c["how"]) == shared


def test_the_chapters_example_sizes():
    # jax-stuff.md, 'Example: Collective Matmul' (worked record jax-ex-collective-matmul): B = 1024, D = 2048 on
    # X = 2, Y = 4, int32: local A [512, 512], Y - 1 = 3 ppermutes of (B/X)(D/Y) * 4 = 1,048,576 bytes each, pairs
    # {0,3},{1,0},{2,1},{3,2} along Y as the HLO shows. F (8192 in the book) does not touch A's permutes: F = 32 here.
    step = "A = jax.lax.ppermute(A, axis_name='Y', perm=[(j, (j - 1) % axis_size) for j in range(axis_size)])"
    body = ["axis_size = jax.lax.psum(1, axis_name='Y')", "idx = jax.lax.axis_index('Y')",
            "o = A @ jax.lax.dynamic_slice_in_dim(W, idx * 512, 512, axis=0)"]
    for k in (1, 2, 3):
        body += [step, f"o = o + A @ jax.lax.dynamic_slice_in_dim(W, (idx + {k}) % axis_size * 512, 512, axis=0)"]
    p = parse_program("X=2,Y=4", ["A: i32[1024, 2048] P(X, Y)", "W: i32[2048, 32] P(None, Y)"], body, ["o: P(X, Y)"])
    assert p.inputs[0].local_shape(p.mesh) == (512, 512)
    r = run(p)
    permutes = [e for e in r.events if e.kind == "CollectivePermute"]
    assert len(permutes) == 3 and {e.bytes for e in permutes} == {1048576}
    assert {e.perm for e in permutes} == {((0, 3), (1, 0), (2, 1), (3, 2))}
    assert r.events == tuple(permutes)  # psum(1, 'Y') is the axis size, no collective


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([2, 3, 4, 8]), st.integers(-20, 20), st.randoms(use_true_random=False))
def test_a_shift_is_its_permutation_and_a_permutation_undoes_its_inverse(n, shift, rnd):
    # shift=s is perm=[(i, (i + s) % n) ...]; any permutation followed by its inverse puts every block back
    targets = list(range(n))
    rnd.shuffle(targets)
    there = ", ".join(f"({i}, {t})" for i, t in enumerate(targets))
    back = ", ".join(f"({t}, {i})" for i, t in enumerate(targets))
    body = (f"a = ppermute(x, X, shift={shift}); b = ppermute(x, X, perm=[(i, (i + {shift}) % {n}) for i in "
            f"range({n})]); c = ppermute(x, X, perm=[{there}]); d = ppermute(c, X, perm=[{back}])")
    r = run(parse_program(f"X={n}", [f"x: f32[{2 * n}] P(X)"], body, ["d: P(X)"]))
    for dev in range(n):
        np.testing.assert_array_equal(r.steps[0].values[dev], r.steps[1].values[dev])
        np.testing.assert_array_equal(r.steps[3].values[dev], np.arange(2 * n)[2 * dev:2 * dev + 2])
        np.testing.assert_array_equal(r.steps[2].values[targets[dev]], np.arange(2 * n)[2 * dev:2 * dev + 2])


TOKENS = ["(", ")", "[", "]", ",", "i", "j", "n", "for", "in", "range", "%", "+", "-", "*", "0", "1", "4",
          "99999999999", "__import__", "os.system", "'Y'", "Y", "perm", "=", "psum(1, Y)", ".", "lambda", ":"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=30))
def test_any_perm_text_is_read_or_refused_never_run(tokens):
    body = f"n = psum(1, 'Y'); s = ppermute(A, Y, perm=[{' '.join(tokens)}])"
    result = CliRunner().invoke(main, ["shardmap", "--mesh", "X=2,Y=4", "--in", "A: f32[8, 16] P(X, Y)", "--body",
                                       body, "--out", "s: P(X, Y)"])
    assert result.exit_code in (0, 2), result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, Exception) or \
        isinstance(result.exception, SystemExit)
