"""Problem sets: choose generators, derive seeds, write every format into a folder.

The same (topics, n, seed) always gives the same problems and byte-identical
files. How the folder is written without ever replacing a user's files is in
:mod:`scalemath.problems.outfolder`.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import BadValueError, ScalemathError, UnknownNameError
from . import render
from .grading import blank_answers
from .model import Problem
from .outfolder import MARKER, publish
from .registry import TOPICS, generators, make_problem, problem_seed

__all__ = ["ALL_FORMATS", "DEFAULT_FORMATS", "MARKER", "ProblemSet", "build_set", "write_set", "default_folder_name"]

DEFAULT_FORMATS = ("md", "tex", "html", "json")
ALL_FORMATS = DEFAULT_FORMATS + ("pdf",)
MAX_N = 1000


@dataclass(frozen=True)
class ProblemSet:
    seed: int
    topics: tuple[str, ...]
    n: int
    problems: tuple[Problem, ...]

    @property
    def title(self) -> str:
        names = {"roofline": "Rooflines", "tpu": "TPUs", "sharding": "Sharded matmuls", "gpu": "GPU networks",
                 "transformer": "Transformer math", "training": "Parallelism for training",
                 "inference": "Inference and serving"}
        return "Problem set: " + " and ".join(names.get(t, t) for t in self.topics)


def _order(seed: int, name: str) -> str:
    return hashlib.sha256(f"{seed}:order:{name}".encode()).hexdigest()


def build_set(topics: Sequence[str] | None = None, n: int | None = None, seed: int = 0) -> ProblemSet:
    """Pick ``n`` problems from the generators of ``topics`` (all by default).

    With ``n`` unset, one problem per generator. Generators are dealt round-robin
    in an order fixed by the seed, and each problem's own seed is derived from
    (set seed, generator, index), so adding a generator does not change others.
    """
    topics = tuple(sorted(set(topics))) if topics else tuple(TOPICS)
    for t in topics:
        if t not in TOPICS:
            raise UnknownNameError("topic", t, TOPICS, hint="topics: " + ", ".join(TOPICS))
    gens = [g for g in generators().values() if g.topic in topics]
    if seed < 0:
        raise BadValueError(f"--seed {seed} must be 0 or more")
    n = len(gens) if n is None else n
    if not 1 <= n <= MAX_N:
        raise BadValueError(f"--n {n} must be between 1 and {MAX_N}")
    by_topic = sorted(gens, key=lambda g: (topics.index(g.topic), g.name))
    dealt = sorted(by_topic, key=lambda g: _order(seed, g.name)) if n < len(by_topic) else by_topic
    chosen = [dealt[i % len(dealt)] for i in range(n)]
    chosen.sort(key=lambda g: (topics.index(g.topic), g.name))
    counts: dict[str, int] = {}
    problems = []
    for g in chosen:
        index = counts.get(g.name, 0)
        counts[g.name] = index + 1
        problems.append(make_problem(g, problem_seed(seed, g.name, index), f"{g.name}-{index + 1}"))
    return ProblemSet(seed, topics, n, tuple(problems))


def default_folder_name(pset: ProblemSet) -> str:
    """``all-seed1-n31`` for every topic, else the topics: ``roofline-tpu-seed1-n15``."""
    topics = "all" if set(pset.topics) == set(TOPICS) else "-".join(pset.topics)
    return f"{topics}-seed{pset.seed}-n{pset.n}"


def write_set(pset: ProblemSet, out: Path, formats: Sequence[str] = DEFAULT_FORMATS,
              force: bool = False) -> list[Path]:
    """Write the sheet, the answer key and the manifest into ``out``; return the files.

    ``out`` must not exist, or, with ``force``, be a folder that scalemath wrote
    and nobody changed since (its :data:`MARKER` lists every entry with its
    sha256); anything else is refused with an :class:`OutputExistsError`, and
    the current folder, the home folder, ``/`` and folders above the current
    one are never replaced. The returned list does not include the marker.
    """
    formats = list(formats)
    if not formats:
        raise BadValueError("--format is empty; give one or more of " + ", ".join(ALL_FORMATS)
                            + ", comma-separated (e.g. --format md,json)")
    for f in formats:
        if f not in ALL_FORMATS:
            raise UnknownNameError("format", f, ALL_FORMATS, hint="formats: " + ",".join(ALL_FORMATS))
    pdflatex = shutil.which("pdflatex") if "pdf" in formats else None
    if "pdf" in formats and pdflatex is None:
        raise ScalemathError("--format pdf needs pdflatex, which is not installed "
                             "(on Debian: apt-get install texlive-latex-base); the .tex files compile with it")
    return publish(Path(out), force, lambda folder: _render_into(folder, pset, formats, pdflatex))


def _render_into(folder: Path, pset: ProblemSet, formats: Sequence[str], pdflatex: str | None) -> None:
    for fmt in ("md", "tex", "html"):
        if fmt in formats or (fmt == "tex" and "pdf" in formats):
            for solutions, stem in ((False, "problems"), (True, "solutions")):
                text = render.render_document(pset.problems, fmt, solutions=solutions,
                                              title=pset.title, seed=pset.seed)
                (folder / f"{stem}.{fmt}").write_text(text, encoding="utf-8")
    if "json" in formats:
        (folder / "manifest.json").write_text(
            render.manifest(pset.problems, seed=pset.seed, topics=pset.topics, n=pset.n), encoding="utf-8")
        (folder / "answers.json").write_text(blank_answers(pset.problems), encoding="utf-8")
    if "pdf" in formats:
        for stem in ("problems", "solutions"):
            compile_pdf(folder / f"{stem}.tex", pdflatex)
        if "tex" not in formats:
            for stem in ("problems", "solutions"):
                (folder / f"{stem}.tex").unlink()


def compile_pdf(tex: Path, pdflatex: str) -> Path:
    """Run pdflatex on ``tex`` in its folder; keep the PDF, drop the auxiliary files."""
    cmd = [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", tex.name]
    for _ in range(2):
        result = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            errors = [line for line in result.stdout.splitlines() if line.startswith("!")]
            what = errors[0] if errors else f"exit status {result.returncode}"
            raise ScalemathError(f"pdflatex failed on {tex.name} ({what}); write the set with --format tex "
                                 f"and run pdflatex on {tex.name} to see the whole log")
    for ext in (".aux", ".log", ".out"):
        tex.with_suffix(ext).unlink(missing_ok=True)
    return tex.with_suffix(".pdf")
