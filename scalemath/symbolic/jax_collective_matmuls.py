"""The JAX chapter's Problems 3 and 4: the ReduceScatter and AllReduce collective matmuls, and a whole block.

:mod:`scalemath.symbolic.jax_collectives` prices the AllGather collective matmul of the chapter's example. Its
problems ask for the other two a Transformer block needs, each overlapping its collective with matmuls:

* **ReduceScatter collective matmul** (the down-projection), Tmp[B_X, F_Y] ·_F W2[F_Y, D] -> Out[B_X, D_Y]. Each
  device owes every other device a partial sum of one D/Y-wide chunk. Instead of computing the whole partial
  [B/X, D] and reduce-scattering it, the chunks' accumulators travel around the Y ring: in each round a device
  multiplies its Tmp by the W2 columns of the chunk whose accumulator it holds, adds, and passes the accumulator on.
  Only the accumulator [B/X, D/Y] moves, never the inputs.
* **AllReduce collective matmul**, A[B_X, D_Y] ·_D W[D_Y, F] -> Out[B_X, F]: the output is tiled over F into Y
  tiles; each tile's partial sum is psum'd while the next tile is multiplied. The last tile's psum waits for
  nothing to hide it, which is why the chapter warns it may not beat the baseline.
* **The block** In[B_X, D_Y] ·_D W_in[D, F_Y] ·_F W_out[F_Y, D] -> Out[B_X, D_Y]: the AllGather collective matmul
  into the ReduceScatter one, against ``jax.jit``'s AllGather, two matmuls and a ReduceScatter; its speed-up is
  taken on bidirectional rings (Problem 4), as the chapter's own collective matmul speed-up is.

The unidirectional rings move one chunk one hop per round over one link (W_link); the bidirectional ones send
half of the ring's bytes each way, so their transfers take the exact ring collective's time over W_ici.

>>> rs_collective_matmul_critical_f().expr
C*Y*b_x/(2*W_link)
"""

from __future__ import annotations

import functools

import sympy as sp

from . import collectives as coll
from .derivation import Derivation, Step, crossover
from .jax_collectives import (collective_matmul_time, collective_matmul_time_bidirectional,
                              collective_matmul_time_naive, ppermute_time)
from .symbols import sym

__all__ = [
    "rs_collective_matmul_chunk_math", "rs_collective_matmul_chunk_comms", "rs_collective_matmul_time",
    "rs_collective_matmul_time_bidirectional", "rs_collective_matmul_time_naive", "rs_collective_matmul_critical_f",
    "ar_collective_matmul_time", "ar_collective_matmul_time_naive", "block_collective_time",
    "block_collective_time_bidirectional", "block_collective_time_naive", "block_collective_speedup",
]

PROBLEMS = "jax-stuff.md, 'Problems' 3 and 4 (the AllReduce and ReduceScatter collective matmuls, the block)"

V, N = sym("V"), sym("N")
B, D, F, X, Y = sym("B"), sym("D"), sym("F"), sym("X"), sym("Y")
C, b_x, W_link = sym("C"), sym("b_x"), sym("W_link")


# -- ReduceScatter collective matmul: Tmp[B_X, F_Y] ·_F W2[F_Y, D] -> Out[B_X, D_Y] ------------------------------

def _rs_chunk() -> tuple[Step, Step]:
    return (Step(r"\mathrm{acc}", (B / X) * (D / Y) * b_x,
                 "bytes of one accumulator, [B/X, D/Y]: the only thing a round passes on", "byte"),
            Step(r"\mathrm{FLOPs}_{\mathrm{chunk}}", 2 * (B / X) * (F / Y) * (D / Y),
                 "one chunk matmul: Tmp[B/X, F/Y] by the W2 columns of one D chunk, [F/Y, D/Y]", "FLOP"))


@functools.cache
def rs_collective_matmul_chunk_math() -> Derivation:
    _, flops = _rs_chunk()
    return Derivation("ReduceScatter collective matmul: time of one chunk matmul", (
        flops, Step(r"T_{\mathrm{chunk}}", flops.expr / C, "the chunk's FLOPs at the chip's peak", "s"),
    ), PROBLEMS)


@functools.cache
def rs_collective_matmul_chunk_comms() -> Derivation:
    acc, _ = _rs_chunk()
    return Derivation("ReduceScatter collective matmul: time of one ppermute of an accumulator", (
        acc, Step(r"T_{\mathrm{ppermute}}", ppermute_time().expr.xreplace({V: acc.expr}),
                  "jax.lax.ppermute of the accumulator: one hop over one link, one way", "s"),
    ), PROBLEMS)


@functools.cache
def rs_collective_matmul_time() -> Derivation:
    """Y chunk matmuls; the Y - 1 accumulator passes between them overlap the next chunk's matmul."""
    t_mm, t_pp = rs_collective_matmul_chunk_math().expr, rs_collective_matmul_chunk_comms().expr
    return Derivation("ReduceScatter collective matmul, a unidirectional ppermute ring", (
        Step(r"T_{\mathrm{chunk}}", t_mm, "one chunk matmul at the peak", "s"),
        Step(r"T_{\mathrm{ppermute}}", t_pp, "one accumulator's hop", "s"),
        Step(r"T_{\mathrm{CM}}", t_mm + (Y - 1) * sp.Max(t_mm, t_pp),
             "the first chunk, then Y - 1 rounds in which the next chunk is multiplied while the accumulator "
             "arrives; the round's add waits for both", "s"),
    ), PROBLEMS)


def _reduce_scatter_of_partial() -> sp.Expr:
    """ReduceScatter_Y of the whole partial sum [B/X, D]: the exact ring form with N = Y."""
    return coll.reduce_scatter_time().expr.xreplace({V: (B / X) * D * b_x, N: Y})


@functools.cache
def rs_collective_matmul_time_bidirectional() -> Derivation:
    t_mm = rs_collective_matmul_chunk_math().expr
    t_ring = _reduce_scatter_of_partial()
    return Derivation("ReduceScatter collective matmul on a bidirectional ppermute ring (Problem 4)", (
        Step(r"T_{\mathrm{chunk}}", t_mm, "one chunk matmul at the peak", "s"),
        Step(r"T_{\mathrm{ring}}", t_ring,
             "half the accumulators travel each way: the bytes of ReduceScatter_Y of [B/X, D] on a "
             "bidirectional ring", "s"),
        Step(r"T_{\mathrm{CM}}", t_mm + sp.Max((Y - 1) * t_mm, t_ring),
             "the first chunk, then the other Y - 1 chunk matmuls overlapped with the accumulators' transfers", "s"),
    ), PROBLEMS)


@functools.cache
def rs_collective_matmul_time_naive() -> Derivation:
    t_mm = rs_collective_matmul_chunk_math().expr
    local = Step(r"T_{\mathrm{math}}", Y * t_mm, "the whole partial sum [B/X, D] first: Y chunks' worth", "s")
    scatter = Step(r"T_{\mathrm{RS}}", _reduce_scatter_of_partial(),
                   "then ReduceScatter_Y of the partial sums: the exact ring form, V = (B/X)·D·b_x, N = Y", "s")
    return Derivation("matmul then ReduceScatter (no overlap): the baseline", (
        local, scatter,
        Step(r"T_{\mathrm{naive}}", local.expr + scatter.expr, "the scatter waits for the matmul: the times add",
             "s"),
    ), PROBLEMS)


@functools.cache
def rs_collective_matmul_critical_f() -> Derivation:
    return crossover(
        rs_collective_matmul_chunk_math().expr, rs_collective_matmul_chunk_comms().expr, F,
        title="ReduceScatter collective matmul (unidirectional): the inner width F at which the ring hides",
        source=PROBLEMS, lhs_label=r"T_{\mathrm{chunk}}", rhs_label=r"T_{\mathrm{ppermute}}", side_unit="s",
        label="F^*", unit="element",
        why="a chunk's matmul lasts as long as its accumulator's hop: a wider contraction F hides the ring "
            "(F/Y >= b_x C / (2 W_link), the AllGather collective matmul's condition)")


# -- AllReduce collective matmul: A[B_X, D_Y] ·_D W[D_Y, F] -> Out[B_X, F] -----------------------------------------

def _ar_tile() -> tuple[Step, Step]:
    return (Step(r"T_{\mathrm{tile}}", 2 * (B / X) * (D / Y) * (F / Y) / C,
                 "one of Y output tiles: A[B/X, D/Y] by W[D/Y, F/Y] at the peak", "s"),
            Step(r"T_{\mathrm{psum}}", coll.all_reduce_time().expr.xreplace({V: (B / X) * (F / Y) * b_x, N: Y}),
                 "psum of one tile's partial sums [B/X, F/Y] over Y: the exact ring AllReduce", "s"))


@functools.cache
def ar_collective_matmul_time() -> Derivation:
    tile, psum = _ar_tile()
    return Derivation("AllReduce collective matmul, the output tiled over F into Y tiles (Problem 3.1)", (
        tile, psum,
        Step(r"T_{\mathrm{CM}}", tile.expr + (Y - 1) * sp.Max(tile.expr, psum.expr) + psum.expr,
             "the first tile, Y - 1 rounds in which a tile's psum runs under the next tile's matmul, then the "
             "last tile's psum with nothing to hide it", "s"),
    ), PROBLEMS)


@functools.cache
def ar_collective_matmul_time_naive() -> Derivation:
    tile, _ = _ar_tile()
    local = Step(r"T_{\mathrm{math}}", Y * tile.expr, "the whole partial product [B/X, F]", "s")
    reduce = Step(r"T_{\mathrm{AR}}", coll.all_reduce_time().expr.xreplace({V: (B / X) * F * b_x, N: Y}),
                  "then psum over Y of [B/X, F]: the exact ring AllReduce", "s")
    return Derivation("matmul then AllReduce (no overlap): the baseline", (
        local, reduce, Step(r"T_{\mathrm{naive}}", local.expr + reduce.expr, "the times add", "s"),
    ), PROBLEMS)


# -- the block: In[B_X, D_Y] ·_D W_in[D, F_Y] ·_F W_out[F_Y, D] -> Out[B_X, D_Y] -----------------------------------

def _block(title: str, up: Derivation, down: Derivation, label: str, why: str) -> Derivation:
    """The block's two halves, one after the other: the down-projection needs the whole Tmp shard."""
    return Derivation(title, (
        Step(r"T_{\mathrm{up}}", up.expr, up.title, "s"),
        Step(r"T_{\mathrm{down}}", down.expr, down.title, "s"),
        Step(label, up.expr + down.expr, why, "s"),
    ), PROBLEMS)


@functools.cache
def block_collective_time() -> Derivation:
    return _block("a block with both collective matmuls (Problem 3.3)", collective_matmul_time(),
                  rs_collective_matmul_time(), r"T_{\mathrm{block}}",
                  "the down-projection needs the whole Tmp shard: the two run one after the other")


@functools.cache
def block_collective_time_bidirectional() -> Derivation:
    return _block("a block with both collective matmuls on bidirectional rings (Problem 4)",
                  collective_matmul_time_bidirectional(), rs_collective_matmul_time_bidirectional(),
                  r"T_{\mathrm{block}}", "one after the other, as on one-way rings")


@functools.cache
def block_collective_time_naive() -> Derivation:
    return _block("the same block as jax.jit lowers it: AllGather, two matmuls, ReduceScatter",
                  collective_matmul_time_naive(), rs_collective_matmul_time_naive(), r"T_{\mathrm{naive}}",
                  "nothing overlaps")


@functools.cache
def block_collective_speedup() -> Derivation:
    naive, cm = block_collective_time_naive(), block_collective_time_bidirectional()
    return Derivation("the block's speed-up from collective matmuls on bidirectional rings", (
        Step(r"T_{\mathrm{naive}}", naive.expr, naive.title, "s"),
        Step(r"T_{\mathrm{block}}", cm.expr, cm.title, "s"),
        Step(r"T_{\mathrm{naive}}/T_{\mathrm{block}}", naive.expr / cm.expr,
             "at most 2, when each collective takes as long as its matmul", "1"),
    ), PROBLEMS)
