"""Sharding a served model's KV cache past its heads: batch-sharded, KV[2, B_Z, S, K_Y, H], it needs two
AllToAlls per attention layer (the queries to batch sharding, the outputs back); sequence-sharded,
KV[2, B, S_Z, K_Y, H], the queries gathered over Z and the partial outputs summed, as flash attention merges blocks
(inference.md, 'Sharding the KV cache' and its full algorithm).

Engine route: ``inference.kv_batch.bytes_per_chip``, ``kv_batch.alltoall_bytes``, ``kv_batch.t_alltoall`` and
``inference.kv_seq.t_comms`` with L, N, H, kv_token, b_x and W_ici bound from the
model, the dtypes and the chip. Second route: the element counts of the query and cache arrays on one chip, the
ring costs written out (an AllToAll a quarter of an AllGather, a ReduceScatter what an AllGather costs) with W_ici as twice the
catalog's raw link bandwidth.
"""

from __future__ import annotations

from fractions import Fraction

from ..draws import pick, pow2
from ..registry import Generator, register, reject_if
from .inference_common import (BYTES, DENSE, ask, context_ok, pick_kv, pick_serving, second_kv_token)
from ...catalog.hardware import get_chip

SOURCE = "inference.md, 'Sharding the KV cache'"
CONTEXTS = (2048, 8192, 32768, 131072)
Z_AXIS = (2, 4, 8, 16)


def draw(rng):
    p = pick_serving(rng, DENSE, needs=("ici_link_bytes_per_s",))
    S = pick(rng, CONTEXTS)
    reject_if(not context_ok(p["model"], S), "the context must fit the model's context and window")
    Y = pick(rng, [y for y in (1, 2, 4, 8) if y <= p["K"] and p["K"] % y == 0])
    Z = pick(rng, Z_AXIS)
    p |= {"kv_dtype": pick_kv(rng, p["chip"]), "S": S, "Y": Y, "Z": Z, "B": Z * pow2(rng, 0, 5)}
    reject_if(check(p)["batch_chip"] > get_chip(p["chip"]).hbm_bytes / 2,
              "each chip's share of the cache must leave room for its share of the weights")
    return p


def solve(p):
    g = {"B": p["B"], "S": p["S"], "Y": p["Y"], "Z": p["Z"]}
    return [
        ask(p, "batch_chip", "KV cache bytes per chip, batch-sharded KV[2, B_Z, S, K_Y, H]",
            "inference.kv_batch.bytes_per_chip", g),
        ask(p, "a2a_bytes", "bytes one of the AllToAlls moves over a Z ring", "inference.kv_batch.alltoall_bytes", g),
        ask(p, "a2a_time", "time of a decode step's AllToAlls, all layers", "inference.kv_batch.t_alltoall", g),
        ask(p, "seq_time", "time of a decode step's collectives with the sequence-sharded cache",
            "inference.kv_seq.t_comms", g),
    ]


def check(p):
    B, S, Y, Z = p["B"], p["S"], p["Y"], p["Z"]
    token = second_kv_token(p["model"], p["kv_dtype"])
    b_x = BYTES[p["dtype"]]
    w_ici = 2 * Fraction(get_chip(p["chip"]).ici_link_bytes_per_s)
    q_group = B * p["N"] * p["H"] * b_x / Y   # the queries the chips of one Z ring hold between them
    return {"batch_chip": (B // Z) * S * token / Y, "a2a_bytes": q_group,
            "a2a_time": 2 * p["L"] * q_group / (4 * w_ici),
            "seq_time": p["L"] * 2 * q_group / w_ici}


register(Generator("inference_sharded_kv", "inference", "Batch- and sequence-sharded KV caches: bytes and collectives",
                   SOURCE, draw, solve, check))
