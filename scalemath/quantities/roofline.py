"""The roofline chapter's quantities (rooflines.md): compute and communication times and their bounds,
arithmetic intensity, dot products and matmuls (plain, tiled, batched over weights), a matmul split across a
network, and the token batch a replica sees. Topic ``roofline``; a quantity marked ``level`` takes its
bandwidth W from ``--level``.
"""

from __future__ import annotations

from typing import Callable

from ..symbolic import roofline as rl
from ..symbolic import tpu
from ..symbolic.derivation import Derivation
from .registry import Quantity

__all__ = ["ENTRIES"]

TOPIC = "roofline"


def _q(name: str, build: Callable[[], Derivation], *, level: bool = False) -> Quantity:
    return Quantity(name, build, TOPIC, level)


#: In the registry's order.
ENTRIES: tuple[Quantity, ...] = (
    _q("roofline.t_math", rl.t_math),
    _q("roofline.t_comms", rl.t_comms, level=True),
    _q("roofline.t_lower", rl.t_lower, level=True),
    _q("roofline.t_upper", rl.t_upper, level=True),
    _q("roofline.intensity", rl.intensity),
    _q("roofline.critical_intensity", rl.critical_intensity, level=True),
    _q("roofline.attainable_flops", rl.attainable, level=True),
    _q("dot.flops", rl.dot_flops),
    _q("dot.bytes", rl.dot_bytes),
    _q("dot.intensity", rl.dot_intensity),
    _q("dot.intensity_limit", rl.dot_intensity_limit),
    _q("matmul.flops", rl.matmul_flops),
    _q("matmul.bytes", rl.matmul_bytes),
    _q("matmul.bytes_loaded", rl.matmul_bytes_loaded),
    _q("matmul.bytes_stored", rl.matmul_bytes_stored),
    _q("matmul.tiled.bytes", rl.tiled_matmul_bytes),
    _q("matmul.tiled.intensity", rl.tiled_matmul_intensity),
    _q("matmul.intensity", rl.matmul_intensity),
    _q("matmul.intensity_approx", rl.matmul_intensity_approx),
    _q("matmul.t_math", rl.matmul_t_math),
    _q("matmul.t_comms", rl.matmul_t_comms, level=True),
    _q("matmul.t_lower", rl.matmul_t_lower, level=True),
    _q("matmul.t_upper", rl.matmul_t_upper, level=True),
    _q("matmul.critical_batch", rl.matmul_critical_batch, level=True),
    _q("matmul.critical_batch_approx", rl.matmul_critical_batch_approx, level=True),
    _q("matmul.batched_weights_intensity", rl.batched_weights_intensity),
    _q("matmul.tile_intensity", rl.tile_intensity),
    _q("network.split_matmul.t_math", rl.split_matmul_t_math),
    _q("network.split_matmul.t_comms", rl.split_matmul_t_comms),
    _q("network.split_matmul.critical_d", rl.split_matmul_critical_d),
    _q("batch.total_tokens", tpu.token_batch_total),
    _q("batch.local_tokens", tpu.token_batch_local),
)
