"""Reading a profile: a feed-forward block's measured op times against their roofline (profiling.md).

The program is the book's profiled example at other sizes and on other TPUs: a feed-forward block,
data parallel over X and model parallel over Y, whose per-device HLO is an up-projection fusion
(``fusion.2``), a down-projection fusion (``fusion.1``) and a ReduceScatter of the output over Y
(``fusion``). The statement shows the HLO lines and one step of the profile's "XLA Ops" line (each op's
measured time), and asks what the book's chapter asks of it: the up-projection's FLOPs and roofline
time, the share of peak it reached, the ReduceScatter's bytes and the share of the ICI bandwidth it
reached (eta), and which op loses the most time to its bound.

Engine route (the key): ``scalemath profile``'s own analysis (:func:`scalemath.xla.profile.analyse`) of the
shown HLO and of the profile as trace events: the FLOPs and estimates come from
:mod:`scalemath.xla.analysis`, eta from the book's bandwidth rule, the ranking from the time each op
loses. Second route: the hand counts, 2·B·D·(F/Y) FLOPs at the chip's FLOPs/s per device, the bytes in
and out of each matmul at its HBM bandwidth per device, V = B·D·2 bytes at W_ici, and the
ReduceScatter of each two-device group at V/W_ici (the engine prices it on the slice's topology).
"""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from ...catalog.hardware import DTYPE_BYTES, get_chip
from ...symbolic.derivation import Derivation, Step
from ...symbolic.symbols import sym
from ..draws import choice, pick
from ..model import Answer
from ..registry import Generator, register, reject_if

NAME = "profile_read"
SOURCE = ("profiling.md, 'Looking at a real(ish) example profile' (the feed-forward block's ops against their "
          "rooflines, the ReduceScatter against the ICI bandwidth)")
#: TPUs whose device is a chip, or one core of a two-core chip (v2 and v3, as in the book's profile)
CHIPS = ("tpu-v2", "tpu-v3", "tpu-v4p", "tpu-v5p", "tpu-v5e", "tpu-v6e")
#: (D, F) of the feed-forward block
SHAPES = ((2048, 8192), (4096, 14336), (4096, 16384), (5120, 13824), (8192, 28672), (8192, 32768))
#: measured time over the roofline time, per op (a profile never beats its roofline)
SLOWDOWN = (Fraction(101, 100), Fraction(21, 20), Fraction(11, 10), Fraction(6, 5), Fraction(5, 4),
            Fraction(4, 3), Fraction(3, 2))
SLOWDOWN_RS = (Fraction(101, 100), Fraction(21, 20), Fraction(11, 10), Fraction(6, 5))
OPS = ("fusion.2", "fusion.1", "fusion")
CHOICES = ("fusion.2, the up-projection", "fusion.1, the down-projection", "fusion, the ReduceScatter")
BF16 = int(DTYPE_BYTES["bf16"])  # bytes per element, from the catalog's dtype table

_HLO = """\
%up (x: bf16[{b},{t},{d}], w: bf16[{d},{fy}]) -> bf16[{b},{t},{fy}] {{
  %x = bf16[{b},{t},{d}]{{2,1,0}} parameter(0)
  %w = bf16[{d},{fy}]{{1,0}} parameter(1)
  ROOT %dot.1 = bf16[{b},{t},{fy}]{{2,1,0}} dot(%x, %w), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
}}

%down (h: bf16[{b},{t},{fy}], w.1: bf16[{fy},{d}]) -> bf16[{b},{t},{d}] {{
  %h = bf16[{b},{t},{fy}]{{2,1,0}} parameter(0)
  %w.1 = bf16[{fy},{d}]{{1,0}} parameter(1)
  ROOT %dot.2 = bf16[{b},{t},{d}]{{2,1,0}} dot(%h, %w.1), lhs_contracting_dims={{2}}, rhs_contracting_dims={{0}}
}}

%all-reduce-scatter.1 (p: bf16[{b},{t},{d}]) -> bf16[{b},{t},{dy}] {{
  %p = bf16[{b},{t},{d}]{{2,1,0}} parameter(0)
  %ar = bf16[{b},{t},{d}]{{2,1,0}} all-reduce(%p), channel_id=1, replica_groups={groups}, use_global_device_ids=true, to_apply=%add
  %zero = s32[] constant(0)
  %off = s32[] constant({dy})
  ROOT %ds = bf16[{b},{t},{dy}]{{2,1,0}} dynamic-slice(%ar, %zero, %zero, %off), dynamic_slice_sizes={{{b},{t},{dy}}}
}}

ENTRY %main (x.1: bf16[{b},{t},{d}], win: bf16[{d},{fy}], wout: bf16[{fy},{d}]) -> bf16[{b},{t},{dy}] {{
  %x.1 = bf16[{b},{t},{d}]{{2,1,0}} parameter(0)
  %win = bf16[{d},{fy}]{{1,0}} parameter(1)
  %wout = bf16[{fy},{d}]{{1,0}} parameter(2)
  %fusion.2 = bf16[{b},{t},{fy}]{{2,1,0}} fusion(%x.1, %win), kind=kOutput, calls=%up
  %fusion.1 = bf16[{b},{t},{d}]{{2,1,0}} fusion(%fusion.2, %wout), kind=kOutput, calls=%down
  ROOT %fusion = bf16[{b},{t},{dy}]{{2,1,0}} fusion(%fusion.1), kind=kCustom, calls=%all-reduce-scatter.1
}}"""

_ADD = """\
%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %sum = bf16[] add(%a, %b)
}"""


def hlo_text(p) -> str:
    """The per-device HLO of the block (what the statement shows is this without the reduction's ``%add``)."""
    return f"HloModule jit_ffw, num_partitions={p['X'] * p['Y']}\n\n{_ADD}\n\n{shown_hlo(p)}\n"


def shown_hlo(p) -> str:
    x, y = p["X"], p["Y"]
    groups = "{" + ",".join("{" + ",".join(str(i * y + j) for j in range(y)) + "}" for i in range(x)) + "}"
    return _HLO.format(b=p["b"], t=p["T"], d=p["D"], fy=p["F"] // y, dy=p["D"] // y, groups=groups)


def _per_device(chip) -> tuple[Fraction, Fraction]:
    """(bf16 FLOPs/s, HBM bytes/s) of one device: a chip, or one core of a chip whose cores are separate."""
    from ...xla.profile import devices_per_chip

    cores = devices_per_chip(chip)
    return Fraction(chip.flops("bf16"), cores), Fraction(chip.hbm_bytes_per_s, cores)


# -- draw ------------------------------------------------------------------------------------------------

def draw(rng):
    chip = get_chip(pick(rng, CHIPS))
    d, f = pick(rng, SHAPES)
    # two-way model parallelism, as in the book's profile: a ReduceScatter over one link pair, where the engine's
    # time and the book's V/W_ici agree (on a longer axis they differ by the axis' (N-1)/N and wraparound)
    x, y = pick(rng, (2, 4, 8)), 2
    from ...xla.profile import devices_per_chip

    p = {"chip": chip.key, "cores": devices_per_chip(chip), "X": x, "Y": y, "b": pick(rng, (1, 2, 4, 8)),
         "T": pick(rng, (512, 1024, 2048)), "D": d, "F": f}
    slow = {"fusion.2": pick(rng, SLOWDOWN), "fusion.1": pick(rng, SLOWDOWN), "fusion": pick(rng, SLOWDOWN_RS)}
    ops = _priced(p)
    reject_if(any(ops[op].t_math <= ops[op].t_memory for op in OPS[:2]), "both matmuls must be compute-bound")
    estimates = {name: op.time for name, op in ops.items()}  # each op at its own bound
    # a profile lists whole microseconds: the roofline time times the slowdown, rounded up
    p["measured_us"] = {op: math.ceil(estimates[op] * 10**6 * slow[op]) for op in OPS}
    lost = {op: Fraction(p["measured_us"][op], 10**6) - estimates[op] for op in OPS[:2]}
    top, second = sorted(lost.values(), reverse=True)
    reject_if(top < Fraction(5, 4) * second, "the op that loses the most time must stand out")
    reject_if(Fraction(p["measured_us"]["fusion"], 10**6) >= top / 2,
              "the ReduceScatter's whole time must stay below the largest loss")
    p["hlo"], p["trace"] = shown_hlo(p), trace_listing(p)
    return p


def _priced(p) -> dict:
    """The three ops as the engine prices the HLO (drawing needs their times before the statement)."""
    from ...xla.analysis import analyse

    report = analyse(hlo_text(p), get_chip(p["chip"]), {"X": p["X"], "Y": p["Y"]})
    return {op.name: op for op in report["_ops"] if op.name in OPS}


def trace_listing(p) -> str:
    """One step of the profile's XLA Ops line as the trace viewer lists it: each op, its start and duration
    (readable where a format collapses the spaces, as LaTeX does)."""
    rows, start = [], 0
    for op in OPS:
        rows.append(f"{op:<9} start {_ms(start):>10}   duration {_ms(p['measured_us'][op]):>10}")
        start += p["measured_us"][op]
    return "\n".join(rows)


def _ms(us: int) -> str:
    return f"{us // 1000}.{us % 1000:03d} ms"


# -- solve: scalemath profile on the shown HLO and the step ---------------------------------------------

def _trace(p):
    from ...xla.trace import OpEvent, Trace

    events, start = [], 0
    for op in OPS:
        events.append(OpEvent(op, "jit_ffw", "/device:TPU:0", "1", Fraction(start), Fraction(p["measured_us"][op])))
        start += p["measured_us"][op]
    return Trace("profile_read", "generated", tuple(events))


def _report(p) -> dict:
    from ...xla.profile import analyse

    return analyse(_trace(p), hlo_text(p), get_chip(p["chip"]), {"X": p["X"], "Y": p["Y"]})


def solve(p):
    from ...xla.profile import ranked_by_lost_time

    chip = get_chip(p["chip"])
    report = _report(p)
    rows = {r.name: r for r in report["rows"]}
    up = rows["fusion.2"]
    [rs] = report["collectives"]
    c_dev, _ = _per_device(chip)
    b, d, f, y, cc, tm, w = sym("B"), sym("D"), sym("F"), sym("Y"), sym("C"), sym("t_meas"), sym("W_ici")
    tokens = p["b"] * p["T"]
    flops = Step(r"\mathrm{FLOPs}", 2 * b * d * f / y, f"the device's {tokens} tokens ({p['b']} sequences of "
                 f"{p['T']}) through its block of W_in (D rows, F/Y columns), 2 FLOPs per multiply-add", "FLOP")
    t_math = Step(r"T_{\mathrm{math}}", flops.expr / cc, "the FLOPs at the device's peak bf16 FLOPs/s"
                  + (f" (one of the chip's {p['cores']} cores)" if p["cores"] > 1 else ""), "s")
    share = Step(r"T_{\mathrm{math}} / t_{\mathrm{meas}}", t_math.expr / tm,
                 "the share of the device's peak FLOPs/s the op reached", "1")
    up_d = Derivation("the up-projection against its roofline", (flops, t_math, share), SOURCE)
    up_ev = up_d.at({b: tokens, d: p["D"], f: p["F"], y: p["Y"], cc: sp.Rational(c_dev), tm: sp.Rational(up.mean)})
    bytes_v = Step("V", b * d * BF16, f"the ReduceScatter's input on each device: B·D elements of {BF16} bytes (bf16)",
                   "byte")
    eta_s = Step(r"\eta", (bytes_v.expr / w) / tm, "the book's V/W_ici over the measured time", "1")
    rs_d = Derivation("the ReduceScatter against the ICI bandwidth", (bytes_v, eta_s), SOURCE)
    rs_ev = rs_d.at({b: tokens, d: p["D"], w: sp.Rational(rs["advertised"]), tm: sp.Rational(rs["measured"])})
    _agree(rs_ev, rs, up_ev, up)
    worst = ranked_by_lost_time(report)[0].name
    return [
        Answer("flops", "fusion.2's FLOPs per device", up_ev.steps[0].value, "FLOP", up_ev.part(1)),
        Answer("t_math", f"fusion.2's roofline time on {chip.name}", up_ev.steps[1].value, "s", up_ev.part(2)),
        Answer("peak_share", "the share of peak FLOPs/s fusion.2 reached", up_ev.value, "1", up_ev.part(3, 2)),
        Answer("bytes", "the ReduceScatter's V in bytes", rs_ev.steps[0].value, "byte", rs_ev.part(1)),
        Answer("eta", "the ReduceScatter's share of the ICI bandwidth", rs_ev.value, "1",
               rs_ev.part(2, 1)),
        choice("loses_most", "which op loses the most time to its bound", CHOICES, OPS.index(worst)),
    ]


def _agree(rs_ev, rs, up_ev, up) -> None:
    """The derivations shown say what scalemath profile computed."""
    exact = sp.Rational
    if (up_ev.steps[0].value != exact(up.flops) or up_ev.steps[1].value != exact(up.t_math)
            or up_ev.value != exact(up.t_math / up.mean)):
        raise ValueError("profile_read: the up-projection's derivation is not what scalemath profile computed")
    if rs_ev.steps[0].value != exact(rs["bytes"]) or rs_ev.value != exact(rs["eta"]):
        raise ValueError("profile_read: the ReduceScatter's derivation is not what scalemath profile computed")


# -- check: the hand counts --------------------------------------------------------------------------------

def check(p):
    chip = get_chip(p["chip"])
    c_dev, hbm_dev = _per_device(chip)
    tokens, d, fy = p["b"] * p["T"], p["D"], p["F"] // p["Y"]
    measured = {op: Fraction(p["measured_us"][op], 10**6) for op in OPS}
    flops = 2 * tokens * d * fy
    # each matmul reads its two inputs and writes its output, in bf16, at the device's share of HBM
    moved = {"fusion.2": BF16 * (tokens * d + d * fy + tokens * fy),
             "fusion.1": BF16 * (tokens * fy + fy * d + tokens * d)}
    bound = {op: max(Fraction(flops) / c_dev, Fraction(moved[op]) / hbm_dev) for op in OPS[:2]}
    v = tokens * d * BF16
    # the ReduceScatter of a two-device group: each sends half of V over the link pair that joins them, V/W_ici
    bound["fusion"] = Fraction(v, chip.bandwidth("ici"))
    lost = {op: measured[op] - bound[op] for op in OPS}
    worst = max(lost, key=lost.get)
    return {"flops": flops, "t_math": Fraction(flops) / c_dev,
            "peak_share": Fraction(flops) / c_dev / measured["fusion.2"],
            "bytes": v, "eta": Fraction(v, chip.bandwidth("ici")) / measured["fusion"],
            "loses_most": OPS.index(worst)}


register(Generator(NAME, "sharding", "Reading a profile: measured op times against the roofline", SOURCE, draw, solve,
                   check))
