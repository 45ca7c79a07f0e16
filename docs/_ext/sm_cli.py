"""Run ``scalemath`` commands in the Sphinx process, as a user would type them.

The generated references (quantities, generators) call the command itself through click's test runner,
so what the pages show is exactly what the command prints. Results live in memory for one build only;
nothing is written to disk.
"""

from __future__ import annotations

import functools
import json
import shlex

from sphinx.errors import ExtensionError

__all__ = ["run", "run_ok", "quantities", "command_line"]


def run(args: list[str]) -> tuple[int, str]:
    """(exit code, everything printed) of ``scalemath ARGS``; an internal error stops the build."""
    from click.testing import CliRunner

    from scalemath.cli import main

    result = CliRunner().invoke(main, list(args), prog_name="scalemath")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise ExtensionError(f"scalemath {command_line(args)} raised {result.exception!r}") from result.exception
    return result.exit_code, result.output


def run_ok(args: list[str]) -> str:
    """What ``scalemath ARGS`` prints; a non-zero exit code stops the build with the command's message."""
    code, output = run(args)
    if code != 0:
        raise ExtensionError(f"scalemath {command_line(args)} exited {code}: {output.strip()}")
    return output


@functools.cache
def quantities() -> tuple[dict, ...]:
    """Every registered quantity as ``scalemath quantities --format json`` lists it, in registry order."""
    return tuple(json.loads(run_ok(["quantities", "--format", "json"])))


def command_line(args: list[str]) -> str:
    """``args`` quoted as a shell would need them (``shlex.join``)."""
    return shlex.join(args)
