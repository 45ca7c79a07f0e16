"""Speed of the main paths; prints numbers for the README (never asserted in tests).

    python benchmarks/bench.py

Everything is CPU time (this process's, or a child's through ``RUSAGE_CHILDREN``), not wall time:
the machine is shared, and CPU time is what a noisy neighbour disturbs least. Each line also
gives the ratio to ``scalemath --help`` measured in the same run, which is the number to compare
between runs and machines.

1. problems generated, checked (second route) and rendered to Markdown + JSON per CPU second;
2. CPU time of ``scalemath --help`` (a fresh process: start-up cost);
3. CPU time of a cold ``scalemath derive`` and ``scalemath serve`` (fresh processes);
4. the slowest refusal of a hostile expression, in process and as a whole command;
5. the training search of ``scalemath plan`` (priced from achievable rates, as by default) on each run of
   PLAN_RUNS: a cold ``plan`` as a whole command (a fresh process: its CPU time and peak RSS, read with
   ``os.wait4`` for that child alone, since ``RUSAGE_CHILDREN``'s ru_maxrss is the largest of every child so far),
   the same with ``--backend dask`` where dask is installed, and candidates per CPU second in process, the first
   search (compiling the forms) and the second (warm); then, with the book's pricing (``--mfu 0.4``), the same
   closed forms called once per candidate from a Python loop and the exact (rational) evaluation per candidate.
   Calculon's cost per configuration (7.6 ms per core, measured on this machine for the comparison in the
   reviews) is the outside reference. ``python benchmarks/bench.py plan`` runs this section alone;
6. a cold ``problems generate --n 44 --seed 1`` (fresh processes; the CPU time of the command and its worker
   processes, and the wall time): today's code with an empty cache, with the cache warmed by the same command,
   with the cache warmed by one earlier set of another seed (what a teacher's second set meets) or by five (the
   sixth set), the same two drawn from dcc82f2's 44 generators only (the work the baseline did), the sixth sets
   also with ``--jobs 1`` (no workers), with the cache off, and the code of commit dcc82f2 (a git worktree made
   under the temporary folder), both trees byte-compiled first as an install would, with the ratios between
   them:
   ``python benchmarks/bench.py cold`` runs this section alone;
8. ``python benchmarks/bench.py startup``: a cold ``scalemath derive`` against a bare ``import sympy``, in turns, as a
   ratio (the engine is SymPy: everything above that import is scalemath's own start-up);
7. ``python benchmarks/bench.py instructions``: the instructions the cold generate executes (valgrind's callgrind,
   string hashing fixed) for the baseline, today's default set and dcc82f2's 44 generators, the caches warmed by five
   earlier sets: a count, not a time, so it does not move with the machine's load (a time also pays for memory:
   imports, page faults, the garbage collector, which is why its ratio is lower).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXE = [sys.executable, "-m", "scalemath"]
HOSTILE_TEXTS = ["9**9**9**9", "-(" * 100 + "1" + ")" * 100, "1" * 100000, "1+" * 249 + "1", "99999**4000",
                 "(" * 90 + "B" + ")" * 90, "max(" * 39 + "1" + ")" * 39, "1e999999999", "12**(-1/7777777)",
                 "(B**4096)**4096", "B**(1/4096)", "1e2000*1e2000*1e2000", "0x10"]
HOSTILE_COMMANDS = [
    ["derive", "roofline.critical_intensity", "--set", "C=1e999999999,W=1"],
    ["derive", "roofline.critical_intensity", "--set", "C=12**(-1/7777777),W=1"],
    ["check", "matmul.t_math", "--expr", "(B**4096)**4096"],
    ["check", "matmul.t_math", "--expr", "B**4096"],
    ["solve", "matmul.t_math", "--for", "B", "--equals", "B**(1/4096)"],
    ["solve", "roofline.t_lower", "--for", "C", "--equals", "1"],
]


def problems_per_cpu_second(n: int = 400, topics=None) -> tuple[float, float]:
    from scalemath.problems import sets

    sets.build_set(topics, n=40, seed=999)  # warm the derivation caches and templates once
    start = time.process_time()
    pset = sets.build_set(topics, n=n, seed=1)
    built = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        sets.write_set(pset, Path(tmp) / "set", ("md", "json"))
    done = time.process_time()
    return n / (built - start), n / (done - start)


def child_cpu(cmd: list[str], repeat: int = 5) -> float:
    """Median CPU seconds (user + system) of a fresh process running ``cmd``."""
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


def hostile_worst_case() -> float:
    """The slowest refusal among hostile expressions, in process (the parser must answer at once)."""
    from scalemath.errors import ExpressionError
    from scalemath.values.parse import parse_expression
    from scalemath.symbolic.symbols import sym

    worst = 0.0
    for text in HOSTILE_TEXTS:
        start = time.process_time()
        try:
            parse_expression(text, {"B": sym("B")})
        except ExpressionError:
            pass
        worst = max(worst, time.process_time() - start)
    return worst


CALCULON_SECONDS_PER_CONFIGURATION = 7.6e-3
#: The plan runs timed: (model, chips, batch tokens, sequence length), each on H100 with every other option at its
#: default; about 10^6, 10^7 and 1.5 x 10^7 candidates (issue 27: 10^7 on 16,384 GPUs in under 10 s of CPU cold).
PLAN_RUNS = [("llama3-405b", "16384", "16Mi", 4096), ("llama3-405b", "16384", "18Mi", 4096),
             ("deepseek-v3", "2048", "15360*4096", 4096)]


def _plan_command(run, *extra: str) -> list[str]:
    model, chips, batch, seq_len = run
    return EXE + ["plan", "--model", model, "--chip", "h100", "--chips", chips, "--batch-tokens", batch,
                  "--seq-len", str(seq_len), "--format", "json", *extra]


def child_usage(cmd: list[str]) -> tuple[float, float, str]:
    """CPU seconds (user + system), peak resident memory (bytes) and standard output of one fresh process running
    ``cmd``, read from that child's own rusage (``os.wait4``)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024.0, text  # ru_maxrss is in KiB on Linux


def cold_plan(run, *extra: str, repeat: int = 3) -> tuple[int, float, float]:
    """Candidates, median CPU seconds and the largest peak RSS (bytes) of ``repeat`` cold ``plan`` commands."""
    import json

    found = [child_usage(_plan_command(run, *extra)) for _ in range(repeat)]
    report = json.loads(found[0][2])
    candidates = report.get("search", report)["candidates"]
    return candidates, statistics.median(f[0] for f in found), max(f[1] for f in found)


def warm_plan(run) -> tuple[int, float, float]:
    """Candidates and the CPU seconds of the first and the second search in this process (the second finds the
    forms compiled, the modules imported and the memory mapped)."""
    from scalemath.catalog import hardware, models
    from scalemath.search import plan as planner
    from scalemath.search import train_space as training

    model, chips, batch, seq_len = run
    opts = planner.options(chips, batch, seq_len=seq_len)
    spent = []
    for _ in range(2):
        start = time.process_time()
        result = training.search(models.get_model(model), hardware.get_chip("h100"), opts, keep=5)
        spent.append(time.process_time() - start)
    return result.candidates, spent[0], spent[1]


def dask_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("dask") is not None


def print_plan(help_cpu: float | None = None) -> None:
    """Section 5's plan runs: cold commands (CPU, peak RSS), --backend dask, and in process, first and warm."""
    help_cpu = help_cpu or child_cpu(EXE + ["--help"])
    print(f"plan on h100 (run pricing), cold = fresh process, median of 3 ({_cpus()} CPUs, shared); "
          f"scalemath --help {help_cpu * 1000:.0f} ms CPU")
    dask = dask_installed()
    for run in PLAN_RUNS:
        name = f"{run[0]} on {run[1]}, {run[2]} tokens"
        candidates, cpu, rss = cold_plan(run)
        print(f"  {name:38} {candidates:>11,} candidates  cold {cpu:6.2f} s CPU ({cpu / help_cpu:5.1f}x --help), "
              f"peak RSS {rss / 1e6:5.0f} MB, {candidates / cpu:11,.0f} candidates per CPU s")
        if dask and run == PLAN_RUNS[1]:
            candidates, cpu, rss = cold_plan(run, "--backend", "dask", repeat=1)  # slow: once
            print(f"  {'... --backend dask (once)':38} {candidates:>11,} candidates  cold {cpu:6.2f} s CPU "
                  f"({cpu / help_cpu:5.1f}x --help), peak RSS {rss / 1e6:5.0f} MB")
        candidates, first, second = warm_plan(run)
        print(f"  {'... in process':38} first search {candidates / first:11,.0f} per CPU s ({first:5.2f} s), "
              f"second (warm) {candidates / second:11,.0f} per CPU s ({second:5.2f} s)")
    if not dask:
        print("  --backend dask not measured: dask is not installed (pip install 'scalemath[dask]')")


def search_rates() -> dict[str, float]:
    """CPU seconds per candidate: the vectorized search, a Python loop over the same compiled forms, exact."""
    from fractions import Fraction

    from scalemath.catalog import hardware, models
    from scalemath.search import train_space as training

    model, chip = models.get_model("deepseek-v3"), hardware.get_chip("h100")
    opts = training.Options(chips=2048, batch=15360 * 4096, seq_len=4096, mfu=Fraction(2, 5))
    forms = training.compiled(model, chip, opts)
    training.search(model, chip, opts)  # compile once
    start = time.process_time()
    result = training.search(model, chip, opts)
    vectorized = (time.process_time() - start) / result.candidates
    table = next(training.chunks(model, chip, opts, forms))
    names = ("n_dp", "n_fsdp", "n_tp", "n_pp", "n_ep", "n_zero", "n_mb", "n_ckpt", "r_remat",
             "W_tp", "W_fsdp", "W_dp", "W_ep", "W_pp")
    columns = {"n_dp": table["dp"], "n_fsdp": table["fsdp"], "n_tp": table["tp"], "n_pp": table["pp"],
               "n_ep": table["ep"], "n_zero": table["dp"], "n_mb": table["n_mb"], "n_ckpt": table["ckpt"] * 0 + 1,
               "r_remat": table["ckpt"] * 0, **{w: table[w] for w in names if w.startswith("W_")}}
    rows = 20000
    start = time.process_time()
    for i in range(rows):  # the same compiled functions, one candidate at a time
        point = {n: columns[n][i].item() for n in names}
        forms[0](**point), forms[1](**point)
    loop = (time.process_time() - start) / rows
    start = time.process_time()
    for i in range(20):
        point = {n: int(columns[n][i]) for n in names}
        forms[0].exact(point), forms[1].exact(point)
    exact = (time.process_time() - start) / 20
    return {"candidates": result.candidates, "vectorized": vectorized, "loop": loop, "exact": exact}


ROOT = Path(__file__).resolve().parents[1]
BASELINE = "dcc82f2"
GENERATE = ["-m", "scalemath", "problems", "generate", "--n", "44", "--seed", "1"]


def _generate(pythonpath: Path, cache: str | None, out: Path, args=GENERATE) -> tuple[float, float]:
    """CPU seconds (user + system, the worker processes included) and wall seconds of one fresh
    ``python -m scalemath problems generate`` process."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    env.pop("SCALEMATH_CACHE_DIR", None)
    if cache is not None:
        env["SCALEMATH_CACHE_DIR"] = cache
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, *args, "--out", str(out)], capture_output=True, text=True, env=env,
                            cwd=out.parent)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"generate failed ({pythonpath}): {result.stderr.strip()[-500:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


@contextlib.contextmanager
def _with_baseline():
    """A temporary folder holding a git worktree of the baseline commit, both trees byte-compiled; yields the
    folder, the worktree and the ``--generator`` options naming the baseline's generators."""
    with tempfile.TemporaryDirectory(prefix="scalemath-bench-") as name:
        tmp = Path(name)
        tree = tmp / f"scalemath-{BASELINE}"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), BASELINE],
                       check=True, capture_output=True)
        try:
            _byte_compile(ROOT, tree)
            yield tmp, tree, [a for g in _generator_names(tree) for a in ("--generator", g)]
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def _byte_compile(*trees: Path) -> None:
    """Write the .pyc files of both trees, as installing does: where PYTHONDONTWRITEBYTECODE is set (or the
    tree is fresh), every run would otherwise compile every module it imports, which is no user's cost."""
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "scalemath")], check=True,
                       capture_output=True)


def _generator_names(tree: Path) -> list[str]:
    """The generators ``problems list`` of ``tree`` names (two leading spaces, then the name)."""
    out = subprocess.run([sys.executable, "-m", "scalemath", "problems", "list"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(tree)), cwd=tree, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.strip()]


#: The seeds that warm the cache before a new seed (1) is timed: one earlier set, or five (a teacher's sixth).
EARLIER = {"1": ("2",), "5": ("2", "3", "4", "5", "6")}


def cold_generate(repeat: int = 5) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) seconds of a cold ``problems generate --n 44 --seed 1`` per case, the cases interleaved
    in each repetition so that a noisy neighbour touches them alike. ``other*`` run with the cache warmed
    by one or five earlier sets of other seeds; ``same44*`` draw from the baseline's 44 generators only
    (the work the baseline did), the cache warmed the same ways by sets of them; ``*_serial`` with ``--jobs 1``
    (no worker processes)."""
    with _with_baseline() as (tmp, tree, same):
        warm = tmp / "warm-cache"
        _generate(ROOT, str(warm), tmp / "warming")
        caches = {}
        for how, seeds in EARLIER.items():
            for key, extra in (("other" + how, []), ("same44_" + how, same)):
                caches[key] = tmp / f"{key}-cache"
                for seed in seeds:
                    _generate(ROOT, str(caches[key]), tmp / f"warming-{key}-{seed}", GENERATE[:-1] + [seed] + extra)
        runs = {key: (caches[key], same if key.startswith("same44") else []) for key in caches}
        runs.update({key + "_serial": (caches[key], (same if key.startswith("same44") else []) + ["--jobs", "1"])
                     for key in ("other5", "same44_5")})
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in ("empty", "warm", "off", "baseline", *runs)}
        for i in range(repeat):
            times["empty"].append(_generate(ROOT, str(tmp / f"empty-{i}"), tmp / f"empty-out-{i}"))
            times["warm"].append(_generate(ROOT, str(warm), tmp / f"warm-out-{i}"))
            for key, (cache, extra) in runs.items():
                copy = tmp / f"{key}-{i}"
                shutil.copytree(cache, copy)  # warmed by the earlier sets only, every time
                times[key].append(_generate(ROOT, str(copy), tmp / f"{key}-out-{i}", GENERATE + extra))
            times["off"].append(_generate(ROOT, "off", tmp / f"off-out-{i}"))
            times["baseline"].append(_generate(tree, None, tmp / f"baseline-out-{i}"))
    return {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in times.items()}


def print_cold_generate(repeat: int = 5) -> None:
    t = cold_generate(repeat)
    base_cpu, base_wall = t["baseline"]
    labels = {"baseline": f"commit {BASELINE} (no cache)", "off": "today, SCALEMATH_CACHE_DIR=off",
              "empty": "today, empty cache (first run)", "other1": "today, cache warmed by one earlier set",
              "other5": "today, cache warmed by five earlier sets",
              "other5_serial": "... the same with --jobs 1",
              "same44_1": f"today, {BASELINE}'s 44 generators, one earlier set",
              "same44_5": f"today, {BASELINE}'s 44 generators, five earlier sets",
              "same44_5_serial": "... the same with --jobs 1",
              "warm": "today, cache warmed by the same command"}
    print(f"cold 'problems generate --n 44 --seed 1', median of {repeat} fresh processes ({_cpus()} CPUs; CPU "
          "time of the command and its workers, and wall time):")
    for key in ("baseline", "off", "empty", "other1", "other5", "other5_serial", "same44_1", "same44_5",
                "same44_5_serial", "warm"):
        cpu, wall = t[key]
        print(f"  {labels[key]:52} {cpu:6.2f} s CPU ({base_cpu / cpu:4.2f}x)  {wall:6.2f} s wall "
              f"({base_wall / wall:4.2f}x faster than {BASELINE})")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _instructions(pythonpath: Path, cache: str | None, out: Path, args=GENERATE) -> int:
    """Instructions executed by one fresh ``python -m scalemath problems generate`` (valgrind's callgrind; string
    hashing fixed): unlike a time, the same on a loaded machine as on an idle one."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath), PYTHONHASHSEED="0")
    env.pop("SCALEMATH_CACHE_DIR", None)
    if cache is not None:
        env["SCALEMATH_CACHE_DIR"] = cache
    result = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.parent / 'callgrind.out'}",
                             sys.executable, *args, "--out", str(out)], capture_output=True, text=True, env=env,
                            cwd=out.parent)
    counted = re.search(r"Collected : (\d+)", result.stderr)
    if result.returncode != 0 or counted is None:
        raise SystemExit(f"generate under valgrind failed ({pythonpath}): {result.stderr.strip()[-500:]}")
    return int(counted.group(1))


def cold_instructions() -> dict[str, int]:
    """Instructions of the cold ``problems generate --n 44 --seed 1`` for the baseline, today's default set and
    dcc82f2's 44 generators, each cache warmed by five earlier sets (one run each: the count does not vary)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind); it counts the instructions")
    with _with_baseline() as (tmp, tree, same):
        counts = {"baseline": _instructions(tree, None, tmp / "baseline-out")}
        for key, extra in (("other5", []), ("same44_5", same)):
            cache = tmp / f"{key}-cache"
            for seed in EARLIER["5"]:
                _generate(ROOT, str(cache), tmp / f"warming-{key}-{seed}", GENERATE[:-1] + [seed] + extra)
            # one process: callgrind counts the parent only, and the workers' share would be missed
            counts[key] = _instructions(ROOT, str(cache), tmp / f"{key}-out", GENERATE + extra + ["--jobs", "1"])
    return counts


def print_cold_instructions() -> None:
    counts = cold_instructions()
    base = counts["baseline"]
    labels = {"baseline": f"commit {BASELINE} (no cache)", "other5": "today, cache warmed by five earlier sets",
              "same44_5": f"today, {BASELINE}'s 44 generators, five earlier sets"}
    print("cold 'problems generate --n 44 --seed 1', instructions executed (valgrind --tool=callgrind):")
    for key, label in labels.items():
        print(f"  {label:52} {counts[key] / 1e9:7.2f} G  {base / counts[key]:5.2f}x fewer than {BASELINE}")


def startup(repeat: int = 15) -> tuple[float, float]:
    """Median CPU seconds of a bare ``import sympy`` and of a cold ``scalemath derive`` (a fresh process, the cache
    warmed by one earlier run), run in turns so that both meet the same load."""
    derive = EXE + ["derive", "roofline.critical_intensity", "--chip", "tpu-v5e"]
    subprocess.run(derive, capture_output=True)  # warm the cache: what every run after a user's first meets
    bare, cold = [], []
    for _ in range(repeat):
        bare.append(child_cpu([sys.executable, "-c", "import sympy"], 1))
        cold.append(child_cpu(derive, 1))
    return statistics.median(bare), statistics.median(cold)


def print_startup() -> None:
    bare, cold = startup()
    print(f"import sympy (fresh process)                 {bare * 1000:8.1f} ms CPU")
    print(f"cold derive roofline.critical_intensity     {cold * 1000:8.1f} ms CPU  {cold / bare:5.2f}x import sympy")


def main() -> None:
    if sys.argv[1:] == ["startup"]:
        print_startup()
        return
    if sys.argv[1:] == ["cold"]:
        print_cold_generate()
        return
    if sys.argv[1:] == ["instructions"]:
        print_cold_instructions()
        return
    if sys.argv[1:] == ["plan"]:
        print_plan()
        return
    help_cpu = child_cpu(EXE + ["--help"])
    rows = [("scalemath --help (fresh process)", help_cpu)]
    rows.append(("cold derive roofline.critical_intensity --chip tpu-v5e",
                 child_cpu(EXE + ["derive", "roofline.critical_intensity", "--chip", "tpu-v5e", "--format", "json"])))
    rows.append(("cold serve --model llama3-70b --chip tpu-v5e --dtype int8",
                 child_cpu(EXE + ["serve", "--model", "llama3-70b", "--chip", "tpu-v5e", "--dtype", "int8"], 3)))
    rows.append(("slowest hostile command (of 6) refused, whole process",
                 max(child_cpu(EXE + cmd, 3) for cmd in HOSTILE_COMMANDS)))
    rows.append(("slowest hostile expression (of 13) refused, in process", hostile_worst_case()))
    for label, topics in (("roofline + tpu", ("roofline", "tpu")), ("all topics", None)):
        generated, rendered = problems_per_cpu_second(topics=topics)
        rows.append((f"one {label} problem drawn + solved + checked", 1 / generated))
        rows.append((f"one {label} problem drawn + checked + rendered (md+json)", 1 / rendered))
    rates = search_rates()
    rows.append(("plan search (--mfu 0.4), per million candidates, in process", rates["vectorized"] * 1e6))
    for label, cpu in rows:
        print(f"{label:62} {cpu * 1000:9.2f} ms CPU  {cpu / help_cpu:8.3f} x --help")
    per = rates["vectorized"]
    print(f"search (--mfu 0.4): {1 / per:,.0f} candidates per CPU second; per candidate {per * 1e9:.0f} ns vectorized, "
          f"{rates['loop'] * 1e6:.1f} us in a Python loop over the same compiled forms ({rates['loop'] / per:,.0f}x), "
          f"{rates['exact'] * 1e3:.1f} ms exact ({rates['exact'] / per:,.0f}x), Calculon "
          f"{CALCULON_SECONDS_PER_CONFIGURATION * 1e3:.1f} ms ({CALCULON_SECONDS_PER_CONFIGURATION / per:,.0f}x)")
    print_plan(help_cpu)
    print_startup()
    print_cold_generate()


if __name__ == "__main__":
    main()
