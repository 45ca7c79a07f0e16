"""The worked example of each quantity in the reference: a real chip, a real model, and values for the rest.

For every quantity the example is the first of these that ``scalemath derive`` evaluates to a number:
no chip (when no parameter needs one), then the chips of its kind in order (a GPU quantity on an H100
first, everything else on a TPU v5e first). Parameters that a chip or model
binds come from them; the others get the values below, typed with ``--set`` and named on the page. A few
quantities need values that suit their own question (a crossover that exists only above some size, a
run long enough to be realistic); ``OVERRIDES`` holds those, each with its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sm_cli import run, run_ok

__all__ = ["Example", "example", "CHIPS", "MODELS"]

#: Parameters bound by ``--model`` (and by nothing else).
MODEL_BOUND = frozenset({"D", "F", "N", "K", "H", "L", "V_vocab", "E", "k", "P", "P_active", "P_exp", "P_extra",
                         "P_out", "P_pos", "kv_token", "n_mlp", "n_emb", "L_moe", "L_loc", "w_win"})
MIXTURE = frozenset({"E", "k", "P_exp", "L_moe"})
TOPICS_WITH_MODELS = frozenset({"transformer", "parallelism", "inference"})

GPU_CHIPS = ("h100", "b200", "gb200", "a100")
TPU_CHIPS = ("tpu-v5e", "tpu-v5p", "h100", "b200", "gb200")
CHIPS = {"tpu-v5e": "TPU v5e", "tpu-v5p": "TPU v5p", "h100": "H100", "b200": "B200", "gb200": "GB200 (NVL72)",
         "a100": "A100"}
MODELS = {"llama3-70b": "LLaMA-3 70B", "mixtral-8x7b": "Mixtral 8x7B", "deepseek-v3": "DeepSeek-V3"}

#: Values typed with ``--set`` for parameters nothing binds, the same for every topic unless overridden below.
VALUES = {
    "B": "512",            # tokens in a batch: above the v5e's critical batch of 240, so a matmul is compute-bound
    "T": "4096", "S": "8192",  # a sequence of 4096 tokens; a context of 8192
    "n_seq": "512",
    "V": "2**30",          # a collective over 1 GiB
    "X": "16", "Y": "16", "Z": "4",  # the axes of a v5e pod (16 x 16), a third axis of 4 where one is asked for
    "N_axes": "2", "M_X": "2", "M_Y": "1",  # FSDP over two axes of the mesh, tensor parallelism over one
    "n_dev": "256", "n_slice": "256",  # a v5e pod, and a slice of that size when several are joined over DCN
    "FLOPs": "10**12", "bytes": "10**9", "AI": "100",
    "hops": "4", "links": "1",
    "b_m": "128", "b_n": "128",  # a 128 x 128 tile
    "b_g": "2", "b_opt": "8",  # bf16 gradients; Adam's two fp32 moments
    "n_ckpt": "7",         # the book's 'big matmuls' checkpointing policy
    "A_act": "10**11",
    "tokens": "15e12",     # LLaMA-3's 15T training tokens
    "MFU": "0.4", "HFU": "0.5",
    "C_ach": "80e12",      # 40 % of a v5e's 197 TFLOP/s
    "r_tok": "180",        # tokens/s per v5e chip: about 40 % MFU for a 70B model
    "n_flop": "3.14e23",   # GPT-3 175B's training FLOPs (Brown et al. 2020, Table D.1)
    "chip_hours": "2.788e6",  # DeepSeek-V3's H800 GPU hours (DeepSeek-AI 2024, Table 1)
    "t_run": "90*86400",   # 90 days
    "n_mb": "8", "n_dp": "8", "n_ep": "8", "n_fsdp": "16", "n_pp": "4", "n_tp": "8", "n_zero": "8",
    "r_remat": "1", "f_bubble": "1",
    "W_dp": "50e9", "W_ep": "50e9", "W_fsdp": "50e9", "W_pp": "50e9",  # one 400 Gbit/s NIC per chip
    "W_tp": "450e9",       # an H100's NVLink
    "t_step": "0.02", "t_prefill": "0.1", "n_gen": "512", "t_comms": "0.003", "t_coll": "10e-6",
    "r_draft": "0.1", "a_acc": "0.8", "n_draft": "4", "n_emit": "3",
    # an engine's cache: 1536 of a prompt's tokens shared, caches shared by pairs of layers, pages of 128 tokens,
    # slots of 32k tokens when the cache is padded
    "T_pre": "1536", "m_kv": "2", "s_page": "128", "S_max": "32768",
    # a batch of prompts prefilled together: padded to 4096 tokens, 1024 on average; a latency twice batch 1's
    "T_max": "4096", "T_avg": "1024", "k_lat": "2",
    "t_meas": "0.002", "eta": "0.8", "k_top": "8", "M_nodes": "4",
    "D_spine": "4", "W_su": "12.8e12",  # four H100 scalable units, each with its 12.8 TB/s uplink
    # a 16 x 8 twisted torus; an elementwise add over 1024 elements (gpus.md Quiz 1); a warp 8 of whose 32 threads
    # take a 10-cycle if path and the rest a 30-cycle else path
    "a_tw": "8", "n_elem": "1024", "k_if": "8", "c_if": "10", "c_else": "30",
    # one idle mesh axis to spread an AllGather over; 95 % of the ICI bandwidth (sharding.md's measured v5e curve)
    "n_idle": "1", "f_bw": "0.95",
    # host offload: 32 GB per chip each way a step, against 1 s of compute
    "M_off": "32e9", "t_cmp": "1",
    # a tenth of a transfer sent over DCN, the rest over ICI
    "f_dcn": "0.1",
    # a training run's configuration priced from achievable rates (parallel.run.*): an H100's measured GEMM and
    # fused-attention rates, no context parallelism, 2 interleaved stages, 1F1B, collectives exposed as
    # Megatron-LM leaves them, the reduction overlapped, a fused attention kernel, sequence parallelism, no dropout,
    # ZeRO-1, every token's k copies sent, 8 µs per collective step on every network
    "C_mm": "794.5e12", "C_attn": "328e12", "n_cp": "1", "n_v": "2", "s_gpipe": "0", "o_tp": "0", "o_ep": "0",
    "o_dp": "1", "o_pg": "0", "u_attn": "0", "s_sp": "1", "d_drop": "0", "z_2": "0", "q_sel": "0", "m_route": "8",
    "a_hop": "5e-6",       # a collective's fixed cost per send (an NVLink hop of a few microseconds)
    "W_cp": "50e9", "a_tp": "8e-6", "a_cp": "8e-6", "a_ep": "8e-6", "a_pp": "8e-6", "a_fsdp": "8e-6", "a_dp": "8e-6",
}
#: What a topic changes in ``VALUES``.
TOPIC_VALUES = {
    "parallelism": {"B": "2**22"},  # 4Mi tokens a step, as for LLaMA-3
    "transformer": {"B": "4096"},   # one sequence
    "inference": {"B": "64", "n_dev": "32", "T": "2048"},  # 64 sequences decoded on 32 chips; a 2048-token prompt
    "gpu": {"n_dev": "1024", "Y": "8"},  # a cluster of 128 nodes; sharded over one node's 8 GPUs
}
#: Values for the letters a model would bind, where the quantity's topic has no model: the book's shapes.
BOOK_SHAPES = {"D": "8192", "F": "32768", "P": "70e9"}

#: Quantities whose example needs its own settings, with the reason.
OVERRIDES = {
    # expert parallelism leaves the node only when Z > D_node; DeepSeek-V3 (k = 8) on 64 or 128 GPUs puts the
    # two crossovers on either side of k = Z/D_node
    "parallel.gpu.ep.t_comms": {"model": "deepseek-v3", "chip": "h100", "set": {"B": "2**22", "Z": "64"}},
    "parallel.gpu.ep.t_math": {"model": "deepseek-v3", "chip": "h100", "set": {"B": "2**22", "Z": "64"}},
    "parallel.gpu.ep.min_f_limit": {"model": "deepseek-v3", "chip": "h100", "set": {"B": "2**22", "Z": "64"}},
    "parallel.gpu.ep.min_f_few_nodes": {"model": "deepseek-v3", "chip": "h100", "set": {"B": "2**22", "Z": "64"}},
    "parallel.gpu.ep.min_f_many_nodes": {"model": "deepseek-v3", "chip": "h100", "set": {"B": "2**22", "Z": "256"}},
    # the expert layout [E_Z, D_X, F_Y] serves a mixture with X = 1 (inference.md, Worked Problem 6)
    **{f"inference.moe_layout.{name}": {"model": "mixtral-8x7b", "set": {"X": "1", "Y": "4", "Z": "8"}}
       for name in ("bytes_per_chip", "t_weights", "free_hbm", "t_ici")},
    # a training run of LLaMA-3 70B on 8192 chips for 90 days
    "transformer.mfu": {"set": {"n_dev": "8192", "t_run": "90*86400", "tokens": "15e12"}},
    "parallel.training_time": {"set": {"n_dev": "8192"}},
    # local attention needs a model with local layers: Gemma 2 27B (23 of 46 layers within 4096 tokens)
    **{name: {"model": "gemma2-27b"} for name in (
        "transformer.windowed_attention_flops", "transformer.local_attention_crossover_T",
        "inference.local.kv_bytes_per_sequence", "inference.local.kv_fraction")},
    # a VMEM prefetch of one layer's weights: LLaMA-3 70B's layers
    **{name: {"model": "llama3-70b"} for name in (
        "tpu.vmem.layers_held", "tpu.vmem.prefetch_hidden_fraction", "tpu.vmem.prefetch_exposed_time")},
}


@dataclass(frozen=True)
class Example:
    """A quantity's worked example: the command (after ``scalemath``), what it prints and how it was chosen."""

    args: tuple[str, ...]
    output: str
    chip: str | None
    model: str | None
    given: dict = field(default_factory=dict)     # symbol -> value typed with --set
    bound: tuple[str, ...] = ()                     # symbols the chip, dtype and model bound
    report: dict = field(default_factory=dict)    # the same command's --format json: closed form, steps, values


def _values(q: dict) -> dict[str, str]:
    topic = q["topic"]
    values = {**VALUES, **TOPIC_VALUES.get(topic, {})}
    out = {}
    for p in q["params"]:
        name = p["name"]
        if p["from_chip_or_dtype"]:
            if topic not in TOPICS_WITH_MODELS and name in BOOK_SHAPES:
                out[name] = BOOK_SHAPES[name]
            elif topic not in TOPICS_WITH_MODELS and name == "N":  # a vector's length, or a ring's devices
                out[name] = "4096" if q["name"].startswith("dot.") else "8" if _gpu(q) else "16"
            continue
        out[name] = values[name]
    return out


def _gpu(q: dict) -> bool:
    name = q["name"]
    return q["topic"] == "gpu" or ".gpu." in name or name.endswith("_gpu")


def _model(q: dict) -> str | None:
    names = {p["name"] for p in q["params"]}
    if q["topic"] not in TOPICS_WITH_MODELS or not names & MODEL_BOUND:
        return None
    return "mixtral-8x7b" if names & MIXTURE else "llama3-70b"


def _args(name: str, chip: str | None, model: str | None, given: dict[str, str]) -> list[str]:
    args = ["derive", name]
    if chip:
        args += ["--chip", chip]
    if model:
        args += ["--model", model]
    if given:
        args += ["--set", ",".join(f"{k}={v}" for k, v in sorted(given.items(), key=lambda kv: kv[0].lower()))]
    return args


def example(q: dict) -> Example:
    """The worked example of quantity ``q`` (an entry of ``scalemath quantities --format json``)."""
    override = OVERRIDES.get(q["name"], {})
    model = override.get("model", _model(q))
    given = {**_values(q), **override.get("set", {})}
    given = {k: v for k, v in given.items() if k in {p["name"] for p in q["params"]}}
    needs_chip = any(p["from_chip_or_dtype"] and p["name"] not in MODEL_BOUND for p in q["params"])
    chips = [override["chip"]] if "chip" in override else \
        [*([] if needs_chip else [None]), *(GPU_CHIPS if _gpu(q) else TPU_CHIPS)]
    tried = []
    for chip in chips:
        args = _args(q["name"], chip, model, given)
        code, out = run([*args, "--format", "json"])
        if code == 0 and json.loads(out).get("value") is not None:
            report = json.loads(out)
            bound = tuple(sorted((n for n in report["given"] if n not in given), key=str.lower))
            return Example(tuple(args), run_ok(args), chip, model, given, bound, report)
        tried.append(f"{' '.join(args)}: {out.strip().splitlines()[-1] if code else 'not a number'}")
    raise ValueError(f"no worked example for {q['name']}: " + "; ".join(tried))
