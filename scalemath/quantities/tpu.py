"""The TPU chapter's quantities (tpus.md): a torus's hops, a pod's chips, hosts, cores, FLOPs and HBM, a
transfer over a level or over ICI links, the MXU's FLOPs, and loading the weights from HBM. Topic ``tpu``
(X, Y, Z are bound from the chip's pod shape for this topic only). What is inside a chip, the TPU's vector unit
and its bandwidth ratios, is in :mod:`scalemath.quantities.chips`.
"""

from __future__ import annotations

from typing import Callable

from ..symbolic import torus_distance as dist
from ..symbolic import tpu
from ..symbolic.derivation import Derivation
from .registry import Quantity

__all__ = ["ENTRIES"]

TOPIC = "tpu"


def _q(name: str, build: Callable[[], Derivation], *, level: bool = False) -> Quantity:
    return Quantity(name, build, TOPIC, level)


#: In the registry's order.
ENTRIES: tuple[Quantity, ...] = (
    _q("torus.max_hops_wraparound", lambda: tpu.ring_hops(True)),
    _q("torus.max_hops_no_wraparound", lambda: tpu.ring_hops(False)),
    _q("torus.avg_hops_wraparound", lambda: dist.ring_average_hops(True)),
    _q("torus.avg_hops_no_wraparound", lambda: dist.ring_average_hops(False)),
    _q("torus.avg_hops_2a_by_a", dist.torus_2a_average_hops),
    _q("torus.twisted.avg_hops", dist.twisted_average_hops),
    _q("torus.twisted.distance_ratio", dist.twisted_distance_ratio),
    _q("pod.chips", tpu.pod_chips),
    _q("pod.hosts", tpu.pod_hosts),
    _q("pod.cores", tpu.pod_cores),
    _q("pod.flops_per_s", tpu.pod_flops),
    _q("pod.hbm_bytes", tpu.pod_hbm),
    _q("transfer.time", tpu.transfer_time, level=True),
    _q("ici.p2p_time", tpu.p2p_time),
    _q("mxu.flops_per_cycle", tpu.mxu_flops_per_cycle),
    _q("mxu.peak_flops_per_s", tpu.mxu_peak),
    _q("hbm.weights_load_time", tpu.weights_load_time, level=True),
)
