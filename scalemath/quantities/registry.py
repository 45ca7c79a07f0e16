"""The registry's core: a :class:`Quantity` (a dotted name, the engine function that builds its derivation, a
topic), its :class:`Param` (a symbol and the binder that may fill it from the context), :func:`register`, which
the topic modules' quantities go through in order, and the lookups the CLI, reports and generators use:
:data:`QUANTITIES`, :func:`get`, :func:`bind` and :func:`evaluate`.

>>> q = get("matmul.t_math")
>>> q.topic, [p.name for p in q.params]
('roofline', ['B', 'C', 'D', 'F'])
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

import sympy as sp

from ..conventions import BOOK, Conventions
from ..errors import BadValueError, UnknownNameError
from ..symbolic.derivation import Derivation, Evaluated
from ..symbolic.symbols import SYMBOLS
from .binders import DEFAULT_BINDERS, Binder, extra_params, mlp_width
from .context import Context

__all__ = ["DENSE_ONLY", "Param", "Quantity", "QUANTITIES", "register", "get", "bind", "evaluate"]


@dataclass(frozen=True)
class Param:
    name: str
    binder: Binder | None = None

    @property
    def symbol(self) -> sp.Symbol:
        return SYMBOLS[self.name].symbol

    @property
    def info(self):
        return SYMBOLS[self.name]


@dataclass(frozen=True)
class Quantity:
    """A named quantity. ``build`` makes its derivation; a quantity whose form depends on conventions
    (:mod:`scalemath.conventions`) names those axes in ``conventions``, and ``build`` takes each as a keyword
    argument (the book's choice when not given)."""

    name: str
    build: Callable[..., Derivation]
    topic: str
    uses_level: bool = False
    conventions: tuple[str, ...] = ()

    @property
    def derivation(self) -> Derivation:
        """The derivation under the book's conventions."""
        return _derivation(self)

    def under(self, conventions: Conventions) -> Derivation:
        """The derivation under ``conventions`` (only the axes this quantity reads matter)."""
        mine = conventions.restricted(self.conventions)
        return self.derivation if mine == BOOK else _derivation_under(self, mine)

    def params_under(self, conventions: Conventions) -> tuple[Param, ...]:
        mine = conventions.restricted(self.conventions)
        return self.params if mine == BOOK else _params_under(self, mine)

    @property
    def title(self) -> str:
        return self.derivation.title

    @property
    def unit(self) -> str:
        return self.derivation.unit

    @property
    def source(self) -> str:
        return self.derivation.source

    @property
    def params(self) -> tuple[Param, ...]:
        return _params_of(self)

    def _binder(self, name: str) -> Binder | None:
        # X, Y, Z are a pod's torus axes only for the pod quantities; elsewhere they are mesh or
        # parallelism degrees that the user chooses
        if name in ("X", "Y", "Z") and self.topic != "tpu":
            return None
        if name == "P_extra":
            symbols = {s.name for s in self.derivation.symbols}
            return extra_params("total" if "E" in symbols else "active" if "k" in symbols else "dense")
        if name == "F" and self.topic == "transformer":
            symbols = {s.name for s in self.derivation.symbols}
            in_result = any(s.name == "F" for s in self.derivation.expr.free_symbols)
            return mlp_width(self.name, moe_form=bool(symbols & {"E", "k"}), in_result=in_result)
        return DEFAULT_BINDERS.get(name)


@functools.cache
def _derivation(q: Quantity) -> Derivation:
    """``q.build()``, built once per process and kept between runs in scalemath's cache folder (keyed by the
    package's files, see :mod:`scalemath.cache`): building the derivations a command uses was most of a
    cold run. Read back, a derivation is the same SymPy objects, so the output does not change."""
    from .. import cache

    if QUANTITIES.get(q.name) is not q:  # not the registered quantity of that name: nothing to share
        return q.build()
    return cache.kept("derivation", q.name, q.build, Derivation)


@functools.cache
def _derivation_under(q: Quantity, conventions: Conventions) -> Derivation:
    return q.build(**conventions.choices(q.conventions))


@functools.cache
def _params_of(q: Quantity) -> tuple[Param, ...]:
    names = sorted(s.name for s in q.derivation.symbols)
    return tuple(Param(n, q._binder(n)) for n in names)


@functools.cache
def _params_under(q: Quantity, conventions: Conventions) -> tuple[Param, ...]:
    names = sorted(s.name for s in q.under(conventions).symbols)
    return tuple(Param(n, q._binder(n)) for n in names)


_BY_NAME: dict[str, Quantity] = {}

#: The topic modules of this package, in the order every listing shows their quantities.
TOPIC_MODULES = ("roofline", "tpu", "collectives", "transformer", "parallelism", "inference", "chips")

#: Which topic modules register the quantities whose names begin with each first part (``pod.*`` are the TPU
#: chapter's and the chips' both); a test holds this table to the registered names.
MODULES_BY_PREFIX: Mapping[str, tuple[str, ...]] = MappingProxyType({
    **dict.fromkeys(("roofline", "dot", "matmul", "network", "batch"), ("roofline",)),
    **dict.fromkeys(("torus", "transfer", "ici", "mxu", "hbm"), ("tpu",)),
    "pod": ("tpu", "chips"), "collective": ("collectives",), "jax": ("collectives",),
    "gpu": ("collectives", "chips"), "transformer": ("transformer",), "parallel": ("parallelism",),
    "inference": ("inference",), "cluster": ("chips",), "tpu": ("chips",),
})

_LOADED: dict[str, tuple[str, ...]] = {}  # topic module -> the names it registered


_LOADING = threading.RLock()  # two threads asking for one topic at once register it once


def _load(module: str) -> None:
    """Import a topic module and register its quantities (once): a command that asks for one quantity imports
    only the engine modules of its topic."""
    if module in _LOADED:
        return
    with _LOADING:
        if module not in _LOADED:
            import importlib

            entries = importlib.import_module(f"{__package__}.{module}").ENTRIES
            register(entries)
            _LOADED[module] = tuple(q.name for q in entries)


def _load_for(name: str) -> None:
    for module in MODULES_BY_PREFIX.get(name.split(".", 1)[0], TOPIC_MODULES):
        _load(module)


class _Registry(Mapping):
    """Every registered quantity by its dotted name, its topic module loaded when a name of it is asked for, and
    all of them, in :data:`TOPIC_MODULES` order, when the whole registry is listed."""

    def __getitem__(self, name: str) -> Quantity:
        if name not in _BY_NAME and isinstance(name, str):
            _load_for(name)
        return _BY_NAME[name]

    def __contains__(self, name: object) -> bool:
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __iter__(self):
        for module in TOPIC_MODULES:
            _load(module)
        for module in TOPIC_MODULES:
            yield from _LOADED[module]

    def __len__(self) -> int:
        for module in TOPIC_MODULES:
            _load(module)
        return len(_BY_NAME)


#: Every registered quantity by its dotted name, in the order every listing shows them (``scalemath quantities``,
#: the tables and the reference): each topic module's quantities as it lists them, the modules in
#: :data:`TOPIC_MODULES` order.
QUANTITIES: Mapping[str, Quantity] = _Registry()


def register(quantities: Iterable[Quantity]) -> None:
    """Add ``quantities`` to the registry; a name registered twice is an error."""
    for q in quantities:
        if q.name in _BY_NAME:
            raise ValueError(f"quantity {q.name} registered twice")
        _BY_NAME[q.name] = q


def get(name: str) -> Quantity:
    """A quantity by its dotted name, with did-you-mean for a typo."""
    try:
        return QUANTITIES[name]
    except KeyError:
        raise UnknownNameError("quantity", name, QUANTITIES,
                               hint="'scalemath quantities' lists them") from None


def bind(q: Quantity, ctx: Context, given: Mapping[str, object] = MappingProxyType({})) -> dict[sp.Symbol, object]:
    """Values for ``q``'s parameters: bound from the context, overridden by ``given``.

    A name in ``given`` that is not a parameter of ``q`` is an error naming the parameters.
    """
    params = {p.name: p for p in q.params_under(ctx.conventions)}
    if "P" in given and "P" not in params and "P_active" in params and "P_active" not in given:
        # forms in P_active accept P for a dense model, where the two are the same
        given = {("P_active" if n == "P" else n): v for n, v in given.items()}
    for name in given:
        if name not in params:
            raise UnknownNameError(f"parameter of {q.name}", name, params,
                                   hint=f"{q.name} takes {', '.join(params) or 'no parameters'}")
    values: dict[sp.Symbol, object] = {}
    for p in params.values():
        if p.name in given:
            values[p.symbol] = given[p.name]
        elif p.binder is not None:
            value = p.binder(ctx)
            if value is not None:
                values[p.symbol] = value
    # a dense model's tokens go through every parameter: P_active is P (given, or bound without a model: a model
    # binds its own P_active, which leaves the input embedding out under active_params = no-input-embedding)
    active, total = SYMBOLS["P_active"].symbol, SYMBOLS["P"].symbol
    model = ctx.get_model()
    if "P_active" in params and "P_active" not in given and total in values and (
            model is None or not model.is_moe and "P" in given):
        values[active] = values[total]
    return values


#: Thresholds that hold for a dense model only, and the quantity that holds for a mixture of experts.
DENSE_ONLY: Mapping[str, str] = MappingProxyType({
    "inference.decode.critical_batch": "inference.decode.critical_batch_moe",
    "inference.prefill.critical_tokens": "inference.decode.critical_batch_moe (the same threshold in prompt tokens)",
})


def evaluate(q: Quantity, ctx: Context, given: Mapping[str, object] = MappingProxyType({})) -> Evaluated:
    """``q``'s derivation with the bound and given values substituted."""
    model = ctx.get_model()
    if model is not None and model.is_moe and q.name in DENSE_ONLY:
        raise BadValueError(f"{model.key} is a mixture of experts (E = {model.E}, k = {model.k}): {q.name} is a "
                            f"dense model's threshold; use {DENSE_ONLY[q.name]}")
    values = bind(q, ctx, given)
    if model is not None and model.local_layers:
        _refuse_past_the_window(q, model, values, given)
    return q.under(ctx.conventions).at(values)


def _refuse_past_the_window(q: Quantity, model, values: Mapping[sp.Symbol, object], given: Mapping[str, object]):
    """Forms where every layer attends to (or caches) all tokens are exact only up to a model's window."""
    free = q.derivation.expr.free_symbols
    if SYMBOLS["L_loc"].symbol in free or SYMBOLS["w_win"].symbol in free:
        return  # the form itself caps the local layers at the window
    T, N, S, kv, L, K, H = (SYMBOLS[n].symbol for n in ("T", "N", "S", "kv_token", "L", "K", "H"))
    caches = (kv in free and "kv_token" not in given) or {L, K, H} <= free
    if q.topic == "transformer" and {T, N} <= free and T in values:
        length, what, own = values[T], "attend to all T", f".forward_flops_per_token({values[T]})"
    elif S in free and caches and S in values:
        length, what, own = values[S], "cache all S", f".kv_elements({values[S]})"
    else:
        return
    if sp.sympify(length) > model.sliding_window:
        raise BadValueError(
            f"{model.key}: {model.local_layers} of its {model.L} layers keep only the last {model.sliding_window} "
            f"tokens, and {q.name} has every layer {what} = {length} tokens; it is exact up to "
            f"{model.sliding_window} (the model's own count: scalemath.catalog.models.get_model({model.key!r}){own}; "
            "'scalemath serve' uses it)")
