"""The space of training configurations, placed on the hardware and ranked, without a per-candidate loop.

A candidate is a choice of tensor-parallel degree, pipeline stages, expert shards, FSDP shards,
data-parallel replicas, micro-batch size, checkpointing policy and ZeRO-1 (on or off). Only the
combinations the hardware allows are enumerated (whole micro-batches, at most ``chips`` chips, tensor
parallelism inside an NVLink domain or along one ICI axis, only data parallelism across TPU pods), as a
flat index decoded in chunks (:class:`~scalemath.search.space.Space`), so the space is counted before
anything of its size is allocated, refused past MAX_CANDIDATES, and streams through in bounded memory.
Each chunk gives every axis the per-chip
bandwidth of the network it crosses, and evaluates the engine's two closed forms
(``parallel.config.memory_per_device`` and ``parallel.config.step_time``), compiled once by
:class:`~scalemath.search.compiled.Compiled`, on all of them at once.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

import numpy as np

from ..conventions import BOOK, Conventions
from ..catalog import hardware, models
from ..errors import BadValueError
from ..quantities import Context
from .compiled import Compiled
from .space import PINS, POLICIES, Space, choices, interleavable
from .train_rank import best_per_family, family, merge, near

__all__ = ["POLICIES", "Options", "Result", "search", "space", "AXES", "VARYING", "axis_bandwidths",
           "MAX_CANDIDATES", "MAX_SEQUENCES"]

#: Pipeline schedules: the share of the n_PP - 1 fill-and-drain slots each leaves idle (divided by the virtual
#: stages v), whether every micro-batch's activations stay until its backward pass (GPipe), and whether v > 1 is
#: searched (interleaved 1F1B, Narayanan et al. 2021, Section 2.2.2).
SCHEDULES: Mapping[str, tuple[int, int, bool]] = {"gpipe": (1, 1, False), "1f1b": (1, 0, False),
                                                   "interleaved": (1, 0, True), "zero-bubble": (0, 0, False)}

#: Degrees a candidate chooses, in the order they are placed on the hardware (innermost first).
AXES = ("tp", "cp", "ep", "pp", "fsdp", "dp")
#: The names the compiled forms vary over: the book's pricing, and a run's (parallel.run.*).
VARYING = ("n_dp", "n_fsdp", "n_tp", "n_pp", "n_ep", "n_zero", "n_mb", "n_ckpt", "r_remat",
           "W_tp", "W_fsdp", "W_dp", "W_ep", "W_pp")
RUN_VARYING = VARYING + ("n_cp", "n_v", "z_2", "q_sel", "W_cp", "a_tp", "a_cp", "a_ep", "a_pp", "a_fsdp", "a_dp")
#: Rows of the space evaluated at once: about 60 MB above the process's start (the run's 30 columns and the compiled
#: forms' temporaries). Larger chunks cost more than they save: 2^18 rows took 215 MB more and longer (page faults).
CHUNK = 1 << 16


@dataclass(frozen=True)
class Options:
    """What the user fixed: the run, the numbers the search does not choose, and any pinned degree."""

    chips: int
    batch: int                      # global batch in tokens
    seq_len: int
    mfu: Fraction | None = None     # None: priced from achievable rates (parallel.run.*); else the book's way
    dtype: str = "bf16"             # the matmuls' dtype (its peak rate) and the activations'; plan.py takes a list
    weight_dtype: str | None = None  # weights as stored; see stored_dtype()
    grad_dtype: str | None = None   # the weights' dtype when None
    optimizer_bytes: Fraction = Fraction(8)
    schedule: str = "interleaved"   # pipeline schedule: a key of SCHEDULES
    tp_overlap: bool = False        # tensor-parallel collectives overlap compute (Megatron-LM: off by default)
    ep_overlap: bool = False        # expert AllToAlls overlap compute (DeepSeek-V3's DualPipe)
    dp_overlap: bool = True         # the gradient reduction overlaps the last backward pass (Megatron-LM before 2023: no)
    param_gather_overlap: bool = False  # ZeRO's weight AllGather overlaps the next forward (--overlap-param-gather)
    attention_kernel: str = "fused"  # "fused" (FlashAttention: causal, no scores in HBM) or "unfused"
    sequence_parallel: bool = True  # norms, dropouts and residual adds split over the TP ranks (Megatron-LM 2022 on)
    dropout: bool = False           # the model trains with dropout (GPT-2/3, Megatron-LM's GPT); LLaMA does not
    route_nodes: int | None = None  # experts of a token on at most this many nodes (DeepSeek-V3: 4); None: no limit
    backend: str = "numpy"          # "dask": the same compiled forms on dask arrays (the dask extra)
    pins: Mapping[str, object] = field(default_factory=dict)  # tp, pp, ep, fsdp, dp, micro_batch, checkpointing, zero1
    batch_asked: int | None = None  # the tokens asked for, when they were rounded to whole sequences
    conventions: Conventions = BOOK  # what the search counts by (plan.PLAN_AXES); the book's elsewhere

    @property
    def pricing(self) -> str:
        """"run" (achievable rates, the default) or "book" (the roofline divided by --mfu)."""
        return "book" if self.mfu is not None else "run"


@dataclass
class Result:
    """The ranked search: counts, the winners' settings and numbers as floats, and the time it took."""

    candidates: int
    feasible: int
    seconds: float
    table: dict[str, np.ndarray]          # the kept candidates (best first), every column
    families: dict[str, dict[str, float]]  # the best candidate of each mix of parallelism
    memory: Compiled
    step: Compiled
    placement: str


def _valid(g: dict[str, np.ndarray], chip: hardware.Chip, opts: Options, layers: int) -> np.ndarray:
    """The rows the hardware and the schedule allow, but for the policy rows' own rule (see :func:`_policies`)."""
    ok = np.ones(len(g["dp"]), bool)
    if opts.pins.get("dp") is not None:
        ok &= g["dp"] == opts.pins["dp"] * g["ep"]
    if chip.family == "tpu" and chip.pod_chips:
        ok &= g["fsdp"] * g["tp"] * g["cp"] * g["pp"] <= chip.pod_chips  # only data parallelism crosses pods
    # interleaving: v stages of whole layers per device, and micro-batches in multiples of the stages (Megatron-LM)
    n_mb = (opts.batch // opts.seq_len) // (g["dp"] * g["fsdp"] * g["mb"])
    ok &= (g["v"] == 1) | ((g["pp"] > 1) & interleavable(g["pp"], g["v"], layers) & (n_mb % g["pp"] == 0))
    return ok


def _gpu_links(chip: hardware.Chip) -> tuple[int, int, int]:
    node, nvlink, nic = chip.nvlink_domain or 1, chip.nvlink_bytes_per_s, chip.nic_bytes_per_s
    if nvlink is None or nic is None:
        raise BadValueError(f"{chip.key} has no NVLink or NIC bandwidth in the catalog; add nvlink_bytes_per_s "
                            "and nic_bytes_per_s with --hardware-file")
    return node, nvlink, nic


def placement(chip: hardware.Chip) -> str:
    """How the search puts a configuration's axes on the chip's networks, in words."""
    order = ", ".join(AXES)
    if chip.family == "gpu":
        node, nvlink, nic = _gpu_links(chip)
        return (f"axes placed innermost first ({order}); an axis that stays inside one {node}-GPU NVLink domain "
                f"together with the axes inside it gets NVLink ({nvlink / 1e9:g} GB/s per GPU), else the scale-out "
                f"NIC ({nic / 1e9:g} GB/s per GPU)")
    ici, side, dims = chip.bandwidth("ici"), max(chip.pod_shape or (16,)), chip.torus_dims or 2
    return (f"axes placed innermost first ({order}); each gets the ICI bandwidth ({ici / 1e9:g} GB/s per torus axis) "
            f"of the torus axes it spans (up to {side} chips each, {dims} in all); only data parallelism crosses "
            f"pods, over DCN ({chip.bandwidth('dcn') / 1e9:g} GB/s per chip)")


def _bandwidths(g: dict[str, np.ndarray], chip: hardware.Chip, rates=None) -> dict[str, np.ndarray]:
    """Per-chip bandwidth of the network each axis crosses (see :func:`placement`): the catalog's link figures,
    or with ``rates`` (:class:`~scalemath.search.rates.Rates`) what collectives achieve on them, and the fixed
    cost of one collective step (``a_*``) on each."""
    sizes = {"tp": g["tp"], "cp": g.get("cp", np.ones_like(g["tp"])), "ep": g["ep"], "pp": g["pp"],
             "fsdp": g["fsdp"], "dp": g["dp"] // g["ep"]}
    out, late = {}, {}
    if chip.family == "gpu":
        node, nvlink, nic = _gpu_links(chip)
        if rates is not None:
            nvlink, nic = rates.bandwidth["nvlink"], rates.bandwidth["nic"]
        inner = np.ones_like(g["tp"])
        for axis in AXES:
            inner = inner * sizes[axis]
            out[axis] = np.where(inner <= node, float(nvlink), float(nic))
            if rates is not None:
                late[axis] = np.where(inner <= node, float(rates.latency["nvlink"]), float(rates.latency["nic"]))
    else:
        ici, side, dims = chip.bandwidth("ici"), max(chip.pod_shape or (16,)), chip.torus_dims or 2
        dcn = chip.bandwidth("dcn")
        if rates is not None:
            ici, dcn = rates.bandwidth["ici"], rates.bandwidth["dcn"]
        left = np.full(g["tp"].shape, dims)
        for axis in AXES:
            size = sizes[axis]
            need = np.where(size > 1, np.ceil(np.log(np.maximum(size, 1)) / math.log(side) - 1e-9).clip(1), 0)
            spans = np.maximum(np.minimum(need, left), np.where(size > 1, 1, 0))
            left = np.maximum(left - spans, 0)
            out[axis] = np.maximum(spans, 1) * float(ici)
            if rates is not None:
                late[axis] = np.full(g["tp"].shape, float(rates.latency["ici"]))
        if chip.pod_chips:
            crosses = g["dp"] * g["fsdp"] * g["tp"] * sizes["cp"] * g["pp"] > chip.pod_chips
            out["dp"] = np.where(crosses, float(dcn), out["dp"])
            if rates is not None:
                late["dp"] = np.where(crosses, float(rates.latency["dcn"]), late["dp"])
    found = {"W_tp": out["tp"], "W_ep": out["ep"], "W_pp": out["pp"], "W_fsdp": out["fsdp"], "W_dp": out["dp"]}
    if rates is not None:
        found["W_cp"] = out["cp"]
        found.update({f"a_{axis}": late[axis] for axis in AXES})
    return found


def axis_bandwidths(chip: hardware.Chip, tp: int, pp: int, fsdp: int, dp: int, ep: int = 1) -> dict[str, int]:
    """The per-chip bandwidth (bytes/s) each axis of one configuration gets, placed as the search places it
    (:func:`placement`); ``dp`` counts every replica, the expert shards' included.

    >>> axis_bandwidths(hardware.get_chip("tpu-v5e"), tp=4, pp=1, fsdp=64, dp=1)["W_fsdp"]
    90000000000
    """
    g = {k: np.array([v]) for k, v in {"tp": tp, "cp": 1, "ep": ep, "pp": pp, "fsdp": fsdp, "dp": dp}.items()}
    return {k: int(round(float(v[0]))) for k, v in _bandwidths(g, chip).items()}


def stored_dtype(opts: Options) -> str:
    """The weights' dtype: --weight-dtype, else the compute dtype, except that 8- and 4-bit matmuls keep bf16
    weights (fp8 training casts a bf16 master copy for each matmul)."""
    if opts.weight_dtype:
        return opts.weight_dtype
    return opts.dtype if hardware.dtype_bytes(opts.dtype) >= 2 else "bf16"


def compiled(model: models.Model, chip: hardware.Chip, opts: Options, catalog=None, model_catalog=None):
    """The two closed forms, bound to the model, chip and fixed values, compiled over VARYING (the book's
    pricing) or RUN_VARYING (a run's, with the achievable rates of :func:`~scalemath.search.rates.rates`)."""
    weights = stored_dtype(opts)
    ctx = Context(chip=chip.key, dtype=opts.dtype, weight_dtype=weights, model=model.key, catalog=catalog,
                  model_catalog=model_catalog, conventions=opts.conventions.restricted(["hardware"]))
    bubble, gpipe, _ = SCHEDULES[opts.schedule]
    fixed = {"B": opts.batch, "b_g": hardware.dtype_bytes(opts.grad_dtype or weights),
             "b_opt": opts.optimizer_bytes, "k": model.k if model.is_moe else 1, "f_bubble": bubble}
    if opts.pricing == "book":
        memory = Compiled("parallel.config.memory_per_device", ctx, fixed,
                          ("n_dp", "n_fsdp", "n_tp", "n_pp", "n_ep", "n_zero", "n_mb", "n_ckpt", "r_remat"))
        varying = [v for v in VARYING if v not in ("n_zero", "n_ckpt")]
        step = Compiled("parallel.config.step_time", ctx, {**fixed, "MFU": opts.mfu}, varying,
                        steps=(None, r"T_{\mathrm{comms}}"))
        return memory, step
    from .rates import rates

    found = rates(chip, opts.dtype, opts.conventions["efficiency"])
    fixed.update(s_gpipe=gpipe, T=opts.seq_len, C_mm=found.matmul,
                 C_attn=found.attention if opts.attention_kernel == "fused" else found.matmul, o_tp=int(opts.tp_overlap),
                 o_ep=int(opts.ep_overlap), o_dp=int(opts.dp_overlap),
                 o_pg=int(opts.param_gather_overlap), u_attn=int(opts.attention_kernel == "unfused"),
                 s_sp=int(opts.sequence_parallel), d_drop=int(opts.dropout),
                 m_route=opts.route_nodes or fixed["k"])
    korthikanti = opts.conventions["activations"] == "korthikanti"
    ctx = Context(chip=chip.key, dtype=opts.dtype, weight_dtype=weights, model=model.key, catalog=catalog,
                  model_catalog=model_catalog, conventions=opts.conventions.restricted(["hardware", "activations"]))
    memory = Compiled("parallel.run.memory_per_device", ctx, fixed,
                      ("n_dp", "n_fsdp", "n_tp", "n_pp", "n_ep", "n_cp", "n_v", "n_zero", "n_mb", "r_remat", "z_2")
                      + (("q_sel",) if korthikanti else ("n_ckpt",)))
    varying = [v for v in RUN_VARYING if v not in ("n_ckpt", "q_sel")]
    step = Compiled("parallel.run.step_time", ctx, fixed, varying, steps=(None, r"T_{\mathrm{comms}}"))
    return memory, step


#: Limits that keep a search finite: sequences in the batch, and candidates in the space (measured at about 1.8
#: million a second on one core: 31.5 million, llama3-405b on 720,720 H100s, in 17 s of CPU).
MAX_SEQUENCES = 10**9
MAX_CANDIDATES = 30 * 10**6


def space(model: models.Model, chip: hardware.Chip, opts: Options, dtypes: int = 1) -> Space:
    """The space of configurations, counted before anything of its size is allocated; one clear error when
    ``dtypes`` spaces of its size would hold more than MAX_CANDIDATES, naming the pins that shrink it."""
    seqs, left = divmod(opts.batch, opts.seq_len)
    if left:
        raise BadValueError(f"--batch-tokens {opts.batch} is not a whole number of sequences of --seq-len "
                            f"{opts.seq_len}")
    if seqs > MAX_SEQUENCES:
        raise BadValueError(f"{seqs} sequences in one batch; at most {MAX_SEQUENCES} (raise --seq-len)")
    options = choices(model, chip, opts)
    found = Space(options, opts, model.L)
    if found.total * dtypes > MAX_CANDIDATES:
        pinned = {{"checkpointing": "ckpt", "zero1": "zero"}.get(k, k) for k in opts.pins}
        free = sorted(((len(v), PINS[k]) for k, v in options.items() if k not in pinned and len(v) > 1),
                      key=lambda c: -c[0])
        each = f" ({found.total:,} for each of {dtypes} dtypes)" if dtypes > 1 else ""
        pins = "".join(f"{flag} ({n:,} values), " for n, flag in free)
        raise BadValueError(f"the search space holds {found.total * dtypes:,} configurations{each}, more than the "
                            f"{MAX_CANDIDATES:,} searched at most; "
                            + (f"pin a degree to shrink it: {pins}or " if pins else "")
                            + "give a longer --seq-len (fewer sequences of the batch to divide)")
    return found


def chunks(model: models.Model, chip: hardware.Chip, opts: Options, forms=None, hbm: float | None = None):
    """The space, evaluated: one table of columns (degrees, ``memory``, ``step``, ``comms``, ...) per chunk.

    ``forms`` are the compiled closed forms (:func:`compiled`); each chunk holds at most CHUNK rows
    of the space before the hardware's rules drop some. With ``hbm``, the step time is priced only for
    the candidates whose memory fits (the others get inf), which is all the search needs."""
    found = space(model, chip, opts)
    memory, step = forms or compiled(model, chip, opts)
    if opts.pricing == "run":
        from .rates import rates as find

        rates = find(chip, opts.dtype)
    else:
        rates = None
    # The policy rows (checkpointing x ZeRO) vary fastest: a triple's columns, its validity, bandwidths and
    # micro-batch count are found once for all of its policy rows, then repeated (the same rows, in the same order).
    per = found.per_pair  # dask pays per block, so it gets one block of DASK_BLOCK rows per chunk
    triples, span = found.total // per, max(1, (DASK_BLOCK if opts.backend == "dask" else CHUNK) // per)
    for lo in range(0, triples, span):
        t = found.rows(np.arange(lo, min(triples, lo + span)) * per)
        keep = np.flatnonzero(_valid(t, chip, opts, model.L))  # positions, not a mask: a scattered mask is slow
        if len(keep) == 0:
            continue
        t = {k: v.take(keep) for k, v in t.items()}
        t.update(_bandwidths(t, chip, rates), n_mb=(opts.batch // opts.seq_len) // (t["dp"] * t["fsdp"] * t["mb"]))
        counts, policy = _policies(t["dp"], found.extra)
        g = {k: found.extra[k].take(policy) if k in found.extra else np.repeat(v, counts) for k, v in t.items()}
        yield _evaluate(g, opts, chip, memory, step, hbm, rates)


def _policies(dp: np.ndarray, extra: dict[str, np.ndarray]):
    """How many rows each triple has, and which policy row each row is (a triple's in order): every policy, but
    ZeRO over one replica (the same candidate as no ZeRO)."""
    ok = ~((dp == 1)[:, None] & (extra["zero"] >= 1)[None, :])
    return ok.sum(axis=1), np.nonzero(ok)[1]


def search(model: models.Model, chip: hardware.Chip, opts: Options, keep: int = 8, catalog=None,
           model_catalog=None) -> Result:
    """Every candidate, ranked by step time among those that fit in HBM; the best ``keep`` kept."""
    start = time.process_time()
    forms = compiled(model, chip, opts, catalog, model_catalog)
    hbm = float(chip.hbm_bytes)
    best: dict[str, np.ndarray] | None = None
    families: dict[str, dict[str, float]] = {}
    candidates = feasible = 0
    for table in chunks(model, chip, opts, forms, hbm):
        candidates += len(table["tp"])
        fits = table["memory"] <= hbm
        feasible += int(fits.sum())
        best_per_family(table, fits, families)
        rows = near(table, fits, keep)  # not every column of every row that fits: only those that can be kept
        best = merge(best, {k: v[rows] for k, v in table.items()}, keep)
    if candidates == 0:
        raise BadValueError("no configuration of these degrees exists for this run; unpin a degree or change "
                            "--chips, --batch-tokens or --seq-len")
    return Result(candidates, feasible, time.process_time() - start, best or {}, families, *forms, placement(chip))


def _evaluate(g, opts: Options, chip, memory: Compiled, step: Compiled,
              hbm: float | None = None, rates=None) -> dict[str, np.ndarray]:
    """Every column of the chunk; with ``hbm``, the step is priced only where the memory fits (inf elsewhere)."""
    ckpt = np.array([c for c, _, _ in POLICIES.values()])[g["ckpt"]]
    remat = np.array([r for _, r, _ in POLICIES.values()])[g["ckpt"]]
    n_mb = g["n_mb"]
    bandwidths = {k: v for k, v in g.items() if k.startswith(("W_", "a_"))}  # found per triple in chunks()
    values = {"n_dp": g["dp"], "n_fsdp": g["fsdp"], "n_tp": g["tp"], "n_pp": g["pp"], "n_ep": g["ep"],
              "n_zero": np.where(g["zero"] >= 1, g["dp"], 1), "n_mb": n_mb, "n_ckpt": ckpt, "r_remat": remat,
              **bandwidths}
    if rates is not None:
        values.update(n_cp=g["cp"], n_v=g["v"], z_2=(g["zero"] == 2).astype(np.int64),
                      q_sel=(g["ckpt"] == list(POLICIES).index("big-matmuls")).astype(np.int64))
    values = {k: v.astype(np.float64, copy=False) for k, v in values.items()}  # once, not in every operation
    out = {k: v for k, v in g.items() if k != "n_mb" and k not in bandwidths}
    bytes_ = _run(memory, values, opts.backend)
    seconds, comms = np.full(len(bytes_), np.inf), np.full(len(bytes_), np.inf)
    if hbm is None:
        seconds[:], comms[:] = _run(step, values, opts.backend)
    else:
        fits = np.flatnonzero(bytes_ <= hbm)
        seconds[fits], comms[fits] = _run(step, {k: values[k].take(fits) for k in step.varying}, opts.backend)
    out.update(n_mb=n_mb, memory=bytes_, step=seconds, comms=comms, **bandwidths)
    out["chips"] = g["dp"] * g["fsdp"] * g["tp"] * g["cp"] * g["pp"]
    return out


#: Elements per dask block when the search runs on dask arrays.
DASK_BLOCK = 1 << 18


def _run(form: Compiled, values: dict[str, np.ndarray], backend: str):
    """``form`` over the columns: NumPy at once, or dask arrays computed by dask's scheduler (a local
    thread pool, or a cluster when a ``dask.distributed`` client is active)."""
    if backend == "numpy":
        return form(**values)
    try:
        import dask
        import dask.array as da
    except ImportError:
        raise BadValueError("--backend dask needs dask: pip install 'scalemath[dask]'") from None
    lazy = form(**{k: da.from_array(v, chunks=DASK_BLOCK) for k, v in values.items()})
    return dask.compute(*lazy) if isinstance(lazy, tuple) else dask.compute(lazy)[0]
