"""Problem sets: choose generators, derive seeds, write every format into a folder.

The same (topics, n, seed) always gives the same problems and byte-identical
files. A set is written into a fresh temporary folder and moved into place, so
an existing folder is never touched unless ``force`` is given.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import BadValueError, OutputExistsError, ScalemathError, UnknownNameError
from . import render
from .grading import blank_answers
from .model import Problem
from .registry import TOPICS, generators, make_problem, problem_seed

__all__ = ["ALL_FORMATS", "DEFAULT_FORMATS", "ProblemSet", "build_set", "write_set", "default_folder_name"]

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
    """Write the sheet, the answer key and the manifest into ``out``; return the files."""
    for f in formats:
        if f not in ALL_FORMATS:
            raise UnknownNameError("format", f, ALL_FORMATS, hint="formats: " + ",".join(ALL_FORMATS))
    out = Path(out)
    if out.exists() and not force:
        raise OutputExistsError(f"{out} already exists; pass --force to replace it, or --out another folder")
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"{out} exists and is not a folder; choose another --out")
    pdflatex = shutil.which("pdflatex") if "pdf" in formats else None
    if "pdf" in formats and pdflatex is None:
        raise ScalemathError("--format pdf needs pdflatex, which is not installed "
                             "(on Debian: apt-get install texlive-latex-base); the .tex files compile with it")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for fmt in ("md", "tex", "html"):
            if fmt in formats or (fmt == "tex" and "pdf" in formats):
                for solutions, stem in ((False, "problems"), (True, "solutions")):
                    text = render.render_document(pset.problems, fmt, solutions=solutions,
                                                  title=pset.title, seed=pset.seed)
                    (staging / f"{stem}.{fmt}").write_text(text, encoding="utf-8")
        if "json" in formats:
            (staging / "manifest.json").write_text(
                render.manifest(pset.problems, seed=pset.seed, topics=pset.topics, n=pset.n), encoding="utf-8")
            (staging / "answers.json").write_text(blank_answers(pset.problems), encoding="utf-8")
        if "pdf" in formats:
            for stem in ("problems", "solutions"):
                compile_pdf(staging / f"{stem}.tex", pdflatex)
            if "tex" not in formats:
                for stem in ("problems", "solutions"):
                    (staging / f"{stem}.tex").unlink()
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return sorted(out.iterdir())


def compile_pdf(tex: Path, pdflatex: str) -> Path:
    """Run pdflatex on ``tex`` in its folder; keep the PDF, drop the auxiliary files."""
    cmd = [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", tex.name]
    for _ in range(2):
        result = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            tail = "\n".join(result.stdout.splitlines()[-15:])
            raise ScalemathError(f"pdflatex failed on {tex.name}:\n{tail}")
    for ext in (".aux", ".log", ".out"):
        tex.with_suffix(ext).unlink(missing_ok=True)
    return tex.with_suffix(".pdf")
