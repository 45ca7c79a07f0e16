"""2D weight-stationary decode, piece by piece (inference.md, Worked Problem 7 and Appendix B): what each chip
holds when the MLP's weights are sharded W_in[D_X, F_YZ] and W_out[F_YZ, D_X], the three collectives of the
book's algorithm with the bytes each moves, and the largest chip count at which the step stays compute-bound
at the best X.

The book's algorithm, on n = X·Y·Z chips:

1. In[B, D_X] = AllGather_YZ(In[B, D_XYZ])
2. Tmp[B, F_YZ] {U.X} = In[B, D_X] ·_D W_in[D_X, F_YZ]
3. Tmp[B, F_YZ] = AllReduce_X(Tmp[B, F_YZ] {U.X})
4. Out[B, D_X] {U.YZ} = Tmp[B, F_YZ] ·_F W_out[F_YZ, D_X]
5. Out[B, D_XYZ] = ReduceScatter_YZ(Out[B, D_X] {U.YZ})

A collective over Y and Z runs over both axes at once (twice one axis's bandwidth W_ici); an AllReduce costs
twice an AllGather of the same array. The sum of the three is :func:`.model_parallel.ws2d_t_comms`'s T_2D.
"""

from __future__ import annotations

import functools

from ..derivation import Derivation, Step, crossover
from .common import _NOT_IN_BOOK, APPENDIX_B, B, D, F, W_ici, X, b_w, b_x, n
from .model_parallel import ws2d_t_comms_opt, ws2d_t_math

__all__ = ["ws2d_weight_bytes_per_chip", "ws2d_collectives", "ws2d_max_chips_compute_bound"]


@functools.cache
def ws2d_weight_bytes_per_chip() -> Derivation:
    block = Step(r"\mathrm{bytes}_{W_{\mathrm{in}}}", b_w * D * F / n,
                 "W_in[D_X, F_YZ]: a [D/X, F/YZ] block on each chip, X·YZ = n", "byte")
    return Derivation("2D weight-stationary decode: weight bytes each chip holds per MLP", (
        block,
        Step(r"\mathrm{bytes}_{\mathrm{chip}}", 2 * block.expr,
             "W_out[F_YZ, D_X] is a block of the same size: both matrices, 1/n of the MLP each", "byte"),
    ), APPENDIX_B)


@functools.cache
def ws2d_collectives() -> Derivation:
    gathered = Step(r"\mathrm{bytes}_{\mathrm{In}}", b_x * B * D / X,
                    "after step 1 each chip holds In[B, D_X]: its X-share of the activations", "byte")
    gather = Step(r"T_{\mathrm{AG}}", gathered.expr / (2 * W_ici),
                  "step 1, AllGather over Y and Z at once: the gathered array over twice one axis's bandwidth", "s")
    partial = Step(r"\mathrm{bytes}_{\mathrm{Tmp}}", b_x * B * F * X / n,
                   "each chip's partial sums Tmp[B, F_YZ] {U.X}: F split over the YZ = n/X chips", "byte")
    reduce = Step(r"T_{\mathrm{AR}}", 2 * partial.expr / W_ici,
                  "step 3, AllReduce over X: twice an AllGather of Tmp on the one axis X", "s")
    scatter = Step(r"T_{\mathrm{RS}}", gathered.expr / (2 * W_ici),
                   "step 5, ReduceScatter over Y and Z of Out[B, D_X] {U.YZ}: the AllGather's bytes in reverse", "s")
    return Derivation("2D weight-stationary decode: the three collectives of one MLP and their bytes", (
        gathered, gather, partial, reduce, scatter,
        Step(r"T_{\mathrm{2D}}", gather.expr + reduce.expr + scatter.expr,
             "one after the other: 2BD/(X·W_ici) + 4BF/(YZ·W_ici) in bf16, the book's T_2D", "s"),
    ), APPENDIX_B)


@functools.cache
def ws2d_max_chips_compute_bound() -> Derivation:
    d = crossover(ws2d_t_math().expr, ws2d_t_comms_opt().expr, n,
                  title="2D weight-stationary decode: most chips at which the MLP stays compute-bound at the best X",
                  source=APPENDIX_B, lhs_label=r"T_{\mathrm{math}}", rhs_label=r"T_{\mathrm{2D}}^*", side_unit="s",
                  label=r"n_{\max}", unit="chip",
                  why="compute falls as 1/n, the best communication only as 1/sqrt(n): n = 2DF·W_ici²/(b_x²·C²), "
                      "independent of the batch")
    return Derivation(d.title, d.steps, d.source, True,
                      _NOT_IN_BOOK + " (the book notes that 2D keeps cutting communication while comms-bound)")
