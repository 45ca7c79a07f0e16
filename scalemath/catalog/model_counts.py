"""What follows from a model's shape: its parameter counts (the book's, every tensor, active under either
``active_params`` convention, Kaplan's non-embedding N), its forward FLOPs per token and its KV cache.

:class:`ModelCounts` is the counting half of :class:`scalemath.catalog.models.Model`, which holds the fields;
the methods read only those fields.

>>> from scalemath.catalog.models import get_model
>>> m = get_model("gpt3-175b-exact")
>>> m.param_count(), m.outside_layers_params(), m.published_param_count()
(174579068928, 25190400, 174604259328)
"""

from __future__ import annotations

__all__ = ["ModelCounts"]


class ModelCounts:
    """Counts over the fields of a :class:`~scalemath.catalog.models.Model` (see its docstring for the letters)."""

    # -- parameter counts ---------------------------------------------------------------------
    # The book's accounting (part 4, P = L·(3DF + 2D(N+K)H + 2D) + 2DV): weight matrices, the norm
    # vectors of each layer, and the embedding plus unembedding (one matrix when tied). Tensors
    # outside the layers besides the embeddings (the final norm, a learned position table, a norm
    # after the embedding) are not counted; MoE routers (E·D per MoE layer), the small norms inside
    # latent attention and the small tensors of the optional fields (biases, sinks, q/k norms,
    # extra norms, norm biases) are. published_param_count adds what is outside the layers: every
    # tensor a checkpoint holds.

    def attention_params_per_layer(self) -> int:
        """Parameters of one attention block: 2D(N+K)H, or the latent-attention matrices, plus
        (N + 2K)·H with ``qkv_bias``, D with ``o_bias``, N with ``attention_sinks`` and 2H with
        ``qk_norm``."""
        D, N, H = self.D, self.N, self.H
        if not self.is_mla:
            weights = 2 * D * (self.N + self.K) * H
        else:
            rope = self.qk_rope_head_dim or 0
            nope = self.qk_nope_head_dim or H
            r_kv, r_q = self.kv_lora_rank or 0, self.q_lora_rank
            q = D * N * (nope + rope) if r_q is None else D * r_q + r_q + r_q * N * (nope + rope)
            kv = D * (r_kv + rope) + r_kv + r_kv * N * (nope + H)
            weights = q + kv + N * H * D
        return weights + self._attention_extras()

    def _attention_extras(self) -> int:
        """Biases on q, k, v (and o), sinks and q/k norm scales of one attention block."""
        out = ((self.N + 2 * self.K) * self.H if self.qkv_bias else 0) + (self.D if self.o_bias else 0)
        out += self.N if self.attention_sinks else 0
        if self.qk_norm:
            out += (self.N + self.K) * self.H if self.qk_norm_per_head else 2 * self.H
        return out

    def _mlp(self, width: int) -> int:
        """One MLP of hidden width ``width``: 3DF gated or 2DF plain, plus its biases with ``mlp_bias``
        (gate and up F each, down D; a plain MLP has no gate)."""
        matrices = 3 if self.gated else 2
        biases = ((matrices - 1) * width + self.D) if self.mlp_bias else 0
        return matrices * self.D * width + biases

    def _router(self) -> int:
        return self.E * self.D + (self.E if self.router_bias else 0)

    def mlp_params_per_layer(self, active: bool = False) -> int:
        """Parameters of one MoE layer's experts and router (all E, or only the k a token uses when
        ``active``); for a dense model, the MLP (3DF gated, 2DF not)."""
        if not self.is_moe:
            return self._mlp(self.F)
        routed = (self.k if active else self.E) * self._mlp(self.F)
        shared = self.shared_experts * self._mlp(self.F_shared or self.F)
        return routed + shared + self._router()

    def expert_param_count(self) -> int:
        """Parameters of the routed experts over all layers (0 for a dense model): what expert
        parallelism splits; shared experts, routers and dense layers stay with the rest."""
        return self.moe_layers * self.E * self._mlp(self.F) if self.is_moe else 0

    def _norm(self) -> int:
        """One norm of width D: its scale, and its bias with ``norm_bias``."""
        return self.D * (2 if self.norm_bias else 1)

    def norm_params_per_layer(self) -> int:
        """Norm vectors of one layer outside attention: ``norms_per_layer``·D, twice that with
        ``norm_bias`` (the book: 2D)."""
        return self.norms_per_layer * self._norm()

    def extra_params_per_layer(self, experts: str = "dense") -> int:
        """What one layer holds besides the book's letters (the engine's P_extra): biases, sinks,
        q/k norms, norm vectors beyond 2D, and the router's bias. ``experts`` is "dense", "total"
        (every expert's MLP biases) or "active" (the k a token uses); a dense layer of an MoE
        model counts as one expert."""
        mlp_bias = (((3 if self.gated else 2) - 1) * self.F + self.D) if self.mlp_bias else 0
        experts_used = {"dense": 1, "total": self.E, "active": self.k}[experts] if self.is_moe else 1
        router = self.E if self.is_moe and self.router_bias else 0
        return (self._attention_extras() + self.norm_params_per_layer() - 2 * self.D + experts_used * mlp_bias
                + router)

    def outside_layers_params(self) -> int:
        """Tensors outside the layers besides the embedding and unembedding: the final norm, a
        norm after the embedding (``embedding_norm``) and the learned position table
        (``learned_positions``·D), none of which the book's count has."""
        return (1 + self.embedding_norm) * self._norm() + self.learned_positions * self.D

    def param_count(self, active: bool = False) -> int:
        """Total parameters (or, with ``active``, those one token uses: k of the E experts), the
        book's way: without the final norm."""
        dense_mlp = self.dense_layers * self._mlp(self.F_dense or self.F)
        layers = self.L * (self.attention_params_per_layer() + self.norm_params_per_layer())
        if self.is_moe:
            mlp = dense_mlp + self.moe_layers * self.mlp_params_per_layer(active)
        else:
            mlp = self.L * self._mlp(self.F)
        return layers + mlp + (1 if self.tied else 2) * self.D * self.V

    def published_param_count(self, active: bool = False) -> int:
        """Every tensor a checkpoint holds (the count safetensors metadata and model cards print):
        :meth:`param_count` plus :meth:`outside_layers_params` (the final norm, and a learned
        position table or a norm after the embedding where the model has one).

        >>> from scalemath.catalog.models import get_model
        >>> get_model("llama3-8b").published_param_count()   # meta-llama/Meta-Llama-3-8B
        8030261248
        >>> get_model("gpt3-175b-exact").published_param_count()  # Brown et al. 2020: 175.0B
        174604259328
        """
        return self.param_count(active) + self.outside_layers_params()

    def input_embedding_params(self) -> int:
        """The token embedding table V·D: a lookup, not a matmul."""
        return self.V * self.D

    def active_param_count(self, convention: str = "all-weights") -> int:
        """Parameters one token uses, the book's way (without what is outside the layers), under the
        ``active_params`` convention: ``all-weights`` (every weight the forward pass reads, the
        input embedding included: the book's P_active) or ``no-input-embedding`` (the input
        embedding table left out, as DeepSeek-V3's 37B and GPT-OSS's active counts; a tied table
        stays, since the unembedding multiplies by it).

        >>> from scalemath.catalog.models import get_model
        >>> m = get_model("deepseek-v3")
        >>> m.active_param_count(), m.active_param_count("no-input-embedding")
        (37552275456, 36625596416)
        """
        if convention not in ("all-weights", "no-input-embedding"):
            raise ValueError(f"active_params convention must be all-weights or no-input-embedding, not {convention!r}")
        dropped = self.input_embedding_params() if convention == "no-input-embedding" and not self.tied else 0
        return self.param_count(active=True) - dropped

    def non_embedding_param_count(self) -> int:
        """Kaplan et al. 2020's N: every tensor but the embedding and unembedding tables and the
        learned position table (the final norm and the layers' biases and norms stay).

        >>> from scalemath.catalog.models import get_model
        >>> get_model("qwen2.5-7b").non_embedding_param_count()   # model card: 6.53B
        6525621760
        """
        tables = (1 if self.tied else 2) * self.V * self.D + self.learned_positions * self.D
        return self.published_param_count() - tables

    # -- FLOPs --------------------------------------------------------------------------------

    def forward_flops_per_token(self, T: int, causal: bool = False):
        """Forward-pass FLOPs of one token attending to T positions: 2 per weight of every matrix
        the token is multiplied by (attention projections, the MLPs or the k routed and the shared
        experts with the router, the unembedding; not the embedding lookup, norms or biases), plus
        2·N·(d_qk + H) per position attended in each layer, where the ``local_layers`` see at most
        ``sliding_window`` positions. Every position counts (no causal saving), as in the book; with
        ``causal`` (the ``attention=causal`` convention) a token of a T-token sequence sees T/2
        positions on average, and W - W²/(2T) under a window W < T (an int, or a Fraction).

        >>> from scalemath.catalog.models import get_model
        >>> m = get_model("deepseek-v3")   # Zhao et al. 2025, Table 2: 250 GFLOPs per token in training at 4096
        >>> round(3 * m.forward_flops_per_token(4096, causal=True) / 10**9)
        250

        >>> from scalemath.catalog.models import get_model
        >>> m = get_model("llama3-8b")
        >>> m.forward_flops_per_token(0) == 2 * (m.param_count() - m.L * 2 * m.D - m.D * m.V)
        True
        """
        if T < 0:
            raise ValueError("T must be a non-negative number of positions")
        D, N, H = self.D, self.N, self.H
        if self.is_mla:
            rope, nope = self.qk_rope_head_dim or 0, self.qk_nope_head_dim or H
            r_kv, r_q = self.kv_lora_rank or 0, self.q_lora_rank
            q = D * N * (nope + rope) if r_q is None else D * r_q + r_q * N * (nope + rope)
            attention = q + D * (r_kv + rope) + r_kv * N * (nope + H) + N * H * D
            qk = nope + rope
        else:
            attention, qk = 2 * D * (self.N + self.K) * H, H
        matrices = 3 if self.gated else 2
        if self.is_moe:
            per_moe = (self.k * self.F + self.shared_experts * (self.F_shared or self.F)) * matrices * D + self.E * D
            mlp = self.dense_layers * matrices * D * (self.F_dense or self.F) + self.moe_layers * per_moe
        else:
            mlp = self.L * matrices * D * self.F
        weights = self.L * attention + mlp + D * self.V
        window = min(T, self.sliding_window) if self.sliding_window else T
        positions = (self.L - self.local_layers) * T + self.local_layers * window
        if causal:
            from fractions import Fraction
            W = self.sliding_window or T
            local = Fraction(T, 2) if T <= W else W - Fraction(W * W, 2 * T)
            positions = (self.L - self.local_layers) * Fraction(T, 2) + self.local_layers * local
            flops = 2 * weights + 2 * N * (qk + H) * positions
            return int(flops) if flops.denominator == 1 else flops
        return 2 * weights + 2 * N * (qk + H) * positions

    # -- KV cache -----------------------------------------------------------------------------

    def kv_elements_per_layer_token(self) -> int:
        """Cached elements per token in one layer: 2KH, or kv_lora_rank + qk_rope_head_dim."""
        if self.is_mla:
            return (self.kv_lora_rank or 0) + (self.qk_rope_head_dim or 0)
        return 2 * self.K * self.H

    def kv_elements_per_token(self) -> int:
        """Cached elements per token over all layers, every layer attending globally (2·L·K·H);
        multiply by bytes per element for the book's KV bytes per token."""
        return self.L * self.kv_elements_per_layer_token()

    def kv_elements(self, S: int) -> int:
        """Cached elements of one sequence of S tokens; local layers keep at most the window.

        >>> from scalemath.catalog.models import get_model
        >>> get_model("gemma-27b").kv_elements(8192) == 2 * 16 * 128 * (23 * 8192 + 23 * 4096)
        True
        """
        if S < 0:
            raise ValueError("S must be a non-negative number of tokens")
        per = self.kv_elements_per_layer_token()
        local = min(S, self.sliding_window) if self.sliding_window else S
        return per * ((self.L - self.local_layers) * S + self.local_layers * local)
