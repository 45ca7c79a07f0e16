"""The usual slips of a hand calculation, each named only where it fits the quantity's kind.

Bits vs bytes and 1.024^k (GiB vs GB) are offered for quantities in bytes (bytes, bandwidths,
intensities), a unit prefix is named in the quantity's own units (ns vs s for a time, GFLOP vs FLOP for
FLOPs, thousands vs billions for a count), a factor 100 for plain numbers and cents; a rounding the wrong
way (floor where the question asks for a ceiling) is named by :func:`rounding_slip`.

>>> [why for f, why in slips(unit="FLOP") if f == 10**9]
['a factor 10^9 (a unit prefix: GFLOP vs FLOP, TFLOP vs kFLOP)']
>>> 8 in [f for f, _ in slips(unit="token/s")]
False
"""

from __future__ import annotations

from typing import Mapping

import sympy as sp

from .units import UnitError, parse_unit

__all__ = ["slips", "rounding_slip", "factor_name", "inverse_why", "RING_NAMES", "MAX_RING"]

#: Names of problem parameters and quantity inputs that are ring sizes: (N-1)/N of a collective.
RING_NAMES = ("N", "X", "Y", "Z", "n_dev", "chips", "devices", "n", "domain", "D_node", "nodes", "slices")
#: Largest ring size whose N/(N-1) is tried (beyond it the factor is inside any tolerance).
MAX_RING = 4096


def _unit_dims(unit: str | None) -> dict[str, int] | None:
    if unit is None:
        return None
    try:
        return parse_unit(unit)[1]
    except UnitError:
        return None


def _prefixes(dims: dict[str, int] | None) -> dict[int, str]:
    """What a factor 1000, 10^6 or 10^9 is, in the quantity's own units."""
    if dims is None:
        return {10**3: "a unit prefix: ms vs s, GB vs MB, ...", 10**6: "a unit prefix: µs vs s, MB vs TB, ...",
                10**9: "a unit prefix: ns vs s, GB vs B, ..."}
    if dims == {"s": 1}:
        return {10**3: "a unit prefix: ms vs s", 10**6: "a unit prefix: µs vs s", 10**9: "a unit prefix: ns vs s"}
    rate = "/s" if dims.get("s") == -1 else ""
    for base, name in (("byte", "B"), ("FLOP", "FLOP")):
        if dims in ({base: 1}, {base: 1, "s": -1}):
            big = {10**3: ("T", "G"), 10**6: ("T", "M"), 10**9: ("G", "")}
            more = {10**3: ("P", "T"), 10**6: ("G", "k"), 10**9: ("T", "k")}
            return {f: f"a unit prefix: {big[f][0]}{name}{rate} vs {big[f][1]}{name}{rate}, "
                       f"{more[f][0]}{name}{rate} vs {more[f][1]}{name}{rate}" for f in big}
    if dims == {"FLOP": 1, "byte": -1}:
        return {f: f"a unit prefix on one side: {p}FLOP/s over TB/s, or FLOP over {q}B" for f, p, q in
                ((10**3, "G", "k"), (10**6, "M", "M"), (10**9, "k", "G"))}
    if dims.get("s") == -1:  # tokens/s, 1/s: per ms vs per s, or thousands vs millions of them
        return {10**3: "per ms vs per s, or thousands vs millions (k vs M)", 10**6: "per µs vs per s, or a "
                "magnitude two steps off (k vs B, M vs T)", 10**9: "per ns vs per s, or billions vs units (B)"}
    return {10**3: "a magnitude one step off: thousands vs millions (k vs M, M vs B)",
            10**6: "a magnitude two steps off: thousands vs billions (k vs B, M vs T)",
            10**9: "a magnitude three steps off: billions vs units (a B for billions), thousands vs trillions"}


def _generic(dims: dict[str, int] | None) -> list[tuple[sp.Rational, str]]:
    every = dims is None
    d = dims or {}
    byte, flop_only = every or "byte" in d, d in ({"FLOP": 1}, {"FLOP": 1, "s": -1})
    bytes_only = d in ({"byte": 1}, {"byte": 1, "s": -1})
    two = (["two FLOPs per multiply-add"] if not bytes_only else []) + \
        (["one- vs two-directional links"] if not flop_only else []) + \
        (["2 bytes per bf16 element"] if not flop_only else [])
    out = [(sp.Integer(2), ", ".join(two[:-1]) + (", or " if len(two) > 1 else "") + two[-1])]
    if d not in ({"byte": 1, "s": -1}, {"FLOP": 1, "byte": -1}):
        out.append((sp.Integer(3), "forward plus backward: the backward pass costs twice the forward"))
    four = [] if flop_only else ["4-byte fp32 vs 1-byte int8/fp8 elements"]
    out.append((sp.Integer(4), ", or ".join(four + ["two factor-2 slips"])))
    if byte:
        out.append((sp.Integer(8), "bits vs bytes"))
        out += [(sp.Rational(1024, 1000) ** k, ["KiB vs kB", "MiB vs MB", "GiB vs GB", "TiB vs TB"][k - 1])
                for k in range(1, 5)]
    if every or not d or "cent" in d:
        out.append((sp.Integer(100), "dollars vs cents" if "cent" in d
                    else "a percentage written as a fraction, or a fraction as a percentage"))
    out += [(sp.Integer(f), why) for f, why in _prefixes(dims).items()]
    return out


def slips(counts: Mapping[str, int] | None = None, unit: str | None = None,
          rings: Mapping[str, int] | None = None) -> list[tuple[sp.Rational, str]]:
    """The usual slips as (factor, explanation) for an answer in ``unit`` (None: every slip);
    ``counts`` adds device counts (per device vs total), ``rings`` ring sizes (the (N-1)/N factor).
    A factor that two slips share is listed once, with both explanations."""
    by_factor: dict[sp.Rational, list[str]] = {}
    for f, why in _generic(_unit_dims(unit)):
        by_factor.setdefault(f, []).append(why)
    devices: dict[sp.Rational, list[str]] = {}
    for name, n in sorted((counts or {}).items()):
        if isinstance(n, int) and n > 1:
            devices.setdefault(sp.Integer(n), []).append(name)
    ring: dict[sp.Rational, list[tuple[str, int]]] = {}
    for name, n in sorted((rings or {}).items()):
        if isinstance(n, int) and 2 <= n <= MAX_RING:
            ring.setdefault(sp.Rational(n, n - 1), []).append((name, n))
    out = []
    for f in sorted(set(by_factor) | set(devices) | set(ring)):
        parts = []
        if f in by_factor:
            parts.append(f"a factor {factor_name(f)} ({', or '.join(by_factor[f])})")
        if f in devices:
            text = f"{' = '.join(devices[f])} (per device vs total)"
            parts.append(text if parts else f"a factor {f} = {text}")
        if f in ring:
            ns = " or ".join(f"{name} = {n}" for name, n in ring[f])
            parts.append(f"the ring's (N-1)/N dropped, with {ns} (a ring collective over N devices moves "
                         "(N-1)/N of the array per device, not all of it)")
        out.append((f, "; or ".join(parts)))
    return out


def factor_name(f: sp.Rational) -> str:
    if f.is_Integer:
        return "10^6" if f == 10**6 else "10^9" if f == 10**9 else str(f)
    for k in range(1, 5):
        if f == sp.Rational(1024, 1000) ** k:
            return "1.024" if k == 1 else f"1.024^{k}"
    return str(f)


def inverse_why(f: sp.Rational, why: str) -> str:
    """The explanation of a factor 1/f: a ring factor applied where there is none reads differently."""
    return why.replace("the ring's (N-1)/N dropped, with", "a factor (N-1)/N the question does not have "
                       "(or N counted one too many), with").replace(
        " (a ring collective over N devices moves (N-1)/N of the array per device, not all of it)", "")


#: How each rounding is said, and the function that does it.
_ROUNDINGS = {"up": ("rounds up (a ceiling)", sp.ceiling), "down": ("rounds down (a floor)", sp.floor),
              "nearest": ("rounds to the nearest whole number", lambda x: sp.floor(x + sp.Rational(1, 2)))}


def rounding_slip(given: sp.Expr, expected: sp.Expr, unrounded: sp.Expr | None, rounding: str | None,
                  word: str = "") -> str | None:
    """A whole answer that is ``unrounded`` rounded the other way: 106 where the question takes the ceiling
    of 106.2 (107). None when ``given`` is no rounding of ``unrounded`` or is the expected one.

    >>> rounding_slip(sp.Integer(106), sp.Integer(107), sp.Rational(531, 5), "up", "servers")
    'your answer rounds 106.2 down (a floor); the question rounds up (a ceiling) to whole servers: 107'
    >>> rounding_slip(sp.Integer(105), sp.Integer(107), sp.Rational(531, 5), "up") is None
    True
    """
    if unrounded is None or rounding not in _ROUNDINGS or not given.is_Integer or given == expected:
        return None
    shown = _short(unrounded)
    whole = f" to whole {word}" if word else ""
    said = _ROUNDINGS[rounding][0]
    if unrounded.is_Integer:
        return None
    for name, (how, f) in _ROUNDINGS.items():
        if name != rounding and f(unrounded) == given and given != expected:
            return f"your answer {how.replace('rounds', 'rounds ' + shown, 1)}; the question {said}{whole}: {expected}"
    return None


def _short(x: sp.Expr) -> str:
    text = f"{float(x):.6g}"
    return text
