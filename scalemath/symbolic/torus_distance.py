"""Average distances on a TPU's torus (tpus.md, 'TPU Networking'): a ring of N chips with and without its
wraparound link, and the rectangular twisted torus the book says "lowers the average distance further".

Averages are over every destination a chip can send to, itself included (distance 0), so a torus's average is
the sum of its axes' averages. A ring's distance to the chip d places on is min(d, N - d); summed over d that is
floor(N^2/4). A line (no wraparound) averages |i - j| over all ordered pairs: (N^2 - 1)/(3N).

The twisted torus is the 2a x a rectangular twisted torus of Camara, Moreto, Vallejo, Beivide, Miguel-Alonso,
Martinez and Navaridas, 'Twisted Torus Topologies for Enhanced Interconnection Networks' (IEEE TPDS 21(12), 2010):
a 2a x a torus whose wraparound links along the short axis land a chips further round the long axis. Its
average distance (4a^2 - 1)/(6a) is counted by breadth-first search in tests/test_ideas_hardware.py for a = 1..12;
against the plain 2a x a torus's a/2 + floor(a^2/4)/a it tends to (2a/3)/(3a/4) = 8/9. TPU v4 offers twisted
3D slices (k x k x 2k; Jouppi et al., 'TPU v4', ISCA 2023); the book gives no figure for them.

>>> ring_average_hops(True).at({sym("N"): 16}).value
4
>>> twisted_average_hops().at({sym("a_tw"): 8}).value
85/16
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step
from .symbols import sym

__all__ = ["ring_average_hops", "torus_2a_average_hops", "twisted_average_hops", "twisted_distance_ratio"]

NETWORKING = "tpus.md, 'TPU Networking'"
TWISTED = (NETWORKING + "; the 2a x a rectangular twisted torus of Camara et al., IEEE TPDS 21(12), 2010 "
           "(average distance counted by breadth-first search)")

N, a = sym("N"), sym("a_tw")


@functools.cache
def ring_average_hops(wraparound: bool) -> Derivation:
    if wraparound:
        total = Step(r"\sum_d \mathrm{hops}", sp.floor(N ** 2 / 4),
                     "the chip d places on is min(d, N - d) hops away; summed over d = 0..N-1", "hop")
        avg = Step(r"\overline{\mathrm{hops}}", total.expr / N, "over the N destinations, itself included", "hop")
        return Derivation("average hops from a chip to the chips of a ring of N (with wraparound)", (total, avg),
                          NETWORKING)
    return Derivation("average hops between two chips of an axis of N without wraparound", (Step(
        r"\overline{\mathrm{hops}}", (N ** 2 - 1) / (3 * N),
        "|i - j| averaged over all N^2 ordered pairs of a line: (N^2 - 1)/3 over N", "hop"),), NETWORKING)


def _plain() -> Step:
    return Step(r"\overline{\mathrm{hops}}_{\mathrm{torus}}", a / 2 + sp.floor(a ** 2 / 4) / a,
                "a 2a x a torus: the long ring's average floor(4a^2/4)/(2a) = a/2 plus the short ring's "
                "floor(a^2/4)/a", "hop")


def _twisted() -> Step:
    return Step(r"\overline{\mathrm{hops}}_{\mathrm{twisted}}", (4 * a ** 2 - 1) / (6 * a),
                "the short axis's wraparound links land a chips round the long axis: counted by breadth-first "
                "search, 2a/3 - 1/(6a)", "hop")


@functools.cache
def torus_2a_average_hops() -> Derivation:
    return Derivation("average hops on a plain 2a x a torus", (_plain(),), NETWORKING)


@functools.cache
def twisted_average_hops() -> Derivation:
    return Derivation("average hops on a 2a x a twisted torus", (_plain(), _twisted()), TWISTED)


@functools.cache
def twisted_distance_ratio() -> Derivation:
    plain, twisted = _plain(), _twisted()
    return Derivation("average distance of a 2a x a twisted torus over the plain torus's", (plain, twisted, Step(
        r"\rho_{\mathrm{twist}}", twisted.expr / plain.expr, "tends to (2a/3)/(3a/4) = 8/9 as a grows", "1")),
        TWISTED)
