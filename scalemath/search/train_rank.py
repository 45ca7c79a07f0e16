"""Ranking the training search's candidates, chunk by chunk: the best few overall and the best of each mix of
parallelism, in an order that does not depend on where the chunks end (ties go to the earlier candidate)."""

from __future__ import annotations

import numpy as np

__all__ = ["family", "order", "near", "merge", "best_per_family"]


def family(tp, pp, ep, fsdp, dp, cp=1) -> str:
    """The mix of parallelism a candidate uses, e.g. "TP x PP x DP" (DP counts the replicas outside the expert
    shards, dp/ep, as the book writes DeepSeek-V3's "64 EP x 16 PP x 2 DP")."""
    parts = [name for name, n in (("TP", tp), ("CP", cp), ("EP", ep), ("PP", pp), ("FSDP", fsdp), ("DP", dp // ep))
             if n > 1]
    return " x ".join(parts) or "one chip"


def order(table: dict[str, np.ndarray]) -> np.ndarray:
    """Fastest step first (equal to 7 digits counts as a tie); then fewer chips, then the least
    communication (the most slack under compute, as the book's X_opt), then less memory."""
    return np.lexsort((table["memory"], table["comms"].astype(np.float32), table["chips"], table["step"].astype(np.float32)))


def near(table, fits, keep: int) -> np.ndarray:
    """The rows of a chunk that fit and are as fast as its keep-th fastest that fits, in order: no other row can be
    kept (merged with more rows, the keep-th fastest step only falls), so :func:`merge` ranks the same list."""
    rows = np.flatnonzero(fits)
    if len(rows) > keep:
        step = table["step"][rows].astype(np.float32)
        rows = rows[step <= np.partition(step, keep - 1)[keep - 1]]
    return rows


def merge(best, table, keep: int):
    """The best ``keep`` rows of the kept list and a chunk's, ranked by :func:`order` (the kept list first)."""
    if best is not None:
        table = {k: np.concatenate([best[k], table[k]]) for k in table}
    step = table["step"].astype(np.float32)
    if len(step) > keep:  # only rows as fast as the keep-th fastest can make the list
        rows = np.flatnonzero(step <= np.partition(step, keep - 1)[keep - 1])
        table = {k: v[rows] for k, v in table.items()}
    ranked = order(table)[:keep]
    return {k: v[ranked] for k, v in table.items()}


def best_per_family(table, fits, families: dict[str, dict[str, float]]) -> None:
    """Per mix of parallelism, the fastest candidate that fits (or, when none fits, the smallest)."""
    code = ((table["tp"] > 1) * 1 + (table["ep"] > 1) * 2 + (table["pp"] > 1) * 4 + (table["fsdp"] > 1) * 8
            + (table["dp"] > table["ep"]) * 16 + (table["cp"] > 1) * 32)
    step = table["step"].astype(np.float32)
    for c in np.flatnonzero(np.bincount(code, minlength=64)):  # the codes present, ascending
        rows = np.flatnonzero(code == c)
        good = rows[fits[rows]]
        if len(good):
            good = good[step[good] == step[good].min()]  # the ties for fastest; then the documented order
            pick = good[order({k: table[k][good] for k in ("step", "chips", "comms", "memory")})[0]]
        else:
            pick = rows[np.argmin(table["memory"][rows])]
        row = {k: v[pick].item() for k, v in table.items()}
        row["fits"] = bool(fits[pick])
        name = family(row["tp"], row["pp"], row["ep"], row["fsdp"], row["dp"], row["cp"])
        old = families.get(name)
        if old is None or _rank(row) < _rank(old):
            families[name] = row


def _rank(row: dict) -> tuple:
    return (not row["fits"],) + ((np.float32(row["step"]), row["chips"], np.float32(row["comms"]), row["memory"]) if row["fits"]
                                 else (row["memory"],))
