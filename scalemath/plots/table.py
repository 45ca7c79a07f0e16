"""``table QUANTITY --plot FILE``: the quantity on each chip as a horizontal bar, exact values from
quantities.evaluate (the table's own rows), drawn on a log axis when they span more than a hundredfold."""

from __future__ import annotations

from .. import quantities as Q
from ..errors import BadValueError, ScalemathError
from .common import Bars, Figure

__all__ = ["data"]


def data(q: Q.Quantity, contexts: list[Q.Context], given: dict, skip_missing: bool) -> Figure:
    rows = []
    for ctx in contexts:
        try:
            ev = Q.evaluate(q, ctx, given)
        except ScalemathError:
            if not skip_missing:
                raise
            continue
        if ev.is_numeric:
            rows.append((ctx.chip, ev.value))
    if not rows:
        raise BadValueError(f"no chip has a numeric value of {q.name} to plot; give the missing values with --set")
    given_text = ", ".join(f"{k}={v}" for k, v in given.items())
    bars = Bars(tuple(c for c, _ in rows), tuple(v for _, v in rows), q.unit, f"{q.name}")
    return Figure("table", f"{q.title} ({q.name})", (bars,),
                  note=(f"given {given_text}; " if given_text else "") + f"source: {q.source}",
                  meta={"rows": rows})
