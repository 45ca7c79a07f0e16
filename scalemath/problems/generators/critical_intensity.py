"""Critical arithmetic intensity of a real chip, dtype and memory level (roofline.md)."""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import ask, pick, pick_chip
from ..registry import Generator, register

LEVELS = ("hbm", "hbm", "hbm", "ici", "pcie", "nvlink")


def draw(rng):
    level = pick(rng, LEVELS)
    chip = pick_chip(rng, levels=[level])
    dtype = pick(rng, sorted(chip.flops_per_s))
    return {"chip": chip.key, "dtype": dtype, "level": level}


def solve(p):
    return [ask("critical_intensity", "critical intensity", "roofline.critical_intensity",
                chip=p["chip"], dtype=p["dtype"], level=p["level"])]


def check(p):
    chip = get_chip(p["chip"])
    raw = {"hbm": chip.hbm_bytes_per_s, "pcie": chip.pcie_bytes_per_s, "nvlink": chip.nvlink_bytes_per_s,
           "ici": None if chip.ici_link_bytes_per_s is None else chip.ici_link_bytes_per_s * 2}[p["level"]]
    return {"critical_intensity": Fraction(chip.flops_per_s[p["dtype"]], raw)}


register(Generator("critical_intensity", "roofline", "Critical arithmetic intensity",
                   "roofline.md, 'Where Does the Time Go?'", draw, solve, check))
