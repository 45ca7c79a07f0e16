"""Parallelism thresholds on GPU clusters: data parallelism inside an NVLink node and across nodes,
with and without model parallelism spanning nodes, tensor parallelism inside one node and across two,
and for a mixture of experts the data-parallel threshold and the MLP width expert parallelism needs
(gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Data Parallelism', 'Tensor Parallelism', 'Expert
Parallelism', 'Examples' and 'Quiz 5').

Three kinds of draw: a dense model on a large cluster (DP and TP thresholds, DP outside model
parallelism), a dense model on a few nodes (DP over M nodes, where a ring sends (M - 1)/M of the bytes
through each node), or DeepSeek-V3 (MoE data parallelism and expert parallelism over Z GPUs). Engine route: the ``parallel.gpu.*`` quantities and
``parallel.batch_per_device``. Second route: plain fractions from the catalog's raw fields (NVLink
per GPU, NIC per GPU times the GPUs of a node), each balance written as compute time per token
against communication time.
"""

from __future__ import annotations

from fractions import Fraction

from ...catalog.hardware import get_chip
from ..draws import choice, whole, whole_check, pick, pick_chip
from ..registry import Generator, register, reject_if
from .training_data_parallel import nearest_pow2
from .transformer_params import DENSE, ELEMENT_BYTES, engine, model_params

SOURCE = ("gpus.md, 'Rooflines for LLM Scaling on GPUs' ('Data Parallelism', 'Tensor Parallelism', "
          "'Expert Parallelism', 'Examples') and 'Quiz 5'")
NEEDS = ("nvlink_bytes_per_s", "nic_bytes_per_s", "nvlink_domain")
NODES = {8: (128, 256, 512, 1024, 2048), 72: (16, 32, 64, 128)}
MODEL_NODES = {8: (2, 4, 8, 16), 72: (2, 4)}
EP_NODES = (2, 4, 8, 16, 32)
FEW_NODES = (2, 3, 4)
SEQ_LENS = (4096, 8192)
FACTORS = (Fraction(1, 4), Fraction(1, 2), Fraction(2), Fraction(4))


def draw(rng):
    chip = pick_chip(rng, family="gpu", needs=NEEDS, dtypes=["bf16"])
    d_node = chip.nvlink_domain
    nodes = pick(rng, NODES.get(d_node, NODES[8]))
    n = d_node * nodes
    p = {"chip": chip.key, "D_node": d_node, "nodes": nodes, "n": n, "seq_len": pick(rng, SEQ_LENS)}
    kind = pick(rng, ("dense", "dense", "few", "moe"))
    if kind == "few":
        m = model_params(pick(rng, DENSE))
        m_nodes = pick(rng, FEW_NODES)
        p |= {"kind": "few", "model": m["model"], "D": m["D"], "F": m["F"], "nodes": m_nodes, "n": d_node * m_nodes}
        target = _check(p | {"B": 1})["dp_few"] * pick(rng, FACTORS) * p["n"] / p["seq_len"]
    elif kind == "moe":
        m = model_params("deepseek-v3")
        z_nodes = pick(rng, EP_NODES)
        reject_if(d_node * z_nodes > m["E"] or z_nodes > nodes,
                  "expert parallelism cannot use more GPUs than there are experts or GPUs")
        p |= {"kind": "moe", "model": m["model"], "D": m["D"], "F": m["F"], "E": m["E"], "k": m["k"],
              "z_nodes": z_nodes, "Z": d_node * z_nodes, "few": int(m["k"] >= z_nodes)}
        first = _check(p | {"B": 1})
        target = first["dp_moe"] * pick(rng, FACTORS) * n / p["seq_len"]
    else:
        m = model_params(pick(rng, DENSE))
        pp = pick(rng, MODEL_NODES.get(d_node, MODEL_NODES[8]))
        reject_if(pp > nodes, "model parallelism cannot span more nodes than the cluster has")
        p |= {"kind": "dense", "model": m["model"], "D": m["D"], "F": m["F"], "pp_nodes": pp, "Y_model": d_node * pp}
        first = _check(p | {"B": 1})
        low, high = first["dp_sharded"], first["dp_cross"]
        target = pick(rng, (low / 2, 2 * low, high / 2, 2 * high)) * n / p["seq_len"]
    p["n_seq"] = nearest_pow2(target * target)
    p["B"] = p["n_seq"] * p["seq_len"]
    reject_if(p["B"] % p["n"] != 0, "the batch must split evenly over the GPUs")
    second = _check(p)
    local = second["local"]
    limits = {"moe": ("dp_moe",), "few": ("dp_few",), "dense": ("dp_sharded", "dp_cross")}[p["kind"]]
    limits = tuple(second[name] for name in limits)
    for limit in limits:
        reject_if(abs(local / limit - 1) < Fraction(3, 20), "the batch per GPU must not sit within 15 percent of a threshold")
    if p["kind"] == "moe":
        reject_if(abs(Fraction(p["F"]) / second["ep_min_f"] - 1) < Fraction(3, 20),
                  "the expert width must not sit within 15 percent of the width expert parallelism needs")
    return p


def _values(p) -> dict:
    chip = get_chip(p["chip"])
    return {"C": chip.flops_per_s["bf16"], "W_gpu": chip.nvlink_bytes_per_s,
            "W_node": chip.nic_bytes_per_s * chip.nvlink_domain, "D_node": chip.nvlink_domain, "b_w": 2, "b_x": 2,
            "D": p["D"]}


def solve(p):
    answers = [whole(a, ROUND[a.name]) if a.name in ROUND else a for a in _solve(p)]
    a = {x.name: x for x in answers}
    local = a["local"].value
    if p["kind"] == "moe":
        answers.insert(3, choice("dp_ok", "would pure data parallelism of the experts be compute-bound at this batch?",
                                 BOUND, 0 if local > a["dp_moe"].unrounded else 1))
        answers.insert(5, choice("ep_ok", "is the model's expert width enough for this expert parallelism?",
                                 EP_VERDICTS, 0 if p["F"] > a["ep_min_f"].unrounded else 1))
    elif p["kind"] == "few":
        answers.append(choice("verdict", "is the run compute-bound?", BOUND,
                              0 if local > a["dp_few"].unrounded else 1))
    else:
        answers.insert(5, choice("setups", "which of the two set-ups is compute-bound at this batch?", SETUPS,
                                 _setups(local > a["dp_cross"].unrounded, local > a["dp_sharded"].unrounded)))
    return answers


#: The choices of "is it compute-bound?"
BOUND = ("compute-bound", "communication-bound")
#: The choices of "is the model's F enough for expert parallelism?"
EP_VERDICTS = ("enough: expert parallelism is compute-bound", "not enough: expert parallelism is communication-bound")
#: The choices of "which of the two set-ups is compute-bound?" (pure data parallelism needs the larger batch)
SETUPS = ("both set-ups", "only the set-up with model parallelism across nodes", "only pure data parallelism",
          "neither set-up")


def _setups(pure_ok: bool, sharded_ok: bool) -> int:
    """The index in SETUPS of which set-ups a batch keeps compute-bound."""
    return {(True, True): 0, (False, True): 1, (True, False): 2, (False, False): 3}[(pure_ok, sharded_ok)]


#: How each threshold becomes whole: a smallest batch or width rounds up, a largest degree down.
ROUND = {'dp_node': 'up', 'dp_cross': 'up', 'dp_global': 'up', 'dp_sharded': 'up', 'dp_few': 'up', 'dp_moe': 'up', 'tp_node': 'down', 'tp_two_nodes': 'down', 'ep_min_f': 'up', 'ep_limit': 'up'}


def _solve(p):
    values = _values(p)
    with_f = values | {"F": p["F"]}
    local = engine("local", "batch per GPU", "parallel.batch_per_device", {"B": p["B"], "n_dev": p["n"]})
    dp_cross = engine("dp_cross", "smallest per-GPU batch for data parallelism across nodes",
                      "parallel.gpu.dp.min_batch_per_gpu", with_f | {"X": p["n"]})
    if p["kind"] == "moe":
        experts = with_f | {"E": p["E"], "k": p["k"], "X": p["n"]}
        ep = values | {"k": p["k"], "Z": p["Z"], "B": p["B"]}
        regime = "few_nodes" if p["few"] else "many_nodes"
        return [
            dp_cross,
            engine("dp_moe", "smallest per-GPU batch for data parallelism of the mixture of experts",
                   "parallel.gpu.dp.min_batch_per_gpu_moe", experts),
            local,
            engine("ep_min_f", "smallest expert width that keeps this expert parallelism compute-bound",
                   f"parallel.gpu.ep.min_f_{regime}", ep),
            engine("ep_limit", "the expert width wide expert parallelism needs", "parallel.gpu.ep.min_f_limit", ep),
        ]
    dp_node = engine("dp_node", "smallest per-GPU batch for data parallelism inside one node",
                     "parallel.gpu.dp.min_batch_per_gpu_in_node", with_f | {"X": p["D_node"]})
    if p["kind"] == "few":
        return [
            dp_node,
            dp_cross,
            engine("dp_few", "smallest per-GPU batch for data parallelism over these few nodes",
                   "parallel.gpu.dp.min_batch_per_gpu_few_nodes", with_f | {"M_nodes": p["nodes"]}),
            local,
        ]
    return [
        dp_node,
        dp_cross,
        engine("dp_global", "smallest global batch for pure data parallelism over all the GPUs",
               "parallel.gpu.dp.min_batch", with_f | {"X": p["n"]}),
        engine("dp_sharded", "smallest per-GPU batch when model parallelism spans nodes",
               "parallel.gpu.dp.min_batch_per_gpu_model_sharded", with_f | {"Y": p["Y_model"], "n_dev": p["n"]}),
        local,
        engine("tp_node", "largest compute-bound tensor parallelism inside one node",
               "parallel.gpu.tp.max_degree_in_node", with_f),
        engine("tp_two_nodes", "largest compute-bound tensor parallelism spanning two nodes",
               "parallel.gpu.tp.max_degree_two_nodes", with_f),
    ]


def check(p):
    out = {}
    second = _check(p)
    for name, value in second.items():
        out |= whole_check(name, value, ROUND[name]) if name in ROUND else {name: value}
    local = second["local"]
    if p["kind"] == "moe":
        out["dp_ok"] = 0 if local > second["dp_moe"] else 1
        out["ep_ok"] = 0 if p["F"] > second["ep_min_f"] else 1
    elif p["kind"] == "few":
        out["verdict"] = 0 if local > second["dp_few"] else 1
    else:
        pure, sharded = local > second["dp_cross"], local > second["dp_sharded"]
        out["setups"] = 0 if pure and sharded else 1 if sharded else 2 if pure else 3
    return out


def _check(p):
    chip = get_chip(p["chip"])
    C, nvlink, d_node = chip.flops_per_s["bf16"], chip.nvlink_bytes_per_s, chip.nvlink_domain
    egress = chip.nic_bytes_per_s * d_node                      # the whole node's NICs, one direction
    b = ELEMENT_BYTES["bf16"]
    D, F, n = p["D"], p["F"], p["n"]
    bwd_per_token = Fraction(4 * 2 * D * F, C)                  # four backward matmuls, one token, one GPU
    grads = 2 * b * D * F                                       # both weight gradients of a layer
    reduce = 2 * grads                                          # ReduceScatter plus AllGather, no SHARP
    out = {"local": Fraction(p["B"], n), "dp_cross": reduce / egress / bwd_per_token}
    if p["kind"] == "moe":
        E, k, Z = p["E"], p["k"], p["Z"]
        out["dp_moe"] = (E * reduce / egress) / (k * bwd_per_token)   # all E experts reduced, k of them used
        # forward: k experts' two matmuls per token over Z GPUs, against dispatch and combine AllToAlls
        fwd_per_width = Fraction(2 * 2 * k * D, Z * C)              # per token and unit of F
        receivers = min(Fraction(d_node * k, Z), Fraction(1))       # share of nodes a token is sent to
        a2a = Fraction(2 * b * D * (Z - d_node), Z * egress) * receivers
        out["ep_min_f"] = a2a / fwd_per_width
        out["ep_limit"] = b * C * d_node / (2 * egress)           # (Z - D_node)/Z tends to 1
        return out
    out["dp_node"] = reduce / nvlink / bwd_per_token
    if p["kind"] == "few":
        M = p["nodes"]
        out["dp_few"] = reduce * Fraction(M - 1, M) / egress / bwd_per_token   # a ring over M nodes
        return out
    fwd_per_token = Fraction(2 * 2 * D * F, C)                  # two forward matmuls, one token, one GPU
    activations = 2 * b * D                                     # AllGather plus ReduceScatter, per token
    spans = max(d_node, p["Y_model"]) // d_node                 # nodes one model replica spans
    out |= {
        "dp_global": n * out["dp_cross"],
        "dp_sharded": out["dp_cross"] / spans,
        "tp_node": fwd_per_token / (activations / nvlink),
        # only the share (Y - D_node)/Y of the activations leaves the node: Y - D_node < F·W_node·2/(b·C)
        "tp_two_nodes": d_node + fwd_per_token / (activations / egress),
    }
    return out


register(Generator("training_gpu", "training", "Parallelism thresholds on GPU clusters",
                   SOURCE, draw, solve, check))
