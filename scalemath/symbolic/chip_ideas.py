"""Ideas of the GPU and TPU chapters stated in words and priced here from the catalog's figures: a SHARP
AllReduce done by the spine (gpus.md Quiz 4 Q4), a warp whose threads take different branches (SIMT), how many
SMs a small elementwise op keeps busy (Quiz 1), and how much of a layer's weight load a prefetch into VMEM hides
(tpus.md, 'What Is a TPU?'; gpus.md, 'GPUs vs. TPUs at the chip level').

>>> elementwise_sms().at({sym("n_elem"): 1024, sym("n_sm"): 132, sym("n_sub"): 4, sym("n_lane"): 32}).value
8
>>> divergence_efficiency().at({sym("k_if"): 16, sym("c_if"): 10, sym("c_else"): 10}).value
1/2
"""

from __future__ import annotations

import functools

import sympy as sp

from . import topology as topo
from .chip_internals import WARP
from .derivation import Derivation, Step
from .symbols import sym

__all__ = ["sharp_spine_time", "sharp_spine_ring_time", "sharp_spine_speedup",
           "divergent_cycles", "divergence_efficiency", "divergence_slowdown",
           "elementwise_warps", "elementwise_sms", "elementwise_compute_slowdown",
           "vmem_layers_held", "vmem_prefetch_hidden_fraction", "vmem_prefetch_exposed_time",
           "dma_requests_per_s", "min_dma_bytes", "balanced_dcn_share", "split_time", "balanced_time"]

QUIZ4 = "gpus.md, 'Quiz 4: Collectives' (Q4)"
WHAT = "gpus.md, 'What Is a GPU?' (SIMT)"
QUIZ1 = "gpus.md, 'Quiz 1: GPU hardware' (the elementwise add)"
BALANCE = "tpus.md, 'Key Takeaways' (each channel's traffic in proportion to its speed)"
SCALAR = "tpus.md, 'Appendix C: TPU internals' (the scalar core)"
PREFETCH = "tpus.md, 'What Is a TPU?', and gpus.md, 'GPUs vs. TPUs at the chip level' (VMEM prefetch)"

V, D_spine = sym("V"), sym("D_spine")
c_if, c_else, k_if = sym("c_if"), sym("c_else"), sym("k_if")
n_elem, n_sm, n_sub, n_lane = sym("n_elem"), sym("n_sm"), sym("n_sub"), sym("n_lane")
B, P, P_out, L, b_w = sym("B"), sym("P"), sym("P_out"), sym("L"), sym("b_w")
C, W_hbm, M_vmem = sym("C"), sym("W_hbm"), sym("M_vmem")
cores, f_clk = sym("cores"), sym("f_clk")
W_ici, W_dcn, f_dcn = sym("W_ici"), sym("W_dcn"), sym("f_dcn")


# -- a SHARP AllReduce at the spine (Quiz 4 Q4) -------------------------------------------------------------------

def _uplink() -> tuple[Step, ...]:
    return topo.su_uplink().steps


@functools.cache
def sharp_spine_time() -> Derivation:
    up = _uplink()
    return Derivation("AllReduce of V bytes across scalable units, reduced in the spine switches (SHARP)", up + (Step(
        r"T_{\mathrm{AR}}^{\mathrm{spine}}", V / up[-1].expr,
        "each SU sends its V bytes up once and gets the reduced V back: the uplink carries V each way", "s"),),
        QUIZ4, note="Quiz 4 Q4 (Y = 256: an SU's 256 GPUs hold V = 2DF between them): 2DF/12.8e12 s on H100 with "
                    "3.2 TB/s IB switches; the book's answer, 2DF/6.4e12, takes the spine as 25.6 TB/s shared by "
                    "4 SUs (1.6 TB/s switches, as in its Appendix B).")


@functools.cache
def sharp_spine_ring_time() -> Derivation:
    up = _uplink()
    return Derivation("AllReduce of V bytes as a ring over D_spine scalable units (no SHARP)", up + (Step(
        r"T_{\mathrm{AR}}^{\mathrm{ring}}", 2 * V * (D_spine - 1) / (D_spine * up[-1].expr),
        "a ReduceScatter and an AllGather, each moving (D_spine - 1)/D_spine of V over every SU's uplink", "s"),),
        QUIZ4)


@functools.cache
def sharp_spine_speedup() -> Derivation:
    return Derivation("how much faster the spine's SHARP reduction is than a ring over the SUs", (Step(
        r"T_{\mathrm{ring}}/T_{\mathrm{SHARP}}", 2 * (D_spine - 1) / D_spine,
        "2V(D_spine - 1)/D_spine against V over the same uplink: 3/2 for 4 SUs, towards 2 for many", "1"),), QUIZ4)


# -- SIMT: a warp that diverges ------------------------------------------------------------------------------------

def _both() -> Step:
    return Step(r"t_{\mathrm{warp}}", c_if + c_else,
                "the warp's threads share one instruction stream: it runs the if path with the other threads "
                "masked off, then the else path with these masked", "cycle")


@functools.cache
def divergent_cycles() -> Derivation:
    return Derivation("cycles a warp spends on a branch its threads split over", (_both(),), WHAT)


@functools.cache
def divergence_efficiency() -> Derivation:
    both = _both()
    useful = Step(r"\mathrm{work}", k_if * c_if + (WARP - k_if) * c_else,
                  "lane-cycles that do work: k_if threads on the if path, the other 32 - k_if on the else path",
                  "cycle")
    return Derivation("share of a divergent warp's lane-cycles that do useful work", (both, useful, Step(
        r"\eta_{\mathrm{div}}", useful.expr / (WARP * both.expr), "over 32 lanes busy for the whole branch", "1")),
        WHAT)


@functools.cache
def divergence_slowdown() -> Derivation:
    both = _both()
    return Derivation("a divergent warp's branch time against threads running their own paths at once", (both, Step(
        r"t_{\mathrm{warp}}/t_{\mathrm{ideal}}", both.expr / sp.Max(c_if, c_else),
        "independent threads would finish with the longer path: 2 when the paths cost the same", "1")), WHAT)


# -- a small elementwise op (Quiz 1) -------------------------------------------------------------------------------

def _sms() -> tuple[Step, Step]:
    lanes = Step(r"n_{\mathrm{lane/SM}}", n_sub * n_lane, "CUDA cores per SM: subpartitions x lanes", "unit")
    return lanes, Step(r"n_{\mathrm{SM}}^{\mathrm{busy}}", sp.Min(n_sm, sp.ceiling(n_elem / lanes.expr)),
                       "one thread per element, one element per CUDA core at a time", "unit")


@functools.cache
def elementwise_warps() -> Derivation:
    return Derivation("warps an elementwise op over n_elem elements launches (one thread per element)", (Step(
        r"n_{\mathrm{warps}}", sp.ceiling(n_elem / WARP), "32 threads to a warp", "unit"),), QUIZ1)


@functools.cache
def elementwise_sms() -> Derivation:
    return Derivation("SMs an elementwise op over n_elem elements keeps busy", _sms(), QUIZ1,
                      note="Quiz 1: N = 1024 on an H100 uses 1024 CUDA cores, 8 of its 132 SMs.")


@functools.cache
def elementwise_compute_slowdown() -> Derivation:
    lanes, busy = _sms()
    return Derivation("how much longer a small elementwise op's math takes than with every SM busy", (
        lanes, busy, Step(r"n_{\mathrm{SM}}/n_{\mathrm{SM}}^{\mathrm{busy}}", n_sm / busy.expr,
                          "the vector FLOPs/s it can reach scale with the SMs it uses", "1")), QUIZ1,
        note="The book: 'roughly 16x longer' for N = 1024 on an H100 (132/8 = 16.5).")


# -- prefetching a layer's weights into VMEM -------------------------------------------------------------------

def _layer() -> tuple[Step, Step, Step]:
    weights = Step(r"M_{\mathrm{layer}}", b_w * (P - P_out) / L,
                   "one layer's weights: the parameters outside embeddings and head, split over L layers", "byte")
    load = Step(r"T_{\mathrm{load}}", weights.expr / W_hbm, "reading them from HBM", "s")
    math = Step(r"T_{\mathrm{math}}", 2 * B * (P - P_out) / (L * C),
                "the previous layer's matmuls over B tokens, the time a prefetch can overlap", "s")
    return weights, load, math


def _hidden() -> tuple[Step, ...]:
    weights, load, math = _layer()
    return weights, load, math, Step(r"M_{\mathrm{hidden}}", sp.Min(weights.expr, M_vmem, W_hbm * math.expr),
                                     "what arrives while the previous layer computes, as far as VMEM holds it",
                                     "byte")


@functools.cache
def vmem_layers_held() -> Derivation:
    weights = _layer()[0]
    return Derivation("layers' weights one chip's VMEM holds", (weights, Step(
        r"n_{\mathrm{layers}}^{\mathrm{VMEM}}", M_vmem / weights.expr, "VMEM capacity over one layer's weights",
        "layer")), PREFETCH)


@functools.cache
def vmem_prefetch_hidden_fraction() -> Derivation:
    steps = _hidden()
    return Derivation("share of a layer's weight load hidden by prefetching it into VMEM", steps + (Step(
        r"f_{\mathrm{hidden}}", steps[-1].expr / steps[0].expr,
        "all of it when VMEM holds the layer and the math outlasts the load", "1"),), PREFETCH)


@functools.cache
def vmem_prefetch_exposed_time() -> Derivation:
    steps = _hidden()
    return Derivation("weight-load time a VMEM prefetch leaves exposed, per layer", steps + (Step(
        r"T_{\mathrm{exposed}}", (steps[0].expr - steps[-1].expr) / W_hbm,
        "the bytes not yet in VMEM when the layer starts, read at HBM bandwidth", "s"),), PREFETCH)


# -- the TPU's scalar core: one DMA request per cycle ------------------------------------------------------------

def _requests() -> Step:
    return Step(r"r_{\mathrm{DMA}}", cores * f_clk,
                "each core's single-threaded scalar unit issues at most one DMA request a cycle", "1/s")


@functools.cache
def dma_requests_per_s() -> Derivation:
    return Derivation("most DMA requests one TPU chip's scalar cores issue per second", (_requests(),), SCALAR)


@functools.cache
def min_dma_bytes() -> Derivation:
    requests = _requests()
    return Derivation("smallest DMA, on average, that keeps HBM at its bandwidth", (requests, Step(
        r"\mathrm{bytes}_{\mathrm{DMA}}", W_hbm / requests.expr,
        "HBM's bytes per second over the requests per second: smaller transfers leave HBM idle", "byte")), SCALAR)


# -- traffic in proportion to each channel's speed: ICI and DCN at once --------------------------------------------

def _share() -> Step:
    return Step(r"f_{\mathrm{DCN}}^*", W_dcn / (W_ici + W_dcn),
                "both channels finish together when each carries bytes in proportion to its bandwidth", "1")


@functools.cache
def balanced_dcn_share() -> Derivation:
    return Derivation("share of a transfer DCN should carry while one ICI axis carries the rest", (_share(),),
                      BALANCE)


@functools.cache
def split_time() -> Derivation:
    dcn = Step(r"T_{\mathrm{DCN}}", f_dcn * V / W_dcn, "the share f_dcn over DCN", "s")
    ici = Step(r"T_{\mathrm{ICI}}", (1 - f_dcn) * V / W_ici, "the rest over one ICI axis", "s")
    return Derivation("time of V bytes split between DCN (a share f_dcn) and one ICI axis", (dcn, ici, Step(
        r"T", sp.Max(dcn.expr, ici.expr), "the slower channel sets the time", "s")), BALANCE)


@functools.cache
def balanced_time() -> Derivation:
    share = _share()
    return Derivation("time of V bytes split between DCN and one ICI axis in proportion to their bandwidths", (
        share, Step(r"T^*", V / (W_ici + W_dcn), "both channels busy for the whole transfer", "s")), BALANCE)
