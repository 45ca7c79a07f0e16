"""``scalemath plan``: search every way to train a model on a cluster, and explain the best.

The search (:mod:`scalemath.search.train_space`) prices every configuration with two closed forms, compiled once
to NumPy: a run's ``parallel.run.memory_per_device`` and ``parallel.run.step_time`` (achievable rates from the
catalog, schedules, context parallelism; MFU an output), or with ``--mfu`` the book's ``parallel.config.*`` (the
roofline time over the MFU given).
The winners are then evaluated again exactly (rationals, every step kept), so the report can show
why the best fits, what bounds its step and where the time goes, and why each runner-up lost.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from ..values import printing as formatting
from ..catalog import hardware, models
from ..conventions import AXES, BOOK, Conventions
from ..errors import BadValueError
from . import train_space as search
from ..symbolic.derivation import Evaluated

__all__ = ["plan", "options", "parse_count", "MAX_COUNT"]  # its report formats: plan_report

_SUFFIX = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
           "Ti": 2**40}
MAX_COUNT = 10**18
#: Time parts of the step, by their step labels, and what each is in words.
PARTS = {r"T_{\mathrm{math}}": "compute", r"T_{\mathrm{HBM}}": "weight reads from HBM", r"T_{\mathrm{TP}}": "tensor-parallel collectives",
         r"T_{\mathrm{CP}}": "context-parallel key/value passes",
         r"T_{\mathrm{EP}}": "expert AllToAlls", r"T_{\mathrm{FSDP}}": "FSDP weight gathers",
         r"T_{\mathrm{PP}}": "pipeline transfers", r"T_{\mathrm{DP}}": "gradient reduction"}
MEMORY = {r"\mathrm{bytes}_{w}": "weights", r"\mathrm{bytes}_{g}": "gradients",
          r"\mathrm{bytes}_{\mathrm{opt}}": "optimizer", r"\mathrm{bytes}_{\mathrm{act}}": "activations"}


def parse_count(text: str, what: str) -> int:
    """``4M`` = 4e6, ``4Mi`` = 4·2^20, ``15T`` = 1.5e13, or plain arithmetic (``1024*4096``).

    >>> parse_count("4Mi", "batch"), parse_count("15T", "tokens"), parse_count("1024*4096", "batch")
    (4194304, 15000000000000, 4194304)
    """
    from ..values.parse import parse_number

    text = text.strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if text.endswith(suffix) and text[: -len(suffix)].strip():
            value = parse_number(text[: -len(suffix)]) * _SUFFIX[suffix]
            break
    else:
        value = parse_number(text)
    if not (value.is_Integer and 0 < value <= MAX_COUNT):
        raise BadValueError(f"{what} = {text} must be a positive whole number up to 10^18 (e.g. 4M = 4e6, 4Mi = 4*2^20)")
    return int(value)


def options(chips, batch_tokens, *, seq_len: int = 4096, mfu=None, dtype: str = "bf16",
            weight_dtype: str | None = None, grad_dtype: str | None = None, optimizer_bytes=None,
            schedule: str | None = None, backend: str = "numpy", pins: dict | None = None,
            tp_overlap: bool = False, ep_overlap: bool = False, dp_overlap: bool = True,
            param_gather_overlap: bool = False, attention_kernel: str = "fused", sequence_parallel: bool = True,
            dropout: bool = False, route_nodes: int | None = None,
            conventions: Conventions = BOOK) -> search.Options:
    """The search's options from what a user typed (the CLI's options and the API's arguments alike):
    counts in parse_count's spellings, ``mfu`` None (priced from the catalog's achievable rates) or from 10^-6 to
    1 (the book's pricing: the roofline time over MFU), ``optimizer_bytes`` from 0 to 64; ``pins`` maps
    tp, cp, pp, ep, fsdp, dp, mb, v, checkpointing and zero1 to a value or None (searched). ``optimizer_bytes`` and
    ``grad_dtype`` default to what the ``optimizer`` convention counts (:data:`OPTIMIZER_PRESETS`); the search
    prices every other axis the book's way and refuses another choice by name.

    >>> o = options("256", "4Mi", mfu="0.5", pins={"tp": 4, "pp": None})
    >>> o.chips, o.batch, o.mfu, o.pins, o.pricing
    (256, 4194304, Fraction(1, 2), {'tp': 4}, 'book')
    """
    from fractions import Fraction

    from ..values.parse import parse_number

    conventions.refuse_beyond(PLAN_AXES, "plan")
    preset_bytes, preset_grads = OPTIMIZER_PRESETS[conventions["optimizer"]]
    optimizer_bytes = preset_bytes if optimizer_bytes is None else optimizer_bytes
    grad_dtype = preset_grads if grad_dtype is None else grad_dtype
    opt_bytes = parse_number(str(optimizer_bytes))
    if not (opt_bytes.is_Rational and 0 <= opt_bytes <= 64):
        raise BadValueError(f"--optimizer-bytes {optimizer_bytes} must be a number of bytes from 0 to 64")
    mfu_value = None
    if mfu is not None:
        mfu_value = parse_number(str(mfu))
        if not (mfu_value.is_Rational and sp.Rational(1, 10**6) <= mfu_value <= 1):
            raise BadValueError(f"--mfu {mfu} must be from 10^-6 to 1: a fraction of the peak (0.4 is typical); "
                                "smaller ones overflow the search's single-precision ranking")
        mfu_value = Fraction(str(mfu_value))
    pins = {k: v for k, v in (pins or {}).items() if v is not None}
    if schedule is None:
        schedule = "interleaved" if mfu_value is None else "1f1b"
    if attention_kernel not in ("fused", "unfused"):
        raise BadValueError(f"--attention-kernel {attention_kernel}: choose fused or unfused")
    if schedule not in search.SCHEDULES:
        raise BadValueError(f"--schedule {schedule}: choose one of {', '.join(search.SCHEDULES)}")
    beyond = [flag for flag, on in (("--schedule " + schedule, schedule not in ("1f1b", "zero-bubble")),
                                    ("--tp-overlap", tp_overlap), ("--ep-overlap", ep_overlap),
                                    ("--no-dp-overlap", not dp_overlap),
                                    ("--param-gather-overlap", param_gather_overlap),
                                    ("--attention-kernel unfused", attention_kernel != "fused"),
                                    ("--no-sequence-parallel", not sequence_parallel), ("--dropout", dropout),
                                    ("--route-nodes", route_nodes is not None),
                                    ("--cp", pins.get("cp", 1) != 1), ("--virtual-stages", pins.get("v", 1) != 1))
              if on]
    beyond += [f"--convention {axis}={conventions[axis]}" for axis in ("attention", "activations", "efficiency")
               if mfu_value is not None and conventions[axis] != AXES[axis].default]
    if mfu_value is not None and beyond:
        raise BadValueError(f"--mfu prices the book's way (1F1B or zero-bubble, every collective hidden under compute, "
                            f"no context parallelism), so {', '.join(beyond)} cannot apply; leave --mfu out to price "
                            "from the catalog's achievable rates")
    asked = parse_count(str(batch_tokens), "--batch-tokens")
    batch = max(1, (2 * asked + seq_len) // (2 * seq_len)) * seq_len  # whole sequences, the nearest (halves up)
    return search.Options(chips=parse_count(str(chips), "--chips"), batch=batch,
                          batch_asked=asked if batch != asked else None,
                          seq_len=seq_len, mfu=mfu_value, dtype=dtype, weight_dtype=weight_dtype,
                          grad_dtype=grad_dtype, optimizer_bytes=Fraction(str(opt_bytes)), schedule=schedule,
                          tp_overlap=tp_overlap, ep_overlap=ep_overlap, dp_overlap=dp_overlap,
                          param_gather_overlap=param_gather_overlap,
                          attention_kernel=attention_kernel, sequence_parallel=sequence_parallel, dropout=dropout,
                          route_nodes=route_nodes, backend=backend, pins=pins,
                          conventions=conventions)


#: The axes the search honours (every other is priced the book's way, and another choice is refused).
PLAN_AXES = ("optimizer", "hardware", "attention", "utilisation", "activations", "efficiency")

#: (optimizer bytes per parameter, gradient dtype) under each ``optimizer`` convention; a gradient dtype of None is
#: the weights' own. With the weights' 2 bytes: the book's 2 + 2 + 8, frameworks' mixed precision 2 + 4 + 12 = 18,
#: the ZeRO paper's 2 + 2 + 12 = 16 bytes per parameter.
OPTIMIZER_PRESETS = {"book": (8, None), "mixed-precision": (12, "fp32"), "zero-paper": (12, None)}


def conventions_line(opts: search.Options) -> str:
    """What the search counted by: the optimizer convention, or the bytes the user gave instead of it."""
    chosen = opts.conventions
    preset = OPTIMIZER_PRESETS[chosen["optimizer"]]
    grads = opts.grad_dtype or "the weights' dtype"
    given = (opts.optimizer_bytes, opts.grad_dtype) != (Fraction(preset[0]), preset[1])
    return (f"optimizer {'as given' if given else chosen['optimizer']} ({formatting.decimal(opts.optimizer_bytes)} "
            f"bytes of state per parameter, gradients in {grads}); "
            f"{chosen.describe(['hardware', 'attention', 'utilisation', 'activations', 'efficiency'])}; "
            "the book's on every other axis")


@dataclass
class Candidate:
    """One configuration with its exact memory and step time."""

    config: dict[str, object]
    memory: Evaluated
    step: Evaluated
    fits: bool
    why: str = ""

    def part(self, label: str) -> sp.Expr:
        """A step's value by its label; 0 for a part the pricing has not (context parallelism in the book's)."""
        return next((s.value for s in self.step.steps + self.memory.steps if s.step.label == label), sp.Integer(0))

    @property
    def name(self) -> str:
        c = self.config
        return search.family(c["tp"], c["pp"], c["ep"], c["fsdp"], c["replicas"], c["cp"])


def _exactly(value: float, candidates) -> Fraction:
    """The exact figure a float column was made from (one of ``candidates``)."""
    return next((Fraction(c) for c in candidates if float(c) == value), Fraction(value))


def _exact(row: dict, result: search.Result, opts: search.Options, hbm: int, chip: hardware.Chip) -> Candidate:
    ckpt, remat, _ = list(search.POLICIES.values())[int(row["ckpt"])]
    point = {"n_dp": int(row["dp"]), "n_fsdp": int(row["fsdp"]), "n_tp": int(row["tp"]), "n_pp": int(row["pp"]),
             "n_ep": int(row["ep"]), "n_mb": int(row["n_mb"]), "n_ckpt": ckpt, "r_remat": remat,
             "n_zero": int(row["dp"]) if row["zero"] else 1, "z_2": int(row["zero"] == 2),
             "q_sel": int(list(search.POLICIES)[int(row["ckpt"])] == "big-matmuls"),
             **{w: int(row[w]) for w in ("W_tp", "W_fsdp", "W_dp", "W_ep", "W_pp")}}
    if opts.pricing == "run":  # the rates are exact in the catalog; the columns hold them as floats
        from .rates import rates

        found = rates(chip, opts.dtype, opts.conventions["efficiency"])
        point.update(n_cp=int(row["cp"]), n_v=int(row["v"]))
        point.update({f"a_{axis}": _exactly(row[f"a_{axis}"], found.latency.values()) for axis in search.AXES})
        links = [w * m for w in found.bandwidth.values() for m in range(1, 9)]  # a TPU axis may span m torus axes
        point.update({w: _exactly(row[w], links) for w in ("W_tp", "W_cp", "W_fsdp", "W_dp", "W_ep", "W_pp")})
    config = {"tp": int(row["tp"]), "cp": int(row["cp"]), "pp": int(row["pp"]), "v": int(row["v"]),
              "schedule": opts.schedule, "ep": int(row["ep"]), "fsdp": int(row["fsdp"]),
              "dp": int(row["dp"]) // int(row["ep"]), "replicas": int(row["dp"]), "chips": int(row["chips"]),
              "micro_batch": int(row["mb"]),
              "micro_batches": int(row["n_mb"]), "checkpointing": list(search.POLICIES)[int(row["ckpt"])],
              "zero1": bool(row["zero"]), "zero": int(row["zero"]), "dtype": opts.dtype, "weight_dtype": search.stored_dtype(opts),
              "bandwidths": {w: int(row[w]) for w in ("W_tp", "W_fsdp", "W_dp", "W_ep", "W_pp")}}
    memory, step = result.memory.exact(point), result.step.exact(point)
    return Candidate(config, memory, step, bool(memory.value <= hbm))


def plan(model: models.Model, chip: hardware.Chip, opts: search.Options, tokens: int | None = None, top: int = 5,
         catalog=None, model_catalog=None) -> dict:
    """The search, its best ``top`` configurations and the best of each mix of parallelism, explained."""
    chip = chip.under(opts.conventions["hardware"])
    if opts.chips < 1:
        raise BadValueError(f"--chips {opts.chips} must be at least 1")
    if opts.mfu is not None and not Fraction(1, 10**6) <= opts.mfu <= 1:
        raise BadValueError(f"--mfu {opts.mfu} must be from 10^-6 to 1")
    if opts.batch < opts.seq_len:
        raise BadValueError(f"--batch-tokens {opts.batch} is less than one sequence of --seq-len {opts.seq_len}")
    if model.max_context and opts.seq_len > model.max_context:
        raise BadValueError(f"--seq-len {opts.seq_len} is longer than {model.key} allows ({model.max_context})")
    dtypes = list(dict.fromkeys(d.strip() for d in opts.dtype.split(",") if d.strip()))
    if not dtypes:
        raise BadValueError("--dtype names no dtype; give one or a comma list such as bf16,fp8")
    for d in dtypes:
        hardware.dtype_bytes(d)
        chip.flops(d)  # a dtype the chip has no rate for: a clear error now
    search.space(model, chip, dataclasses.replace(opts, dtype=dtypes[0]), len(dtypes))  # too large: refused now
    hbm = chip.hbm_bytes
    ranked, families, counts = [], {}, {"candidates": 0, "feasible": 0, "seconds": 0.0}
    for d in dtypes:  # each dtype is its own space (its own peak rate and bytes), searched whole
        sub = dataclasses.replace(opts, dtype=d)
        result = search.search(model, chip, sub, keep=top, catalog=catalog, model_catalog=model_catalog)
        for key in counts:
            counts[key] += getattr(result, key)
        ranked += [_exact({k: v[i].item() for k, v in result.table.items()}, result, sub, hbm, chip)
                   for i in range(len(result.table.get("step", [])))]
        for name, row in result.families.items():
            c = _exact(row, result, sub, hbm, chip)
            if name not in families or _key(c) < _key(families[name]):
                families[name] = c
    ranked = sorted(ranked, key=_key)[:top]
    families = list(families.values())
    best = ranked[0] if ranked else None
    for c in ranked[1:] + families:
        c.why = "" if best is not None and c.config == best.config else \
            _why_lost(c, best, hbm) if best else _why_unfit(c, hbm)
    families.sort(key=_key)
    training = sp.Rational(tokens, opts.batch) * best.step.value if best is not None and tokens else None
    from .achieved import achieved
    from .rates import rates

    found = rates(chip, best.config["dtype"], opts.conventions["efficiency"]) \
        if best is not None and opts.pricing == "run" else None
    got = achieved(best, opts, chip, model.param_count(active=True)) if best is not None else None
    return {"model": model.key, "chip": chip.key, "opts": opts, "tokens": tokens, "hbm": hbm,
            "rates": found, "achieved": got,
            "params": model.param_count(), "active_params": model.param_count(active=True),
            "search": counts, "placement": search.placement(chip), "ranked": ranked, "best": best, "families": families,
            "training_time": training}


def _key(c: Candidate) -> tuple:
    """The search's order, on exact values: fitting first; fastest (a relative 1e-7 counts as a tie), fewer
    chips, less communication, less memory; a configuration that does not fit by its memory."""
    if not c.fits:
        return (1, c.memory.value)
    return (0, round(float(c.step.value), 7 - int(math.floor(math.log10(float(c.step.value))))), c.config["chips"],
            float(c.part(r"T_{\mathrm{comms}}")), c.memory.value)


def _why_unfit(c: Candidate, hbm: int) -> str:
    parts = {name: next(s.value for s in c.memory.steps if s.step.label == label) for label, name in MEMORY.items()}
    largest = max(parts, key=parts.get)
    return (f"does not fit: {formatting.with_unit(c.memory.value, 'byte')} per chip > "
            f"{formatting.with_unit(hbm, 'byte')} of HBM (largest part: {largest}, "
            f"{formatting.with_unit(parts[largest], 'byte')})")


def bottleneck(c: Candidate) -> str:
    """What sets the step: the compute side (the matmuls, or the weight reads they wait for, with the memory-bound
    operations and the collectives compute waits for), or the slowest overlapped collective when it takes longer;
    plus the bubble and the exposed reduction."""
    busy, pipe = c.part(r"T_{\mathrm{busy}}"), c.part(r"T_{\mathrm{pipe}}")
    exposed = c.part(r"T_{\mathrm{DP}}^{\mathrm{exposed}}")
    waiting = c.part(r"T_{\mathrm{exposed}}")
    comms, math_t, hbm = c.part(r"T_{\mathrm{comms}}"), c.part(r"T_{\mathrm{math}}"), c.part(r"T_{\mathrm{HBM}}")
    # the compute and what it waits for; the book's pricing (--mfu) has no T_compute: its matmuls alone
    compute_side = c.part(r"T_{\mathrm{compute}}") + waiting if c.part(r"T_{\mathrm{compute}}") else math_t
    if comms > compute_side and comms == busy:
        overlapped = [PARTS[label] for label in (r"T_{\mathrm{TP}}", r"T_{\mathrm{EP}}", r"T_{\mathrm{FSDP}}",
                                                 r"T_{\mathrm{PP}}") if c.part(label) == comms]
        head = (f"bound by {overlapped[0] if overlapped else 'overlapped collectives'} "
                f"({formatting.with_unit(comms, 's')} against {formatting.with_unit(compute_side, 's')} of compute)")
    elif hbm > math_t:
        head = (f"bound by weight reads from HBM ({formatting.with_unit(hbm, 's')} against "
                f"{formatting.with_unit(math_t, 's')} of matmuls)")
    else:
        head = "compute-bound"
    out = [head]
    if waiting > 0:
        out.append(f"compute waits {formatting.with_unit(waiting, 's')} for collectives it does not overlap")
    if pipe > busy:
        out.append(f"the pipeline bubble adds {formatting.with_unit(pipe - busy, 's')}")
    if exposed > 0:
        what = "the gradient reduction and the weights' AllGather leave" if c.config["zero"] else \
            "the gradient reduction leaves"
        out.append(f"{what} {formatting.with_unit(exposed, 's')} exposed")
    if c.config["checkpointing"] == "block":
        out.append("rematerialisation redoes the forward pass")
    return "; ".join(out)


def _why_lost(c: Candidate, best: Candidate, hbm: int) -> str:
    """Why ``c`` ranks below ``best``, by the search's order: step time, chips, slowest communication, memory."""
    if not c.fits:
        return _why_unfit(c, hbm)
    slower = c.step.value / best.step.value - 1
    if slower > sp.Rational(1, 10**7):
        return f"{formatting.decimal(100 * slower, 3)} % slower: {bottleneck(c)}"
    if c.config["chips"] > best.config["chips"]:
        return f"as fast, on more chips ({c.config['chips']})"
    label = r"T_{\mathrm{comms}}"
    if c.part(label) > best.part(label) * (1 + sp.Rational(1, 10**7)):
        return (f"as fast, with less slack: its slowest collective takes {_seconds(c.part(label))} against "
                f"{_seconds(best.part(label))}")
    if c.memory.value == best.memory.value:
        return "as fast, and equal in chips, slack and memory per chip: an equally good choice"
    sig = next(n for n in range(4, 19) if formatting.with_unit(c.memory.value, "byte", n)
               != formatting.with_unit(best.memory.value, "byte", n))  # enough digits to tell them apart
    return (f"as fast, with more memory per chip ({formatting.with_unit(c.memory.value, 'byte', sig)} against "
            f"{formatting.with_unit(best.memory.value, 'byte', sig)})")


def _seconds(value) -> str:
    return "0 s" if value == 0 else formatting.with_unit(value, "s")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


SCHEDULE_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B", "zero-bubble": "zero-bubble"}


def describe(c: Candidate) -> str:
    k = c.config
    sizes = (("TP", k["tp"]), ("CP", k["cp"]), ("EP", k["ep"]), ("PP", k["pp"]), ("FSDP", k["fsdp"]),
             ("DP", k["dp"]))
    degrees = " x ".join(f"{name} {n}" for name, n in sizes if n > 1)
    where = f"{degrees} ({k['chips']} chips)" if degrees else "one chip"
    if k["pp"] > 1:
        schedule = "1f1b" if k["schedule"] == "interleaved" and k["v"] == 1 else k["schedule"]  # v = 1 is 1F1B
        where += f", {SCHEDULE_NAMES[schedule]}" + (f" with {k['v']} virtual stages" if k["v"] > 1 else "")
    return (f"{where}, micro-batch {k['micro_batch']} "
            f"sequence{'s' if k['micro_batch'] > 1 else ''} x {k['micro_batches']}, checkpointing "
            f"{k['checkpointing']}, " + (f"ZeRO-{k['zero']}" if k["zero"] else "ZeRO off") + f", {k['dtype']} matmuls"
            + (f" on {k['weight_dtype']} weights" if k["weight_dtype"] != k["dtype"] else ""))

