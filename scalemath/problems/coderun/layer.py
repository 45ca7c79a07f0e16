"""The layout task ``layer_sharding``: its closed forms, its grading from the compiled HLO, its statement and stub.

profiling.md ends with a transformer layer whose naive sharding a profile shows to be slow (184 ms per layer),
and whose fixed sharding takes 67 ms. Here the layer is its MLP block, ``out = gelu(x @ W_in) @ W_out`` on a
mesh of n devices along ``x``; the student writes ``shardings()`` and the block is run with it (the sandbox's
``layout`` mode). The two layouts the task is about, in the book's notation (axis ``X`` is the mesh's ``x``):

- the naive one (the stub): both weights sharded along the model dimension D, ``W_in[D_X, F]`` and
  ``W_out[F, D_X]``, x and out replicated. By the book's rules its first matmul multiplies local shards and
  AllReduces the ``[B, F]`` partial sums (gathering W_in instead would move D/B times more), and its second
  gathers the ``[B, D_X]`` output: ``B F + B D`` elements;
- Megatron's: ``W_in[D, F_X]`` (column-sharded) and ``W_out[F_X, D]`` (row-sharded): no communication before
  one AllReduce of the ``[B, D]`` output. Its bytes are the budget.

The engine's route (:func:`layout_plan`) takes each matmul's cheapest plan from
:func:`scalemath.symbolic.sharding.plans`. The grader reads the submission's collectives from the compiled HLO
with :func:`scalemath.xla.parse.parse_collectives` (V in bytes, as ``scalemath hlo`` counts them) and asks,
besides right values, that each weight be sharded over the n devices (a replicated layer moves nothing, but is
not sharded at all) and that the collectives move at most the budget per device. Its report prices the layer on
a chip (:data:`CHIP`) with a roofline model: the collectives one after another at the prices ``scalemath hlo
--chip`` gives them, plus the larger of the FLOPs at the chip's peak and the bytes a device holds (the entry's
parameters and result) read once from HBM. The naive layout's time is the same model on its closed forms, so
the statement needs no jax; the times are the model's, not measurements.

>>> p = {"n": 8, "B": 8, "D": 1024, "F": 4096}
>>> budget_bytes(p), naive_bytes(p), megatron_flops(p)
(32768, 163840, 16777216)
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ...symbolic.notation import parse_array, parse_contraction
from ...symbolic.sharding import array_bytes, plans

__all__ = ["CHIP", "LAYOUTS", "layout_plan", "budget_bytes", "naive_bytes", "megatron_flops", "model_seconds",
           "layout_seconds", "spec_of", "judge", "statement", "stub"]

CHIP = "tpu-v5e"
BYTES = 4  # float32
#: the two layouts, each array in the book's notation (X is the mesh axis x)
LAYOUTS = {
    "naive": {"x": "X[B, D]", "w_in": "Win[D_X, F]", "w_out": "Wout[F, D_X]", "hidden": "H[B, F]",
              "out": "Out[B, D]"},
    "megatron": {"x": "X[B, D]", "w_in": "Win[D, F_X]", "w_out": "Wout[F_X, D]", "hidden": "H[B, F_X]",
                 "out": "Out[B, D]"},
}


def _mesh(p) -> dict:
    return {"X": int(p["n"])}


def _sizes(p) -> dict:
    return {"B": int(p["B"]), "D": int(p["D"]), "F": int(p["F"])}


def spec_of(layout: str) -> dict[str, tuple]:
    """A layout as ``shardings()`` returns it: per array, ``'x'`` or None per dimension (hidden left out)."""
    return {name: tuple("x" if d.axes else None for d in parse_array(text, {"X": 2}).dims)
            for name, text in LAYOUTS[layout].items() if name != "hidden"}


def layout_plan(p, layout: str) -> tuple[list, sp.Expr]:
    """The collectives (engine :class:`~scalemath.symbolic.sharding.Collective`) and FLOPs per device of the
    block under ``layout``: each matmul by the plan that moves the fewest bytes (gelu, elementwise, is free)."""
    a = LAYOUTS[layout]
    mesh, sizes = _mesh(p), _sizes(p)
    collectives, flops = [], sp.Integer(0)
    for text in (f"{a['x']} @ {a['w_in']} -> {a['hidden']}", f"{a['hidden']} @ {a['w_out']} -> {a['out']}"):
        found = plans(parse_contraction(text, mesh), mesh, sizes, sp.Integer(BYTES))
        best = min(found, key=lambda plan: sum((c.bytes for c in plan.collectives), sp.Integer(0)))
        collectives += best.collectives
        flops += best.flops
    return collectives, flops


def budget_bytes(p) -> int:
    """Megatron's bytes per device in collectives: one AllReduce of the [B, D] output."""
    return int(sum(c.bytes for c in layout_plan(p, "megatron")[0]))


def naive_bytes(p) -> int:
    """The naive layout's bytes per device in collectives."""
    return int(sum(c.bytes for c in layout_plan(p, "naive")[0]))


def megatron_flops(p) -> int:
    """FLOPs per device of the block under Megatron's layout."""
    return int(layout_plan(p, "megatron")[1])


def _chip(chip):
    from ...catalog.hardware import get_chip

    return get_chip(chip) if isinstance(chip, str) else chip


def model_seconds(chip, n: int, moved, flops, held) -> Fraction:
    """The roofline model's time of the block: ``moved`` ((kind, bytes) per collective over the n devices of
    ``x``) priced as ``scalemath hlo --chip`` prices them, one after another, plus the larger of ``flops`` (f32
    matmuls, at the rate that report uses for them) and ``held`` bytes read once from HBM."""
    from ...xla.analysis import _environment, _price, _rate

    chip = _chip(chip)
    mesh = {"x": int(n)}
    env, _, cores, notes = _environment(chip, None, mesh)
    comms = sum((_price(kind, ["x"], int(n), Fraction(v), mesh, env)[0] or Fraction(0) for kind, v in moved),
                Fraction(0))
    math_time = Fraction(flops) / _rate(chip, "f32", None, cores, notes)
    return comms + max(math_time, Fraction(held) / _hbm(chip, n))


def _hbm(chip, n: int) -> Fraction:
    """HBM bytes/s of one device, as ``scalemath hlo`` takes it (a core's share on a chip of separate cores)."""
    from ...xla.analysis import _environment

    chip = _chip(chip)
    return Fraction(chip.hbm_bytes_per_s, _environment(chip, None, {"x": int(n)})[2])


def layout_seconds(p, layout: str, chip=CHIP) -> Fraction:
    """The model time of ``layout`` from its closed forms (what the HLO of that layout gives, without jax)."""
    collectives, flops = layout_plan(p, layout)
    mesh, sizes = _mesh(p), _sizes(p)
    held = sum(array_bytes(parse_array(LAYOUTS[layout][k], mesh), mesh, sizes, BYTES)
               for k in ("x", "w_in", "w_out", "out"))
    return model_seconds(chip, p["n"], [(c.kind, int(c.bytes)) for c in collectives], int(flops), int(held))


def _time(seconds) -> str:
    from ...values.printing import with_unit

    return with_unit(sp.Rational(seconds.numerator, seconds.denominator), "s")


def _weights_whole(module, p) -> list[str]:
    """The weights a device holds whole or in part larger than 1/n (from the entry's parameters 1 and 2)."""
    from ...xla.shapes import arrays

    body = module.computations.get(module.entry) or []
    params = {int(i.args[0]): i for i in body if i.opcode == "parameter" and i.args and i.args[0].isdigit()}
    share = p["D"] * p["F"] // p["n"]
    whole = []
    for number, name in ((1, "W_in"), (2, "W_out")):
        held = sum(a.elements for a in arrays(params[number].shape)) if number in params else None
        if held != share:
            whole.append(name)
    return whole


def judge(task, hlo: str | None, base: dict, CodeGrade):  # noqa: N803 - the grade's class, passed by .grade
    """The grade of a layout whose values are right, from its compiled HLO: a ``CodeGrade`` (the class
    :mod:`.grade` passes in, which imports this module, so that the two do not import each other)."""
    from ...xla.analysis import analyse
    from ...xla.parse import parse_collectives, parse_module
    from ...errors import ScalemathError
    from ...xla.shapes import dtype_bits

    p, n = task.params, task.params["n"]
    if hlo is None:
        return CodeGrade("wrong collectives", "the compiled HLO could not be read back", **base)
    try:
        module = parse_module(hlo)
        found = parse_collectives(hlo, (n,), ("x",), module=module)
        report = analyse(hlo, _chip(CHIP), {"x": n}, source="the compiled HLO")
    except (ScalemathError, ValueError, KeyError, IndexError) as exc:  # not the HLO the child wrote
        return CodeGrade("wrong collectives", f"the compiled HLO could not be read ({str(exc)[:300]})", **base)
    moved = [(c, c.elements * dtype_bits(c.dtype or "f32") // 8) for c in found]
    shown = tuple(f"{c}: {v:,} bytes" for c, v in moved)
    observed = tuple((c.kind, int(c.elements)) for c in found)
    total, budget = sum(v for _, v in moved), budget_bytes(p)
    comms = sum((Fraction(c["time"]) * c["count"] for c in report["collectives"] if c["time"] is not None),
                Fraction(0))
    seconds = comms + max(Fraction(report["total"]["t_math"]), Fraction(report["memory"]["needed_bytes"]) /
                          _hbm(CHIP, n))
    naive = layout_seconds(p, "naive")
    details = {"budget_bytes": budget, "collective_bytes": total, "chip": CHIP,
               "moved": [{"kind": c.kind, "bytes": v} for c, v in moved],
               "model_seconds": {"submission": float(seconds), "naive": float(naive)}}
    listing = " + ".join(f"{c.kind} {v:,}" for c, v in moved) or "none"
    timing = (f"the roofline model (not a measurement) puts the layer at {_time(seconds)} on {CHIP}, the naive "
              f"layout at {_time(naive)}")
    extra = dict(collectives=shown, observed=observed, details=details, **base)
    whole = _weights_whole(module, p)
    if whole:
        return CodeGrade("bad layout", f"the values are right, but a device holds more than 1/{n} of "
                         f"{' and '.join(whole)}: shard each weight over the {n} devices, as the task asks (a "
                         "replicated layer moves nothing but is not sharded)", **extra)
    if total > budget:
        return CodeGrade("over budget", f"the values are right, but the collectives move {total:,} bytes per device "
                         f"({listing}), over the budget of {budget:,}; {timing}", **extra)
    return CodeGrade("right", f"the values are right and the collectives move {total:,} bytes per device "
                     f"({listing}), within the budget of {budget:,}; {timing}", **extra)


def _shape(*dims) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def statement(task, grade: str) -> str:
    """TASK.md of a layout task; ``grade`` is the paragraph on how it is graded."""
    p = task.params
    n, b, d, f = p["n"], p["B"], p["D"], p["F"]
    return f"""# Hands-on: fix a layer's sharding

A mesh of {n} devices along one axis `x`. The layer is a transformer's MLP block, fixed and written by the grader:

    out = jax.nn.gelu(x @ w_in, approximate=False) @ w_out

with `x` {_shape(b, d)} (B x D), `w_in` {_shape(d, f)} (D x F) and `w_out` {_shape(f, d)} (F x D), all float32 (4
bytes per element). You choose only how each array is sharded. Write `shardings()`: it returns a dict with the
keys `"x"`, `"w_in"`, `"w_out"` and `"out"`, each a tuple with one entry per dimension, `"x"` (that dimension is
sharded over the mesh axis) or `None` (replicated), and optionally `"hidden"`, the sharding of the
{_shape(b, f)} intermediate `gelu(x @ w_in)` (applied with `jax.lax.with_sharding_constraint`). The block is
jitted with those shardings, and XLA inserts whatever collectives they need. An axis shards at most one
dimension of an array, and a dimension it shards must divide by {n}.

The stub holds a naive layout: both weights sharded along the model dimension D. It computes the right values,
but its compiled program moves {naive_bytes(p):,} bytes per device in collectives (the book's V of each,
summed). Rewrite `shardings()` so that the block moves at most {budget_bytes(p):,} bytes per device in
collectives (as many as the {_shape(b, d)} output, once) while each weight stays sharded over the {n} devices (a
device holds 1/{n} of `w_in` and 1/{n} of `w_out`). Any such layout passes.

The book's profiling chapter ends with such a fix, a layer taken from 184 ms to 67 ms. The report prices the
layer on {CHIP}: the naive layout takes {_time(layout_seconds(p, "naive"))}, and the report gives yours. These
times are the roofline model's, not measurements: the collectives one after another at the prices
`scalemath hlo --chip {CHIP}` gives them, plus the larger of the FLOPs at the chip's peak and the bytes a
device holds read once from HBM.

{grade}
"""


def stub(task) -> str:
    """stub.py of a layout task: ``shardings()`` returning the naive layout, which runs but is over budget."""
    p = task.params
    layout = spec_of("naive")
    tuples = {name: "(" + ", ".join('"x"' if e else "None" for e in spec) + ")" for name, spec in layout.items()}
    rows = "\n".join(f'        "{name}": {tuples[name]},{comment}' for name, comment in zip(
        tuples, ("", "  # W_in[D_x, F]", "  # W_out[F, D_x]", "")))
    sizes = (f'x [B, D] = {_shape(p["B"], p["D"])}, w_in [D, F] = {_shape(p["D"], p["F"])}, '
             f'w_out [F, D] = {_shape(p["F"], p["D"])}, float32')
    return f'''"""Choose the block's shardings (see TASK.md). Mesh axis "x" of {p["n"]} devices; the grader writes
the block:

    out = jax.nn.gelu(x @ w_in, approximate=False) @ w_out

{sizes}.
"""


def shardings():
    """Per array, one entry per dimension: "x" (sharded over the mesh axis) or None (replicated); optionally
    "hidden" for the [B, F] intermediate gelu(x @ w_in).

    This is the naive layout, both weights sharded along D: right values, but {naive_bytes(p):,} bytes per device
    in collectives, over the budget of {budget_bytes(p):,}.
    """
    return {{
{rows}
    }}
'''
