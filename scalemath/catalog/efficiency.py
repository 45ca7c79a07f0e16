"""The ``efficiency`` convention: the rates ``plan`` prices a step with.

Under ``kernel`` (the default) a chip's matmul and attention rates are the catalog's achievable figures
(:mod:`.achievable`): the best rates kernel benchmarks reach, an upper estimate of a training step's. Under ``sustained``
they are times the chip's ``sustained_fraction``, the share of them whole training steps sustained where the
catalog fits one to published runs (its source says which runs and how); a chip without one keeps its kernel rates,
and the answer's source says so.

>>> from scalemath.catalog.hardware import get_chip
>>> h100 = get_chip("h100")
>>> sustained_fraction(h100).value
Fraction(13, 20)
>>> under_efficiency(h100, h100.achievable_flops("bf16"), "sustained").value
516425000000000
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..errors import BadValueError
from . import achievable
from .achievable import SUSTAINED, Achieved, _decimal, _default, table_of

__all__ = ["EFFICIENCIES", "rows", "sustained_fraction", "under_efficiency"]

#: The convention's choices (conventions.AXES["efficiency"]): the kernel rates, or those times the sustained fraction.
EFFICIENCIES = ("kernel", "sustained")


def sustained_fraction(chip: Any) -> Achieved | None:
    """The share of the kernel rates whole training steps sustain on ``chip``, fitted to published runs, with its
    source; None where the catalog has none."""
    table = table_of(chip)
    if table.sustained is None:
        return None
    return Achieved(table.sustained, table.sources[SUSTAINED], False)  # fitted to runs: not a measured figure


def under_efficiency(chip: Any, got: Achieved, efficiency: str) -> Achieved:
    """A kernel rate (matmul or attention) under the ``efficiency`` convention: as measured ("kernel"), or times
    the chip's sustained fraction ("sustained"; unchanged where the catalog has none, and the source says so)."""
    if efficiency not in EFFICIENCIES:
        raise BadValueError(f"efficiency {efficiency!r}: choose one of {', '.join(EFFICIENCIES)}")
    if efficiency == "kernel":
        return got
    fraction = sustained_fraction(chip)
    if fraction is None:
        return Achieved(got.value, f"{got.source}; no sustained fraction in the catalog for {chip.key}: the kernel "
                        "rate", got.measured, got.peak)
    return Achieved(_default(Fraction(got.value) * fraction.value), f"{got.source}; times the sustained fraction "
                    f"{_decimal(fraction.value)} ({fraction.source})", got.measured, got.peak)


def rows(chip: Any) -> list[tuple[str, str, Achieved]]:
    """What ``hardware show`` lists: the achievable figures (:func:`.achievable.rows`), then the sustained fraction
    where the catalog fits one (unit "1")."""
    fraction = sustained_fraction(chip)
    return achievable.rows(chip) + ([(SUSTAINED, "1", fraction)] if fraction is not None else [])
