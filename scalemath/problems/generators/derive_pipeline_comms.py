"""Derive the pipeline's communication (training.md, 'Pipelining'): a microbatch's activations sent point to
point from one stage to the next, and the transfers on the critical path of one forward pass through the
stages (the first microbatch crosses every stage boundary, the others follow one hop behind each other).

Framing drawn: the activations' dimension names, element type, the letters of the stage and microbatch counts.
Key: the engine's ``parallel.pipeline.t_comms_hop`` and ``parallel.pipeline.t_comms`` in the problem's names.
Second route: the schedule counted by hand (stage boundaries Z - 1 crossed by the first microbatch, then one more
hop for each of the M - 1 others), bytes of one [B/M, D] microbatch over W.
"""

from __future__ import annotations

import sympy as sp

from ..draws import pick
from ..registry import Generator, register
from .derive_common import DTYPES, engine_form, formula, name

SOURCE = "training.md, 'Pipelining'"
PAIRS = (("B", "D"), ("T", "D"), ("B", "F"), ("T", "F"), ("B", "H"), ("T", "H"))
STAGES, MICRO = ("Z", "P", "R"), ("M", "G", "U")


def draw(rng):
    d1, d2 = pick(rng, PAIRS)
    dtype = pick(rng, tuple(DTYPES))
    return {"d1": d1, "d2": d2, "dtype": dtype, "bytes": DTYPES[dtype], "stages": pick(rng, STAGES),
            "micro": pick(rng, MICRO)}


def _symbols(p):
    return ((p["d1"], "tokens in the whole batch (every microbatch together)"),
            (p["d2"], "width of the activations sent between stages"),
            (p["stages"], "pipeline stages"), (p["micro"], "microbatches per batch"),
            ("W", "bandwidth of the link between two neighbouring stages, one direction, in bytes/s"))


def _subs(p):
    return {"B": name(p["d1"]), "D": name(p["d2"]), "b_x": p["bytes"], "n_mb": name(p["micro"]),
            "Z": name(p["stages"]), "W": name("W")}


def solve(p):
    hop = engine_form("parallel.pipeline.t_comms_hop", _subs(p))
    total = engine_form("parallel.pipeline.t_comms", _subs(p))
    return [formula("t_hop", "time of one stage-to-stage transfer of a microbatch", hop, _symbols(p)),
            formula("t_pipeline", "transfer time on the critical path of one forward pass", total, _symbols(p))]


def check(p):
    B, D, M, Z, W = (name(x) for x in (p["d1"], p["d2"], p["micro"], p["stages"], "W"))
    hop = p["bytes"] * (B / M) * D / W  # one microbatch's activations, point to point
    hops = (Z - 1) + (M - 1)  # the first microbatch's boundaries, then one hop more per later microbatch
    return {"t_hop": hop, "t_pipeline": sp.expand(hops * hop)}


register(Generator("derive_pipeline_comms", "training", "Derive: the pipeline's communication",
                   SOURCE, draw, solve, check))
