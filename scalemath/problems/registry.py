"""Generators: declared once, registered by name, run with a seeded RNG and checked.

A generator has three functions. ``draw(rng)`` picks parameters from declared
domains and calls :func:`reject_if` for degenerate draws; ``solve(params)``
asks the engine (through the quantity registry) and returns :class:`Answer`s;
``check(params)`` recomputes every answer by a second route that shares no code
with the engine (plain :class:`fractions.Fraction` arithmetic, a simulation or
an identity). :func:`make_problem` runs all three and refuses to return a
problem whose two routes disagree.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping

import sympy as sp

from .. import cache
from ..errors import CheckFailedError, UnknownNameError
from .model import Answer, Problem

__all__ = ["Generator", "Reject", "reject_if", "register", "generators", "get_generator", "index",
           "ensure_loaded", "make_problem", "made_problem", "exact_routes", "problem_seed", "TOPICS", "MAX_TRIES"]

#: Draws a seed gets before its generator is a bug: every generator accepts at least one draw in 30
#: (tests/test_generators.py measures it), so a valid seed runs out of tries with a chance below 10^-14.
MAX_TRIES = 1000

#: Topics and what they cover.
TOPICS: Mapping[str, str] = {
    "roofline": "rooflines: compute vs communication time, intensity, matmuls (book part 1)",
    "tpu": "TPUs: MXUs, memory levels, ICI tori, pods, host links (book part 2)",
    "sharding": "sharded matmuls and collectives on TPU tori (book part 3)",
    "gpu": "GPU networks: NVLink nodes, fat trees, collectives across nodes (book part 12)",
    "transformer": "transformer parameters, FLOPs, memory and KV caches (book part 4)",
    "training": "parallelism for training: DP, FSDP, TP, mixed, DCN, GPUs; training LLaMA 3 (book parts 5, 6, 12)",
    "inference": "serving: KV caches, decode and prefill bounds, topologies, cost (book parts 7, 8)",
}


class Reject(Exception):
    """A draw that violates a named constraint; the generator draws again."""

    def __init__(self, constraint: str):
        super().__init__(constraint)
        self.constraint = constraint


def reject_if(condition: bool, constraint: str) -> None:
    """Reject the current draw when ``condition`` holds, naming the constraint."""
    if condition:
        raise Reject(constraint)


@dataclass(frozen=True)
class Generator:
    name: str
    topic: str
    title: str
    source: str
    draw: Callable[[random.Random], dict]
    solve: Callable[[Mapping[str, object]], list[Answer]]
    check: Callable[[Mapping[str, object]], Mapping[str, Fraction | int]]
    #: How many problems with different answers the draw can make, where it is a small finite number (students
    #: of a larger class share them; the command says so); None: more than a class needs
    variants: int | None = None

    @property
    def template(self) -> str:
        return f"problems/{self.name}.j2"


_REGISTRY: dict[str, Generator] = {}
_LOADED = False


def register(gen: Generator) -> Generator:
    if gen.topic not in TOPICS:
        raise ValueError(f"generator {gen.name}: unknown topic {gen.topic}")
    if gen.name in _REGISTRY:
        raise ValueError(f"generator {gen.name} registered twice")
    _REGISTRY[gen.name] = gen
    return gen


def _load() -> None:
    from . import generators as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{info.name}")


def generators() -> dict[str, Generator]:
    """Every registered generator by name, sorted (imports every generator module)."""
    global _LOADED
    if not _LOADED:
        _load()
        _LOADED = True
    return dict(sorted(_REGISTRY.items()))


def index() -> Mapping[str, tuple[str, str, str, str]]:
    """Every generator's (module, topic, title, source) by name, sorted, without importing the generators
    (:mod:`.generator_index`, which tests hold to the registered generators)."""
    from .generator_index import INDEX

    return INDEX


def ensure_loaded(name: str) -> None:
    """Import the module that registers generator ``name`` (every module when the index does not name it)."""
    if name in _REGISTRY or _LOADED:
        return
    entry = index().get(name)
    if entry is None:
        generators()
    else:
        importlib.import_module(f"{__package__}.generators.{entry[0]}")


def get_generator(name: str) -> Generator:
    """The generator ``name``, importing only its own module."""
    ensure_loaded(name)
    if name not in _REGISTRY:
        raise UnknownNameError("generator", name, {**index(), **_REGISTRY},
                               hint="'scalemath problems list' shows them")
    return _REGISTRY[name]


def problem_seed(set_seed: int, generator: str, index: int) -> int:
    """A problem's seed from (set seed, generator, index): stable when generators are added."""
    digest = hashlib.sha256(f"{set_seed}:{generator}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _zero(diff: sp.Expr) -> bool:
    """Whether ``diff`` is exactly 0: ``cancel`` (a rational function's canonical form, cheap) settles the
    usual case; ``simplify`` (slow) is asked only when that form is not 0 (Max, ceiling, roots)."""
    try:
        if sp.cancel(diff) == 0:
            return True
    except (sp.PolynomialError, TypeError, ValueError):
        pass
    return sp.simplify(diff) == 0


def make_problem(gen: Generator, seed: int, problem_id: str | None = None) -> Problem:
    """Draw, solve and check one problem; raise if the two routes disagree."""
    rng = random.Random(seed)
    rejected: dict[str, int] = {}
    for _ in range(MAX_TRIES):
        try:
            params = gen.draw(rng)
            break
        except Reject as r:
            rejected[r.constraint] = rejected.get(r.constraint, 0) + 1
    else:
        counts = ", ".join(f"{k} ({v}x)" for k, v in sorted(rejected.items()))
        raise CheckFailedError(f"generator {gen.name}, seed {seed}: no valid draw in {MAX_TRIES} tries; "
                               f"rejected by {counts}")
    answers = gen.solve(params)
    second = gen.check(params)
    names = [a.name for a in answers]
    extras = [f"{a.name}.unrounded" for a in answers if a.unrounded is not None]
    extras += [f"{a.name}.accept" for a in answers if a.accept]
    if sorted(names + extras) != sorted(second):
        raise CheckFailedError(f"generator {gen.name}, seed {seed}: the check covers {sorted(second)} "
                               f"but the answers are {sorted(names + extras)}")

    def agree(what: str, first, other) -> None:
        other = sp.Rational(other) if not isinstance(other, sp.Basic) else other
        diff = first - other
        if diff != 0 and not _zero(diff):
            raise CheckFailedError(
                f"generator {gen.name}, seed {seed}: answer {what} is {first} by the engine "
                f"but {other} by the second route; params {dict(params)}")

    for a in answers:
        agree(a.name, a.value, second[a.name])
        if a.unrounded is not None:
            agree(f"{a.name} (unrounded)", a.unrounded, second[f"{a.name}.unrounded"])
        if a.accept:
            others = list(second[f"{a.name}.accept"])
            if len(others) != len(a.accept):
                raise CheckFailedError(f"generator {gen.name}, seed {seed}: answer {a.name} accepts "
                                       f"{len(a.accept)} values but the check gives {len(others)}")
            for i, (acc, other) in enumerate(zip(a.accept, others)):
                agree(f"{a.name} (accepted value {i + 1})", acc.value, other)
    return Problem(problem_id or f"{gen.name}-{seed}", gen.name, gen.topic, gen.title, seed,
                   dict(params), tuple(answers), gen.source)


#: Problems made ahead in worker processes (:mod:`scalemath.problems.parallel`), until the draw asks for them.
_AHEAD: dict[str, Problem] = {}


def _problem_key(name: str, seed: int, problem_id: str) -> str:
    return f"{name}:{seed}:{problem_id}"


def remember(problem: Problem) -> None:
    """Keep ``problem`` (made ahead) for the next :func:`made_problem` that asks for it."""
    _AHEAD[_problem_key(problem.generator, problem.seed, problem.id)] = problem


def forget_ahead() -> None:
    """Drop the problems made ahead that no draw asked for."""
    _AHEAD.clear()


def in_cache(name: str, seed: int, problem_id: str) -> bool:
    """Whether the persistent cache holds this problem (it may still prove stale when read)."""
    return name in index() and cache.has("problem", _problem_key(name, seed, problem_id))


def made_problem(name: str, seed: int, problem_id: str) -> Problem:
    """``make_problem(get_generator(name), seed, problem_id)`` through the persistent cache: a problem this
    very code made and checked before (the cache is keyed by the package's source) is read back, with no
    import of its generator's module and neither route run again. A generator the index does not name is
    always made afresh. A problem made ahead (:func:`remember`) is taken as it is."""
    key = _problem_key(name, seed, problem_id)
    ahead = _AHEAD.pop(key, None)
    if ahead is not None:
        return ahead
    cached = name in index()
    found = cache.load("problem", key) if cached else None
    if isinstance(found, Problem) and found.generator == name and found.seed == seed and found.id == problem_id:
        return found
    problem = make_problem(get_generator(name), seed, problem_id)
    if cached:
        cache.store("problem", key, problem)
    return problem


def exact_routes(gen: Generator, params: Mapping[str, object],
                 expected: Mapping[str, object] | None = None) -> tuple[dict, dict]:
    """Both routes' exact values of a problem's numeric answers, for tables of known values: a whole
    answer by its value before rounding, or by its whole count where ``expected`` gives that count;
    a choice left out (tests ask for those by name)."""
    answers = gen.solve(params)
    second = gen.check(params)
    engine, other = {}, {}
    for a in answers:
        if a.kind == "choice":
            continue
        counted = a.unrounded is not None and expected is not None and a.name in expected and \
            sp.sympify(expected[a.name]) == a.value and a.unrounded != a.value
        if a.unrounded is not None and not counted:
            engine[a.name], other[a.name] = a.unrounded, second[f"{a.name}.unrounded"]
        else:
            engine[a.name], other[a.name] = a.value, second[a.name]
    return engine, other
