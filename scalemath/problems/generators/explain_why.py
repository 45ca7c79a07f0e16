"""Explain why: a claim and its justification, each picked from choices (issue 29's "explain" kind). Five of the
book's "why" questions, each on a drawn chip, model or size:

- decode attention stays memory-bound at any batch (inference.md, 'What about attention?'): its intensity has no B;
- the tensor-parallel limit ignores precision (training.md, 'Tensor Parallelism': "int8 has alpha = 5100 but half
  the bytes"), unless the chip runs the narrow type no faster than bf16 (TPU v4p's int8, v5p's fp8);
- a bidirectional ring halves an AllGather (sharding.md, 'A Deeper Dive into TPU Communication Primitives');
- pipelining fights ZeRO-3 (gpus.md, 'Pipeline Parallelism': a weight AllGather per microbatch, only B/n_mb tokens
  to amortise it);
- generation avoids FSDP (inference.md, 'Sharding the generation step': moving weights over ICI is far slower
  than reading them from HBM).

Which claim is right is computed, not written down: the engine's numbers for the draw (``figure`` below, and the
quantities each scenario compares) pick the claim, and the right reason is the one bound to that claim; the other
claims and the usual wrong reasons are the distractors. Both lists are shuffled per draw.

Second route: each scenario's comparison in plain fractions from the catalog's raw figures and the model's
state-dict count, and the figure the same way.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ...symbolic.symbols import sym
from ..draws import choice, pick, pow2
from ..registry import Generator, register, reject_if
from .inference_common import DENSE, ask, model_fields, second_chip, second_params

SOURCE = ("inference.md, 'What about attention?' and 'Sharding the generation step'; training.md, 'Tensor "
          "Parallelism'; sharding.md, 'A Deeper Dive into TPU Communication Primitives'; gpus.md, 'Pipeline "
          "Parallelism'")
SCENARIOS = ("decode_attention", "tp_precision", "bidirectional_ring", "pipeline_zero3", "generation_fsdp")
TPUS = ("tpu-v4p", "tpu-v5e", "tpu-v5p", "tpu-v6e")
ANY_CHIP = TPUS + ("a100", "h100", "h200", "b200")
BYTES = {"bf16": 2, "int8": 1, "fp8": 1}


def draw(rng):
    scenario = pick(rng, SCENARIOS)
    p = {"scenario": scenario, "claim_order": rng.sample(range(3), 3), "reason_order": rng.sample(range(5), 5)}
    if scenario == "decode_attention":
        p |= model_fields(pick(rng, DENSE)) | {"chip": pick(rng, ANY_CHIP), "dtype": "bf16",
                                               "S": pow2(rng, 10, 15), "B": pow2(rng, 4, 9)}
    elif scenario == "tp_precision":
        chip = pick(rng, TPUS)
        low = [d for d in ("int8", "fp8") if d in get_chip(chip).flops_per_s]
        p |= {"chip": chip, "dtype": "bf16", "low": pick(rng, low), "F": pick(rng, (8192, 14336, 28672, 53248)),
              "M_Y": pick(rng, (1, 2))}
        # the bf16 derivation repeats the low dtype's first steps: FLOPs, and T_math too where the rates are equal
        p["same_steps"] = 2 if get_chip(chip).flops_per_s[p["low"]] == get_chip(chip).flops_per_s["bf16"] else 1
    elif scenario == "bidirectional_ring":
        p |= {"chip": pick(rng, TPUS), "N": pick(rng, (4, 8, 16)), "MiB": pow2(rng, 4, 12)}
    elif scenario == "pipeline_zero3":
        p |= {"chip": pick(rng, TPUS), "dtype": "bf16", "n_mb": pick(rng, (4, 8, 16, 32))}
        thr = check_threshold(p)
        p["tokens"] = int(thr * pick(rng, (Fraction(3, 2), 2, 3))) // 64 * 64
        reject_if(Fraction(p["tokens"], p["n_mb"]) >= thr, "one microbatch must fall below FSDP's threshold")
    else:
        p |= model_fields(pick(rng, DENSE)) | {"chip": pick(rng, TPUS), "dtype": "bf16", "weight_dtype": "bf16"}
        p["n"] = pick(rng, (8, 16, 32))
        reject_if(second_params(p["model"]) * 2 > p["n"] * get_chip(p["chip"]).hbm_bytes,
                  "the weights must fit the slice's HBM")
    return p


# -- the engine's numbers and the claims they pick -------------------------------------------------------------

def _numbers(p) -> tuple[list, int]:
    """The figure answers (the first is the problem's ``figure``) and the index of the true claim."""
    s = p["scenario"]
    if s == "decode_attention":
        att = ask(p, "figure", "decode attention's arithmetic intensity", "inference.attention.intensity_decode",
                  {"S": p["S"]})
        crit = ask(p, "critical", "the chip's critical intensity", "roofline.critical_intensity", use_model=False)
        mlp = ask(p, "mlp_batch", "the MLP's critical batch", "inference.decode.critical_batch")
        return [att, crit, mlp], 0 if att.value < crit.value else 2
    if s == "tp_precision":
        g = {"F": p["F"], "M_Y": p["M_Y"]}
        low = ask(p, "figure", f"the largest compute-bound TP degree in {p['low']}", "parallel.tp.max_degree", g,
                  dtype=p["low"], use_model=False)
        bf = ask(p, "bf16", "the largest compute-bound TP degree in bf16", "parallel.tp.max_degree", g,
                 use_model=False)
        r = low.value / bf.value
        return [low, bf], 0 if r == 1 else (1 if r > 1 else 2)
    if s == "bidirectional_ring":
        g = {"N": p["N"], "V": p["MiB"] * 2**20}
        bi = ask(p, "figure", "AllGather time on the bidirectional ring", "collective.all_gather.time", g,
                 use_model=False)
        uni = ask(p, "one_way", "AllGather time on a one-way ring", "collective.all_gather.time_unidirectional", g,
                  use_model=False)
        r = bi.value / uni.value
        return [bi, uni], 0 if r == Fraction(1, 2) else (1 if r == 1 else 2)
    if s == "pipeline_zero3":
        thr = ask(p, "figure", "tokens per chip FSDP needs to stay compute-bound",
                  "parallel.fsdp.min_batch_per_device", {"M_X": 1}, use_model=False)
        return [thr], 0 if Fraction(p["tokens"], p["n_mb"]) < thr.value else 1
    hbm = ask(p, "hbm", "time to read this chip's share of the weights from HBM", "inference.decode.t_weights",
              {"n_dev": p["n"]})
    ag = ask(p, "figure", "time to AllGather the weights over ICI", "collective.all_gather.time_approx",
             {"V": hbm.evaluated.given[sym("P")] * hbm.evaluated.given[sym("b_w")], "N": p["n"]},
             use_model=False)
    return [ag, hbm], 0 if ag.value > hbm.value else 1


def _texts(p) -> tuple[list[str], list[str]]:
    """Three claims (the i-th true when the engine says case i) and five reasons (the first three each bound to
    the claim of the same index, the last two wrong whatever the numbers)."""
    s = p["scenario"]
    if s == "decode_attention":
        return (["Memory-bound at every batch: its intensity stays below the chip's critical intensity",
                 "Memory-bound only below the MLPs' critical batch, then compute-bound",
                 "Compute-bound at every batch: its intensity stays above the chip's critical intensity"],
                ["each sequence reads its own KV cache, so the bytes grow with the batch as fast as the FLOPs",
                 "the KV cache is read once per step and shared by the whole batch, like the weights",
                 "each KV head serves N/K query heads, and that ratio beats the chip's ratio of FLOPs to bandwidth",
                 "the softmax runs on the vector unit, which has no matrix units",
                 "attention's FLOPs do not depend on the context length"])
    if s == "tp_precision":
        d = p["low"]
        return ([f"It stays in {d} where it is in bf16",
                 f"It grows in {d}",
                 f"It shrinks in {d}"],
                [f"{d} doubles the chip's FLOPs/s and halves the bytes each activation sends: C·b_x, and Y*, stay",
                 f"this chip runs {d} no faster than bf16, so only the halved bytes count: Y* doubles",
                 f"this chip runs {d} more than twice as fast as bf16, more than the halved bytes make up",
                 "the ICI links carry twice as many elements per second in a narrower type",
                 "the batch cancels out of the TP balance, and the batch does not depend on the dtype"])
    if s == "bidirectional_ring":
        return (["It takes half the one-way ring's time",
                 "It takes the same time as on a one-way ring",
                 "It takes a quarter of the one-way ring's time"],
                ["the shards travel both ways at once, so every link direction carries half the bytes over at most "
                 "N/2 hops",
                 "the bytes each device must receive are the same, and only bytes count",
                 "each shard reaches both neighbours at once, and each of them forwards it both ways",
                 "an AllGather over a bidirectional ring sends half as many bytes in total",
                 "each device only exchanges data with its two neighbours"])
    if s == "pipeline_zero3":
        return (["It turns communication-bound: a microbatch has fewer tokens per chip than FSDP needs to hide "
                 "each weight AllGather",
                 "It stays compute-bound: a microbatch still has more tokens per chip than FSDP needs",
                 "Nothing changes: ZeRO-3 gathers each layer's weights once per step whatever the microbatches"],
                ["ZeRO-3 frees a layer's gathered weights after use, so every microbatch through the stage gathers "
                 "them again, with only B/n_mb tokens to hide each gather",
                 "each microbatch still holds enough tokens to hide its gather of the weights",
                 "the pipeline keeps the gathered weights between microbatches at no memory cost",
                 "the pipeline's bubble leaves the stages idle while the gathers run",
                 "pipelining splits the weights a second time, so each gather moves half the bytes"])
    return (["FSDP would gather the weights every step over ICI, which takes longer than reading them from HBM",
             "FSDP would be free: gathering the weights over ICI hides under reading them from HBM",
             "FSDP would halve the step: each chip reads half as many weights"],
            ["a decode step has too few tokens to hide moving the weights, and ICI is far slower than HBM: move the "
             "small activations instead",
             "ICI is fast enough that the weights arrive before HBM would deliver them",
             "the model's weights would no longer fit, so the KV cache gets more room",
             "inference has no gradients to reduce, so FSDP has nothing to shard",
             "FSDP cannot shard the KV cache, which dominates decode"])


def solve(p):
    figs, true = _numbers(p)
    claims, reasons = _texts(p)
    co, ro = p["claim_order"], p["reason_order"]
    return figs + [choice("claim", "which claim is right?", [claims[i] for i in co], co.index(true)),
                   choice("reason", "which reason explains it?", [reasons[i] for i in ro], ro.index(true))]


# -- second route ------------------------------------------------------------------------------------------------

def check_threshold(p) -> Fraction:
    """FSDP's tokens per chip, C·b/(2·W_ici) with one mesh axis, from the catalog's raw figures."""
    chip = get_chip(p["chip"])
    return Fraction(chip.flops_per_s[p["dtype"]] * 2, 2 * chip.bandwidth("ici"))


def check(p):
    s = p["scenario"]
    out: dict = {}
    if s == "decode_attention":
        N, K, S, b = p["N"], p["K"], p["S"], 2
        att = Fraction(2 * N * S, b * (K * S + N))  # 2·N·S·H FLOPs over b·(K·S + N)·H bytes (the cache, Q and out)
        hw = second_chip(p["chip"], "bf16")
        crit = hw["C"] / hw["W"]
        out = {"figure": att, "critical": crit, "mlp_batch": crit}
        true = 0 if att < crit else 2
    elif s == "tp_precision":
        chip = get_chip(p["chip"])
        def y(d):
            return Fraction(2 * p["F"] * p["M_Y"] * chip.bandwidth("ici"), chip.flops_per_s[d] * BYTES[d])
        out = {"figure": y(p["low"]), "bf16": y("bf16")}
        r = y(p["low"]) / y("bf16")
        true = 0 if r == 1 else (1 if r > 1 else 2)
    elif s == "bidirectional_ring":
        n, V, link = p["N"], p["MiB"] * 2**20, Fraction(get_chip(p["chip"]).bandwidth("ici"))
        uni = Fraction(V * (n - 1), n) / (link / 2)  # one direction of the axis: half its two-way bandwidth
        bi = Fraction(V * (n - 1), n) / link
        out = {"figure": bi, "one_way": uni}
        true = 0
    elif s == "pipeline_zero3":
        thr = check_threshold(p)
        out = {"figure": thr}
        true = 0 if Fraction(p["tokens"], p["n_mb"]) < thr else 1
    else:
        P, chip = second_params(p["model"]), get_chip(p["chip"])
        hbm = Fraction(P * 2, p["n"] * chip.hbm_bytes_per_s)
        ag = Fraction(P * 2, chip.bandwidth("ici"))
        out = {"figure": ag, "hbm": hbm}
        true = 0 if ag > hbm else 1
    co, ro = p["claim_order"], p["reason_order"]
    return out | {"claim": co.index(true), "reason": ro.index(true)}


register(Generator("explain_why", "inference", "Explain why: pick the claim and its reason", SOURCE, draw, solve,
                   check))
