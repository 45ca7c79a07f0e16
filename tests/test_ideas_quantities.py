"""Quantities added for ideas the book index (docs/reference/book_ideas.toml) had as partial or absent.

Each value is recomputed from the catalog's own integers in plain fractions, and held against the book's
figure where it prints one.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from scalemath.catalog.hardware import default_catalog, get_chip
from scalemath.quantities import Context, evaluate, get

TPUS_WITH_PCIE = [c.key for c in default_catalog().every_chip() if c.family == "tpu" and c.pcie_bytes_per_s]


def value(quantity, chip, **given):
    return evaluate(get(quantity), Context(chip=chip), given).value


@pytest.mark.parametrize("chip", TPUS_WITH_PCIE)
def test_hbm_over_pcie(chip):
    c = get_chip(chip)
    assert value("tpu.ratio.hbm_to_pcie", chip) == sp.Rational(Fraction(c.hbm_bytes_per_s, c.pcie_bytes_per_s))


@pytest.mark.parametrize("chip, expected", [
    ("tpu-v4p", 75),  # tpus.md 'What Is a TPU?': PCIe "close to 100x" below HBM; 1.2e12 / 1.6e10 = 75
    ("tpu-v5e", sp.Rational(820, 16)),  # 8.2e11 / 1.6e10 = 51.25
])
def test_hbm_over_pcie_book_figures(chip, expected):
    assert value("tpu.ratio.hbm_to_pcie", chip) == expected


def test_vpu_critical_intensity_v5p():
    # roofline.md footnote: the v5p VPU at about 7e12 FLOPs/s per core, critical intensity "about 3";
    # per chip (two cores, 1.4e13) against 2.8e12 B/s of HBM the ridge is at 5 FLOPs per byte.
    c = get_chip("tpu-v5p")
    expected = Fraction(c.flops("fp32"), c.hbm_bytes_per_s)
    assert expected == 5
    assert value("tpu.vpu.critical_intensity", "tpu-v5p") == sp.Rational(expected)
    per_core = Fraction(c.flops("fp32"), c.cores_per_chip * c.hbm_bytes_per_s)
    assert 2 < per_core < 3  # the footnote's "about 3" is one core's rate against the chip's HBM


def test_vpu_critical_intensity_is_symbolic_without_a_chip():
    from scalemath.symbolic.chip_internals import vpu_critical_intensity
    from scalemath.symbolic.symbols import sym

    assert vpu_critical_intensity().steps[-1].expr == sym("C_vec") / sym("W_hbm")
