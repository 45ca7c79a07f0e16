"""A second route to parameter, FLOP and KV-cache counts: list the real tensors and add them up.

The closed forms of :mod:`scalemath.symbolic.transformer` are algebra; this module is
bookkeeping. It builds every weight tensor of a model the way a framework's state dict
names and shapes them (PyTorch ``nn.Linear`` stores ``[out_features, in_features]``),
then counts elements, and lists every matmul a token goes through with its three
dimensions. The tests compare the two routes model by model, so a slip in either shows.

Plain Python only: no SymPy, no engine imports. ``model`` is any object with the catalog's
fields ``D, F, N, K, H, L, V, E, k, gated, tied`` (see :class:`scalemath.catalog.models.Model`); the
optional ones (MoE layout, latent attention, sliding windows, biases, sinks, q/k norms, norms
per layer) default to off when the object lacks them.

>>> from types import SimpleNamespace as M
>>> tiny = M(D=8, F=32, N=2, K=1, H=4, L=2, V=100, E=1, k=1, gated=True, tied=False)
>>> shapes = weight_shapes(tiny)
>>> shapes["layers.0.attn.q_proj.weight"], shapes["layers.0.attn.k_proj.weight"], shapes["lm_head.weight"]
((8, 8), (4, 8), (100, 8))
>>> count_params(shapes)
3560
>>> kv_cache_bytes_per_token(tiny, 2)
32
"""

from __future__ import annotations

from math import prod
from typing import Any, Mapping

__all__ = ["weight_shapes", "active_shapes", "count_params", "matmuls_per_token", "matmul_flops_per_token",
           "training_flops_per_token", "kv_cache_shapes", "kv_cache_bytes_per_token"]


def _flags(model: Any) -> tuple[bool, bool, int, int]:
    gated = getattr(model, "gated", True)
    tied = getattr(model, "tied", False)
    experts = getattr(model, "E", 1) or 1
    active = getattr(model, "k", 1) or 1
    return gated, tied, experts, active


def _opt(model: Any, name: str, default: Any = None) -> Any:
    value = getattr(model, name, None)
    return default if value is None else value


def _flag(model: Any, name: str) -> bool:
    return bool(getattr(model, name, False))


def _mlp(prefix: str, d: int, f: int, gated: bool, bias: bool = False) -> dict[str, tuple[int, ...]]:
    """One feed-forward block: gate/up [F, D] and down [D, F] (no gate when ungated), each with
    its bias vector ([F], [F], [D]) when ``bias``."""
    out: dict[str, tuple[int, ...]] = {}
    names = (("gate_proj", f, d),) if gated else ()
    for name, rows, cols in names + (("up_proj", f, d), ("down_proj", d, f)):
        out[f"{prefix}.{name}.weight"] = (rows, cols)
        if bias:
            out[f"{prefix}.{name}.bias"] = (rows,)
    return out


def _attention(prefix: str, model: Any) -> dict[str, tuple[int, ...]]:
    D, N, K, H = (int(getattr(model, n)) for n in ("D", "N", "K", "H"))
    r_kv = _opt(model, "kv_lora_rank")
    if r_kv is None:
        out = {}
        for name, rows in (("q_proj", N * H), ("k_proj", K * H), ("v_proj", K * H)):
            out[f"{prefix}.{name}.weight"] = (rows, D)
            if _flag(model, "qkv_bias"):
                out[f"{prefix}.{name}.bias"] = (rows,)
        if _flag(model, "qk_norm") and _flag(model, "qk_norm_per_head"):  # a scale per head and element
            out[f"{prefix}.q_norm.weight"] = (N * H,)
            out[f"{prefix}.k_norm.weight"] = (K * H,)
        elif _flag(model, "qk_norm"):  # one RMS-norm scale per head dimension, shared by the heads
            out[f"{prefix}.q_norm.weight"] = (H,)
            out[f"{prefix}.k_norm.weight"] = (H,)
        return out | _output(prefix, model, D, N * H)
    # multi-head latent attention: queries through an optional bottleneck; keys and values rebuilt
    # from one compressed latent, plus one rotary key shared by all heads
    rope, nope, r_q = _opt(model, "qk_rope_head_dim", 0), _opt(model, "qk_nope_head_dim", H), _opt(model, "q_lora_rank")
    out: dict[str, tuple[int, ...]] = {}
    if r_q is None:
        out[f"{prefix}.q_proj.weight"] = (N * (nope + rope), D)
    else:
        out[f"{prefix}.q_a_proj.weight"] = (r_q, D)
        out[f"{prefix}.q_a_layernorm.weight"] = (r_q,)
        out[f"{prefix}.q_b_proj.weight"] = (N * (nope + rope), r_q)
    out[f"{prefix}.kv_a_proj_with_mqa.weight"] = (r_kv + rope, D)
    out[f"{prefix}.kv_a_layernorm.weight"] = (r_kv,)
    out[f"{prefix}.kv_b_proj.weight"] = (N * (nope + H), r_kv)
    return out | _output(prefix, model, D, N * H)


def _output(prefix: str, model: Any, d: int, heads: int) -> dict[str, tuple[int, ...]]:
    """The output projection [D, N·H] (and its bias [D]) and the attention sinks [N]."""
    out: dict[str, tuple[int, ...]] = {f"{prefix}.o_proj.weight": (d, heads)}
    if _flag(model, "o_bias"):
        out[f"{prefix}.o_proj.bias"] = (d,)
    if _flag(model, "attention_sinks"):  # one learned logit per query head, joining every softmax
        out[f"{prefix}.sinks"] = (int(model.N),)
    return out


def weight_shapes(model: Any) -> dict[str, tuple[int, ...]]:
    """Every weight tensor of ``model`` with its shape, in state-dict order.

    Per layer: RMS-norm scales [D] before attention and before the MLP (``norms_per_layer`` = 4
    adds Gemma's norms after each); the attention projections q [N·H, D], k and v [K·H, D],
    o [D, N·H] (or, with latent attention, the down- and up-projections of the query and of the
    key/value latent, with their norms), with q/k/v biases, an o bias, per-head query/key norm
    scales [H] and sinks [N] when the model has them; the feed-forward block (gate, up, down, or
    up and down when ungated, with their biases under ``mlp_bias``). A mixture-of-experts layer
    has a router [E, D] (and bias [E]), E routed experts and ``shared_experts`` always-on ones;
    ``dense_layers`` of its layers keep a dense MLP of width ``F_dense`` (the first ones here:
    where they sit changes no count). Then the token embedding [V, D], the final norm [D] and
    the output projection ``lm_head`` [V, D] unless it shares the embedding; a learned position
    table [``learned_positions``, D] and a norm after the embedding where the model has them.
    With ``norm_bias`` every norm has a bias [D] beside its scale; ``norms_per_layer`` = 1 keeps
    only the norm before a parallel attention and MLP.
    """
    D, F, L, V = (int(getattr(model, n)) for n in ("D", "F", "L", "V"))
    gated, tied, experts, _ = _flags(model)
    dense_layers = _opt(model, "dense_layers", 0) if experts > 1 else L
    F_dense = _opt(model, "F_dense", F)
    F_shared = _opt(model, "F_shared", F)
    bias = _flag(model, "mlp_bias")
    norms = _opt(model, "norms_per_layer", 2)
    norm_bias = _flag(model, "norm_bias")

    def norm(name: str) -> None:
        shapes[f"{name}.weight"] = (D,)
        if norm_bias:
            shapes[f"{name}.bias"] = (D,)

    shapes: dict[str, tuple[int, ...]] = {"embed_tokens.weight": (V, D)}
    if _opt(model, "learned_positions", 0):
        shapes["embed_positions.weight"] = (int(model.learned_positions), D)
    if _flag(model, "embedding_norm"):
        norm("embed_norm")
    for i in range(L):
        p = f"layers.{i}"
        norm(f"{p}.input_norm")
        shapes.update(_attention(f"{p}.attn", model))
        if norms > 1:
            norm(f"{p}.post_attention_norm")
        if norms == 4:  # Gemma: the attention output is normed, then the MLP input
            norm(f"{p}.pre_feedforward_norm")
        if i < dense_layers:
            shapes.update(_mlp(f"{p}.mlp", D, F_dense if experts > 1 else F, gated, bias))
        else:
            shapes[f"{p}.moe.router.weight"] = (experts, D)
            if _flag(model, "router_bias"):
                shapes[f"{p}.moe.router.bias"] = (experts,)
            for e in range(experts):
                shapes.update(_mlp(f"{p}.moe.experts.{e}", D, F, gated, bias))
            for e in range(_opt(model, "shared_experts", 0)):
                shapes.update(_mlp(f"{p}.moe.shared_experts.{e}", D, F_shared, gated, bias))
        if norms == 4:
            norm(f"{p}.post_feedforward_norm")
    norm("norm")
    if not tied:
        shapes["lm_head.weight"] = (V, D)
    return shapes


def _routed_expert(name: str) -> int | None:
    """The index of the routed expert a tensor belongs to, or None."""
    marker = ".moe.experts."
    if marker not in name:
        return None
    return int(name.split(marker, 1)[1].split(".", 1)[0])


def active_shapes(model: Any) -> dict[str, tuple[int, ...]]:
    """The tensors one token uses: all but the routed experts it is not sent to (any k of the E
    have the same shapes, so the first k stand for them)."""
    _, _, _, active = _flags(model)
    return {name: shape for name, shape in weight_shapes(model).items()
            if (e := _routed_expert(name)) is None or e < active}


def count_params(shapes: Mapping[str, tuple[int, ...]]) -> int:
    """The number of elements over all tensors.

    >>> count_params({"a": (3, 4), "b": (5,)})
    17
    """
    return sum(prod(shape) for shape in shapes.values())


def matmuls_per_token(model: Any, T: int) -> list[tuple[str, int, int, int]]:
    """Every matmul one token's forward pass performs, as ``(name, m, k, n)``: [m, k] · [k, n].

    The weight matmuls read their ``k`` and ``n`` off :func:`active_shapes` (a token's activation
    row [1, in] times the transposed weight [in, out]); only the ``k`` routed experts a token is
    sent to run for it. The two attention contractions are per query head: the query against
    the keys ([1, H] · [H, T]), then the probabilities against the values ([1, T] · [T, H]);
    each query head of a group reads the group's shared key/value head, so there are N of each.
    Every one of the T positions is counted (a causal mask saves nothing in a plain einsum); the
    ``local_layers`` of a sliding-window model see at most ``sliding_window`` of them. The
    embedding lookup is not a matmul; a tied model's unembedding multiplies by the embedding
    matrix instead of ``lm_head``. Vector weights (norms) are elementwise, not matmuls.
    """
    shapes = active_shapes(model)
    _, tied, _, _ = _flags(model)
    N, H, L = int(model.N), int(model.H), int(model.L)
    qk = H if _opt(model, "kv_lora_rank") is None else _opt(model, "qk_nope_head_dim", H) + _opt(
        model, "qk_rope_head_dim", 0)
    window, local = _opt(model, "sliding_window"), _opt(model, "local_layers", 0)
    out: list[tuple[str, int, int, int]] = []
    for i in range(L):
        p = f"layers.{i}."
        # which layers are the local ones does not change the total; take the first ``local``
        keys = min(T, window) if window and i < local else T
        for name, shape in shapes.items():
            if name.startswith(p) and len(shape) == 2 and ".attn." in name and ".o_proj." not in name:
                out.append((name, 1, shape[1], shape[0]))
        for head in range(N):
            out.append((f"{p}attn.scores.head{head}", 1, qk, keys))
            out.append((f"{p}attn.mix.head{head}", 1, keys, H))
        for name, shape in shapes.items():
            if name.startswith(p) and len(shape) == 2 and (".attn." not in name or ".o_proj." in name):
                out.append((name, 1, shape[1], shape[0]))
    head = shapes["embed_tokens.weight" if tied else "lm_head.weight"]
    out.append(("embed_tokens.weight" if tied else "lm_head.weight", 1, head[1], head[0]))
    return out


def matmul_flops_per_token(model: Any, T: int) -> int:
    """Forward FLOPs per token, 2·m·k·n summed over :func:`matmuls_per_token` (elementwise work left out)."""
    return sum(2 * m * k * n for _, m, k, n in matmuls_per_token(model, T))


def training_flops_per_token(model: Any, T: int) -> int:
    """Forward plus backward FLOPs per token: each matmul's backward is two matmuls of its size
    (the gradient with respect to each operand), so 2mkn + 4mkn per matmul."""
    return sum(6 * m * k * n for _, m, k, n in matmuls_per_token(model, T))


def kv_cache_shapes(model: Any, tokens: int = 1, windowed: bool = False) -> dict[str, tuple[int, ...]]:
    """Each layer's cache for ``tokens`` cached tokens: keys and values [tokens, K, H] each, or,
    with latent attention, the latent [tokens, kv_lora_rank] and the shared rotary key
    [tokens, qk_rope_head_dim]. With ``windowed``, the ``local_layers`` of a sliding-window model
    (the first ones here) keep only the last ``sliding_window`` tokens; without it every layer
    keeps every token, which per token, before the window fills, is the same."""
    K, H, L = int(model.K), int(model.H), int(model.L)
    r_kv = _opt(model, "kv_lora_rank")
    window, local = _opt(model, "sliding_window"), _opt(model, "local_layers", 0)
    shapes = {}
    for i in range(L):
        n = min(tokens, window) if windowed and window and i < local else tokens
        if r_kv is None:
            shapes[f"layers.{i}.k_cache"] = (n, K, H)
            shapes[f"layers.{i}.v_cache"] = (n, K, H)
        else:
            shapes[f"layers.{i}.latent_cache"] = (n, r_kv)
            shapes[f"layers.{i}.rope_key_cache"] = (n, _opt(model, "qk_rope_head_dim", 0))
    return shapes


def kv_cache_bytes_per_token(model: Any, bytes_per_element: int | float) -> int | float:
    """Bytes of KV cache one token adds: the cache tensors' elements for one token times the element size."""
    return count_params(kv_cache_shapes(model, 1)) * bytes_per_element
