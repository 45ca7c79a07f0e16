"""Every SymPy symbol the engine uses, made once, with its meaning and unit.

Symbols are ``positive=True`` (``nonnegative`` for a term a model may lack; not ``integer=True``: ``solve`` would then drop
non-integer roots). Nobody else calls ``sympy.Symbol``; look symbols up here.

>>> SYMBOLS["B"].unit, SYMBOLS["W"].unit
('token', 'byte/s')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import sympy as sp

__all__ = ["SymbolInfo", "SYMBOLS", "sym", "latex_name", "dim_symbol"]


@dataclass(frozen=True)
class SymbolInfo:
    """A symbol with its meaning, its unit and how it prints in LaTeX."""

    symbol: sp.Symbol
    meaning: str
    unit: str
    latex: str


#: Symbols that may be 0 (a term a model may not have; b_opt = 0 is plain SGD, which keeps no state; A_act = 0 asks
#: for model states only); every other symbol is positive.
NONNEGATIVE = frozenset({"P_extra", "P_exp", "L_moe", "r_remat", "f_bubble", "b_opt", "A_act", "P_out", "P_pos",
                         "o_tp", "o_ep", "o_dp", "o_pg", "u_attn", "s_sp", "d_drop", "z_2", "q_sel", "a_tp", "a_cp", "a_ep", "a_pp", "a_fsdp", "a_dp", "s_gpipe", "L_loc"})


def _table(*rows: tuple[str, str, str, str]) -> Mapping[str, SymbolInfo]:
    out = {}
    for name, latex, unit, meaning in rows:
        if name in out:
            raise ValueError(f"symbol {name} defined twice")
        symbol = sp.Symbol(name, nonnegative=True) if name in NONNEGATIVE else sp.Symbol(name, positive=True)
        out[name] = SymbolInfo(symbol, meaning, unit, latex)
    return MappingProxyType(out)


SYMBOLS: Mapping[str, SymbolInfo] = _table(
    # sizes of arrays and models (the book's letters)
    ("B", "B", "token", "batch size in tokens (per replica)"),
    ("T", "T", "token", "sequence length"),
    ("D", "D", "element", "model width; the contracting dimension of X[B,D]·Y[D,F]"),
    ("F", "F", "element", "output / MLP width; the non-contracting dimension of Y[D,F]"),
    ("N", "N", "element", "vector length (dot product), devices on a ring axis (collectives), or query "
                          "heads (transformers): the book uses the letter for all three"),
    ("P", "P", "param", "number of parameters"),
    ("P_active", r"P_{\mathrm{active}}", "param",
     "parameters one token goes through: P for a dense model, attention plus k of E experts for a mixture"),
    ("n_mlp", r"n_{\mathrm{mlp}}", "1", "weight matrices per MLP: 3 gated (SwiGLU, GeGLU), 2 plain (GELU, ReLU)"),
    ("n_emb", r"n_{\mathrm{emb}}", "1", "embedding matrices: 2 separate embedding and unembedding, 1 tied"),
    ("P_extra", r"P_{\mathrm{extra}}", "param",
     "per-layer parameters besides the weight matrices and two norms: biases, QK-norm scales, attention sinks, "
     "extra norms (0 for the book's models)"),
    ("P_out", r"P_{\mathrm{out}}", "param",
     "parameters outside the layers besides the embedding matrices: the final norm, a learned position table, a "
     "norm after the embedding (the book's count leaves them out)"),
    ("P_pos", r"P_{\mathrm{pos}}", "param", "parameters of a learned position table (0 with rotary or ALiBi)"),
    ("n_seq", r"n_{\mathrm{seq}}", "sequence", "number of sequences"),
    ("S", "S", "token", "key/value (context) length: the tokens attended to"),
    ("n_dev", r"n_{\mathrm{dev}}", "chip", "number of devices (chips or GPUs)"),
    # generic costs
    ("FLOPs", r"\mathrm{FLOPs}", "FLOP", "floating-point (or integer) operations performed"),
    ("bytes", r"\mathrm{bytes}", "byte", "bytes moved"),
    ("AI", r"\mathrm{AI}", "FLOP/byte", "arithmetic intensity of an algorithm"),
    # bytes per element of each operand of a matmul / dot product
    ("b_x", "b_x", "byte", "bytes per element of the activations X"),
    ("b_w", "b_w", "byte", "bytes per element of the weights Y"),
    ("b_o", "b_o", "byte", "bytes per element of the output Z"),
    # hardware
    ("C", "C", "FLOP/s", "peak FLOPs/s of one chip in the compute dtype"),
    ("W", "W", "byte/s", "bandwidth of the level the data crosses"),
    ("W_hbm", r"W_{\mathrm{hbm}}", "byte/s", "HBM bandwidth per chip"),
    ("W_vmem", r"W_{\mathrm{vmem}}", "byte/s", "VMEM bandwidth per chip"),
    ("W_ici", r"W_{\mathrm{ici}}", "byte/s", "ICI bandwidth per axis, bidirectional"),
    ("W_link", r"W_{\mathrm{link}}", "byte/s", "one link's bandwidth in one direction (--chip: a TPU's ICI link)"),
    ("W_pcie", r"W_{\mathrm{pcie}}", "byte/s", "PCIe bandwidth per chip, each way"),
    ("W_dcn", r"W_{\mathrm{dcn}}", "byte/s", "DCN egress bandwidth per chip"),
    ("t_hop", r"t_{\mathrm{hop}}", "s", "latency of one ICI hop"),
    ("a_hop", r"\alpha", "s", "fixed latency of one send of a collective (one hop of a ring or of a tree)"),
    ("hops", r"\mathrm{hops}", "hop", "number of chip-to-chip hops"),
    ("links", r"\mathrm{links}", "link", "number of links used at once"),
    ("H_chip", r"M_{\mathrm{chip}}", "byte", "HBM capacity per chip"),
    ("cores", r"\mathrm{cores}", "core", "TensorCores per chip"),
    ("host", r"n_{\mathrm{host}}", "chip", "chips per host"),
    ("X", "X", "chip", "size of mesh / torus axis X"),
    ("Y", "Y", "chip", "size of mesh / torus axis Y"),
    ("Z", "Z", "chip", "size of mesh / torus axis Z"),
    ("s_mxu", r"s_{\mathrm{mxu}}", "element", "side of the MXU systolic array"),
    ("n_mxu", r"n_{\mathrm{mxu}}", "unit", "MXUs per chip"),
    ("f_clk", r"f_{\mathrm{clk}}", "Hz", "clock frequency"),
    ("r_bw", "r", "1", "ratio of two bandwidths"),
    ("b_m", "b_m", "element", "tile rows of the LHS"),
    ("b_n", "b_n", "element", "tile columns of the RHS"),
    # inside a GPU (gpus.md 'What Is a GPU?', 'Memory', Quiz 1) and a TPU's vector unit (tpus.md Appendix A)
    ("n_sm", r"n_{\mathrm{SM}}", "unit", "streaming multiprocessors (SMs) per GPU"),
    ("n_sub", r"n_{\mathrm{sub}}", "unit", "subpartitions per SM, each with a warp scheduler and one Tensor Core"),
    ("n_lane", r"n_{\mathrm{lane}}", "unit", "fp32 CUDA cores (SIMD lanes) per subpartition"),
    ("n_tc", r"n_{\mathrm{TC}}", "unit", "Tensor Cores per SM (as NVIDIA counts them)"),
    ("n_reg", r"n_{\mathrm{reg}}", "unit", "32-bit registers per subpartition"),
    ("b_reg", r"b_{\mathrm{reg}}", "byte", "bytes per register (4: registers are 32 bits)"),
    ("r_thread", r"r_{\mathrm{thread}}", "unit", "32-bit registers each thread uses"),
    ("n_warp", r"n_{\mathrm{warp}}", "unit", "most warps resident on one SM"),
    ("M_smem", r"M_{\mathrm{SMEM}}", "byte", "SMEM (L1 / shared memory) per SM"),
    ("M_l2", r"M_{\mathrm{L2}}", "byte", "L2 cache per GPU"),
    ("W_l2", r"W_{\mathrm{L2}}", "byte/s", "L2 bandwidth per GPU (measured)"),
    ("f_boost", r"f_{\mathrm{boost}}", "Hz", "boost clock frequency"),
    ("C_vec", r"C_{\mathrm{vec}}", "FLOP/s",
     "fp32 vector FLOPs/s of one chip (CUDA cores or the VPU), a fused multiply-add counted as 2"),
    ("F_tc", r"F_{\mathrm{TC}}", "FLOP", "bf16 FLOPs one Tensor Core does per cycle"),
    ("n_sublane", r"n_{\mathrm{sublane}}", "unit", "sublanes of a TPU vector unit (8)"),
    ("n_vlane", r"n_{\mathrm{lane}}", "unit", "lanes of a TPU vector unit (128)"),
    ("n_alu", r"n_{\mathrm{ALU}}", "unit", "fp32 ALUs per lane of a TPU vector unit"),
    ("n_ici", r"n_{\mathrm{ICI}}", "link", "ICI links (torus neighbours) of one TPU"),
    # around a GPU: NVLink node, scale-out switches, racks (gpus.md 'Networking', 'Beyond the node level')
    ("n_nvl", r"n_{\mathrm{NVL}}", "link", "NVLink links of one GPU"),
    ("W_nvl", r"W_{\mathrm{NVL}}", "byte/s", "one NVLink link's bandwidth, one direction"),
    ("W_nic", r"W_{\mathrm{NIC}}", "byte/s", "scale-out NIC bandwidth of one GPU, one direction"),
    ("n_nvs", r"n_{\mathrm{NVS}}", "unit", "NVSwitches in one node"),
    ("k_nvs", r"k_{\mathrm{NVS}}", "unit", "NVLink ports of one NVSwitch"),
    ("k_sw", r"k_{\mathrm{sw}}", "unit", "ports of one scale-out (InfiniBand / Ethernet) switch"),
    ("W_port", r"W_{\mathrm{port}}", "byte/s", "one scale-out switch port (one cable), one direction"),
    ("n_rack", r"n_{\mathrm{rack}}", "chip", "chips in one rack"),
    # transformer configuration (book part 4); D, F, N (query heads), K (KV heads), T, S, B are above
    ("H", "H", "element", "head dimension"),
    ("L", "L", "layer", "number of transformer layers"),
    ("V_vocab", "V", "token", "vocabulary size (V in the book; V alone is a collective's bytes)"),
    ("E", "E", "expert", "experts in a mixture-of-experts layer"),
    ("k", "k", "expert", "experts each token is routed to"),
    # array dimensions of the sharding notation (A[I, J] · B[J, K])
    ("I", "I", "element", "rows of A in A[I,J]·B[J,K]"),
    ("J", "J", "element", "the contracting dimension of A[I,J]·B[J,K]"),
    ("K", "K", "element", "columns of B in A[I,J]·B[J,K], or key/value heads (transformers)"),
    # collectives (sharding.md, gpus.md)
    ("V", "V", "byte", "bytes a collective works on: the gathered array (AllGather), the unreduced "
                       "input per device (ReduceScatter, AllReduce), the whole array (AllToAll)"),
    ("N_axes", r"N_{\mathrm{axes}}", "axis", "number of mesh axes a collective runs over at once"),
    ("W_gpu", r"W_{\mathrm{gpu}}", "byte/s", "NVLink egress bandwidth of one GPU, one direction"),
    ("W_node", r"W_{\mathrm{node}}", "byte/s", "scale-out (InfiniBand/Ethernet) egress of one NVLink node, one direction"),
    ("W_su", r"W_{\mathrm{su}}", "byte/s", "uplink of one leaf group (scalable unit) to the spine, one direction"),
    ("D_node", r"D_{\mathrm{node}}", "chip", "GPUs in one NVLink domain (node): the fan-in of the node level"),
    ("D_leaf", r"D_{\mathrm{leaf}}", "node", "nodes under one leaf group (scalable unit) of a fat tree"),
    ("D_spine", r"D_{\mathrm{spine}}", "unit", "leaf groups (scalable units) under the spine of a fat tree"),
    ("M_nodes", "M", "node", "number of NVLink nodes a collective spans"),
    ("eta", r"\eta", "1", "achieved share of the advertised bandwidth (measured / advertised)"),
    ("k_top", "k", "1", "destinations (experts) each token is sent to in a top-k AllToAll"),
    ("t_meas", r"t_{\mathrm{meas}}", "s", "measured runtime of a collective"),
    # parallelism for training (training.md, applied-training.md, gpus.md 'Rooflines for LLM Scaling')
    ("M_X", "M_X", "axis", "hardware mesh axes the data / FSDP parallelism (X) spans"),
    ("M_Y", "M_Y", "axis", "hardware mesh axes the tensor parallelism (Y) spans"),
    ("MFU", r"\mathrm{MFU}", "1", "model FLOPs utilisation: achieved over peak FLOPs/s"),
    ("HFU", r"\mathrm{HFU}", "1",
     "hardware FLOPs utilisation: FLOPs the chips ran (recomputed ones included) over peak FLOPs/s"),
    ("C_ach", r"C_{\mathrm{ach}}", "FLOP/s", "FLOPs/s one chip achieves in training (as papers print it)"),
    ("r_tok", r"r_{\mathrm{tok}}", "token/s", "training throughput of one chip: tokens per second per chip"),
    ("n_flop", r"\mathrm{FLOPs}", "FLOP", "a number of floating-point operations (a run's total, say)"),
    ("chip_hours", r"h_{\mathrm{chip}}", "chip-hour", "chip-hours (GPU-hours) of a run: chips x hours"),
    ("tokens", r"\mathrm{tokens}", "token", "tokens trained on over the whole run"),
    ("b_opt", r"b_{\mathrm{opt}}", "byte", "optimizer-state bytes per parameter (Adam: two fp32 moments, 8)"),
    ("A_act", r"A_{\mathrm{act}}", "byte", "activation bytes kept for the backward pass, over the whole batch"),
    ("n_ckpt", "c", "1", "activation checkpoints of shape [B, D] kept per layer"),
    ("n_slice", "M", "chip", "chips in one ICI-connected slice (M in the book's DCN section)"),
    ("n_mb", r"N_{\mathrm{MB}}", "1", "pipeline microbatches per batch"),
    # one training configuration (scalemath plan): degrees of each kind of parallelism and the bandwidth
    # each axis crosses; n_dp x n_fsdp x n_tp x n_pp chips, the n_ep expert shards carved out of the n_dp replicas
    ("n_dp", r"n_{\mathrm{DP}}", "chip", "pure data-parallel replicas (weights copied, gradients all-reduced)"),
    ("n_fsdp", r"n_{\mathrm{FSDP}}", "chip", "FSDP (ZeRO-3) shards: weights, gradients and optimizer state split"),
    ("n_tp", r"n_{\mathrm{TP}}", "chip", "tensor-parallel (Megatron) degree"),
    ("n_pp", r"n_{\mathrm{PP}}", "chip", "pipeline stages"),
    ("n_ep", r"n_{\mathrm{EP}}", "chip", "expert-parallel shards (carved out of the data-parallel replicas)"),
    ("n_zero", r"n_{\mathrm{Z1}}", "chip",
     "replicas the optimizer state is also split over (ZeRO-1: n_DP; 1 when each replica keeps all of it)"),
    ("r_remat", "r", "1", "forward passes redone in the backward pass (1 with block rematerialisation, else 0)"),
    ("f_bubble", r"f_{\mathrm{bubble}}", "1",
     "share of the pipeline's n_PP - 1 fill-and-drain slots left idle (GPipe and 1F1B: 1; zero-bubble: 0)"),
    ("P_exp", r"P_{\mathrm{exp}}", "param", "parameters in the routed experts (0 for a dense model)"),
    ("L_moe", r"L_{\mathrm{MoE}}", "layer", "layers with routed experts (0 for a dense model)"),
    ("W_tp", r"W_{\mathrm{TP}}", "byte/s", "per-chip bandwidth of the network the tensor-parallel axis crosses"),
    ("W_fsdp", r"W_{\mathrm{FSDP}}", "byte/s", "per-chip bandwidth of the network the FSDP axis crosses"),
    ("W_dp", r"W_{\mathrm{DP}}", "byte/s", "per-chip bandwidth of the network the data-parallel axis crosses"),
    ("W_ep", r"W_{\mathrm{EP}}", "byte/s", "per-chip bandwidth of the network the expert-parallel axis crosses"),
    ("W_pp", r"W_{\mathrm{PP}}", "byte/s", "per-chip bandwidth between pipeline stages"),
    ("W_cp", r"W_{\mathrm{CP}}", "byte/s", "per-chip bandwidth of the network the context-parallel axis crosses"),
    ("n_cp", r"n_{\mathrm{CP}}", "chip",
     "context-parallel degree: each sequence split over n_CP chips, attention's keys and values passed among them"),
    ("n_v", "v", "1", "virtual pipeline stages per device (interleaved 1F1B; 1 for GPipe, 1F1B and zero-bubble)"),
    ("s_gpipe", r"s_{\mathrm{GPipe}}", "1",
     "1 for GPipe (every micro-batch's activations kept until its backward pass), 0 for the 1F1B family"),
    ("C_mm", r"C_{\mathrm{mm}}", "FLOP/s",
     "matmul FLOPs/s one chip achieves on large GEMMs in the run's dtype (a measured figure, below the peak C)"),
    ("H_att", r"H_{\mathrm{att}}", "element",
     "head dimension of attention's dot products: H, or with latent attention the mean of the query-key and value "
     "head dimensions"),
    ("kv_cp", r"\mathrm{KV}_{\mathrm{CP}}", "element",
     "key and value elements per token and layer that context parallelism passes: 2·K·H, or with latent attention "
     "the N heads' keys and values as attention uses them"),
    ("C_attn", r"C_{\mathrm{attn}}", "FLOP/s",
     "FLOPs/s one chip achieves in attention's dot products (a fused kernel's measured rate; unfused, the GEMMs')"),
    ("o_tp", r"o_{\mathrm{TP}}", "1", "1 when the tensor-parallel collectives overlap compute, 0 when exposed"),
    ("o_ep", r"o_{\mathrm{EP}}", "1", "1 when the expert AllToAlls overlap compute (DualPipe), 0 when exposed"),
    ("o_dp", r"o_{\mathrm{DP}}", "1",
     "1 when the gradient reduction overlaps the last micro-batch's backward pass, 0 when it waits for it"),
    ("o_pg", r"o_{\mathrm{PG}}", "1",
     "1 when ZeRO's AllGather of the updated weights overlaps the next step's first forward pass (Megatron-LM's "
     "--overlap-param-gather), 0 when the step waits for it"),
    ("m_route", r"M_{\mathrm{route}}", "1",
     "copies of a token an expert dispatch sends over the scale-out network at most: k, or the nodes its routing is "
     "limited to (DeepSeek-V3: 4), the copies for one node's experts forwarded there over NVLink"),
    ("q_sel", r"q_{\mathrm{sel}}", "1",
     "1 with selective recomputation (attention's scores recomputed, Korthikanti et al. 2022), else 0"),
    ("z_2", r"z_{2}", "1",
     "1 with ZeRO-2 (gradients split over the data-parallel replicas too, reduce-scattered every micro-batch), else 0"),
    ("s_sp", r"s_{\mathrm{SP}}", "1",
     "1 with sequence parallelism (norms, dropouts and residual adds split over the TP ranks, Korthikanti et al. "
     "2022), 0 when each TP rank runs them on every token"),
    ("d_drop", r"d_{\mathrm{drop}}", "1", "1 when the model trains with dropout (masks written and read), else 0"),
    ("u_attn", r"u_{\mathrm{attn}}", "1",
     "1 when attention runs unfused (scores materialised in HBM, every position multiplied), 0 for a fused "
     "causal kernel (FlashAttention)"),
    ("a_tp", r"\alpha_{\mathrm{TP}}", "s", "fixed cost of one collective step on the tensor-parallel axis's network"),
    ("a_cp", r"\alpha_{\mathrm{CP}}", "s", "fixed cost of one collective step on the context-parallel axis's network"),
    ("a_ep", r"\alpha_{\mathrm{EP}}", "s", "fixed cost of one collective step on the expert-parallel axis's network"),
    ("a_pp", r"\alpha_{\mathrm{PP}}", "s", "fixed cost of one transfer between pipeline stages"),
    ("a_fsdp", r"\alpha_{\mathrm{FSDP}}", "s", "fixed cost of one collective step on the FSDP axis's network"),
    ("a_dp", r"\alpha_{\mathrm{DP}}", "s", "fixed cost of one collective step on the data-parallel axis's network"),
    # transformer accounting (transformers.md)
    ("b_g", "b_g", "byte", "bytes per gradient element (often the weights' dtype, or fp32: 4)"),
    ("t_run", r"t_{\mathrm{run}}", "s", "wall-clock time of a training run (or step) on n_dev chips"),
    # serving (inference.md, applied-inference.md)
    ("b_kv", r"b_{\mathrm{kv}}", "byte", "bytes per element of the KV cache (bf16 2, int8 and fp8 1, int4 1/2)"),
    ("kv_token", r"\mathrm{KV}_{\mathrm{tok}}", "byte",
     "KV cache bytes one token adds over all layers (2·L·K·H·b_kv with standard attention)"),
    ("n_gen", "G", "token", "tokens generated per request (the decode length)"),
    ("t_step", r"T_{\mathrm{step}}", "s", "time of one decode (generate) step"),
    ("t_prefill", r"T_{\mathrm{prefill}}", "s", "time to prefill one request's prompt (time to first token)"),
    ("price", r"p_{\mathrm{chip}}", "cent", "price of one chip-hour, in cents"),
    ("t_hour", r"t_{\mathrm{h}}", "s", "seconds in one hour (3600): turns a chip-hour price into a rate"),
    ("a_acc", r"\alpha", "1", "probability that the target model accepts one drafted token (speculative decoding)"),
    ("n_draft", r"\gamma", "token", "tokens the drafter proposes per verification round (speculative decoding)"),
    ("r_draft", "c", "1", "time of one draft step over one target decode step (speculative decoding)"),
    ("n_emit", r"\tau", "token",
     "mean tokens emitted per verification round: accepted drafts plus the target's own (speculative decoding)"),
    ("t_comms", r"T_{\mathrm{comms}}", "s", "time of one decode step's model-parallel collectives, all layers"),
    ("t_coll", r"t_{\mathrm{coll}}", "s",
     "least time of one collective however small (launch and synchronisation latency; GPUs, where the catalog "
     "gives no hop latency)"),
    ("T_pre", r"T_{\mathrm{pre}}", "token", "prompt tokens every request shares (a cached prefix: system prompt, "
     "few-shot examples, earlier turns)"),
    ("m_kv", r"m_{\mathrm{KV}}", "layer", "consecutive layers that share one KV cache (cross-layer KV sharing)"),
    ("s_page", r"s_{\mathrm{page}}", "token", "tokens one page of a paged KV cache holds (PagedAttention's block)"),
    ("S_max", r"S_{\max}", "token", "context a cache slot is allocated for when the cache is padded, not paged"),
    ("w_win", r"w", "token", "window of a local (sliding-window) attention layer: the positions it attends to "
                             "and keeps in its KV cache"),
    ("L_loc", r"L_{\mathrm{loc}}", "layer", "layers that attend locally, within the window w; the other L − L_loc "
                                           "attend to the whole context"),
    ("T_max", r"T_{\max}", "token", "longest prompt of a batch prefilled together: every prompt is padded to it"),
    ("T_avg", r"\bar{T}", "token", "mean prompt length of a batch prefilled together"),
    ("k_lat", r"k_{\mathrm{lat}}", "1", "how many times the batch-1 step time a slower operating point takes"),
    ("a_tw", "a", "unit", "short side of a 2a x a (twisted) torus, in chips"),
    ("M_vmem", r"M_{\mathrm{VMEM}}", "byte", "VMEM capacity of one TPU chip (its on-chip scratchpad)"),
    ("n_elem", r"n_{\mathrm{elem}}", "unit", "elements of an elementwise op, one GPU thread each"),
    ("c_if", r"c_{\mathrm{if}}", "cycle", "cycles of a branch's if path"),
    ("c_else", r"c_{\mathrm{else}}", "cycle", "cycles of a branch's else path"),
    ("k_if", r"k_{\mathrm{if}}", "unit", "threads of a 32-thread warp that take the if path (the rest take else)"),
    ("n_idle", r"n_{\mathrm{idle}}", "axis", "mesh axes an array is only replicated over, resharded onto before a "
                                             "collective"),
    ("f_bw", r"f_{\mathrm{bw}}", "1", "share of a link's bandwidth a transfer reaches (below 1)"),
    ("f_dcn", r"f_{\mathrm{DCN}}", "1", "share of a transfer's bytes sent over DCN, the rest over ICI"),
    ("M_off", r"M_{\mathrm{off}}", "byte", "bytes per chip kept in host memory and moved each way every step"),
    ("W_host", r"W_{\mathrm{host}}", "byte/s", "host link per chip, one direction (PCIe; NVLink-C2C on a Grace "
                                             "superchip)"),
    ("t_cmp", r"T_{\mathrm{comp}}", "s", "compute time of one training step per chip, which a host transfer "
                                       "can overlap"),
)


def sym(name: str) -> sp.Symbol:
    """The symbol called ``name``."""
    return SYMBOLS[name].symbol


def latex_name(symbol: sp.Symbol) -> str:
    """How a symbol prints in LaTeX (the book's typography)."""
    return SYMBOLS[symbol.name].latex


@functools.cache
def dim_symbol(name: str) -> sp.Symbol:
    """The symbol for an array dimension named in sharding notation.

    The book's letters (B, D, F, I, J, K, ...) are the symbols above; any other
    dimension name a user writes gets a positive symbol of its own, made once here.
    """
    if name in SYMBOLS:
        return SYMBOLS[name].symbol
    return sp.Symbol(name, positive=True)
