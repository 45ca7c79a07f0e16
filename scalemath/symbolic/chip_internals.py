"""Inside one chip (book parts 2 and 12): a GPU's SMs, registers, SMEM, Tensor Cores and CUDA cores; a TPU's
vector unit; the ratios between the memory and network levels of one chip.

Counts are exact products of the catalog's per-unit numbers, so a quiz's arithmetic ("132 SMs x 4
subpartitions x 32 lanes") is a derivation whose steps a reader can follow.

>>> cuda_cores().at({sym("n_sm"): 132, sym("n_sub"): 4, sym("n_lane"): 32}).value
16896
>>> resident_warps().at({sym("n_sub"): 4, sym("n_reg"): 16384, sym("r_thread"): 256, sym("n_warp"): 64}).value
8
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step
from .symbols import sym

__all__ = [
    # GPU: counts
    "sm_cuda_cores", "cuda_cores", "warp_schedulers", "tensor_cores",
    # GPU: on-chip memory
    "sm_register_bytes", "register_bytes", "smem_bytes", "onchip_bytes", "sm_l2_bytes", "resident_warps",
    # GPU: FLOPs
    "sm_tensor_flops", "tensor_core_flops_per_cycle", "tensor_core_implied_clock",
    "vector_flops", "vector_implied_clock", "tensor_to_vector_ratio", "tensor_to_vector_ratio_no_fma",
    "vector_critical_intensity_no_fma",
    # TPU vector unit and ICI
    "vpu_alus_per_core", "vpu_alus", "vpu_flops_per_core", "vpu_flops", "vpu_mxu_ratio", "vpu_hbm_intensity",
    "ici_egress",
    "slice_hbm_bandwidth",
    # ratios between levels
    "RATIOS", "bandwidth_ratio",
]

WHAT = "gpus.md, 'What Is a GPU?'"
MEMORY = "gpus.md, 'Memory'"
QUIZ1 = "gpus.md, 'Quiz 1: GPU hardware'"
VERSUS = "gpus.md, 'GPUs vs. TPUs at the chip level'"
TPU_A = "tpus.md, Appendix A (TPU internals); roofline.md, the vector-unit footnote"
TPU_NET = "tpus.md, 'TPU Networking'; gpus.md, 'Beyond the node level' (v5p: 6 links x 90 GB/s)"
SPECS = "tpus.md, 'TPU Specs'; gpus.md, 'Summary of GPU specs'"

n_sm, n_sub, n_lane, n_tc = sym("n_sm"), sym("n_sub"), sym("n_lane"), sym("n_tc")
n_reg, b_reg, r_thread, n_warp = sym("n_reg"), sym("b_reg"), sym("r_thread"), sym("n_warp")
M_smem, M_l2, W_l2 = sym("M_smem"), sym("M_l2"), sym("W_l2")
C, C_vec, F_tc, f_clk, f_boost = sym("C"), sym("C_vec"), sym("F_tc"), sym("f_clk"), sym("f_boost")
W_hbm, W_vmem, W_ici, W_link, W_dcn, W_pcie = (sym(n) for n in ("W_hbm", "W_vmem", "W_ici", "W_link", "W_dcn",
                                                               "W_pcie"))
W_gpu, W_nic, W_node = sym("W_gpu"), sym("W_nic"), sym("W_node")
n_sublane, n_vlane, n_alu, n_ici, cores = sym("n_sublane"), sym("n_vlane"), sym("n_alu"), sym("n_ici"), sym("cores")
X, Y, Z = sym("X"), sym("Y"), sym("Z")

#: threads in one warp (every NVIDIA generation)
WARP = 32


# -- GPU: how many of each unit --------------------------------------------------------------------

def _per_sm_lanes() -> Step:
    return Step(r"n_{\mathrm{CUDA/SM}}", n_sub * n_lane, "each subpartition has its own fp32 lanes", "unit")


def _lanes() -> Step:
    return Step(r"n_{\mathrm{CUDA}}", n_sm * n_sub * n_lane, "lanes per SM times SMs", "unit")


@functools.cache
def sm_cuda_cores() -> Derivation:
    return Derivation("fp32 CUDA cores per SM", (_per_sm_lanes(),), WHAT)


@functools.cache
def cuda_cores() -> Derivation:
    return Derivation("fp32 CUDA cores (vector ALUs) per GPU", (_per_sm_lanes(), _lanes()), QUIZ1)


@functools.cache
def warp_schedulers() -> Derivation:
    return Derivation("warp schedulers (independent 32-wide SIMD units) per GPU", (Step(
        r"n_{\mathrm{sched}}", n_sm * n_sub, "one warp scheduler per subpartition", "unit"),), VERSUS)


@functools.cache
def tensor_cores() -> Derivation:
    return Derivation("Tensor Cores per GPU", (Step(
        r"n_{\mathrm{TC}}^{\mathrm{chip}}", n_sm * n_tc, "Tensor Cores per SM times SMs", "unit"),), VERSUS)


# -- GPU: registers, SMEM, L2 ---------------------------------------------------------------------------

def _sm_registers() -> Step:
    return Step(r"M_{\mathrm{reg/SM}}", n_sub * n_reg * b_reg,
                "each subpartition's registers, 4 bytes (32 bits) each", "byte")


@functools.cache
def sm_register_bytes() -> Derivation:
    return Derivation("register file per SM", (_sm_registers(),), MEMORY)


@functools.cache
def register_bytes() -> Derivation:
    return Derivation("registers per GPU", (_sm_registers(), Step(
        r"M_{\mathrm{reg}}", n_sm * _sm_registers().expr, "every SM's register file", "byte")), QUIZ1)


@functools.cache
def smem_bytes() -> Derivation:
    return Derivation("SMEM (L1) per GPU", (Step(
        r"M_{\mathrm{SMEM}}^{\mathrm{chip}}", n_sm * M_smem, "every SM's SMEM", "byte"),), QUIZ1)


@functools.cache
def onchip_bytes() -> Derivation:
    smem = Step(r"M_{\mathrm{SMEM}}^{\mathrm{chip}}", n_sm * M_smem, "every SM's SMEM", "byte")
    regs = Step(r"M_{\mathrm{reg}}", n_sm * _sm_registers().expr, "every SM's register file", "byte")
    return Derivation("SMEM and registers per GPU (the fast memory a kernel controls)", (
        smem, regs, Step(r"M_{\mathrm{on\text{-}chip}}", smem.expr + regs.expr, "the two add up", "byte")), QUIZ1)


@functools.cache
def sm_l2_bytes() -> Derivation:
    return Derivation("L2 per SM (an even share of the chip's L2)", (Step(
        r"M_{\mathrm{L2/SM}}", M_l2 / n_sm, "the L2 is shared by every SM", "byte"),), MEMORY)


@functools.cache
def resident_warps() -> Derivation:
    threads = Step(r"\mathrm{threads}", n_sub * n_reg / r_thread,
                   "the SM's registers split among threads that use r_thread each", "unit")
    by_regs = Step(r"\mathrm{warps}_{\mathrm{reg}}", sp.floor(threads.expr / WARP), "32 threads to a warp", "unit")
    return Derivation("warps resident on one SM", (threads, by_regs, Step(
        r"\mathrm{warps}", sp.Min(n_warp, by_regs.expr), "the scheduler holds at most n_warp warps", "unit")),
        MEMORY)


# -- GPU: FLOPs --------------------------------------------------------------------------------------------------

@functools.cache
def sm_tensor_flops() -> Derivation:
    return Derivation("Tensor Core FLOPs/s per SM", (Step(
        r"C_{\mathrm{SM}}", C / n_sm, "the chip's peak split over its SMs", "FLOP/s"),), WHAT)


@functools.cache
def tensor_core_flops_per_cycle() -> Derivation:
    per_sm = Step(r"C_{\mathrm{SM}}", C / n_sm, "the chip's peak split over its SMs", "FLOP/s")
    return Derivation("FLOPs per Tensor Core per cycle", (per_sm, Step(
        r"F_{\mathrm{TC}}", per_sm.expr / (f_clk * n_sub),
        "per cycle, over one Tensor Core per subpartition (the book's 'divide by 4')", "FLOP")), WHAT)


@functools.cache
def tensor_core_implied_clock() -> Derivation:
    per_cycle = Step(r"F_{\mathrm{chip}}", n_sm * n_sub * F_tc, "FLOPs per cycle of every Tensor Core", "FLOP")
    return Derivation("clock implied by the peak and the FLOPs per Tensor Core per cycle", (per_cycle, Step(
        r"f", C / per_cycle.expr, "peak FLOPs/s over FLOPs per cycle", "Hz")), WHAT)


@functools.cache
def vector_flops(clock: str = "base", fma: bool = False) -> Derivation:
    """fp32 CUDA-core FLOPs/s at the base or boost clock, an FMA counted as 1 or 2 FLOPs."""
    f = {"base": f_clk, "boost": f_boost}[clock]
    per = 2 if fma else 1
    why = ("an FMA counted as 2 FLOPs (NVIDIA's spec-sheet convention)" if fma
           else "one vector op per lane per cycle (an FMA counted once)")
    return Derivation(f"fp32 vector FLOPs/s at the {clock} clock{' (FMA = 2 FLOPs)' if fma else ''}", (
        _per_sm_lanes(), _lanes(), Step(r"C_{\mathrm{vec}}", per * _lanes().expr * f, why, "FLOP/s")), QUIZ1)


@functools.cache
def vector_implied_clock() -> Derivation:
    per_cycle = Step(r"F_{\mathrm{vec}}", 2 * _lanes().expr, "2 FLOPs (an FMA) per lane per cycle", "FLOP")
    return Derivation("clock implied by the vector FLOPs/s", (_per_sm_lanes(), _lanes(), per_cycle, Step(
        "f", C_vec / per_cycle.expr, "vector FLOPs/s over FLOPs per cycle", "Hz")), QUIZ1)


@functools.cache
def tensor_to_vector_ratio() -> Derivation:
    return Derivation("Tensor Core over CUDA-core FLOPs/s (FMA = 2 FLOPs)", (Step(
        r"C / C_{\mathrm{vec}}", C / C_vec, "matmul peak over vector peak", "1"),), WHAT)


@functools.cache
def tensor_to_vector_ratio_no_fma() -> Derivation:
    vec = Step(r"C_{\mathrm{vec}}", _lanes().expr * f_boost, "one op per lane per cycle at the boost clock",
               "FLOP/s")
    return Derivation("Tensor Core over CUDA-core FLOPs/s (one FLOP per lane per cycle, boost clock)", (
        _lanes(), vec, Step(r"C / C_{\mathrm{vec}}", C / vec.expr, "matmul peak over vector peak", "1")), QUIZ1)


@functools.cache
def vector_critical_intensity_no_fma() -> Derivation:
    vec = Step(r"C_{\mathrm{vec}}", _lanes().expr * f_boost, "one op per lane per cycle at the boost clock",
               "FLOP/s")
    return Derivation("critical intensity of the CUDA cores against HBM (no FMA)", (
        _lanes(), vec, Step(r"\mathrm{AI}^*_{\mathrm{vec}}", vec.expr / W_hbm, "vector FLOPs/s over HBM bytes/s",
                            "FLOP/byte")), QUIZ1)


# -- TPU: the vector unit, ICI egress, a slice's HBM ------------------------------------------------------------

def _vpu_alus() -> Step:
    return Step(r"n_{\mathrm{ALU/core}}", n_sublane * n_vlane * n_alu, "sublanes x lanes x ALUs per lane", "unit")


@functools.cache
def vpu_alus_per_core() -> Derivation:
    return Derivation("vector ALUs per TensorCore", (_vpu_alus(),), TPU_A)


@functools.cache
def vpu_alus() -> Derivation:
    return Derivation("vector ALUs per TPU chip", (_vpu_alus(), Step(
        r"n_{\mathrm{ALU}}", cores * _vpu_alus().expr, "every TensorCore's VPU", "unit")), QUIZ1)


@functools.cache
def vpu_flops_per_core() -> Derivation:
    return Derivation("fp32 vector FLOPs/s per TensorCore", (_vpu_alus(), Step(
        r"C_{\mathrm{VPU/core}}", _vpu_alus().expr * f_clk, "one op per ALU per cycle", "FLOP/s")), TPU_A)


@functools.cache
def vpu_flops() -> Derivation:
    per_core = Step(r"C_{\mathrm{VPU/core}}", _vpu_alus().expr * f_clk, "one op per ALU per cycle", "FLOP/s")
    return Derivation("fp32 vector FLOPs/s per TPU chip", (_vpu_alus(), per_core, Step(
        r"C_{\mathrm{vec}}", cores * per_core.expr, "every TensorCore's VPU", "FLOP/s")), TPU_A)


@functools.cache
def vpu_mxu_ratio() -> Derivation:
    return Derivation("MXU over VPU FLOPs/s", (Step(
        r"C / C_{\mathrm{vec}}", C / C_vec, "matmul peak over vector peak, both per chip", "1"),), TPU_A)


@functools.cache
def vpu_hbm_intensity() -> Derivation:
    return Derivation("critical intensity of the VPU against HBM", (Step(
        r"\mathrm{AI}^*_{\mathrm{VPU}}", C_vec / W_hbm,
        "vector FLOPs/s of the whole chip over its HBM bytes/s (the footnote's 'about 3' takes one core's rate)",
        "FLOP/byte"),), "roofline.md, 'Where Does the Time Go?' (the vector-unit footnote)")


@functools.cache
def ici_egress() -> Derivation:
    return Derivation("ICI egress of one TPU over all its links, one direction", (Step(
        r"W_{\mathrm{ICI}}^{\mathrm{out}}", n_ici * W_link, "links times one link's one-way bandwidth", "byte/s"),),
        TPU_NET)


@functools.cache
def slice_hbm_bandwidth() -> Derivation:
    chips = Step(r"n_{\mathrm{chips}}", X * Y * Z, "the sizes of the axes multiplied", "chip")
    return Derivation("aggregate HBM bandwidth of a pod or slice", (chips, Step(
        r"W_{\mathrm{hbm}}^{\mathrm{pod}}", chips.expr * W_hbm, "every chip reads its own HBM at once", "byte/s")),
        "tpus.md, 'Worked Problems' (Q2)")


# -- ratios between levels ------------------------------------------------------------------------------------

#: name -> (numerator, denominator, what the ratio says)
RATIOS = {
    "vmem_to_hbm": (W_vmem, W_hbm, "VMEM over HBM bandwidth (the book's rule of thumb: about 22 on v5e)"),
    "hbm_to_ici": (W_hbm, W_ici, "HBM bandwidth over one torus axis's ICI (both links)"),
    "hbm_to_ici_egress": (W_hbm, n_ici * W_link, "HBM bandwidth over ICI egress on every link"),
    "ici_to_dcn": (W_ici, W_dcn, "one ICI axis over DCN egress per chip"),
    "ici_to_pcie": (W_ici, W_pcie, "one ICI axis over PCIe per chip"),
    "hbm_to_pcie": (W_hbm, W_pcie, "HBM bandwidth over PCIe per chip (the book: close to 100x)"),
    "l2_to_hbm": (W_l2, W_hbm, "L2 over HBM bandwidth (the book: about 1.6 on H100)"),
    "hbm_to_nvlink": (W_hbm, W_gpu, "HBM bandwidth over NVLink egress per GPU"),
    "nvlink_to_nic": (W_gpu, W_nic, "NVLink egress over scale-out NIC bandwidth per GPU"),
}


@functools.cache
def bandwidth_ratio(name: str) -> Derivation:
    num, den, what = RATIOS[name]
    return Derivation(f"bandwidth ratio: {what}", (Step(
        r"r", num / den, "how many times faster the first level is", "1"),), SPECS)
