"""The cap of data parallelism over whole sequences (applied-training.md, 'How to shard LLaMA 3-70B for
training'): pure data parallelism or FSDP that splits only the batch's sequences gives each chip at least one
sequence, so it uses at most B/T chips; LLaMA 3-70B's 4M-token batch of 4096-token sequences stops it at 1024 of
a v5p pod's 8960 chips. Splitting the sequences themselves (sequence or context parallelism) lifts the cap.

>>> sequence_dp_max_chips().expr
floor(B/T)
"""

from __future__ import annotations

import functools

import sympy as sp

from ..derivation import Derivation, Step
from ..symbols import sym
from .common import B, n_dev

__all__ = ["sequence_dp_max_chips", "sequence_dp_usable_fraction"]

SHARD_70B = "applied-training.md, 'How to shard LLaMA 3-70B for training'"
T = sym("T")


def _sequences() -> Step:
    return Step(r"n_{\mathrm{seq}}", B / T, "the global batch of B tokens in sequences of T tokens", "1")


@functools.cache
def sequence_dp_max_chips() -> Derivation:
    seqs = _sequences()
    return Derivation("most chips data parallelism (or FSDP) over whole sequences can use", (
        seqs, Step(r"n_{\max}", sp.floor(seqs.expr), "one whole sequence per chip at the least: a chip with no "
                   "sequence has nothing to do", "chip")), SHARD_70B)


@functools.cache
def sequence_dp_usable_fraction() -> Derivation:
    seqs = _sequences()
    return Derivation("share of n chips data parallelism over whole sequences can keep busy", (
        seqs, Step(r"f_{\mathrm{busy}}", sp.Min(1, sp.floor(seqs.expr) / n_dev),
                   "n_seq of the n chips when there are fewer sequences than chips, else all of them", "1")),
        SHARD_70B)
