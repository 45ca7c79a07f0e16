"""The online softmax of flash attention (transformers.md, 'Flash attention' and the book's inference chapter):
one query's attention over a block of keys kept as three running numbers, the block's largest score m, the sum of
exponentials l relative to it, and the normalised output o, and two blocks merged without revisiting their keys.

Scores and values are given as exact numbers (one value per key: a head dimension of 1; every dimension of the
head merges the same way), so the results are exact expressions in exp.

>>> d = online_softmax_merge(block_stats([1, 3], [2, 4]), block_stats([2], [6]))
>>> sp.simplify(d.expr - (4 * sp.exp(3) + 2 * sp.exp(1) + 6 * sp.exp(2)) / (sp.exp(3) + sp.exp(1) + sp.exp(2)))
0
"""

from __future__ import annotations

from typing import Sequence

import sympy as sp

from ..derivation import Derivation, Step

__all__ = ["block_stats", "online_softmax_merge"]

SOURCE = "transformers.md, 'Flash attention' (the online softmax: running max, rescaled sums, merged blocks)"


def block_stats(scores: Sequence, values: Sequence, tag: str = "") -> Derivation:
    """One block's running max m, sum of exponentials l (relative to m) and normalised output o."""
    s, v = [sp.sympify(x) for x in scores], [sp.sympify(x) for x in values]
    if not s or len(s) != len(v):
        raise ValueError("a block needs as many values as scores, at least one")
    m = sp.Max(*s)
    l = sp.Add(*(sp.exp(x - m) for x in s))
    o = sp.Add(*(sp.exp(x - m) * y for x, y in zip(s, v))) / l
    return Derivation(f"softmax statistics of block {tag}".strip(), (
        Step(f"m_{{{tag}}}" if tag else "m", m, "the block's largest score (keeps every exponential at most 1)", "1"),
        Step(f"\\ell_{{{tag}}}" if tag else r"\ell", l, "the exponentials of the scores, shifted by m, summed", "1"),
        Step(f"o_{{{tag}}}" if tag else "o", o, "the values weighted by those exponentials, over their sum", "1"),
    ), SOURCE)


def online_softmax_merge(first: Derivation, second: Derivation) -> Derivation:
    """Two blocks' (m, l, o) merged: the new max, both sums rescaled to it, the outputs weighted by their sums."""
    (m1, l1, o1), (m2, l2, o2) = ([s.expr for s in d.steps[-3:]] for d in (first, second))
    m = sp.Max(m1, m2)
    a1, a2 = sp.exp(m1 - m), sp.exp(m2 - m)
    l = l1 * a1 + l2 * a2
    return Derivation("two blocks of the online softmax merged", first.steps[-3:] + second.steps[-3:] + (
        Step("m", m, "the larger of the two maxima", "1"),
        Step(r"\ell", l, "each block's sum rescaled by exp(its max - m), then added", "1"),
        Step("o", (l1 * a1 * o1 + l2 * a2 * o2) / l,
             "each block's output weighted by its rescaled sum, over the merged sum: the softmax over both blocks",
             "1"),
    ), SOURCE)
