"""The ``scalemath`` command: the main group, and the commands of each group added to it.

Each group lives in its own module (engine, catalog, search, problems, xla, plot); heavy modules (SymPy, the
engine) are imported inside commands so that ``scalemath --help`` stays fast.
"""

from __future__ import annotations

import atexit
import os
import sys

import click

from .catalog import conventions_cmd, hardware_group, models_group
from .common import DTYPES, LEVELS, Group
from .engine import check_cmd, compare_cmd, derive_cmd, quantities_cmd, solve_cmd, table_cmd
from .plot import plot_group
from .problems import problems_group
from .search import plan_cmd, serve_cmd, shard_cmd
from .xla import hlo_cmd, profile_cmd

__all__ = ["main", "run", "DTYPES", "LEVELS"]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="scalemath")
def main():
    """Exact, checkable arithmetic for scaling ML models (rooflines, TPUs, GPUs).

    \b
    Examples:
      scalemath derive roofline.critical_intensity --chip tpu-v5e --dtype bf16
      scalemath solve matmul.t_math --for B --against matmul.t_comms --chip h100 --set D=8192,F=32768
      scalemath problems generate --seed 1
    """


for _command in (quantities_cmd, hardware_group, models_group, conventions_cmd, derive_cmd, solve_cmd, compare_cmd, check_cmd,
                 table_cmd, shard_cmd, plan_cmd, serve_cmd, problems_group, hlo_cmd, profile_cmd, plot_group):
    main.add_command(_command)


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
