"""The numpy simulation of sharded matmuls agrees with the engine's plans: product, bytes, FLOPs.

What the engine's V means (the book's convention, sharding.md 3.4-3.8), and what a device of a
group of n then receives on a ring:

- AllGather:     V = bytes of the per-device RESULT (``after``)          -> receives V·(n-1)/n
- ReduceScatter: V = bytes of the per-device unreduced INPUT (``before``) -> receives V·(n-1)/n
- AllReduce:     V = bytes of the per-device unreduced INPUT (``before``) -> receives 2·V·(n-1)/n (RS + AG)
- AllToAll:      V = bytes of the per-device shard (``before``) times n   -> receives V·(n-1)/n²
  (the shard is cut in n pieces and n-1 of them leave; as many arrive)
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalemath.reports.simulate import PlanMismatchError, simulate
from scalemath.symbolic.notation import Array, parse_contraction
from scalemath.symbolic.sharding import plans

MESH = {"X": 4, "Y": 2}
SIZES = {"I": 32, "J": 64, "K": 128}

BOOK_CASES = {
    "case1-no-comm": "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]",
    "case2-gather-A": "A[I, J_X] @ B[J, K] -> C[I, K]",
    "case2-gather-B": "A[I, J] @ B[J_X, K] -> C[I, K]",
    "case2-different-axes": "A[I, J_X] @ B[J_Y, K] -> C[I, K]",
    "case2-prefix-XY-vs-X": "A[I, J_XY] @ B[J_X, K] -> C[I, K_Y]",
    "case2-YX-vs-XY": "A[I, J_YX] @ B[J_XY, K] -> C[I, K]",
    "case2-multi-axis-gather": "A[I, J_XY] @ B[J, K] -> C[I, K]",
    "case3-allreduce": "A[I, J_X] @ B[J_X, K] -> C[I, K]",
    "case3-reducescatter-K": "A[I, J_X] @ B[J_X, K] -> C[I, K_X]",
    "case3-reducescatter-I": "A[I, J_X] @ B[J_X, K] -> C[I_X, K]",
    "case3-unreduced-out": "A[I, J_X] @ B[J_X, K] -> C[I, K]{U_X}",
    "case3-XY-allreduce": "A[I, J_XY] @ B[J_XY, K] -> C[I, K]",
    "case3-XY-reducescatter": "A[I, J_XY] @ B[J_XY, K] -> C[I, K_XY]",
    "case3-XY-partly-unreduced": "A[I, J_XY] @ B[J_XY, K] -> C[I, K]{U_Y}",
    "case4-out-K_X": "A[I_X, J] @ B[J, K_X] -> C[I, K_X]",
    "case4-out-I_X": "A[I_X, J] @ B[J, K_X] -> C[I_X, K]",
    "case4+3-Y": "A[I_X, J_Y] @ B[J_Y, K_X] -> C[I_X, K]",
    "case4-mixed": "A[I_X, J_Y] @ B[J, K_X] -> C[I_X, K_Y]",
    "out-allgather": "A[I_X, J] @ B[J, K] -> C[I, K]",
    "out-alltoall": "A[I_X, J] @ B[J, K] -> C[I, K_X]",
    "out-gather-minor-axis": "A[I_XY, J] @ B[J, K] -> C[I_X, K]",
    "out-free-slice": "A[I, J] @ B[J, K] -> C[I_X, K_Y]",
    "out-reduced-to-unreduced": "A[I_X, J] @ B[J, K] -> C[I, K]{U_X}",
}


def _bytes(arr: Array, mesh, sizes, b) -> Fraction:
    """Per-device bytes of ``arr``, computed here from the notation (not by the engine)."""
    n = math.prod(Fraction(sizes[d.name], math.prod(mesh[a] for a in d.axes)) for d in arr.dims)
    return n * Fraction(b)


def book_received(col, mesh, sizes, b) -> Fraction:
    """What one device receives for ``col``, from the book's V and the ring factors above."""
    n = math.prod(mesh[a] for a in col.axes)
    assert col.group == n
    if col.kind == "AllGather":
        v, factor = _bytes(col.after, mesh, sizes, b), Fraction(n - 1, n)
    elif col.kind == "ReduceScatter":
        v, factor = _bytes(col.before, mesh, sizes, b), Fraction(n - 1, n)
    elif col.kind == "AllReduce":
        v, factor = _bytes(col.before, mesh, sizes, b), Fraction(2 * (n - 1), n)
    elif col.kind == "CollectivePermute":  # the block a device lacks arrives whole, from one device
        v, factor = _bytes(col.after, mesh, sizes, b), Fraction(1)
    else:
        assert col.kind == "AllToAll"
        v, factor = n * _bytes(col.before, mesh, sizes, b), Fraction(n - 1, n * n)
    assert Fraction(str(col.bytes)) == v, f"the engine's V for {col} is {col.bytes}, the book's {v}"
    return v * factor


def _check_plan(c, mesh, sizes, plan, b, strict=True):
    r = simulate(c, mesh, sizes, plan, b, strict=strict)
    assert r.result_ok
    predicted = [book_received(col, mesh, sizes, b) for col in plan.collectives]
    assert [got for _, got in r.per_collective] == predicted
    assert [name for name, _ in r.per_collective] == [str(col) for col in plan.collectives]
    assert r.bytes_received_per_device == sum(predicted)
    assert r.bytes_sent_per_device == sum(predicted)  # rings and all-to-alls are symmetric
    assert r.flops_per_device == plan.flops
    return r


@pytest.mark.parametrize("pattern", BOOK_CASES.values(), ids=BOOK_CASES.keys())
def test_every_plan_of_the_book_cases_simulates(pattern):
    c = parse_contraction(pattern, MESH)
    ps = plans(c, MESH, SIZES, 2)
    assert ps
    for plan in ps:
        r = _check_plan(c, MESH, SIZES, plan, 2)
        assert r.problems == ()


@pytest.mark.parametrize("pattern,kinds,received", [
    # A[I, J] is 32*64*2 = 4096 bytes; each device receives the 3 shards it lacks
    ("A[I, J_X] @ B[J, K] -> C[I, K]", ["AllGather"], 3072),
    # C[I, K] is 32*128*2 = 8192 bytes of partial sums: ring RS + AG
    ("A[I, J_X] @ B[J_X, K] -> C[I, K]", ["AllReduce"], 12288),
    ("A[I, J_X] @ B[J_X, K] -> C[I, K_X]", ["ReduceScatter"], 6144),
    # C[I_X, K] = 2048 bytes per device; 3 of its 4 pieces leave and 3 arrive
    ("A[I_X, J] @ B[J, K] -> C[I, K_X]", ["AllToAll"], 1536),
    # one AllToAll over both axes: C[I_XY, K] = 4*128*2 = 1024 bytes per device, 7 of its 8 pieces leave
    ("A[I_XY, J] @ B[J, K] -> C[I, K_XY]", ["AllToAll"], 896),
    # C[I_Y, K] to C[I_X, K]: the 8*128*2 = 2048-byte block a device needs lies inside the one it has, or
    # inside the block a device on the other Y row holds: one permute, received whole
    ("A[I_Y, J] @ B[J, K] -> C[I_X, K]", ["CollectivePermute"], 2048),
    # C[I_X, K] to C[I_Y, K]: permute 4-row blocks (4*128*2 = 1024 bytes) into C[I_YX, K], then gather
    # over X: 3 of the 4 blocks of C[I_Y, K] (16*128*2 = 4096 bytes) arrive, 3072 bytes: 4096 in all
    ("A[I_X, J] @ B[J, K] -> C[I_Y, K]", ["CollectivePermute", "AllGather"], 4096),
    # C[I_XY, K] to C[I_YX, K]: each 4*128*2 = 1024-byte block to the device the new order names
    ("A[I_XY, J] @ B[J, K] -> C[I_YX, K]", ["CollectivePermute"], 1024),
    # C[I_XY, K] to C[I_Y, K]: permute into C[I_YX, K] (1024 bytes), gather over X (3/4 of 4096 bytes)
    ("A[I_XY, J] @ B[J, K] -> C[I_Y, K]", ["CollectivePermute", "AllGather"], 4096),
    # C[I_XY, K] to C[I_Y, K_X]: permute into C[I_YX, K] (1024 bytes), then X moves to K: 3 of the 4 pieces of
    # each device's 16*128*2/4 = 1024 bytes arrive, 768: 1792 in all
    ("A[I_XY, J] @ B[J, K] -> C[I_Y, K_X]", ["CollectivePermute", "AllToAll"], 1792),
], ids=["allgather", "allreduce", "reducescatter", "alltoall", "alltoall-XY", "permute-Y-to-X",
        "permute-X-to-Y-then-gather", "permute-reorder", "permute-keep-minor-axis", "permute-then-alltoall"])
def test_bytes_by_hand(pattern, kinds, received):
    c = parse_contraction(pattern, MESH)
    plan = plans(c, MESH, SIZES, 2)[0]
    r = simulate(c, MESH, SIZES, plan, 2)
    assert r.result_ok
    assert [x.kind for x in plan.collectives] == kinds
    assert sum(got for _, got in r.per_collective) == received == r.bytes_sent_per_device
    assert r.bytes_received_per_device == received


def test_fractional_bytes_per_element():
    c = parse_contraction("A[I, J_X] @ B[J_X, K] -> C[I, K]", MESH)
    half = sp.Rational(1, 2)
    r = _check_plan(c, MESH, SIZES, plans(c, MESH, SIZES, half)[0], half)
    assert r.bytes_received_per_device == 3072  # int4: a quarter of the bf16 12288


# --- the engine's known faults, found by the simulation (see the report) ---------------------

# --- the simulation refuses broken plans ---------------------------------------------------------

def test_a_missing_reduction_is_caught():
    c = parse_contraction("A[I, J_X] @ B[J_X, K] -> C[I, K]", MESH)
    plan = plans(c, MESH, SIZES, 2)[0]
    with pytest.raises(PlanMismatchError, match="needs a reduction"):
        simulate(c, MESH, SIZES, dataclasses.replace(plan, collectives=()), 2)


def test_mismatched_contracting_blocks_are_caught():
    c = parse_contraction("A[I, J_X] @ B[J, K] -> C[I, K]", MESH)
    plan = plans(c, MESH, SIZES, 2)[0]  # gather A; pretend the gather did not happen
    with pytest.raises(PlanMismatchError, match="hold different blocks of J"):
        simulate(c, MESH, SIZES, dataclasses.replace(plan, collectives=(), lhs=c.lhs), 2)


def test_sizes_that_do_not_divide_are_refused():
    c = parse_contraction("A[I_X, J] @ B[J, K] -> C[I_X, K]", MESH)
    sizes = {"I": 30, "J": 8, "K": 8}
    with pytest.raises(ValueError, match="does not split into 4 equal blocks"):
        simulate(c, MESH, sizes, plans(c, MESH, sizes, 2)[0], 2)


# --- a law for all valid patterns -----------------------------------------------------------------

def _tail_ok(before: tuple, after: tuple) -> bool:
    """Removing axes keeps the named block only if they are the trailing (minor) ones."""
    return tuple(after) == tuple(before)[: len(after)]


def _known_fault(plan, c) -> bool:
    """The plan removes or adds a non-trailing axis somewhere (the engine faults above)."""
    steps = [(col.before, col.after) for col in plan.collectives]
    pre = [s for s, col in zip(steps, plan.collectives) if col.before.name != c.out.name]
    last_in = {c.lhs.name: c.lhs, c.rhs.name: c.rhs}
    for b, a in pre:
        last_in[b.name] = a
    last_out = ([a for (b, a), col in zip(steps, plan.collectives) if col.before.name == c.out.name]
                or [plan.local_out])[-1]
    steps += [(last_in[c.lhs.name], plan.lhs), (last_in[c.rhs.name], plan.rhs), (last_out, plan.out)]
    for b, a in steps:
        for db, da in zip(b.dims, a.dims):
            if not (_tail_ok(db.axes, da.axes) or _tail_ok(da.axes, db.axes)):
                return True
    return False


@st.composite
def _problems(draw):
    axes = draw(st.lists(st.sampled_from("XYZ"), min_size=1, max_size=3, unique=True))
    mesh = {a: draw(st.integers(1, 4)) for a in axes}
    n = math.prod(mesh.values())
    sizes = {d: n * draw(st.integers(1, 2)) for d in "IJK"}

    def array(name, dims, may_reduce=False):
        slots = {d: [] for d in dims + (("U",) if may_reduce else ())}
        for a in draw(st.permutations(axes)):
            where = draw(st.sampled_from((None,) + tuple(slots)))
            if where is not None:
                slots[where].append(a)
        text = f"{name}[{', '.join(d + ('_' + ''.join(slots[d]) if slots[d] else '') for d in dims)}]"
        return text + ("{U_" + "".join(slots["U"]) + "}" if slots.get("U") else "")

    pattern = f"{array('A', ('I', 'J'))} @ {array('B', ('J', 'K'))} -> {array('C', ('I', 'K'), True)}"
    return pattern, mesh, sizes, draw(st.sampled_from([1, 2, 4]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_problems())
def test_every_plan_of_every_pattern_simulates(problem):
    pattern, mesh, sizes, b = problem
    c = parse_contraction(pattern, mesh)
    for plan in plans(c, mesh, sizes, b):
        if not _known_fault(plan, c):
            _check_plan(c, mesh, sizes, plan, b)
            continue
        try:  # the data the devices really hold must still give the product, for the bytes predicted
            _check_plan(c, mesh, sizes, plan, b, strict=False)
        except PlanMismatchError as e:
            assert "is not a free slice" in str(e)
