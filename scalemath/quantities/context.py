"""What the user chose for an evaluation: a chip, dtypes, a level and a model (``--chip``, ``--dtype``,
``--weight-dtype``, ``--kv-dtype``, ``--level``, ``--model``), each looked up in its catalog when a binder asks.

>>> Context(chip="tpu-v5e").compute_dtype, Context().compute_dtype
('bf16', None)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import hardware
from ..conventions import BOOK, Conventions

__all__ = ["Context"]


@dataclass(frozen=True)
class Context:
    """What the user chose: a chip, dtypes, a level and their own values."""

    chip: str | None = None
    dtype: str | None = None
    weight_dtype: str | None = None
    level: str = "hbm"
    catalog: hardware.Catalog | None = field(default=None, compare=False)
    model: str | None = None
    model_catalog: object | None = field(default=None, compare=False)
    kv_dtype: str | None = None  # the KV cache's dtype; the activations' (--dtype) when None
    conventions: Conventions = BOOK  # --convention: the book's unless the user chose otherwise

    def get_model(self):
        if self.model is None:
            return None
        from ..catalog import models

        return models.get_model(self.model, self.model_catalog)

    def get_chip(self) -> hardware.Chip | None:
        """The chosen chip, with the figures the ``hardware`` convention picks: the book's, or the vendor's
        published ones where its datasheet prints them (the book's elsewhere).

        >>> from scalemath.conventions import parse
        >>> Context(chip="a100", conventions=parse(["hardware=datasheet"])).get_chip().flops("bf16")
        312000000000000
        """
        if self.chip is None:
            return None
        return hardware.get_chip(self.chip, self.catalog).under(self.conventions["hardware"])

    @property
    def compute_dtype(self) -> str | None:
        if self.dtype is None and self.chip is None and self.weight_dtype is None and self.model is None:
            return None  # nothing chosen: byte sizes stay symbolic
        return self.dtype or "bf16"

    @property
    def act_dtype(self) -> str | None:
        return self.compute_dtype

    @property
    def cache_dtype(self) -> str | None:
        return self.kv_dtype or self.act_dtype
