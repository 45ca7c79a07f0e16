"""``scalemath compare``: how many times one number is another, exactly.

Two sides, each a quantity evaluated in a context: the same quantity on two chips ("how much faster
is a B200 than an H100 at this AllGather?"), or two quantities of the same unit (a TPU AllToAll
against a GPU AllToAll). Values given with ``--set`` go to every side whose quantity takes them.

>>> from scalemath.quantities import Context
>>> r = compare("roofline.critical_intensity", Context(chip="b200", dtype="bf16"),
...             "roofline.critical_intensity", Context(chip="h100", dtype="bf16"), {})
>>> r["ratio"]
335/352
"""

from __future__ import annotations

from typing import Mapping

import sympy as sp

from ..values import printing as formatting
from .. import quantities
from ..errors import BadValueError, UnknownNameError
from .derive import check_size, conventions_text, conventions_used

__all__ = ["compare", "as_text", "as_json"]


def _side(name: str, ctx: quantities.Context, given: Mapping[str, object]) -> dict:
    q = quantities.get(name)
    params = {p.name for p in q.params_under(ctx.conventions)}
    mine = {k: v for k, v in given.items() if k in params}
    check_size(q, ctx, mine)
    ev = quantities.evaluate(q, ctx, mine)
    if not ev.is_numeric:
        missing = sorted(s.name for s in ev.value.free_symbols)
        raise BadValueError(f"{name} on {ctx.chip or 'no chip'} still depends on {', '.join(missing)}; "
                            f"give {'it' if len(missing) == 1 else 'them'} with --set")
    return {"quantity": name, "chip": ctx.chip, "unit": q.unit, "value": ev.value, "evaluated": ev}


def compare(first: str, ctx1: quantities.Context, second: str, ctx2: quantities.Context,
            given: Mapping[str, object]) -> dict:
    """Both sides evaluated exactly and their ratio (first over second)."""
    params = {p.name for name, ctx in ((first, ctx1), (second, ctx2))
              for p in quantities.get(name).params_under(ctx.conventions)}
    for key in given:
        if key not in params:
            raise UnknownNameError(f"parameter of {first} or {second}", key, params)
    a, b = _side(first, ctx1, given), _side(second, ctx2, given)
    if a["unit"] != b["unit"]:
        raise BadValueError(f"{first} is in {a['unit']} and {second} in {b['unit']}: only numbers of the same kind "
                            "compare")
    if b["value"] == 0:
        raise BadValueError(f"{second} is 0 here, so no ratio exists")
    used = {**conventions_used(quantities.get(first), ctx1), **conventions_used(quantities.get(second), ctx2)}
    return {"first": a, "second": b, "ratio": sp.simplify(a["value"] / b["value"]), "given": dict(given),
            "conventions": used}


def _label(side: dict, other: dict) -> str:
    """A side's name in the report: the chip when only chips differ, else the quantity (and chip)."""
    if side["quantity"] == other["quantity"]:
        return side["chip"] or side["quantity"]
    return f"{side['quantity']}" + (f" on {side['chip']}" if side["chip"] else "")


def as_text(report: dict) -> str:
    a, b, ratio = report["first"], report["second"], report["ratio"]
    la, lb = _label(a, b), _label(b, a)
    width = max(len(la), len(lb))
    head = (f"compare {a['quantity']}" if a["quantity"] == b["quantity"] else
            f"compare {a['quantity']} with {b['quantity']}")
    lines = [head]
    if report["given"]:
        lines.append("given: " + ", ".join(f"{k} = {v}" for k, v in report["given"].items()))
    if report["conventions"]:
        lines.append(conventions_text(report["conventions"]))
    for label, side in ((la, a), (lb, b)):
        lines.append(f"  {label:<{width}}  {formatting.with_unit(side['value'], side['unit'])}  (exact {side['value']})")
    lines.append(f"ratio {la} / {lb} = {formatting.decimal(ratio, 4)}  (exact {ratio})")
    if a["unit"] == "s" and ratio != 1:
        fast, slow, times = (la, lb, 1 / ratio) if ratio < 1 else (lb, la, ratio)
        lines.append(f"{fast} takes {formatting.decimal(1 / times, 4)} of the time: {formatting.decimal(times, 4)}x "
                     f"faster than {slow}")
    return "\n".join(lines)


def as_json(report: dict) -> dict:
    def side(s):
        return {"quantity": s["quantity"], "chip": s["chip"], "unit": s["unit"], "exact": str(s["value"]),
                "value": formatting.to_float(s["value"])}

    return {"first": side(report["first"]), "second": side(report["second"]),
            "given": {k: str(v) for k, v in report["given"].items()}, "conventions": report["conventions"],
            "ratio": {"exact": str(report["ratio"]), "value": formatting.to_float(report["ratio"])}}
