"""Read a decode step's time and a chip's throughput off the latency-throughput plot of applied-inference.md
('Visualizing the Latency Throughput Tradeoff'): step time and throughput per chip against batch, one curve per
context length, each ending at the largest batch whose caches fit.

The figure is the first two panels of scalemath.plots.decode.data (the engine's inference.decode.step_time and
throughput_per_chip at batches 1, 2, 4, ... and inference.memory.max_batch) without the critical batch's mark.
The key: the step time and the throughput read from the same exact data, and the batch at which a context's
step takes twice the batch-1 step solved exactly from the engine's step_time expression (a Max of two lines,
solved on each and kept where that line is the larger). The second route is plain arithmetic on raw catalog
fields: the parameters counted by listing every weight tensor, one token's cache tensors, the chip's HBM bytes
and bandwidth and its bf16 peak.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import pick
from ..figures import FIGURE_KINDS, Spec, build, register_figure
from ..model import Answer
from ..registry import Generator, register, reject_if
from .inference_common import BYTES, chips_for, context_ok, model_fields, next_pow2, second_kv_token, second_params

NAME = "figure_decode_read"
READ_TOL = Fraction(1, 10)
MODELS = ("llama3-8b", "llama2-13b", "gemma-27b", "llama3-70b", "llama2-70b", "llama2-7b")
CHIPS = ("tpu-v5e", "tpu-v5p", "tpu-v6e", "h100", "a100", "b200")
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)


def _second(p) -> dict:
    chip = get_chip(p["chip"])
    W, C, H = Fraction(chip.hbm_bytes_per_s), Fraction(chip.flops_per_s["bf16"]), Fraction(chip.hbm_bytes)
    P, kv = Fraction(second_params(p["model"])), second_kv_token(p["model"], p["weight_dtype"])
    n, bw = p["n_dev"], BYTES[p["weight_dtype"]]
    largest = {S: (n * H - bw * P) // (S * kv) for S in p["contexts"]}
    return {"W": W, "C": C, "P": P, "kv": kv, "n": n, "bw": bw, "largest": largest}


def _step(r: dict, S: int, B) -> Fraction:
    n, W = r["n"], r["W"]
    return B * S * r["kv"] / (n * W) + max(2 * B * r["P"] / (n * r["C"]), r["bw"] * r["P"] / (n * W))


def _doubling(r: dict, S: int) -> Fraction:
    """The batch at which the step takes twice its batch-1 time: on the weights' line if the FLOPs are
    still below it there, else on the FLOPs' line."""
    n, W, target = r["n"], r["W"], 2 * _step(r, S, 1)
    t_w = r["bw"] * r["P"] / (n * W)
    on_weights = (target - t_w) * n * W / (S * r["kv"])
    if 2 * on_weights * r["P"] / (n * r["C"]) <= t_w:
        return on_weights
    return target / (S * r["kv"] / (n * W) + 2 * r["P"] / (n * r["C"]))


def draw(rng):
    key, chip = pick(rng, MODELS), pick(rng, CHIPS)
    wd = pick(rng, ("bf16", "int8"))
    reject_if(wd not in get_chip(chip).flops_per_s, f"{chip} has no {wd} rate")
    fits = [S for S in CONTEXTS if context_ok(key, S)]  # drawn among the model's own contexts: drawing among all
    reject_if(len(fits) < 3, "three contexts within the model's")  # and rejecting left 1 draw in 30 valid
    k = rng.randint(0, len(fits) - 3)
    contexts = tuple(fits[k + i] for i in sorted(rng.sample(range(len(fits) - k), 3)))
    n = next_pow2(chips_for(key, chip, wd)) * pick(rng, (1, 2, 4))
    p = dict(model_fields(key)) | {"chip": chip, "weight_dtype": wd, "n_dev": n, "contexts": contexts}
    r = _second(p)
    reject_if(not all(16 <= r["largest"][S] <= 8192 for S in contexts), "every curve spans 1 to 16 .. 8192")
    S_step, S_double, S_rate = (pick(rng, contexts) for _ in range(3))
    top = int(r["largest"][S_step]).bit_length() - 1
    double = _doubling(r, S_double)
    reject_if(not 4 <= double <= r["largest"][S_double] / 2, "the doubling inside its curve, off its ends")
    return p | {"S_step": S_step, "B_step": 2 ** rng.randint(2, top), "S_double": S_double, "S_rate": S_rate,
                "B_rate": 2 ** rng.randint(0, int(r["largest"][S_rate]).bit_length() - 1)}


def _kind(model: str, chip: str, weight_dtype: str, n: int, contexts: tuple[int, ...]):
    """Step time and throughput per chip against batch per context, no critical-batch mark."""
    from ... import quantities as Q
    from ...plots import decode

    ctx = Q.Context(chip=chip, dtype="bf16", weight_dtype=weight_dtype, kv_dtype=weight_dtype, model=model)
    fig = decode.data(ctx, n, list(contexts))
    panels = (dataclasses.replace(fig.panels[0], marks=()), fig.panels[1])
    title = f"{ctx.get_model().name} on {n} x {get_chip(chip).name} (read the values off the axes)"
    return dataclasses.replace(fig, title=title, panels=panels,
                               note="each curve ends at the largest batch whose KV caches fit; the dotted grid "
                                    "marks 2, 3, ... 9 of each decade")


FIGURE_KINDS.setdefault("decode", _kind)


def figure(p) -> Spec:
    return Spec("decode", (p["model"], p["chip"], p["weight_dtype"], p["n_dev"], tuple(p["contexts"])),
                alt="A decode step's time and the throughput per chip against batch for three contexts, log axes")


def _doubling_engine(p) -> object:
    """Solve inference.decode.step_time(B) = 2 step_time(1) on each line of its Max; keep the root where that
    line is the larger."""
    import sympy as sp

    from ... import quantities as Q

    ctx = Q.Context(chip=p["chip"], dtype="bf16", weight_dtype=p["weight_dtype"], kv_dtype=p["weight_dtype"],
                    model=p["model"])
    q, B = Q.get("inference.decode.step_time"), sp.Symbol("B", positive=True)
    given = {"n_dev": p["n_dev"], "S": p["S_double"]}
    once = Q.evaluate(q, ctx, given | {"B": 1}).value
    expr = Q.evaluate(q, ctx, given).value
    expr = expr.subs({s: B for s in expr.free_symbols})  # B is the one symbol left
    (big,) = expr.atoms(sp.Max)
    for line in big.args:
        for root in sp.solve(sp.Eq(expr.subs(big, line), 2 * once), B):
            at = [arg.subs(B, root) for arg in big.args]
            if line.subs(B, root) == max(at):
                return root
    raise AssertionError("no doubling batch")  # pragma: no cover - draw keeps it inside the curve


def solve(p):
    sweeps = build(figure(p)).meta["sweeps"]
    step = sweeps[p["S_step"]]
    rate = sweeps[p["S_rate"]]
    return [Answer("step", "the step time at the asked batch and context", step["step_time"][
                step["batch"].index(p["B_step"])], "s", rel_tol=READ_TOL),
            Answer("doubling", "the batch at which the step takes twice as long as at batch 1", _doubling_engine(p),
                   "1", rel_tol=READ_TOL),
            Answer("throughput", "the throughput per chip at the asked batch and context",
                   rate["throughput_per_chip"][rate["batch"].index(p["B_rate"])], "token/s", rel_tol=READ_TOL)]


def check(p):
    r = _second(p)
    B = p["B_rate"]
    return {"step": _step(r, p["S_step"], p["B_step"]), "doubling": _doubling(r, p["S_double"]),
            "throughput": B / (r["n"] * _step(r, p["S_rate"], B))}


register_figure(NAME, figure)
register(Generator(NAME, "inference", "Reading step time and throughput per chip off the decode plot",
                   "applied-inference.md, 'Visualizing the Latency Throughput Tradeoff'", draw, solve, check))
