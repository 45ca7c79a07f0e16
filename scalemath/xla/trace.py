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

import json
import os
import re
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Iterable, Mapping

from ..errors import BadValueError
from ..files import MAX_INT_DIGITS, read_user_bytes, size_text

__all__ = ["OpEvent", "Trace", "read_profile", "MAX_TRACE_BYTES"]

#: Largest profile file read, and largest trace JSON once decompressed: about a million op events (the most
#: xprof's trace viewer shows), which take about 2 GB once parsed. A larger gzip stops as it inflates past this.
MAX_TRACE_BYTES = 256 * 2**20
#: Largest decimal exponent of a number in a trace: profilers write doubles (within 1e-324 and 1e308).
MAX_EXPONENT = 400
_NOT_ZERO = re.compile(rb"[^\0]")
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


def _decimal(text: str) -> Decimal:
    """A number written in a trace, as a Decimal; ValueError for a literal too long or an exponent past
    MAX_EXPONENT (converting 1e999999999 to a Fraction would build a billion-digit integer)."""
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"a number of {len(text)} characters")
    value = Decimal(text)
    if value.is_finite() and value and abs(value.adjusted()) > MAX_EXPONENT:
        raise ValueError(f"{text[:40]} is beyond what a profiler writes (a double, within 1e-324 and 1e308)")
    return value


def _exact(value) -> Fraction:
    """A number of the profile, exactly; ValueError (or ArithmeticError) for NaN, infinity, text that is not a
    number, and a number out of :func:`_decimal`'s range."""
    if isinstance(value, bool):
        raise ValueError(f"{value} is not a number")
    if isinstance(value, str):
        value = _decimal(value.strip())
    if isinstance(value, float):
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not a finite number")
        return Fraction(value)
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
        if f.endswith(".xplane.pb"):
            reader = "jax.profiler.ProfileData (xplane.pb)"
            events += _from_xplane(f)
        else:
            reader = "trace-event JSON (gzip + json)" if f.endswith(".gz") else "trace-event JSON"
            events += _from_trace_json(f)
    if not events:
        raise BadValueError(f"{path} is a profile with no XLA op events: run the jitted function (and wait for "
                            "it with block_until_ready) inside jax.profiler.trace")
    return Trace(path, reader, tuple(sorted(events, key=lambda e: (e.device, e.start_us))))


# -- Chrome trace-event JSON ---------------------------------------------------------------------------------

def _read(path: str) -> bytes:
    """The bytes of a profile file, through the safe reader: no FIFO or device, at most MAX_TRACE_BYTES."""
    data = read_user_bytes(path, "profile", MAX_TRACE_BYTES)
    if not data:
        raise BadValueError(f"{path} is empty; {HOW}")
    return data


def _inflate(path: str, data: bytes) -> bytearray:
    """The gzip ``data`` decompressed a piece at a time (every member of it), refused as soon as it passes
    MAX_TRACE_BYTES: a small file of zeros may inflate to gigabytes."""
    out, pos = bytearray(), 0
    try:
        while pos < len(data):
            inflater = zlib.decompressobj(wbits=31)  # one gzip member
            while not inflater.eof:
                if pos >= len(data):
                    raise BadValueError(f"{path} is not a readable gzip file (it ends inside its compressed "
                                        f"data); {HOW}")
                piece = data[pos:pos + 2**16]
                pos += len(piece)
                out += inflater.decompress(piece, MAX_TRACE_BYTES + 1 - len(out))
                if len(out) > MAX_TRACE_BYTES:
                    raise BadValueError(f"{path} inflates to more than {size_text(MAX_TRACE_BYTES)} of trace events "
                                        "(the most read here); profile fewer steps, or check that it is a trace")
            pos -= len(inflater.unused_data)
            after = _NOT_ZERO.search(data, pos)  # zeros may pad the end of a gzip file
            pos = after.start() if after else len(data)
    except zlib.error as exc:
        raise BadValueError(f"{path} is not a readable gzip file ({exc}); {HOW}") from None
    return out


class _Refused(ValueError):
    """A number the trace's JSON holds that this reader refuses (the parser's hooks raise it)."""


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_EXPONENT:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits is beyond what a profiler writes")
    return int(text)


def _json_float(text: str) -> Decimal:
    try:
        return _decimal(text)
    except ValueError as exc:
        raise _Refused(str(exc)) from None


def _load_json(path: str) -> dict:
    data = _read(path)
    if data[:2] == b"\x1f\x8b":
        data = _inflate(path, data)
    if data.isspace():
        raise BadValueError(f"{path} is empty; {HOW}")
    try:
        doc = json.loads(data, parse_float=_json_float, parse_int=_json_int)
    except _Refused as exc:
        raise BadValueError(f"{path} is not a profile this reader takes: {exc}") from None
    except (ValueError, RecursionError):
        raise BadValueError(f"{path} is not a profile: not JSON trace events; {HOW}") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise BadValueError(f"{path} is not a profile: JSON without a 'traceEvents' list; {HOW}")
    return doc


def _shown(value, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width] + "..."


def _times(path: str, name: str, ts, dur, unit: str = "us") -> tuple[Fraction, Fraction]:
    """An op event's start and duration in microseconds, from the file's ``ts`` and ``dur`` in ``unit`` (us, or
    ns for an XPlane); one error naming the event for a time that is not a finite number, a negative duration
    or a negative timestamp."""
    event, per_us = f"{path}: event {_shown(name, 80)}", {"us": 1, "ns": 1000}[unit]
    try:
        start, length = _picoseconds(_exact(ts) / per_us), _picoseconds(_exact(dur) / per_us)
    except (TypeError, ValueError, ArithmeticError):
        raise BadValueError(f"{event} has a time that is not a number (ts={_shown(ts)}, dur={_shown(dur)}); "
                            f"times are finite numbers of {unit}") from None
    if length < 0:
        raise BadValueError(f"{event} has a negative duration (dur={_shown(dur)} {unit}); a profile's op events "
                            f"last 0 {unit} or more")
    if start < 0:
        raise BadValueError(f"{event} starts at a negative time (ts={_shown(ts)} {unit}); a profile's timestamps "
                            "are 0 or more")
    return start, length


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
        start, dur = _times(path, name, e["ts"], e["dur"])
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
    data = _read(path)
    try:
        space = profile_data.from_serialized_xspace(data)
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
                start, dur = _times(path, name, ev.start_ns, ev.duration_ns, "ns")
                out.append(OpEvent(name, str(stats.get("hlo_module", "")), device, run, start, dur, stats))
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
    """The first of ``keys`` the event carries as a finite number; a negative count is an error naming the event."""
    for k in keys:
        v = event.stats.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float, Decimal, str)):
            continue
        try:
            value = _exact(v)
        except (ValueError, ArithmeticError):
            continue
        if value < 0:
            raise BadValueError(f"event {_shown(event.name, 80)} on {_shown(event.device, 80)} has {k} = {_shown(v)}: "
                                "a count of FLOPs or bytes is 0 or more; is the file a profile?")
        return value
    return None
