"""The JAX chapter (book part 10) as costs: shard_map's explicit collectives and the collective matmul.

``shard_map`` gives a per-device view in which every collective is written out. Each one lowers
to one of the book's collectives, so its cost is that collective's (from
:mod:`scalemath.symbolic.collectives`, never re-derived here):

========================  =====================  ======================
``jax.lax``               HLO                    the book's collective
========================  =====================  ======================
``psum`` / ``pmean``      ``all-reduce``         AllReduce
``all_gather``            ``all-gather``         AllGather
``psum_scatter``          ``reduce-scatter``     ReduceScatter
``all_to_all``            ``all-to-all``         AllToAll
``ppermute`` (shift 1)    ``collective-permute`` one hop over one link
========================  =====================  ======================

The collective matmul (jax-stuff.md, after Wang et al. 2023) computes
A[B_X, D_Y] ·_D W[D, F_Y] -> Out[B_X, F_Y] without gathering A first: the Y chunks of A travel
around the Y ring by ``ppermute`` while each device multiplies the chunk it holds by the matching
rows of its W. Its time, against the naive AllGather-then-matmul, and the width F at which the
ring's transfers hide behind the chunk matmuls, solved with :func:`crossover`.

``jax.lax.with_sharding_constraint`` asks for a layout; what it costs is the reshard that reaches
it (:func:`sharding_constraint`, priced with the same collectives).

>>> collective_matmul_critical_f().expr
C*Y*b_x/(2*W_link)
>>> psum_time().expr
2*V/W_ici
"""

from __future__ import annotations

import functools
from typing import Mapping

import sympy as sp

from . import collectives as coll
from . import tpu
from .derivation import Derivation, Step, crossover
from .symbols import sym

__all__ = [
    "psum_time", "psum_time_exact", "all_gather_time", "all_gather_time_exact", "psum_scatter_time",
    "psum_scatter_time_exact", "all_to_all_time", "all_to_all_time_exact", "ppermute_time",
    "ppermute_time_latency", "collective_matmul_flops", "collective_matmul_chunk_math",
    "collective_matmul_chunk_comms", "collective_matmul_time", "collective_matmul_time_bidirectional",
    "collective_matmul_time_naive", "collective_matmul_critical_f", "collective_matmul_critical_f_bidirectional",
    "collective_matmul_speedup", "sharding_constraint",
]

SHARD_MAP = "jax-stuff.md, 'shard_map: explicit parallelism control over a program'"
CM = "jax-stuff.md, 'Example [Collective Matmul]' (after Wang et al. 2023), with sharding.md's collective costs"
CONSTRAINT = "jax-stuff.md, 'jax.jit: the automatic parallelism solution' (with_sharding_constraint)"

V, N = sym("V"), sym("N")
B, D, F, X, Y = sym("B"), sym("D"), sym("F"), sym("X"), sym("Y")
C, b_x, W_ici, W_link, t_hop = sym("C"), sym("b_x"), sym("W_ici"), sym("W_link"), sym("t_hop")


# -- shard_map's collectives: the book's collectives under JAX's names ------------------------------

def _lowered(jax_name: str, hlo: str, book: Derivation, label: str) -> Derivation:
    """``book``'s steps, ending in a step that names the JAX call which lowers to it."""
    return Derivation(f"jax.lax.{jax_name} over one mesh axis: {book.title}", book.steps + (
        Step(label, book.expr, f"jax.lax.{jax_name} lowers to one {hlo}: {book.title}", "s"),
    ), f"{SHARD_MAP}; {book.source}")


@functools.cache
def psum_time() -> Derivation:
    return _lowered("psum", "all-reduce", coll.all_reduce_time_approx(), r"T_{\mathrm{psum}}")


@functools.cache
def psum_time_exact() -> Derivation:
    return _lowered("psum", "all-reduce", coll.all_reduce_time(), r"T_{\mathrm{psum}}")


@functools.cache
def all_gather_time() -> Derivation:
    return _lowered("all_gather", "all-gather", coll.all_gather_time_approx(), r"T_{\mathrm{all\_gather}}")


@functools.cache
def all_gather_time_exact() -> Derivation:
    return _lowered("all_gather", "all-gather", coll.all_gather_time(), r"T_{\mathrm{all\_gather}}")


@functools.cache
def psum_scatter_time() -> Derivation:
    return _lowered("psum_scatter", "reduce-scatter", coll.reduce_scatter_time_approx(),
                    r"T_{\mathrm{psum\_scatter}}")


@functools.cache
def psum_scatter_time_exact() -> Derivation:
    return _lowered("psum_scatter", "reduce-scatter", coll.reduce_scatter_time(), r"T_{\mathrm{psum\_scatter}}")


@functools.cache
def all_to_all_time() -> Derivation:
    return _lowered("all_to_all", "all-to-all", coll.all_to_all_time_approx(), r"T_{\mathrm{all\_to\_all}}")


@functools.cache
def all_to_all_time_exact() -> Derivation:
    return _lowered("all_to_all", "all-to-all", coll.all_to_all_time(), r"T_{\mathrm{all\_to\_all}}")


@functools.cache
def ppermute_time() -> Derivation:
    """A shift by one along a ring: every device sends its V bytes to one neighbour at once."""
    return Derivation("jax.lax.ppermute, a shift by one along a mesh axis (bandwidth-bound)", (
        Step(r"\mathrm{bytes}_{\mathrm{link}}", V,
             "each device sends its V bytes to its neighbour; each link carries one shard in one direction", "byte"),
        Step(r"T_{\mathrm{ppermute}}", V / W_link,
             "one hop at the one-way link bandwidth; the shifts run on different links at once", "s"),
    ), f"{SHARD_MAP}; sharding.md's ring model (one hop per step)")


@functools.cache
def ppermute_time_latency() -> Derivation:
    """The same shift with the hop's latency: tpus.md's point-to-point transfer over one hop and one link."""
    p2p = tpu.p2p_time()
    one = {sym("hops"): 1, sym("links"): 1, sym("bytes"): V}
    steps = tuple(Step(s.label, s.expr.xreplace(one), s.why, s.unit) for s in p2p.steps)
    return Derivation("jax.lax.ppermute, a shift by one along a mesh axis, with the hop's latency", steps + (
        Step(r"T_{\mathrm{ppermute}}", steps[-1].expr,
             "one collective-permute: the point-to-point transfer with hops = links = 1 and V bytes", "s"),
    ), f"{SHARD_MAP}; {p2p.source}")


# -- the collective matmul A[B_X, D_Y] ·_D W[D, F_Y] -> Out[B_X, F_Y] ------------------------------

def _chunk_shapes() -> tuple[Step, Step]:
    return (Step(r"A_{\mathrm{chunk}}", (B / X) * (D / Y) * b_x,
                 "bytes of one device's chunk of A, [B/X, D/Y]: what each ppermute moves", "byte"),
            Step(r"\mathrm{FLOPs}_{\mathrm{chunk}}", 2 * (B / X) * (D / Y) * (F / Y),
                 "one chunk matmul: A[B/X, D/Y] by the matching rows of W, [D/Y, F/Y]", "FLOP"))


@functools.cache
def collective_matmul_flops() -> Derivation:
    a, flops = _chunk_shapes()
    return Derivation("collective matmul: FLOPs per device", (
        flops,
        Step(r"\mathrm{FLOPs}_{\mathrm{dev}}", Y * flops.expr,
             "Y chunk matmuls, one per chunk of A; the same as the local matmul after an AllGather", "FLOP"),
    ), CM)


@functools.cache
def collective_matmul_chunk_math() -> Derivation:
    a, flops = _chunk_shapes()
    return Derivation("collective matmul: time of one chunk matmul", (
        flops, Step(r"T_{\mathrm{chunk}}", flops.expr / C, "the chunk's FLOPs at the chip's peak", "s"),
    ), CM)


@functools.cache
def collective_matmul_chunk_comms() -> Derivation:
    a, _ = _chunk_shapes()
    return Derivation("collective matmul: time of one ppermute of a chunk of A", (
        a, Step(r"T_{\mathrm{ppermute}}", ppermute_time().expr.xreplace({V: a.expr}),
                "jax.lax.ppermute of the chunk: one hop over one link, one way", "s"),
    ), CM)


@functools.cache
def collective_matmul_time() -> Derivation:
    """The book's code: Y - 1 rounds of (chunk matmul while the chunk moves on), then one last matmul."""
    mm, pp = collective_matmul_chunk_math(), collective_matmul_chunk_comms()
    t_mm, t_pp = mm.expr, pp.expr
    return Derivation("collective matmul, the book's unidirectional ppermute ring", (
        Step(r"T_{\mathrm{chunk}}", t_mm, mm.title, "s"),
        Step(r"T_{\mathrm{ppermute}}", t_pp, pp.title, "s"),
        Step(r"T_{\mathrm{round}}", sp.Max(t_mm, t_pp),
             "each of the Y - 1 rounds multiplies the chunk held while sending it on: the slower one sets it", "s"),
        Step(r"T_{\mathrm{CM}}", (Y - 1) * sp.Max(t_mm, t_pp) + t_mm,
             "Y - 1 overlapped rounds, then the last chunk's matmul after the last ppermute", "s"),
    ), CM)


def _ring_all_gather_of_a() -> sp.Expr:
    """AllGather_Y of A[B_X, D_Y]: the exact ring form with V = the gathered [B/X, D] bytes, N = Y."""
    return coll.all_gather_time().expr.xreplace({V: (B / X) * D * b_x, N: Y})


@functools.cache
def collective_matmul_time_bidirectional() -> Derivation:
    """Chunks travel both ways round the ring: the same bytes per device as the AllGather, overlapped."""
    mm = collective_matmul_chunk_math()
    t_mm, t_ring = mm.expr, _ring_all_gather_of_a()
    return Derivation("collective matmul on a bidirectional ppermute ring", (
        Step(r"T_{\mathrm{chunk}}", t_mm, mm.title, "s"),
        Step(r"T_{\mathrm{ring}}", t_ring,
             "the Y - 1 chunks a device lacks arrive half from each side: the bytes of AllGather_Y(A) on a "
             "bidirectional ring", "s"),
        Step(r"T_{\mathrm{CM}}", t_mm + sp.Max((Y - 1) * t_mm, t_ring),
             "the local chunk's matmul, then the other Y - 1 chunk matmuls overlapped with their transfers", "s"),
    ), CM)


@functools.cache
def collective_matmul_time_naive() -> Derivation:
    mm = collective_matmul_chunk_math()
    gather = Step(r"T_{\mathrm{AG}}", _ring_all_gather_of_a(),
                  "AllGather_Y(A[B_X, D_Y]) -> A[B_X, D]: the exact ring form, V = (B/X)·D·b_x, N = Y", "s")
    local = Step(r"T_{\mathrm{math}}", Y * mm.expr, "then the whole local matmul, Y chunks' worth", "s")
    return Derivation("AllGather then matmul (no overlap): the baseline the collective matmul replaces", (
        gather, local,
        Step(r"T_{\mathrm{naive}}", gather.expr + local.expr, "the gather blocks the matmul: the times add", "s"),
    ), CM)


@functools.cache
def collective_matmul_speedup() -> Derivation:
    naive, bidi = collective_matmul_time_naive(), collective_matmul_time_bidirectional()
    return Derivation("collective matmul (bidirectional ring) speed-up over AllGather then matmul", (
        Step(r"T_{\mathrm{naive}}", naive.expr, naive.title, "s"),
        Step(r"T_{\mathrm{CM}}", bidi.expr, bidi.title, "s"),
        Step(r"T_{\mathrm{naive}}/T_{\mathrm{CM}}", naive.expr / bidi.expr,
             "at most 2, when the gather takes as long as the matmul", "1"),
    ), CM)


@functools.cache
def collective_matmul_critical_f() -> Derivation:
    mm, pp = collective_matmul_chunk_math(), collective_matmul_chunk_comms()
    return crossover(
        mm.expr, pp.expr, F, title="collective matmul (unidirectional): the width F at which ppermutes hide",
        source=CM, lhs_label=r"T_{\mathrm{chunk}}", rhs_label=r"T_{\mathrm{ppermute}}", side_unit="s",
        label="F^*", unit="element",
        why="a chunk's matmul lasts as long as its ppermute: wider F hides the ring (F/Y >= b_x C / (2 W_link))")


@functools.cache
def collective_matmul_critical_f_bidirectional() -> Derivation:
    mm = collective_matmul_chunk_math()
    return crossover(
        (Y - 1) * mm.expr, _ring_all_gather_of_a(), F,
        title="collective matmul (bidirectional): the width F at which the ring hides", source=CM,
        lhs_label=r"(Y-1)\,T_{\mathrm{chunk}}", rhs_label=r"T_{\mathrm{ring}}", side_unit="s",
        label="F^*", unit="element",
        why="the overlapped matmuls last as long as the ring's transfers: wider F hides them "
            "(F/Y >= b_x C / (2 W_ici))")


# -- with_sharding_constraint: the reshard that reaches the asked-for layout ------------------------

def _price(kind: str) -> Derivation:
    return {"AllGather": coll.all_gather_time_approx(), "ReduceScatter": coll.reduce_scatter_time_approx(),
            "AllReduce": coll.all_reduce_time_approx(), "AllToAll": coll.all_to_all_time_approx(),
            "CollectivePermute": ppermute_time()}[kind]


def sharding_constraint(src: str, want: str, mesh: Mapping[str, int], sizes: Mapping[str, object],
                        bytes_per_element) -> Derivation:
    """The cost of ``with_sharding_constraint`` taking ``src`` (book notation) to ``want``, over ICI axes.

    >>> d = sharding_constraint("A[I_X, J]", "A[I, J_X]", {"X": 4}, {"I": 8, "J": 8}, 2)
    >>> [s.label for s in d.steps], d.expr
    (['T_{1}', 'T_{\\\\mathrm{constraint}}'], 32/W_ici)
    """
    from .notation import parse_array
    from .sharding import reshard

    plan = reshard(parse_array(src), parse_array(want), mesh, sizes, bytes_per_element)
    steps = []
    for i, c in enumerate(plan, 1):
        form = _price(c.kind)
        steps.append(Step(f"T_{{{i}}}", form.expr.xreplace({V: c.bytes, N: c.group}),
                          f"{c}: {form.title}, V = {c.bytes} bytes per device", "s"))
    total = sp.Add(*(s.expr for s in steps)) if steps else sp.Integer(0)
    why = ("the collectives run one after another" if steps else
           "the asked-for layout is reached by slicing what each device holds: no bytes move")
    return Derivation(f"with_sharding_constraint: {src} -> {want}", tuple(steps) + (
        Step(r"T_{\mathrm{constraint}}", total, why, "s"),
    ), CONSTRAINT)
