"""The ``console`` blocks of the manual highlighted with ``$ `` as the only prompt.

Pygments' shell-session lexer also takes a line starting with ``%`` or ``#`` for a prompt, so the comment
line that ``derive --format latex`` prints was read as a command and its apostrophe as an unclosed string.
Here only ``$ `` starts a command, exactly as the tests read the blocks; every other line is output.
"""

from __future__ import annotations

import re

from pygments.lexers.shell import BashSessionLexer

__all__ = ["setup", "ScalemathConsoleLexer"]


class ScalemathConsoleLexer(BashSessionLexer):
    name = "scalemath console session"
    aliases = []
    filenames = []
    _ps1rgx = re.compile(r"^(\$ )(.*\n?)")
    _venv = re.compile(r"(?!)")  # a line never starts with a virtualenv's name here


def setup(app):
    app.add_lexer("console", ScalemathConsoleLexer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
