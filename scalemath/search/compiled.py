"""A registered quantity compiled once to a NumPy function of the values that vary.

The expression is the quantity's own derivation with everything the context binds (model, chip,
dtypes) and every fixed value substituted exactly; only the names in ``varying`` stay symbols, and
:func:`sympy.lambdify` turns the result into one vectorized function. ``max``/``min`` become
element-wise ``numpy.maximum``/``numpy.minimum`` and ``ceiling`` ``numpy.ceil``, so the function
takes NumPy arrays (or anything that follows NumPy's ufunc protocol, such as dask arrays) of one
shape and returns an array of float64 of that shape.

>>> from scalemath.quantities import Context
>>> import numpy as np
>>> f = Compiled("roofline.critical_intensity", Context(chip="tpu-v5e", dtype="bf16"), {}, ())
>>> float(f())
240.2439024390244
>>> g = Compiled("parallel.batch_per_device", Context(), {"B": 4096}, ("n_dev",))
>>> g(n_dev=np.array([1, 2, 8]))
array([4096., 2048.,  512.])
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from .. import quantities
from ..symbolic.derivation import exact
from ..symbolic.symbols import SYMBOLS

__all__ = ["Compiled"]

_vmax = sp.Function("vmax")
_vmin = sp.Function("vmin")
_NUMPY = {"vmax": lambda *a: functools.reduce(np.maximum, a), "vmin": lambda *a: functools.reduce(np.minimum, a)}


def _result(out):
    return np.asarray(out, dtype=np.float64) if not hasattr(out, "dask") else out


def _floats(a):
    return a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype != np.float64 else a


def _elementwise(expr: sp.Expr) -> sp.Expr:
    """Max and Min as element-wise functions (SymPy prints them as numpy.amax over a tuple otherwise)."""
    return expr.replace(sp.Max, lambda *a: _vmax(*a)).replace(sp.Min, lambda *a: _vmin(*a))


@functools.cache
def _function(quantity: str, steps: tuple[str | None, ...], varying: tuple[str, ...], bound: tuple[str, ...],
              conventions=None):
    """The form (or several of its steps, sharing their common subexpressions) as one NumPy function of the
    varying names, then the bound ones, under ``conventions`` (the book's when None); compiled once per process."""
    q = quantities.get(quantity)
    derivation = q.derivation if conventions is None else q.under(conventions)
    exprs = [derivation.expr if step is None else next(s.expr for s in derivation.steps if s.label == step)
             for step in steps]
    symbols = [SYMBOLS[n].symbol for n in varying + bound]
    left = set().union(*(e.free_symbols for e in exprs)) - set(symbols)
    if left:
        raise ValueError(f"{quantity}: no value for {', '.join(sorted(s.name for s in left))}")
    body = [_elementwise(e) for e in exprs]
    return sp.lambdify(symbols, body if len(body) > 1 else body[0], modules=[_NUMPY, "numpy"], cse=True)


class Compiled:
    """``quantity`` (or the steps of it labelled in ``steps``; None is the result) as a NumPy function of
    ``varying``; with several steps, calling it returns a tuple of arrays.

    ``fixed`` holds exact values by parameter name, as ``quantities.evaluate`` takes them; the
    context binds the rest. The bound and fixed values enter the compiled function as float
    arguments (substituting them symbolically first would cost SymPy far more than it saves).
    A parameter that is neither bound, fixed nor varying is an error.
    """

    def __init__(self, quantity: str, ctx: quantities.Context, fixed: Mapping[str, object],
                 varying: Sequence[str], steps: tuple[str | None, ...] = (None,)):
        self.quantity = quantities.get(quantity)
        self.ctx, self.fixed, self.varying = ctx, dict(fixed), tuple(varying)
        mine = ctx.conventions.restricted(self.quantity.conventions)
        names = {p.name for p in self.quantity.params_under(mine)}
        unknown = [n for n in self.varying if n not in names]
        if unknown:
            raise ValueError(f"{quantity} has no parameter {', '.join(unknown)}")
        values = quantities.bind(self.quantity, ctx, {k: v for k, v in self.fixed.items() if k in names})
        bound = {s.name: v for s, v in values.items() if s.name not in self.varying}
        self._bound = tuple(sorted(bound))
        self._args = tuple(float(exact(bound[n])) for n in self._bound)
        self._f = _function(quantity, tuple(steps), self.varying, self._bound, mine if mine.chosen else None)

    def __call__(self, **arrays):
        # float64 inputs once: mixing integer arrays into every operation costs a conversion each time
        out = self._f(*(_floats(arrays[n]) for n in self.varying), *self._args)
        if isinstance(out, (list, tuple)):
            return tuple(_result(o) for o in out)
        return _result(out)

    def exact(self, point: Mapping[str, object]):
        """The exact evaluation (every step, rationals) at one point of the grid."""
        names = {p.name for p in self.quantity.params_under(self.ctx.conventions)}
        given = {k: v for k, v in {**self.fixed, **point}.items() if k in names}
        return quantities.evaluate(self.quantity, self.ctx, given)
