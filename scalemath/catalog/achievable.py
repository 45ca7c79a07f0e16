"""What a chip really reaches: a large GEMM's and a fused attention kernel's FLOP/s per dtype, a collective's
bandwidth and fixed cost per network.

A chip's ``[chips.KEY.achievable]`` table gives measured figures, each with its source (who measured, where, under
what conditions); where a chip has none, the catalog's ``[defaults.achievable]`` table gives one documented share
of the peak per kind (a matmul share, a bandwidth share), one share of the achievable matmul rate for attention and
one latency per network, and the answer says it was assumed (``measured`` False). Nothing here invents a chip's
figure.

Attention (``attention_<dtype>_flops_per_s``) is the rate of a fused causal attention kernel over one forward plus
one backward pass, counted as the FlashAttention papers count: 4·s²·d·heads forward (halved for causal), backward
2.5 times the forward. Where a paper prints forward and backward apart, ``combined_forward_backward`` gives the
time-weighted rate of the two.

Networks: ``nvlink`` (inside a GPU's NVLink domain) and ``nic`` (across nodes, per GPU) on a GPU; ``ici`` (one torus
axis, both directions, as ``Chip.bandwidth("ici")`` counts) and ``dcn`` (per chip) on a TPU. A bandwidth is the
book's W: one direction per GPU, i.e. the bus bandwidth NCCL's tests print for an AllReduce or AllGather.

>>> from scalemath.catalog.hardware import get_chip
>>> h100 = get_chip("h100")
>>> h100.achievable_flops("bf16").value, h100.achievable_flops("bf16").measured
(794500000000000, True)
>>> a = get_chip("v100").achievable_bandwidth("nic")
>>> a.value, a.measured, a.share
(5000000000, False, Fraction(4, 5))
>>> h100.achievable_attention_flops("bf16").value
328000000000000
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from ..errors import BadValueError, CatalogError, UnknownNameError
from .reader import read_document, shown, too_long

__all__ = ["NETWORKS", "SUSTAINED", "Achieved", "Achievable", "Defaults", "achieved_flops", "achieved_attention_flops",
           "achieved_bandwidth", "achieved_latency", "combined_forward_backward", "default_attention_share",
           "parse_chip_table", "attach", "rows", "table_of"]

#: The networks of each chip family, with what each means.
NETWORKS: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "gpu": MappingProxyType({"nvlink": "inside the NVLink domain, per GPU, one direction",
                             "nic": "across nodes over the scale-out network, per GPU, one direction"}),
    "tpu": MappingProxyType({"ici": "one ICI torus axis, both directions, per chip",
                             "dcn": "across slices over the data-centre network, per chip"}),
})
_ALL_NETWORKS = ("nvlink", "nic", "ici", "dcn")
_DEFAULT_KEYS = ("matmul_percent", "bandwidth_percent", "attention_fraction_of_matmul",
                 *(f"{n}_latency_ns" for n in _ALL_NETWORKS))
#: The key of a chip's sustained fraction: the share of its kernel rates (matmul and attention) that whole training
#: steps sustain, fitted to published runs, with its source.
SUSTAINED = "sustained_fraction"
#: The FlashAttention papers' count: the backward pass is 2.5 times the forward's FLOPs (5 matmuls against 2).
BACKWARD_OVER_FORWARD = Fraction(5, 2)


@dataclass(frozen=True)
class Achieved:
    """One achievable figure: its value (FLOP/s, bytes/s or ns), where it comes from, and whether it was measured
    (False: the catalog's default share of the peak, or its default latency). ``peak`` is the figure it is a share
    of (None for a latency)."""

    value: int | Fraction
    source: str
    measured: bool
    peak: int | Fraction | None = None

    @property
    def share(self) -> Fraction | None:
        """The value over the peak (None for a latency)."""
        return None if self.peak is None else Fraction(self.value) / Fraction(self.peak)


@dataclass(frozen=True)
class Defaults:
    """``[defaults.achievable]``: one share of the peak per kind, attention's share of the achievable matmul rate and
    one latency per network, each with its reasoning."""

    matmul_percent: int
    bandwidth_percent: int
    attention_fraction: Fraction
    latency_ns: Mapping[str, int] = field(hash=False)
    sources: Mapping[str, str] = field(hash=False, compare=False)


@dataclass(frozen=True)
class Achievable:
    """A chip's measured figures by key (``matmul_bf16_flops_per_s``, ``nvlink_bytes_per_s``, ``nic_latency_ns``
    ...) with a source for each, and the defaults that stand in for the rest."""

    figures: Mapping[str, int] = field(hash=False)
    sources: Mapping[str, str] = field(hash=False)
    notes: str = field(default="", compare=False)
    defaults: Defaults | None = field(default=None, compare=False)
    sustained: Fraction | None = None  # the share of the kernel rates training sustains (source: sources[SUSTAINED])


# -- reading the tables ---------------------------------------------------------------------------------------------


def _int(where: str, key: str, raw: Any, limit: int, unit: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0 or too_long(raw) or raw > limit:
        bound = f"10^{len(str(limit)) - 1}" if str(limit).strip("0") == "1" and limit > 100 else str(limit)
        raise CatalogError(f"{where}, key {key!r} = {shown(raw)} must be a whole number from 1 to {bound} {unit}")
    return raw


def _text(where: str, key: str, raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 2000 or not raw.isprintable():
        raise CatalogError(f"{where}, key {key!r} = {shown(raw)} must be one line of at most 2000 printable "
                           "characters")
    return raw


def figure_keys(dtypes: Iterable[str]) -> tuple[str, ...]:
    """Every key a ``[chips.KEY.achievable]`` table may give a figure for."""
    return (*(f"matmul_{d}_flops_per_s" for d in dtypes), *(f"attention_{d}_flops_per_s" for d in dtypes),
            *(f"{n}_bytes_per_s" for n in _ALL_NETWORKS),
            *(f"{n}_latency_ns" for n in _ALL_NETWORKS), SUSTAINED)


def _unit_of(key: str) -> tuple[str, str]:
    return ("flops", "FLOP/s") if key.endswith("_flops_per_s") else (
        ("bytes_per_s", "bytes/s") if key.endswith("_bytes_per_s") else ("ns", "ns"))


def parse_chip_table(path: str, key: str, family: Any, table: Any, dtypes: Iterable[str],
                     limits: Mapping[str, int]) -> Achievable:
    """A ``[chips.KEY.achievable]`` table: known keys only, each figure a bounded whole number of its unit (``limits``
    by ``flops``, ``bytes_per_s``, ``ns``), a network of the chip's family, and a source for every figure."""
    where = f"{path}: chip {key!r}, [chips.{key}.achievable]"
    if not isinstance(table, dict):
        raise CatalogError(f"{path}: chip {key!r}, key 'achievable' must be a table ([chips.{key}.achievable]) of "
                           "measured figures with a [chips.{key}.achievable.sources] table")
    known = figure_keys(dtypes)
    figures: dict[str, int] = {}
    sustained = _fraction(where, SUSTAINED, table[SUSTAINED]) if SUSTAINED in table else None
    for name, raw in table.items():
        if name in ("sources", "notes", SUSTAINED):
            continue
        if name not in known:
            raise CatalogError(f"{where} has unknown key {shown(name)}; it takes notes, sources and "
                               f"{', '.join(known)}")
        network = name.split("_", 1)[0]
        if network in _ALL_NETWORKS and family in NETWORKS and network not in NETWORKS[family]:
            raise CatalogError(f"{where}, key {name!r}: a {family.upper()} has no {network} network; its networks "
                               f"are {', '.join(NETWORKS[family])}")
        kind, unit = _unit_of(name)
        figures[name] = _int(where, name, raw, limits[kind], unit)
    if not figures and sustained is None:
        raise CatalogError(f"{where} gives no figure; give a measured figure (e.g. matmul_bf16_flops_per_s) with "
                           "its source, or leave the table out")
    sources = table.get("sources")
    if not isinstance(sources, dict):
        raise CatalogError(f"{where} lacks a sources table: give [chips.{key}.achievable.sources] with one entry per "
                           f"figure (who measured, where, the conditions) for {', '.join(figures)}")
    named = [*figures, *([SUSTAINED] if sustained is not None else [])]
    for name in sources:
        if name not in named:
            raise CatalogError(f"{where}.sources has {shown(name)}, which names no figure of the table; its figures "
                               f"are {', '.join(figures)}")
    missing = [name for name in named if name not in sources]
    if missing:
        raise CatalogError(f"{where}.sources lacks the source of {', '.join(missing)} (who measured it, where, "
                           "under what conditions)")
    texts = {name: _text(f"{where}.sources", name, sources[name]) for name in named}
    notes = _text(where, "notes", table["notes"]) if "notes" in table else ""
    return Achievable(MappingProxyType(figures), MappingProxyType(texts), notes, sustained=sustained)


def _fraction(where: str, key: str, raw: Any) -> Fraction:
    """A share written as a decimal (0.7) or 1, read exactly as written: above 0, at most 1, at most 4 decimals."""
    if not isinstance(raw, bool) and isinstance(raw, (int, float)) and 0 < raw <= 1:
        value = Fraction(repr(raw))
        if (value * 10**4).denominator == 1:
            return value
    raise CatalogError(f"{where}, key {key!r} = {shown(raw)} must be a decimal above 0 and at most 1 (e.g. 0.7) "
                       "with at most 4 decimals")


def parse_defaults(path: str, data: Mapping[str, Any], limits: Mapping[str, int]) -> Defaults | None:
    """The file's ``[defaults.achievable]`` table (None when the file has no ``[defaults]``)."""
    if "defaults" not in data:
        return None
    where = f"{path}: [defaults.achievable]"
    top = data["defaults"]
    if not isinstance(top, dict) or set(top) - {"achievable"} or not isinstance(top.get("achievable"), dict):
        raise CatalogError(f"{path}: [defaults] takes one table, [defaults.achievable], with "
                           f"{', '.join(_DEFAULT_KEYS)} and sources")
    table = top["achievable"]
    unknown = sorted(set(table) - set(_DEFAULT_KEYS) - {"sources"})
    missing = [k for k in (*_DEFAULT_KEYS, "sources") if k not in table]
    if unknown or missing:
        raise CatalogError(f"{where} " + (f"has unknown key {shown(unknown[0])}" if unknown else
                                          f"lacks {', '.join(missing)}") + f"; it takes {', '.join(_DEFAULT_KEYS)} "
                           "and sources")
    percents = {k: _int(where, k, table[k], 100, "percent") for k in ("matmul_percent", "bandwidth_percent")}
    fraction = _fraction(where, "attention_fraction_of_matmul", table["attention_fraction_of_matmul"])
    latency = {n: _int(where, f"{n}_latency_ns", table[f"{n}_latency_ns"], limits["ns"], "ns")
               for n in _ALL_NETWORKS}
    sources = table["sources"]
    if not isinstance(sources, dict) or set(sources) != set(_DEFAULT_KEYS):
        raise CatalogError(f"{where}.sources must give the reasoning of each default: {', '.join(_DEFAULT_KEYS)}")
    texts = {k: _text(f"{where}.sources", k, sources[k]) for k in _DEFAULT_KEYS}
    return Defaults(percents["matmul_percent"], percents["bandwidth_percent"], fraction, MappingProxyType(latency),
                    MappingProxyType(texts))


@functools.cache
def packaged_defaults(limits: tuple[tuple[str, int], ...]) -> Defaults:
    """The packaged catalog's defaults, which stand in for a user's file that gives none."""
    label, data = read_document(None, "hardware.toml", "hardware")
    defaults = parse_defaults(label, data, dict(limits))
    if defaults is None:  # pragma: no cover - the packaged file always has them
        raise CatalogError(f"{label} has no [defaults.achievable] table")
    return defaults


def attach(path: str, data: Mapping[str, Any], chips: Mapping[str, Any], limits: Mapping[str, int],
           replace: Callable[..., Any]) -> Mapping[str, Any]:
    """Each chip with its achievable figures and the file's defaults (the packaged ones when the file has none);
    a measured figure above the chip's peak (the book's or the datasheet's) is an error naming the field."""
    defaults = parse_defaults(path, data, limits) or packaged_defaults(tuple(sorted(limits.items())))
    out = {}
    for key, chip in chips.items():
        table = chip.achievable or Achievable(MappingProxyType({}), MappingProxyType({}))
        views = [chip] + ([chip.under("datasheet")] if chip.datasheet is not None else [])
        for name, value in table.figures.items():
            if name.endswith("_latency_ns"):
                continue  # a latency is no share of a peak
            for view in views:
                peak = _peak_of(view, name)
                if peak is None:
                    raise CatalogError(f"{path}: chip {key!r}, key 'achievable.{name}' = {value}: the chip has no "
                                       f"peak to hold it against ({_peak_name(name)}); give that first")
                if value > peak:
                    which = "the datasheet's" if view.figures == "datasheet" else "the chip's"
                    raise CatalogError(f"{path}: chip {key!r}, key 'achievable.{name}' = {value} is above "
                                       f"{which} peak {_peak_name(name)} = {peak}; an achievable figure is at most "
                                       "the peak")
        out[key] = replace(chip, achievable=Achievable(table.figures, table.sources, table.notes, defaults,
                                                       table.sustained))
    return MappingProxyType(out)


# -- peaks and answers ----------------------------------------------------------------------------------------------


def _peak_name(key: str) -> str:
    if key.startswith(("matmul_", "attention_")):
        return f"flops_per_s.{key.split('_')[1]}"
    network = key.split("_", 1)[0]
    return {"nvlink": "nvlink_bytes_per_s", "nic": "nic_bytes_per_s", "ici": "2 x ici_link_bytes_per_s",
            "dcn": "dcn_bytes_per_s"}[network] if key.endswith("_bytes_per_s") else "none"


def _peak_of(chip: Any, key: str) -> int | None:
    """The peak a bandwidth, matmul or attention figure is a share of (None when the chip has none)."""
    if key.startswith(("matmul_", "attention_")):
        return chip.flops_per_s.get(key.split("_")[1])
    return _network_peak(chip, key.split("_", 1)[0])


def _network_peak(chip: Any, network: str) -> int | None:
    if network == "ici":
        return None if chip.ici_link_bytes_per_s is None else 2 * chip.ici_link_bytes_per_s
    return getattr(chip, f"{network}_bytes_per_s")


def table_of(chip: Any) -> Achievable:
    if chip.achievable is not None and chip.achievable.defaults is not None:
        return chip.achievable
    # a chip built by hand (not read from a catalog file): the packaged defaults
    figures = chip.achievable.figures if chip.achievable is not None else MappingProxyType({})
    sources = chip.achievable.sources if chip.achievable is not None else MappingProxyType({})
    sustained = chip.achievable.sustained if chip.achievable is not None else None
    return Achievable(figures, sources, "", packaged_defaults(_LIMITS), sustained)


#: The bounds by unit of chip_table (MAX_BYTES_PER_S, MAX_FLOPS, MAX_NS), for a chip built by hand.
_LIMITS = (("bytes_per_s", 10**16), ("flops", 10**18), ("ns", 10**12))


def _network(chip: Any, network: str) -> str:
    if network not in _ALL_NETWORKS:
        raise UnknownNameError("network", network, _ALL_NETWORKS)
    if network not in NETWORKS.get(chip.family, {}):
        raise BadValueError(f"{chip.key} is a {chip.family.upper()}: its networks are "
                            f"{', '.join(NETWORKS[chip.family])}, not {network}")
    return network


def _default(value: int | Fraction) -> int | Fraction:
    value = Fraction(value)
    return int(value) if value.denominator == 1 else value


def _measured(chip: Any, kind: str, dtype: str, peak: int) -> Achieved | None:
    """The measured ``kind`` figure in ``dtype``, else in a dtype of the same peak (bf16 and fp16: one tensor core)."""
    table = table_of(chip)
    for other in (dtype, *(d for d, rate in chip.flops_per_s.items() if rate == peak and d != dtype)):
        key = f"{kind}_{other}_flops_per_s"
        if key in table.figures:
            why = "" if other == dtype else f"; the {other} figure, at the same peak as {dtype}"
            return Achieved(table.figures[key], table.sources[key] + why, True, peak)
    return None


def achieved_flops(chip: Any, dtype: str) -> Achieved:
    """What a large dense GEMM reaches on ``chip`` in ``dtype``: the measured figure (or a same-peak dtype's), else
    the default share of the chip's peak in that dtype (``chip.flops`` refuses a dtype the chip has no rate for)."""
    peak = chip.flops(dtype)
    table, found = table_of(chip), _measured(chip, "matmul", dtype, peak)
    if found is not None:
        return found
    pct = table.defaults.matmul_percent
    return Achieved(_default(Fraction(pct, 100) * peak), f"assumed: {pct} % of the peak {dtype} rate (the catalog's "
                    f"default; {table.defaults.sources['matmul_percent']})", False, peak)


def achieved_attention_flops(chip: Any, dtype: str) -> Achieved:
    """What a fused causal attention kernel reaches on ``chip`` in ``dtype`` over one forward plus one backward pass:
    the measured figure, else the default share of the chip's achievable matmul rate in that dtype (itself measured
    or assumed, as ``achieved_flops`` answers). ``peak`` is the chip's peak rate in that dtype."""
    peak = chip.flops(dtype)
    table, found = table_of(chip), _measured(chip, "attention", dtype, peak)
    if found is not None:
        return found
    share, matmul = table.defaults.attention_fraction, achieved_flops(chip, dtype)
    how = "measured" if matmul.measured else "itself assumed"
    return Achieved(_default(share * matmul.value), f"assumed: {_decimal(share)} of the achievable {dtype} matmul "
                    f"rate {matmul.value} FLOP/s ({how}; the catalog's default; "
                    f"{table.defaults.sources['attention_fraction_of_matmul']})", False, peak)


def default_attention_share(chip: Any) -> Fraction:
    """The catalog's default share of the achievable matmul rate that stands in for an unmeasured attention rate."""
    return table_of(chip).defaults.attention_fraction


def combined_forward_backward(forward: int | Fraction, backward: int | Fraction,
                              ratio: Fraction = BACKWARD_OVER_FORWARD) -> Fraction:
    """The rate of one forward plus one backward pass from their separate rates: (forward FLOPs + backward FLOPs) /
    (forward time + backward time) with backward FLOPs = ``ratio`` x forward FLOPs, i.e. (1 + r) / (1/f + r/b)."""
    forward, backward = Fraction(forward), Fraction(backward)
    if forward <= 0 or backward <= 0 or ratio <= 0:
        raise BadValueError(f"forward {forward}, backward {backward} and their FLOP ratio {ratio} must be positive")
    return (1 + ratio) / (1 / forward + ratio / backward)


def _decimal(value: Fraction) -> str:
    return f"{float(value):.4f}".rstrip("0").rstrip(".")


def achieved_bandwidth(chip: Any, network: str) -> Achieved:
    """A collective's achievable bandwidth on ``network`` in the book's W convention: the measured figure, else the
    default share of the chip's peak on that network."""
    network, table = _network(chip, network), table_of(chip)
    key, peak = f"{network}_bytes_per_s", _network_peak(chip, network)
    if key in table.figures:
        return Achieved(table.figures[key], table.sources[key], True, peak)
    if peak is None:
        raise BadValueError(f"{chip.key} has no {network} bandwidth in the catalog, measured or peak; give "
                            f"{key} in its [chips.{chip.key}.achievable] table (--hardware-file)")
    pct = table.defaults.bandwidth_percent
    return Achieved(_default(Fraction(pct, 100) * peak), f"assumed: {pct} % of the peak {network} bandwidth (the "
                    f"catalog's default; {table.defaults.sources['bandwidth_percent']})", False, peak)


def achieved_latency(chip: Any, network: str) -> Achieved:
    """The fixed cost of one collective on ``network`` (a small message's time), in ns: measured, else the
    catalog's default for that network."""
    network, table = _network(chip, network), table_of(chip)
    key = f"{network}_latency_ns"
    if key in table.figures:
        return Achieved(table.figures[key], table.sources[key], True)
    return Achieved(table.defaults.latency_ns[network], f"assumed: the catalog's default {network} latency ("
                    f"{table.defaults.sources[key]})", False)


def rows(chip: Any) -> list[tuple[str, str, Achieved]]:
    """What ``hardware show`` lists: (key, unit, answer) for each matmul dtype the chip has a tensor rate in (and
    any measured one), then attention in those a fused kernel runs in (bf16, fp16, fp8, any measured), then each
    network's bandwidth and latency where the catalog has a figure or a peak."""
    table = table_of(chip)
    dtypes = [d for d in chip.flops_per_s if d in ("bf16", "fp16", "fp8", "fp4")
              or f"matmul_{d}_flops_per_s" in table.figures or f"attention_{d}_flops_per_s" in table.figures]
    out = [(f"matmul_{d}_flops_per_s", "FLOP/s", achieved_flops(chip, d)) for d in dtypes]
    out += [(f"attention_{d}_flops_per_s", "FLOP/s", achieved_attention_flops(chip, d)) for d in dtypes
            if d in ("bf16", "fp16", "fp8") or f"attention_{d}_flops_per_s" in table.figures]
    for network in NETWORKS.get(chip.family, {}):
        if f"{network}_bytes_per_s" in table.figures or _network_peak(chip, network) is not None:
            out.append((f"{network}_bytes_per_s", "byte/s", achieved_bandwidth(chip, network)))
        out.append((f"{network}_latency_ns", "ns", achieved_latency(chip, network)))
    return out
