"""``scalemath shard PATTERN --xla``: the pattern compiled by ``jax.jit`` on simulated CPU devices, beside the engine.

The chapter on JAX (jax-stuff.md, 'jax.jit') leaves the collectives to XLA: give the inputs' and the output's
shardings, or a ``with_sharding_constraint``, and GSPMD picks the communication. This module asks XLA what it
picks for ``shard``'s PATTERN and holds that against what ``shard`` predicted:

* a contraction ``A[...] @ B[...] -> C[...]`` is ``jax.jit`` of an einsum with those ``NamedSharding``\\ s; XLA's
  collectives must be one of the engine's plans (kinds, mesh axes, elements), or move no more data than one
  (:func:`scalemath.xla.compile.compare_plans`);
* a reshard ``A[...] -> A[...]`` is a jitted ``with_sharding_constraint``; XLA's collectives must be exactly the
  ones ``shard`` lists (:func:`scalemath.xla.compile.reshard_matches`).

The compile runs in a child process (:func:`scalemath.xla.child.run_child`) in f32: the CPU backend computes bf16
in f32, so elements are compared and bytes follow from the pattern's dtype.
"""

from __future__ import annotations

import sympy as sp

from ..catalog import hardware
from ..errors import BadValueError
from ..symbolic.notation import parse_contraction
from ..symbolic.sharding import plans
from .child import run_child
from .compile import compare_plans, reshard_matches
from .parse import parse_collectives

__all__ = ["check", "as_text"]


def _label(c) -> str:
    axes = ",".join(c.axes) if c.axes is not None else "?"
    return f"{c.kind}_{axes} ({c.elements} elements)"


def _sizes(pattern: str, mesh: dict, given) -> dict[str, int]:
    from ..symbolic.notation import parse_reshard

    arrays = parse_reshard(pattern, mesh) if pattern.count("[") < 3 else (
        lambda c: (c.lhs, c.rhs, c.out))(parse_contraction(pattern, mesh))
    names = list(dict.fromkeys(n for arr in arrays for n in arr.names))
    missing = [n for n in names if not (n in given and sp.sympify(given[n]).is_Integer)]
    if missing:
        raise BadValueError("--xla compiles real arrays: give every dimension's size with --set, e.g. --set "
                            + ",".join(f"{n}=1024" for n in missing))
    return {n: int(given[n]) for n in names}


def check(report: dict, pattern: str, given, timeout: float = 120) -> dict:
    """Compile PATTERN with jax.jit and compare XLA's collectives with ``report`` (``shard_report``'s for the same
    pattern, mesh and sizes ``given``)."""
    mesh = {str(k): int(v) for k, v in report["mesh"].items()}
    reshard = "layouts" in report
    if reshard and "collectives" not in report:
        raise BadValueError("--xla needs a reshard, A[...] -> A[...], or a contraction, A[...] @ B[...] -> C[...]")
    sizes = _sizes(pattern, mesh, given)
    devices = int(sp.prod(list(mesh.values())))
    answer = run_child("jit_child", {"kind": "reshard" if reshard else "contraction", "pattern": pattern,
                                     "mesh": mesh, "sizes": sizes}, devices, timeout, "the pattern")
    observed = parse_collectives(answer["hlo"], mesh)
    xla = [_label(c) for c in observed]
    if reshard:
        b = hardware.dtype_bytes(report["dtype"])
        ok, detail = reshard_matches(report, observed, mesh, sp.Rational(b.numerator, b.denominator))
        plan = None
    else:
        engine = plans(parse_contraction(pattern, mesh), mesh, {k: sp.Integer(v) for k, v in sizes.items()}, 1)
        ok, chosen, detail = compare_plans(engine, observed)
        plan = None if chosen is None else [p.name for p in engine].index(chosen.name) + 1
    return {"verdict": "agrees" if ok else "differs", "devices": devices, "xla": xla, "plan": plan,
            "exact": ok and "exact match" in detail if not reshard else ok, "detail": detail}


def as_text(result: dict) -> str:
    head = f"XLA (jax.jit on {result['devices']} simulated CPU devices): " + (", ".join(result["xla"])
                                                                             or "no collectives")
    if result["verdict"] == "agrees":
        if result["plan"] is None:
            verdict = "agrees: XLA's collectives are the ones listed above"
        elif result["exact"]:
            verdict = f"agrees: XLA carries out plan {result['plan']}"
        else:
            verdict = f"agrees: XLA moves no more data than plan {result['plan']}, by other collectives"
    else:
        verdict = "differs: XLA's collectives are none of the plans above (details with --format json)"
    return f"{head}\n{verdict}"
