"""The ``scalemath`` command: the main group, and the commands of each group added to it.

Each group lives in its own module (engine, catalog, search, problems, xla, plot), imported when one of its
commands is asked for (a command runs with its own module loaded, not all eight); heavy modules (SymPy, the
engine) are imported inside commands so that ``scalemath --help`` stays fast.
"""

from __future__ import annotations

import atexit
import os
import sys

import click

import importlib

from .common import DTYPES, LEVELS, Group

__all__ = ["main", "run", "DTYPES", "LEVELS"]


#: Every command of the main group: its name, and the module of this package and the object that define it.
COMMANDS = {
    "quantities": ("engine", "quantities_cmd"), "hardware": ("catalog", "hardware_group"),
    "models": ("catalog", "models_group"), "conventions": ("catalog", "conventions_cmd"),
    "derive": ("engine", "derive_cmd"), "solve": ("engine", "solve_cmd"), "compare": ("engine", "compare_cmd"),
    "check": ("engine", "check_cmd"), "table": ("engine", "table_cmd"), "shard": ("search", "shard_cmd"),
    "plan": ("search", "plan_cmd"), "serve": ("search", "serve_cmd"), "problems": ("problems", "problems_group"),
    "shardmap": ("shardmap", "shardmap_cmd"), "hlo": ("xla", "hlo_cmd"), "profile": ("xla", "profile_cmd"),
    "plot": ("plot", "plot_group"),
}


class _Main(Group):
    """The main group: its commands are loaded from :data:`COMMANDS` when asked for (click's documented pattern
    for lazily loaded subcommands)."""

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="scalemath")
def main():
    """Exact, checkable arithmetic for scaling ML models (rooflines, TPUs, GPUs).

    \b
    Examples:
      scalemath derive roofline.critical_intensity --chip tpu-v5e --dtype bf16
      scalemath solve matmul.t_math --for B --against matmul.t_comms --chip h100 --set D=8192,F=32768
      scalemath problems generate --seed 1
    """


def run() -> None:
    """The ``scalemath`` command (and ``python -m scalemath``): :data:`main`, then an exit that skips tearing the
    interpreter down.

    When the command is done its output is flushed and the exit handlers run (the standard ones: logging's, the
    worker pools', finalizers of temporary folders), exactly as at a normal exit; what is skipped is freeing every
    object one by one, which for SymPy's caches costs about a tenth of a second of a short command's time. A
    command that fails to flush (a closed pipe) exits as Python would have.
    """
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):  # sys.exit("message") prints it and exits 1
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: let Python's own exit deal with it
        sys.exit(code)
    atexit._run_exitfuncs()
    os._exit(code or 0)
