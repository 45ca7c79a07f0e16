"""Load an offloaded array from host memory, gather it on one chip and multiply (tpus.md, Q6).

The four stages are engine quantities (``transfer.time`` three times, ``matmul.t_math``);
the bounds come from :func:`scalemath.symbolic.tpu.pipeline`. The three transfers share the
symbols ``bytes``, ``links`` and ``W``, so each is handed to ``pipeline`` with its own
bandwidth symbol, ``n_dev`` links for the PCIe load, one HBM, and the gather's bytes written
as every shard but the corner chip's; one substitution then evaluates all four stages.
"""

from __future__ import annotations

from fractions import Fraction

from ...cache import persistent
from ...catalog.hardware import get_chip
from ...symbolic import roofline, tpu
from ...symbolic.derivation import Derivation, Step
from ...symbolic.symbols import sym
from ..draws import ask, pick, pow2
from ..model import Answer
from ..registry import Generator, register, reject_if

CHIPS = ("tpu-v5e", "tpu-v5e", "tpu-v6e")
#: slices of a 16x16 pod with no wraparound on either axis, each a whole number of 4x2 hosts
SLICES = ((2, 4), (4, 4), (2, 8), (4, 8), (8, 8))
BATCHES = (8, 16, 32, 64)
DTYPE_BYTES = {"int8": 1, "bf16": 2}


def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    x, y = pick(rng, SLICES)
    dtype = pick(rng, ("int8", "int8", "bf16"))
    rows, cols = pow2(rng, 14, 18), pow2(rng, 14, 18)
    total = rows * cols * DTYPE_BYTES[dtype]
    reject_if(total < 2**30, "the array should be large (at least 1 GiB)")
    reject_if(total > chip.hbm_bytes, "the gathered array must fit in one chip's HBM")
    return {"chip": chip.key, "slice": f"{x}x{y}", "dtype": dtype, "rows": rows, "cols": cols,
            "batch": pick(rng, BATCHES)}


def _sizes(p) -> tuple[int, int, int]:
    x, y = (int(n) for n in p["slice"].split("x"))
    chips = x * y
    total = p["rows"] * p["cols"] * DTYPE_BYTES[p["dtype"]]
    return chips, total, total - total // chips


def _stage(label: str, derivation: Derivation, rename: dict) -> tuple[str, Derivation]:
    result = derivation.result
    step = Step(label, derivation.expr.xreplace(rename), result.why, result.unit)
    return label, Derivation(derivation.title, (step,), derivation.source)


@persistent
def _bounds():
    """The four stages and their bounds, built once (symbolic): each transfer gets its own symbols. Kept
    between runs: SymPy spends a cold run's largest single step comparing the stages inside the Max."""
    move = tpu.transfer_time()
    W, links, nbytes, n_dev = sym("W"), sym("links"), sym("bytes"), sym("n_dev")
    stages = [
        _stage(r"T_{\mathrm{PCIe}}", move, {W: sym("W_pcie"), links: n_dev}),
        _stage(r"T_{\mathrm{ICI}}", move, {W: sym("W_link"), nbytes: nbytes * (n_dev - 1) / n_dev}),
        _stage(r"T_{\mathrm{HBM}}", move, {W: sym("W_hbm"), links: 1}),
        _stage(r"T_{\mathrm{FLOPs}}", roofline.matmul_t_math(), {}),
    ]
    return tpu.pipeline(stages)


def solve(p):
    chip = get_chip(p["chip"])
    chips, total, gathered = _sizes(p)
    link = chip.ici_link_bytes_per_s
    t_pcie = ask("t_pcie", "PCIe load into every chip's HBM", "transfer.time", chip=p["chip"],
                 level="pcie", given={"bytes": total, "links": chips})
    t_ici = ask("t_ici", "gather onto the corner chip over ICI", "transfer.time", chip=p["chip"],
                given={"bytes": gathered, "links": 2, "W": link})
    t_hbm = ask("t_hbm", "reading the array from the corner chip's HBM", "transfer.time",
                chip=p["chip"], level="hbm", given={"bytes": total, "links": 1})
    t_flops = ask("t_flops", "time of the matmul's FLOPs on the corner chip", "matmul.t_math", chip=p["chip"],
                  dtype="bf16", given={"B": p["batch"], "D": p["rows"], "F": p["cols"]})

    links, nbytes, n_dev = sym("links"), sym("bytes"), sym("n_dev")
    values = {nbytes: total, n_dev: chips, links: 2, sym("W_pcie"): chip.pcie_bytes_per_s, sym("W_link"): link,
              sym("W_hbm"): chip.hbm_bytes_per_s, sym("B"): p["batch"], sym("D"): p["rows"],
              sym("F"): p["cols"], sym("C"): chip.flops_per_s["bf16"]}
    lower, upper = (d.at(values) for d in _bounds())
    return [t_pcie, t_ici, t_hbm, t_flops,
            Answer("t_lower", "total time with the stages perfectly overlapped", lower.value, "s", lower),
            Answer("t_upper", "total time with the stages one after another", upper.value, "s", upper)]


def check(p):
    chip = get_chip(p["chip"])
    x, y = (int(n) for n in p["slice"].split("x"))
    chips = x * y
    total = p["rows"] * p["cols"] * DTYPE_BYTES[p["dtype"]]
    # every chip pulls its own shard over its own PCIe link
    pcie = Fraction(total // chips, chip.pcie_bytes_per_s)
    # all shards but the corner chip's own come in over its two links (no wraparound)
    ici = Fraction(total - total // chips, 2 * chip.ici_link_bytes_per_s)
    hbm = Fraction(total, chip.hbm_bytes_per_s)
    flops = Fraction(2 * p["batch"] * p["rows"] * p["cols"], chip.flops_per_s["bf16"])
    stages = [pcie, ici, hbm, flops]
    return {"t_pcie": pcie, "t_ici": ici, "t_hbm": hbm, "t_flops": flops,
            "t_lower": max(stages), "t_upper": sum(stages)}


register(Generator("tpu_staged_copy", "tpu", "Loading, gathering and multiplying an offloaded array",
                   "tpus.md, 'Worked Problems' (Q6)", draw, solve, check))
