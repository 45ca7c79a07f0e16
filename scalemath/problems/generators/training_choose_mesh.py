"""Choose how to split a training run over N chips: of four (DP, FSDP, TP, PP) meshes, the one whose memory per
chip fits in HBM and whose step is fastest, as ``scalemath plan`` ranks them (training.md, 'Combining FSDP and
Tensor Parallelism' and 'Pipelining'; applied-training.md, 'How to shard LLaMA 3-70B for training').

Only the four listed meshes are priced, never the whole search. Every mesh uses block rematerialisation
(each layer's input saved, the forward pass redone in the backward pass), no ZeRO-1, bf16 weights,
gradients and activations and 8 bytes of optimizer state per parameter, and the 1F1B pipeline schedule.

Engine route: ``parallel.config.memory_per_device`` and ``parallel.config.step_time`` (the closed forms the
plan search compiles) evaluated exactly for each mesh, with each axis's bandwidth from the search's own
placement of the axes on the torus (:func:`scalemath.search.train_space.axis_bandwidths`). The key: the fastest step
among the meshes that fit, as ``plan`` ranks them.

Second route: the memory per chip and the step's compute and communication counted from the book's terms in
plain Fractions: parameters counted tensor by tensor, the axes placed on the torus by integer arithmetic
(innermost first, each taking the torus axes it needs), the raw catalog rates.
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction

import sympy as sp

from ... import quantities
from ...catalog.hardware import get_chip
from ...catalog.models import get_model
from ...search.train_space import axis_bandwidths
from ...symbolic.derivation import Derivation, Evaluated, EvaluatedStep, Step
from ..draws import choice, pick
from ..model import Answer
from ..registry import Generator, register, reject_if
from .inference_common import second_params

SOURCE = ("training.md, 'Combining FSDP and Tensor Parallelism' and 'Pipelining'; applied-training.md, "
          "'How to shard LLaMA 3-70B for training'")
CHIPS = ("tpu-v5p", "tpu-v4p", "tpu-v5e", "tpu-v6e")
MODELS = ("llama3-8b", "llama2-13b", "gemma-27b", "llama3-70b", "llama2-70b")
SLICE_CHIPS = (64, 128, 256)
SEQ_LENS = (2048, 4096)
MFU = Fraction(1, 2)
OPT_BYTES = 8       # Adam's two fp32 moments per parameter
WORKING = 20        # [tokens, D] intermediates of the layer being recomputed
LETTERS = "abcd"


def _pool(n: int, heads: int, layers: int) -> list[tuple[int, int, int, int, int]]:
    """(DP, FSDP, TP, PP, micro-batches) meshes of n chips: pure DP, pure FSDP, FSDP or DP with TP, and with PP."""
    out = [(n, 1, 1, 1, 1), (1, n, 1, 1, 1)]
    for tp in (2, 4, 8, 16):
        if heads % tp == 0 and n % tp == 0:
            out += [(1, n // tp, tp, 1, 1), (n // tp, 1, tp, 1, 1)]
    for pp in (4, 8):
        if pp <= layers and n % pp == 0:
            out.append((n // pp, 1, 1, pp, 2 * pp))
            if n % (pp * 4) == 0 and heads % 4 == 0:
                out.append((1, n // (4 * pp), 4, pp, 2 * pp))
    return out


def _name(mesh) -> str:
    dp, fsdp, tp, pp, mb = mesh
    return f"DP {dp} × FSDP {fsdp} × TP {tp} × PP {pp}, {mb} micro-batch{'es' if mb > 1 else ''}"


def _meshes(p) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in p[f"mesh_{x}"].split(",")) for x in LETTERS]


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    key = pick(rng, MODELS)
    model = get_model(key)
    n = pick(rng, SLICE_CHIPS)
    reject_if(n > chip.pod_chips, "the slice fits in one pod")
    seq = pick(rng, SEQ_LENS)
    seqs = 2 ** rng.randint(8, 11)
    pool = [m for m in _pool(n, model.N, model.L) if seqs % (m[0] * m[1] * m[4]) == 0]
    reject_if(len(pool) < 4, "at least four meshes split the batch evenly")
    meshes = rng.sample(pool, 4)
    p = {"chip": chip.key, "model": key, "model_name": model.name, "n": n, "seq_len": seq, "seqs": seqs,
         "B": seqs * seq, "L": model.L, "D": model.D, "hbm": chip.hbm_bytes, "w_ici": chip.bandwidth("ici"),
         "side": max(chip.pod_shape), "torus_dims": chip.torus_dims,
         "mfu": str(MFU)}
    for x, m in zip(LETTERS, meshes):
        p[f"mesh_{x}"] = ",".join(map(str, m))
        p[f"name_{x}"] = _name(m)
    # the draw is screened with the quick hand count (the engine, slower, must then agree with it)
    rows = [_by_hand(p, m) for m in meshes]
    fits = [i for i, (mem, _) in enumerate(rows) if mem <= chip.hbm_bytes]
    reject_if(not fits, "at least one mesh fits")
    reject_if(len(fits) == 4, "at least one mesh does not fit")
    times = sorted(rows[i][1] for i in fits)
    reject_if(len(times) > 1 and times[1] < times[0] * Fraction(101, 100),
              "the fastest mesh that fits wins by at least 1 percent")
    return p


def _given(p, mesh) -> dict:
    dp, fsdp, tp, pp, mb = mesh
    bandwidths = axis_bandwidths(get_chip(p["chip"]), tp=tp, pp=pp, fsdp=fsdp, dp=dp)
    return {"B": p["B"], "MFU": MFU, "b_g": 2, "b_opt": OPT_BYTES, "k": 1, "f_bubble": 1, "n_dp": dp,
            "n_fsdp": fsdp, "n_tp": tp, "n_pp": pp, "n_ep": 1, "n_mb": mb, "n_zero": 1, "n_ckpt": 1, "r_remat": 1,
            **bandwidths}


def _ev(name: str, p, given: dict):
    q = quantities.get(name)
    ctx = quantities.Context(chip=p["chip"], dtype="bf16", weight_dtype="bf16", model=p["model"])
    names = {prm.name for prm in q.params}
    return quantities.evaluate(q, ctx, {k: v for k, v in given.items() if k in names})


#: Values every mesh here shares (a dense model, block rematerialisation, no ZeRO-1, 1F1B): substituted into the
#: shown steps so they read as the book writes them; the steps that vanish (expert AllToAlls) are left out.
SHARED = ("P_exp", "L_moe", "n_ep", "k", "n_zero", "n_ckpt", "r_remat", "f_bubble", "W_ep")


def _compact(ev: Evaluated) -> Evaluated:
    """``ev`` with the shared values substituted. The maxima and sums of earlier steps (the memory total, the
    step time) are shown over the names of those steps, which the key writes for every part an earlier step
    worked out (:func:`scalemath.problems.typeset._named_steps`), not as their forms written out again."""
    fixed = tuple(sorted(((s, sp.sympify(v)) for s, v in ev.given.items() if s.name in SHARED),
                         key=lambda kv: kv[0].name))
    rest = {s: v for s, v in ev.given.items() if s.name not in SHARED}
    steps = []
    for st in ev.derivation.steps:
        expr = _substituted(st.expr, fixed)
        if expr != 0:
            steps.append(Step(st.label, expr, st.why, st.unit))
    out = Derivation(ev.derivation.title, tuple(steps), ev.derivation.source).at(rest)
    if out.value != ev.value:
        raise ValueError(f"{ev.derivation.title}: the compact steps give {out.value}, not {ev.value}")
    return out


@functools.lru_cache(maxsize=1024)
def _substituted(expr, fixed: tuple):
    """``expr`` with the shared values ``fixed`` ((symbol, value) pairs) put in, remembered: SymPy evaluates every
    maximum it rebuilds again (about a second of CPU a mesh), and the forms and the shared values are the same from
    one draw to the next (a class set of 16 variants made them 16 times)."""
    return expr.xreplace(dict(fixed))


def _engine(p):
    """Each mesh's (memory, step) evaluated exactly: once per problem (its draw ranks them, its solve shows them)."""
    return _engine_cached(tuple(sorted(p.items())))


@functools.lru_cache(maxsize=256)
def _engine_cached(items):
    p = dict(items)
    out = []
    for mesh in _meshes(p):
        given = _given(p, mesh)
        out.append((_compact(_ev("parallel.config.memory_per_device", p, given)),
                    _compact(_ev("parallel.config.step_time", p, given))))
    return out


def solve(p):
    rows = _engine(p)
    hbm = p["hbm"]
    steps = []
    for i, (mem, step) in enumerate(rows):
        x = LETTERS[i]
        fits = mem.value <= hbm
        steps.append(EvaluatedStep(Step(rf"M^{{({x})}}", mem.value, f"mesh {x}: " + (
            "fits in HBM" if fits else "more than the HBM"), "byte"), mem.value))
        if fits:
            steps.append(EvaluatedStep(Step(rf"T_{{\mathrm{{step}}}}^{{({x})}}", step.value, f"mesh {x}", "s"),
                                       step.value))
    best = min((i for i, (mem, _) in enumerate(rows) if mem.value <= hbm), key=lambda i: rows[i][1].value)
    table = Derivation("every mesh: memory per chip and, where it fits, step time", tuple(s.step for s in steps),
                       SOURCE)
    labels = [p[f"name_{x}"] for x in LETTERS]
    pick_one = dataclasses.replace(choice("mesh", "the mesh that fits and has the fastest step", labels, best),
                                   evaluated=Evaluated(table, {}, tuple(steps)))
    mem, step = rows[best]
    return [pick_one,
            Answer("memory", "memory per chip of the chosen mesh", mem.value, "byte", mem),
            Answer("t_step", "step time of the chosen mesh", step.value, "s", step)]


# -- second route: the book's terms in plain Fractions ------------------------------------------------------

def _placed(chip, mesh) -> dict[str, Fraction]:
    """Per-chip bandwidth of each axis: innermost first (TP, PP, FSDP, DP), each taking the torus axes its size
    needs (the fewest k with side^k >= size) while any are left, at the ICI bandwidth of each axis it takes."""
    dp, fsdp, tp, pp, _ = mesh
    side, left = max(chip.pod_shape), chip.torus_dims
    axis = 2 * Fraction(chip.ici_link_bytes_per_s)
    out = {}
    for name, size in (("tp", tp), ("pp", pp), ("fsdp", fsdp), ("dp", dp)):
        need = 0
        while size > 1 and side ** need < size:
            need += 1
        spans = max(min(need, left), 1 if size > 1 else 0)
        left = max(left - spans, 0)
        out[name] = max(spans, 1) * axis
    return out


def _by_hand(p, mesh) -> tuple[Fraction, Fraction]:
    chip = get_chip(p["chip"])
    dp, fsdp, tp, pp, mb = mesh
    P = Fraction(second_params(p["model"]))
    B, D, L = p["B"], p["D"], p["L"]
    w = _placed(chip, mesh)
    stage = -(-L // pp)                                   # the fullest stage's layers
    shard = P / (tp * pp * fsdp)                          # parameters each chip keeps
    micro = Fraction(B, dp * fsdp * mb)                   # tokens of one micro-batch on one data rank
    # bf16 weights and gradients, 8-byte optimizer state; one saved [tokens, D] input per layer for every
    # micro-batch in flight, plus the recomputed layer's working set, all split over TP
    memory = (2 + 2 + OPT_BYTES) * shard + 2 * D * micro / tp * (stage * min(pp, mb) + WORKING)
    t_math = 8 * P * B / (dp * fsdp * tp * pp * Fraction(chip.flops_per_s["bf16"]))  # 6P + 2P for the redo
    tokens = Fraction(B, dp * fsdp)
    t_tp = 12 * 2 * D * tokens * stage * Fraction(tp - 1, tp) / w["tp"]   # 8 AG/RS per layer, 4 more redone
    t_fsdp = mb * (3 * 2 + 2) * (P / (tp * pp)) * Fraction(fsdp - 1, fsdp) / w["fsdp"]  # 3 gathers + 1 RS
    t_pp = 2 * 2 * D * micro / tp * (mb + pp - 2) / w["pp"] if pp > 1 else Fraction(0)
    t_dp = 2 * 2 * P * Fraction(dp - 1, dp) / (tp * pp * fsdp * w["dp"])  # AllReduce of each gradient shard
    busy = max(t_math, t_tp, t_fsdp, t_pp)
    piped = busy * (mb + pp - 1) / mb                      # 1F1B: pp - 1 idle micro-batch slots
    last_backward = t_math * 6 / (8 * mb)
    exposed = max(t_dp, last_backward) - last_backward
    return memory, (piped + exposed) / MFU


def check(p):
    rows = [_by_hand(p, m) for m in _meshes(p)]
    best = min((i for i, (mem, _) in enumerate(rows) if mem <= p["hbm"]), key=lambda i: rows[i][1])
    return {"mesh": best, "memory": rows[best][0], "t_step": rows[best][1]}


register(Generator("training_choose_mesh", "training", "Choose a training mesh that fits and is fastest",
                   SOURCE, draw, solve, check))
