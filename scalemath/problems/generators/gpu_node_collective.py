"""A collective inside one NVLink node of a real GPU (gpus.md, 'Intra-node collectives', Quiz 2 and 4).

AllGather, ReduceScatter, AllReduce or AllToAll of a bf16 array over N GPUs of one NVLink
domain, with the exact (N - 1)/N factor; an AllReduce may instead run with in-switch
reduction (SHARP) or at a measured share of the advertised bandwidth, and an AllToAll may be
ragged (each token goes to k of the N GPUs). Engine route: the ``gpu.*`` quantities; second
route: plain Fractions on the catalog's NVLink bandwidth.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import MODEL_SHAPES, ask, pick, pow2
from ..registry import Generator, register, reject_if

SOURCE = "gpus.md, 'Intra-node collectives', 'Quiz 2: GPU nodes' and 'Quiz 4: Collectives'"
CHIPS = ("h100", "h100", "h200", "b200", "gb200", "a100")
#: (op, variant)
KINDS = (("AllGather", "plain"), ("AllGather", "plain"), ("ReduceScatter", "plain"), ("AllReduce", "plain"),
         ("AllReduce", "sharp"), ("AllReduce", "measured"), ("AllToAll", "plain"), ("AllToAll", "ragged"))
#: measured bus bandwidth in GB/s: the book's 8xH100 figures (370 GB/s at best, about 150 GB/s for a
#: 58 MB message) and, for other GPUs, a share of the advertised bandwidth
MEASURED_H100 = (370, 370, 300, 150)
MEASURED_PCT = (60, 70, 80, 90)


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    op, variant = pick(rng, KINDS)
    reject_if(variant == "sharp" and chip.key == "a100", "in-switch reduction needs Hopper or later NVSwitches")
    domain = chip.nvlink_domain
    whole = variant == "measured" or rng.random() < 0.7  # the measurements are for a whole node
    n = domain if whole else pick(rng, [k for k in (2, 4, 8, 16, 36) if k < domain])
    reject_if(variant == "sharp" and n == 2,
              "with two GPUs a ring AllReduce already sends exactly V: SHARP gains nothing")
    model, d, f = pick(rng, MODEL_SHAPES)
    if op == "AllToAll":  # tokens' activations, as in expert parallelism
        rows, cols, what = pow2(rng, 12, 17), d, "activations"
    else:  # an MLP weight matrix or its gradient
        rows, cols, what = d, f, "weights"
    reject_if(rows % n, "the array must split evenly over the GPUs")
    p = {"chip": chip.key, "op": op, "variant": variant, "N": n, "domain": domain, "model": model,
         "rows": rows, "cols": cols, "what": what}
    if variant == "measured":
        advertised = chip.nvlink_bytes_per_s // 10**9
        p["measured"] = (pick(rng, MEASURED_H100) if chip.key == "h100"
                         else advertised * pick(rng, MEASURED_PCT) // 100)
    if variant == "ragged":
        p["k"] = pick(rng, (1, 2, 4, 8))
        reject_if(p["k"] >= n, "a ragged AllToAll sends each token to fewer GPUs than there are")
    return p


def _v(p) -> int:
    """V: bytes of the bf16 array (gathered, unreduced per device, or the whole array for an AllToAll)."""
    return 2 * p["rows"] * p["cols"]


def _eta(p) -> Fraction:
    """The measured share of the advertised NVLink bandwidth."""
    return Fraction(p["measured"] * 10**9, get_chip(p["chip"]).nvlink_bytes_per_s)


QUANTITY = {"AllGather": "gpu.all_gather.time", "ReduceScatter": "gpu.reduce_scatter.time",
            "AllReduce": "gpu.all_reduce.time", "AllToAll": "gpu.all_to_all.time"}


def solve(p):
    given = {"V": _v(p), "N": p["N"]}
    chip, op, variant = p["chip"], p["op"], p["variant"]
    out = [ask("t", f"{op} time over NVLink (ring, no in-switch reduction)", QUANTITY[op], chip=chip, given=given)]
    if op == "AllGather":
        out.append(ask("t_approx", "AllGather time for many GPUs, (N - 1)/N taken as 1", "gpu.all_gather.time_approx",
                       chip=chip, given={"V": given["V"]}))
    if variant == "sharp":
        out.append(ask("t_sharp", "AllReduce time with SHARP", "gpu.all_reduce.sharp_time", chip=chip, given=given))
        out.append(ask("speedup", "predicted speed-up of SHARP", "gpu.all_reduce.sharp_speedup", chip=chip,
                       given=given))
    if variant == "measured":
        out.append(ask("t_measured", "AllReduce time at the measured bandwidth", "gpu.all_reduce.time_measured",
                       chip=chip, given=given | {"eta": _eta(p)}))
    if variant == "ragged":
        out.append(ask("t_ragged", "ragged AllToAll time", "gpu.all_to_all.ragged_time", chip=chip,
                       given=given | {"k_top": p["k"]}))
    return out


def check(p):
    w = Fraction(get_chip(p["chip"]).nvlink_bytes_per_s)
    v, n = _v(p), p["N"]
    ring = Fraction(v * (n - 1), n) / w  # every GPU sends its V/N shard to each of the N - 1 others
    t = {"AllGather": ring, "ReduceScatter": ring, "AllReduce": 2 * ring,
         "AllToAll": Fraction(v * (n - 1), n * n) / w}[p["op"]]
    out = {"t": t}
    if p["op"] == "AllGather":
        out["t_approx"] = v / w
    if p["variant"] == "sharp":
        out["t_sharp"] = v / w
        out["speedup"] = 2 * ring / (v / w)
    if p["variant"] == "measured":
        out["t_measured"] = Fraction(2 * v * (n - 1), n) / (p["measured"] * 10**9)
    if p["variant"] == "ragged":
        out["t_ragged"] = t * min(Fraction(p["k"], n), 1)
    return out


register(Generator("gpu_node_collective", "gpu", "A collective inside an NVLink node",
                   SOURCE, draw, solve, check))
