"""A sharded matmul on a real TPU slice: the cheapest plan, its bytes, FLOPs and times (sharding.md).

Engine route: :func:`scalemath.symbolic.sharding.plans` lists every plan the book's four cases
allow (with symbolic sizes I, J, K, so it is built once per pattern and mesh), and
:func:`scalemath.symbolic.sharded_cost.plan_cost` prices each one; the answers are that
derivation evaluated with the drawn sizes and the chip's numbers, plus the bytes each device
receives (every collective's V times its ring factor) and the lower bound of every plan.

Second route: :func:`scalemath.reports.simulate.simulate` runs every plan on a fake mesh with small
integer arrays, checks the product, and counts the bytes each device really receives and its
FLOPs. Received bytes and FLOPs are linear in each dimension's size when every block divides
evenly, so the simulated counts are scaled to the real sizes dimension by dimension; the times
are then plain Fraction arithmetic on those counts and the raw catalog numbers.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import sympy as sp

from ...cache import persistent
from ...catalog.hardware import get_chip
from ...symbolic.derivation import Derivation, Evaluated, EvaluatedStep, Step
from ...symbolic.notation import parse_contraction
from ...symbolic.sharded_cost import plan_cost
from ...symbolic.sharding import plans
from ...symbolic.symbols import sym
from ..draws import MODEL_SHAPES, choice, pick, pow2
from ..model import Answer
from ..registry import Generator, register, reject_if

SOURCE = "sharding.md, 'Computation With Sharded Arrays' (cases 1 to 4) and 'Some Problems to Work' (Q6)"
BYTES = 2  # bf16

#: (pattern, the book's case as the statement names it)
PATTERNS = (
    ("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "1"),
    ("A[I_XY, J] @ B[J, K] -> C[I_XY, K]", "1"),
    ("A[I_X, J] @ B[J, K] -> C[I, K_X]", "1"),
    ("A[I, J_X] @ B[J, K] -> C[I, K]", "2"),
    ("A[I_X, J_Y] @ B[J, K] -> C[I_X, K]", "2"),
    ("A[I_X, J] @ B[J_X, K_Y] -> C[I_X, K_Y]", "2"),
    ("A[I, J] @ B[J_X, K] -> C[I, K]", "2"),
    ("A[I, J_X] @ B[J_X, K] -> C[I, K]", "3"),
    ("A[I, J_X] @ B[J_X, K] -> C[I, K_X]", "3"),
    ("A[I_X, J_Y] @ B[J_Y, K] -> C[I_X, K]", "3"),
    ("A[I_X, J_Y] @ B[J_Y, K] -> C[I_X, K_Y]", "3"),
    ("A[I_X, J] @ B[J, K_X] -> C[I_X, K]", "4"),
    ("A[I_X, J] @ B[J, K_X] -> C[I, K_X]", "4"),
)
# Left out: a contracting dimension sharded over two axes (A[I, J_XY] ...). The engine reduces its
# partial sums with an AllReduce over X and then another over Y, each of the full block, which
# costs about three times an AllReduce over both axes at once; a student pricing the latter would
# disagree with the answer key.
#: real slices whose every axis wraps around (v5e/v6e: axes of 16; v4p/v5p: whole 4x4x4 cubes)
SLICES = (("tpu-v5p", (4, 4, 4)), ("tpu-v4p", (4, 4, 4)), ("tpu-v5p", (4, 4, 8)), ("tpu-v5p", (4, 8, 8)),
          ("tpu-v5e", (16, 16)), ("tpu-v6e", (16, 16)))
#: the simulation runs on the pattern's own axes; more devices than this make it slow
MAX_SIMULATED = 64
AXES = ("X", "Y", "Z")
DIMS = ("I", "J", "K")
LABELS = {"AllGather": "AG", "ReduceScatter": "RS", "AllReduce": "AR", "AllToAll": "A2A"}


def _tex(text: str) -> str:
    """``A[I_X, J] @ B[J, K] -> C[I, K]`` as LaTeX."""
    text = re.sub(r"_([A-Za-z]+)", r"_{\1}", text)
    return text.replace(" @ ", r" \cdot ").replace(" -> ", r" \to ")


def _pattern_axes(pattern: str) -> tuple[str, ...]:
    return tuple(a for a in AXES if re.search(rf"_[A-Z]*{a}", pattern))


def draw(rng):
    chip_key, shape = pick(rng, SLICES)
    chip = get_chip(chip_key)
    reject_if(not all(chip.wraps(shape)), "every axis of the slice must wrap around (the ring costs assume it)")
    pattern, case = pick(rng, PATTERNS)
    used = _pattern_axes(pattern)
    reject_if(math.prod(shape[AXES.index(a)] for a in used) > MAX_SIMULATED,
              "the pattern's axes must span at most 64 chips (the second route simulates them)")
    model, d, f = pick(rng, MODEL_SHAPES)
    up = rng.random() < 0.5
    return {"chip": chip_key, "slice": "x".join(map(str, shape)),
            "mesh_tex": r",\ ".join(f"|{a}| = {n}" for a, n in zip(AXES, shape)),
            "pattern": pattern, "pattern_tex": _tex(pattern),
            "case": case, "model": model, "layer": "up" if up else "down",
            "I": pow2(rng, 9, 15), "J": d if up else f, "K": f if up else d}


def _mesh(p) -> dict[str, int]:
    shape = [int(n) for n in p["slice"].split("x")]
    return dict(zip(AXES, shape))


@persistent
def _engine(pattern: str, mesh_items: tuple[tuple[str, int], ...]):
    """Every plan with its cost and received-bytes derivations, and each plan's lower bound as a
    step, sizes kept symbolic: built once per pattern and mesh."""
    mesh = dict(mesh_items)
    c = parse_contraction(pattern, mesh)
    options = [(plan, plan_cost(plan, mesh), _received(plan, mesh))
               for plan in plans(c, mesh, {d: sym(d) for d in DIMS}, BYTES)]
    lowers = tuple(Step(rf"T_{{\mathrm{{lower}}}}^{{({i + 1})}}", cost.expr, f"plan {i + 1}: {plan.name}", "s")
                   for i, (plan, cost, _) in enumerate(options))
    return options, lowers


def _received(plan, mesh) -> Derivation:
    """Bytes each device receives: V times the ring factor of each collective."""
    steps, terms = [], []
    for c in plan.collectives:
        n = sp.Integer(c.group)
        factor, why = {
            "AllGather": ((n - 1) / n, "it receives the n - 1 shards it lacks, V(n - 1)/n"),
            "ReduceScatter": ((n - 1) / n, "n - 1 partial chunks of V/n arrive, V(n - 1)/n"),
            "AllReduce": (2 * (n - 1) / n, "a ReduceScatter then an AllGather, 2V(n - 1)/n"),
            "AllToAll": ((n - 1) / n**2, "V/n^2 from each of the n - 1 others, V(n - 1)/n^2"),
        }[c.kind]
        label = rf"\mathrm{{recv}}_{{\mathrm{{{LABELS[c.kind]}}}_{{{''.join(c.axes)}}}({c.before.name})}}"
        steps.append(Step(label, factor * c.bytes, f"{c.kind} {c.before} -> {c.after} over {c.group} devices: {why}",
                          "byte"))
        terms.append(steps[-1].expr)
    steps.append(Step(r"\mathrm{bytes}_{\mathrm{dev}}", sp.Add(*terms) if terms else sp.Integer(0),
                      "all collectives of the plan added" if terms else "the plan needs no collective", "byte"))
    return Derivation(f"bytes received per device: {plan.name}", tuple(steps), SOURCE)


def _values(p) -> dict:
    chip = get_chip(p["chip"])
    return {sym("I"): p["I"], sym("J"): p["J"], sym("K"): p["K"], sym("C"): chip.flops("bf16"),
            sym("W_ici"): chip.bandwidth("ici"), sym("t_hop"): chip.hop_latency_s}


def solve(p):
    values = _values(p)
    mesh = _mesh(p)  # axes the pattern leaves out only replicate: plans and costs ignore them
    options, lowers = _engine(p["pattern"], tuple((a, mesh[a]) for a in _pattern_axes(p["pattern"])))
    costs = [cost.at(values) for _, cost, _ in options]
    best = min(range(len(options)), key=lambda i: (costs[i].value, costs[i].steps[-2].value, i))
    plan, cost, received = options[best]
    ev = costs[best]
    if len(options) == 1:
        pick_best = Derivation("the only plan", lowers, SOURCE)
    else:  # the chosen plan's own bound, not a min over formulas too wide to print
        pick_best = Derivation("the cheapest plan", lowers + (Step(
            r"T_{\mathrm{best}}", lowers[best].expr,
            f"plan {best + 1} has the smallest lower bound (ties go to the smaller T_comms)", "s"),), SOURCE)
    n = len(cost.steps)
    parts = {
        "bytes": ("bytes each device receives in the cheapest plan", received.at(values), "byte"),
        "flops": ("FLOPs per device", ev.part(1, title="FLOPs per device"), "FLOP"),
        "t_math": ("compute time per device", ev.part(2, title="compute time"), "s"),
        "t_comms": ("communication time", ev.part(n - 1, title=f"communication time: {plan.name}"), "s"),
        "t_lower": ("lower bound of the cheapest plan", _evaluated(pick_best, ev.given, costs, best), "s"),
    }
    answers = [Answer(name, description, e.value, unit, e) for name, (description, e, unit) in parts.items()]
    names = [pl.name for pl, _, _ in options]
    return [choice("plan", "which plan has the smallest lower bound, and which collectives does it use?",
                   plan_choices(names), best if len(names) > 1 else plan_choices(names).index(_readable(names[0])))
            ] + answers


def _readable(name: str) -> str:
    """A plan's name as the choices word it: ``AllGather_X A, then AllToAll_X C`` becomes
    ``AllGather of A over X, then AllToAll of C over X``."""
    return re.sub(r"(\w+)_(\w+) (\w+)", r"\1 of \3 over \2", name)


def plan_choices(names: list[str]) -> tuple[str, ...]:
    """The choices of "which plan?": every plan the rules allow, or, when they allow one, that plan
    among the other single collectives on its axes (or, for no communication, the usual ones)."""
    if len(names) > 1:
        return tuple(_readable(n) for n in names)
    found = re.fullmatch(r"(\w+)_(\w+) (\w+)", names[0])
    if not found:
        return ("no communication", "AllGather of A over X", "AllReduce of C over X", "AllToAll of C over X")
    axes, array = found.group(2), found.group(3)
    return ("no communication",) + tuple(f"{kind} of {array} over {axes}"
                                          for kind in ("AllGather", "ReduceScatter", "AllReduce", "AllToAll"))


def _evaluated(d: Derivation, given, costs: list[Evaluated], best: int) -> Evaluated:
    """``d`` (every plan's bound, then the best one's) from the plans' evaluated costs."""
    values = [c.value for c in costs] + ([costs[best].value] if len(d.steps) > len(costs) else [])
    return Evaluated(d, given, tuple(EvaluatedStep(step, v) for step, v in zip(d.steps, values)))


# -- second route: simulate every plan on small arrays, scale, and price with Fractions -----------------

def _small_sizes(c, mesh: dict[str, int]) -> dict[str, int]:
    """Per dimension: the product of the axes that ever shard it, times the largest axis (so every
    block of every array, and every chunk a collective splits it into, divides evenly)."""
    extra = max(mesh.values())
    out = {}
    for d in DIMS:
        axes = {a for arr in (c.lhs, c.rhs, c.out) if d in arr.names for a in arr.dim(d).axes}
        out[d] = math.prod(mesh[a] for a in axes) * extra
    return out


@persistent
def _simulated(pattern: str, mesh_items: tuple[tuple[str, int], ...]):
    """The second route: every plan simulated with numpy on a fake mesh at small sizes (kept between runs,
    like the engine's forms: a new set then needs neither the simulation nor numpy)."""
    from ...reports.simulate import simulate

    mesh = dict(mesh_items)
    c = parse_contraction(pattern, mesh)
    small = _small_sizes(c, mesh)
    dims_of = {arr.name: arr.names for arr in (c.lhs, c.rhs, c.out)}
    runs = []
    for plan in plans(c, mesh, small, 1):
        r = simulate(c, mesh, small, plan, 1)
        assert r.result_ok
        collectives, names = [], []
        for text, received in r.per_collective:
            head, array = text.split(" ")[:2]
            kind, axes = head.split("_")
            collectives.append((kind, axes, dims_of[array.split("[")[0]], Fraction(received)))
            names.append((kind, axes, array.split("[")[0]))
        runs.append((Fraction(r.flops_per_device), collectives, tuple(names)))
    return small, runs


def check(p):
    mesh = _mesh(p)
    used = _pattern_axes(p["pattern"])
    small, runs = _simulated(p["pattern"], tuple((a, mesh[a]) for a in used))
    chip = get_chip(p["chip"])
    w_ici = 2 * chip.ici_link_bytes_per_s
    t_hop = Fraction(chip.hop_latency_ns, 10**9)
    c = chip.flops_per_s["bf16"]

    def scale(dims) -> Fraction:
        """Real elements per simulated element of an array over ``dims``."""
        return math.prod(Fraction(p[d], small[d]) for d in dims)

    options = []
    for flops_small, collectives, _ in runs:
        flops = flops_small * scale(DIMS)
        received, t_comms = Fraction(0), Fraction(0)
        for kind, axes, dims, r_small in collectives:
            r = r_small * scale(dims) * BYTES  # simulated with 1 byte per element
            n = math.prod(mesh[a] for a in axes)
            latency = t_hop * sum(mesh[a] for a in axes) / 2
            w = len(axes) * w_ici
            if kind in ("AllGather", "ReduceScatter"):
                t = max(latency, r / w)
            elif kind == "AllReduce":
                t = 2 * max(latency, r / 2 / w)
            else:  # AllToAll on one ring: V/(4 W_ici) for even n, with V = r n^2/(n - 1)
                t = max(latency, (n * n // 2) * r / (2 * (n - 1) * w))
            received += r
            t_comms += t
        t_math = flops / c
        options.append((max(t_math, t_comms), t_comms, received, flops, t_math))
    best = min(range(len(options)), key=lambda i: (options[i][0], options[i][1], i))
    lower, t_comms, received, flops, t_math = options[best]
    if len(runs) == 1:   # the one plan, worded from the simulated collectives, among the choices
        named = runs[0][2]
        said = ", then ".join(f"{kind} of {array} over {axes}" for kind, axes, array in named) or "no communication"
        best = plan_choices([", then ".join(f"{k}_{a} {x}" for k, a, x in named) or "none"]).index(said)
    return {"plan": best, "bytes": received, "flops": flops, "t_math": t_math, "t_comms": t_comms, "t_lower": lower}


register(Generator("sharding_matmul_case", "sharding", "The cheapest plan for a sharded matmul",
                   SOURCE, draw, solve, check))
