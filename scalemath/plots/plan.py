"""Heat maps of ``plan``'s search over two parallelism degrees: the least memory per chip any configuration
of the cell needs (the feasible region is where it fits in HBM), and the best step time among those that
fit (the other degrees, micro-batches, checkpointing and ZeRO-1 chosen at their best). The values are the
search's own (the closed forms plan prices with, compiled to NumPy)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import BadValueError
from ..values.printing import with_unit
from ..search import train_space as search
from ..search.plan_report import forms
from .common import Figure, Heat

__all__ = ["AXES", "data", "grid"]

#: axis name -> (label, column of the search's table)
AXES = {"tp": "tensor-parallel degree (TP)", "cp": "context-parallel degree (CP)", "pp": "pipeline stages (PP)", "ep": "expert-parallel degree (EP)",
        "fsdp": "FSDP degree", "dp": "data-parallel degree (DP)", "micro-batch": "micro-batch (sequences)"}


def _column(table: dict, axis: str) -> np.ndarray:
    if axis == "dp":
        return table["dp"] // table["ep"]
    return table["mb" if axis == "micro-batch" else axis]


def _config(config: dict, axis: str) -> int:
    return config["micro_batch" if axis == "micro-batch" else axis]


def grid(model, chip, opts: search.Options, x: str, y: str, catalog=None, model_catalog=None) -> dict:
    """{(x value, y value): (least memory per chip, best step time that fits or None)} over the whole space."""
    for name, flag in ((x, "--x"), (y, "--y")):
        if name not in AXES:
            raise BadValueError(f"{flag} {name}: choose one of {', '.join(AXES)}")
    if x == y:
        raise BadValueError(f"--x and --y are both {x}; give two different degrees")
    hbm = float(chip.hbm_bytes)
    cells: dict[tuple[int, int], list] = {}
    dtypes = [d.strip() for d in opts.dtype.split(",") if d.strip()]
    for d in dtypes:
        sub = dataclasses.replace(opts, dtype=d)
        forms = search.compiled(model, chip, sub, catalog, model_catalog)
        for table in search.chunks(model, chip, sub, forms, hbm):
            xs, ys = _column(table, x), _column(table, y)
            keys = np.stack([xs, ys], axis=1)
            uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
            inverse = inverse.ravel()
            mem = np.full(len(uniq), np.inf)
            np.minimum.at(mem, inverse, table["memory"])
            step = np.full(len(uniq), np.inf)
            np.minimum.at(step, inverse, table["step"])
            for (a, b), m, s in zip(uniq.tolist(), mem.tolist(), step.tolist()):
                cell = cells.setdefault((int(a), int(b)), [np.inf, np.inf])
                cell[0], cell[1] = min(cell[0], m), min(cell[1], s)
    if not cells:
        raise BadValueError("no configuration of these degrees exists for this run; unpin a degree or change "
                            "--chips, --batch-tokens or --seq-len")
    return {k: (m, None if s == np.inf else s) for k, (m, s) in sorted(cells.items())}


def data(model, chip, opts: search.Options, x: str = "tp", y: str = "fsdp", catalog=None,
         model_catalog=None, report: dict | None = None) -> Figure:
    """The two heat maps; ``report`` is plan's own (its best configuration is outlined), made here if not given."""
    cells = grid(model, chip, opts, x, y, catalog, model_catalog)
    if report is None:
        from ..search.plan import plan as make_plan

        report = make_plan(model, chip, opts, None, 1, catalog=catalog, model_catalog=model_catalog)
    xv = tuple(sorted({a for a, _ in cells}))
    yv = tuple(sorted({b for _, b in cells}))
    hbm = chip.hbm_bytes
    memory = tuple(tuple(cells[(a, b)][0] if (a, b) in cells else "none" for a in xv) for b in yv)
    memory = tuple(tuple(v if isinstance(v, str) or v <= hbm else f"{with_unit(v, 'byte', 3)}\n> HBM" for v in row)
                   for row in memory)
    step = tuple(tuple(("none" if (a, b) not in cells else cells[(a, b)][1] or "does not fit") for a in xv)
                 for b in yv)
    winner = report["best"]
    best = None if winner is None else tuple(_config(winner.config, axis) for axis in (x, y))
    left = Heat(AXES[x], AXES[y], xv, yv, memory, "byte", "least memory per chip",
                title=f"where it fits: least memory per chip (HBM {hbm / 1e9:g} GB)")
    right = Heat(AXES[x], AXES[y], xv, yv, step, "s", "best step time", title="best step time among those that fit",
                 best=best)
    return Figure("plan", f"Training {model.key} on {opts.chips} x {chip.name}, batch {opts.batch} tokens, "
                          f"{opts.dtype}", (left, right),
                  note=" and ".join(forms(opts)) + " over the whole search; each "
                       "cell takes the other degrees, micro-batch, checkpointing and ZeRO at their best; "
                       "none: no configuration with these degrees; red: plan's best",
                  meta={"cells": cells, "best": best})
