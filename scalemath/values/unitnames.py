"""Units as people type them: any letter case that stays unambiguous, ``TFLOPs`` for a rate, ``per``, and
a did-you-mean naming the kind of unit an answer needs.

The case of m/M (milli, mega) and b/B (bit, byte) is never changed; every other letter may be typed in
either case. Where one spelling has two meanings once its case is ignored, the answer's kind decides:
``TFLOPs`` (a count) and ``TFLOPS`` (a rate) are one spelling to a student, so ``990 TFLOPs`` is
990 TFLOP/s for a FLOP/s answer and ``6e23 FLOPS`` is a count for a FLOP answer, each with a note.

>>> spelled("tflops", {"FLOP": 1, "s": -1})[1:]
(1000000000000, 'tflops read as TFLOP/s (the answer is a rate)')
>>> spelled("TFLOPs", {"FLOP": 1})[1:]
(1000000000000, None)
>>> spelled("mflops", {"FLOP": 1, "s": -1}) is None
True
"""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from typing import Mapping

import sympy as sp

from .parse import shorten
from .unittable import _TYPED

__all__ = ["spelled", "kind_of", "unknown_unit_message", "wrong_kind_message", "fold"]

#: Letters whose case carries meaning in a unit: milli vs mega, bit vs byte.
_CASE_KEPT = frozenset("mMbB")
_PER = re.compile(r"\s+per\s+", re.I)


def fold(name: str) -> str:
    """``name`` with every letter but m, M, b and B in lower case: ``TFLOPs`` -> ``tflops``, ``GB`` -> ``gB``."""
    return "".join(c if c in _CASE_KEPT else c.lower() for c in name)


@functools.lru_cache(maxsize=1)
def _folded() -> Mapping[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for name in _TYPED:
        if name and name != "1":
            out.setdefault(fold(name), []).append(name)
    return {k: tuple(v) for k, v in out.items()}


def _TYPED_DIMS(name: str) -> tuple[tuple[str, int], ...]:
    return _TYPED[name][1]


def _shown(name: str, dims: Mapping[str, int]) -> str:
    """A unit as the engine prints it: a rate of FLOPs as ``TFLOP/s`` rather than ``TFLOPS``."""
    if dims == {"FLOP": 1, "s": -1} and name.endswith(("FLOPS", "OPS")):
        return name[:-1] + "/s"
    return name


def _meanings(part: str) -> list[tuple[str, sp.Rational, dict[str, int]]]:
    """Every reading of one part of a unit (no slash): the exact name first, then the case-folded ones."""
    names = ([part] if part in _TYPED else []) + [n for n in _folded().get(fold(part), ()) if n != part]
    out, seen = [], set()
    for name in names:
        factor, dims = _TYPED[name]
        if (factor, dims) not in seen:
            seen.add((factor, dims))
            out.append((name, factor, dict(dims)))
    return out


def spelled(typed: str, wanted: Mapping[str, int]) -> tuple[str, sp.Rational, str | None] | None:
    """(the unit as read, its factor to base units, a note or None) for ``typed`` read with the dimensions
    ``wanted``, or None when no spelling of it has them."""
    text = _PER.sub("/", typed.strip())
    parts = [p.strip() for p in text.split("/")]
    if not parts or len(parts) > 3 or any(not p for p in parts):
        return None
    readings = [("", sp.Integer(1), Counter(), False)]
    for i, part in enumerate(parts):
        options = _meanings(part)
        sign = 1 if i == 0 else -1
        nxt = []
        for shown, factor, dims, chose in readings:
            for index, (name, f, d) in enumerate(options):
                total = Counter(dims)
                for k, v in d.items():
                    total[k] += sign * v
                joined = name if i == 0 else f"{shown}/{name}"
                nxt.append((joined, factor * f if sign == 1 else factor / f, total, chose or index > 0))
        readings = nxt
    wanted = {k: v for k, v in wanted.items() if v}
    fits = [(s, f, c) for s, f, d, c in readings if {k: v for k, v in d.items() if v} == wanted]
    if not fits:
        return None
    shown, factor, chose = fits[0]
    shown = _shown(shown, wanted)
    note = None
    if shown != typed.strip() and chose:
        if wanted == {"FLOP": 1, "s": -1}:
            note = f"{typed.strip()} read as {shown} (the answer is a rate)"
        elif wanted == {"FLOP": 1}:
            if typed.strip().endswith("PS"):
                note = f"{typed.strip()} read as {shown}, a count (the answer counts FLOPs; FLOPS often means per second)"
        else:
            note = f"{typed.strip()} read as {shown}"
    elif shown != typed.strip() and re.search(r"b(?!yte)", shown):
        note = f"{typed.strip()} read as {shown} (b is bits; write B for bytes)"
    return shown, factor, note


# -- what kind of unit an answer needs ---------------------------------------------------------------

_PHRASES = {
    (("s", 1),): "a time",
    (("byte", 1),): "an amount of data (bytes)",
    (("FLOP", 1),): "a count of FLOPs",
    (("FLOP", 1), ("s", -1)): "a compute rate (FLOP per second)",
    (("byte", 1), ("s", -1)): "a bandwidth (bytes per second)",
    (("FLOP", 1), ("byte", -1)): "an arithmetic intensity (FLOP per byte)",
    (("s", -1),): "a rate (per second)",
    (("cent", 1),): "a cost",
    (("chip", 1), ("s", 1)): "chip time (chip-hours)",
}
#: Units an example may name, in the order they are offered.
_EXAMPLES = ("s", "ms", "µs", "GB", "GiB", "MB", "FLOP", "TFLOP", "PF-day", "TFLOP/s", "PFLOP/s", "GB/s", "TB/s",
             "FLOP/byte", "tokens/s", "tokens", "chips", "%", "x", "cents", "$", "GPU-hours", "params", "elements")


def kind_of(dims: Mapping[str, int]) -> str:
    """What a unit of dimensions ``dims`` measures, in words: ``{'byte': 1, 's': -1}`` -> a bandwidth ..."""
    key = tuple(sorted((k, v) for k, v in dims.items() if v))
    if not key:
        return "a plain number (a ratio)"
    if key in _PHRASES:
        return _PHRASES[key]
    up = [k if v == 1 else f"{k}^{v}" for k, v in key if v > 0]
    down = [k if v == -1 else f"{k}^{-v}" for k, v in key if v < 0]
    if len(up) == 1 and not down:
        return f"a count of {up[0]}s"
    if len(up) == 1 and down == ["s"]:
        return f"a rate of {up[0]}s (per second)"
    return (" x ".join(up) or "1") + " per " + " per ".join(down) if down else " x ".join(up)


def _dims(unit: str) -> dict[str, int] | None:
    """The dimensions of a unit spelled exactly as the table has it (``GB/s``), or None."""
    total: Counter = Counter()
    for i, part in enumerate(unit.split("/")):
        if part.strip() not in _TYPED:
            return None
        for k, v in _TYPED[part.strip()][1]:
            total[k] += v if i == 0 else -v
    return {k: v for k, v in sorted(total.items()) if v}


def _same_kind(wanted: Mapping[str, int]) -> list[str]:
    names = [n for n in _TYPED if n and n != "1" and _dims(n) == wanted]
    return names + [f"{n}/{den}" for den in ("s", "B", "token") for n in _TYPED
                    if n and n != "1" and "/" not in n and _dims(f"{n}/{den}") == wanted]


def _examples(to_unit: str, near: str = "") -> list[str]:
    wanted = _dims(to_unit)
    if wanted is None:
        return []
    picked = [name for name in _EXAMPLES if _dims(name) == wanted]
    same = [n for n in _same_kind(wanted) if n not in picked]
    if near and wanted:  # the unit of the right kind closest to what was typed: TB for a FLOP/s answer -> TFLOP/s
        close = difflib.get_close_matches(fold(near), [fold(n) for n in picked + same], n=1, cutoff=0.3)
        first = [n for n in picked + same if close and fold(n) == close[0]][:1]
        same_prefix = [n for n in picked + same if near[:1].isupper() and n[:1] == near[:1]][:1]
        picked = list(dict.fromkeys(same_prefix + first + picked))
    return (picked or same or [to_unit])[:4]


def unknown_unit_message(typed: str, to_unit: str | None = None) -> str:
    """An unknown unit: the nearest known spellings (of the answer's kind first) and what the answer needs."""
    parts = [p.strip() for p in _PER.sub("/", typed.strip()).split("/")]
    bad = next((p for p in parts if not _meanings(p)), typed.strip())
    names = list(_folded())
    wanted = _dims(to_unit) if to_unit is not None else None
    # the same letters in another case first (MS -> ms, mflops -> MFLOP/s), of the answer's kind first
    keys = [g for g in names if g.lower() == bad.lower()] + difflib.get_close_matches(fold(bad), names, n=4,
                                                                                       cutoff=0.6)
    fitting, others = [], []
    for g in keys:
        right = [n for n in _folded()[g] if wanted is not None and dict(_TYPED_DIMS(n)) == wanted]
        (fitting if right else others).append(_shown(right[0], wanted) if right else _folded()[g][0])
    guesses = fitting + others
    message = f"unknown unit {shorten(bad, 40)}"
    if guesses:
        message += f"; did you mean {' or '.join(list(dict.fromkeys(guesses))[:3])}?"
    elif to_unit is not None:
        message += "."
    if to_unit is not None:
        need = kind_of(wanted) if wanted is not None else to_unit
        message += f" The answer is {need}: give it in e.g. {', '.join(_examples(to_unit))}"
        if "m" in bad.lower() and any(g.lower() == bad.lower() for g in names):
            message += " (a lower-case m is milli, M is mega)"
    else:
        message += ("; use e.g. s, ms, µs, B, KiB, GB, bit, FLOP, TFLOP/s, GB/s, FLOP/byte, PF-day, GPU-hour, "
                    "%, x, cents or a count such as tokens")
    return message


def wrong_kind_message(typed: str, d_from: Mapping[str, int], to_unit: str, d_to: Mapping[str, int]) -> str:
    """A known unit of another kind: what it measures, what the answer needs, and units of that kind."""
    typed = shorten(typed, 40).strip("'")
    return (f"{typed} does not measure the same thing as {to_unit}: {typed} is {kind_of(d_from)}, the answer is "
            f"{kind_of(d_to)}; give it in e.g. {', '.join(_examples(to_unit, typed))}")
