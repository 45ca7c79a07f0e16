"""A Python API for notebooks and scripts: the CLI's commands as functions.

Each function makes the same library calls as its command (``scalemath derive``, ``solve``, ``check``,
``plan``, ``serve``, ``problems generate``, ``problems grade``, ``hlo``), takes keyword arguments named like
the command's options, and raises the library's exceptions (:class:`scalemath.ScalemathError` and its
subclasses) with the command's messages. Given values are exact: an int, a :class:`fractions.Fraction`,
a SymPy number, or text such as ``"2**15"`` or ``"1.5e9"`` read by the safe parser (never evaluated as
Python); a float is read as the decimal it prints as.

>>> import scalemath
>>> r = scalemath.derive("roofline.critical_intensity", chip="tpu-v5e")
>>> r.exact
9850/41
>>> r.unit
'FLOP/byte'
>>> scalemath.derive("matmul.critical_batch_approx", chip="h100").value
295.5223880597015
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from .reports import GeneratedSet, Grades, HloReport, PlanReport, ServeReport, ShardReport
from .results import Check, Result
from ..errors import BadValueError
from ..catalog.hardware import DTYPE_BYTES as DTYPES

__all__ = ["derive", "solve", "check", "plan", "serve", "shard", "generate", "grade", "hlo"]

def _catalog(hardware_file):
    from ..catalog import hardware

    return hardware.load_catalog(hardware_file) if hardware_file else hardware.default_catalog()


def _model_catalog(model: str | None, model_config: str | None):
    """(model key, catalog), as the CLI's --model / --model-config read them."""
    from ..catalog import models

    if model is not None and model_config is not None:
        raise BadValueError("give model or model_config, not both")
    if model_config is not None:
        from ..catalog.hf_config import model_from_hf_config

        m = model_from_hf_config(model_config)
        return m.key, models.ModelCatalog(str(model_config), {m.key: m})
    if model is not None:
        catalog = models.default_models()
        catalog[model]  # an unknown model: did-you-mean now
        return model.lower(), catalog
    return None, None


def _conventions(convention: str | Sequence[str]):
    """Conventions from a profile name, ``"axis=choice"``, or a list of them (later ones win)."""
    from ..conventions import parse

    return parse([convention] if isinstance(convention, str) else list(convention))


def _context(chip=None, model=None, *, dtype=None, weight_dtype=None, kv_dtype=None, level="hbm",
             hardware_file=None, model_config=None, convention=()):
    from ..quantities import Context

    for name, value in (("dtype", dtype), ("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype)):
        if value is not None and value not in DTYPES:
            raise BadValueError(f"{name}={value!r}: give one of {', '.join(DTYPES)}")
    catalog = _catalog(hardware_file)
    if chip is not None:
        catalog[chip]  # an unknown chip: did-you-mean now, before any work
    key, model_catalog = _model_catalog(model, model_config)
    return Context(chip=chip, dtype=dtype, weight_dtype=weight_dtype, level=level, catalog=catalog, model=key,
                   model_catalog=model_catalog, kv_dtype=kv_dtype, conventions=_conventions(convention))


def _given(given: Mapping[str, Any]) -> dict:
    """``D=8192, F="2**15"`` as the CLI's ``--set D=8192,F=2**15``: read by the same safe parser."""
    from ..values.parse import parse_assignments

    items = []
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str, Fraction)) and \
                not getattr(value, "is_number", False):
            raise BadValueError(f"{name}={value!r}: give a number (int, Fraction, SymPy number or text like '2**15')")
        text = repr(value) if isinstance(value, float) else str(value)
        if "," in text:
            raise BadValueError(f"{name}={text!r}: one value per name (no commas)")
        items.append(f"{name}={text}")
    return parse_assignments(items)


def derive(name: str, chip: str | None = None, model: str | None = None, *, dtype: str | None = None,
           weight_dtype: str | None = None, kv_dtype: str | None = None, level: str = "hbm",
           hardware_file: str | None = None, model_config: str | None = None,
           convention: str | Sequence[str] = (), **given) -> Result:
    """Derive a named quantity step by step (``scalemath derive NAME --chip ... --set SYM=VALUE``).

    ``given`` binds parameters by their symbol names (``B=4096``); the chip, dtypes, level and model bind
    the rest. Without numbers the result stays symbolic:

    >>> derive("matmul.critical_batch_approx").exact
    C*b_w/(2*W)
    >>> [s.label for s in derive("matmul.critical_batch_approx", chip="h100").steps][-1]
    'B^*'
    """
    from .. import quantities
    from ..reports.derive import check_size, derivation_report

    q = quantities.get(name)
    values = _given(given)
    ctx = _context(chip, model, dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype, level=level,
                   convention=convention, hardware_file=hardware_file, model_config=model_config)
    check_size(q, ctx, values)
    return Result(derivation_report(q, ctx, quantities.evaluate(q, ctx, values)))


def solve(name: str, unknown: str, *, equals: str | int | Fraction | None = None, against: str | None = None,
          chip: str | None = None, model: str | None = None, dtype: str | None = None,
          weight_dtype: str | None = None, kv_dtype: str | None = None, level: str = "hbm",
          hardware_file: str | None = None, model_config: str | None = None,
          convention: str | Sequence[str] = (), **given) -> Result:
    """Solve ``name = equals`` (a number or an expression in its symbols) or ``name = against`` (another
    quantity: a crossover) for the symbol ``unknown`` (``scalemath solve NAME --for SYM ...``).

    >>> solve("matmul.t_math", "B", against="matmul.t_comms", chip="h100", D=8192, F=32768).exact
    81100800/262057
    """
    from ..reports.derive import derivation_report, solve_quantity

    if (equals is None) == (against is None):
        raise BadValueError("give exactly one of equals=EXPR or against=QUANTITY")
    values = _given(given)
    ctx = _context(chip, model, dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype, level=level,
                   convention=convention, hardware_file=hardware_file, model_config=model_config)
    label, evaluated = solve_quantity(name, unknown, None if equals is None else str(equals), against, ctx, values)
    from .. import quantities

    read = [quantities.get(n) for n in (name, against) if n]
    return Result(derivation_report(label, ctx, evaluated, read=read))


def check(name: str, answer: str | int | float | None = None, *, expr: str | None = None, rel_tol="0.01",
          chip: str | None = None, model: str | None = None, dtype: str | None = None,
          weight_dtype: str | None = None, kv_dtype: str | None = None, level: str = "hbm",
          hardware_file: str | None = None, model_config: str | None = None,
          convention: str | Sequence[str] = (), **given) -> Check:
    """Is ``answer`` (a number, or text with a unit such as ``"1.2 ms"``) right for the quantity? With
    ``expr``, is a closed form equal to the engine's? (``scalemath check NAME ANSWER ...``)

    >>> v = check("roofline.critical_intensity", "240", chip="tpu-v5e")
    >>> v.right, v.exact
    (True, 9850/41)
    >>> bool(check("roofline.critical_intensity", "250 FLOP/byte", chip="tpu-v5e", rel_tol="0.01"))
    False
    """
    from .. import quantities
    from ..reports.checking import check_answer
    from ..reports.derive import check_size, derivation_report
    from ..values.parse import parse_number

    if (answer is None) == (expr is None):
        raise BadValueError("give an answer or expr=EXPR (not both)")
    tol = parse_number(str(rel_tol))
    if not (tol.is_Rational and 0 <= tol < 1):
        raise BadValueError(f"rel_tol={rel_tol!r} must be at least 0 and below 1")
    q = quantities.get(name)
    values = _given(given)
    ctx = _context(chip, model, dtype=dtype, weight_dtype=weight_dtype, kv_dtype=kv_dtype, level=level,
                   convention=convention, hardware_file=hardware_file, model_config=model_config)
    check_size(q, ctx, values)
    ev = quantities.evaluate(q, ctx, values)
    result = Result(derivation_report(q, ctx, ev))
    return Check(q.name, check_answer(q, ctx, ev, answer, expr, tol,
                                      {"values": "as keywords (e.g. {}=...)", "expr": "expr=..."}), result)


def plan(model: str | None = None, chip: str | None = None, chips: str | int | None = None,
         batch_tokens: str | int | None = None, *, model_config: str | None = None, seq_len: int = 4096,
         tokens: str | int | None = None, mfu=None, dtype: str = "bf16", weight_dtype: str | None = None,
         grad_dtype: str | None = None, optimizer_bytes=None, tp: int | None = None, cp: int | None = None,
         pp: int | None = None, ep: int | None = None, fsdp: int | None = None, dp: int | None = None,
         micro_batch: int | None = None, virtual_stages: int | None = None, checkpointing: str | None = None,
         zero1: bool | None = None, zero: int | None = None, schedule: str | None = None, tp_overlap: bool = False, ep_overlap: bool = False,
         dp_overlap: bool = True, param_gather_overlap: bool = False, attention_kernel: str = "fused",
         sequence_parallel: bool = True,
         dropout: bool = False, route_nodes: int | None = None,
         top: int = 5,
         backend: str = "numpy", hardware_file: str | None = None,
         convention: str | Sequence[str] = ()) -> PlanReport:
    """Search every way to train ``model`` on ``chips`` chips (``scalemath plan ...``); counts take the
    CLI's spellings (``"4M"`` = 4e6, ``"4Mi"`` = 4 * 2**20). Priced from the catalog's achievable rates, or with
    ``mfu`` the book's way.

    >>> p = plan("llama3-8b", "tpu-v5p", 256, "4Mi", seq_len=4096, top=2)
    >>> p.best.fits, p.unit
    (True, 's')
    """
    from ..search import plan as planner

    if model is None and model_config is None:
        raise BadValueError("give model=NAME or model_config='config.json'")
    if chip is None or chips is None or batch_tokens is None:
        raise BadValueError("give chip, chips and batch_tokens (e.g. plan('llama3-8b', 'tpu-v5p', 256, '4M'))")
    key, model_catalog = _model_catalog(model, model_config)
    catalog = _catalog(hardware_file)
    opts = planner.options(chips, batch_tokens, seq_len=seq_len, mfu=mfu, dtype=dtype, weight_dtype=weight_dtype,
                           grad_dtype=grad_dtype, optimizer_bytes=optimizer_bytes, schedule=schedule, backend=backend,
                           pins={"tp": tp, "cp": cp, "pp": pp, "ep": ep, "fsdp": fsdp, "dp": dp, "mb": micro_batch,
                                 "v": virtual_stages, "checkpointing": checkpointing, "zero1": zero1, "zero": zero},
                           tp_overlap=tp_overlap, ep_overlap=ep_overlap, dp_overlap=dp_overlap,
                           param_gather_overlap=param_gather_overlap,
                           attention_kernel=attention_kernel, sequence_parallel=sequence_parallel, dropout=dropout,
                           route_nodes=route_nodes, conventions=_conventions(convention))
    chip_record, model_record = catalog[chip], model_catalog[key]
    report = planner.plan(model_record, chip_record, opts,
                          planner.parse_count(str(tokens), "--tokens") if tokens is not None else None, top,
                          catalog=catalog, model_catalog=model_catalog)
    return PlanReport(report, (model_record, chip_record, catalog, model_catalog))


def serve(model: str | None = None, chip: str | None = None, *, model_config: str | None = None,
          dtype: str | Sequence[str] = "bf16", compute_dtype: str = "bf16", kv_dtype: str | Sequence[str] | None = None,
          topology: str | None = None, chips: int | None = None, batch: int | None = None, context: int = 8192,
          prompt: int = 2048, generate: int = 512, max_latency: str | None = None, objective: str = "throughput",
          comms: str = "critical", mfu="0.5", beyond_max_context: bool = False,
          hardware_file: str | None = None, convention: str | Sequence[str] = ()) -> ServeReport:
    """Design a server for ``model`` on ``chip`` (``scalemath serve ...``): the best throughput (or cost)
    per chip under an optional latency limit such as ``"20ms"``.

    >>> s = serve("llama3-8b", "tpu-v5e", topology="2x2", context=4096)
    >>> s.unit, s.value > 0
    ('s', True)
    """
    from ..search import serve as server
    from ..values.parse import parse_number
    from ..quantities import Context

    if model is None and model_config is None:
        raise BadValueError("give model=NAME or model_config='config.json'")
    if chip is None:
        raise BadValueError("give chip, e.g. serve('llama3-8b', 'tpu-v5e')")
    server.check_shape(topology, chips)
    weights = server.dtypes(dtype, "dtype")
    caches = server.dtypes(kv_dtype, "kv_dtype") if kv_dtype is not None else None
    if compute_dtype not in DTYPES:
        raise BadValueError(f"compute_dtype={compute_dtype!r}: give one of {', '.join(DTYPES)}")
    limit = server.parse_latency(max_latency) if max_latency is not None else None
    key, model_catalog = _model_catalog(model, model_config)
    catalog = _catalog(hardware_file)
    catalog[chip]
    ctx = Context(chip=chip, dtype=compute_dtype, weight_dtype=weights[0], kv_dtype=caches[0] if caches else None,
                  catalog=catalog, model=key, model_catalog=model_catalog, conventions=_conventions(convention))
    return ServeReport(server.serve(ctx, batch, context, prompt, chips, topology, parse_number(str(mfu)),
                                    beyond_max_context, weight_dtypes=weights, kv_dtypes=caches, max_latency=limit,
                                    objective=objective, generate=generate, comms=comms))


def shard(pattern: str, mesh: str, chip: str | None = None, *, dtype: str | None = None,
          given: Mapping[str, Any] | None = None, slice: str | None = None,  # noqa: A002 - the command's option
          hardware_file: str | None = None) -> ShardReport:
    """Which sharding case ``pattern`` is (the book's notation, e.g. ``"A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]"``),
    its collectives, bytes and, with ``chip``, times, and the cheaper plan (``scalemath shard``); one array
    (``"A[I_X, J]"`` or ``"A[I_X, J] -> A[I, J_X]"``) gives its layout and how to reshard it.

    >>> r = shard("A[I, J_X] @ B[J_X, K] -> C[I, K]", "X=16", "tpu-v5e", given={"I": 8192, "J": 8192, "K": 8192})
    >>> r.report["case"]
    '3'
    """
    from ..reports.shard import shard_report

    chip_record = _catalog(hardware_file)[chip] if chip is not None else None
    return ShardReport(shard_report(pattern, mesh, chip_record, dtype, _given(given or {}), slice))


def generate(topics: Sequence[str] | str | None = None, n: int | None = None, seed: int = 0, *,
             generator: Sequence[str] | str | None = None, variants: int | None = None,
             students: str | None = None, out: str | Path | None = None,
             formats: Sequence[str] | str = "md,tex,html,json",
             force: bool = False, config: str | None = None, title: str | None = None, course: str | None = None,
             instructions: str | None = None, jobs: int = 1) -> GeneratedSet:
    """Draw a checked problem set (``scalemath problems generate``); with ``out``, write its sheet, key
    and manifest there (an existing folder only with ``force=True``, unless it already holds this very set:
    then nothing is written and the result's ``unchanged`` is True). ``jobs`` worker processes make the
    problems (``--jobs``; 1, the default, makes them in this process); the set is the same.

    >>> s = generate("roofline", n=2, seed=1)
    >>> len(s.problems)
    2
    """
    from ..problems import sets, sheet as sheets

    topics = [topics] if isinstance(topics, str) else topics
    names = [generator] if isinstance(generator, str) else list(generator or ())
    if variants is not None and students is not None:
        raise BadValueError("give variants or students, not both")
    roster = sheets.read_roster(students) if students is not None else None
    fmts = [f.strip() for f in (formats.split(",") if isinstance(formats, str) else formats) if f.strip()]
    pset = sets.build_set(topics, n, seed, generator_names=names, variants=variants, students=roster, jobs=jobs,
                          formats=fmts if out is not None else ())
    if out is None:
        return GeneratedSet(pset)
    sheet = sheets.load_config(config) if config is not None else sheets.Sheet()
    sheet = sheet.merged(title=sheets.check_text(title, "--title") if title is not None else None,
                         course=sheets.check_text(course, "--course") if course is not None else None,
                         instructions=sheets.check_text(instructions, "--instructions", 4000)
                         if instructions is not None else None)
    return GeneratedSet(pset, sets.write_set(pset, Path(out), fmts, force, sheet=sheet))


def grade(path: str | Path, key: str | Path | None = None) -> Grades:
    """Grade an answers file, or a folder of them, against a set's manifest (``scalemath problems grade``);
    the manifest is found beside ``path`` or above it when ``key`` is not given."""
    from ..problems.grading import grade_path

    _, sheets = grade_path(path, key)
    return Grades(sheets)


def hlo(file: str | Path, chip: str | None = None, *, mesh: str | None = None, dtype: str | None = None,
        top: int | None = 10, hardware_file: str | None = None) -> HloReport:
    """Every op of an HLO module with its bytes, FLOPs and, with ``chip``, its roofline time
    (``scalemath hlo FILE --chip ... --mesh X=4,Y=2``); ``top=None`` lists every op."""
    from ..xla import analysis
    from ..symbolic.notation import parse_mesh

    chip_record = _catalog(hardware_file)[chip] if chip is not None else None
    mesh_axes = parse_mesh(mesh) if mesh is not None else None
    report = analysis.analyse(analysis.read_hlo(str(file)), chip_record, mesh_axes, dtype, source=str(file))
    return HloReport(report, top)


