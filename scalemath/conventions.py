"""The conventions the book, papers, model cards, datasheets and frameworks count by, each by name.

The book makes choices others do not all share: training FLOPs without attention, MFU (not HFU), its own
optimizer bytes, its saved-tensor activation counts, rounded hardware figures. Each such choice is an
:class:`Axis` with named choices; the book's is every axis's default, so the book's worked answers hold
unless a user asks for another. :data:`PROFILES` bundle the choices a paper or a framework makes
(``megatron``, ``palm``...), and a user picks with ``--convention PROFILE`` or ``--convention AXIS=CHOICE``
(repeatable; later ones win). Every output that depends on an axis names the choice it used.

>>> c = parse(["palm"])
>>> c["attention"], c["hardware"], c["optimizer"]
('full', 'datasheet', 'book')
>>> parse(["megatron", "attention=causal"])["attention"]
'causal'
>>> BOOK.describe(["attention"])
"attention FLOPs: none (the book's)"
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

from .errors import BadValueError

__all__ = ["AXES", "Axis", "BOOK", "Conventions", "PROFILES", "parse"]


@dataclass(frozen=True)
class Axis:
    """One convention: its name, what it decides, and its choices (name → what it means, with its source), the
    first of which is the book's."""

    name: str
    what: str
    choices: Mapping[str, str]

    @property
    def default(self) -> str:
        return next(iter(self.choices))


def _axis(name: str, what: str, *choices: tuple[str, str]) -> Axis:
    return Axis(name, what, MappingProxyType(dict(choices)))


#: Every axis, in the order outputs list them.
AXES: Mapping[str, Axis] = MappingProxyType({a.name: a for a in (
    _axis("attention", "attention FLOPs",
          ("none", "training FLOPs are 6 per parameter and token, attention's dot products left out (the book's "
                   "6·P·tokens; Kaplan et al. 2020's C = 6N; PaLM's MFU 'without attention')"),
          ("causal", "plus attention's QK^T and AV products over the positions each token sees under a causal mask: "
                     "6·L·N·H·T per token, half of the full count"),
          ("full", "plus attention's QK^T and AV products over all T positions: 12·L·N·H·T per token (PaLM, "
                   "Chowdhery et al. 2022, Appendix B; Megatron-LM, Narayanan et al. 2021, Eq. 3)")),
    _axis("recompute", "activation recomputation",
          ("none", "every activation the backward pass needs is kept; nothing is computed twice (the book's "
                   "default; its remat quantities are named apart)"),
          ("selective", "attention's QK^T, softmax, softmax-dropout and attention-over-V activations (the 5as/h "
                        "term) are recomputed, the rest kept (Korthikanti et al. 2022, Section 5)"),
          ("full", "each layer's forward pass is run again in the backward pass: 8·P·tokens of hardware FLOPs "
                   "(Megatron-LM, Narayanan et al. 2021, Eq. 3 and its training-time estimate)")),
    _axis("utilisation", "FLOPs utilisation",
          ("mfu", "model FLOPs utilisation: the FLOPs the model needs, recomputation not counted (PaLM, "
                  "Chowdhery et al. 2022, Appendix B)"),
          ("hfu", "hardware FLOPs utilisation: the FLOPs the chips ran, recomputed ones included (Korthikanti et "
                  "al. 2022, Section 6)")),
    _axis("active_params", "active parameters",
          ("all-weights", "every weight a token's forward pass reads, the input embedding table included (the "
                          "book's P_active)"),
          ("no-input-embedding", "without the input embedding table, which a token looks up rather than multiplies "
                                 "(DeepSeek-V3's 37 B activated, GPT-OSS's active counts; a tied table stays, as the "
                                 "unembedding; Kaplan et al.'s non-embedding count leaves out both tables)")),
    _axis("optimizer", "optimizer state and gradient bytes",
          ("book", "the book's: weights in their dtype (bf16: 2 bytes) and Adam's two fp32 moments (b_opt = 8), 10 bytes "
                   "per parameter; its memory totals leave gradients out, and where a form counts them (plan, "
                   "training_state_bytes_with_grads) they are in the weights' dtype"),
          ("mixed-precision", "as frameworks run mixed-precision Adam: bf16 weights, fp32 gradients, an fp32 master "
                              "copy and two fp32 moments, 2 + 4 + 12 = 18 bytes per parameter (Megatron-LM's "
                              "distributed-optimizer guide; 6 + 12/d with ZeRO-1 over d replicas)"),
          ("zero-paper", "the ZeRO paper's: fp16 weights and gradients, fp32 master copy and moments, 2 + 2 + 12 = "
                         "16 bytes per parameter (Rajbhandari et al. 2020, Section 3.1, K = 12)")),
    _axis("zero", "data-parallel sharding of model states",
          ("book", "as the book's schemes shard them (FSDP shards weights and optimizer state, and gradients where "
                   "the optimizer convention counts them)"),
          ("0", "ZeRO stage 0: every data-parallel rank keeps all weights, gradients and optimizer state"),
          ("1", "ZeRO stage 1 (P_os): optimizer state sharded over the data-parallel ranks (Megatron-LM's "
                "distributed optimizer)"),
          ("2", "ZeRO stage 2 (P_os+g): optimizer state and gradients sharded"),
          ("3", "ZeRO stage 3 (P_os+g+p): optimizer state, gradients and weights sharded (Rajbhandari et al. 2020, "
                "Figure 1)")),
    _axis("activations", "activation memory",
          ("book", "the book's counts of saved tensors per layer"),
          ("korthikanti", "Korthikanti et al. 2022's per-layer s·b·h·(34 + 5·a·s/h) bytes in 16-bit, divided by "
                          "tensor and sequence parallelism and cut by selective or full recomputation (what "
                          "Megatron-LM implements)")),
    _axis("hardware", "hardware figures",
          ("book", "the book's rounded figures (e.g. A100 bf16 310 TFLOP/s, TPU v5p HBM 2.8 TB/s)"),
          ("datasheet", "the vendors' published figures where the catalog records one (e.g. A100 bf16 312 TFLOP/s, "
                        "TPU v5p HBM 2.765 TB/s), each with its page; a figure the vendor does not publish stays the "
                        "book's ('scalemath hardware show CHIP' lists both)")),
    _axis("efficiency", "achievable rates",
          ("kernel", "each chip's matmul and attention rates as the best kernel benchmarks reach them (MAMF, the "
                     "FlashAttention papers' figures): an upper estimate of what a training step reaches"),
          ("sustained", "those rates times the share of them whole training steps sustain on the chip, where the "
                        "catalog fits one to published runs (H100: NVIDIA's Megatron-Core weak-scaling table); a "
                        "chip without one keeps its kernel rates ('scalemath hardware show CHIP' gives the fit)")),
)})

#: Named bundles of choices: what a paper or framework counts by. The book's is no choice at all.
PROFILES: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "book": MappingProxyType({}),
    "datasheet": MappingProxyType({"hardware": "datasheet"}),
    "palm": MappingProxyType({"attention": "full", "utilisation": "mfu", "hardware": "datasheet"}),
    "megatron": MappingProxyType({"attention": "full", "recompute": "full", "utilisation": "hfu",
                                  "optimizer": "mixed-precision", "activations": "korthikanti",
                                  "hardware": "datasheet"}),
    "zero-paper": MappingProxyType({"optimizer": "zero-paper", "hardware": "datasheet"}),
    "deepseek": MappingProxyType({"attention": "causal", "active_params": "no-input-embedding",
                                  "hardware": "datasheet"}),
})


@dataclass(frozen=True)
class Conventions:
    """A choice on every axis: ``chosen`` holds those that are not the book's, as sorted (axis, choice) pairs,
    so that two equal choices are equal records (and can key a cache)."""

    chosen: tuple[tuple[str, str], ...] = ()

    def __getitem__(self, axis: str) -> str:
        return dict(self.chosen).get(axis, AXES[axis].default)

    @classmethod
    def of(cls, choices: Mapping[str, str]) -> "Conventions":
        for axis, choice in choices.items():
            _check(axis, choice)
        return cls(tuple(sorted((a, c) for a, c in choices.items() if c != AXES[a].default)))

    def restricted(self, axes: Iterable[str]) -> "Conventions":
        """The same choices on ``axes`` only, the book's elsewhere: what a quantity that reads these axes
        depends on."""
        keep = set(axes)
        return Conventions(tuple(p for p in self.chosen if p[0] in keep))

    def choices(self, axes: Iterable[str] | None = None) -> dict[str, str]:
        """Every axis's choice (or those of ``axes``), by axis name, in :data:`AXES` order."""
        names = AXES if axes is None else [a for a in AXES if a in set(axes)]
        return {a: self[a] for a in names}

    def refuse_beyond(self, axes: Sequence[str], command: str) -> None:
        """Refuse, naming them, choices on axes other than ``axes`` (what ``command`` models)."""
        beyond = [(a, c) for a, c in self.chosen if a not in axes]
        if beyond:
            raise BadValueError(f"{command} counts {', '.join(AXES[a].what for a, _ in beyond)} the book's way; "
                                f"{', '.join(f'{a}={c}' for a, c in beyond)} is not modelled by {command} yet: choose "
                                f"only {', '.join(f'{a}=...' for a in axes)} here, and derive the other quantities "
                                "with 'scalemath derive ... --convention'")

    def describe(self, axes: Iterable[str] | None = None) -> str:
        """One line naming the choice on each axis (or on ``axes``), the book's marked as such."""
        return "; ".join(f"{AXES[a].what}: " + ("the book's" if c == "book" else f"{c} (the book's)"
                                                  if c == AXES[a].default else c)
                         for a, c in self.choices(axes).items())


#: The book's choice on every axis.
BOOK = Conventions()


def _check(axis: str, choice: str) -> None:
    if axis not in AXES:
        raise BadValueError(f"unknown convention {axis!r}; the conventions are {', '.join(AXES)} (and the profiles "
                            f"{', '.join(PROFILES)}); 'scalemath conventions' lists them")
    if choice not in AXES[axis].choices:
        raise BadValueError(f"convention {axis} has no choice {choice!r}; choose one of "
                            f"{', '.join(AXES[axis].choices)}")


def parse(items: Sequence[str]) -> Conventions:
    """Conventions from what a user typed: profile names and ``axis=choice`` settings, in order (later ones win).

    >>> parse(["hardware=datasheet"]).chosen
    (('hardware', 'datasheet'),)
    """
    choices: dict[str, str] = {}
    for item in items:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            if "=" in part:
                axis, _, choice = (s.strip() for s in part.partition("="))
                _check(axis, choice)
                choices[axis] = choice
            elif part in PROFILES:
                choices.update(PROFILES[part])
            else:
                raise BadValueError(f"unknown convention profile {part!r}; give a profile ({', '.join(PROFILES)}) or "
                                    f"AXIS=CHOICE with an axis of {', '.join(AXES)}")
    return Conventions.of(choices)
