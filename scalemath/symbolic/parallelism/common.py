"""What the training chapters share: their sections, the symbols of the book's MLP model and the labels of
its times.

Every module of :mod:`scalemath.symbolic.parallelism` cites the book through these section names and builds its
expressions from these symbols (see that package's axes).
"""

from __future__ import annotations

from ..symbols import sym


SCALING = "training.md, 'What Do We Mean By Scaling?'"
DP = "training.md, 'Data Parallelism'"
FSDP = "training.md, 'Fully-Sharded Data Parallelism (FSDP)'"
TP = "training.md, 'Tensor Parallelism'"
MIXED = "training.md, 'Combining FSDP and Tensor Parallelism'"
MIXED_V1 = "training.md (Feb 2025 text), 'Combining FSDP and Tensor Parallelism': communication times summed"
PIPE = "training.md, 'Pipelining'"
DCN = "training.md, 'Scaling Across Pods'"
PROBLEMS = "training.md, 'Some Problems to Work'"
APPLIED = "applied-training.md, 'Counting parameters and FLOPs'"
GPU_DP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Data Parallelism'"
GPU_TP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Tensor Parallelism'"
GPU_EP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Expert Parallelism'"
GPU_PP = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Pipeline Parallelism'"
GPU_EX = "gpus.md, 'Rooflines for LLM Scaling on GPUs': 'Examples' and 'Quiz 5'"

B, D, F, L, P = sym("B"), sym("D"), sym("F"), sym("L"), sym("P")
C, W = sym("C"), sym("W")
W_ici, W_dcn, W_gpu, W_node = sym("W_ici"), sym("W_dcn"), sym("W_gpu"), sym("W_node")
X, Y, Z = sym("X"), sym("Y"), sym("Z")
M_X, M_Y = sym("M_X"), sym("M_Y")
n_dev, n_slice, n_mb = sym("n_dev"), sym("n_slice"), sym("n_mb")
b_x, b_w, b_opt = sym("b_x"), sym("b_w"), sym("b_opt")
E, k = sym("E"), sym("k")
D_node, M_nodes = sym("D_node"), sym("M_nodes")
H_chip, MFU, tokens, A_act, n_ckpt = sym("H_chip"), sym("MFU"), sym("tokens"), sym("A_act"), sym("n_ckpt")

T_MATH, T_COMMS = r"T_{\mathrm{math}}", r"T_{\mathrm{comms}}"
T_FSDP, T_TP = r"T_{\mathrm{FSDP}}", r"T_{\mathrm{TP}}"
