"""The errors scalemath raises for a user's mistake.

Every error here is a :class:`ScalemathError`; the CLI prints its message on one
line and exits with its ``exit_code`` (2 for bad usage, 1 for everything else).
Each subclass also subclasses the built-in a Python caller would expect.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ScalemathError",
    "UnknownNameError",
    "CatalogError",
    "BadValueError",
    "ExpressionError",
    "NoCrossoverError",
    "OutputExistsError",
    "CheckFailedError",
    "did_you_mean",
]


class ScalemathError(Exception):
    """Base class: a message for the user and the exit code the CLI uses."""

    exit_code = 1


class UnknownNameError(ScalemathError, LookupError):
    """A chip, dtype, quantity, symbol, topic or generator that does not exist.

    >>> str(UnknownNameError("chip", "tpu-v5", ["tpu-v5e", "tpu-v5p", "h100"]))
    "unknown chip 'tpu-v5'; did you mean 'tpu-v5e' or 'tpu-v5p'? (see the full list with the matching 'list' command)"
    """

    exit_code = 2

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str | None = None):
        self.kind, self.name, self.known = kind, name, sorted(known)
        message = f"unknown {kind} {name!r}; {did_you_mean(name, self.known)}"
        message += f" ({hint})" if hint else " (see the full list with the matching 'list' command)"
        super().__init__(message)

    def __str__(self) -> str:  # LookupError would repr() the message otherwise
        return self.args[0]


class CatalogError(ScalemathError, ValueError):
    """A hardware or model catalog file that is malformed: names file, entry and key."""


class BadValueError(ScalemathError, ValueError):
    """A value the user gave that is out of its domain (non-positive size, missing dtype...)."""

    exit_code = 2


class ExpressionError(ScalemathError, ValueError):
    """Text that the safe expression parser refuses; the message shows where."""

    exit_code = 2


class NoCrossoverError(ScalemathError, ValueError):
    """An equation with no positive root: names both sides and the roots found."""


class OutputExistsError(ScalemathError, FileExistsError):
    """Generation would overwrite an existing output folder without --force."""

    exit_code = 2


class CheckFailedError(ScalemathError, RuntimeError):
    """A generated answer disagreed with its second, independent route."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """A short suggestion sentence from the closest known names.

    >>> did_you_mean("h10", ["a100", "h100", "h200"])
    "did you mean 'h100'?"
    >>> did_you_mean("zzz", ["a", "b"])
    'known: a, b'
    """
    known = sorted(known)
    close = sorted(difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.6))
    if not close:
        close = [k for k in known if name.lower() in k or k in name.lower()][:3]
    if close:
        quoted = [repr(c) for c in close]
        joined = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
        return f"did you mean {joined}?"
    listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
    return f"known: {listed}"
