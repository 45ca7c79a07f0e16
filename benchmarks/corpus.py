"""A reference corpus of everything scalemath writes, to prove a refactoring changed no byte of it.

    python3 benchmarks/corpus.py make OUT [--checkout DIR]   # run every command of CASES into OUT
    python3 benchmarks/corpus.py compare A B                 # every file of A and B, byte for byte

``make`` runs ``python -m scalemath`` from ``--checkout`` (default: this checkout) with the cache off, in a fresh
folder: problem sets in every format but PDF (pdflatex stamps dates), with variants and a roster; every LMS export;
the blank sheet graded; plots in SVG, PNG and PDF; and each command's text and JSON output, kept as
``NN-<slug>.out`` with its exit code. Make it at a commit before a change and after it, then ``compare``.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

#: Commands, as typed after ``scalemath``; ``{hlo}`` is the HLO example of the docs.
CASES = [
    "derive roofline.critical_intensity --chip tpu-v5e --dtype bf16",
    "derive roofline.critical_intensity --chip tpu-v5e,h100,b200 --format json",
    "derive matmul.critical_batch --chip h100 --set D=8192,F=32768 --format latex",
    "derive matmul.t_math --format python --chip tpu-v5e --set B=512,D=8192,F=32768",
    "derive transformer.params --model llama3-70b",
    "derive collective.all_gather.time",
    "solve matmul.t_math --for B --against matmul.t_comms --chip tpu-v5e,h100,b200 --set D=8192,F=32768",
    "solve matmul.intensity_approx --for B --against roofline.critical_intensity --chip tpu-v5e --format json",
    "check roofline.critical_intensity --chip h100 --dtype bf16 590",
    "check transfer.time --chip tpu-v5e --set bytes=1e9,links=1 '1.22 ms'",
    "check matmul.t_math --expr 'B*D*F/C'",
    "compare gpu.all_gather.time --chip b200 --vs h100 --set V=1e9,N=8",
    "table roofline.critical_intensity",
    "table roofline.critical_intensity --format latex",
    "shard 'A[I, J_X] @ B[J_X, K] -> C[I, K]' --mesh X=16 --chip tpu-v5e",
    "shard 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]' --mesh X=4,Y=2 --chip h100 --format json",
    "hlo {hlo} --chip tpu-v5e",
    "hlo {hlo} --chip tpu-v5e --format json",
    "plan --model llama3-70b --chip h100 --chips 64 --batch-tokens 4Mi --seq-len 8192 --tokens 15T",
    "plan --model llama3-70b --chip tpu-v5p --chips 512 --batch-tokens 4Mi --seq-len 8192 --format json",
    "plan --model llama3-405b --chip h100 --chips 16384 --batch-tokens 16Mi --seq-len 8192 --tp 8 --pp 16 --dp 128",
    "serve --model llama3-70b --chip h100 --max-latency 30ms",
    "serve --model llama3-70b --chip tpu-v5e --dtype bf16,int8 --max-latency 50ms --format json",
    "quantities",
    "hardware list",
    "hardware show h100",
    "models list",
    "problems list",
    "plot --list",
    "problems generate --seed 3 --n 12 --variants 3 --format md,tex,html,json --out sets/variants",
    "problems generate --seed 1 --format md,tex,html,json --out sets/full",
    "problems generate --seed 2 --topic roofline --students roster.csv --title 'Week 3' --format md,html,json "
    "--out sets/roster",
    "problems export sets/full/manifest.json --format moodle --out exports/quiz.xml",
    "problems export sets/full/manifest.json --format qti --out exports/qti.zip",
    "problems export sets/variants/manifest.json --format canvas --out exports/canvas.zip",
    "problems export sets/variants/manifest.json --format prairielearn --out exports/pl",
    "problems grade sets/full/answers.json",
    "problems grade sets/variants/sheets --key sets/variants/manifest.json --format json",
    "plot roofline --chip h100,tpu-v5e --op 'matmul B=512 D=8192 F=32768' --out plots/roofline.svg",
    "plot roofline --chip h100 --out plots/roofline.png",
    "plot --book-figure roofline --chip h100 --out plots/book-roofline.pdf",
    "plot collective --chip tpu-v5e --out plots/collective.svg",
    "plot decode --model llama3-70b --chip tpu-v5e --chips 16 --out plots/decode.svg",
    "plot pareto --model llama3-70b --chip h100 --out plots/pareto.svg",
    "plot plan --model llama3-70b --chip h100 --chips 64 --batch-tokens 4Mi --seq-len 8192 --out plots/plan.svg",
]

ROSTER = "id,name\ns001,Ada Lovelace\ns002,Zoë O'Brien\n"


def _slug(command: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", command.lower())[:60].strip("-")


def make(out: Path, checkout: Path) -> int:
    out.mkdir(parents=True)
    (out / "roster.csv").write_text(ROSTER, encoding="utf-8")
    env = dict(os.environ, SCALEMATH_CACHE_DIR="off", PYTHONPATH=str(checkout), COLUMNS="100", PYTHONHASHSEED="0")
    hlo = checkout / "docs" / "examples" / "ffw.hlo"
    failed = 0
    for i, case in enumerate(CASES):
        argv = shlex.split(case.format(hlo=hlo))
        run = subprocess.run([sys.executable, "-m", "scalemath", *argv], cwd=out, env=env, capture_output=True,
                             text=True, timeout=900)
        text = f"$ scalemath {case}\nexit {run.returncode}\n--- stdout\n{run.stdout}--- stderr\n{run.stderr}"
        (out / f"{i:02d}-{_slug(case)}.out").write_text(text.replace(str(checkout), "<checkout>"), encoding="utf-8")
        if run.returncode not in (0, 1):
            failed += 1
            print(f"exit {run.returncode}: scalemath {case}\n{run.stderr}", file=sys.stderr)
    files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"{len(CASES)} commands, {files} files in {out}; {failed} exited 2 or worse")
    return 1 if failed else 0


#: What legitimately differs between two runs of the same code: the CPU time plan and serve report taking.
_TIMINGS = [(re.compile(rb"in [0-9.]+ s CPU"), b"in <t> s CPU"), (re.compile(rb'"seconds": [0-9.e-]+'), b'"seconds": <t>')]


def _same(x: Path, y: Path) -> bool:
    if filecmp.cmp(x, y, shallow=False):
        return True
    if x.suffix != ".out":
        return False
    left, right = x.read_bytes(), y.read_bytes()
    for pattern, blank in _TIMINGS:
        left, right = pattern.sub(blank, left), pattern.sub(blank, right)
    return left == right


def compare(a: Path, b: Path) -> int:
    """Every file of ``a`` and ``b`` byte for byte (a command's output with its CPU timings blanked)."""
    names = lambda root: {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}  # noqa: E731
    left, right = names(a), names(b)
    differ = sorted(n for n in left & right if not _same(a / n, b / n))
    for n in sorted(left - right):
        print(f"only in {a}: {n}")
    for n in sorted(right - left):
        print(f"only in {b}: {n}")
    for n in differ:
        print(f"differs: {n}")
    same = len(left & right) - len(differ)
    print(f"{same} of {len(left | right)} files byte-identical")
    return 0 if left == right and not differ else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    m = sub.add_parser("make")
    m.add_argument("out", type=Path)
    m.add_argument("--checkout", type=Path, default=HERE)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.what == "make":
        return make(args.out.resolve(), args.checkout.resolve())
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
