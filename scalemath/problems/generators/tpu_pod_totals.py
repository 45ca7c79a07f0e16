"""Totals of a TPU pod or slice: chips, hosts, TensorCores, FLOPs/s and HBM (tpus.md, worked problem 2)."""

from __future__ import annotations

from ...catalog.hardware import get_chip
from ..draws import ask, pick, pick_chip
from ..registry import Generator, register, reject_if

SIDES_2D = (2, 4, 8, 16)
SHAPES_3D = ((2, 2, 1), (2, 2, 2), (2, 2, 4), (4, 4, 4), (4, 4, 8), (4, 4, 16), (4, 8, 8),
             (8, 8, 8), (8, 8, 16), (8, 16, 16), (16, 16, 16))
NEEDS = ("pod_shape", "host_shape", "cores_per_chip")


def _shape_text(shape) -> str:
    return "x".join(str(n) for n in shape)


def _fits(shape, pod) -> bool:
    return len(shape) == len(pod) and all(a <= b for a, b in zip(sorted(shape), sorted(pod)))


def draw(rng):
    chip = pick_chip(rng, family="tpu", needs=NEEDS)
    if rng.randrange(3) == 0:
        shape, whole = chip.pod_shape, 1
    else:
        if len(chip.pod_shape) == 2:
            shape = (pick(rng, SIDES_2D), pick(rng, SIDES_2D))
        else:
            shape = pick(rng, SHAPES_3D)
        whole = int(tuple(shape) == tuple(chip.pod_shape))
        reject_if(not _fits(shape, chip.pod_shape), "the slice must fit inside the pod")
    chips = 1
    for n in shape:
        chips *= n
    reject_if(chips % chip.host_chips != 0, "a slice is a whole number of hosts")
    return {"chip": chip.key, "shape": _shape_text(shape), "pod": whole,
            "host_shape": _shape_text(chip.host_shape)}


def _axes(p) -> dict:
    sizes = [int(n) for n in p["shape"].split("x")]
    sizes += [1] * (3 - len(sizes))
    return dict(zip("XYZ", sizes))


def solve(p):
    axes, chip = _axes(p), p["chip"]
    return [
        ask("chips", "chips", "pod.chips", chip=chip, given=axes),
        ask("hosts", "hosts", "pod.hosts", chip=chip, given=axes),
        ask("cores", "TensorCores", "pod.cores", chip=chip, given=axes),
        ask("flops", "peak bf16 FLOPs/s", "pod.flops_per_s", chip=chip, dtype="bf16", given=axes),
        ask("hbm", "HBM capacity", "pod.hbm_bytes", chip=chip, given=axes),
    ]


def check(p):
    chip = get_chip(p["chip"])
    chips = 1
    for n in p["shape"].split("x"):
        chips *= int(n)
    per_host = 1
    for n in chip.host_shape:
        per_host *= n
    return {"chips": chips, "hosts": chips // per_host, "cores": chips * chip.cores_per_chip,
            "flops": chips * chip.flops_per_s["bf16"], "hbm": chips * chip.hbm_bytes}


register(Generator("tpu_pod_totals", "tpu", "Totals of a TPU pod or slice",
                   "tpus.md, 'Worked Problems' (Q2)", draw, solve, check))
