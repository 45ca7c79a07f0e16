"""Grading a hands-on submission: run it sandboxed, compare with the unsharded answer, read its collectives.

Verdicts: ``right``; ``wrong values`` (the largest error named); ``wrong collectives`` (right values, but the
compiled HLO lacks a collective the task asks for or has one it rules out); ``error`` (its exception);
``timeout``; ``resource limit``; ``forbidden operation``. A layout task (:mod:`.layer`) adds ``bad layout`` (the
returned layout breaks a rule, or leaves a weight unsharded) and ``over budget`` (right values, but its
collectives move more bytes per device than the budget). Never an exception for what a submission does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ...xla.parse import parse_collectives
from .sandbox import Limits, run_submission
from .tasks import HandsOnTask

__all__ = ["CodeGrade", "grade_code", "VERDICTS", "REL_TOL"]

VERDICTS = ("right", "wrong values", "wrong collectives", "error", "timeout", "resource limit",
            "forbidden operation", "bad layout", "over budget")
#: Largest error allowed, relative to the largest entry of the answer (float32 sums in any order).
REL_TOL = 1e-4


@dataclass(frozen=True)
class CodeGrade:
    verdict: str
    message: str
    collectives: tuple[str, ...] = ()
    protections: tuple[str, ...] = ()
    printed: str = ""
    observed: tuple[tuple[str, int], ...] = ()  # (kind, V in elements) of each collective, as parse reads them
    details: Mapping[str, object] = field(default_factory=dict)  # a layout task's bytes, budget and model times

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "message": self.message, "collectives": list(self.collectives),
                "protections": list(self.protections), "printed": self.printed, **dict(self.details)}


def _values(task: HandsOnTask, out: np.ndarray) -> str | None:
    """Why the output is wrong, or None."""
    want = task.reference()
    if out.shape != want.shape:
        return f"the result has shape {list(out.shape)}, the unsharded answer {list(want.shape)}"
    if out.dtype.kind not in "fiu":
        return f"the result holds {out.dtype} values, not numbers"
    got = out.astype(np.float64)
    if not np.all(np.isfinite(got)):
        return "the result holds NaN or infinite values"
    scale = max(float(np.max(np.abs(want))), 1e-30)
    err = np.abs(got - want)
    worst = np.unravel_index(int(np.argmax(err)), err.shape)
    if err[worst] > REL_TOL * scale:
        for what, result in task.mistakes():
            if np.max(np.abs(got - result)) <= REL_TOL * scale:
                return f"the result is {what} (it matches that, not the unsharded answer, within {REL_TOL:g})"
        return (f"at index {list(map(int, worst))} the result is {got[worst]:.6g}, the unsharded answer "
                f"{want[worst]:.6g} (error {err[worst] / scale:.2g} of the largest entry; {REL_TOL:g} allowed)")
    return None


def _collectives(task: HandsOnTask, hlo: str | None) -> tuple[tuple[str, ...], tuple, str | None]:
    if hlo is None:
        return (), (), "the compiled HLO could not be read back"
    mesh = task.mesh
    found = parse_collectives(hlo, tuple(n for _, n in mesh), tuple(a for a, _ in mesh))
    shown = tuple(str(c) for c in found)
    observed = tuple((c.kind, int(c.elements)) for c in found)
    kinds = {c.kind for c in found}
    bad = [k for k in task.spec["forbidden"] if k in kinds]
    if bad:
        return shown, observed, (f"the values are right, but XLA's HLO holds {' and '.join(bad)}: the task asks for "
                       f"{' and '.join(task.spec['required'])} instead (see its statement)")
    missing = [k for k in task.spec["required"] if k not in kinds]
    if missing:
        return shown, observed, (f"the values are right, but XLA's HLO holds no {' or '.join(missing)}: the body must move "
                       "the data between devices as the task says")
    return shown, observed, None


def grade_code(task: HandsOnTask, submission, limits: Limits = Limits()) -> CodeGrade:
    """Run ``submission`` (a path, or its bytes) for ``task`` in the sandbox and grade it."""
    in_specs, out_spec = task.specs
    run = run_submission(submission, task.entry, task.inputs(), mode=task.mode, mesh=task.mesh,
                         in_specs=in_specs, out_spec=out_spec, limits=limits)
    base = dict(protections=run.protections, printed=run.printed)
    if run.status != "ok":
        return CodeGrade(run.status, run.message, **base)
    why = _values(task, run.output)
    if why:
        return CodeGrade("wrong values", why, **base)
    if task.mode == "layout":
        from .layer import judge

        return judge(task, run.hlo, base, CodeGrade)
    shown, observed, why = _collectives(task, run.hlo)
    if why:
        return CodeGrade("wrong collectives", why, shown, observed=observed, **base)
    return CodeGrade("right", "the values match the unsharded computation and the collectives are the task's",
                     shown, observed=observed, **base)
