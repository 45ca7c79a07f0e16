"""Hostile input through the real command line: every input channel against every class of bad input.

The promise: bad input gets one clear line on stderr that starts with ``error:`` (click's own usage
errors, ``Usage: ... Error: ...`` with exit 2, are accepted too; a notation error of ``shard`` is a few
lines by design: the pattern, a caret under the fault and a hint) and exit code 1 or 2. Never a Python
traceback, never ``internal error`` (the catch-all for our own bugs), never a hang, and nothing typed is
ever run as Python: the injection payloads would create a file named CANARY in the working folder.

Every row runs the command in its own empty folder and only its CPU time is bounded (generously: wall
time depends on the machine's load). Most rows call the click command in-process through CliRunner (the
exit code, stdout and stderr are the same as the real command's, an exception that escapes becomes the
traceback the real command would print, and a watchdog on the main thread's CPU clock stops a runaway
computation); the rows in ``PROCESS_ROWS`` run ``python -m scalemath`` in a subprocess, where the process
boundary is what matters:
a fresh interpreter's integer-printing limit and recursion depth, a 20000-name argv, a hang in C code
that only a timeout stops, and one row of each class on the main channels. Some hostile-looking inputs
are legitimately accepted (``--set D=10**30`` is a number); those rows say so and check the output.

The hypothesis property at the end throws random argv at every command in-process, and the last
tests keep the output byte-identical across hash seeds and locales.
"""

from __future__ import annotations

import _thread
import contextlib
import faulthandler
import json
import logging
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CPU_SECONDS = 20.0  # per row: the child's user + sys, or in-process the main thread's; a runaway exceeds it
MAX_LINE = 1000  # characters in one line of an error message (a 100 kB input must not come back whole)
TIMEOUT = 60  # wall seconds of a subprocess row
HANG = 120  # wall seconds after which an in-process row that the CPU watchdog cannot stop (C code) ends the session

# -- the hostile classes -----------------------------------------------------------------------------

INJECT = {
    "inject-import": "__import__('os').system('touch CANARY')",
    "inject-open": "open('CANARY','w')",
    "inject-lambda": "lambda: 0",
    "inject-class": "().__class__",
}
HUGE = {
    "float-overflow": "1e999999999",
    "float-overflow-5000": "1e5000",
    "huge-literal": "9" * 5000,
}
TOWER = {
    "tower": "9**9**9**9",
    "tower-paren": "(2**4096)**4096",
    "tower-caret": "2^3^4^5",
}
FRACTIONAL = {
    "frac-power": "12**(-1/7777777)",
    "deep-root": "2**(1/4096)",
}
BASES = {"hex": "0x10", "octal": "0o7", "binary": "0b1"}
NESTING = {"deep-nesting": "(" * 1000 + "1" + ")" * 1000}
UNICODE = {"unicode-fullwidth": "１２", "unicode-arabic": "٣"}
SPECIAL = {"nan": "nan", "inf": "inf", "negative": "-1", "zero": "0", "underflow": "1e-9999"}
ABSURD = {"absurd-10e30": "10**30", "long-100k": "x" * 100_000}
# click strips CSI sequences (ESC [ ... m) from output that is not a terminal, but not OSC (ESC ] ... BEL): the
# window-title sequence shows an escape that would reach a terminal
ESCAPE = "\x1b]0;pwned\x07\x1b[2J"
WHITESPACE = {"newline": "1\n2", "empty": "", "blank": " ", "escape": ESCAPE}

NUMBER_CLASSES = {**INJECT, **HUGE, **TOWER, **FRACTIONAL, **BASES, **NESTING, **UNICODE, **SPECIAL, **ABSURD,
                  **WHITESPACE}
# the classes every numeric channel gets; the parsers behind the channels are shared, so the full
# list runs on a few channels (check ANSWER, --set of derive, --expr, --equals) and this one elsewhere
CORE = {k: NUMBER_CLASSES[k] for k in ("inject-import", "inject-open", "float-overflow", "huge-literal", "tower",
                                       "frac-power", "hex", "deep-nesting", "unicode-fullwidth", "nan", "negative",
                                       "zero", "underflow", "absurd-10e30", "long-100k", "empty")}
SMALL = {k: NUMBER_CLASSES[k] for k in ("inject-import", "huge-literal", "tower", "hex", "unicode-arabic", "negative",
                                        "zero", "long-100k", "empty")}
NAME_CLASSES = {**INJECT, "hex": "0x10", **UNICODE, "nan": "nan", "negative": "-1", "zero": "0",
                "long-100k": "x" * 100_000, "newline": "a\nb", "empty": "", "blank": " ", "escape": ESCAPE,
                "path": "../../etc/passwd", "shell": "$(touch CANARY)", "format": "%s%n{0}"}

NAME_SMALL = {k: NAME_CLASSES[k] for k in ("inject-import", "inject-lambda", "unicode-fullwidth", "long-100k", "newline",
                                           "empty", "escape", "path")}

# -- rows ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One command line and what must happen.

    ``expect``: "error" (exit 1 or 2 and one error line), "notation" (exit 2 and shard's caret
    display), "ok" (exit 0 and output containing ``contains``), "verdict" (check ran and said
    right or wrong: exit 0 or 1, stdout starts with ``contains``).
    """

    id: str
    args: tuple[str, ...]
    expect: str = "error"
    contains: str = ""
    marks: tuple = field(default=())

    def param(self):
        return pytest.param(self, id=self.id, marks=list(self.marks))


def rows_for(channel: str, build, classes: dict[str, str], expect: dict[str, tuple[str, str]] | None = None,
             skip: tuple[str, ...] = ()) -> list[Row]:
    """A row per hostile class for one channel; ``build(value)`` is the argv, ``expect`` overrides."""
    expect = expect or {}
    out = []
    for name, value in classes.items():
        if name in skip:
            continue
        kind, contains = expect.get(name, ("error", ""))
        out.append(Row(f"{channel}-{name}", tuple(build(value)), kind, contains))
    return out


ROWS: list[Row] = []

BIG3 = "B=1e2000,D=1e2000,F=1e2000"

# positional ANSWER of check: numbers with units
ROWS += rows_for(
    "check-answer", lambda v: ["check", "roofline.critical_intensity", "--chip", "h100", "--", v],
    NUMBER_CLASSES,
    expect={"zero": ("verdict", "wrong:"), "negative": ("verdict", "wrong:"), "absurd-10e30": ("verdict", "wrong:")})
ROWS += [
    Row("check-answer-unit-overflow", ("check", "transfer.time", "--chip", "tpu-v5e", "--set", "bytes=1e9,links=1",
                                       "1e999999999 ms")),
    Row("check-answer-unit-wrong-kind", ("check", "transfer.time", "--chip", "tpu-v5e", "--set", "bytes=1e9,links=1",
                                         "1.22 GB")),
    Row("check-answer-unit-long", ("check", "transfer.time", "--chip", "tpu-v5e", "--set", "bytes=1e9,links=1",
                                   "1 " + "m" * 5000)),
    Row("check-answer-unit-fullwidth", ("check", "transfer.time", "--chip", "tpu-v5e", "--set", "bytes=1e9,links=1",
                                        "1 ｍｓ")),
    Row("check-answer-unit-right", ("check", "transfer.time", "--chip", "tpu-v5e", "--set", "bytes=1e9,links=1",
                                    "1.22 ms"), "verdict", "right:"),
    Row("check-answer-newline-unit", ("check", "transfer.time", "--chip", "tpu-v5e", "--set", "bytes=1e9,links=1",
                                      "1.22\nms"), "verdict", "right: 1.22 ms matches"),
    Row("check-answer-tiny", ("check", "roofline.critical_intensity", "--chip", "h100", "1e-2000"), "verdict", "wrong:"),
    Row("check-answer-option-like", ("check", "roofline.critical_intensity", "--chip", "h100", "-1")),
]

# positional QUANTITY of check (and derive)
ROWS += rows_for("check-quantity", lambda v: ["check", v, "--chip", "h100", "1"], NAME_CLASSES,
                 skip=("negative",))
ROWS += [Row("check-quantity-option-like", ("check", "-1", "--chip", "h100", "1")),
         Row("derive-quantity-long-100k", ("derive", "q" * 100_000)),
         Row("derive-quantity-prefix", ("derive", "roofline."))]

# --set on derive, solve, check, table
SET_ACCEPTED = {"absurd-10e30": ("ok", "D = 1000000000000000000000000000000")}
ROWS += rows_for("set-derive", lambda v: ["derive", "matmul.t_math", "--chip", "h100", "--set", f"B=1,F=1,D={v}"],
                 NUMBER_CLASSES, expect=SET_ACCEPTED)
ROWS += rows_for("set-solve", lambda v: ["solve", "matmul.t_math", "--for", "B", "--against", "matmul.t_comms",
                                         "--chip", "h100", "--set", f"D=8192,F={v}"],
                 CORE, expect={"absurd-10e30": ("ok", "F = 1000000000000000000000000000000")})
ROWS += rows_for("set-check", lambda v: ["check", "matmul.t_math", "--chip", "h100", "--set", f"B=1,D=1,F={v}", "1"],
                 CORE, expect={"absurd-10e30": ("verdict", "wrong:")})
ROWS += rows_for("set-table", lambda v: ["table", "matmul.t_math", "--chip", "h100,tpu-v5e",
                                         "--set", f"B=1,D=1,F={v}"],
                 CORE, expect={"absurd-10e30": ("ok", "| chip |")})
ROWS += [
    Row("set-derive-tiny", ("derive", "matmul.t_math", "--chip", "h100", "--set", "B=1,F=1,D=1e-2000"), "ok", "result:"),
    Row("set-derive-rate-underflow", ("derive", "roofline.critical_intensity", "--set", "C=1e-9999,W=1")),
    Row("set-derive-no-name", ("derive", "matmul.t_math", "--set", "=1")),
    Row("set-derive-double-equals", ("derive", "matmul.t_math", "--set", "B==1")),
    Row("set-derive-twice", ("derive", "matmul.t_math", "--set", "B=1,B=" + "9" * 400)),
    Row("set-derive-long-name", ("derive", "matmul.t_math", "--set", "B" * 100_000 + "=1")),
    Row("set-derive-many-names", ("derive", "matmul.t_math", "--set", ",".join(f"S{i}=1" for i in range(5000)))),
    Row("set-derive-dunder", ("derive", "matmul.t_math", "--set", "__class__=1")),
    Row("set-derive-semicolon", ("derive", "matmul.t_math", "--set", "B=1;D=2")),
    Row("set-derive-lambda-colon", ("derive", "matmul.t_math", "--set", "B=lambda: 0")),
    Row("set-solve-tiny", ("solve", "matmul.t_math", "--for", "B", "--against", "matmul.t_comms", "--chip", "h100",
                           "--set", "D=8192,F=1e-2000")),
    Row("set-table-negative-one-chip", ("table", "matmul.t_math", "--set", "B=1,D=1,F=-1")),
    # three 2000-digit values multiply to a 6000-digit result: Python refuses to print more than 4300 digits
    Row("set-derive-product-6000-digits", ("derive", "matmul.t_math", "--chip", "h100", "--set", BIG3), "ok", "2.02e5985 s"),
    Row("set-derive-product-json", ("derive", "matmul.flops", "--set", BIG3, "--format", "json"), "ok", '"exact": "2000'),
    Row("set-derive-product-latex", ("derive", "matmul.flops", "--set", BIG3, "--format", "latex"), "ok", "10^{6000}"),
    Row("set-derive-product-python", ("derive", "matmul.flops", "--set", BIG3, "--format", "python"), "ok", "return"),
    Row("set-check-product", ("check", "matmul.flops", "--set", BIG3, "1"), "verdict", "wrong: 1 is 1 FLOP; expected 2e6000"),
    Row("set-solve-product", ("solve", "matmul.t_math", "--for", "C", "--equals", "1", "--set", BIG3), "ok", "2e5982"),
    Row("set-shard-product", ("shard", "A[I,J]@B[J,K]->C[I,K]", "--mesh", "X=1", "--set", "I=1e2000,J=1e2000,K=1e2000",
                              "--format", "json"), "ok", '"flops_exact": "2000'),
    # a form with a parameter as an exponent, (1 - k/E)**B: exactly, B = 10**30 has 10**30 digits
    Row("set-derive-exponent-param", ("derive", "inference.moe.experts_touched", "--model", "deepseek-v3", "--set",
                                      "B=10**30")),
    Row("set-derive-exponent-param-100000", ("derive", "inference.moe.experts_touched", "--model", "deepseek-v3", "--set",
                                             "B=100000")),
    Row("set-derive-exponent-param-fits", ("derive", "inference.moe.experts_touched", "--model", "deepseek-v3", "--set",
                                           "B=1000"), "ok", "result: 256 expert"),
    Row("set-check-exponent-param", ("check", "inference.moe.experts_touched", "--model", "deepseek-v3", "--set",
                                     "B=10**30", "256")),
    Row("set-table-exponent-param", ("table", "inference.moe.experts_touched", "--model", "deepseek-v3", "--set",
                                     "B=10**30")),
    Row("set-solve-exponent-param", ("solve", "inference.moe.experts_touched", "--model", "deepseek-v3", "--for", "k",
                                     "--equals", "100", "--set", "B=10**30")),
    Row("set-derive-exponent-param-gpu", ("derive", "gpu.all_to_all.ragged_time_exact", "--chip", "h100", "--set",
                                          "k_top=10**9")),
]

# --expr of check: a closed form compared with the engine's
EXPR_ACCEPTED = {"zero": ("verdict", "read as:"), "negative": ("verdict", "read as:"),
                 "absurd-10e30": ("verdict", "read as:")}
ROWS += rows_for("expr", lambda v: ["check", "matmul.t_math", "--expr", v], NUMBER_CLASSES, expect=EXPR_ACCEPTED)
ROWS += [
    Row("expr-deep-root-symbol", ("check", "matmul.t_math", "--expr", "B**(1/4096)")),
    Row("expr-symbolic-exponent", ("check", "matmul.t_math", "--expr", "2**B")),
    Row("expr-high-power", ("check", "matmul.t_math", "--expr", "(B+D+F+C)**64"), "verdict", "read as:"),
    Row("expr-tiny", ("check", "matmul.t_math", "--expr", "1e-2000"), "verdict", "read as:"),
    Row("expr-division-by-zero", ("check", "matmul.t_math", "--expr", "B/0")),
    Row("expr-sympy-name", ("check", "matmul.t_math", "--expr", "zoo")),
    Row("expr-floor-div", ("check", "matmul.t_math", "--expr", "B//2")),
    # powers of powers: each exponent is within 4096, the degree 4096**2 (the random points had 10**8 digits: a hang)
    Row("expr-degree-tower", ("check", "matmul.t_math", "--expr", "((B+1)**4096+1)**4096")),
    Row("expr-degree-product", ("check", "matmul.t_math", "--expr", "B**4096*C**4096")),
    Row("expr-degree-4096", ("check", "matmul.t_math", "--expr", "(B+1)**4096"), "verdict", "read as:"),
    # a typed power of a 2000-digit value: 8 million digits (the counterexample took minutes to print: a hang)
    Row("expr-huge-value-power", ("check", "matmul.t_math", "--set", "D=1e2000", "--expr", "(D+1)**4096")),
    Row("expr-large-value-power", ("check", "matmul.t_math", "--set", "D=1e20", "--expr", "(D+1)**4096"), "verdict",
        "read as:"),
]

# --equals and --for of solve
SOLVE = ["solve", "matmul.t_math", "--chip", "h100", "--set", "D=8192,F=8192"]
ROWS += rows_for("equals", lambda v: SOLVE + ["--for", "B", "--equals", v], NUMBER_CLASSES,
                 expect={"absurd-10e30": ("ok", "result:")})
ROWS += [
    Row("equals-deep-root-symbol", tuple(SOLVE + ["--for", "B", "--equals", "B**(1/4096)"])),
    Row("equals-slow-solve", tuple(SOLVE + ["--for", "B", "--equals", "(B+1)**4096"])),
    Row("equals-root-64", ("solve", "matmul.t_math", "--for", "B", "--equals", "B**(1/64)")),
    Row("equals-floor", tuple(SOLVE + ["--for", "B", "--equals", "floor(B)"])),
    Row("equals-tiny", tuple(SOLVE + ["--for", "B", "--equals", "1e-2000"]), "ok", "result:"),
    Row("equals-degree-tower", tuple(SOLVE + ["--for", "B", "--equals", "((C+1)**4096+1)**4096"])),
    # D**4096 at D = 1e2000: 8 million digits (16 s of CPU before, then a refusal to print)
    Row("equals-huge-value-power", ("solve", "matmul.t_math", "--for", "B", "--equals", "D**4096", "--chip", "h100",
                                    "--set", "D=1e2000,F=7")),
]
ROWS += rows_for("for", lambda v: SOLVE + ["--equals", "1", "--for", v],
                 {**NAME_CLASSES, "power": "B**2", "attribute": "B.real", "lowercase": "b"}, skip=("negative",))
ROWS += [Row("for-option-like", tuple(SOLVE + ["--equals", "1", "--for", "-1"]))]

# --chip, --dtype, --level, --model
ROWS += rows_for("chip", lambda v: ["derive", "roofline.critical_intensity", "--chip", v], NAME_CLASSES,
                 skip=("negative",))
ROWS += [
    Row("chip-commas-only", ("derive", "roofline.critical_intensity", "--chip", ",,,")),
    Row("chip-list-20000", ("derive", "roofline.critical_intensity", "--chip", ",".join(f"{i:x}" for i in range(20000)))),
    Row("chip-list-20000-same", ("derive", "roofline.critical_intensity", "--chip", ",".join(["h100"] * 20000)),
        "ok", "(chip h100"),
    Row("chip-list-65", ("derive", "roofline.critical_intensity", "--chip", ",".join(["h100", "a100", "b200"] * 22))
        , "ok", "(chip b200"),
    Row("chip-upper-case", ("derive", "roofline.critical_intensity", "--chip", "H100"), "ok", "295.5 FLOP/byte"),
    Row("chip-empty-table", ("table", "roofline.critical_intensity", "--chip", "")),
    Row("chip-empty-shard", ("shard", "A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4", "--chip", "")),
    Row("chip-empty-plan", ("plan", "--model", "llama3-70b", "--chip", "", "--chips", "8960", "--batch-tokens", "4M")),
    Row("chip-empty-serve", ("serve", "--model", "llama3-70b", "--chip", "")),
]
ROWS += rows_for("dtype", lambda v: ["derive", "roofline.critical_intensity", "--chip", "h100", "--dtype", v],
                 {**NAME_SMALL, "upper-case": "BF16", "trailing-space": "bf16 "})
ROWS += rows_for("level", lambda v: ["derive", "roofline.critical_intensity", "--chip", "h100", "--level", v],
                 {**NAME_SMALL, "upper-case": "HBM"})
ROWS += rows_for("model", lambda v: ["derive", "transformer.params", "--model", v],
                 {**NAME_CLASSES, "prefix": "llama3", "trailing-space": "llama3-70b ",
                  "list": ",".join(["llama3-70b"] * 5000)}, skip=("negative",))
ROWS += [Row("model-upper-case", ("derive", "transformer.params", "--model", "LLAMA3-70B"), "ok", "result:"),
         Row("model-and-config", ("derive", "transformer.params", "--model", "llama3-70b", "--model-config", "x.json"))]

# shard: the pattern and --mesh
PATTERN = "A[I, J_X] @ B[J, K] -> C[I, K]"
SHARD_PATTERNS = {
    **INJECT, "hex": "0x10", "nan": "nan", "empty": "", "blank": " ", "long-100k": "x" * 100_000,
    "deep-nesting": "[" * 1000, "unicode-fullwidth": "A[１, J] @ B[J, K] -> C[I, K]",
    "unicode-arabic": "A[I, J_٣] @ B[J, K] -> C[I, K]", "escape": PATTERN + ESCAPE,
    "escape-inside": "A[\x1b]0;x\x07I, J] @ B[J, K] -> C[I, K]", "bidi": "A[I, J] @ B[J, K] -> C[I, \u202eK]", "newline-fault": "A[I, J_X]\n@ B[J, K] -> C[I, Q]",
    "tab": "A[I\tJ] @ B[J, K] -> C[I, K]", "long-axes": "A[I_" + "X" * 900 + ", J] @ B[J, K] -> C[I, K]",
    "axis-list": "A[I_{" + ",".join(["X"] * 300) + "}, J] @ B[J, K] -> C[I, K]",
    "many-dims": "A[" + ",".join(f"D{i}" for i in range(300)) + "] @ B[D0, K] -> C[K]",
    "axis-twice": "A[I_X, J_X] @ B[J, K] -> C[I, K]", "two-arrows": "A[I, J]@B[J, K]->C[I, K]->D[I]",
    "wide-then-fault": "A[I, J] · B[J, K] → C[I, Ｋ]",
}
ROWS += rows_for("shard-pattern", lambda v: ["shard", v, "--mesh", "X=4,Y=2"], SHARD_PATTERNS,
                 expect={k: ("notation", "") for k in SHARD_PATTERNS})
ROWS += [
    Row("shard-pattern-newline-accepted", ("shard", "A[I, J_X]\n@ B[J, K] -> C[I, K]", "--mesh", "X=4"), "ok", "case 2"),
    Row("shard-pattern-unicode-operators", ("shard", "A[I, J] · B[J, K] → C[I, K]", "--mesh", "X=4"), "ok", "case 1"),
]
SHARD_MESHES = {
    **INJECT, "empty": "", "blank": " ", "long-100k": "x" * 100_000, "zero": "X=0", "negative": "X=-1",
    "float": "X=1e9", "too-many-digits": "X=9999999", "huge-literal": "X=" + "9" * 5000,
    "unicode-fullwidth": "X=９", "unicode-arabic": "X=٣", "hex": "X=0x10", "nan": "X=nan", "inf": "X=inf",
    "absurd-10e30": "X=10**30", "twice": "X=4,X=2", "escape": "X=4" + ESCAPE,
    "many-axes": ",".join(f"A{i}=2" for i in range(5000)),
}
ROWS += rows_for("shard-mesh", lambda v: ["shard", PATTERN, "--mesh", v], SHARD_MESHES,
                 expect={k: ("notation", "") for k in SHARD_MESHES})
ROWS += [
    Row("shard-mesh-newline-accepted", ("shard", PATTERN, "--mesh", "X=4,\nY=2"), "ok", "mesh X=4, Y=2"),
    Row("shard-mesh-largest", ("shard", PATTERN, "--mesh", "X=999999,Y=999999,Z=999999"), "ok", "case 2"),
    Row("shard-set-huge", ("shard", PATTERN, "--mesh", "X=4", "--chip", "tpu-v5p", "--set",
                           "I=2**4096,J=2**4096,K=2**4096"), "ok", "compute-bound"),
    Row("shard-set-zero", ("shard", PATTERN, "--mesh", "X=4", "--set", "I=0")),
    Row("shard-set-fraction", ("shard", PATTERN, "--mesh", "X=4", "--set", "I=1/2")),
    Row("shard-set-uneven", ("shard", PATTERN, "--mesh", "X=4", "--set", "J=3")),
    Row("shard-set-unknown", ("shard", PATTERN, "--mesh", "X=4", "--set", "Q=4")),
    Row("shard-set-inject", ("shard", PATTERN, "--mesh", "X=4", "--set", "I=" + INJECT["inject-import"])),
]

# plan: --chips, --batch-tokens, --tokens, --mfu
PLAN = {"--chips": "8960", "--batch-tokens": "4Mi", "--tokens": "15T", "--mfu": "0.4"}


def plan_args(option: str, value: str) -> list[str]:
    values = dict(PLAN, **{option: value})
    return ["plan", "--model", "llama3-70b", "--chip", "tpu-v5p"] + [x for kv in values.items() for x in kv]


PLAN_NUMBERS = {**CORE, "huge-count": "1e18+1", "fraction": "1/3", "suffix-lower": "4m", "suffix-only": "M",
                "power-60": "2**60"}
for option in PLAN:
    accepted = {"fraction": ("ok", "best:")} if option == "--mfu" else {}
    classes = PLAN_NUMBERS if option == "--chips" else {**SMALL, "fraction": "1/3", "power-60": "2**60"}
    ROWS += rows_for(f"plan-{option.strip('-')}", lambda v, o=option: plan_args(o, v), classes, expect=accepted)
ROWS += [
    Row("plan-chips-suffix", tuple(plan_args("--chips", "8Ki")), "ok", "8192 x tpu-v5p"),
    Row("plan-batch-tokens-suffix-binary", tuple(plan_args("--batch-tokens", "4Mi")), "ok", "batch 4194304 tokens"),
    # more chips than the batch has sequences: the search uses the chips the batch can keep busy
    Row("plan-chips-more-than-tokens", tuple(plan_args("--chips", "1e18")), "ok", "best:"),
    # 4M tokens are not a whole number of 4096-token sequences: rounded to the nearest and said
    Row("plan-batch-not-whole-sequences", tuple(plan_args("--batch-tokens", "4M")), "ok", "rounded to the nearest"),
]

# serve: --batch, --context, --prompt, --chips, --topology, --mfu
SERVE = ["serve", "--model", "llama3-70b", "--chip", "tpu-v5e"]
SERVE_WHOLE = {**CORE, "underscore": "1_000", "plus": "+8", "decimal": "1.5", "exponent": "1e3",
               "too-large": "1000000001", "twenty-digits": "9" * 20}
for option in ("--batch", "--context", "--prompt", "--chips"):  # one parameter type: the full list on --batch
    classes = SERVE_WHOLE if option == "--batch" else {**SMALL, "decimal": "1.5", "too-large": "9" * 20}
    ROWS += rows_for(f"serve-{option.strip('-')}", lambda v, o=option: SERVE + [o, v], classes)
ROWS += rows_for("serve-topology", lambda v: SERVE + ["--topology", v],
                 {**NAME_CLASSES, "zero-shape": "0x0", "five-dims": "4x4x4x4x4", "absurd-shape": "4096x4096x4096x4096",
                  "huge-side": "99999x99999", "spaces": "4 x 4", "fullwidth-shape": "１２x４", "trailing-x": "4x"})
ROWS += rows_for("serve-mfu", lambda v: SERVE + ["--mfu", v], {**CORE, "above-one": "1.0000001"})
ROWS += [
    Row("serve-mfu-fraction", tuple(SERVE + ["--mfu", "1/3"]), "ok", "decode step"),
    # a GPU count spans nodes over the scale-out network; a TPU's --chips must be a slice of one pod
    Row("serve-chips-largest", ("serve", "--model", "llama3-8b", "--chip", "h100", "--chips", "10000000"), "ok",
        "decode step"),
    Row("serve-chips-beyond-pod", ("serve", "--model", "llama3-8b", "--chip", "tpu-v5e", "--chips", "10000000")),
    Row("serve-topology-and-chips", tuple(SERVE + ["--topology", "4x4", "--chips", "16"])),
    Row("serve-topology-too-small", tuple(SERVE + ["--topology", "1x1"])),
    Row("serve-context-too-long", ("serve", "--model", "llama3-405b", "--chip", "tpu-v5e", "--batch", "1000000000",
                                   "--context", "1000000000")),
]
# serve's search options: --max-latency (a time with its unit), --generate, comma lists of dtypes
ROWS += rows_for("serve-max-latency", lambda v: SERVE + ["--max-latency", v], {**CORE, "no-unit": "20"})
ROWS += rows_for("serve-max-latency-ms", lambda v: SERVE + ["--max-latency", f"{v}ms"],
                 {k: CORE[k] for k in ("inject-import", "float-overflow", "tower", "frac-power", "hex", "nan",
                                       "negative", "zero", "underflow", "unicode-fullwidth")})
ROWS += rows_for("serve-generate", lambda v: SERVE + ["--generate", v], {**SMALL, "decimal": "1.5"})
ROWS += rows_for("serve-dtype-list", lambda v: SERVE + ["--dtype", v],
                 {**NAME_SMALL, "unknown": "bf16,bf17", "trailing-comma": "bf16,", "long-list": ",".join(["bf16"] * 500),
                  "empty": ""})
ROWS += rows_for("serve-kv-dtype-list", lambda v: SERVE + ["--kv-dtype", v], {**NAME_SMALL, "unknown": "int3"})
ROWS += [
    Row("serve-max-latency-huge", tuple(SERVE + ["--max-latency", "2**60 s"]), "ok", "decode step"),
    Row("serve-max-latency-unreachable", tuple(SERVE + ["--max-latency", "1ns"])),
    Row("serve-max-latency-bytes", tuple(SERVE + ["--max-latency", "20 GB"])),
    Row("serve-dtype-list-ok", tuple(SERVE + ["--dtype", "bf16, int8", "--kv-dtype", "int8"]), "ok", "decode step"),
    Row("serve-cost-without-price", ("serve", "--model", "llama3-8b", "--chip", "tpu-v6e", "--objective", "cost")),
]

# problems generate: --n, --seed, --topic, --format, --out
GEN = {"--topic": "roofline", "--n": "2", "--format": "json", "--out": "set"}


def gen_args(option: str, value: str) -> list[str]:
    values = dict(GEN, **{option: value})
    return ["problems", "generate"] + [x for kv in values.items() for x in kv]


ROWS += rows_for("generate-n", lambda v: gen_args("--n", v),
                 {**INJECT, **HUGE, "hex": "0x10", **UNICODE, "nan": "nan", "inf": "inf", "negative": "-1", "zero": "0",
                  "absurd-10e30": "10**30", "long-100k": "x" * 100_000, "empty": "", "blank": " ", "too-many": "1001"})
ROWS += rows_for("generate-seed", lambda v: gen_args("--seed", v),
                 {**INJECT, **HUGE, "hex": "0x10", **UNICODE, "nan": "nan", "negative": "-1", "absurd-10e30": "10**30",
                  "long-100k": "x" * 100_000, "empty": "", "blank": " ", "above-2-63": "9223372036854775808"})
ROWS += [Row("generate-seed-largest", tuple(gen_args("--seed", "9223372036854775807")), "ok", "wrote 2 problems"),
         Row("generate-seed-17-digits", tuple(gen_args("--seed", "12345678901234567")), "ok", "wrote 2 problems")]
ROWS += rows_for("generate-topic", lambda v: gen_args("--topic", v),
                 {**NAME_SMALL, "upper-case": "ROOFLINE", "comma-list": "roofline,tpu", "commas-only": ",,",
                  "trailing-comma": "roofline,"},
                 expect={"comma-list": ("ok", "wrote 2 problems")})  # a comma list is two topics
ROWS += rows_for("generate-format", lambda v: gen_args("--format", v),
                 {**INJECT, "long-100k": "x" * 100_000, "empty": "", "blank": " ", "commas-only": ",,,",
                  "upper-case": "JSON", "path": "md,../x", "long-list": "tex,html,json,md" * 1000,
                  "escape": ESCAPE})
ROWS += [Row("generate-format-duplicate", tuple(gen_args("--format", "json,json")), "ok", "manifest.json")]
ROWS += rows_for("generate-out", lambda v: gen_args("--out", v),
                 {"empty": "", "current": ".", "parent": "..", "root": "/", "existing": "/etc", "device": "/dev/null",
                  "long-100k": "x" * 100_000, "long-name": "x" * 300, "deep": "a/" * 2000,
                  "long-path": "/".join(["b" * 250] * 17), "newline": "set\nx",
                  "escape": "set" + ESCAPE, "bidi": "set\u202ex"})
ROWS += rows_for("generate-out-accepted", lambda v: gen_args("--out", v),
                 {**INJECT, "shell": "$(touch CANARY)", "tilde": "~", "dash": "-"},
                 expect={k: ("ok", "wrote 2 problems") for k in list(INJECT) + ["shell", "tilde", "dash"]})


def _ids_unique(rows):
    ids = [r.id for r in rows]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, dupes
    return rows


ROWS = _ids_unique(ROWS)

# rows that run the real CLI in a subprocess (the others run in-process, see the module's docstring)
PROCESS_ROWS = {
    "check-answer-inject-import", "set-derive-inject-open", "expr-inject-import", "equals-inject-import",
    "check-answer-tower", "check-answer-huge-literal", "check-answer-deep-nesting", "check-answer-long-100k",
    "check-answer-escape", "check-answer-option-like", "check-quantity-shell",
    "set-derive-product-6000-digits", "set-check-product", "set-derive-exponent-param", "expr-degree-tower",
    "expr-huge-value-power", "equals-huge-value-power", "equals-slow-solve", "chip-list-20000",
    "chip-list-20000-same", "set-derive-many-names", "shard-pattern-deep-nesting", "shard-pattern-escape",
    "shard-mesh-many-axes", "plan-chips-inject-import", "serve-batch-tower", "generate-out-device",
    "generate-out-accepted-shell", "generate-format-escape",
    # simplify of a high power runs until the time limit's SIGALRM stops it: in-process, after hundreds of rows
    # have filled SymPy's caches, that can take longer than the row's CPU budget; the real command starts fresh
    "expr-degree-4096", "expr-high-power", "expr-degree-product", "expr-large-value-power",
}
assert PROCESS_ROWS <= {r.id for r in ROWS}, sorted(PROCESS_ROWS - {r.id for r in ROWS})


# -- running a row ---------------------------------------------------------------------------------

class Runaway(BaseException):
    """Raised by the CPU watchdog inside a command that ran too long (not an Exception: no handler catches it)."""


class _ToStderr(logging.Handler):
    """What the real command's last-resort log handler does: warnings to the stderr of the moment."""

    def emit(self, record):
        sys.stderr.write(self.format(record) + "\n")


@contextlib.contextmanager
def _cpu_limit(seconds: float):
    """Raise ``Runaway`` in the main thread once it has used ``seconds`` of CPU; yields a function that
    returns the CPU seconds it used.

    The main thread's own clock, read by a watchdog thread: a process-wide CPU timer (``ITIMER_PROF``)
    also counts the threads that earlier tests left behind (XLA's thread pools), which on a machine with
    many cores run that clock many times faster than the command's own work. The watchdog interrupts
    through ``_thread.interrupt_main``, which does nothing once the handler is restored: no signal can
    arrive late and kill the test run.
    """
    main = threading.main_thread()
    assert threading.current_thread() is main, "the in-process rows run in the main thread"
    clock = time.pthread_getcpuclockid(main.ident)
    start = time.clock_gettime(clock)
    done = threading.Event()

    def watch():
        while not done.wait(0.05):
            if time.clock_gettime(clock) - start > seconds:
                _thread.interrupt_main(signal.SIGUSR1)
                return

    def runaway(signum, frame):
        raise Runaway(f"more than {seconds} s of CPU")

    previous = signal.signal(signal.SIGUSR1, runaway)
    watchdog = threading.Thread(target=watch, name="cpu-limit", daemon=True)
    watchdog.start()
    try:
        yield lambda: time.clock_gettime(clock) - start
    finally:
        done.set()
        watchdog.join()
        signal.signal(signal.SIGUSR1, previous)


def run_cli(args, cwd: Path, process: bool = False):
    """The CLI on ``args`` in ``cwd``: (returncode, stdout, stderr, CPU seconds). In-process through click's
    CliRunner, or with ``process`` the real ``python -m scalemath`` in a subprocess."""
    if process:
        return run_process(args, cwd)
    from click.testing import CliRunner

    from scalemath.cli import main

    debug = os.environ.pop("SCALEMATH_DEBUG", None)
    log, handler = logging.getLogger("scalemath"), _ToStderr(logging.WARNING)
    log.addHandler(handler)
    faulthandler.dump_traceback_later(HANG, exit=True)
    try:
        with contextlib.chdir(cwd), _cpu_limit(CPU_SECONDS) as used:
            result = CliRunner().invoke(main, list(args), prog_name="scalemath")
    finally:
        faulthandler.cancel_dump_traceback_later()
        log.removeHandler(handler)
        if debug is not None:
            os.environ["SCALEMATH_DEBUG"] = debug
    cpu = used()
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # the real command would die with this traceback
        err += "Traceback (most recent call last):\n" + "".join(traceback.format_exception(*result.exc_info))
    return result.exit_code, result.stdout, err, cpu


def run_process(args, cwd: Path):
    """The real CLI in a subprocess: (returncode, stdout, stderr, CPU seconds of the child)."""
    env = {k: v for k, v in os.environ.items() if k != "SCALEMATH_DEBUG"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "scalemath", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=TIMEOUT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    decode = lambda b: b.decode("utf-8", errors="replace")  # noqa: E731
    return proc.returncode, decode(proc.stdout), decode(proc.stderr), cpu


def error_lines(stderr: str) -> list[str]:
    """The lines of the error message: ours (``error: ...``) or click's (``Usage: ...`` then ``Error: ...``)."""
    lines = stderr.rstrip("\n").split("\n")
    if lines and lines[0].startswith("Usage:"):  # click: usage, a hint to try --help, a blank line, the error
        assert len(lines) >= 4 and lines[1].startswith("Try ") and lines[2] == "", stderr[:500]
        return lines[3:]
    return lines


def check_common(code, out, err, cpu, cwd: Path):
    both = out + err
    assert "Traceback" not in both, err[-2000:]
    assert "internal error" not in both, err[-2000:]
    assert not (cwd / "CANARY").exists(), "typed input was run as Python"
    assert "\x1b" not in both and "\x07" not in both, "a terminal escape sequence went out unescaped"
    assert "\u202e" not in both, "a right-to-left override went out unescaped"
    assert cpu < CPU_SECONDS, f"{cpu:.1f} s of CPU"


def check_row(row: Row, code, out, err):
    if row.expect == "error":
        assert code in (1, 2), (code, out[:500], err[:500])
        lines = error_lines(err)
        assert len(lines) == 1, f"expected one error line, got {len(lines)}: {err[:1000]!r}"
        assert lines[0].startswith(("error: ", "Error: ")), err[:500]
        assert len(lines[0]) <= MAX_LINE, f"error line of {len(lines[0])} characters: {lines[0][:300]}..."
        assert not out.strip() or code == 1, out[:500]
    elif row.expect == "notation":
        assert code == 2, (code, out[:500], err[:500])
        lines = err.rstrip("\n").split("\n")
        assert lines[0].startswith("error: ") and 3 <= len(lines) <= 4, err[:2000]
        assert set(lines[2].strip()) == {"^"}, f"no caret line: {err[:2000]!r}"
        assert len(lines) == 3 or lines[3].startswith("hint: "), err[:2000]
        assert all(len(line) <= MAX_LINE for line in lines), [len(line) for line in lines]
    elif row.expect == "ok":
        assert code == 0, (code, err[-2000:])
        assert out.strip() and row.contains in out, out[:2000]
        assert "error" not in err.lower(), err[:2000]
    elif row.expect == "verdict":
        assert code in (0, 1), (code, err[-2000:])
        assert out.startswith(row.contains), out[:2000]
        assert not err.strip(), err[:2000]
    else:  # pragma: no cover
        raise AssertionError(row.expect)


@pytest.mark.parametrize("row", [r.param() for r in ROWS])
def test_hostile_input(row: Row, tmp_path):
    code, out, err, cpu = run_cli(row.args, tmp_path, process=row.id in PROCESS_ROWS)
    check_common(code, out, err, cpu, tmp_path)
    check_row(row, code, out, err)


# -- problems grade: a hostile answer is graded unreadable, the others are still graded ------------------

GRADE_STRINGS = {**{k: v for k, v in NUMBER_CLASSES.items() if k not in ("zero", "negative", "absurd-10e30")},
                 "unit-unknown": "1 parsec", "unit-wrong-kind": "1 ms", "unit-chain": "1 FLOP/s/s/s/s",
                 "symbol": "B"}
GRADE_READABLE = {"zero": "0", "negative": "-1", "absurd-10e30": "10**30", "tiny": "1e-2000", "tiny-power": "2**-4096",
                  "nested-30": "(" * 30 + "7" + ")" * 30}  # numbers far from every expected answer: wrong
GRADE_RAW = {  # JSON that is not a string: a list or an object is unreadable; what JSON cannot hold refuses the file
    "raw-list": ("[1, 2]", "unreadable"), "raw-object": ('{"a": 1}', "unreadable"), "raw-bool": ("true", "unreadable"),
    "raw-underflow": ("1e-400", "wrong"), "raw-negative-zero": ("-0.0", "wrong"),
    "raw-overflow": ("1e999", "file"), "raw-nan": ("NaN", "file"), "raw-infinity": ("-Infinity", "file"),
    "raw-huge-int": ("9" * 5000, "file"), "raw-deep": ("[" * 10000 + "]" * 10000, "file"),
}


@pytest.fixture(scope="module")
def answer_key(tmp_path_factory):
    """A small generated set: its manifest path and the right answer to every question."""
    folder = tmp_path_factory.mktemp("gradeset")
    code, out, err, _ = run_cli(["problems", "generate", "--topic", "roofline", "--n", "3", "--seed", "1",
                                 "--format", "json", "--out", "set"], folder)
    assert code == 0, err
    manifest = folder / "set" / "manifest.json"
    key = json.loads(manifest.read_text())
    right = {p["id"]: {a["name"]: a["choices"][int(a["exact"])] if a.get("kind") == "choice" else a["exact"]
                       for a in p["answers"]} for p in key["problems"]}  # a choice is answered by its text
    return manifest, right


# graded by the real CLI in a subprocess (the others in-process): the JSON reader's nesting limit depends on the
# interpreter's stack, and one row of each kind
GRADE_PROCESS = {"inject-import", "huge-literal", "tower", "escape", "raw-deep", "raw-huge-int"}


def _grade(answers_text: str, answer_key, tmp_path, process: bool = False):
    manifest, right = answer_key
    (tmp_path / "answers.json").write_text(answers_text)
    code, out, err, cpu = run_cli(["problems", "grade", "answers.json", "--key", str(manifest), "--format", "json"],
                                  tmp_path, process)
    check_common(code, out, err, cpu, tmp_path)
    return code, out, err


def _answers_with(answer_key, placeholder: str) -> tuple[str, tuple[str, str]]:
    """The right answers as JSON text, with the first problem's first answer replaced by ``placeholder``."""
    _, right = answer_key
    answers = json.loads(json.dumps(right))
    problem = next(iter(answers))
    name = next(iter(answers[problem]))
    answers[problem][name] = "@@HOSTILE@@"
    return json.dumps(answers, ensure_ascii=False).replace('"@@HOSTILE@@"', placeholder), (problem, name)


def _check_graded(code, out, err, hostile: tuple[str, str], verdict: str):
    assert code == 1, (code, err[-2000:])
    assert not err.strip(), err[:2000]
    graded = {(a["problem"], a["answer"]): a for a in json.loads(out)["answers"]}
    assert graded[hostile]["verdict"] == verdict, graded[hostile]
    if verdict == "unreadable":
        assert graded[hostile]["diagnosis"] and len(graded[hostile]["diagnosis"]) <= MAX_LINE
    assert all(a["verdict"] == "right" for key, a in graded.items() if key != hostile), graded


@pytest.mark.parametrize("value,process",
                         [pytest.param(v, k in GRADE_PROCESS, id=f"grade-{k}") for k, v in GRADE_STRINGS.items()]
                         + [pytest.param(v, False, id=f"grade-readable-{k}") for k, v in GRADE_READABLE.items()])
def test_grade_hostile_answer(value, process, answer_key, tmp_path):
    text, hostile = _answers_with(answer_key, json.dumps(value))
    code, out, err = _grade(text, answer_key, tmp_path, process)
    _check_graded(code, out, err, hostile, "wrong" if value in GRADE_READABLE.values() else "unreadable")


@pytest.mark.parametrize("raw,verdict,process",
                         [pytest.param(*v, k in GRADE_PROCESS, id=f"grade-{k}") for k, v in GRADE_RAW.items()])
def test_grade_hostile_json(raw, verdict, process, answer_key, tmp_path):
    text, hostile = _answers_with(answer_key, raw)
    code, out, err = _grade(text, answer_key, tmp_path, process)
    if verdict == "file":  # not a number JSON can hold (or nested past the reader's limit): the file is refused
        assert code == 2 and not out.strip(), (code, out[:500])
        lines = error_lines(err)
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) <= MAX_LINE, err[:1000]
    else:
        _check_graded(code, out, err, hostile, verdict)


def test_grade_text_echoes_no_escape(answer_key, tmp_path):
    """The text report echoes a wrong or unreadable answer: control characters become '?'."""
    manifest, _ = answer_key
    text, hostile = _answers_with(answer_key, json.dumps("1 " + ESCAPE + " \u202egnp.exe"))
    (tmp_path / "answers.json").write_text(text)
    code, out, err, cpu = run_cli(["problems", "grade", "answers.json", "--key", str(manifest)], tmp_path, process=True)
    check_common(code, out, err, cpu, tmp_path)
    assert code == 1 and f"unreadable {hostile[0]} {hostile[1]}" in out, out


# -- random argv through every command, in-process ----------------------------------------------------

import click  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import scalemath  # noqa: E402
from scalemath.cli import DTYPES, LEVELS, main  # noqa: E402
from scalemath.cli.common import WholeNumber  # noqa: E402


def _commands(group: click.Group = main, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and subcommand of the CLI, read from click (a command added later is covered too); a group
    that runs on its own (``plot --list``) counts as a command as well."""
    ctx = click.Context(group)
    out = [path] if path and group.invoke_without_command else []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        out += _commands(command, path + (name,)) if isinstance(command, click.Group) else [path + (name,)]
    return out


def _command(path: tuple[str, ...]) -> click.Command:
    command = main
    for name in path:
        command = command.get_command(click.Context(command), name)
    return command


COMMANDS = _commands()


def _options_of(path: tuple[str, ...]) -> dict[str, click.Parameter]:
    """The long options the command at ``path`` takes (read from click, so new options are covered too)."""
    return {o: p for p in _command(path).params if isinstance(p, click.Option) for o in p.opts if o.startswith("--")}


# every command's options: a stray option of another command now and then
OPTIONS = sorted({o for path in COMMANDS for o in _options_of(path)} | {"--help", "--"})
QUANTITY_NAMES = ["roofline.critical_intensity", "roofline.t_math", "matmul.t_math", "matmul.t_comms",
                  "matmul.critical_batch", "matmul.intensity_approx", "transfer.time", "dot.flops", "torus.max_hops_wraparound",
                  "collective.all_gather.time", "gpu.all_gather.time", "transformer.params", "parallel.training_time",
                  "inference.kv_cache.bytes_per_token", "inference.decode.step_time", "pod.hosts", "no.such",
                  "dot.intensity_limit", "transformer.optimizer_bytes"]
CHIP_NAMES = ["tpu-v5e", "tpu-v5p", "tpu-v3", "h100", "b200", "v100", "gb200", "h100,tpu-v5e", "tpu-v6", "tpu7x"]
MODEL_NAMES = ["llama3-70b", "llama2-7b", "gpt3-175b", "mixtral-8x7b", "deepseek-v3", "book-part7", "llama"]
PLAIN = ["8192", "0", "-1", "1", "2", "4M", "15T", "0.4", "1/3", "4x4", "8", "X=4,Y=2", "X=4", "D=8192,F=32768", "B=1",
         "bytes=1e9,links=1", "I=8192,J=8192,K=32768", "B", "D", "2*B*D*F/C", "B*D*F/C", "240", "1.2 ms", "320 KiB",
         "A[I, J_X] @ B[J, K] -> C[I, K]", "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "json", "text", "latex", "markdown",
         "python", "roofline", "tpu", "inference", "answers.json", "1Mi", "20ms", "16x16", "2x2x1", "b_opt=0",
         "matmul B=512 D=8192 F=32768", "dp,fsdp", "bf16,int8", "all-gather", "moodle", "qti", "canvas",
         "prairielearn", "f.svg", "f.png", "f.pdf", "f.txt", "C=max(2, 3),W=1", "sqrt(2)", "B=sqrt(2)", "2,3"]
HOSTILE = ["1e5000", "nan", "inf", "1e-2000", "10**30", "(2**4096)**4096", "B**(1/4096)", "9**9**9**9", "0x10", "１２",
           "٣", "", " ", "\n", "lambda: 0", "__import__('os')", "(" * 50 + "1" + ")" * 50, "x" * 600, ESCAPE,
           "((B+1)**64+1)**64", "1e2000", "sqrt(-1)", "max(sqrt(-1))", "C=min(sqrt(-1))", "sqrt(B-D)", "2**63",
           "9223372036854775808", "32x32", "16x17", "4x4x4x4", "1_0", "+3", "2,٣", "../x.svg", "1e300", "1e-300",
           "1e-40", "M_X=1e-300", "matmul B=1e300 D=8192 F=8192", "matmul B=1e-300 D=1 F=1"]
PLAUSIBLE = st.one_of(st.sampled_from(QUANTITY_NAMES), st.sampled_from(CHIP_NAMES), st.sampled_from(MODEL_NAMES),
                      st.sampled_from(DTYPES + LEVELS), st.sampled_from(PLAIN))
RANDOM = st.one_of(st.sampled_from(HOSTILE),
                   st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20),
                   st.integers(-10**20, 10**20).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr))
VALUE = st.one_of(PLAUSIBLE, PLAUSIBLE, RANDOM)
TOKEN = st.one_of(st.sampled_from(OPTIONS), VALUE)
PACKAGE = Path(scalemath.__file__).resolve().parent
# a real HLO module (package data) for hlo and profile to read, wherever the package keeps it
HLO_FILE = str(next(PACKAGE.rglob("case2-gather-A-x4y2.hlo.txt")))
# files an input option may name (@NAME@: made by the fuzz_files fixture), and names an output may take (relative:
# each example runs in a folder of its own, so nothing outside it is written)
INPUTS = [HLO_FILE, "@MANIFEST@", "@ANSWERS@", "@HARDWARE_OK@", "@HARDWARE_BIG@", "@HARDWARE_TORUS@", "@CONFIG_OK@",
          "@CONFIG_TINY@", "no-such-file", "."]
OUTPUTS = ["f.svg", "f.png", "f.pdf", "f.txt", "out", "set", "set.xml", "set.zip", "sub/f.svg", "../f.svg", ""]
# a command line that works, so that random options reach past the first check; @NAME@ is a file of the
# fuzz_files fixture
SKELETONS = {
    ("derive",): [["roofline.critical_intensity", "--chip", "h100"], ["matmul.t_math"],
                  ["transformer.params", "--model", "llama3-8b"]],
    ("solve",): [["matmul.t_math", "--for", "B", "--against", "matmul.t_comms", "--chip", "tpu-v5e"],
                 ["matmul.t_math", "--for", "B", "--equals", "1"]],
    ("check",): [["roofline.critical_intensity", "--chip", "h100", "295"], ["matmul.t_math", "--expr", "2*B*D*F/C"]],
    ("compare",): [["roofline.critical_intensity", "--chip", "h100", "--vs", "tpu-v5e"]],
    ("table",): [["roofline.critical_intensity"], ["matmul.t_math", "--set", "B=1,D=8192,F=8192"]],
    ("shard",): [["A[I, J_X] @ B[J, K] -> C[I, K]", "--mesh", "X=4"],
                 ["A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "--mesh", "X=2,Y=2", "--chip", "h100", "--set",
                  "I=64,J=64,K=64"]],
    ("plan",): [["--model", "llama3-8b", "--chip", "tpu-v5p", "--chips", "64", "--batch-tokens", "1Mi"],
                ["--model", "mixtral-8x7b", "--chip", "h100", "--chips", "64", "--batch-tokens", "1Mi"]],
    ("serve",): [["--model", "llama3-8b", "--chip", "tpu-v5e"], ["--model", "llama2-7b", "--chip", "h100", "--chips", "2"]],
    ("hlo",): [[HLO_FILE], [HLO_FILE, "--chip", "tpu-v5e", "--mesh", "X=4,Y=2"]],
    ("profile",): [["no-such-profile", "--chip", "tpu-v5e", "--hlo", HLO_FILE, "--mesh", "X=4,Y=2"]],
    ("hardware", "show"): [["tpu-v5e"], ["h100"]],
    ("models", "show"): [["llama3-8b"]],
    ("problems", "grade"): [["@ANSWERS@", "--key", "@MANIFEST@"]],
    ("problems", "export"): [["@MANIFEST@", "--format", "moodle", "--out", "set.xml"]],
    ("plot",): [["--list"], ["--book-figure", "roofline", "--out", "f.svg"]],
    ("plot", "roofline"): [["--chip", "h100", "--out", "f.svg"],
                           ["--chip", "h100,tpu-v5e", "--op", "matmul B=512 D=8192 F=32768", "--out", "f.png"]],
    ("plot", "training"): [["--chip", "tpu-v5p", "--chips", "64", "--model", "llama3-8b", "--out", "f.svg"]],
    ("plot", "decode"): [["--chip", "tpu-v5e", "--chips", "8", "--model", "llama3-8b", "--out", "f.svg"]],
    ("plot", "collective"): [["--chip", "tpu-v5e", "--out", "f.svg"], ["--chip", "h100", "--out", "f.svg"]],
    ("plot", "sharp"): [["--chip", "h100", "--out", "f.svg"]],
    ("plot", "ragged"): [["--chip", "h100", "--out", "f.svg"]],
    ("plot", "sharded"): [["--chip", "h100", "--out", "f.svg"]],
    ("plot", "serving"): [["--chip", "tpu-v5e", "--chips", "8", "--model", "llama3-8b", "--out", "f.svg"]],
    ("plot", "speculative"): [["--out", "f.svg"]],
    ("plot", "pareto"): [["--chip", "tpu-v5e", "--model", "llama3-8b", "--out", "f.svg"]],
    ("plot", "plan"): [["--chip", "tpu-v5p", "--model", "llama3-8b", "--chips", "64", "--batch-tokens", "1Mi",
                        "--out", "f.svg"]],
}
assert set(SKELETONS) <= set(COMMANDS), sorted(set(SKELETONS) - set(COMMANDS))
SMALL_SET = ["--n", "1", "--format", "json"]  # generate writes one problem, not the default 44
# examples of the property: the default keeps it near half a minute; raise it for a long hunt, e.g.
# SCALEMATH_FUZZ_EXAMPLES=20000 python3 -m pytest tests/test_hostile.py -k random_argv
FUZZ_EXAMPLES = int(os.environ.get("SCALEMATH_FUZZ_EXAMPLES", "400"))


@pytest.fixture(scope="module")
def fuzz_files(tmp_path_factory) -> dict[str, str]:
    """Files the random command lines name: a set's manifest and answers, and hostile catalog and config files."""
    folder = tmp_path_factory.mktemp("fuzz")
    code, _, err, _ = run_cli(["problems", "generate", "--topic", "roofline", "--n", "2", "--seed", "1",
                               "--format", "json", "--out", "set"], folder)
    assert code == 0, err
    manifest = folder / "set" / "manifest.json"
    problem = json.loads(manifest.read_text())["problems"][0]
    (folder / "answers.json").write_text(json.dumps({problem["id"]: {problem["answers"][0]["name"]: "1"}}))
    chip = ('[chips.mine]\nname = "Mine"\nfamily = "tpu"\nsource = "x"\nflops_per_s = { bf16 = 197000000000000 }\n'
            'hbm_bytes = 16000000000\nhbm_bytes_per_s = 820000000000\nici_link_bytes_per_s = 45000000000\n'
            'ici_links = 4\npod_shape = [16, 16]\nwraparound = "size16"\n')
    (folder / "big.toml").write_text(chip.replace("hbm_bytes = 16000000000", f"hbm_bytes = {2**64}"))
    (folder / "torus.toml").write_text(chip + "torus_dims = 3\n")
    config = {"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 1,
              "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": 16, "max_position_embeddings": 8}
    (folder / "tiny.json").write_text(json.dumps(config))
    return {"@MANIFEST@": str(manifest), "@ANSWERS@": str(folder / "answers.json"),
            "@HARDWARE_OK@": str(next(PACKAGE.rglob("hardware.toml"))),
            "@HARDWARE_BIG@": str(folder / "big.toml"), "@HARDWARE_TORUS@": str(folder / "torus.toml"),
            "@CONFIG_OK@": str(Path(__file__).resolve().parent / "configs" / "llama3.1-8b.json"),
            "@CONFIG_TINY@": str(folder / "tiny.json")}


def _value_for(name: str, param: click.Parameter) -> st.SearchStrategy[str]:
    """Four times in five a value of the option's own kind (one of its choices, a whole number in its range,
    a file for an input, a name for an output, a plausible word), else any value."""
    kind = param.type
    if getattr(kind, "choices", None):
        own = st.sampled_from(list(kind.choices))
    elif isinstance(kind, WholeNumber):
        top = min(kind.maximum, kind.minimum + 4096)
        own = st.one_of(st.integers(kind.minimum, top).map(str),
                        st.sampled_from([str(kind.maximum), str(kind.maximum + 1), str(kind.minimum - 1)]))
    elif isinstance(kind, click.types.IntParamType):
        own = st.integers(-2, 4096).map(str)
    elif isinstance(kind, click.Path):
        own = st.sampled_from(OUTPUTS if name in ("--out", "--plot") else INPUTS)
    else:
        own = PLAUSIBLE
    return st.integers(0, 4).flatmap(lambda i: own if i else VALUE)


@st.composite
def argvs(draw):
    """A command, mostly a working command line for it, then options with values (mostly its own options,
    mostly plausible values: a choice of a Choice, a catalog name, a number; sometimes hostile ones) and now
    and then a stray token or an option of another command (few enough that most lines reach the command's
    own checks and many run to the end)."""
    path = draw(st.sampled_from(COMMANDS))
    command = list(path)
    skeletons = SKELETONS.get(path, [])
    rest = list(draw(st.sampled_from(skeletons))) if skeletons and draw(st.integers(0, 4)) else []
    own = _options_of(path)
    for _ in range(draw(st.integers(0, 3))):
        if own and draw(st.integers(0, 19)):
            name = draw(st.sampled_from(sorted(own)))
            param = own[name]
            if getattr(param, "is_flag", False):
                rest.append(name)
                continue
            value = draw(_value_for(name, param))
        else:
            name, value = draw(st.sampled_from(OPTIONS)), draw(VALUE)
        rest += [name, value]
    if draw(st.integers(0, 11)) == 0:
        rest.append(draw(TOKEN))
    if command == ["problems", "generate"]:
        rest = [t for t in rest if t not in ("--n", "--format", "--help")] + SMALL_SET
    return command + rest


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(argv=argvs())
def test_random_argv_never_crashes(argv, fuzz_files):
    argv = [fuzz_files.get(a, a) for a in argv]
    # an empty working folder for each example
    with tempfile.TemporaryDirectory() as tmp:
        code, out, err, cpu = run_cli(argv, Path(tmp))
        check_common(code, out, err, cpu, Path(tmp))
    assert code in (0, 1, 2), (argv, code, err[-1000:])


# -- output stays the same under another hash seed or locale --------------------------------------------

DETERMINISTIC = {
    "derive-json": ["derive", "roofline.critical_intensity", "--chip", "tpu-v5e", "--format", "json"],
    "derive-chips": ["derive", "matmul.t_math", "--chip", "h100,tpu-v5e", "--set", "B=256,D=8192,F=32768"],
    "solve-crossover": ["solve", "matmul.t_math", "--for", "B", "--against", "matmul.t_comms", "--chip", "tpu-v5e,h100",
                        "--set", "D=8192,F=32768"],
    "check-value": ["check", "roofline.critical_intensity", "--chip", "h100", "590"],
    "check-unit-micro": ["check", "transfer.time", "--chip", "tpu-v5e", "--set", "bytes=1e9,links=1", "1220 µs"],
    "check-expr": ["check", "matmul.t_math", "--expr", "B*D*F/C"],
    "check-expr-counterexample": ["check", "matmul.t_math", "--expr", "max(B, D)"],
    "error-known-names": ["derive", "matmul.t_math", "--set", "Q=1"],
}
ENVIRONMENTS = [{"PYTHONHASHSEED": "0", "LC_ALL": "C"}, {"PYTHONHASHSEED": "1", "LC_ALL": "C"},
                {"PYTHONHASHSEED": "1", "LC_ALL": "C.UTF-8"}]


@pytest.mark.parametrize("args", [pytest.param(v, id=k) for k, v in DETERMINISTIC.items()])
def test_output_is_byte_identical_across_hash_seeds_and_locales(args, tmp_path):
    base = {k: v for k, v in os.environ.items() if k not in ("SCALEMATH_DEBUG", "LANG", "LC_CTYPE", "PYTHONIOENCODING")}
    outputs = set()
    for env in ENVIRONMENTS:
        proc = subprocess.run([sys.executable, "-m", "scalemath", *args], cwd=tmp_path, env={**base, **env},
                              capture_output=True, timeout=TIMEOUT)
        outputs.add((proc.returncode, proc.stdout, proc.stderr))
    assert len(outputs) == 1, sorted(outputs)
    code, out, err = outputs.pop()
    assert code in (0, 1, 2) and b"Traceback" not in err and (out or err)
