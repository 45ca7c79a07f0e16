"""Choose a serving topology under a latency target: of four (slice, batch) options for decoding a dense model
with 1D tensor parallelism over the slice, the one whose weights and caches fit in HBM, whose step meets the
per-token latency target, and which gives the most tokens per second per chip (inference.md, 'Theoretical
estimates for LLM latency and throughput', 'Appendix C: Latency bound communications';
applied-inference.md, 'What's the LLaMA Serving Story?').

Engine route: what ``scalemath serve`` ranks with, evaluated exactly for each option:
``inference.memory.max_batch`` (fits), ``inference.decode.t_comms`` (the tensor-parallel collectives, hops
and ring axes from the slice's shape as ``serve`` lays them out) and ``inference.decode.step_time_comms``
(the step with the collectives on the critical path); throughput per chip is B/(n·T_step).

Second route: plain Fractions on raw catalog fields: the parameters counted tensor by tensor, one token's
cache tensors, HBM size and bandwidth, bf16 peak, one-way ICI link bandwidth and hop latency; the step
written out from the book's terms (KV loading, the larger of compute and weight loading, four collectives
per layer at the larger of their bandwidth and latency bounds).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import get_chip
from ...catalog.models import get_model
from ...search.serve import topologies
from ...symbolic.derivation import Derivation, Evaluated, EvaluatedStep, Step
from ..draws import binding, choice, frac, pick, whole_check, whole_from_engine
from ..model import Answer
from ..registry import Generator, register, reject_if
from .inference_common import DENSE, ask, context_ok, model_fields, second_chip, second_kv_token, second_params

SOURCE = ("inference.md, 'Theoretical estimates for LLM latency and throughput' and 'Appendix C: Latency bound "
          "communications'; applied-inference.md, 'What's the LLaMA Serving Story?'")
CHIPS = ("tpu-v5e", "tpu-v6e", "tpu-v5p", "tpu-v4p")
MODELS = tuple(m for m in DENSE if m != "gpt3-175b")
CONTEXTS = (2048, 4096, 8192)
LETTERS = "abcd"
MAX_CHIPS = 64


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(a) for a in text.split("x"))


def _layout(shape) -> dict:
    """1D tensor parallelism over the whole slice, as ``serve`` lays it out: hops = floor(a/2) summed over the
    axes, the collective spread over every axis longer than 1."""
    return {"hops": sum(a // 2 for a in shape), "M_Y": sum(1 for a in shape if a > 1)}


def _options(p) -> list[tuple[str, int]]:
    return [(p[f"slice_{x}"], p[f"B_{x}"]) for x in LETTERS]


def _engine(p, slice_text: str, batch: int):
    """(max batch, t_comms or None, step) answers for one option."""
    shape = _shape(slice_text)
    n = math.prod(shape)
    g = {"B": batch, "S": p["S"], "n_dev": n}
    max_batch = ask(p, "max_batch", "largest batch that fits", "inference.memory.max_batch", g)
    if n > 1:
        comms = ask(p, "t_comms", "collectives", "inference.decode.t_comms", g | _layout(shape))
        t_comms = comms.value
    else:
        comms, t_comms = None, sp.Integer(0)
    step = ask(p, "t_step", "decode step", "inference.decode.step_time_comms", g | {"t_comms": t_comms})
    return max_batch, comms, step


def _rank(items) -> list[int]:
    """Options that fit and meet the target, best throughput per chip first."""
    return sorted(range(len(items)), key=lambda i: -items[i][2])


def draw(rng):
    key = pick(rng, MODELS)
    S = pick(rng, CONTEXTS)
    reject_if(not context_ok(key, S), "the context must fit the model's maximum length and its window")
    chip = get_chip(pick(rng, CHIPS))
    p = dict(model_fields(key)) | {"chip": chip.key, "dtype": "bf16", "weight_dtype": "bf16", "kv_dtype": "bf16",
                                   "S": S, "hbm": chip.hbm_bytes, "link": chip.ici_link_bytes_per_s,
                                   "t_hop": str(chip.hop_latency_s)}
    weights = Fraction(2 * get_model(key).param_count(), chip.hbm_bytes)
    slices = [(name, n) for name, n in topologies(chip) if max(2, weights) < n <= MAX_CHIPS]  # the weights fit
    reject_if(len(slices) < 3, "too few slices that hold the weights")
    chosen = sorted(rng.sample(slices, 3), key=lambda s: s[1])
    chosen.append(pick(rng, chosen))           # one slice offered twice, with two batches
    for x, (name, n) in zip(LETTERS, chosen):
        p[f"slice_{x}"], p[f"n_{x}"] = name, n
        p[f"B_{x}"] = 2 ** rng.randint(2, 9)
    reject_if(len(set(_options(p))) < 4, "four different options")
    items = _items(p)
    reject_if(not any(fits for fits, _, _ in items), "at least one option fits")
    reject_if(all(fits for fits, _, _ in items), "at least one option does not fit")
    fitting = [i for i in _rank(items) if items[i][0]]
    thr = [items[i][2] for i in fitting]
    reject_if(len(set(thr)) < len(thr), "two options tie in throughput per chip")
    # the target binds: every fitting option with more throughput per chip is slower than the chosen one
    ok = binding([items[i][1] for i in fitting])
    reject_if(not ok, "no latency target can rule out a higher-throughput option")
    k = pick(rng, ok)
    target = _target(items[fitting[k]][1], min(items[fitting[j]][1] for j in range(k)))
    reject_if(target is None, "no round target separates the options")
    return p | {"target": str(target)}


def _target(at_least: Fraction, below: Fraction) -> Fraction | None:
    """A round latency target (two or three significant digits of milliseconds) in [at_least, below)."""
    for digits in (1, 2, 3):
        e = Fraction(10) ** (math.floor(math.log10(at_least)) - digits + 1)
        t = math.ceil(at_least / e) * e
        if t < below:
            return t
    return None


def _items(p) -> list[tuple[bool, Fraction, Fraction]]:
    out = []
    for name, batch in _options(p):
        max_batch, _, step = _engine(p, name, batch)
        n = math.prod(_shape(name))
        out.append((batch <= max_batch.value, frac(step.value), Fraction(batch) / (n * frac(step.value))))
    return out


def solve(p):
    target = Fraction(p["target"])
    rows, steps = [], []
    for i, (name, batch) in enumerate(_options(p)):
        max_batch, comms, step = _engine(p, name, batch)
        n = math.prod(_shape(name))
        fits = batch <= max_batch.value
        meets = step.value <= target
        thr = sp.Integer(batch) / (n * step.value)
        rows.append((fits, meets, thr, max_batch, comms, step))
        x = LETTERS[i]
        steps.append(EvaluatedStep(Step(rf"B_{{\max}}^{{({x})}}", max_batch.value,
                                        f"option {x}: {n} chips hold at most this many sequences; batch {batch} "
                                        + ("fits" if fits else "does not fit"), "sequence"), max_batch.value))
        if fits:
            steps.append(EvaluatedStep(Step(rf"T_{{\mathrm{{step}}}}^{{({x})}}", step.value,
                                            f"option {x}: " + ("meets the target" if meets else "misses the target"),
                                            "s"), step.value))
            steps.append(EvaluatedStep(Step(rf"\mathrm{{tput}}^{{({x})}}", thr,
                                            f"option {x}: B/(n T_step) tokens per second per chip", "token/s"), thr))
    ok = [i for i, r in enumerate(rows) if r[0] and r[1]]
    best = max(ok, key=lambda i: rows[i][2])
    table = Derivation("every option: fits, latency, throughput per chip", tuple(s.step for s in steps), SOURCE)
    labels = [f"{name} slice ({math.prod(_shape(name))} chips), batch {batch}" for name, batch in _options(p)]
    pick_one = dataclasses.replace(choice("option", "the option that fits, meets the target and gives the most "
                                          "tokens per second per chip", labels, best),
                                   evaluated=Evaluated(table, {}, tuple(steps)))
    _, _, thr, max_batch, comms, step = rows[best]
    out = [pick_one,
           dataclasses.replace(step, name="t_step",
                               description="decode step time (latency per token) of the chosen option"),
           Answer("throughput", "tokens per second per chip of the chosen option", thr, "token/s", step.evaluated)]
    if comms is not None:
        out.append(dataclasses.replace(comms, name="t_comms",
                                       description="collective time in each step of the chosen option"))
    held = dataclasses.replace(max_batch, name="max_batch", rel_tol=Fraction(0),
                               description="most sequences the slice of the chosen option holds")
    out.append(whole_from_engine(held, "down", unit="sequence"))
    return out


# -- second route: the book's terms in plain Fractions on raw catalog fields ------------------------------

def check(p):
    chip = get_chip(p["chip"])
    raw = second_chip(p["chip"], "bf16")
    params = Fraction(second_params(p["model"]))
    kv = second_kv_token(p["model"], "bf16")
    link, hop = Fraction(chip.ici_link_bytes_per_s), Fraction(chip.hop_latency_ns, 10**9)
    target = Fraction(p["target"])
    rows = []
    for name, batch in _options(p):
        shape = _shape(name)
        n = math.prod(shape)
        max_batch = (n * raw["H_chip"] - 2 * params) // (p["S"] * kv)
        axes = sum(1 for a in shape if a > 1)
        hops = sum(a // 2 for a in shape)
        # per layer: AllGather + ReduceScatter around attention and around the MLP of the [B, D] bf16 activations,
        # each over rings on `axes` axes (two links per axis, one each way)
        one = max(Fraction(hops) * hop, Fraction(2 * batch * p["D"]) / (axes * 2 * link)) if n > 1 else Fraction(0)
        t_comms = 4 * p["L"] * one
        t_math = 2 * batch * params / (n * raw["C"])
        t_weights = 2 * params / (n * raw["W"])
        t_kv = batch * p["S"] * kv / (n * raw["W"])
        step = t_kv + max(t_math, t_weights) + t_comms
        held = (n * raw["H_chip"] - 2 * params) / (p["S"] * kv)
        rows.append((batch <= max_batch, step <= target, Fraction(batch) / (n * step), step, t_comms, held))
    best = max((i for i, r in enumerate(rows) if r[0] and r[1]), key=lambda i: rows[i][2])
    out = {"option": best, "t_step": rows[best][3], "throughput": rows[best][2],
           **whole_check("max_batch", rows[best][5], "down")}
    if math.prod(_shape(_options(p)[best][0])) > 1:
        out["t_comms"] = rows[best][4]
    return out


register(Generator("inference_choose_topology", "inference", "Choose a serving topology under a latency target",
                   SOURCE, draw, solve, check))
