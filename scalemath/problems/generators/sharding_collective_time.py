"""Time of one collective over one or several axes of a real TPU slice (sharding.md).

AllGather, ReduceScatter, AllReduce or AllToAll of a 2-D array, over one axis (with or without
wraparound, by the chip's slice rule) or several wrapping axes at once. AllGathers are priced
with hop latency, so small arrays fall in the latency-bound regime below the threshold
``W_link t_hop`` (45 kB on a v5e); the other collectives use the book's bandwidth-bound costs,
so their draws keep every shard above the threshold.

Engine route: ``sharding.array_bytes`` for V (the array with the collective's axes removed),
then the registered ``collective.*`` quantity of the variant. Second route: plain Fractions.
"""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import dtype_bytes, get_chip
from ...symbolic.notation import parse_array
from ...symbolic.sharding import array_bytes
from ..draws import accepting, ask, choice, pick, pow2
from ..registry import Generator, register, reject_if

SOURCE = ("sharding.md, 'Case 2' (AllGather cost, latency), 'Case 3' (AllReduce, ReduceScatter), "
          "'A Deeper Dive' (AllToAll), Pop Quiz 2 and Q2")
AXES = ("X", "Y", "Z")
#: real slices: v5e/v6e wrap only an axis of 16; v4p/v5p wrap every axis of a slice of whole 4x4x4 cubes
SLICES = (("tpu-v5e", (8, 4)), ("tpu-v5e", (4, 8)), ("tpu-v5e", (8, 16)), ("tpu-v5e", (16, 16)),
          ("tpu-v6e", (4, 4)), ("tpu-v6e", (16, 16)), ("tpu-v6e", (8, 16)),
          ("tpu-v4p", (4, 4, 4)), ("tpu-v5p", (4, 4, 4)), ("tpu-v5p", (2, 4, 4)), ("tpu-v5p", (4, 4, 8)),
          ("tpu-v5p", (2, 2, 4)))
OPS = ("AllGather", "AllGather", "ReduceScatter", "AllReduce", "AllToAll")
DTYPES = ("bf16", "bf16", "int8", "fp32")
#: (op, variant) -> the registered quantity for the time
QUANTITY = {
    ("AllGather", "wrap"): "collective.all_gather.latency_aware",
    ("AllGather", "nowrap"): "collective.all_gather.latency_aware_no_wraparound",
    ("AllGather", "multi2"): "collective.all_gather.latency_aware_xy",
    ("AllGather", "multi3"): "collective.all_gather.latency_aware_xyz",
    ("ReduceScatter", "wrap"): "collective.reduce_scatter.time_approx",
    ("ReduceScatter", "nowrap"): "collective.reduce_scatter.time_no_wraparound",
    ("ReduceScatter", "multi2"): "collective.reduce_scatter.time_multi_axis",
    ("ReduceScatter", "multi3"): "collective.reduce_scatter.time_multi_axis",
    ("AllReduce", "wrap"): "collective.all_reduce.time_approx",
    ("AllReduce", "nowrap"): "collective.all_reduce.time_no_wraparound",
    ("AllReduce", "multi2"): "collective.all_reduce.time_multi_axis",
    ("AllReduce", "multi3"): "collective.all_reduce.time_multi_axis",
    ("AllToAll", "wrap"): "collective.all_to_all.time_approx",
    ("AllToAll", "torus"): "collective.all_to_all.time_torus",
}
#: with the ring cost it would have with wraparound, for comparison: in the same exact model as the open line,
#: the (N-1)/N share of V moved (the book's V/W_ici shortcut is accepted, with its reason)
RING = {"AllGather": "collective.all_gather.time", "ReduceScatter": "collective.reduce_scatter.time",
        "AllReduce": "collective.all_reduce.time"}
RING_BOOK = {"AllGather": "collective.all_gather.latency_aware", "ReduceScatter": "collective.reduce_scatter.time_approx",
             "AllReduce": "collective.all_reduce.time_approx"}
#: The choices of "in which regime is this AllGather?"
REGIMES = ("latency-bound", "bandwidth-bound")
WHY_BOOK = ("the book's bidirectional-ring shortcut V/W_ici, which drops the factor (N-1)/N that the open line "
            "of this problem keeps")


def _tex(text: str) -> str:
    """``A[I_X, J]{U_Y}`` as LaTeX: ``A[I_{X}, J]\\{U_{Y}\\}``."""
    text = re.sub(r"\{U_([A-Za-z]+)\}", r"\\{U_\1\\}", text)
    return re.sub(r"_([A-Za-z]+)", r"_{\1}", text)


def _array(i_axes: str, j_axes: str, unreduced: str = "") -> str:
    dims = ["I" + (f"_{i_axes}" if i_axes else ""), "J" + (f"_{j_axes}" if j_axes else "")]
    return f"A[{', '.join(dims)}]" + (f"{{U_{unreduced}}}" if unreduced else "")


def _arrays(op: str, s: str, r1: str, r2: str) -> tuple[str, str]:
    """Before and after: the collective runs over the axes ``s``; ``r1`` (on I) and ``r2`` (on J)
    are the other axes that shard the array."""
    if op == "AllGather":
        return _array(r1 + s, r2), _array(r1, r2)
    if op == "ReduceScatter":
        return _array(r1, r2, s), _array(r1 + s, r2)
    if op == "AllReduce":
        return _array(r1, r2, s), _array(r1, r2)
    return _array(r1 + s, r2), _array(r1, r2 + s)


def draw(rng):
    chip_key, shape = pick(rng, SLICES)
    chip = get_chip(chip_key)
    mesh = dict(zip(AXES, shape))
    wraps = dict(zip(AXES, chip.wraps(shape)))
    op = pick(rng, OPS)
    n_axes = pick(rng, (1, 1, 1, 2, len(shape)))
    axes = list(mesh)
    rng.shuffle(axes)
    s = "".join(sorted(axes[:n_axes]))
    if n_axes == 1:
        variant = "wrap" if wraps[s] else "nowrap"
    elif op == "AllToAll":
        reject_if(n_axes != len(shape), "an AllToAll over several axes runs over the whole torus")
        variant = "torus"
    else:
        variant = f"multi{n_axes}"
    reject_if(n_axes > 1 and not all(wraps[a] for a in s),
              "a collective over several axes at once needs every one of them to wrap around")
    reject_if(op == "AllToAll" and variant == "nowrap", "the AllToAll cost is for a ring with wraparound")
    rest = [a for a in axes if a not in s]
    r1 = "".join(a for a in rest if rng.random() < 0.3)
    r2 = "".join(a for a in rest if a not in r1 and rng.random() < 0.5)
    reject_if(variant == "torus" and (r1 or r2), "the torus AllToAll moves an array sharded over the whole slice")
    dtype = pick(rng, DTYPES)
    small = op == "AllGather" and rng.random() < 0.4
    i_size, j_size = (pow2(rng, 4, 9), pow2(rng, 6, 10)) if small else (pow2(rng, 9, 14), pow2(rng, 10, 16))
    n = math.prod(mesh[a] for a in s)
    split_i = math.prod(mesh[a] for a in r1 + s)
    split_j = math.prod(mesh[a] for a in r2 + (s if op == "AllToAll" else ""))
    reject_if(i_size % split_i or j_size % split_j, "every dimension must split evenly over its axes")
    v = dtype_bytes(dtype) * i_size * j_size / math.prod(mesh[a] for a in r1 + r2)
    threshold = chip.ici_link_bytes_per_s * chip.hop_latency_s
    reject_if(op != "AllGather" and v / n < 2 * threshold,
              "costs without latency need every shard well above the latency threshold")
    reject_if(v > 4 * 10**9, "the array should fit comfortably in HBM")
    before, after = _arrays(op, s, r1, r2)
    return {"chip": chip_key, "slice": "x".join(map(str, shape)), "op": op, "axes": s, "variant": variant,
            "wraps": "".join(a for a in AXES[:len(shape)] if wraps[a]),
            "mesh_tex": r",\ ".join(f"|{a}| = {k}" for a, k in mesh.items()),
            "dtype": dtype, "I": i_size, "J": j_size, "r1": r1, "r2": r2,
            "op_tex": rf"\mathrm{{{op}}}_{{{s}}}\ {_tex(before)} \to {_tex(after)}"}


def _mesh(p) -> dict[str, int]:
    return dict(zip(AXES, (int(n) for n in p["slice"].split("x"))))


def _v(p, mesh):
    """V: the bytes of the array with the collective's axes taken out (the gathered array, the
    unreduced input, or the block an AllToAll's group shares), per device, by the engine."""
    block = parse_array(_array(p["r1"], p["r2"]))
    b = dtype_bytes(p["dtype"])
    return array_bytes(block, mesh, {"I": p["I"], "J": p["J"]}, sp.Rational(b.numerator, b.denominator))


def solve(p):
    mesh = _mesh(p)
    v = _v(p, mesh)
    op, variant, s = p["op"], p["variant"], p["axes"]
    sizes = [mesh[a] for a in s]
    given = {"V": v}
    if variant in ("wrap", "nowrap"):
        given["N"] = sizes[0]
    if variant in ("multi2", "multi3"):
        if op == "AllGather":
            given.update(dict(zip(AXES, sizes)))
        else:
            given["N_axes"] = len(sizes)
    if variant == "torus":
        given.update(dict(zip(AXES, sizes + [1] * (3 - len(sizes)))))
    if (op, variant) == ("AllReduce", "wrap"):
        given.pop("N")  # the book's AllReduce cost does not depend on the axis size
    out = [ask("t", f"{op} time", QUANTITY[(op, variant)], chip=p["chip"], given=given)]
    if op == "AllGather":
        out.append(ask("threshold", "latency threshold of one hop", "collective.latency_threshold", chip=p["chip"]))
        first, second = (st.value for st in out[0].evaluated.steps[:2])  # nowrap: chunk, hop; else latency, bandwidth
        latency_bound = first < second if variant == "nowrap" else first > second
        out.append(choice("regime", "in which regime is this AllGather?", REGIMES, 0 if latency_bound else 1))
    if variant == "nowrap":
        ring = {"V": v, "N": sizes[0]}
        t_ring = ask("t_ring", f"{op} time if the axis wrapped around", RING[op], chip=p["chip"], given=ring)
        if op == "AllGather":   # hop latency: about N/2 hops, each at least t_hop, as on the open line
            book = ask("t_ring", "", RING_BOOK[op], chip=p["chip"], given=ring)
            latency = book.evaluated.steps[0].value
            if latency > t_ring.value:
                t_ring = dataclasses.replace(t_ring, value=latency)
        else:
            book = ask("t_ring", "", RING_BOOK[op], chip=p["chip"], given={"V": v} if op == "AllReduce" else ring)
        if book.value != t_ring.value:
            t_ring = accepting(t_ring, (book.value, WHY_BOOK))
        out.append(t_ring)
    return out


def check(p):
    mesh = _mesh(p)
    chip = get_chip(p["chip"])
    link = Fraction(chip.ici_link_bytes_per_s)
    w_ici = 2 * link
    t_hop = Fraction(chip.hop_latency_ns, 10**9)
    b = {"bf16": 2, "int8": 1, "fp32": 4}[p["dtype"]]
    others = 1
    for a in p["r1"] + p["r2"]:
        others *= mesh[a]
    v = Fraction(b * p["I"] * p["J"], others)
    sizes = [mesh[a] for a in p["axes"]]
    n = math.prod(sizes)
    op, variant = p["op"], p["variant"]
    if variant == "torus":
        t = v * max(sizes) / (4 * n * w_ici)
    elif op == "AllToAll":
        t = v / (4 * w_ici)
    elif variant == "nowrap":
        bw = v * (n - 1) / (n * link)
        t = {"AllGather": (n - 1) * max(t_hop, v / (n * link)), "ReduceScatter": bw, "AllReduce": 2 * bw}[op]
    else:
        bw = v / (w_ici * len(sizes))
        latency = t_hop * sum(sizes) / 2
        t = {"AllGather": max(latency, bw), "ReduceScatter": bw, "AllReduce": 2 * bw}[op]
    out = {"t": t}
    if op == "AllGather":
        out["threshold"] = link * t_hop
        if variant == "nowrap":   # one shard over one link against one hop's latency
            latency_bound = v / (n * link) < t_hop
        else:
            latency_bound = t_hop * sum(sizes) / 2 > v / (w_ici * len(sizes))
        out["regime"] = 0 if latency_bound else 1
    if variant == "nowrap":
        factor = 2 if op == "AllReduce" else 1
        exact = factor * v * (n - 1) / (n * w_ici)          # a bidirectional ring moves (N-1)/N of V each way
        shortcut = factor * v / w_ici                         # the book's V/W_ici
        if op == "AllGather":
            exact, shortcut = max(t_hop * n / 2, exact), max(t_hop * n / 2, shortcut)
        out["t_ring"] = exact
        if shortcut != exact:
            out["t_ring.accept"] = [shortcut]
    return out


register(Generator("sharding_collective_time", "sharding", "Time of a collective on a TPU slice",
                   SOURCE, draw, solve, check))
