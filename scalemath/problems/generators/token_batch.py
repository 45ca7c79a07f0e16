"""Token batch: sequences times tokens, split over data-parallel devices (roofline.md)."""

from __future__ import annotations

from fractions import Fraction

from ..draws import ask, pick
from ..registry import Generator, register, reject_if

SEQUENCES = (8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
DEVICES = (8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)


def draw(rng):
    s, t, n = pick(rng, SEQUENCES), pick(rng, SEQ_LENS), pick(rng, DEVICES)
    reject_if((s * t) % n != 0 or s * t < n,
              "the local batch must be a whole number of tokens, at least 1")
    return {"n_seq": s, "T": t, "n_dev": n}


def solve(p):
    given = {"n_seq": p["n_seq"], "T": p["T"], "n_dev": p["n_dev"]}
    return [
        ask("total_tokens", "total batch", "batch.total_tokens",
            given={"n_seq": p["n_seq"], "T": p["T"]}),
        ask("local_tokens", "per-device batch", "batch.local_tokens", given=given),
    ]


def check(p):
    total = p["n_seq"] * p["T"]
    return {"total_tokens": total, "local_tokens": Fraction(total, p["n_dev"])}


register(Generator("token_batch", "roofline", "Total and per-device token batch",
                   "roofline.md, 'Matrix multiplication'", draw, solve, check))
