"""Read the op events of a profile that ``jax.profiler.trace`` wrote.

``jax.profiler.trace(DIR)`` writes ``DIR/plugins/profile/<run>/<host>.xplane.pb`` (the XSpace proto
the TensorBoard profile plugin and xprof read) and, beside it, ``<host>.trace.json.gz``: the same
events as Chrome trace-event JSON. This module reads either:

- a ``*.trace.json.gz`` (or ``*.json``) with the standard library's gzip and json: no jax needed;
- a ``*.xplane.pb`` through ``jax.profiler.ProfileData``, the reader jaxlib ships (the ``xla`` extra);
- a directory: the log directory given to ``jax.profiler.trace`` (its newest run) or one run's directory,
  preferring the trace JSON.

An op event is one execution of one HLO instruction: the events whose ``hlo_op`` argument names it
(the CPU and GPU runtimes), or every event on a device's ``XLA Ops`` line (a TPU). Times are kept
exact: microseconds as Fractions of the decimal digits the file holds.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Iterable, Mapping

from .errors import BadValueError

__all__ = ["OpEvent", "Trace", "read_profile", "MAX_TRACE_BYTES"]

MAX_TRACE_BYTES = 2 * 2**30  # decompressed; a long TPU trace is hundreds of MB
HOW = ("give the directory passed to jax.profiler.trace, one of its plugins/profile/<run> directories, "
       "or a *.trace.json.gz / *.xplane.pb file from one")
#: statistics a device's op events may carry (TPU and GPU profiles): FLOPs and bytes of one execution
FLOP_STATS = ("flops", "model_flops")
BYTE_STATS = ("bytes_accessed", "raw_bytes_accessed")


@dataclass(frozen=True)
class OpEvent:
    """One execution of one HLO instruction: where, when (microseconds) and the statistics it carries."""

    name: str
    module: str
    device: str
    run: str | None
    start_us: Fraction
    dur_us: Fraction
    stats: Mapping[str, object] = field(default_factory=dict, compare=False)

    @property
    def end_us(self) -> Fraction:
        return self.start_us + self.dur_us


@dataclass(frozen=True)
class Trace:
    source: str
    reader: str
    events: tuple[OpEvent, ...]


def _exact(value) -> Fraction:
    if isinstance(value, Decimal):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(Decimal(repr(value)))
    return Fraction(value)


def _picoseconds(us) -> Fraction:
    """Microseconds from the file, to the picosecond: the profiler counts whole picoseconds (XPlane's
    offset_ps and duration_ps), which the JSON writer prints as 17-digit doubles (117.59099999999999)."""
    return Fraction(round(_exact(us) * 10**6), 10**6)


def _newest_run(path: str) -> str:
    runs = os.path.join(path, "plugins", "profile")
    if os.path.isdir(runs):
        dirs = sorted(d for d in os.listdir(runs) if os.path.isdir(os.path.join(runs, d)))
        if not dirs:
            raise BadValueError(f"{path} holds no profile run (plugins/profile/ is empty); {HOW}")
        return os.path.join(runs, dirs[-1])  # runs are named by their start time, YYYY_MM_DD_HH_MM_SS
    return path


def _files(path: str) -> list[str]:
    run = _newest_run(path)
    names = sorted(os.listdir(run))
    for suffix in (".trace.json.gz", ".xplane.pb"):
        found = [os.path.join(run, n) for n in names if n.endswith(suffix)]
        if found:
            return found
    raise BadValueError(f"{run} holds no *.trace.json.gz or *.xplane.pb file; {HOW}")


def read_profile(path: str) -> Trace:
    """The op events of the profile at ``path`` (a file or a directory); a clear error for anything else."""
    if not os.path.exists(path):
        raise BadValueError(f"{path}: no such file or directory; {HOW}")
    files = _files(path) if os.path.isdir(path) else [path]
    events: list[OpEvent] = []
    reader = ""
    for f in files:
        if os.path.getsize(f) == 0:
            raise BadValueError(f"{f} is empty; {HOW}")
        if f.endswith(".xplane.pb"):
            reader = "jax.profiler.ProfileData (xplane.pb)"
            events += _from_xplane(f)
        else:
            reader = "trace-event JSON (gzip + json)"
            events += _from_trace_json(f)
    if not events:
        raise BadValueError(f"{path} is a profile with no XLA op events: run the jitted function (and wait for "
                            "it with block_until_ready) inside jax.profiler.trace")
    return Trace(path, reader, tuple(sorted(events, key=lambda e: (e.device, e.start_us))))


# -- Chrome trace-event JSON ---------------------------------------------------------------------------------

def _load_json(path: str) -> dict:
    with open(path, "rb") as fh:
        head = fh.read(2)
    try:
        if head == b"\x1f\x8b":
            with gzip.open(path, "rb") as fh:
                data = fh.read(MAX_TRACE_BYTES + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(MAX_TRACE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise BadValueError(f"{path} is not a readable gzip file ({exc}); {HOW}") from None
    if len(data) > MAX_TRACE_BYTES:
        raise BadValueError(f"{path} holds more than {MAX_TRACE_BYTES // 2**30} GiB of trace events; profile "
                            "fewer steps")
    if not data.strip():
        raise BadValueError(f"{path} is empty; {HOW}")
    try:
        doc = json.loads(data, parse_float=Decimal)
    except (ValueError, RecursionError):
        raise BadValueError(f"{path} is not a profile: not JSON trace events; {HOW}") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise BadValueError(f"{path} is not a profile: JSON without a 'traceEvents' list; {HOW}")
    return doc


def _from_trace_json(path: str) -> list[OpEvent]:
    doc = _load_json(path)
    processes: dict[object, str] = {}
    threads: dict[tuple, str] = {}
    for e in doc["traceEvents"]:
        if isinstance(e, dict) and e.get("ph") == "M" and isinstance(e.get("args"), dict):
            if e.get("name") == "process_name":
                processes[e.get("pid")] = str(e["args"].get("name", ""))
            elif e.get("name") == "thread_name":
                threads[(e.get("pid"), e.get("tid"))] = str(e["args"].get("name", ""))
    out = []
    windows: dict[str, list] = defaultdict(list)
    for e in doc["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X" or "dur" not in e or "ts" not in e:
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        process = processes.get(e.get("pid"), str(e.get("pid")))
        line = threads.get((e.get("pid"), e.get("tid")), "")
        if line == "Steps" and "/device:" in process:
            try:
                windows[process].append((_picoseconds(e["ts"]), _picoseconds(e["ts"]) + _picoseconds(e["dur"]),
                                         str(e.get("name", ""))))
            except (TypeError, ValueError, ArithmeticError):
                pass
            continue
        if "hlo_op" not in args and not (line == "XLA Ops" and "/device:" in process):
            continue
        name = str(args.get("hlo_op") or e.get("name", ""))
        if not name or str(e.get("name", "")).startswith("end: "):
            continue
        try:
            start, dur = _picoseconds(e["ts"]), _picoseconds(e["dur"])
        except (TypeError, ValueError, ArithmeticError):
            raise BadValueError(f"{path}: event {name!r} has a time that is not a number "
                                f"(ts={e.get('ts')!r}, dur={e.get('dur')!r})") from None
        device = process + (f" #{args['device_ordinal']}" if "device_ordinal" in args else "")
        run = str(args["run_id"]) if "run_id" in args else None
        out.append(OpEvent(name, str(args.get("hlo_module", "")), device, run, start, dur, args))
    return _in_steps(out, windows)


# -- XSpace protobuf, through jaxlib's reader -------------------------------------------------------------------

def _profile_data():
    try:
        from jax.profiler import ProfileData
    except ImportError:
        raise BadValueError("reading a *.xplane.pb needs jax (jaxlib's ProfileData): pip install "
                            "'scalemath[xla]', or give the *.trace.json.gz that jax.profiler.trace writes beside it, "
                            "which needs nothing more") from None
    return ProfileData


def _from_xplane(path: str) -> list[OpEvent]:
    profile_data = _profile_data()
    try:
        space = profile_data.from_file(path)
        planes = list(space.planes)
    except Exception as exc:  # the reader raises its own error types for a file that is not an XSpace
        raise BadValueError(f"{path} is not a profile: jaxlib cannot read it as an XSpace "
                            f"({type(exc).__name__}); {HOW}") from None
    out = []
    windows: dict[str, list] = defaultdict(list)
    for plane in planes:
        for line in plane.lines:
            on_ops_line = line.name == "XLA Ops" and "/device:" in plane.name
            if line.name == "Steps" and "/device:" in plane.name:
                windows[plane.name] += [(_picoseconds(_exact(ev.start_ns) / 1000),
                                         _picoseconds(_exact(ev.start_ns + ev.duration_ns) / 1000), str(ev.name))
                                        for ev in line.events]
                continue
            for ev in line.events:
                stats = dict(ev.stats)
                if "hlo_op" not in stats and not on_ops_line:
                    continue
                name = str(stats.get("hlo_op") or ev.name)
                if name.startswith("end: "):
                    continue
                device = plane.name + (f" #{stats['device_ordinal']}" if "device_ordinal" in stats else "")
                run = str(stats["run_id"]) if "run_id" in stats else None
                out.append(OpEvent(name, str(stats.get("hlo_module", "")), device, run,
                                   _picoseconds(_exact(ev.start_ns) / 1000),
                                   _picoseconds(_exact(ev.duration_ns) / 1000), stats))
    return _in_steps(out, windows)


def _in_steps(events: list[OpEvent], windows: Mapping[str, list]) -> list[OpEvent]:
    """Events without a run id, placed in the step (a TPU's 'Steps' line) of their device that they start in."""
    if not windows:
        return events
    out = []
    for e in events:
        if e.run is None:
            process = e.device.split(" #")[0]
            step = next((name for start, end, name in windows.get(process, ()) if start <= e.start_us < end), None)
            if step is not None:
                e = OpEvent(e.name, e.module, e.device, f"step {step}", e.start_us, e.dur_us, e.stats)
        out.append(e)
    return out


def numeric_stat(event: OpEvent, keys: Iterable[str]) -> Fraction | None:
    """The first of ``keys`` the event carries as a number."""
    for k in keys:
        v = event.stats.get(k)
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return _exact(v)
        if isinstance(v, str):
            try:
                return _exact(Decimal(v))
            except ArithmeticError:
                continue
    return None
