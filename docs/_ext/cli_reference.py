"""The command reference's help texts read as plain text, as ``--help`` prints them.

``sphinx_click`` hands each command's and option's help to reST, where a lone ``*`` starts emphasis:
``--expr '2*B*D*F/C'`` would come out in italics and ``4*2^20`` would stop the build with a warning. This
escapes every ``*`` and backquote that sphinx_click did not write itself (its ``**Required**`` stays bold).
"""

from __future__ import annotations

import re

__all__ = ["setup", "plain"]

_LONE_STAR = re.compile(r"(?<!\*)\*(?!\*)")


def plain(line: str) -> str:
    """``line`` with lone stars and backquotes escaped; the lines sphinx_click writes itself (directives such
    as ``.. option::`` and fields such as ``:default: ``'hbm'````) are left alone."""
    if line.lstrip().startswith((".. ", ":")):
        return line
    return _LONE_STAR.sub(r"\\*", line).replace("`", r"\`")


def _escape(app, ctx, lines: list[str]) -> None:
    lines[:] = [plain(line) for line in lines]


def setup(app):
    app.setup_extension("sphinx_click")
    for event in ("description", "options", "arguments", "epilog"):
        app.connect(f"sphinx-click-process-{event}", _escape)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
