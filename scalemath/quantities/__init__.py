"""The registry of named quantities: the bridge between the engine and its users.

Each :class:`Quantity` has a dotted name, a unit, the engine function that derives it, and its parameters; a
parameter may be bound from the chosen chip, dtype and level (``--chip``, ``--dtype``, ``--weight-dtype``,
``--level``). The CLI's ``derive``/``solve``, the problem generators and ``scalemath quantities`` all go through
:func:`get` and :func:`evaluate`. The core (:mod:`.registry`, :mod:`.context`, :mod:`.binders`) holds no
quantity: one module per chapter family lists its own, and the registry imports it when one of its names is
asked for (all of them, in this order, when the whole registry is listed): :mod:`.roofline`, :mod:`.tpu`,
:mod:`.collectives`, :mod:`.transformer`, :mod:`.parallelism`, :mod:`.inference`, :mod:`.chips`.

>>> q = get("roofline.critical_intensity")
>>> evaluate(q, Context(chip="tpu-v5e", dtype="bf16")).value
9850/41
"""

from __future__ import annotations

from .binders import (BANDWIDTH, DEFAULT_BINDERS, FLOPS_RATE, HARDWARE_BINDERS, HOP, ICI_AXIS, LINK,
                      MOE_COUNTERPARTS, MXUS, NODE_EGRESS, Binder)
from .context import Context
from .registry import DENSE_ONLY, QUANTITIES, Param, Quantity, bind, evaluate, get

__all__ = ["Context", "Param", "Quantity", "QUANTITIES", "get", "bind", "evaluate"]
