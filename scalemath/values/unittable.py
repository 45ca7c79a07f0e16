"""The units an answer may be typed in, each with its exact factor to base units and its dimensions.

>>> _TYPED["KiB"]
(1024, (('byte', 1),))
"""

from __future__ import annotations

import sympy as sp

__all__ = ["COUNT_KINDS", "MAGNITUDES"]

# -- units that people type -------------------------------------------------------------------
#
# A typed unit is converted exactly to base units: seconds, bytes, FLOPs, cents and counts.
# Here FLOP is a dimension of its own, so an answer in GB/s is refused for a FLOP/s quantity, and
# every kind of count (tokens, chips, parameters, ...) is a dimension of its own too: "45 chips"
# is not an answer for a batch of tokens. A plain number (no unit) is read in the key's unit.

_DECIMAL = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
            "Z": 10**21}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
#: Kinds of count (the dimension first), each with the words that name it; chips, devices, GPUs and
#: TPUs are one kind.
COUNT_KINDS = {
    "token": ("token", "tokens", "tok"),
    "chip": ("chip", "chips", "device", "devices", "GPU", "GPUs", "TPU", "TPUs", "accelerator", "accelerators"),
    "param": ("param", "params", "parameter", "parameters"),
    "element": ("element", "elements"),
    "hop": ("hop", "hops"),
    "link": ("link", "links"),
    "host": ("host", "hosts"),
    "node": ("node", "nodes"),
    "server": ("server", "servers"),
    "core": ("core", "cores"),
    "sequence": ("sequence", "sequences", "seq", "seqs"),
    "expert": ("expert", "experts"),
    "layer": ("layer", "layers"),
    "stage": ("stage", "stages"),
    "step": ("step", "steps"),
    "axis": ("axis", "axes"),
    "unit": ("unit", "units"),
    "switch": ("switch", "switches"),
    "cable": ("cable", "cables"),
}
#: Magnitude words and letters a count may carry: "46.7B params", "15T tokens", "1.5M", and the binary ones
#: batches are given in ("8Mi tokens", "512 Ki": 2^23 and 2^19, as plan's --batch-tokens reads them).
MAGNITUDES = {"k": 10**3, "K": 10**3, "thousand": 10**3, "M": 10**6, "million": 10**6, "G": 10**9,
              "B": 10**9, "bn": 10**9, "billion": 10**9, "T": 10**12, "trillion": 10**12, **_BINARY}


def _typed_units() -> dict[str, tuple[sp.Rational, tuple[tuple[str, int], ...]]]:
    table: dict[str, tuple[sp.Rational, tuple[tuple[str, int], ...]]] = {}

    def add(names, factor, dims):
        for name in names:
            table[name] = (sp.Rational(factor), tuple(sorted(dims.items())))

    add(["s", "sec", "secs", "second", "seconds"], 1, {"s": 1})
    add(["ms"], sp.Rational(1, 10**3), {"s": 1})
    add(["us", "µs", "μs"], sp.Rational(1, 10**6), {"s": 1})
    add(["ns"], sp.Rational(1, 10**9), {"s": 1})
    add(["min", "mins", "minute", "minutes"], 60, {"s": 1})
    add(["h", "hr", "hrs", "hour", "hours"], 3600, {"s": 1})
    add(["day", "days"], 86400, {"s": 1})
    # what papers print a run's compute in: a petaFLOP/s for a day (GPT-3's Table D.1), and chip-hours
    # (DeepSeek-V3's "H800 GPU hours"), a chip busy for an hour
    add(["PF-day", "PF-days", "pf-day", "pf-days", "PFLOP/s-day", "PFLOP/s-days", "petaflop/s-day",
         "petaflop/s-days", "pfs-day", "pfs-days"], 10**15 * 86400, {"FLOP": 1})
    add([f"{who}{sep}{hour}" for who in ("chip", "GPU", "TPU", "device", "accelerator") for sep in ("-", " ")
         for hour in ("hour", "hours", "h")], 3600, {"chip": 1, "s": 1})
    add([f"{who}{sep}{day}" for who in ("chip", "GPU", "TPU", "device", "accelerator") for sep in ("-", " ")
         for day in ("day", "days")], 86400, {"chip": 1, "s": 1})
    for prefix, factor in _DECIMAL.items():
        if prefix == "K":
            continue
        add([f"{prefix}Hz"], factor, {"s": -1})
    for prefix, factor in list(_DECIMAL.items()) + list(_BINARY.items()):
        add([f"{prefix}B"] + (["byte", "bytes"] if not prefix else []), factor, {"byte": 1})
        add([f"{prefix}bit", f"{prefix}bits"] + ([f"{prefix}b"] if prefix else []),
            sp.Rational(factor, 8), {"byte": 1})
        add([f"{prefix}FLOP", f"{prefix}FLOPs", f"{prefix}OP", f"{prefix}OPs"], factor, {"FLOP": 1})
        add([f"{prefix}FLOPS", f"{prefix}OPS"], factor, {"FLOP": 1, "s": -1})
        add([f"{prefix}bps"], sp.Rational(factor, 8), {"byte": 1, "s": -1})
        add([f"{prefix}Bps"], factor, {"byte": 1, "s": -1})
    for kind, names in COUNT_KINDS.items():
        add(names, 1, {kind: 1})
    add(["cent", "cents", "¢"], 1, {"cent": 1})
    add(["USD", "$", "dollar", "dollars", "US$"], 100, {"cent": 1})
    add(["percent", "%"], sp.Rational(1, 100), {})
    add(["x", "×", "times"], 1, {})
    add(["1", ""], 1, {})
    return table


_TYPED = _typed_units()
