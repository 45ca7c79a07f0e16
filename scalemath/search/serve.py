"""``scalemath serve``: the best way to serve a model on a chip, found by searching every configuration.

The search (:mod:`scalemath.search.serve_space`) lays out every topology, sharding, dtype pair
and decode batch as NumPy arrays and ranks them with the engine's closed forms compiled once;
this module re-derives the winner exactly (every step, rationals), explains it, and reports
the runners-up, the latency-throughput front, the book's tensor-parallel limits and the
prefill servers a disaggregated deployment needs. Formats are in :mod:`scalemath.search.serve_report`.
"""

from __future__ import annotations

import dataclasses
import time
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from ..values import printing as formatting
from ..catalog import hardware
from .. import quantities
from ..errors import BadValueError, ScalemathError
from . import serve_space as search

__all__ = ["serve", "topologies", "parse_topology", "parse_latency", "DoesNotFitError", "as_text", "as_markdown",
           "as_latex", "as_json"]


class DoesNotFitError(ScalemathError):
    """The model and its KV cache need more memory than the named topology has."""


def topologies(chip: hardware.Chip) -> list[tuple[str, int]]:
    """Candidate slices, smallest first: TPU slice shapes within the pod, or GPU counts (within one NVLink
    node when the catalog gives no scale-out bandwidth for the chip)."""
    if chip.family == "gpu":
        node = chip.nvlink_domain or 8
        out = [(str(n), n) for n in (1, 2, 4, 8) if n <= node]
        if chip.nic_bytes_per_s is not None:
            out += [(str(node * m), node * m) for m in (1, 2, 4, 8, 16, 32, 64) if node * m > out[-1][1]]
        elif node > out[-1][1]:
            out.append((str(node), node))
        return out
    if chip.torus_dims == 3:
        shapes = [(1, 1, 1), (2, 1, 1), (2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 4, 4), (4, 4, 4), (4, 4, 8), (4, 8, 8),
                  (8, 8, 8), (8, 8, 16), (8, 16, 16), (16, 16, 16)]
    else:
        shapes = [(1, 1), (2, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16)]
    return [("x".join(map(str, s)), int(sp.prod(s))) for s in shapes if chip.slice_fits(s)]


def parse_topology(text: str) -> int:
    parts = text.lower().split("x")
    if len(parts) > 4 or not all(p.isascii() and p.isdigit() and len(p) <= 4 and 0 < int(p) <= 4096 for p in parts):
        raise BadValueError(f"--topology {text!r}: write the slice shape like 4x4 or 4x4x8")
    return int(sp.prod([int(p) for p in parts]))


def parse_latency(text: str) -> sp.Rational:
    """``20ms``, ``150 us``, ``0.02 s`` -> seconds, exact; a bare number is refused (say the unit)."""
    from ..values.parse import parse_answer, shorten
    from ..values.units import UnitError, convert

    value, unit = parse_answer(text)
    if unit is None or unit.strip() not in ("s", "ms", "us", "µs", "μs", "ns"):
        raise BadValueError(f"--max-latency {shorten(text)}: give a time with its unit, e.g. 20ms, 500us or 0.02s")
    try:
        seconds = convert(value, unit.strip(), "s")
    except UnitError as exc:  # pragma: no cover - the units above are all known
        raise BadValueError(f"--max-latency {shorten(text)}: {exc}") from None
    if not seconds > 0:
        raise BadValueError(f"--max-latency {shorten(text)} must be a positive time")
    return seconds


#: chips serve may spread a model over (--chips or --topology)
MAX_CHIPS = 10**7


def dtypes(value: str | Sequence[str], what: str) -> list[str]:
    """A dtype or a comma list (``bf16,int8``; the API also takes a list), each known, duplicates dropped."""
    from ..values.parse import shorten

    names = [d.strip() for n in ([value] if isinstance(value, str) else list(value)) for d in n.split(",")]
    if sum(map(len, names)) > 200 or not names or any(d not in hardware.DTYPE_BYTES for d in names):
        raise BadValueError(f"{what} {shorten(str(value))}: give dtypes from {', '.join(hardware.DTYPE_BYTES)}, "
                            "comma-separated (e.g. bf16,int8)")
    return list(dict.fromkeys(names))


def check_shape(topology: str | None, chips: int | None) -> None:
    """``--topology`` and ``--chips`` are alternatives, and an empty or absurd slice is a mistake, not "the
    smallest that fits"."""
    from ..values.parse import shorten

    if topology is not None and chips is not None:
        raise BadValueError("give --topology or --chips, not both")
    if topology is not None:
        if not topology.strip():
            raise BadValueError(f"--topology {shorten(topology)} is not a slice shape; write it like 4x4 or 4x4x8")
        if parse_topology(topology) > MAX_CHIPS:
            raise BadValueError(f"--topology {shorten(topology)} is {parse_topology(topology)} chips; at most "
                                f"{MAX_CHIPS}, as with --chips")
    if chips is not None and not 1 <= chips <= MAX_CHIPS:
        raise BadValueError(f"--chips {chips} must be from 1 to {MAX_CHIPS}")


def _ev(name: str, ctx: quantities.Context, given: Mapping[str, object]):
    q = quantities.get(name)
    names = {p.name for p in q.params}
    return quantities.evaluate(q, ctx, {k: v for k, v in given.items() if k in names})


def _kv_token(model, context: int, dtype: str) -> tuple[Fraction, bool]:
    """Cache bytes per token in ``dtype``: averaged over the context when local layers keep only a window."""
    per_element = Fraction(hardware.dtype_bytes(dtype))
    if model.local_layers and context > model.sliding_window:
        return Fraction(model.kv_elements(context), context) * per_element, True
    return model.kv_elements_per_token() * per_element, False


#: The least --mfu: a millionth of the peak, far below any real run
MIN_MFU = sp.Rational(1, 10**6)


def _check(batch, context, prompt, mfu, generate, max_latency, objective, comms, chip) -> None:
    if (batch is not None and batch < 1) or context < 1 or prompt < 1 or generate < 1:
        raise BadValueError("--batch, --context, --prompt and --generate must be at least 1")
    if not MIN_MFU <= mfu <= 1:  # below it the prefill times leave floats (1e-900 became 0, then a division)
        raise BadValueError(f"--mfu {formatting.decimal(mfu)} must be from 10^-6 to 1: a fraction of the peak "
                            "FLOPs/s")
    if max_latency is not None and not max_latency > 0:
        raise BadValueError("--max-latency must be a positive time")
    if objective not in ("throughput", "cost") or comms not in search.STEP_FORMS:
        raise BadValueError("--objective is throughput or cost; --comms is critical, overlap or none")
    if objective == "cost" and not chip.price_cents_per_hour:
        raise BadValueError(f"the catalog has no price for {chip.key}: use --objective throughput")


def _slices(chip, chips, topology) -> list[tuple[str, int]]:
    """The slices to search: the one named by --topology or --chips, which a TPU's pod must be able to form
    (serve prices one slice over ICI, never several joined over DCN), or every slice of :func:`topologies`."""
    if topology:
        parts = topology.lower().split("x")
        n = parse_topology(topology)
        shape = search.slice_shape(chip, n) if len(parts) == 1 else tuple(int(p) for p in parts)
        _check_slice(chip, f"--topology {topology}", shape)
        return [(topology.lower(), n)]
    if chips:
        shape = search.slice_shape(chip, chips)
        _check_slice(chip, f"--chips {chips}" + (f" (a {'x'.join(map(str, shape))} slice)" if len(shape) > 1 else ""),
                     shape)
        return [(str(chips) if chip.family == "gpu" else "x".join(map(str, shape)), chips)]
    return topologies(chip)


def _check_slice(chip, what: str, shape: tuple[int, ...]) -> None:
    if chip.family != "tpu" or chip.slice_fits(shape):
        return
    pod = "x".join(map(str, chip.pod_shape))
    rule = ("at most 3 axes, no axis longer than the pod's longest" if len(chip.pod_shape) == 3 else
            f"at most {len(chip.pod_shape)} axes, each within the pod's, in some order")
    raise BadValueError(f"{what}: a {chip.key} pod ({pod}, {chip.pod_chips} chips) cannot form that slice ({rule}), "
                        f"and serve prices one slice over ICI, not several over DCN; the largest slice is {pod}; "
                        f"the slices the search tries: {', '.join(name for name, _ in topologies(chip))}")


def _does_not_fit(ctx, model, chip, batch, context, slices, pinned, dtypes, kv_tokens):
    # the most compact dtype pair names the smallest topology that would fit
    i = min(range(len(dtypes)), key=lambda j: (hardware.dtype_bytes(dtypes[j][0]), kv_tokens[j]))
    wctx = dataclasses.replace(ctx, weight_dtype=dtypes[i][0], kv_dtype=dtypes[i][1])
    need = _ev("inference.memory.min_chips", wctx, {"B": batch or 1, "S": context, "kv_token": kv_tokens[i]})
    smallest = next(((name, n) for name, n in topologies(chip) if n >= need.value), None)
    what = f"{model.key} with batch {batch or 1} x context {context} ({dtypes[i][0]} weights, {dtypes[i][1]} cache)"
    if not pinned:
        raise DoesNotFitError(f"{what} does not fit in a full pod")
    name, n = slices[0]
    weights, kv = need.steps[0].value, need.steps[1].value
    hint = f"the smallest topology that fits is {smallest[0]} ({smallest[1]} chips)" if smallest else \
        "no slice of this chip's pod holds it; use a smaller batch or context, or int8/int4 weights"
    raise DoesNotFitError(f"{what} does not fit on {name} ({n} chips): "
                          f"{formatting.with_unit(weights + kv - n * chip.hbm_bytes, 'byte')} of HBM missing; {hint}")


#: The convention axes the serving search honours; another choice is refused by name.
SERVE_AXES = ("hardware",)


def serve(ctx: quantities.Context, batch: int | None, context: int, prompt: int, chips: int | None,
          topology: str | None, mfu: sp.Rational, beyond_max_context: bool = False, *,
          weight_dtypes: Sequence[str] | None = None, kv_dtypes: Sequence[str] | None = None,
          max_latency: sp.Rational | None = None, objective: str = "throughput", generate: int = 512,
          comms: str = "critical") -> dict:
    """Search every configuration and report the best, exactly.

    ``batch``, ``chips``/``topology`` and one-element dtype lists pin those dimensions;
    ``kv_dtypes`` None pairs each weight dtype with itself (or takes ``ctx.kv_dtype``).
    """
    started = time.process_time()
    ctx.conventions.refuse_beyond(SERVE_AXES, "serve")
    model, chip = ctx.get_model(), ctx.get_chip()
    mfu = sp.nsimplify(mfu) if isinstance(mfu, float) else sp.sympify(mfu)
    _check(batch, context, prompt, mfu, generate, max_latency, objective, comms, chip)
    warnings: list[str] = []
    if model.max_context and context > model.max_context:
        if not beyond_max_context:
            raise BadValueError(f"--context {context} is longer than {model.key} allows ({model.max_context} tokens); "
                                "pass --beyond-max-context to price it anyway")
        warnings.append(f"--context {context} is longer than {model.key}'s released maximum of "
                        f"{model.max_context} tokens; the memory and times assume the model could use it")
    weights = list(dict.fromkeys(weight_dtypes or [ctx.weight_dtype or ctx.compute_dtype]))
    paired = kv_dtypes is None and ctx.kv_dtype is None
    caches = weights if paired else list(dict.fromkeys(kv_dtypes or [ctx.kv_dtype]))
    for d in set(weights) | set(caches):
        hardware.dtype_bytes(d)
    kv_tokens = [_kv_token(model, context, d)[0] for d in caches]
    slices = _slices(chip, chips, topology)
    space = search.build(ctx, chip, model, slices, weights, caches, kv_tokens, context, batch, paired)
    combos = [(w, w) for w in weights] if paired else [(w, c) for w in weights for c in caches]
    if space.batch.size == 0:
        _does_not_fit(ctx, model, chip, batch, context, slices, bool(chips or topology), combos,
                      [kv_tokens[caches.index(c)] for _, c in combos])
    search.evaluate(ctx, chip, space, context, prompt, generate, mfu, comms, max_latency)
    feasible, ranked = search.rank(space, objective, max_latency)
    if ranked.size == 0:
        fastest = int(np.argmin(space.step))
        raise BadValueError(f"nothing meets --max-latency {formatting.with_unit(max_latency, 's')}: the lowest latency "
                            f"per token is {formatting.with_unit(sp.Float(float(space.step[fastest])), 's')} "
                            f"({_describe(space, fastest)}); allow more latency, or try smaller dtypes or more chips")
    from . import serve_exact

    result = serve_exact.winner(ctx, chip, model, space, ranked, context, prompt, generate, mfu, comms, max_latency,
                                objective, batch)
    result["warnings"] = warnings + result["warnings"]
    windowed = _kv_token(model, context, result["kv_dtype"])
    if windowed[1]:
        result["warnings"].append(
            f"{model.local_layers} of {model.key}'s {model.L} layers keep only the last {model.sliding_window} tokens: "
            f"the KV cache is {formatting.with_unit(windowed[0], 'byte')} per token averaged over the context of "
            f"{context}")
    result.update(conventions=ctx.conventions.choices(SERVE_AXES))
    result.update(prompt=prompt, context=context, mfu=mfu, generate=generate, comms=comms, objective=objective,
                  max_latency=max_latency, search={"candidates": int(space.candidates), "feasible": int(feasible.size),
                                                   "seconds": round(time.process_time() - started, 3)})
    return result


def _describe(space: search.Space, i: int) -> str:
    lay = space.layouts[int(space.layout[i])]
    return (f"{lay.topology}, {lay.label}, {space.weight_dtypes[int(space.wdt[i])]} weights, "
            f"{space.kv_dtypes[int(space.kvdt[i])]} cache, batch {int(space.batch[i])}")


def __getattr__(name: str):  # the formats live in serve_report (keeps this module small)
    if name in ("as_text", "as_markdown", "as_latex", "as_json"):
        from . import serve_report

        return getattr(serve_report, name)
    raise AttributeError(name)
