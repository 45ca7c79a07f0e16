"""How long a training run takes: FLOPs of the run, time per step and total days at a given MFU for a
model, a number of chips, a batch and a token budget (applied-training.md, 'Counting parameters and
FLOPs'; training.md, 'Some Problems to Work' Q3; gpus.md, 'Quiz 5'). LLaMA-3 70B on a full TPU v5p
pod at 40 percent MFU for 15T tokens, the book's example, is one of the draws.

Engine route: ``transformer.training_flops``, ``parallel.step_time`` and ``parallel.training_time``;
the days are the engine's seconds over 86,400. Second route: plain fractions, the run's FLOPs over the
chips' achieved rate, the step's FLOPs from the batch.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import pick, pick_chip
from ..model import Answer
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, NOMINAL, engine, model_params

SOURCE = ("applied-training.md, 'Counting parameters and FLOPs'; training.md, 'Some Problems to Work' (Q3); "
          "gpus.md, 'Quiz 5: LLM rooflines'")
DAY = 86400
MFUS = (30, 35, 40, 45, 50, 55, 60)
GPU_COUNTS = (1024, 2048, 4096, 8192, 16384)
TPU_SLICES = (1024, 2048, 4096)
SEQUENCES = (256, 512, 1024, 2048, 4096)
SEQ_LENS = (2048, 4096, 8192)
TOKENS = (10**12, 2 * 10**12, 15 * 10**12)


def draw(rng):
    key = pick(rng, DENSE)
    chip = pick_chip(rng, dtypes=["bf16"])
    if chip.family == "gpu":
        n = pick(rng, GPU_COUNTS)
    else:
        n = chip.pod_chips * pick(rng, (1, 1, 2, 4)) if rng.randrange(2) == 0 else pick(rng, TPU_SLICES)
        reject_if(n < chip.pod_chips and n > chip.pod_chips // 2, "a slice must fit in one pod")
    n_seq, seq_len = pick(rng, SEQUENCES), pick(rng, SEQ_LENS)
    p = {"model": model_params(key)["model"], "P": NOMINAL[key][0], "chip": chip.key, "gpu": int(chip.family == "gpu"),
         "n": n, "mfu": pick(rng, MFUS), "n_seq": n_seq, "seq_len": seq_len, "B": n_seq * seq_len,
         "tokens": pick(rng, TOKENS)}
    days = check(p)["days"]
    reject_if(days < 1, "the run should last at least a day")
    reject_if(days > 1000, "the run should finish within about three years")
    reject_if(Fraction(p["B"], n) < 64, "each chip needs a sensible share of the batch, at least 64 tokens")
    return p


def solve(p):
    chip = get_chip(p["chip"])
    values = {"P": p["P"], "tokens": p["tokens"], "B": p["B"], "n_dev": p["n"], "MFU": Fraction(p["mfu"], 100),
              "C": chip.flops_per_s["bf16"]}
    run = engine("seconds", "training time", "parallel.training_time", values)
    return [
        engine("flops", "FLOPs of the run", "transformer.training_flops", values),
        engine("step", "time of one training step", "parallel.step_time", values),
        run,
        Answer("days", "training time in days", run.value / DAY, "1", run.evaluated),
    ]


def check(p):
    achieved = p["n"] * get_chip(p["chip"]).flops_per_s["bf16"] * Fraction(p["mfu"], 100)
    per_token = 2 * p["P"] + 4 * p["P"]                      # forward and backward, per token
    run = per_token * p["tokens"]
    seconds = run / achieved
    return {"flops": run, "step": per_token * p["B"] / achieved, "seconds": seconds,
            "days": seconds / (24 * 60 * 60)}


register(Generator("training_time", "training", "How long does a training run take?",
                   SOURCE, draw, solve, check))
