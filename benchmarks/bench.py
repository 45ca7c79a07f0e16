"""Speed of the main paths; prints numbers for the README (never asserted in tests).

    python benchmarks/bench.py

1. problems generated, checked (second route) and rendered to Markdown + JSON per second;
2. wall time of ``scalemath --help`` (a fresh process: start-up cost);
3. wall time of a cold ``scalemath derive`` (a fresh process, SymPy imported);
4. the slowest refusal of a hostile expression (huge powers, deep nesting, 100 kB of digits).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def problems_per_second(n: int = 400, topics=None) -> tuple[float, float]:
    from scalemath.problems import sets

    sets.build_set(topics, n=40, seed=999)  # warm the derivation caches and templates once
    start = time.perf_counter()
    pset = sets.build_set(topics, n=n, seed=1)
    built = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        sets.write_set(pset, Path(tmp) / "set", ("md", "json"))
    done = time.perf_counter()
    return n / (built - start), n / (done - start)


def wall(cmd: list[str], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    exe = [sys.executable, "-m", "scalemath"]
    for label, topics in (("roofline + tpu", ("roofline", "tpu")), ("all topics", None)):
        generated, rendered = problems_per_second(topics=topics)
        print(f"{label:15} problems drawn + solved + checked:              {generated:8.0f} /s")
        print(f"{label:15} problems drawn + checked + rendered (md+json): {rendered:8.0f} /s")
    print(f"scalemath --help (median of 7):                {wall(exe + ['--help']) * 1000:8.0f} ms")
    derive = exe + ["derive", "roofline.critical_intensity", "--chip", "tpu-v5e", "--format", "json"]
    print(f"cold derive (median of 7):                     {wall(derive) * 1000:8.0f} ms")



def hostile_worst_case() -> float:
    """The slowest refusal among hostile inputs (the parser must answer at once)."""
    from scalemath.errors import ExpressionError
    from scalemath.parsing import parse_expression

    texts = ["9**9**9**9", "-(" * 100 + "1" + ")" * 100, "1" * 100000, "1+" * 249 + "1",
             "99999**4000", "(" * 90 + "B" + ")" * 90, "max(" * 39 + "1" + ")" * 39]
    worst = 0.0
    for text in texts:
        start = time.perf_counter()
        try:
            parse_expression(text, {})
        except ExpressionError:
            pass
        worst = max(worst, time.perf_counter() - start)
    return worst


if __name__ == "__main__":
    main()
    print(f"slowest hostile input refused in:              {hostile_worst_case() * 1000:8.2f} ms")
