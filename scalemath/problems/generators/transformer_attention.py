"""Dot-product attention as a roofline: its arithmetic intensity in prefill and while decoding, the
sequence length from which prefill is compute-bound on a chip, and the FLOPs recomputed when only the
big matmul outputs are saved (transformers.md, 'A Few Problems to Work' Q4 and Q6).

Engine route: ``transformer.attention_intensity_prefill``, ``attention_intensity_decode``,
``attention_prefill_critical_T`` and ``remat_extra_flops``. Second route: plain fractions, the FLOPs of
the two contractions per query head and the bytes of Q, K, V and O written out array by array
(a flash kernel reads and writes each once); the intensity of self-attention is linear in T.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ...catalog.models import get_model
from ..draws import pick, pick_chip, whole, whole_check
from ..registry import Generator, register, reject_if
from .transformer_params import DENSE, ELEMENT_BYTES, engine, model_params

SOURCE = "transformers.md, 'A Few Problems to Work' (Q4, Q6)"
MODELS = DENSE + ("mixtral-8x7b",)
PREFILL = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
CONTEXTS = (2048, 4096, 8192, 32768, 131072)
SEQUENCES = (16, 64, 256)


def draw(rng):
    key = pick(rng, MODELS)
    m = model_params(key)
    chip = pick_chip(rng, dtypes=["bf16"])
    T, S = pick(rng, PREFILL), pick(rng, CONTEXTS)
    limit = get_model(key).max_context
    reject_if(limit is not None and max(T, S) > limit, "the sequences must fit the model's maximum context length")
    reject_if("window" in m and max(T, S) > m["window"],
              "with a sliding window every sequence must fit the window, so that every layer attends to all of it")
    p = {"model": m["model"], "N": m["N"], "K": m["K"], "H": m["H"], "chip": chip.key, "T": T, "S": S,
         "n_seq": pick(rng, SEQUENCES)}
    p["B"] = p["n_seq"] * T
    second = check(p)
    reject_if(abs(Fraction(T) / second["critical_T"] - 1) < Fraction(3, 20),
              "the prefill length must not sit within 15 percent of the critical length")
    p["prefill_bound"] = int(T >= second["critical_T"])
    return p


def solve(p):
    chip = get_chip(p["chip"])
    values = {"N": p["N"], "K": p["K"], "H": p["H"], "b_x": 2, "C": chip.flops_per_s["bf16"],
              "W": chip.hbm_bytes_per_s}
    return [
        engine("ai_prefill", "arithmetic intensity of self-attention over T tokens",
               "transformer.attention_intensity_prefill", values | {"T": p["T"]}),
        engine("ai_decode", "arithmetic intensity of one decoding step against S cached tokens",
               "transformer.attention_intensity_decode", values | {"S": p["S"]}),
        whole(engine("critical_T", "shortest whole sequence for which self-attention is compute-bound",
                     "transformer.attention_prefill_critical_T", values), "up"),
        engine("remat_flops", "FLOPs of attention recomputed per layer in the backward pass",
               "transformer.remat_extra_flops", values | {"T": p["T"], "B": p["B"]}),
    ]


def _intensity(p, queries: int, keys: int) -> Fraction:
    """Forward FLOPs over HBM bytes of attention for one sequence of ``queries`` against ``keys`` positions."""
    N, K, H = p["N"], p["K"], p["H"]
    b = ELEMENT_BYTES["bf16"]
    flops = N * (2 * queries * keys * H) + N * (2 * queries * keys * H)   # QK^T and the mix with V, per head
    nbytes = b * (queries * N * H + queries * N * H + keys * K * H + keys * K * H)   # Q, O, K, V
    return Fraction(flops, nbytes)


def check(p):
    chip = get_chip(p["chip"])
    balance = Fraction(chip.flops_per_s["bf16"], chip.hbm_bytes_per_s)
    T = p["T"]
    tokens = p["B"]
    return {"ai_prefill": _intensity(p, T, T), "ai_decode": _intensity(p, 1, p["S"]),
            # with S = T the intensity is T times AI(1)
            **whole_check("critical_T", balance / _intensity(p, 1, 1), "up"),
            "remat_flops": tokens * p["N"] * (2 * T * p["H"] + 2 * T * p["H"])}


register(Generator("transformer_attention", "transformer", "Arithmetic intensity of attention, prefill and decode",
                   SOURCE, draw, solve, check))
