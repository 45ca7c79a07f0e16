"""scalemath shardmap: the JAX chapter's shard_map programs run device by device in numpy (no jax here).

Every value is checked by a second route written in the test: the global computation in plain numpy, or the
collective's definition spelled out by hand per device. The jax cross-check is tests/test_xla_shardmap.py.
"""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from scalemath.cli import main
from scalemath.symbolic.notation import NotationError
from scalemath.symbolic.shardmap import parse_program
from scalemath.symbolic.shardmap_run import live_statements, run

# The chapter's example (jax-stuff.md, 'shard_map: explicit parallelism control over a program'): arange(512)
# int32 over all 8 devices of a 2x4 mesh, each keeps the first 4 of its 64 and pmeans them over the mesh.
# Book: local shape (64,), output shape (4,); the values, derived in the reference sheet
# (worked/part5-profiling-jax.yaml, jax-ex-shardmap-slice-average) and seen on CPU jax 0.10.2:
# out[k] = (1/8) * sum_i (64 i + k) = 224 + k.
PMEAN = ("X=2,Y=4", ["x: i32[512] P((X, Y))"], "y = pmean(x[:4], (X, Y))", ["y: P(None)"])


def test_the_chapters_pmean_example():
    r = run(parse_program(*PMEAN))
    assert r.program.inputs[0].local_shape(r.program.mesh) == (64,)
    assert r.outputs["y"].shape == (4,)
    by_hand = [sum(64 * i + k for i in range(8)) / 8 for k in range(4)]
    assert by_hand == [224.0, 225.0, 226.0, 227.0]
    assert r.outputs["y"].tolist() == by_hand
    assert r.outputs["y"].dtype == np.float32  # pmean of int32 divides: float32, as jax gives
    (event,) = r.events
    assert (event.kind, event.axes, event.group, event.elements, event.bytes) == ("AllReduce", ("X", "Y"), 8, 4, 16)


def _devices(mesh):
    """(device, coordinates) in row-major order, by hand."""
    names = list(mesh)
    out, n = [], int(np.prod(list(mesh.values())))
    for d in range(n):
        coord, rest = {}, d
        for a in reversed(names):
            coord[a] = rest % mesh[a]
            rest //= mesh[a]
        out.append((d, coord))
    return out


A = np.arange(8 * 16).reshape(8, 16)  # the input A: f32[8, 16] P(X, Y) on X=2, Y=4: blocks [4, 4]


def _block(x, y):
    return A[4 * x:4 * x + 4, 4 * y:4 * y + 4]


def _run(body, out, ins=("A: f32[8, 16] P(X, Y)",), mesh="X=2,Y=4"):
    return run(parse_program(mesh, list(ins), body, out))


# Each collective on A[8, 16] P(X, Y), mesh X=2, Y=4: what device (x, y) must hold, spelled out by hand.
COLLECTIVES = [
    ("s = psum(A, Y)", lambda x, y: sum(_block(x, k) for k in range(4)), ("AllReduce", ("Y",), 4, 16)),
    ("s = psum(A, (X, Y))", lambda x, y: sum(_block(i, k) for i in range(2) for k in range(4)),
     ("AllReduce", ("X", "Y"), 8, 16)),
    ("s = pmean(A, X)", lambda x, y: (_block(0, y) + _block(1, y)) / 2, ("AllReduce", ("X",), 2, 16)),
    ("s = all_gather(A, Y, axis=1)", lambda x, y: A[4 * x:4 * x + 4, :], ("AllGather", ("Y",), 4, 64)),
    ("s = all_gather(A, X, axis=0)", lambda x, y: A[:, 4 * y:4 * y + 4], ("AllGather", ("X",), 2, 32)),
    ("s = all_gather(A, (X, Y), axis=1)",  # X major: blocks (0,0) (0,1) ... (1,3) side by side
     lambda x, y: np.concatenate([_block(i, k) for i in range(2) for k in range(4)], axis=1),
     ("AllGather", ("X", "Y"), 8, 128)),
    ("s = psum_scatter(A, Y, scatter_dimension=0)",
     lambda x, y: sum(_block(x, k) for k in range(4))[y:y + 1], ("ReduceScatter", ("Y",), 4, 16)),
    ("s = all_to_all(A, Y, 0, 1)",  # piece y of every peer's rows, the peers' columns side by side
     lambda x, y: np.concatenate([_block(x, k)[y:y + 1] for k in range(4)], axis=1), ("AllToAll", ("Y",), 4, 64)),
    ("s = ppermute(A, Y, shift=1)", lambda x, y: _block(x, (y - 1) % 4), ("CollectivePermute", ("Y",), 4, 16)),
    ("s = ppermute(A, Y, shift=-1)", lambda x, y: _block(x, (y + 1) % 4), ("CollectivePermute", ("Y",), 4, 16)),
    ("s = ppermute(A, X)", lambda x, y: _block((x - 1) % 2, y), ("CollectivePermute", ("X",), 2, 16)),
    ("s = A + axis_index(Y)", lambda x, y: _block(x, y) + y, None),
    ("s = A * axis_index((X, Y))", lambda x, y: _block(x, y) * (4 * x + y), None),
    ("s = roll(A, 1, axis=0) - A", lambda x, y: np.roll(_block(x, y), 1, axis=0) - _block(x, y), None),
    ("s = A[:2, 1:3]", lambda x, y: _block(x, y)[:2, 1:3], None),
    ("s = dynamic_slice_in_dim(A, axis_index(Y), 2, axis=1)", lambda x, y: _block(x, y)[:, min(y, 2):min(y, 2) + 2],
     None),
]


@pytest.mark.parametrize("body,want,event", COLLECTIVES, ids=[c[0][4:] for c in COLLECTIVES])
def test_each_device_holds_what_the_collective_defines(body, want, event):
    r = _run(body, ["A: P(X, Y)"])
    for d, c in _devices({"X": 2, "Y": 4}):
        np.testing.assert_array_equal(r.steps[0].values[d], want(c["X"], c["Y"]), err_msg=f"device {d}")
    got = [(e.kind, e.axes, e.group, e.elements) for e in r.events]
    assert got == ([] if event is None else [event])


def test_the_collective_matmul_unrolled_equals_the_product():
    # jax-stuff.md's collective matmul A[B_X, D_Y] *_D W[D, F_Y] -> Out[B_X, F_Y] for Y = 4 (chunk D/Y = 4):
    # Y - 1 = 3 ppermutes of a [B/X, D/Y] block (the reference sheet's n_ppermute = Y - 1, bytes (B/X)(D/Y)*4)
    body = ['i = axis_index(Y)', 'o = A @ dynamic_slice_in_dim(W, i * 4, 4, axis=0)']
    for k in (1, 2, 3):
        body += ["A = ppermute(A, Y, shift=-1)", f"o = o + A @ dynamic_slice_in_dim(W, (i + {k}) % 4 * 4, 4, axis=0)"]
    r = _run(body, ["o: P(X, Y)"], ins=("A: f32[8, 16] P(X, Y)", "W: f32[16, 8] P(None, Y)"))
    np.testing.assert_array_equal(r.outputs["o"], A @ np.arange(128).reshape(16, 8))
    assert [(e.kind, e.elements, e.bytes) for e in r.events] == [("CollectivePermute", 16, 64)] * 3
    # four chunk matmuls [B/X, D/Y] x [D/Y, F/Y] = [4, 4] x [4, 2]: 2 * 4 * 4 * 2 FLOPs each, per device
    assert sum(s.flops for s in r.steps) == 4 * (2 * 4 * 4 * 2)


def test_batched_local_einsum():
    r = _run('o = einsum("bij,bjk->bik", A, B)', ["o: P(X, None, Y)"],
             ins=("A: f32[4, 2, 6] P(X)", "B: f32[4, 6, 8] P(X, None, Y)"))
    a, b = np.arange(48).reshape(4, 2, 6), np.arange(192).reshape(4, 6, 8)
    np.testing.assert_array_equal(r.outputs["o"], np.einsum("bij,bjk->bik", a, b))
    assert r.steps[0].flops == 2 * 2 * 2 * 6 * 2  # local b, i, j, k = 4/2, 2, 6, 8/4


def test_cli_prices_the_local_matmuls():
    out = json.loads(cli("--mesh", "X=2", "--in", "a: bf16[8, 16] P(X)", "--in", "w: bf16[16, 4]", "--body",
                         'o = einsum("bd,df->bf", a, w)', "--out", "o: P(X)", "--chip", "tpu-v5e",
                         "--format", "json").output)
    # [4, 16] x [16, 4] per device: 2 * 4 * 16 * 4 = 512 FLOPs at v5e's bf16 peak of 1.97e14 FLOP/s
    assert out["steps"][0]["flops"] == 512 and out["t_math"] == pytest.approx(512 / 1.97e14)


def test_the_chapters_problem_1():
    # jax-stuff.md, Worked Problem 1 on A: f32[S_X, D_Y]: (1) the average over each X shard, an [X, D_Y] array;
    # (2) roll(x, shift) - x within each shard. No communication in either.
    r = _run("m = mean(A, axis=0, keepdims=1); d = roll(A, 2, axis=0) - A", ["m: P(X, Y)", "d: P(X, Y)"])
    np.testing.assert_array_equal(r.outputs["m"], np.stack([A[:4].mean(axis=0), A[4:].mean(axis=0)]))
    by_hand = np.concatenate([np.roll(A[:4], 2, axis=0) - A[:4], np.roll(A[4:], 2, axis=0) - A[4:]])
    np.testing.assert_array_equal(r.outputs["d"], by_hand)
    assert r.events == () and r.outputs["m"].dtype == np.float32


@pytest.mark.parametrize("body,want", [
    ("s = sum(A)", lambda b: b.sum()), ("s = max(A, axis=1)", lambda b: b.max(axis=1)),
    ("s = min(A, axis=-1, keepdims=1)", lambda b: b.min(axis=-1, keepdims=True)),
], ids=["sum-all", "max-axis", "min-keepdims"])
def test_local_reductions(body, want):
    r = _run(body, ["A: P(X, Y)"], ins=("A: i32[8, 16] P(X, Y)",))
    for d, c in _devices({"X": 2, "Y": 4}):
        np.testing.assert_array_equal(r.steps[0].values[d], want(_block(c["X"], c["Y"])))
        assert r.steps[0].values[d].dtype == np.int32  # jax keeps int32 sums in int32


def test_dead_statements_are_marked():
    p = parse_program("X=2", ["x: f32[4] P(X)"], "a = psum(x, X); b = all_gather(x, X); c = a + 1", ["c: P(None)"])
    assert live_statements(p) == {0, 2}


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]), st.integers(1, 3), st.integers(1, 3))
def test_allreduce_is_reducescatter_then_allgather(x, y, rows, cols):
    # the identity the book builds AllReduce from, on every device, for any mesh and shape
    ins = [f"a: f32[{rows * x * y}, {cols}] P((X, Y))"]
    body = "r = psum(a, Y); s = psum_scatter(a, Y, scatter_dimension=0); g = all_gather(s, Y, axis=0)"
    if rows % y:
        return
    r = run(parse_program(f"X={x},Y={y}", ins, body, ["r: P(X)"]))
    for d in range(x * y):
        np.testing.assert_array_equal(r.steps[0].values[d], r.steps[2].values[d])


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([2, 3, 4, 8]), st.integers(-20, 20), st.integers(1, 3))
def test_ppermute_there_and_back_and_all_to_all_round_trip(n, shift, cols):
    # a shift by s then by -s puts every block back; an all_to_all from rows to columns and back is the identity
    body = (f"a = ppermute(x, X, shift={shift}); b = ppermute(a, X, shift={-shift}); "
            "c = all_to_all(x, X, 0, 1); d = all_to_all(c, X, 1, 0)")
    r = run(parse_program(f"X={n}", [f"x: f32[{n * n}, {n * cols}] P(X)"], body, ["d: P(X)"]))
    for dev in range(n):
        np.testing.assert_array_equal(r.steps[1].values[dev], r.steps[3].values[dev])
        np.testing.assert_array_equal(r.steps[3].values[dev], np.arange(n * n * n * cols).reshape(n * n, n * cols)
                                      [dev * n:(dev + 1) * n])


def cli(*args):
    return CliRunner().invoke(main, ["shardmap", *args])


def test_cli_text_and_json():
    args = ["--mesh", PMEAN[0], "--in", PMEAN[1][0], "--body", PMEAN[2], "--out", PMEAN[3][0], "--chip", "tpu-v5e"]
    text = cli(*args)
    assert text.exit_code == 0, text.output
    assert "every device: [224. 225. 226. 227.]" in text.output
    data = json.loads(cli(*args, "--format", "json").output)
    assert data["outputs"][0]["values"] == [224.0, 225.0, 226.0, 227.0]
    (c,) = data["steps"][0]["collectives"]
    # over both axes at once, priced as shard prices it: on a v5e 2x4 slice neither axis wraps (v5e wraps at 16
    # chips) and X=2 is one link anyway, so each axis brings W_ici/2 = 4.5e10 B/s, 9e10 B/s in all; 16 B is far
    # below the hop latency, 1 us per hop to the far corner, (2 - 1) + (4 - 1) = 4 hops: AllReduce twice 4 us
    assert c["bytes"] == 16 and c["time"] == pytest.approx(2 * max(4 * 1e-6, 16 * 7 / (8 * 9e10)))
    assert c["time_exact"] == "1/125000"


def test_cli_ppermute_price():
    out = json.loads(cli("--mesh", "Y=8", "--in", "a: bf16[64, 8] P(Y)", "--body", "b = ppermute(a, Y, shift=3)",
                         "--out", "b: P(Y)", "--chip", "tpu-v5e", "--format", "json").output)
    (c,) = out["steps"][0]["collectives"]
    # a [8, 8] bf16 block, 128 B; Y=8 on v5e is an open line (it wraps only at 16 chips), so device 5's block
    # goes 5 hops back to device 0: tpus.md's point-to-point transfer, V/W_link + 5 t_hop (cut-through); the
    # paths share links, so it is a lower bound
    assert c["bytes"] == 128 and c["time"] == pytest.approx(128 / 4.5e10 + 5 * 1e-6)
    assert "5 hop(s)" in c["how"] and "lower bound" in c["how"]


def test_cli_file(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('mesh = "X=2,Y=4"\nin = ["x: i32[512] P((X, Y))"]\nbody = "y = pmean(x[:4], (X, Y))"\n'
                 'out = ["y: P(None)"]\n')
    result = cli("--file", str(f), "--format", "json")
    assert json.loads(result.output)["outputs"][0]["values"] == [224.0, 225.0, 226.0, 227.0]


BAD = [
    (["--mesh", "X=2", "--in", "x: f32[5] P(X)", "--body", "y = x", "--out", "y: P(X)"], "does not split evenly"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(Z)", "--body", "y = x", "--out", "y: P(X)"], "unknown mesh axis"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = psum(x, Q)", "--out", "y: P()"], "unknown mesh axis"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = eval(x)", "--out", "y: P()"], "unknown function"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = __import__('os')", "--out", "y: P()"],
     "unknown function"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = x", "--out", "y: P()"], "differs between devices"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = z", "--out", "y: P(X)"], "not defined"),
    (["--mesh", "X=2", "--in", "x: c64[4] P(X)", "--body", "y = x", "--out", "y: P(X)"], "unknown element type"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = all_gather(x, X, tiled=2)", "--out", "y: P()"],
     "tiled"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = ppermute(x, X, shift=n)", "--out", "y: P(X)"],
     "whole number"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = x[9]", "--out", "y: P(X)"], "out of range"),
    (["--mesh", "X=64,Y=2", "--in", "x: f32[128] P((X, Y))", "--body", "y = x", "--out", "y: P((X, Y))"],
     "at most 64"),
    (["--in", "x: f32[4] P(X)"], "give --mesh"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = dynamic_slice_in_dim(x, 99999999999999999999, 1)",
      "--out", "y: P(X)"], "at most 2^31 - 1"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = x[:-99999999999]", "--out", "y: P(X)"],
     "at most 2^31 - 1"),
    (["--mesh", "X=64", "--in", "x: f32[4096, 64] P(X)", "--body", "a = all_gather(x, X); b = all_gather(a, X)",
      "--out", "b: P()"], "more than the 33554432"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "; ".join(["y = x"] * 300), "--out", "y: P(X)"],
     "more than 256 statements"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = " + "(" * 3000 + "x" + ")" * 3000, "--out", "y: P(X)"],
     "longer than 4000"),
    (["--mesh", "X=2", "--in", "x: f32[4] P(X)", "--body", "y = " + "(" * 900 + "x" + ")" * 900, "--out", "y: P(X)"],
     "too deeply nested"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[b[1].replace(" ", "-") + str(i) for i, b in enumerate(BAD)])
def test_bad_input_is_one_clear_line(args, message):
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_parse_errors_point_at_the_fault():
    with pytest.raises(NotationError, match=r"expected ',' or '\)', found the end"):
        parse_program("X=2", ["x: f32[4] P(X)"], "y = psum(x, X", ["y: P()"])


# jax's spelling takes jax's default tiled=False; the short form is the book's tiled collective. A local [4, 4]
# block of A: f32[8, 16] P(X, Y) on X=2, Y=4; device (x, y) holds rows 4x.., columns 4y..; shapes and a value by hand
UNTILED = [
    ("s = jax.lax.all_gather(A, 'Y')", (4, 4, 4), lambda x: np.stack([_blk(x, y) for y in range(4)])),
    ("s = jax.lax.all_gather(A, 'Y', axis=1)", (4, 4, 4), lambda x: np.stack([_blk(x, y) for y in range(4)], 1)),
    ("s = all_gather(A, Y, tiled=False)", (4, 4, 4), lambda x: np.stack([_blk(x, y) for y in range(4)])),
    ("s = all_gather(A, Y, axis=1)", (4, 16), lambda x: np.concatenate([_blk(x, y) for y in range(4)], 1)),
    ("s = jax.lax.all_gather(A, 'Y', axis=1, tiled=True)", (4, 16),
     lambda x: np.concatenate([_blk(x, y) for y in range(4)], 1)),
    # device (x, 0) keeps row 0 of the sum over y
    ("s = jax.lax.psum_scatter(A, 'Y')", (4,), lambda x: sum(_blk(x, y) for y in range(4))[0]),
    ("s = psum_scatter(A, Y)", (1, 4), lambda x: sum(_blk(x, y) for y in range(4))[:1]),
    # device (x, 0) receives row 0 of every device's block, stacked as columns
    ("s = jax.lax.all_to_all(A, 'Y', 0, 1)", (4, 4), lambda x: np.stack([_blk(x, y)[0] for y in range(4)], 1)),
]


def _blk(x, y):
    return np.arange(8 * 16).reshape(8, 16)[4 * x:4 * x + 4, 4 * y:4 * y + 4]


@pytest.mark.parametrize("body,shape,device0", UNTILED, ids=[f"untiled{i}" for i in range(len(UNTILED))])
def test_jax_spelling_is_untiled_by_default(body, shape, device0):
    r = run(parse_program("X=2,Y=4", ["A: f32[8, 16] P(X, Y)"], body, ["s: P(X, Y)"] if len(shape) > 1
                          else ["s: P((X, Y))"]))
    assert r.steps[0].values[0].shape == shape
    for x in range(2):
        np.testing.assert_array_equal(r.steps[0].values[4 * x], device0(x))


@pytest.mark.parametrize("body,words", [
    ("s = jax.lax.psum_scatter(A, 'Y', scatter_dimension=0)", "dimension 0 (8) must equal the 4 devices"),
    ("s = jax.lax.all_to_all(A, 'Y', 1, 0)", "dimension 1 (2) must equal the 4 devices"),
    ("s = psum(A, Y, tiled=False)", "psum has no untiled form"),
], ids=["psum-scatter", "all-to-all", "psum"])
def test_untiled_size_errors_are_one_line(body, words):
    out = cli("--mesh", "Y=4", "--in", "A: f32[8, 8] P(None, Y)", "--body", body, "--out", "s: P(Y)")
    assert out.exit_code == 2 and words in out.output and "Traceback" not in out.output


# the declared type is shown (jax's promotion by hand: bf16 with an int or a number written out stays bf16, with
# f32 it becomes f32; pmean of ints is f32); numpy computes bf16 values in float32, said once
DTYPE_ROWS = [
    ("s = A * 2.5", "bfloat16"), ("s = A + i", "bfloat16"), ("s = A + f", "float32"), ("s = pmean(i, X)", "float32"),
    ("s = psum(A, X)", "bfloat16"), ("s = all_gather(A, X)", "bfloat16"), ("s = i + 1", "int32"),
    ("t = A * 2; s = t + A", "bfloat16"), ("t = A + f; s = t * 2", "float32"),
]


@pytest.mark.parametrize("body,dtype", DTYPE_ROWS, ids=[f"dtype{k}" for k in range(len(DTYPE_ROWS))])
def test_declared_dtype_is_shown(body, dtype):
    args = ["--mesh", "X=2", "--in", "A: bf16[4] P(X)", "--in", "i: i32[4] P(X)", "--in", "f: f32[4] P(X)",
            "--body", body, "--out", "s: P(X)"]
    data = json.loads(cli(*args, "--format", "json").output)
    assert data["steps"][-1]["dtype"] == dtype
    text = cli(*args).output
    assert f"-> local {dtype}[" in text
    assert text.count("computed here in float32") == (dtype == "bfloat16" or "t = A * 2" in body)


# an error inside a call's arguments puts the caret under that argument (the text underlined, by hand)
CARETS = [
    ("s = all_gather(A, Z, axis=1)", "unknown mesh axis 'Z'", "Z"),
    ("s = psum(A, (X, Z))", "unknown mesh axis 'Z'", "(X, Z)"),
    ("s = roll(A,   k)", "roll's shift must be a whole number", "k"),
    ("s = roll(A, 1, axis=5)", "roll: axis 5 out of range", "5"),
    ("s = psum(B, X)", "'B' is not defined", "B"),
    ("s = all_gather(A, X, axis=7)", "axis 7 out of range for rank 2", "7"),
    ("s = all_gather(A, X, tiled=3)", "tiled is True or False", "3"),
    ("s = jax.lax.psum_scatter(A + 1, 'Y')", "dimension 0 (4) must equal the 8 devices", "A + 1"),
    ("s = sum(A, axis=2)", "sum: axis 2 out of range", "2"),
    ("  s = ppermute(A, X, shift=n)", "ppermute's shift must be a whole number", "n"),
]


@pytest.mark.parametrize("body,reason,under", CARETS, ids=[f"caret{k}" for k in range(len(CARETS))])
def test_the_caret_points_at_the_argument(body, reason, under):
    with pytest.raises(NotationError) as e:
        mesh = "X=2,Y=8" if "'Y'" in body else "X=2"
        run(parse_program(mesh, ["A: f32[8, 4] P(X)"], body, ["s: P(X)"]))
    text, start = e.value.text, e.value.start
    assert reason in e.value.reason and text == body.strip()
    assert text[start:start + len(under)] == under
    caret = str(e.value).splitlines()[2]
    assert caret.strip() == "^" * len(under) and caret.index("^") - 2 == start
