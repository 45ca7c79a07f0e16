"""Where a served model's KV cache and experts live on a mesh, and what moving activations to them costs
(inference.md, 'Sharding the KV cache' and Worked Problem 6).

A cache sharded over the batch, KV[2, B_Z, S, K_Y, H], needs two AllToAlls per attention layer over Z: the queries
from head sharding to batch sharding and the outputs back. A cache sharded over the sequence, KV[2, B, S_Z, K_Y, H],
needs the queries gathered over Z and the partial attention outputs summed over Z (flash attention's merge). A
mixture's expert weights [E_Z, D_X, F_Y] split over every chip of the mesh, so each reads 1/(X·Y·Z) of them.

>>> kv_batch_alltoall_bytes().expr
B*H*N*b_x/Y
"""

from __future__ import annotations

import functools

from .. import collectives as coll
from ..derivation import Derivation, Step
from ..symbols import sym
from .common import KV_SHARDING, PROBLEMS, B, D, H, H_chip, L, P, S, W, W_ici, X, Y, b_w, b_x, kv

N, Z = sym("N"), sym("Z")
_NOT_IN_BOOK = ("Not printed in the book: the book names the collectives; their bytes and times follow from the "
                "sharding chapter's costs.")


def _q_bytes(over_y: bool = True) -> Step:
    return Step(r"V_{Q}", b_x * B * N * H / Y, "the [B, N, H] queries (or attention outputs) of one decode step "
                "that the chips of one Z ring hold between them: the Y axis already splits the heads", "byte")


# -- batch-sharded cache: two AllToAlls per attention layer --------------------------------------------------------

@functools.cache
def kv_batch_alltoall_bytes() -> Derivation:
    return Derivation("bytes of one AllToAll that moves decode queries to a batch-sharded KV cache",
                      (_q_bytes(True),), KV_SHARDING, note=_NOT_IN_BOOK)


@functools.cache
def kv_batch_t_alltoall() -> Derivation:
    v = _q_bytes(True)
    one = coll.all_to_all_time_approx().expr.subs(coll.V, v.expr)
    return Derivation("decode step: the AllToAlls of a batch-sharded KV cache (all layers)", (
        v, Step(r"T_{\mathrm{A2A}}", one, "an AllToAll over the Z ring costs a quarter of an AllGather of the same "
                "bytes", "s"),
        Step(r"T_{\mathrm{A2A,step}}", 2 * L * one, "two per attention layer: Q from head to batch sharding (Z→B) "
             "and the output back (Z→M)", "s")), KV_SHARDING, note=_NOT_IN_BOOK)


@functools.cache
def kv_batch_bytes_per_chip() -> Derivation:
    return Derivation("KV cache bytes per chip with the cache sharded KV[2, B_Z, S, K_Y, H]", (
        Step(r"\mathrm{KV}_{\mathrm{batch}}", B * S * kv, "B sequences of S cached tokens", "byte"),
        Step(r"\mathrm{KV}_{\mathrm{chip}}", B * S * kv / (Y * Z),
             "heads split over Y, sequences over Z: no chip holds a copy of another's", "byte")), KV_SHARDING)


# -- sequence-sharded cache -------------------------------------------------------------------------------------

@functools.cache
def kv_seq_bytes_per_chip() -> Derivation:
    return Derivation("KV cache bytes per chip with the cache sharded over the sequence, KV[2, B, S_Z, K_Y, H]", (
        Step(r"\mathrm{KV}_{\mathrm{batch}}", B * S * kv, "B sequences of S cached tokens", "byte"),
        Step(r"\mathrm{KV}_{\mathrm{chip}}", B * S * kv / (Y * Z),
             "heads split over Y, each sequence's tokens over Z: the same share as batch sharding, and it works "
             "when B is smaller than Z", "byte"),
    ), KV_SHARDING)


@functools.cache
def kv_seq_t_comms() -> Derivation:
    v = _q_bytes(True)
    gather = coll.all_gather_time_approx().expr.subs(coll.V, v.expr)
    scatter = gather  # a ReduceScatter costs what the AllGather of its result does
    return Derivation("decode step: the collectives of a sequence-sharded KV cache (all layers)", (
        v, Step(r"T_{\mathrm{AG}}", gather, "AllGather the queries over Z: every shard of a sequence needs every "
                "query of its Y slice of heads", "s"),
        Step(r"T_{\mathrm{RS}}", scatter, "sum the Z partial attention outputs and scatter them back to head "
             "sharding N_YZ (each rescaled by its softmax maximum and sum, as flash attention merges blocks; those "
             "statistics are B·N numbers, left out)", "s"),
        Step(r"T_{\mathrm{seq,step}}", L * (gather + scatter), "once per attention layer: four times the two "
             "AllToAlls of batch sharding", "s")),
        KV_SHARDING, note=_NOT_IN_BOOK)


# -- the expert layout [E_Z, D_X, F_Y] ----------------------------------------------------------------------

def _expert_chip() -> Step:
    return Step(r"\mathrm{bytes}_{\mathrm{chip}}", P * b_w / (X * Y * Z), "every weight split over all X·Y·Z chips: "
                "experts over Z, D over X, F over Y (X = 1 when serving, as FSDP is for training)", "byte")


@functools.cache
def moe_layout_bytes_per_chip() -> Derivation:
    return Derivation("weight bytes per chip of a mixture sharded [E_Z, D_X, F_Y]", (_expert_chip(),), PROBLEMS)


@functools.cache
def moe_layout_t_weights() -> Derivation:
    per = _expert_chip()
    return Derivation("time to read every expert's weights once with the layout [E_Z, D_X, F_Y]", (per, Step(
        r"T_{\mathrm{weights}}", per.expr / W, "each chip reads its own share at W, all at once (every expert "
        "touched: a large batch)", "s")), PROBLEMS)


@functools.cache
def moe_layout_free_hbm() -> Derivation:
    per = _expert_chip()
    return Derivation("HBM per chip left for the KV cache with the layout [E_Z, D_X, F_Y]", (per, Step(
        r"M_{\mathrm{free}}", H_chip - per.expr, "what the weights leave of one chip's HBM", "byte")), PROBLEMS)


@functools.cache
def moe_layout_t_ici() -> Derivation:
    k = sym("k")
    routed = Step(r"V_{\mathrm{A2A}}", b_x * B * k * D, "k copies of each token's [D] activation; D is whole (X = 1) "
                  "and every chip of a Y group needs all of it, so each Z ring carries the whole dispatch", "byte")
    a2a = coll.all_to_all_time_approx().expr.subs(coll.V, routed.expr)
    partial = Step(r"V_{\mathrm{AR}}", routed.expr / Z, "an expert's outputs for its B·k/Z tokens (on average), "
                   "partial sums over its F_Y slice", "byte")
    reduce = coll.all_reduce_time_approx().expr.subs(coll.V, partial.expr)
    return Derivation("one mixture layer's collectives with the layout [E_Z, D_X, F_Y] (a decode step)", (
        routed, Step(r"T_{\mathrm{A2A}}", a2a, "an AllToAll over Z (the expert axis): a quarter of an AllGather",
                     "s"),
        partial, Step(r"T_{\mathrm{AR}}", reduce, "AllReduce the F_Y partial sums over Y (2V/W_ici)", "s"),
        Step(r"T_{\mathrm{MoE}}", 2 * a2a + reduce, "dispatch the tokens to their experts, reduce over Y, combine "
             "the outputs back", "s"),
    ), PROBLEMS, note=_NOT_IN_BOOK)
