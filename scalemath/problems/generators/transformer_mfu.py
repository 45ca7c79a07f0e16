"""Model FLOPs utilisation of a training run from its tokens, parameters, chips and hours
(transformers.md, 'A Few Problems to Work' Q7, DeepSeek-V3's utilisation).

Engine route: ``transformer.training_flops`` (6 x parameters x tokens) and ``transformer.mfu``, whose
middle step is the FLOPs the chips could have done at peak. Second route: plain fractions, the
run's seconds counted from its hours, the peak read from the hardware catalog.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import pick, pick_chip
from ..model import Answer
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, NOMINAL, engine

SOURCE = "transformers.md, 'A Few Problems to Work' (Q7)"
MODELS = DENSE + ("mixtral-8x7b", "deepseek-v3")
NAMES = {"gpt3-175b": "GPT-3 175B", "llama2-7b": "LLaMA-2 7B", "llama2-13b": "LLaMA-2 13B",
         "llama2-70b": "LLaMA-2 70B", "llama3-8b": "LLaMA-3 8B", "llama3-70b": "LLaMA-3 70B",
         "llama3-405b": "LLaMA-3.1 405B", "gemma-27b": "Gemma 2 27B", "mixtral-8x7b": "Mixtral 8x7B",
         "deepseek-v3": "DeepSeek-V3"}
TOKENS = (300 * 10**9, 10**12, 2 * 10**12, 15 * 10**12)
GPU_COUNTS = (256, 512, 1024, 2048, 4096, 8192, 16384)
TPU_COUNTS = (256, 512, 1024, 2048, 4096)
TARGETS = (Fraction(1, 5), Fraction(1, 4), Fraction(3, 10), Fraction(7, 20), Fraction(2, 5), Fraction(9, 20),
           Fraction(1, 2), Fraction(11, 20))


def _two_figures(x: Fraction) -> int:
    """``x`` rounded to two significant figures, as a whole number."""
    n = round(x)
    digits = len(str(n))
    if digits <= 2:
        return n
    step = 10 ** (digits - 2)
    return round(Fraction(n, step)) * step


def draw(rng):
    key = pick(rng, MODELS)
    chip = pick_chip(rng, dtypes=["bf16"])
    dtype = "fp8" if "fp8" in chip.flops_per_s and rng.randrange(3) == 0 else "bf16"
    n = pick(rng, GPU_COUNTS if chip.family == "gpu" else TPU_COUNTS)
    reject_if(chip.pod_chips is not None and n > chip.pod_chips, "a TPU slice must fit in one pod")
    P, tokens = NOMINAL[key][1], pick(rng, TOKENS)
    seconds = Fraction(6 * P * tokens) / (n * chip.flops_per_s[dtype] * pick(rng, TARGETS))
    hours = _two_figures(seconds / 3600)
    reject_if(hours < 24, "the run should last at least a day")
    reject_if(hours > 24 * 365, "the run should finish within a year")
    p = {"model": NAMES[key], "moe": int(NOMINAL[key][0] != NOMINAL[key][1]), "P": P, "tokens": tokens,
         "chip": chip.key, "dtype": dtype, "n": n, "hours": hours}
    mfu = check(p)["mfu"]
    reject_if(not Fraction(3, 20) <= mfu <= Fraction(7, 10), "the utilisation should be a realistic 15 to 70 percent")
    return p


def solve(p):
    chip = get_chip(p["chip"])
    values = {"P": p["P"], "tokens": p["tokens"], "n_dev": p["n"], "t_run": p["hours"] * 3600,
              "C": chip.flops_per_s[p["dtype"]]}
    mfu = engine("mfu", "model FLOPs utilisation", "transformer.mfu", values)
    available = mfu.evaluated.steps[1]
    return [
        engine("used", "FLOPs of the run, 6 x parameters x tokens", "transformer.training_flops", values),
        Answer("available", "FLOPs the chips could have done at peak in that time", available.value,
               available.step.unit, mfu.evaluated),
        mfu,
    ]


def check(p):
    seconds = p["hours"] * 60 * 60
    peak = get_chip(p["chip"]).flops_per_s[p["dtype"]]
    used = 2 * p["P"] * p["tokens"] + 4 * p["P"] * p["tokens"]    # forward, then backward
    available = p["n"] * peak * seconds
    return {"used": used, "available": available, "mfu": Fraction(used, available)}


register(Generator("transformer_mfu", "transformer", "Model FLOPs utilisation of a training run",
                   SOURCE, draw, solve, check))
