"""The space of training configurations: what each degree may be, how many combinations there are, and
the combinations themselves, decoded chunk by chunk from a flat index.

A candidate is a model-parallel row (tensor-parallel degree, context-parallel degree, expert shards, pipeline
stages and the virtual stages of each), a data row (FSDP shards, data-parallel replicas, sequences per
micro-batch) and a policy row (checkpointing, ZeRO-1).
The data rows are never listed: with a batch of n sequences, FSDP x DP x micro-batch must divide n, and for
a highly composite n (735,134,400 has 1,344 divisors) the triples number in the billions. Only the
(FSDP, DP) pairs are listed (at most a few hundred thousand), each with the micro-batches that fit it,
so the space is counted from them exactly before anything of its size is allocated, and a chunk of it is
decoded with ``searchsorted`` on their running counts.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import sympy as sp

from ..catalog import hardware, models
from ..errors import BadValueError

__all__ = ["POLICIES", "PINS", "CP_DEGREES", "VIRTUAL_STAGES", "Space", "choices", "interleavable"]

#: Checkpointing policies (transformers.md, 'Gradient checkpointing'): saved [tokens, D] tensors per
#: layer, and forward passes redone in the backward pass.
POLICIES: Mapping[str, tuple[int, int, str]] = {
    "block": (1, 1, "block rematerialisation: each layer's input is saved, the forward pass redone"),
    "big-matmuls": (7, 0, "the outputs of the 7 big matmuls are saved; only attention's softmax is redone"),
    "none": (20, 0, "no rematerialisation: about 20 intermediates per layer saved"),
}
#: The option that pins each choice of the space, as the CLI spells it.
PINS = {"tp": "--tp", "cp": "--cp", "pp": "--pp", "ep": "--ep", "fsdp": "--fsdp", "dp": "--dp", "mb": "--micro-batch",
        "v": "--virtual-stages", "ckpt": "--checkpointing", "zero": "--zero"}
#: Context-parallel degrees tried (each must split a sequence into 2·n_CP equal chunks, as Megatron-LM's
#: load-balanced causal split does) and virtual stages per device tried by the interleaved schedule.
CP_DEGREES = (1, 2, 4, 8, 16, 32)
VIRTUAL_STAGES = (1, 2, 3, 4, 5, 6, 7, 8)


def interleavable(pp, v, layers):
    """Whether n_PP stages of v virtual stages each can hold ``layers`` whole layers (works on arrays): every device
    but the last holds v chunks of at least one layer, (n_PP - 1)·v < L, and the last device keeps the rest, with the
    split's spare slots. This admits chunks of one layer with a few empty slots, as the Llama 3 paper splits 405B's
    126 layers over 16 ranks: its first rank's first chunk holds only the embedding and its last rank's last chunk
    only the output projection and loss, 8 chunks of one layer per rank."""
    return (pp - 1) * v < layers


def _divisors(n: int) -> list[int]:
    return [int(d) for d in sp.divisors(n)]


def choices(model: models.Model, chip: hardware.Chip, opts) -> dict[str, np.ndarray]:
    """The values each choice may take (ascending), the pins applied; a pin that cannot be is an error."""
    seqs = opts.batch // opts.seq_len
    if chip.family == "gpu":
        tp_max = chip.nvlink_domain or 8
    else:
        tp_max = max(chip.pod_shape or (16,))
    tp = [d for d in _divisors(model.N) if d <= min(tp_max, opts.chips)]
    pp = sorted({d for d in _divisors(model.L)} | {2 ** i for i in range(1, model.L.bit_length()) if 2 ** i <= model.L})
    pp = [p for p in pp if p <= opts.chips]
    ep = [d for d in _divisors(model.E) if d <= opts.chips] if model.is_moe else [1]
    data = [d for d in _divisors(seqs) if d <= opts.chips]
    run = getattr(opts, "pricing", "book") == "run"
    cp = [c for c in CP_DEGREES if c == 1 or (run and opts.seq_len % (2 * c) == 0 and c <= opts.chips)]
    v = [x for x in VIRTUAL_STAGES if x == 1 or (run and opts.schedule == "interleaved" and x <= model.L // 2)]
    out = {"tp": tp, "cp": cp, "ep": ep, "pp": pp, "fsdp": data, "dp": data, "mb": _divisors(seqs), "v": v,
           "ckpt": list(range(len(POLICIES))), "zero": [0, 1, 2] if run else [0, 1]}
    for key in ("tp", "cp", "pp", "ep", "fsdp", "dp", "mb", "v"):
        pinned = opts.pins.get(key)
        if pinned is None:
            continue
        if key == "dp":  # --dp counts the replicas outside the expert shards: n_DP = dp x ep
            out["dp"] = [pinned * e for e in out["ep"] if pinned * e in data]
            if not out["dp"]:
                raise BadValueError(_refusal(key, pinned, model, chip, seqs))
            continue
        if pinned not in out[key]:
            raise BadValueError(_refusal(key, pinned, model, chip, seqs))
        out[key] = [pinned]
    if opts.pins.get("checkpointing") is not None:
        out["ckpt"] = [list(POLICIES).index(opts.pins["checkpointing"])]
    if opts.pins.get("zero1") is not None:
        out["zero"] = [int(opts.pins["zero1"])]
    if opts.pins.get("zero") is not None:
        if opts.pins["zero"] not in out["zero"]:
            raise BadValueError(f"--zero {opts.pins['zero']} is not possible here: ZeRO stages 0, 1 and 2 split "
                                "optimizer state and gradients over the replicas (stage 3 is --fsdp); the book's "
                                "pricing (--mfu) has stages 0 and 1")
        out["zero"] = [opts.pins["zero"]]
    return {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}


def _refusal(key: str, value: int, model, chip, seqs: int) -> str:
    why = {
        "cp": ("it must be one of " + ", ".join(map(str, CP_DEGREES)) + " and split each sequence "
               "of --seq-len into 2·n_CP equal chunks; the book's pricing (--mfu) has no context parallelism"),
        "v": ("virtual stages are one of " + ", ".join(map(str, VIRTUAL_STAGES)) + ", at most half the layers, "
              f"with (n_PP - 1)·v below the {model.L} layers (every stage but the last holds v chunks of a layer "
              "or more), and only with --schedule interleaved (not with --mfu)"),
        "tp": f"it must divide the {model.N} query heads and stay inside "
              + (f"one NVLink domain ({chip.nvlink_domain} GPUs)" if chip.family == "gpu" else "one ICI axis"),
        "pp": f"stages must be at most the {model.L} layers, and divide them or be a power of two",
        "ep": (f"it must divide the {model.E} experts" if model.is_moe else f"{model.key} has no experts"),
        "fsdp": f"it must divide the {seqs} sequences of the batch",
        "dp": f"with the expert shards (--ep) it must divide the {seqs} sequences of the batch",
        "mb": f"a micro-batch is a whole number of sequences dividing the {seqs} of the batch",
    }[key]
    return f"{PINS[key]} {value} is not possible here: {why}"


def _product(**columns: np.ndarray) -> dict[str, np.ndarray]:
    """Every combination of the columns' values (small tables only: the model-parallel and policy rows)."""
    mesh = np.meshgrid(*columns.values(), indexing="ij")
    return {k: m.ravel() for k, m in zip(columns, mesh)}


class Space:
    """The candidates as (model-parallel row, data row) pairs times the policy rows, counted in ``total``.

    A data row is an (FSDP, DP) pair and one of the micro-batches that fit it. The pairs that can host a
    model row's expert shards are kept sorted by (degree FSDP x DP, FSDP, DP), so the rows within the chip
    count are a prefix of them (found with ``searchsorted``), and a pair's micro-batches follow it in
    ascending order: the order of the sorted triples, without the triples. :meth:`rows` decodes a flat
    index, with no Python loop over candidates."""

    def __init__(self, options: dict[str, np.ndarray], opts, layers: int = 10**9):
        seqs, chips = opts.batch // opts.seq_len, opts.chips
        model = _product(tp=options["tp"], cp=options["cp"], ep=options["ep"], pp=options["pp"], v=options["v"])
        keep = (model["tp"] * model["cp"] * model["pp"] <= chips) & (
            (model["v"] == 1) | ((model["pp"] > 1) & interleavable(model["pp"], model["v"], layers)))
        model = {k: v[keep] for k, v in model.items()}
        fsdp, dp = [], []
        for f in options["fsdp"].tolist():  # each f divides seqs, so f x DP divides it when DP divides seqs / f
            d = options["dp"][((seqs // f) % options["dp"] == 0) & (f * options["dp"] <= chips)]
            fsdp.append(np.full(len(d), f, np.int64))
            dp.append(d)
        fsdp = np.concatenate(fsdp) if fsdp else np.zeros(0, np.int64)
        dp = np.concatenate(dp) if dp else np.zeros(0, np.int64)
        order = np.argsort(fsdp * dp, kind="stable")  # listed by (FSDP, DP): sorted by (degree, FSDP, DP)
        fsdp, dp = fsdp[order], dp[order]
        degree = fsdp * dp
        # the micro-batches of each degree g: those dividing seqs / g, ascending, one run per distinct degree
        degrees, which = np.unique(degree, return_inverse=True)
        fits = [options["mb"][(seqs // g) % options["mb"] == 0] for g in degrees.tolist()]
        mb_count = np.array([len(m) for m in fits], np.int64)
        self.mb = np.concatenate(fits) if fits else np.zeros(0, np.int64)
        mb_start = np.cumsum(mb_count) - mb_count
        pair_mbs = mb_count[which.ravel()] if len(degree) else np.zeros(0, np.int64)
        # per expert-shard count e, the pairs whose DP it divides; concatenated, with running triple counts
        groups, counts = [], np.zeros(len(model["tp"]), np.int64)
        base = np.zeros(len(model["tp"]), np.int64)
        done = 0
        for e in np.unique(model["ep"]).tolist():
            pairs = np.flatnonzero(dp % e == 0)
            running = np.cumsum(pair_mbs[pairs])
            mine = model["ep"] == e
            width = model["tp"][mine] * model["cp"][mine] * model["pp"][mine]
            prefix = np.searchsorted(degree[pairs], chips // width, side="right")
            counts[mine] = np.where(prefix > 0, running[np.maximum(prefix - 1, 0)] if len(pairs) else 0, 0)
            base[mine] = done
            groups.append(pairs)
            done += int(running[-1]) if len(pairs) else 0
        self.model, self.fsdp, self.dp = model, fsdp, dp
        self.pairs = np.concatenate(groups) if groups else np.zeros(0, np.int64)
        self.running = np.cumsum(pair_mbs[self.pairs])  # triples up to and including each listed pair
        self.first_mb = mb_start[which.ravel()][self.pairs] if len(degree) else np.zeros(0, np.int64)
        self.base = base
        self.end = np.cumsum(counts)
        self.start = self.end - counts
        self.extra = _product(ckpt=options["ckpt"], zero=options["zero"])
        self.per_pair = len(self.extra["ckpt"])
        self.total = int(self.end[-1]) * self.per_pair if len(self.end) else 0

    def rows(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """The candidates at the flat indices ``flat`` (ascending, each below ``total``), as columns."""
        pair, k = np.divmod(flat, self.per_pair)
        m = np.searchsorted(self.end, pair, side="right")
        at = self.base[m] + pair - self.start[m]  # the triple's place among every listed pair's triples
        j = np.searchsorted(self.running, at, side="right")
        offset = at - np.where(j > 0, self.running[j - 1], 0)  # which of the pair's micro-batches
        p = self.pairs[j]
        return {**{c: v[m] for c, v in self.model.items()}, "fsdp": self.fsdp[p], "dp": self.dp[p],
                "mb": self.mb[self.first_mb[j] + offset], **{c: v[k] for c, v in self.extra.items()}}
