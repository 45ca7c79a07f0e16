"""What a problem set costs, before and after a change, each as a ratio to a bare ``import sympy`` in the same run.

    python3 benchmarks/sets.py                       # today against the commit named by --before (default below)
    python3 benchmarks/sets.py --before abc1234 --repeat 5 --variants 16
    PYTHONPATH=CHECKOUT python3 benchmarks/sets.py --in-process 11   # one class set in one process, per checkout

Issue 28 asks for a cold ``problems generate --n 44`` under 1 s of CPU, measured against ``import sympy`` in one
run, and a class set at 5 ms per problem or less. Each repetition runs, for the commit before (a git worktree under a
temporary folder) and for this checkout, in turns so that a noisy neighbour meets both alike:

- ``import sympy`` in a fresh interpreter (the floor: the engine is SymPy);
- a cold ``problems generate --n 44 --seed 1`` with an empty cache (the first run after installing);
- the same with the cache warmed by one earlier set of another seed (a teacher's second set), with the default
  workers and with ``--jobs 1``;
- a class set, ``--n 44 --variants V --seed 1`` (44 V problems), the cache warmed the same way: CPU per problem.

CPU time is the command's and its workers' (``RUSAGE_CHILDREN``), the median of the repetitions; both trees are
byte-compiled first, as an install leaves them. The output folders of the two trees are not compared here
(``benchmarks/corpus.py`` does that); the commits between the two may draw other problems.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The commit before the speed work of issue 28 (font subsets, shared page lines, named steps remembered).
BEFORE = "7e37798"
GENERATE = ["-m", "scalemath", "problems", "generate", "--n", "44"]


def _run(tree: Path, args: list[str], cache: str, cwd: Path) -> tuple[float, float]:
    """CPU seconds (the child and its children) and wall seconds of one fresh ``python args`` in ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), SCALEMATH_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {tree}: {result.stderr.strip()[-500:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def measure(before: str, repeat: int, variants: int, today: Path = ROOT) -> dict[str, dict[str, list]]:
    with tempfile.TemporaryDirectory(prefix="scalemath-sets-") as name:
        tmp = Path(name)
        made = not Path(before).is_dir()  # a commit: a worktree of it; a folder: that checkout as it is
        trees = {"before": tmp / "before" if made else Path(before).resolve(), "today": today}
        if made:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(trees["before"]), before],
                           check=True, capture_output=True)
        try:
            for tree in trees.values():
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "scalemath")], check=True,
                               capture_output=True)
            warmed = {}
            for label, tree in trees.items():  # one earlier set of another seed, per tree (their caches differ)
                warmed[label] = tmp / f"{label}-warm"
                _run(tree, GENERATE + ["--seed", "2", "--out", str(tmp / f"{label}-warming")], str(warmed[label]), tmp)
            times: dict[str, dict[str, list[tuple[float, float]]]] = {label: {} for label in trees}
            for i in range(repeat):
                for label, tree in trees.items():
                    got = times[label]
                    got.setdefault("sympy", []).append(_run(tree, ["-c", "import sympy"], "off", tmp))
                    got.setdefault("empty", []).append(_run(
                        tree, GENERATE + ["--seed", "1", "--out", str(tmp / f"{label}-e{i}")],
                        str(tmp / f"{label}-empty{i}"), tmp))
                    for key, extra in (("other", []), ("other_serial", ["--jobs", "1"]),
                                       ("class", ["--variants", str(variants)])):
                        cache = tmp / f"{label}-{key}{i}"
                        shutil.copytree(warmed[label], cache)  # warmed by the earlier set only, every time
                        got.setdefault(key, []).append(_run(
                            tree, GENERATE + ["--seed", "1", *extra, "--out", str(tmp / f"{label}-{key}-o{i}")],
                            str(cache), tmp))
        finally:
            if made:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(trees["before"])],
                               capture_output=True)
    return times


def in_process(seed: int, variants: int) -> None:
    """A class set made and written in this process (``--jobs 1``, the cache as ``SCALEMATH_CACHE_DIR`` says): the
    CPU of drawing and checking the problems, and of rendering and writing every document, and a digest of the files
    (the same digest before and after a change that must not change a byte). Run it with ``PYTHONPATH`` set to each
    checkout in turn."""
    import hashlib

    from scalemath.problems import sets

    start = time.process_time()
    pset = sets.build_set(None, n=44, seed=seed, variants=variants, jobs=1, formats=("md", "tex", "html"))
    built = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        sets.write_set(pset, Path(tmp) / "set", ("md", "tex", "html", "json"))
        written = time.process_time()
        digest = hashlib.sha256()
        for path in sorted((Path(tmp) / "set").rglob("*")):
            if path.is_file():
                digest.update(path.relative_to(tmp).as_posix().encode() + b"\0" + path.read_bytes())
    problems = 44 * variants
    print(f"seed {seed}, {problems} problems: made {built - start:.2f} s CPU, written {written - built:.2f} s, "
          f"{(written - start) / problems * 1000:.1f} ms per problem; files {digest.hexdigest()[:12]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help=f"the commit to compare with (default {BEFORE}), or a checkout's folder "
                                                        "(a commit with a change taken back, say)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variants", type=int, default=16)
    parser.add_argument("--today", type=Path, default=ROOT,
                        help="the checkout to measure as today's (default this one; a worktree of a commit keeps "
                             "others' unfinished edits out)")
    parser.add_argument("--in-process", type=int, metavar="SEED",
                        help="instead: one class set of this seed made and written in this process (see in_process)")
    args = parser.parse_args()
    if args.in_process is not None:
        in_process(args.in_process, args.variants)
        return 0
    times = measure(args.before, args.repeat, args.variants, args.today.resolve())
    med = {label: {key: (statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs))
                   for key, runs in got.items()} for label, got in times.items()}
    problems = 44 * args.variants
    print(f"median of {args.repeat}, the trees in turns; CPU of the command and its workers, x its tree's "
          f"`import sympy` in the same run; before = {args.before}")
    labels = {"sympy": "import sympy (fresh interpreter)", "empty": "cold --n 44, empty cache",
              "other": "cold --n 44, cache warmed by one other seed", "other_serial": "... with --jobs 1",
              "class": f"--n 44 --variants {args.variants} (one other seed warmed)"}
    for key, label in labels.items():
        row = []
        for tree in ("before", "today"):
            cpu, wall = med[tree][key]
            ratio = cpu / med[tree]["sympy"][0]
            row.append(f"{cpu:6.2f} s CPU {ratio:5.2f}x {wall:6.2f} s wall")
        print(f"  {label:46} before {row[0]} | today {row[1]}")
    for tree in ("before", "today"):
        cpu = med[tree]["class"][0]
        print(f"  class set per problem ({problems}), {tree}: {cpu / problems * 1000:.1f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
