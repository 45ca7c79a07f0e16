"""``scalemath plan``: how to train a model on a cluster, scheme by scheme (book parts 5, 6 and 12).

For each parallelism scheme the book analyses, the registered threshold quantity decides
whether the run is compute-bound at the given batch, and the memory-per-device quantity
whether it fits in HBM; the first scheme that passes both is recommended, with its mesh, step
time and total training time at the given MFU. Every number comes from a registered quantity,
and the report keeps each one's derivation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import sympy as sp

from . import formatting, hardware, models, quantities
from .errors import BadValueError
from .symbolic.derivation import Evaluated

__all__ = ["Verdict", "plan", "as_text", "as_markdown", "as_latex", "parse_count"]

#: Bytes of Adam state per parameter (fp32 first and second moments), the book's 10 = 2 + 8 with bf16 weights.
ADAM_BYTES = 8
#: Activation checkpoints per layer, as the newest text of applied-training.md assumes.
CHECKPOINTS = 2
_SUFFIX = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
           "Ti": 2**40}


MAX_COUNT = 10**18


def parse_count(text: str, what: str) -> int:
    """``4M`` = 4e6, ``4Mi`` = 4·2^20, ``15T`` = 1.5e13, or plain arithmetic (``1024*4096``).

    >>> parse_count("4Mi", "batch"), parse_count("15T", "tokens"), parse_count("1024*4096", "batch")
    (4194304, 15000000000000, 4194304)
    """
    from .parsing import parse_number

    text = text.strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if text.endswith(suffix) and text[: -len(suffix)].strip():
            value = parse_number(text[: -len(suffix)]) * _SUFFIX[suffix]
            break
    else:
        value = parse_number(text)
    if not (value.is_Integer and 0 < value <= MAX_COUNT):
        raise BadValueError(f"{what} = {text} must be a positive whole number up to 10^18 (e.g. 4M = 4e6, 4Mi = 4*2^20)")
    return int(value)


@dataclass
class Verdict:
    scheme: str
    ok: bool
    reason: str
    mesh: dict[str, int] = field(default_factory=dict)
    numbers: dict[str, tuple[sp.Expr, str]] = field(default_factory=dict)
    derivations: dict[str, Evaluated] = field(default_factory=dict)


def _ev(name: str, ctx: quantities.Context, given: Mapping[str, object]) -> Evaluated:
    q = quantities.get(name)
    params = {p.name for p in q.params}
    return quantities.evaluate(q, ctx, {k: v for k, v in given.items() if k in params})


def _params(model: models.Model, ctx) -> tuple[sp.Expr, sp.Expr, Evaluated | None]:
    """Total and active parameters; from the registry when the book's closed form fits the model."""
    if model.is_mla or model.dense_layers or model.shared_experts:
        return (sp.Integer(model.param_count()), sp.Integer(model.param_count(active=True)), None)
    total = _ev("transformer.moe_params" if model.is_moe else "transformer.params", ctx, {})
    active = _ev("transformer.active_params", ctx, {}) if model.is_moe else total
    return total.value, active.value, total


def plan(model: models.Model, chip: hardware.Chip, chips: int, batch: int, tokens: int | None, mfu: sp.Rational,
         dtype: str = "bf16", model_catalog=None, catalog=None) -> dict:
    """Each scheme's verdict, the recommended mesh, memory, step time and training time."""
    if chips < 1:
        raise BadValueError(f"--chips {chips} must be at least 1")
    if batch < chips:
        raise BadValueError(f"--batch-tokens {batch} is smaller than --chips {chips}: every chip needs tokens")
    if not 0 < mfu <= 1:
        raise BadValueError(f"--mfu {mfu} must be in (0, 1]")
    ctx = quantities.Context(chip=chip.key, dtype=dtype, model=model.key, catalog=catalog, model_catalog=model_catalog)
    total, active, params_ev = _params(model, ctx)
    per_chip = sp.Rational(batch, chips)
    act = _ev("transformer.activation_bytes", ctx, {"B": batch, "n_ckpt": CHECKPOINTS}).value
    common = {"B": batch, "n_dev": chips, "P": total, "A_act": act, "b_opt": ADAM_BYTES}
    hbm = chip.hbm_bytes
    out: list[Verdict] = []

    def memory(scheme: str, mesh: dict) -> tuple[sp.Expr, Evaluated]:
        ev = _ev(f"parallel.memory_per_device.{scheme}", ctx, common | mesh)
        return ev.value, ev

    if chip.family == "tpu":
        m_x = chip.torus_dims or 2
        dp = _ev("parallel.dp.min_batch_per_device", ctx, {"M_X": m_x})
        mem, mem_ev = memory("dp", {"X": chips})
        ok_c, ok_m = bool(per_chip >= dp.value), bool(mem <= hbm)
        out.append(Verdict("data parallelism", ok_c and ok_m, _why(ok_c, ok_m, per_chip, dp.value, mem, hbm),
                           {"X": chips}, {"batch per chip": (per_chip, "token"), "threshold": (dp.value, "token"),
                                          "memory per chip": (mem, "byte")}, {"threshold": dp, "memory": mem_ev}))
        fsdp = _ev("parallel.fsdp.min_batch_per_device", ctx, {"M_X": m_x})
        mem, mem_ev = memory("fsdp", {"X": chips})
        ok_c, ok_m = bool(per_chip >= fsdp.value), bool(mem <= hbm)
        out.append(Verdict("FSDP", ok_c and ok_m, _why(ok_c, ok_m, per_chip, fsdp.value, mem, hbm), {"X": chips},
                           {"batch per chip": (per_chip, "token"), "threshold": (fsdp.value, "token"),
                            "memory per chip": (mem, "byte")}, {"threshold": fsdp, "memory": mem_ev}))
        tp = _ev("parallel.tp.max_degree", ctx, {"M_Y": 1})
        out.append(Verdict("tensor parallelism", False,
                           f"stays compute-bound only up to {formatting.decimal(tp.value, 3)}-way, far below "
                           f"{chips} chips: combine it with FSDP", {"Y": chips},
                           {"largest TP degree per axis": (tp.value, "chip")}, {"threshold": tp}))
        m_y = 1
        mixed_min = _ev("parallel.fsdp_tp.min_batch_per_chip", ctx, {"M_X": m_x - 1 if m_x > 1 else 1, "M_Y": m_y,
                                                                     "n_dev": chips, "B": batch})
        x_opt = _ev("parallel.fsdp_tp.x_opt", ctx, {"M_X": m_x - 1 if m_x > 1 else 1, "M_Y": m_y, "n_dev": chips,
                                                    "B": batch})
        x = 2 ** max(0, round(math.log2(float(x_opt.value))))
        y = 2 ** int(math.floor(math.log2(max(1, chips // x)))) if chips >= x else 1
        x = min(x, chips)
        used = x * y
        mem, mem_ev = memory("fsdp_tp", {"X": x, "Y": y})
        ok_c = bool(per_chip >= mixed_min.value and y <= tp.value)
        ok_m = bool(mem <= hbm)
        reason = _why(ok_c, ok_m, per_chip, mixed_min.value, mem, hbm)
        if y > tp.value:
            reason = f"the TP degree {y} exceeds the largest compute-bound degree {formatting.decimal(tp.value, 3)}"
        out.append(Verdict("FSDP + tensor parallelism", ok_c and ok_m, reason, {"X": x, "Y": y},
                           {"batch per chip": (per_chip, "token"), "threshold": (mixed_min.value, "token"),
                            "X_opt": (x_opt.value, "chip"), "chips used": (sp.Integer(used), "chip"),
                            "memory per chip": (mem, "byte")},
                           {"threshold": mixed_min, "X_opt": x_opt, "memory": mem_ev}))
        if chip.pod_chips and chips > chip.pod_chips:
            slices = math.ceil(chips / chip.pod_chips)
            dcn = _ev("parallel.dcn.min_batch_per_slice", ctx, {})
            per_slice = sp.Rational(batch, slices)
            ok = bool(per_slice >= dcn.value)
            out.append(Verdict("across pods over DCN", ok,
                               f"{slices} slices: {formatting.decimal(per_slice, 4)} tokens per slice "
                               f"{'≥' if ok else '<'} {formatting.decimal(dcn.value, 4)}", {"slices": slices},
                               {"batch per slice": (per_slice, "token"), "threshold": (dcn.value, "token")},
                               {"threshold": dcn}))
    else:
        node = chip.nvlink_domain or 8
        dp = _ev("parallel.gpu.dp.min_batch_per_gpu", ctx, {})
        mem, mem_ev = memory("fsdp", {"X": chips})
        ok_c, ok_m = bool(per_chip >= dp.value), bool(mem <= hbm)
        out.append(Verdict("FSDP across nodes", ok_c and ok_m, _why(ok_c, ok_m, per_chip, dp.value, mem, hbm),
                           {"X": chips}, {"batch per GPU": (per_chip, "token"), "threshold": (dp.value, "token"),
                                          "memory per GPU": (mem, "byte")}, {"threshold": dp, "memory": mem_ev}))
        tp = _ev("parallel.gpu.tp.max_degree_in_node", ctx, {})
        y = 2 ** int(math.floor(math.log2(max(1, min(node, chips, float(tp.value))))))
        sharded = _ev("parallel.gpu.dp.min_batch_per_gpu_model_sharded", ctx, {"Y": y, "n_dev": chips})
        x = chips // y
        mem, mem_ev = memory("fsdp_tp", {"X": x, "Y": y})
        ok_c, ok_m = bool(per_chip >= sharded.value), bool(mem <= hbm)
        out.append(Verdict(f"{y}-way tensor parallelism in the node + FSDP across nodes", ok_c and ok_m,
                           _why(ok_c, ok_m, per_chip, sharded.value, mem, hbm), {"X": x, "Y": y},
                           {"batch per GPU": (per_chip, "token"), "threshold": (sharded.value, "token"),
                            "largest TP degree in the node": (tp.value, "chip"), "memory per GPU": (mem, "byte")},
                           {"threshold": sharded, "TP degree": tp, "memory": mem_ev}))
        # pipeline stages across nodes: a model replica spanning more nodes lowers the per-GPU batch
        # the data-parallel AllReduce needs (gpus.md, LLaMA-3 and DeepSeek examples)
        z = 2
        while z <= model.L and y * z <= chips:
            span = y * z
            piped = _ev("parallel.gpu.dp.min_batch_per_gpu_model_sharded", ctx, {"Y": span, "n_dev": chips})
            replicas = chips // span
            mem, mem_ev = _mem_pipeline(ctx, common, act, replicas, span)
            if per_chip >= piped.value and mem <= hbm:
                break
            z *= 2
        if y * z <= chips and z <= model.L:
            ok_c, ok_m = bool(per_chip >= piped.value), bool(mem <= hbm)
            out.append(Verdict(f"{y}-way TP x {z}-way pipeline x {chips // (y * z)}-way data parallelism",
                               ok_c and ok_m, _why(ok_c, ok_m, per_chip, piped.value, mem, hbm),
                               {"X": chips // (y * z), "Y": y, "Z": z},
                               {"batch per GPU": (per_chip, "token"), "threshold": (piped.value, "token"),
                                "memory per GPU": (mem, "byte")}, {"threshold": piped, "memory": mem_ev}))
    best = next((v for v in out if v.ok), None)
    used = chips
    if best is not None and "chips used" in best.numbers:
        used = int(best.numbers["chips used"][0])
    step = _ev("parallel.step_time", ctx, {"B": batch, "P": active, "n_dev": used, "MFU": mfu})
    train = _ev("parallel.training_time", ctx, {"tokens": tokens, "P": active, "n_dev": used, "MFU": mfu}) \
        if tokens else None
    return {"model": model.key, "chip": chip.key, "chips": chips, "batch_tokens": batch, "tokens": tokens,
            "mfu": mfu, "params": total, "active_params": active, "params_derivation": params_ev,
            "verdicts": out, "recommended": best, "chips_used": used, "step_time": step,
            "training_time": train}


def _mem_pipeline(ctx, common, act, replicas: int, span: int):
    """Memory per GPU when each replica's weights and activations are split over ``span`` GPUs."""
    ev = _ev("parallel.memory_per_device.pipeline", ctx, common | {"A_act": act / replicas, "Z": span})
    return ev.value, ev


def _why(ok_c: bool, ok_m: bool, have, need, mem, hbm) -> str:
    parts = [f"{formatting.decimal(have, 4)} tokens per chip {'≥' if ok_c else '<'} {formatting.decimal(need, 4)} "
             f"({'compute' if ok_c else 'communication'}-bound)",
             f"{formatting.with_unit(mem, 'byte')} per chip {'fits in' if ok_m else 'exceeds'} "
             f"{formatting.with_unit(hbm, 'byte')} of HBM"]
    return "; ".join(parts)


def _rows(report: dict) -> list[tuple[str, str, str]]:
    return [(v.scheme, "yes" if v.ok else "no", v.reason) for v in report["verdicts"]]


def _summary(report: dict) -> list[str]:
    best = report["recommended"]
    lines = [f"parameters: {formatting.decimal(report['params'], 4)} (active {formatting.decimal(report['active_params'], 4)})"]
    if best is None:
        lines.append("recommended: none of the schemes is both compute-bound and within HBM at this batch; "
                     "raise the batch, use fewer chips, or shard further (pipeline stages)")
    else:
        mesh = " x ".join(f"{k}={v}" for k, v in best.mesh.items())
        lines.append(f"recommended: {best.scheme}, mesh {mesh}, {report['chips_used']} chips used")
        mem = next((n for k, n in best.numbers.items() if k.startswith("memory")), None)
        if mem:
            lines.append(f"memory per chip: {formatting.with_unit(mem[0], 'byte')}")
    lines.append(f"step time at MFU {formatting.decimal(report['mfu'])}: {formatting.with_unit(report['step_time'].value, 's')}")
    if report["training_time"] is not None:
        seconds = report["training_time"].value
        lines.append(f"training time for {formatting.decimal(report['tokens'])} tokens: "
                     f"{formatting.with_unit(seconds, 's')} = {formatting.decimal(seconds / 86400, 3)} days")
    return lines


def as_text(report: dict) -> str:
    head = (f"plan: {report['model']} on {report['chips']} x {report['chip']}, batch {report['batch_tokens']} tokens")
    lines = [head, ""]
    for scheme, ok, why in _rows(report):
        lines.append(f"  {'OK ' if ok == 'yes' else 'no '} {scheme}: {why}")
    return "\n".join(lines + [""] + _summary(report))


def as_markdown(report: dict) -> str:
    lines = [f"# Training plan: {report['model']} on {report['chips']} x {report['chip']}", "",
             f"Batch {report['batch_tokens']} tokens; MFU {formatting.decimal(report['mfu'])}.", "",
             "| scheme | works | why |", "|---|---|---|"]
    lines += [f"| {s} | {ok} | {why} |" for s, ok, why in _rows(report)]
    return "\n".join(lines + [""] + [f"- {x}" for x in _summary(report)]) + "\n"


def as_latex(report: dict) -> str:
    from .problems.render import _escape

    rows = " \\\\\n".join(f"{_escape('tex', s)} & {ok} & {_escape('tex', why)}" for s, ok, why in _rows(report))
    items = "\n".join(f"\\item {_escape('tex', x)}" for x in _summary(report))
    return ("\\begin{tabular}{llp{0.6\\linewidth}}\n\\toprule\nscheme & works & why \\\\\n\\midrule\n"
            f"{rows} \\\\\n\\bottomrule\n\\end{{tabular}}\n\\begin{{itemize}}\n{items}\n\\end{{itemize}}")


def as_json(report: dict) -> dict:
    def num(value):
        return {"exact": str(value), "value": formatting.to_float(value)}

    best = report["recommended"]
    return {
        "model": report["model"], "chip": report["chip"], "chips": report["chips"],
        "batch_tokens": report["batch_tokens"], "tokens": report["tokens"], "mfu": str(report["mfu"]),
        "params": num(report["params"]), "active_params": num(report["active_params"]),
        "schemes": [{"scheme": v.scheme, "ok": bool(v.ok), "why": v.reason, "mesh": v.mesh,
                     "numbers": {k: {**num(x), "unit": u} for k, (x, u) in v.numbers.items()}}
                    for v in report["verdicts"]],
        "recommended": None if best is None else {"scheme": best.scheme, "mesh": best.mesh,
                                                   "chips_used": report["chips_used"]},
        "step_time": num(report["step_time"].value),
        "training_time": None if report["training_time"] is None else num(report["training_time"].value),
    }
