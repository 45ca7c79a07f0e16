"""What the transformer chapter's forms share: its sections and the book's symbols.

Symbols are the book's: D model width, F MLP width, N query heads, K key/value heads, H head dimension, L layers,
V (``V_vocab``) vocabulary, E experts and k experts per token; ``n_mlp`` and ``n_emb`` are the architecture's
matrices per MLP and embedding matrices, which ``--model`` binds.
"""

from __future__ import annotations

from ..symbols import sym


PARAMS_SRC = "transformers.md, 'Global FLOPs and Params Calculation'"
RULE = "transformers.md, 'General rule of thumb for Transformer FLOPs'"
FRACTION = "transformers.md, 'Fractional cost of attention with context length'"
MOE = "transformers.md, 'Sparsity and Mixture-of-Experts'"
REMAT = "transformers.md, 'Gradient checkpointing'"
KV = "transformers.md, 'Key-Value (KV) caching'"
PROBLEMS = "transformers.md, 'A Few Problems to Work'"
TRAINING = "training.md, 'Some Problems to Work'"
APPLIED = "applied-training.md, 'Counting parameters and FLOPs'"

B, T, S = sym("B"), sym("T"), sym("S")
D, F, N, K, H, L = sym("D"), sym("F"), sym("N"), sym("K"), sym("H"), sym("L")
V, E, k = sym("V_vocab"), sym("E"), sym("k")
P, P_act, TOKENS = sym("P"), sym("P_active"), sym("tokens")
n_mlp, n_emb, P_extra = sym("n_mlp"), sym("n_emb"), sym("P_extra")
b_x, b_w, b_g, b_opt, n_ckpt = sym("b_x"), sym("b_w"), sym("b_g"), sym("b_opt"), sym("n_ckpt")
C, W, n_dev, MFU, t_run = sym("C"), sym("W"), sym("n_dev"), sym("MFU"), sym("t_run")

ARCH = ("the model's architecture enters as symbols bound from --model: n_mlp weight matrices per MLP "
        "(3 gated, 2 plain) and n_emb embedding matrices (1 tied, 2 untied); without a model, the book's 3 and 2")
