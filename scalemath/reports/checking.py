"""What ``check`` does with a quantity evaluated for a user: their number or their closed form held against the
engine's, with the device counts a usual slip may involve and the rounding the question asks for. The CLI and the
Python API both check through :func:`check_answer`.
"""

from __future__ import annotations

from typing import Mapping

from .. import quantities
from ..errors import BadValueError
from ..symbolic.derivation import Evaluated

__all__ = ["check_answer"]


def check_answer(q: quantities.Quantity, ctx: quantities.Context, ev: Evaluated, answer, expr: str | None,
                 rel_tol, how_to_give: Mapping[str, str]):
    """A :class:`~scalemath.values.check.Verdict` for ``answer``, or an
    :class:`~scalemath.values.check.ExpressionVerdict` for ``expr``, against ``q`` in the form ``ctx``'s conventions
    choose. ``how_to_give`` words, for the interface asking, how a missing value is given (``"values"``) and how a
    closed form is checked instead (``"expr"``)."""
    from ..values.check import check_expression, check_value, whole_rounding

    form = q.under(ctx.conventions).expr
    # device counts a slip may involve; N counts devices on a ring only in the collectives (elsewhere: heads)
    names = ("n_dev", "links", "X", "Y", "Z") + (("N",) if q.topic in ("collectives", "gpu") else ())
    counts = {s.name: int(v) for s, v in ev.given.items() if s.name in names and v.is_Integer}
    if expr is not None:
        from ..symbolic.symbols import SYMBOLS

        symbols = {n: info.symbol for n, info in SYMBOLS.items()}
        return check_expression(expr, form, symbols, ev.given, counts)
    if not ev.is_numeric:
        missing = ", ".join(sorted(s.name for s in ev.value.free_symbols))
        first = missing.split(", ")[0]
        raise BadValueError(f"{q.name} still depends on {missing}; give them {how_to_give['values'].format(first)}, "
                            f"or check a closed form with {how_to_give['expr']}")
    rounded = whole_rounding(form, ev.given)  # a ceiling: 106 is not 107 servers
    return check_value(ev.value, q.unit, answer, rel_tol, counts, rounded=rounded)
