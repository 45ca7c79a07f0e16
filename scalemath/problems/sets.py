"""Problem sets: choose generators, derive seeds, write every format into a folder.

The same (topics, n, seed) always gives the same problems and byte-identical
files. How the folder is written without ever replacing a user's files is in
:mod:`scalemath.problems.outfolder`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import BadValueError, ScalemathError, UnknownNameError
from ..files import write_file
from . import figures, parallel, registry, render
from .grading import blank_answers
from .model import Problem
from .outfolder import MARKER, publish
from .registry import TOPICS, get_generator, index, problem_seed
from .sheet import MAX_VARIANTS, Sheet, tex_student
from .variety import MAX_REDRAWS, Spread, fresh as _fresh  # noqa: F401  (the redraws live in variety)

__all__ = ["ALL_FORMATS", "DEFAULT_FORMATS", "MARKER", "ProblemSet", "Variant", "build_set", "write_set",
           "default_folder_name", "set_id", "variant_seed", "documents_to_write"]

DEFAULT_FORMATS = ("md", "tex", "html", "json")
ALL_FORMATS = DEFAULT_FORMATS + ("pdf",)
MAX_N = 1000
MAX_PROBLEMS = 20000  # problems in all the variants of one set


_TOPIC_TITLES = {"roofline": "Rooflines", "tpu": "TPUs", "sharding": "Sharded matmuls", "gpu": "GPU networks",
                 "transformer": "Transformer math", "training": "Parallelism for training",
                 "inference": "Inference and serving"}


@dataclass(frozen=True)
class Variant:
    """One student's version of a set: the same kinds of problem, drawn with their own seeds."""

    id: str
    student: str | None
    problems: tuple[Problem, ...]


@dataclass(frozen=True)
class ProblemSet:
    """A plain set (``problems``) or a set of per-student ``variants`` (then ``problems`` is empty)."""

    seed: int
    topics: tuple[str, ...]
    n: int
    problems: tuple[Problem, ...]
    generators: tuple[str, ...] = ()
    variants: tuple[Variant, ...] = ()
    set_id: str = ""
    #: (generator, how many different variants it makes) for each whose space ran out: students share its problems
    shared: tuple[tuple[str, int], ...] = ()

    @property
    def title(self) -> str:
        if set(self.topics) == set(TOPICS):
            return "Problem set: How To Scale Your Model"
        names = [_TOPIC_TITLES.get(t, t) for t in self.topics]
        return "Problem set: " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1])

    @property
    def all_problems(self) -> tuple[Problem, ...]:
        return self.problems + tuple(p for v in self.variants for p in v.problems)


def _order(seed: int, name: str) -> str:
    return hashlib.sha256(f"{seed}:order:{name}".encode()).hexdigest()


def set_id(seed: int, topics: Sequence[str], generators: Sequence[str], n: int,
           variant_ids: Sequence[str] = ()) -> str:
    """A short public name for a set: 10 hex digits of a one-way hash of what chose its problems.

    It tells two sets apart on paper without revealing the seed, which would regenerate the key.

    >>> set_id(7, ["roofline"], [], 8) == set_id(7, ["roofline"], [], 8), len(set_id(7, [], [], 8))
    (True, 10)
    """
    spec = json.dumps({"seed": seed, "topics": list(topics), "generators": list(generators), "n": n,
                       "variants": list(variant_ids)}, sort_keys=True)
    return hashlib.sha256(("scalemath-set:" + spec).encode()).hexdigest()[:10]


def variant_seed(seed: int, variant: str) -> int:
    """A variant's own seed, from the set seed and its id (a roster id or v01, v02, ...)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:variant:{variant}".encode()).digest()[:8], "big")


def _choose(topics: Sequence[str] | None, names: Sequence[str] | None) -> tuple[tuple[str, ...], dict[str, str]]:
    """The topics used and the chosen generators' topics by name, read from the generator index (no generator
    module is imported: only those a set draws are, by :func:`_resolve`)."""
    entries = index()
    chosen: dict[str, str] = {}
    for name in names or ():
        chosen[name] = entries[name][1] if name in entries else get_generator(name).topic
    if topics or not names:
        wanted = tuple(sorted(set(topics))) if topics else tuple(TOPICS)
        for t in wanted:
            if t not in TOPICS:
                raise UnknownNameError("topic", t, TOPICS, hint="topics: " + ", ".join(TOPICS))
        for name, entry in entries.items():
            if entry[1] in wanted:
                chosen.setdefault(name, entry[1])
    used = tuple(t for t in TOPICS if t in chosen.values())
    return used, chosen


def problem_count(topics: Sequence[str] | None, n: int | None, generator_names: Sequence[str] | None) -> int:
    """How many problems :func:`build_set` makes for one sheet: ``n``, or one per chosen generator."""
    return n if n is not None else len(_choose(topics, generator_names)[1])


def build_set(topics: Sequence[str] | None = None, n: int | None = None, seed: int = 0, *,
              generator_names: Sequence[str] | None = None, variants: int | None = None,
              students: Sequence[tuple[str, str | None]] | None = None,
              progress: Callable[[int], None] | None = None, jobs: int = 1,
              formats: Sequence[str] = ()) -> ProblemSet:
    """Pick ``n`` problems from the generators of ``topics`` and ``generator_names`` (all by default).

    With ``n`` unset, one problem per generator. Generators are dealt round-robin
    in an order fixed by the seed, and each problem's own seed is derived from
    (set seed, generator, index), so adding a generator does not change others.
    A problem whose statement repeats one already in the set is drawn again with
    the next derived seed. ``variants`` (v01, v02, ...) or ``students`` (roster ids
    and names) give every student the same kinds of problem, each drawn afresh.
    ``progress(k)`` is called as every k problems are made. With ``jobs`` over 1, the problems are made in
    that many worker processes where it is safe and pays (:mod:`scalemath.problems.parallel`), their blocks
    rendered for the document ``formats`` the set will be written in; the set is the same.
    """
    if seed < 0:
        raise BadValueError(f"--seed {seed} must be 0 or more")
    if not isinstance(jobs, int) or jobs < 1:
        raise BadValueError(f"--jobs {jobs} must be a whole number, 1 or more")
    topics, gens = _choose(topics, generator_names)
    n = len(gens) if n is None else n
    if not 1 <= n <= MAX_N:
        raise BadValueError(f"--n {n} must be between 1 and {MAX_N}")
    if variants is not None and students is not None:
        raise BadValueError("give --variants or --students, not both")
    ids: list[tuple[str, str | None]] = []
    if variants is not None:
        if not 1 <= variants <= MAX_VARIANTS:
            raise BadValueError(f"--variants {variants} must be between 1 and {MAX_VARIANTS}")
        width = max(2, len(str(variants)))
        ids = [(f"v{i:0{width}d}", None) for i in range(1, variants + 1)]
    elif students is not None:
        ids = list(students)
    if ids and n * len(ids) > MAX_PROBLEMS:
        raise BadValueError(f"--n {n} for {len(ids)} variants makes {n * len(ids)} problems; at most {MAX_PROBLEMS}")
    by_topic = sorted(gens, key=lambda g: (topics.index(gens[g]), g))
    dealt = sorted(by_topic, key=lambda g: _order(seed, g)) if n < len(by_topic) else by_topic
    drawn = sorted((dealt[i % len(dealt)] for i in range(n)), key=lambda g: (topics.index(gens[g]), g))
    chosen = drawn  # names: a generator's module is imported when a problem of it is made, not read back
    names = tuple(sorted(generator_names or ()))
    sid = set_id(seed, topics, names, n, [i for i, _ in ids])
    seeds = [variant_seed(seed, vid) for vid, _ in ids] if ids else [seed]
    ahead = parallel.make_ahead([k for s in seeds for k in _first_draws(chosen, s)], jobs,
                                _rendered(formats),
                                progress) if jobs > 1 else set()
    try:
        if not ids:
            return ProblemSet(seed, topics, n, _draw(chosen, seed, progress, ahead), names, (), sid)
        spread = Spread()  # every student's problems differ from every other's where a generator's space allows
        made = tuple(Variant(vid, student, _draw(chosen, s, progress, ahead, spread))
                     for (vid, student), s in zip(ids, seeds))
        return ProblemSet(seed, topics, n, (), names, made, sid, spread.shared())
    finally:
        registry.forget_ahead()  # those the draw did not take (a slot that went to another generator)


def _first_draws(chosen: Sequence[str], seed: int) -> list[tuple[str, int, str]]:
    """The (generator, seed, id) of the problem each slot gets unless its statement repeats an earlier one."""
    counts: dict[str, int] = {}
    keys = []
    for g in chosen:
        index = counts[g] = counts.get(g, 0) + 1
        keys.append((g, problem_seed(seed, g, index - 1), f"{g}-{index}"))
    return keys


def _draw(chosen: Sequence[str], seed: int, progress: Callable[[int], None] | None,
          ahead: set[tuple[str, int, str]] = frozenset(), spread: Spread | None = None) -> tuple[Problem, ...]:
    """One problem per slot of ``chosen``, never repeating a statement: a repeat is drawn again with the next
    derived seed, and a generator that has no fresh problem left gives its slot to the next one of the set that
    has (in the set's own order, so the same seed still gives the same set). Problems in ``ahead`` were made
    (and reported to ``progress``) by workers. A problem that asks a quantity another generator's problem
    asked at the same inputs is drawn again too; with ``spread`` (a set of variants), so is one whose answers
    another student has (:mod:`scalemath.problems.variety`)."""
    counts: dict[str, int] = {}
    seen: dict[str, str] = {}
    asked: dict = {}  # quantity asked at given inputs -> the generator that asked it
    exhausted: set[str] = set()
    pool = list(dict.fromkeys(chosen))
    problems = []
    for slot in chosen:
        start = pool.index(slot)
        for g in pool[start:] + pool[:start]:
            if g in exhausted:
                continue
            problem = _fresh(g, seed, counts, seen, asked, spread)
            if problem is not None:
                break
            exhausted.add(g)
        else:
            raise BadValueError(f"these generators have only {len(problems)} different problems for this seed; "
                                f"ask for fewer than {len(chosen)} (--n), or add topics or generators")
        problems.append(problem)
        if progress is not None and (problem.generator, problem.seed, problem.id) not in ahead:
            progress(1)
    return tuple(problems)


def default_folder_name(pset: ProblemSet) -> str:
    """``all-seed1-n31`` for every topic, else the topics (or generators): ``roofline-tpu-seed1-n15``;
    ``-v30`` for 30 variants."""
    if pset.generators:
        what = "-".join(pset.generators)
    else:
        what = "all" if set(pset.topics) == set(TOPICS) else "-".join(pset.topics)
    if len(what) > 60:
        what = what[:60].rstrip("-_")
    suffix = f"-v{len(pset.variants)}" if pset.variants else ""
    return f"{what}-seed{pset.seed}-n{pset.n}{suffix}"


def write_set(pset: ProblemSet, out: Path, formats: Sequence[str] = DEFAULT_FORMATS,
              force: bool = False, sheet: Sheet | None = None,
              progress: Callable[[int], None] | None = None) -> list[Path]:
    """Write the sheet, the answer key and the manifest into ``out``; return the files.

    ``out`` must not exist, or, with ``force``, be a folder that scalemath wrote
    and nobody changed since (its :data:`MARKER` lists every entry with its
    sha256); anything else is refused with an :class:`OutputExistsError`, and
    the current folder, the home folder, ``/`` and folders above the current
    one are never replaced. The returned list does not include the marker.
    A set of variants writes ``sheets/<id>/problems.*`` and ``sheets/<id>/answers.json``
    per variant, and one ``solutions.*`` and ``manifest.json`` for all.
    ``progress(k)`` is called as every k documents are written.
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
                             "(on Debian: apt-get install texlive-latex-base lmodern); the .tex files compile with it")
    sheet = sheet or Sheet()
    return publish(Path(out), force, lambda folder: _render_into(folder, pset, formats, pdflatex, sheet, progress))


def _rendered(formats: Sequence[str]) -> list[str]:
    """The document formats rendered for ``formats`` (md, tex, html), in that order: LaTeX also for PDF."""
    return [f for f in render.FORMATS if f in formats or (f == "tex" and "pdf" in formats)]


def documents_to_write(pset: ProblemSet, formats: Sequence[str]) -> int:
    """How many documents :func:`write_set` renders or compiles (for a progress bar)."""
    kinds = len(_rendered(formats)) + ("pdf" in formats)
    sheets = max(1, len(pset.variants))
    return kinds * (sheets + 1)


def _put(path: Path, text: str) -> None:
    """One text file of the set, in its staging folder, through the one safe writer."""
    write_file(path, text.encode("utf-8"), what="problem set")


def _render_into(folder: Path, pset: ProblemSet, formats: Sequence[str], pdflatex: str | None,
                 sheet: Sheet, progress: Callable[[int], None] | None) -> None:
    def tick():
        if progress is not None:
            progress(1)

    groups = [render.Group(v.problems, v.id, v.student) for v in pset.variants] or [render.Group(pset.problems)]
    common = {"title": pset.title, "set_id": pset.set_id, "sheet": sheet}
    figures.prepare(pset.all_problems, formats)
    texts = []
    every_group = groups
    for fmt in _rendered(formats):
        # a name pdflatex's fonts cannot print shows as the student's id in LaTeX (the CLI says so once)
        groups = [render.Group(g.problems, g.id, tex_student(g.student)) for g in every_group] \
            if fmt == "tex" and pset.variants else every_group
        if pset.variants:
            for g in groups:
                where = folder / "sheets" / g.id
                where.mkdir(parents=True, exist_ok=True)
                text = render.render_document(g.problems, fmt, solutions=False, groups=[g], **common)
                _put(where / f"problems.{fmt}", text)
                texts.append(where / f"problems.{fmt}")
                tick()
        else:
            text = render.render_document(pset.problems, fmt, solutions=False, **common)
            _put(folder / f"problems.{fmt}", text)
            texts.append(folder / f"problems.{fmt}")
            tick()
        text = render.render_document(pset.problems, fmt, solutions=True, groups=groups, **common)
        _put(folder / f"solutions.{fmt}", text)
        texts.append(folder / f"solutions.{fmt}")
        tick()
    groups = every_group
    figures.write_files(folder, [(Path("sheets") / v.id, v.problems) for v in pset.variants]
                        + [(Path("."), pset.all_problems)], formats)
    if "json" in formats:
        _put(folder / "manifest.json",
             render.manifest(pset.problems, seed=pset.seed, topics=pset.topics, n=pset.n, set_id=pset.set_id,
                             generators=pset.generators, variants=groups if pset.variants else None,
                             points=[sheet.points_for(i) for i in range(pset.n)] if sheet.points else ()))
        if pset.variants:
            for v in pset.variants:
                (folder / "sheets" / v.id).mkdir(parents=True, exist_ok=True)  # also when no sheet format is asked
                _put(folder / "sheets" / v.id / "answers.json",
                     blank_answers(v.problems, pset.set_id, v.id, v.student))
        else:
            _put(folder / "answers.json", blank_answers(pset.problems, pset.set_id))
    if "pdf" in formats:
        for tex in [t for t in texts if t.suffix == ".tex"]:
            compile_pdf(tex, pdflatex)
            tick()
            if "tex" not in formats:
                tex.unlink()
        if "tex" not in formats:  # the PDFs hold their figures; the .pdf files were only for pdflatex
            figures.drop_latex_files(folder)


def compile_pdf(tex: Path, pdflatex: str) -> Path:
    """Run pdflatex on ``tex`` in its folder; keep the PDF, drop the auxiliary files."""
    cmd = [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", tex.name]
    # the document omits the date and the trailer ID itself; a fixed SOURCE_DATE_EPOCH covers the rest
    env = dict(os.environ, SOURCE_DATE_EPOCH="0", FORCE_SOURCE_DATE="1")
    for _ in range(2):
        result = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True, timeout=120, env=env)
        if result.returncode != 0:
            errors = [line for line in result.stdout.splitlines() if line.startswith("!")]
            what = errors[0] if errors else f"exit status {result.returncode}"
            raise ScalemathError(f"pdflatex failed on {tex.name} ({what}); write the set with --format tex "
                                 f"and run pdflatex on {tex.name} to see the whole log")
    for ext in (".aux", ".log", ".out"):
        tex.with_suffix(ext).unlink(missing_ok=True)
    return tex.with_suffix(".pdf")
