"""Published training runs the planner is held against (issue 27), as plain data.

Every row carries its citation (paper, table or section, page) and every input a planner needs to price it: the
model (a key of scalemath/catalog/models.toml), the chip (a key of the hardware catalog), the layout, the batch and
the sequence length. Figures are transcribed as the source prints them: a rounded figure is kept as the string it is
printed as ("43%", "4.4", "16M"), so a test can hold a computed value to the printed precision; whole numbers the
source prints exactly are ints. Anything a source does not state is ``None`` with a comment saying so; nothing here
is guessed. Derived values (a data-parallel degree read from the other columns, a step time implied by a throughput)
are not stored: tests/test_published_runs_data.py computes and checks them.

Sources (read in the papers themselves):

* Llama Team, AI @ Meta (Dubey et al.) 2024, "The Llama 3 Herd of Models", arXiv 2407.21783: Table 4 (p. 10 of the
  v3 PDF) and §§ 3.3.1, 3.3.2, 3.4.
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC21,
  arXiv 2104.04473: Table 1 (p. 8), § 5 (cluster, peak), § 5.1 (schedule, Eq. 2, Eq. 3), the appendix (FLOPs).
* DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv 2412.19437: Table 1 (p. 5), §§ 1, 3.1, 3.2, 3.2.1, 4.2.
* NVIDIA, Megatron-LM README at commit f2e5db402c (2024-07-15, "New scaling figures on H100 GPUs"): the model table
  (images/model_table.png, read from the image) and the text around it; the weak-scaling figure names the software,
  Megatron-Core r0.8.0; megatron/training/training.py at that commit counts the FLOPs.
* Calculon (calculon-ai/calculon at caa4b11), run side by side with scalemath at f50736f on the inputs recorded in
  CALCULON_INPUTS (a parameter-matched 405B application, H100 system file, the layouts below).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Citation:
    paper: str
    where: str  # table, section and page
    url: str


LLAMA3_PAPER = ("Llama Team, AI @ Meta (Dubey et al.) 2024, 'The Llama 3 Herd of Models'", "https://arxiv.org/abs/2407.21783")
MEGATRON_PAPER = ("Narayanan et al. 2021, 'Efficient Large-Scale Language Model Training on GPU Clusters Using "
                  "Megatron-LM' (SC21)", "https://arxiv.org/abs/2104.04473")
MCORE_README = ("NVIDIA, Megatron-LM README at commit f2e5db402c (2024-07-15), 'Training Speed and Scalability'",
                "https://github.com/NVIDIA/Megatron-LM/blob/f2e5db402c/README.md")
DEEPSEEK_PAPER = ("DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report'", "https://arxiv.org/abs/2412.19437")
CALCULON_RUN = ("recorded peer run: Calculon (calculon-ai/calculon at caa4b11) next to scalemath f50736f",
                "https://github.com/calculon-ai/calculon")


def _cite(paper: tuple[str, str], where: str) -> Citation:
    return Citation(paper[0], where, paper[1])


# =====================================================================================================================
# Llama 3 405B pre-training: Table 4, "Scaling configurations and MFU for each stage of Llama 3 405B pre-training"
# =====================================================================================================================

@dataclass(frozen=True)
class Llama3Layout:
    id: str
    gpus: int
    tp: int
    cp: int
    pp: int
    dp: int                  # DP is FSDP (§ 3.3.2)
    seq_len: int             # "Seq. Len."
    seqs_per_dp: int         # "Batch size/DP": sequences per data-parallel group
    tokens_per_batch: str    # "Tokens/Batch" as printed
    tflops_per_gpu: int      # "TFLOPs/GPU" as printed (the three printed figures are multiples of ten)
    bf16_mfu: str            # "BF16 MFU" as printed, in percent
    cite: Citation
    model: str = "llama3-405b"
    chip: str = "h100"
    note: str = ""


_T4 = "Table 4 (p. 10 of the v3 PDF) and § 3.3.2 'GPU utilization'"

LLAMA3_TABLE4 = (
    Llama3Layout("8K GPUs, 8K context", 8192, tp=8, cp=1, pp=16, dp=64, seq_len=8192, seqs_per_dp=32,
                 tokens_per_batch="16M", tflops_per_gpu=430, bf16_mfu="43", cite=_cite(LLAMA3_PAPER, _T4)),
    Llama3Layout("16K GPUs, 8K context", 16384, tp=8, cp=1, pp=16, dp=128, seq_len=8192, seqs_per_dp=16,
                 tokens_per_batch="16M", tflops_per_gpu=400, bf16_mfu="41", cite=_cite(LLAMA3_PAPER, _T4),
                 note="§ 3.3.2: the drop to 41 % from 43 % on 8K GPUs is due to the lower batch size per DP group"),
    Llama3Layout("16K GPUs, 128K context", 16384, tp=8, cp=16, pp=16, dp=8, seq_len=131072, seqs_per_dp=16,
                 tokens_per_batch="16M", tflops_per_gpu=380, bf16_mfu="38", cite=_cite(LLAMA3_PAPER, _T4),
                 note="DP = 8 as the v3 PDF prints it (8·16·16·8 = 16,384 GPUs, 16·131,072·8 = 2^24 tokens); the "
                      "arXiv HTML rendering dated July 23, 2024 prints DP = 4, which fits neither column"),
)

# The text's facts about the run that a planner needs (§ 3.3.2 unless said otherwise).
LLAMA3_SCHEDULE = MappingProxyType({
    "cite": _cite(LLAMA3_PAPER, "§ 3.3.2 'Pipeline parallelism improvements', Figure 6; §§ 3.3.1, 3.4.1, 3.4.2"),
    # "we use an interleaved schedule (narayanan2021efficient) with V pipeline stages on one pipeline rank"
    "pipeline_schedule": "interleaved 1F1B (Narayanan et al. 2021) with a tunable number N of consecutive "
                         "micro-batches per stage, between depth-first (N = PP) and breadth-first (N = M)",
    # V for the 405B run is not stated; Figure 6 illustrates 8 stages on 4 pipeline ranks (V = 2) with N = 5
    "virtual_stages": None,
    "figure_6_example": MappingProxyType({"pp_ranks": 4, "stages": 8, "N": 5}),
    # "Overall pipeline bubble ratio is (PP − 1)/(V·M)"
    "bubble_ratio": "(PP - 1) / (V * M)",
    # "we reduce one Transformer layer each from the first and the last stages": the first model chunk of the first
    # stage holds only the embedding, the last model chunk of the last stage only the output projection and loss
    "layers_removed_first_stage": 1,
    "layers_removed_last_stage": 1,
    # M is flexible: "fewer micro-batches than the number of stages when we have batch size limit at large scale, or
    # more micro-batches to hide point-to-point communication". Neither M nor the micro-batch size of the Table 4
    # runs is stated.
    "micro_batches": None,
    "micro_batch_size": None,
    "fewer_micro_batches_than_stages_allowed": True,
    # "we could pre-train Llama 3 on sequences of 8K tokens without activation checkpointing"
    "activation_checkpointing_at_8k": False,
    # FSDP shards optimizer states and gradients; model shards are not resharded after the forward pass
    "dp_kind": "FSDP: optimizer states and gradients sharded, weights kept gathered from forward to backward",
    "parallelism_order": ("TP", "CP", "PP", "DP"),
    # CP: all-gather of K and V, then attention for the local Q chunk; the sequence is cut into 2·CP chunks
    "cp_kind": "all-gather of K and V (not a ring); 2 x CP chunks, two per rank",
    # "Numerical stability": FP32 gradient accumulation over micro-batches and FP32 reduce-scatter in FSDP
    "fp32_gradient_accumulation": True,
    # § 3.3.1: H100 80 GB HBM3 at 700 W TDP, 8 GPUs per server over NVLink; RoCE at 400 Gbps between GPUs
    "gpus_per_server": 8,
    # § 3.4.1: 4M tokens of 4,096-token sequences at first, 8M of 8,192 after 252M tokens, 16M after 2.87T tokens
    "batch_schedule": (("4M", 4096, "from the start"), ("8M", 8192, "after 252M tokens"),
                       ("16M", 8192, "after 2.87T tokens")),
    # § 3.4.2: context raised in six stages from 8K to 128K on about 800B tokens
    "long_context_stages": 6,
    "long_context_tokens": "800B",
    # § 1 and § 2: 15.6T text tokens, 3.8 x 10^25 FLOPs
    "tokens": "15.6T",
    "training_flops": "3.8e25",
    # the BF16 peak that MFU divides by is not printed in the paper
    "peak_flops_per_s": None,
})


# =====================================================================================================================
# Megatron-LM: Table 1, "Weak-scaling throughput for GPT models ranging from 1 billion to 1 trillion parameters"
# =====================================================================================================================

@dataclass(frozen=True)
class MegatronRow:
    model: str                # catalog key (scalemath/catalog/models.toml)
    params_billion: str       # "Number of parameters (billion)"
    heads: int                # "Attention heads"
    hidden: int               # "Hidden size"
    layers: int               # "Number of layers"
    tp: int                   # "Tensor model-parallel size"
    pp: int                   # "Pipeline model-parallel size"
    gpus: int                 # "Number of GPUs"
    batch: int                # "Batch size", in sequences of 2048 tokens
    tflops_per_gpu: int       # "Achieved teraFLOP/s per GPU"
    percent_of_peak: str      # "Percentage of theoretical peak FLOP/s"
    aggregate_pflops: str     # "Achieved aggregate petaFLOP/s"
    cite: Citation
    chip: str = "a100"


_T1 = _cite(MEGATRON_PAPER, "Table 1 (p. 8) and § 5.1")


def _m(key, params, heads, hidden, layers, tp, pp, gpus, batch, tflops, percent, aggregate) -> MegatronRow:
    return MegatronRow(f"megatron-gpt-{key}", params, heads, hidden, layers, tp, pp, gpus, batch, tflops, percent,
                       aggregate, _T1)


MEGATRON_TABLE1 = (
    _m("1.7b", "1.7", 24, 2304, 24, 1, 1, 32, 512, 137, "44", "4.4"),
    _m("3.6b", "3.6", 32, 3072, 30, 2, 1, 64, 512, 138, "44", "8.8"),
    _m("7.5b", "7.5", 32, 4096, 36, 4, 1, 128, 512, 142, "46", "18.2"),
    _m("18.4b", "18.4", 48, 6144, 40, 8, 1, 256, 1024, 135, "43", "34.6"),
    _m("39.1b", "39.1", 64, 8192, 48, 8, 2, 512, 1536, 138, "44", "70.8"),
    _m("76.1b", "76.1", 80, 10240, 60, 8, 4, 1024, 1792, 140, "45", "143.8"),
    _m("145.6b", "145.6", 96, 12288, 80, 8, 8, 1536, 2304, 148, "47", "227.1"),
    _m("310.1b", "310.1", 128, 16384, 96, 8, 16, 1920, 2160, 155, "50", "297.4"),
    _m("529.6b", "529.6", 128, 20480, 105, 8, 35, 2520, 2520, 163, "52", "410.2"),
    _m("1t", "1008.0", 160, 25600, 128, 8, 64, 3072, 3072, 163, "52", "502.0"),
)

MEGATRON_SETUP = MappingProxyType({
    "cite": _cite(MEGATRON_PAPER, "§ 5 (cluster and peak), § 5.1 (schedule, Eq. 2, Eq. 3), appendix (FLOPs)"),
    # § 5.1: "All models use a vocabulary size (denoted by V) of 51,200 (multiple of 1024) and a sequence length (s)
    # of 2048"
    "seq_len": 2048,
    "vocab": 51200,
    # § 5.1: "we use the interleaved pipeline schedule with the scatter/gather optimization enabled"
    "interleaved_schedule": True,
    "scatter_gather": True,
    # the number of model chunks per pipeline rank of the Table 1 runs is not stated
    "virtual_stages": None,
    # the micro-batch size of the Table 1 runs is not stated (Table 1 and § 5.1 give none; § 5.5 finds the best
    # micro-batch model-dependent: 2 for a 91B model with (t, p) = (8, 8))
    "micro_batch_size": None,
    # § 5.1 on Eq. 3: "equation (3) assumes activation recomputation and takes into account the floating-point
    # operations associated with the extra forward pass"; appendix: "we are using activation recomputation"
    "activation_recomputation": "full",
    # Eq. 3, FLOPs per iteration of B sequences, GEMMs only (transformer layers and logits): "a lower bound for the
    # true FLOP count"; 4 x (24Bsh² + 4Bs²h) per layer (forward, twice that backward, a recomputed forward) plus
    # 6BshV for the logits. The achieved teraFLOP/s of Table 1 are these FLOPs over the measured time.
    "flops_formula": "96*B*s*l*h**2*(1 + s/(6*h) + V/(16*l*h))",
    # Eq. 2, the parameter count
    "params_formula": "12*l*h**2*(1 + 13/(12*h) + (V + s)/(12*l*h))",
    # § 5: "The peak device throughput of an A100 GPU with 16-bit precision is 312 teraFLOP/s"
    "peak_flops_per_s": 312 * 10**12,
    "precision": "mixed precision (16-bit)",
    # § 5: Selene; each node 8 NVIDIA 80-GB A100 GPUs connected by NVLink and NVSwitch, eight Mellanox 200 Gbps HDR
    # InfiniBand HCAs for application communication (two more for storage), a three-level fat tree of 850 switches;
    # § 5.1: 3072 GPUs are 384 DGX A100 nodes
    "cluster": "Selene, DGX A100",
    "gpus_per_node": 8,
    "intra_node": "NVLink and NVSwitch",
    "hcas_per_node": 8,
    "hca_gbit_per_s": 200,
    "storage_hcas_per_node": 2,
    "fabric": "three-level (leaf, spine, core) fat tree, 850 switches",
    # § 5.1: "throughput is measured for end-to-end training, i.e., includes all operations including data loading,
    # optimizer steps, communication, and logging"
    "measured": "end-to-end iterations",
})


# =====================================================================================================================
# Megatron-Core r0.8.0 on H100: the README's weak-scaling table (GPT models of 1.7B to 462B)
# =====================================================================================================================

@dataclass(frozen=True)
class MegatronCoreRow:
    model: str                # catalog key (scalemath/catalog/models.toml)
    size: str                 # "Model size" as printed
    heads: int                # "Attention heads"
    hidden: int               # "Hidden size"
    layers: int               # "Number of layers"
    tp: int                   # "Tensor MP size"
    pp: int                   # "Pipeline MP size"
    dp: int                   # "Data-parallel size"
    gpus: int                 # "Number of GPUs"
    batch: int                # "Batch size", in sequences of 4096 tokens
    tflops_per_gpu: str       # "Per-GPU teraFLOP/s" as printed (one decimal)
    mfu: str                  # "MFU" as printed, in percent
    aggregate_pflops: str     # "Aggregate petaFLOP/s" as printed
    cite: Citation
    chip: str = "h100"


_MC = _cite(MCORE_README, "images/model_table.png and the paragraph above it")


def _mc(size, heads, hidden, layers, tp, pp, dp, gpus, batch, tflops, mfu, aggregate) -> MegatronCoreRow:
    return MegatronCoreRow(f"megatron-core-gpt-{size.lower()}", size, heads, hidden, layers, tp, pp, dp, gpus, batch,
                           tflops, mfu, aggregate, _MC)


MCORE_H100 = (
    _mc("1.7B", 16, 2048, 24, 1, 1, 48, 48, 192, "408.8", "41", "19.6"),
    _mc("7.1B", 32, 4096, 30, 2, 1, 48, 96, 192, "465.9", "47", "44.7"),
    _mc("16B", 48, 6144, 32, 4, 1, 48, 192, 192, "489.1", "49", "93.9"),
    _mc("32B", 56, 7168, 48, 8, 1, 48, 384, 192, "459.6", "46", "176.5"),
    _mc("70B", 64, 8192, 84, 8, 2, 48, 768, 384, "419.7", "42", "322.3"),
    _mc("119B", 80, 10240, 92, 8, 4, 48, 1536, 768, "420.5", "43", "645.9"),
    _mc("177B", 96, 12288, 96, 8, 6, 48, 2304, 1152, "432.8", "44", "997.2"),
    _mc("314B", 128, 16384, 96, 8, 8, 48, 3072, 1536, "474.4", "48", "1457.4"),
    _mc("462B", 144, 18432, 112, 8, 16, 48, 6144, 3072, "459.9", "47", "2825.6"),
)

MCORE_SETUP = MappingProxyType({
    "cite": _cite(MCORE_README, "the README's text; images/weak_scaling.png's legend; training.py at that commit"),
    # "All models use a vocabulary size of 131,072 and a sequence length of 4096"
    "vocab": 131072,
    "seq_len": 4096,
    "software": "Megatron-Core r0.8.0",     # the weak-scaling figure's legend
    # "We perform fine-grained overlapping of data-parallel (--overlap-grad-reduce --overlap-param-gather),
    # tensor-parallel (--tp-comm-overlap) and pipeline-parallel communication (enabled by default) with computation"
    "overlap_grad_reduce": True,
    "overlap_param_gather": True,          # requires the distributed optimizer: ZeRO-1 over the data-parallel ranks
    "tp_comm_overlap": True,                # requires sequence parallelism
    "pp_comm_overlap": True,
    # "The reported throughputs are measured for end-to-end training and include all operations including data
    # loading, optimizer steps, communication, and even logging"
    "measured": "end-to-end iterations",
    # not stated: micro-batch size, virtual stages, activation recomputation, dropout, the precision (bf16 is
    # Megatron-LM's usual; MFU divides by the H100's bf16 peak), the FFN size (4h is the GPT default)
    "micro_batch_size": None,
    "virtual_stages": None,
    "recomputation": None,
    # megatron/training/training.py at f2e5db402c, num_floating_point_operations: 12·B·s·L·h²·((1 + g/a + s/h)·q/h
    # + F/h·k·(3/2 if SwiGLU) + V/(2·L·h)); for these MHA GELU models (g = a, q = h, F = 4h, k = 1) that is
    # 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)): attention over every position, no recomputation counted
    "flops_formula": "72*B*s*L*h**2*(1 + s/(6*h) + V/(12*L*h))",
    "peak_flops_per_s": None,               # not printed; the MFU column is the per-GPU figure over 989 TFLOP/s
})


# =====================================================================================================================
# DeepSeek-V3 pre-training
# =====================================================================================================================

@dataclass(frozen=True)
class DeepSeekV3Run:
    cite: Citation
    model: str = "deepseek-v3"
    chip: str = "h800"
    gpus: int = 2048                       # § 3.1
    gpus_per_node: int = 8                 # § 3.1: NVLink and NVSwitch inside a node, InfiniBand across nodes
    pp: int = 16                           # § 3.2: "16-way Pipeline Parallelism (PP)"
    ep: int = 64                           # § 3.2: "64-way Expert Parallelism (EP) spanning 8 nodes"
    ep_nodes: int = 8                      # § 4.2: routed experts "uniformly deployed on 64 GPUs belonging to 8 nodes"
    dp_kind: str = "ZeRO-1"                # § 3.2: "ZeRO-1 Data Parallelism (DP)"
    dp: None = None                        # the DP degree is not printed (2048 / (16 x 64) = 2 is derived)
    tp: None = None                        # § 3.2: trained "without using costly Tensor Parallelism (TP)"
    pipeline_schedule: str = "DualPipe"    # § 3.2.1; bubble (PP/2 - 1)(F&B + B - 3W) in its Table 2
    max_nodes_per_token: int = 4           # § 4.2: node-limited routing, "at most 4 nodes (i.e., M = 4)"
    seq_len: int = 4096                    # § 4.2: "maximum sequence length to 4K during pre-training"
    tokens: str = "14.8T"                  # § 4.2 (and § 1)
    batch_start: int = 3072                # § 4.2: sequences; "gradually increased from 3072 to 15360 in the
    batch_final: int = 15360               # training of the first 469B tokens, and then keeps 15360"
    batch_ramp_tokens: str = "469B"
    gpu_hours_pretraining: str = "2664K"   # Table 1 (p. 5), "in H800 GPU Hours"
    gpu_hours_context_extension: str = "119K"
    gpu_hours_post_training: str = "5K"
    gpu_hours_total: str = "2788K"         # § 1 text: "2.788M GPU hours for its full training"
    gpu_hours_per_trillion_tokens: str = "180K"  # § 1: "only 180K H800 GPU hours, i.e., 3.7 days on our cluster"
    days_per_trillion_tokens: str = "3.7"
    precision: str = "FP8 mixed precision"  # § 3.3
    # the achieved FLOP/s or MFU of the run is not printed in the report


DEEPSEEK_V3 = DeepSeekV3Run(cite=_cite(DEEPSEEK_PAPER, "Table 1 (p. 5), §§ 1, 3.1, 3.2, 3.2.1 and 4.2 (pp. 22-23)"))


# =====================================================================================================================
# Calculon on the Llama 3 405B layouts (a recorded side-by-side run)
# =====================================================================================================================

# The inputs of that run. Calculon has neither GQA nor SwiGLU: it models
# MHA, a vocabulary fixed at 51,200, a tied embedding and learned positions, so the run gave it a
# parameter-matched application whose layer has LLaMA-3 405B's weights: 4D² + 2·D·FF = 2D·NH + 2D·KH + 3DF.
CALCULON_INPUTS = MappingProxyType({
    "cite": Citation(CALCULON_RUN[0], "the run's inputs (LLaMA-3 405B on 16,384 H100, 16 Mi tokens)", CALCULON_RUN[1]),
    "calculon_commit": "caa4b11",
    "application": "405B-128",
    "hidden": 16384,
    "feedforward": 64512,
    "seq_size": 8192,
    "attn_heads": 128,
    "attn_size": 128,
    # 128 blocks, not LLaMA's 126: Calculon needs PP to divide the block count (with 126 it can try only PP 1 or 2)
    "num_blocks": 128,
    "params_by_calculon": "409.0G",   # "409.0 G by lpc"
    "vocab": 51200,                   # fixed in Calculon
    "system": "systems/h100_80g_nvl8.json, with mem2.GiB = 0 (no offload tier) for the searches",
    "gpus": 16384,
    "batch_sequences": 2048,
    "tokens_per_batch": 2048 * 8192,  # 16 Mi
    "search": "TP 8; PP in {8, 16, 32}; every interleaving, recompute mode, optimizer sharding, TP comm type, "
              "micro-batch and network; no offload",
    "matched_to": "llama3-405b",
})


@dataclass(frozen=True)
class CalculonRun:
    id: str
    tp: int
    pp: int
    dp: int
    interleave: int            # model chunks per pipeline rank
    overlap: bool              # TP/DP communication overlapped with compute
    step_s: str                # as recorded
    mfu_percent: str
    memory_gib: str            # per GPU
    searched: int | None       # configurations searched (None: the layout was pinned)
    cite: Citation
    note: str = ""


_C12 = Citation(CALCULON_RUN[0], "the run's results: config, step, MFU, memory per GPU", CALCULON_RUN[1])

CALCULON_405B = (
    CalculonRun("best, no overlap", tp=8, pp=8, dp=256, interleave=16, overlap=False, step_s="7.90",
                mfu_percent="34.4", memory_gib="79.9", searched=2712, cite=_C12, note="attention-only recompute"),
    CalculonRun("Meta's layout, no overlap", tp=8, pp=16, dp=128, interleave=8, overlap=False, step_s="8.05",
                mfu_percent="33.8", memory_gib="77.1", searched=None, cite=_C12),
    CalculonRun("best, with TP/DP overlap", tp=8, pp=8, dp=256, interleave=16, overlap=True, step_s="5.89",
                mfu_percent="46.2", memory_gib="78.8", searched=16688, cite=_C12, note="ring TP overlap"),
    CalculonRun("Meta's layout, with overlap", tp=8, pp=16, dp=128, interleave=8, overlap=True, step_s="6.23",
                mfu_percent="43.7", memory_gib="76.1", searched=None, cite=_C12),
)
