"""The online softmax's merge (transformers.md, 'Flash attention'): one query attends to keys that arrive in two
blocks; each block keeps only its largest score m, its sum of exponentials l (relative to m) and its normalised
output o, and the two are merged into the softmax over all the keys without looking at any key again.

Framing drawn: two blocks of 1 to 3 keys, integer scores and integer values (a head dimension of 1). Key: the
engine's ``block_stats`` and ``online_softmax_merge`` (scalemath.symbolic.transformer.online_softmax), exact
expressions in exp. Second route: the plain softmax over all the keys at once, exp(s)/sum exp(s), with no running
max and no rescaling, and each block's sums written out by hand.
"""

from __future__ import annotations

import sympy as sp

from ...symbolic.transformer.online_softmax import block_stats, online_softmax_merge
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = "transformers.md, 'Flash attention' (online softmax); inference.md, attention kernels"
TOL = sp.Rational(1, 200)


def draw(rng):
    n1, n2 = rng.randint(1, 3), rng.randint(1, 3)
    s1 = [rng.randint(-3, 4) for _ in range(n1)]
    s2 = [rng.randint(-3, 4) for _ in range(n2)]
    reject_if(max(s1) == max(s2), "the blocks' maxima differ, so one block is rescaled")
    p = {"s1": s1, "v1": [rng.randint(-5, 9) for _ in range(n1)],
         "s2": s2, "v2": [rng.randint(-5, 9) for _ in range(n2)]}
    outputs = [check(p)[k] for k in ("o1", "o2", "o")]
    reject_if(any(abs(float(o)) < 0.5 for o in outputs), "every output is at least 0.5 from 0 (a relative tolerance)")
    return p


def solve(p):
    b1, b2 = block_stats(p["s1"], p["v1"], "1"), block_stats(p["s2"], p["v2"], "2")
    merged = online_softmax_merge(b1, b2).at({})
    e1, e2 = b1.at({}), b2.at({})

    def ans(name, description, ev, i):
        part = ev.part(i + 1)
        return Answer(name, description, part.value, "1", part, TOL)

    return [ans("l1", "sum of exponentials of block 1, relative to its max", e1, 1),
            ans("o1", "normalised output of block 1", e1, 2),
            ans("l2", "sum of exponentials of block 2, relative to its max", e2, 1),
            ans("o2", "normalised output of block 2", e2, 2),
            Answer("m", "the merged max", merged.steps[6].value, "1", merged.part(7, 6), TOL),
            Answer("l", "the merged sum of exponentials, relative to the merged max", merged.steps[7].value, "1",
                   merged.part(8, 6), TOL),
            Answer("o", "the attention output over both blocks", merged.value, "1", merged.part(9, 6), TOL)]


def check(p):
    s, v = p["s1"] + p["s2"], p["v1"] + p["v2"]
    M = max(s)
    out = {"m": sp.Integer(M), "l": sum(sp.exp(x - M) for x in s),
           "o": sum(sp.exp(x) * y for x, y in zip(s, v)) / sum(sp.exp(x) for x in s)}
    for k, (ss, vv) in {"1": (p["s1"], p["v1"]), "2": (p["s2"], p["v2"])}.items():
        mk = max(ss)
        out[f"l{k}"] = sum(sp.exp(x - mk) for x in ss)
        out[f"o{k}"] = sum(sp.exp(x) * y for x, y in zip(ss, vv)) / sum(sp.exp(x) for x in ss)
    return out


register(Generator("derive_online_softmax", "transformer", "Derive: merging two blocks of the online softmax",
                   SOURCE, draw, solve, check))
