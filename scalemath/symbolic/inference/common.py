"""What the serving chapters share: their sections, symbols and the labels of a decode step's times.

Every module of :mod:`scalemath.symbolic.inference` cites the book through these section names and builds its
expressions from these symbols (see that package's conventions).
"""

from __future__ import annotations

from ..symbols import sym


LINEAR = "inference.md, 'Linear operations: what bottlenecks us?'"
ATTENTION = "inference.md, 'What about attention?'"
ESTIMATES = "inference.md, 'Theoretical estimates for LLM latency and throughput'"
MEMORY = "inference.md, 'What about memory?'"
GENERATION = "inference.md, 'Distributing Inference Over Multiple Accelerators': 'Generation'"
KV_SHARDING = "inference.md, 'Sharding the KV cache'"
PROBLEMS = "inference.md, 'Worked Problems'"
APPENDIX_B = "inference.md, 'Appendix B: 2D Weight Stationary sharding' and Worked Problem 7"
APPENDIX_C = "inference.md, 'Appendix C: Latency bound communications'"
APPENDIX_D = "inference.md, 'Appendix D: Speculative Sampling'"
STORY = "applied-inference.md, 'What's the LLaMA Serving Story?'"
THROUGHPUT = "applied-inference.md, 'Thinking about throughput'"
PREFILL = "applied-inference.md, 'What about prefill?'"
PARETO = "applied-inference.md, 'Visualizing the Latency Throughput Tradeoff'"
MOE_SERVING = "transformers.md, 'Sparsity and Mixture-of-Experts'"


_NOT_IN_BOOK = "Not printed in the book: it follows from the book's step-time model."

B, S, T = sym("B"), sym("S"), sym("T")
D, F, K, H, L = sym("D"), sym("F"), sym("K"), sym("H"), sym("L")
P, P_act, C, W, n = sym("P"), sym("P_active"), sym("C"), sym("W"), sym("n_dev")
W_ici, W_link, t_hop = sym("W_ici"), sym("W_link"), sym("t_hop")
b_w, b_x, b_kv, kv = sym("b_w"), sym("b_x"), sym("b_kv"), sym("kv_token")
H_chip, MFU = sym("H_chip"), sym("MFU")
X, Y, M_Y = sym("X"), sym("Y"), sym("M_Y")
G, t_step, t_prefill = sym("n_gen"), sym("t_step"), sym("t_prefill")
price, t_hour = sym("price"), sym("t_hour")
alpha, gamma, c_draft, tau = sym("a_acc"), sym("n_draft"), sym("r_draft"), sym("n_emit")

KV_TOK = r"\mathrm{KV}_{\mathrm{tok}}"
T_MATH, T_W, T_KV = r"T_{\mathrm{math}}", r"T_{\mathrm{weights}}", r"T_{\mathrm{KV}}"
T_STEP = r"T_{\mathrm{step}}"
