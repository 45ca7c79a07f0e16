"""A numpy simulation of a sharded matmul over a fake device mesh: the second route for sharding answers.

:func:`simulate` builds random integer arrays, gives every device of the mesh its shards, runs a
:class:`~scalemath.symbolic.sharding.Plan` step by step (free slices, ring AllGather / ReduceScatter /
AllReduce, point-to-point AllToAll and CollectivePermute, the local matmuls), counts the bytes each device sends and receives,
and checks the assembled result against the unsharded product, exactly.

Every shard carries the global indices it holds along each dimension, so a step that leaves a device
with data other than the block its notation names (e.g. an AllGather that removes the *major* axis of
``I_XY``) is caught; with ``strict=False`` it is recorded in ``problems`` and the simulation goes on
with the data the devices really hold.

>>> from scalemath.symbolic.notation import parse_contraction
>>> from scalemath.symbolic.sharding import plans
>>> mesh, sizes = {"X": 4}, {"I": 8, "J": 16, "K": 4}
>>> c = parse_contraction("A[I, J_X] @ B[J, K] -> C[I, K]", mesh)
>>> r = simulate(c, mesh, sizes, plans(c, mesh, sizes, 2)[0], 2)
>>> r.result_ok, r.bytes_received_per_device, r.per_collective, r.flops_per_device
(True, 192, (('AllGather_X A[I, J_X] -> A[I, J]', 192),), 1024)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

import numpy as np

from ..errors import BadValueError
from ..symbolic.notation import Contraction
from ..symbolic.sharding import Collective, Plan
from .fake_mesh import PlanMismatchError, _num, _Shard, _Sim, _State

__all__ = ["SimResult", "PlanMismatchError", "simulate"]


@dataclass(frozen=True)
class SimResult:
    result_ok: bool
    bytes_received_per_device: int | Fraction  # max over devices, all collectives
    bytes_sent_per_device: int | Fraction
    per_collective: tuple[tuple[str, int | Fraction], ...]  # (str(collective), max bytes received per device)
    flops_per_device: int
    problems: tuple[str, ...] = field(default=())  # layout mismatches (strict=False only)


def simulate(contraction: Contraction, mesh: Mapping[str, int], sizes: Mapping[str, int], plan: Plan,
             bytes_per_element, rng: np.random.Generator | None = None, *, strict: bool = True) -> SimResult:
    """Run ``plan`` for ``contraction`` on a fake mesh; raise :class:`PlanMismatchError` if it goes wrong.

    ``strict=False`` records layout mismatches in ``problems`` instead of raising, and a wrong
    product gives ``result_ok=False``. Sizes that do not divide raise a ``ValueError``.
    """
    c = contraction
    if len({c.lhs.name, c.rhs.name, c.out.name}) != 3:
        raise BadValueError("the simulation needs three distinct array names")
    try:
        sizes = {n: int(sizes[n]) for n in set(c.lhs.names + c.rhs.names)}
    except KeyError as e:
        raise BadValueError(f"no size given for dimension {e.args[0]}") from None
    rng = rng if rng is not None else np.random.default_rng(0)
    sim = _Sim(mesh, sizes, bytes_per_element, strict)
    glob = {arr.name: rng.integers(-3, 4, size=tuple(sizes[n] for n in arr.names)) for arr in (c.lhs, c.rhs)}
    states = {}
    for arr in (c.lhs, c.rhs):
        states[arr.name] = _State(arr.plain(), {
            d: _Shard(glob[arr.name][np.ix_(*sim.expected(arr, d))], sim.expected(arr, d)) for d in sim.devices})

    pre = list(itertools.takewhile(lambda x: x.before.name in states, plan.collectives))
    post = list(plan.collectives[len(pre):])
    if any(x.before.name != c.out.name for x in post):
        raise PlanMismatchError("collectives on the inputs must come before those on the output")
    per = []

    def run(st: _State, col: Collective) -> _State:
        before = dict(sim.recv)
        st = sim.collective(st, col)
        per.append((str(col), _num(max(sim.recv[d] - before[d] for d in sim.devices))))
        return st

    for col in pre:
        states[col.before.name] = run(states[col.before.name], col)
    a = sim.reslice(states[c.lhs.name], plan.lhs, f"slice to {plan.lhs}")
    b = sim.reslice(states[c.rhs.name], plan.rhs, f"slice to {plan.rhs}")

    # the local matmuls
    letters = {n: chr(ord("a") + i) for i, n in enumerate(dict.fromkeys(c.lhs.names + c.rhs.names))}
    spec = "".join(letters[n] for n in c.lhs.names) + "," + "".join(letters[n] for n in c.rhs.names) + "->" \
        + "".join(letters[n] for n in plan.local_out.names)
    shards, flops = {}, 0
    for d in sim.devices:
        sa, sb = a.shards[d], b.shards[d]
        ia = dict(zip(c.lhs.names, sa.idx))
        ib = dict(zip(c.rhs.names, sb.idx))
        for j in c.contracting:
            if not np.array_equal(ia[j], ib[j]):
                raise PlanMismatchError(f"device {d}: {plan.lhs} and {plan.rhs} hold different blocks of {j}")
        for n in c.batch:
            if not np.array_equal(ia[n], ib[n]):
                raise PlanMismatchError(f"device {d}: {plan.lhs} and {plan.rhs} hold different blocks of {n}")
        flops = max(flops, 2 * math.prod(len(ia[n]) for n in c.batch + c.lhs_free)
                    * math.prod(len(ia[j]) for j in c.contracting)
                    * math.prod(len(ib[n]) for n in c.rhs_free))
        shards[d] = _Shard(np.einsum(spec, sa.data, sb.data), tuple({**ia, **ib}[n] for n in plan.local_out.names))
    st = _State(plan.local_out.plain(), shards)
    sim.check_layout(st, "the local matmul")
    u = plan.local_out.unreduced
    for lead in sim.leaders(u):  # the partial sums of each group cover every contracting index once
        count = np.zeros(tuple(sizes[j] for j in c.contracting), dtype=int)
        for d in sim.group(lead, u):
            ia = dict(zip(c.lhs.names, a.shards[d].idx))
            count[np.ix_(*(ia[j] for j in c.contracting))] += 1
        if not (count == 1).all():
            raise PlanMismatchError(f"the partial sums of {plan.local_out} do not cover the contraction exactly once")

    for col in post:
        st = run(st, col)
    st = sim.reslice(st, plan.out, f"slice to {plan.out}")

    # assemble the global result: sum the partials of each unreduced group, check replicas agree
    result = np.zeros(tuple(sizes[n] for n in c.out.names), dtype=np.int64)
    written = np.zeros(result.shape, dtype=bool)
    agree = True
    for lead in sim.leaders(st.arr.unreduced):
        members = [st.shards[d] for d in sim.group(lead, st.arr.unreduced)]
        sim.same_idx(members, None, f"unreduced {st.arr}")
        total = sum(m.data for m in members)
        where = np.ix_(*members[0].idx)
        agree &= bool(np.array_equal(result[where][written[where]], total[written[where]]))
        result[where], written[where] = total, True
    want = np.einsum(spec.split("->")[0] + "->" + "".join(letters[n] for n in c.out.names), *glob.values())
    ok = agree and bool(written.all()) and bool(np.array_equal(result, want))
    if not ok and strict:
        raise PlanMismatchError(f"plan {plan.name!r} for {c}: the simulated result differs from the product"
                                + ("" if agree else " (replicas disagree)") + ("" if written.all() else " (not covered)"))
    return SimResult(ok, _num(max(sim.recv.values())), _num(max(sim.sent.values())), tuple(per), flops,
                     tuple(sim.problems))
