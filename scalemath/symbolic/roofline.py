"""Rooflines: compute and communication time, intensity, matmuls (book part 1).

Every function returns a :class:`Derivation` over the symbols of ``symbols.py``;
call ``.at({...})`` to put numbers in.

>>> critical_intensity().at({sym("C"): 197 * 10**12, sym("W"): 82 * 10**10}).value
9850/41
>>> matmul_critical_batch_approx().expr
C*b_w/(2*W)
"""

from __future__ import annotations

import functools

import sympy as sp

from .derivation import Derivation, Step, crossover
from .symbols import sym

__all__ = [
    "t_math", "t_comms", "t_lower", "t_upper", "intensity", "critical_intensity", "attainable",
    "dot_flops", "dot_bytes", "dot_intensity", "dot_intensity_limit",
    "matmul_flops", "matmul_bytes", "matmul_intensity", "matmul_intensity_approx",
    "matmul_t_math", "matmul_t_comms", "matmul_t_lower", "matmul_t_upper",
    "matmul_critical_batch", "matmul_critical_batch_approx",
    "batched_weights_intensity", "tile_intensity", "matmul_bytes_loaded", "matmul_bytes_stored",
    "tiled_matmul_bytes", "tiled_matmul_intensity",
    "split_matmul_t_math", "split_matmul_t_comms", "split_matmul_critical_d",
]

ROOFLINE = "roofline.md, 'Where Does the Time Go?'"
MATMUL = "roofline.md, 'Matrix multiplication'"
NETWORK = "roofline.md, 'Network communication rooflines'"
PROBLEMS = "roofline.md, 'A Few Problems to Work'"

B, D, F, N = sym("B"), sym("D"), sym("F"), sym("N")
C, W, W_link = sym("C"), sym("W"), sym("W_link")
FLOPS, BYTES = sym("FLOPs"), sym("bytes")
b_x, b_w, b_o = sym("b_x"), sym("b_w"), sym("b_o")
T_MATH, T_COMMS = r"T_{\mathrm{math}}", r"T_{\mathrm{comms}}"


def _step_math(flops: sp.Expr) -> Step:
    return Step(T_MATH, flops / C, "FLOPs divided by the peak FLOPs/s", "s")


def _step_comms(nbytes: sp.Expr, bandwidth: sp.Expr = W) -> Step:
    return Step(T_COMMS, nbytes / bandwidth, "bytes divided by the bandwidth they cross", "s")


def _bounds(flops: sp.Expr, nbytes: sp.Expr, lead: tuple[Step, ...], source: str):
    math, comms = _step_math(flops), _step_comms(nbytes)
    lower = Step(r"T_{\mathrm{lower}}", sp.Max(math.expr, comms.expr),
                 "compute and communication overlap perfectly", "s")
    upper = Step(r"T_{\mathrm{upper}}", math.expr + comms.expr, "no overlap at all", "s")
    return (Derivation("lower bound on the runtime", lead + (math, comms, lower), source),
            Derivation("upper bound on the runtime", lead + (math, comms, upper), source))


@functools.cache
def t_math() -> Derivation:
    return Derivation("compute time", (_step_math(FLOPS),), ROOFLINE)


@functools.cache
def t_comms() -> Derivation:
    return Derivation("communication time", (_step_comms(BYTES),), ROOFLINE)


@functools.cache
def t_lower() -> Derivation:
    return _bounds(FLOPS, BYTES, (), ROOFLINE)[0]


@functools.cache
def t_upper() -> Derivation:
    return _bounds(FLOPS, BYTES, (), ROOFLINE)[1]


@functools.cache
def intensity() -> Derivation:
    return Derivation("arithmetic intensity", (
        Step(r"\mathrm{AI}", FLOPS / BYTES, "FLOPs per byte moved", "FLOP/byte"),), ROOFLINE)


@functools.cache
def critical_intensity() -> Derivation:
    return Derivation("critical arithmetic intensity", (
        Step(r"\mathrm{AI}^*", C / W,
             "compute time exceeds memory time exactly when FLOPs per byte exceed C/W", "FLOP/byte"),), ROOFLINE)


@functools.cache
def attainable() -> Derivation:
    ai = sym("AI")
    return Derivation("attainable FLOPs/s on the roofline", (
        Step(r"\mathrm{AI}^*", C / W, "the knee of the roofline", "FLOP/byte"),
        Step(r"\mathrm{perf}", sp.Min(C, W * ai),
             "bandwidth-limited below the knee, flat at peak above it", "FLOP/s"),), ROOFLINE)


# -- dot product -----------------------------------------------------------------------

def _dot_steps() -> tuple[Step, Step]:
    return (Step(r"\mathrm{FLOPs}", 2 * N - 1, "N multiplies and N - 1 adds", "FLOP"),
            Step(r"\mathrm{bytes}", 2 * N * b_x + b_o, "load both vectors, store one scalar", "byte"))


@functools.cache
def dot_flops() -> Derivation:
    return Derivation("dot product FLOPs", _dot_steps()[:1], ROOFLINE)


@functools.cache
def dot_bytes() -> Derivation:
    return Derivation("dot product bytes", _dot_steps()[1:], ROOFLINE)


@functools.cache
def dot_intensity() -> Derivation:
    flops, nbytes = _dot_steps()
    return Derivation("dot product intensity", (flops, nbytes, Step(
        r"\mathrm{AI}", flops.expr / nbytes.expr, "FLOPs over bytes", "FLOP/byte")), ROOFLINE)


@functools.cache
def dot_intensity_limit() -> Derivation:
    ai = dot_intensity().expr
    return dot_intensity().extend(Step(
        r"\lim_{N\to\infty}\mathrm{AI}", sp.limit(ai, N, sp.oo),
        "long vectors: the intensity tends to a constant", "FLOP/byte"),
        title="dot product intensity for long vectors")


# -- matmul X[B,D] . Y[D,F] -> Z[B,F] -------------------------------------------------------

def _mm_flops() -> Step:
    return Step(r"\mathrm{FLOPs}", 2 * B * D * F, "B·D·F multiply-adds, 2 FLOPs each", "FLOP")


def _mm_loaded() -> Step:
    return Step(r"\mathrm{bytes}_{\mathrm{load}}", b_x * B * D + b_w * D * F, "load X[B,D] and Y[D,F] once each",
                "byte")


def _mm_stored() -> Step:
    return Step(r"\mathrm{bytes}_{\mathrm{store}}", b_o * B * F, "store Z[B,F] once", "byte")


def _mm_bytes() -> Step:
    return Step(r"\mathrm{bytes}", _mm_loaded().expr + _mm_stored().expr,
                "load X[B,D] and Y[D,F], store Z[B,F]", "byte")


@functools.cache
def matmul_flops() -> Derivation:
    return Derivation("matmul FLOPs", (_mm_flops(),), MATMUL)


@functools.cache
def matmul_bytes() -> Derivation:
    return Derivation("matmul bytes", (_mm_bytes(),), MATMUL)


@functools.cache
def matmul_bytes_loaded() -> Derivation:
    return Derivation("matmul bytes loaded", (_mm_loaded(),), MATMUL)


@functools.cache
def matmul_bytes_stored() -> Derivation:
    return Derivation("matmul bytes stored", (_mm_stored(),), MATMUL)


@functools.cache
def matmul_intensity() -> Derivation:
    flops, nbytes = _mm_flops(), _mm_bytes()
    return Derivation("matmul arithmetic intensity", (flops, nbytes, Step(
        r"\mathrm{AI}", flops.expr / nbytes.expr, "FLOPs over bytes", "FLOP/byte")), MATMUL)


@functools.cache
def matmul_intensity_approx() -> Derivation:
    flops = _mm_flops()
    return Derivation("matmul intensity when B ≪ D, F", (flops, Step(
        r"\mathrm{bytes}", b_w * D * F, "the weights dominate the bytes when B ≪ D, F", "byte"),
        Step(r"\mathrm{AI}", 2 * B / b_w, "FLOPs over weight bytes", "FLOP/byte")), MATMUL)


@functools.cache
def matmul_t_math() -> Derivation:
    return Derivation("matmul compute time", (_mm_flops(), _step_math(_mm_flops().expr)), MATMUL)


@functools.cache
def matmul_t_comms() -> Derivation:
    return Derivation("matmul memory time", (_mm_bytes(), _step_comms(_mm_bytes().expr)), MATMUL)


@functools.cache
def matmul_t_lower() -> Derivation:
    return _bounds(_mm_flops().expr, _mm_bytes().expr, (_mm_flops(), _mm_bytes()), MATMUL)[0]


@functools.cache
def matmul_t_upper() -> Derivation:
    return _bounds(_mm_flops().expr, _mm_bytes().expr, (_mm_flops(), _mm_bytes()), MATMUL)[1]


@functools.cache
def matmul_critical_batch() -> Derivation:
    """The B at which compute time equals memory time, with every byte counted."""
    return crossover(
        _mm_flops().expr / C, _mm_bytes().expr / W, B,
        title="batch at which the matmul becomes compute-bound (exact bytes)", source=PROBLEMS,
        lhs_label=T_MATH, rhs_label=T_COMMS, side_unit="s", label="B^*", unit="token",
        why="solve T_math = T_comms for B; above it the matmul is compute-bound",
        lead=(_mm_flops(), _mm_bytes()))


@functools.cache
def matmul_critical_batch_approx() -> Derivation:
    """The book's rule: with B ≪ D, F the intensity is 2B/b_w, equal to C/W at B*."""
    approx = matmul_intensity_approx()
    return crossover(
        approx.expr, C / W, B, title="batch at which the matmul becomes compute-bound (B ≪ D, F)",
        source=MATMUL, lhs_label=r"\mathrm{AI}", rhs_label=r"\mathrm{AI}^*", side_unit="FLOP/byte",
        label="B^*", unit="token", why="intensity equals the critical intensity",
        lead=approx.steps[:2])


@functools.cache
def batched_weights_intensity() -> Derivation:
    """X[B,D] ·_D Y[B,D,F]: every batch element has its own weight matrix (roofline Q4)."""
    flops = _mm_flops()
    nbytes = Step(r"\mathrm{bytes}", b_x * B * D + b_w * B * D * F + b_o * B * F,
                  "load X[B,D] and Y[B,D,F], store Z[B,F]", "byte")
    return Derivation("intensity with a weight matrix per batch element", (flops, nbytes, Step(
        r"\mathrm{AI}", flops.expr / nbytes.expr, "FLOPs over bytes: bounded by 2/b_w for any B",
        "FLOP/byte")), PROBLEMS)


@functools.cache
def tile_intensity() -> Derivation:
    bm, bn = sym("b_m"), sym("b_n")
    return Derivation("intensity of one (b_m × b_n) output tile", (Step(
        r"\mathrm{AI}", 2 * bm * bn / (b_x * (bm + bn)),
        "per K-step a tile loads b_m·b_k + b_k·b_n elements for 2·b_m·b_n·b_k FLOPs", "FLOP/byte"),),
        "roofline.md, tiled matmul footnote")


def _tiles() -> tuple[Step, Step]:
    bm, bn = sym("b_m"), sym("b_n")
    tiles = Step(r"n_{\mathrm{tiles}}", B * F / (bm * bn), "output tiles of b_m × b_n covering Z[B,F]", "1")
    loaded = Step(r"\mathrm{bytes}_{\mathrm{load}}", tiles.expr * (b_x * bm * D + b_w * D * bn),
                  "each tile streams its b_m rows of X and b_n columns of Y over all of D: X is read F/b_n times, "
                  "Y B/b_m times", "byte")
    return tiles, loaded


@functools.cache
def tiled_matmul_bytes() -> Derivation:
    tiles, loaded = _tiles()
    return Derivation("tiled matmul: bytes moved from HBM", (
        tiles, loaded, _mm_stored(),
        Step(r"\mathrm{bytes}", loaded.expr + _mm_stored().expr, "loads plus the one store of Z", "byte"),
    ), "roofline.md, tiled matmul footnote")


@functools.cache
def tiled_matmul_intensity() -> Derivation:
    d = tiled_matmul_bytes()
    return d.extend(_mm_flops(), Step(r"\mathrm{AI}", _mm_flops().expr / d.expr,
                                      "FLOPs over the bytes the tiling moves: it grows with the tile sizes", "FLOP/byte"),
                    title="tiled matmul: arithmetic intensity")


# -- two chips splitting D, exchanging partial sums ----------------------------------------

def _split_steps() -> tuple[Step, Step]:
    return (Step(T_MATH, 2 * B * D * F / (2 * C), "each chip does half of 2BDF", "s"),
            Step(T_COMMS, b_o * B * F / W_link,
                 "each chip sends its partial Z[B,F] over a full-duplex link", "s"))


@functools.cache
def split_matmul_t_math() -> Derivation:
    return Derivation("two-chip split matmul: compute time", _split_steps()[:1], NETWORK)


@functools.cache
def split_matmul_t_comms() -> Derivation:
    return Derivation("two-chip split matmul: communication time", _split_steps()[1:], NETWORK)


@functools.cache
def split_matmul_critical_d() -> Derivation:
    math, comms = _split_steps()
    return crossover(math.expr, comms.expr, D, title="D above which the split matmul is compute-bound",
                     source=NETWORK, lhs_label=T_MATH, rhs_label=T_COMMS, side_unit="s",
                     label="D^*", unit="element", why="T_math = T_comms; the batch cancels")
