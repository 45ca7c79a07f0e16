"""Shell completion through click's environment protocol (what the bash, zsh and fish scripts send).

``eval "$(_SCALEMATH_COMPLETE=bash_source scalemath)"`` installs a function that runs
``scalemath`` with ``_SCALEMATH_COMPLETE=bash_complete``, ``COMP_WORDS`` (the line) and ``COMP_CWORD``
(the index of the word being completed) and reads back ``type,value`` lines.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from scalemath.cli import main


def complete(line: str, shell: str = "bash") -> list[str]:
    """The candidates ``scalemath`` offers for the last word of ``line`` (a trailing space: a new word)."""
    words = line.split()
    incomplete = "" if line.endswith(" ") else words[-1]
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {"_SCALEMATH_COMPLETE": f"{shell}_complete", "COMP_WORDS": line,
           "COMP_CWORD": incomplete if shell == "fish" else str(cword)}
    result = CliRunner().invoke(main, [], prog_name="scalemath", env=env)
    assert result.exit_code == 0, result.output
    if shell == "bash":  # type,value: one line per candidate
        return [row.split(",", 1)[1] for row in result.output.splitlines() if row.startswith("plain,")]
    lines = result.output.splitlines()  # zsh (and fish since click 8.4): type, value, help on three lines
    if lines and "," in lines[0]:  # fish before click 8.4: type,value
        return [row.split(",", 1)[1] for row in lines if row.startswith("plain,")]
    return [lines[i + 1] for i in range(0, len(lines), 3) if lines[i] == "plain"]


# The expected candidates are written out by hand: quantity names from the design (DESIGN.md section 3 and
# the book's chapters), chips from the book's hardware tables (TPU v5e and v5p, H100, B200), models from
# their published names.
CASES = [
    ("scalemath derive roofline.cr", ["roofline.critical_intensity"]),
    ("scalemath derive matmul.t_", ["matmul.t_comms", "matmul.t_lower", "matmul.t_math", "matmul.t_upper"]),
    ("scalemath check roofline.critical_", ["roofline.critical_intensity"]),
    ("scalemath table matmul.critical_batch_a", ["matmul.critical_batch_approx"]),
    ("scalemath solve matmul.t_ma", ["matmul.t_math"]),
    ("scalemath solve matmul.t_math --for B --against matmul.t_co", ["matmul.t_comms"]),
    ("scalemath derive roofline.critical_intensity --chip tpu-v5", ["tpu-v5e", "tpu-v5p"]),
    ("scalemath derive roofline.critical_intensity --chip H10", ["h100"]),
    ("scalemath table roofline.critical_intensity --chip h100,b2", ["h100,b200"]),
    ("scalemath plan --chip tpu-v5", ["tpu-v5e", "tpu-v5p"]),
    ("scalemath serve --chip h10", ["h100"]),
    ("scalemath shard A --chip tpu-v5", ["tpu-v5e", "tpu-v5p"]),
    ("scalemath plan --model llama3-", ["llama3-405b", "llama3-70b", "llama3-8b"]),
    ("scalemath serve --model mixtral", ["mixtral-8x22b", "mixtral-8x7b"]),
    ("scalemath derive transformer.params --model llama2-7", ["llama2-70b", "llama2-7b"]),
    ("scalemath problems generate --generator matmul_", ["matmul_bounds", "matmul_critical_batch"]),
    ("scalemath problems generate --generator crit", ["critical_intensity"]),
    ("scalemath problems generate --topic t", ["tpu", "training", "transformer"]),
    ("scalemath problems generate --topic roofline,tr", ["roofline,training", "roofline,transformer"]),
    ("scalemath problems generate --topic Roof", ["roofline"]),
    ("scalemath quantities --topic co", ["collectives"]),
    ("scalemath problems generate --generator nosuch", []),
    ("scalemath derive nosuch.", []),
    ("scalemath derive roofline.critical_intensity --chip nosuch", []),
]


@pytest.mark.parametrize("line, expected", CASES, ids=[c[0].removeprefix("scalemath ") for c in CASES])
def test_bash_completion(line, expected):
    assert complete(line) == expected


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells(shell):
    assert complete("scalemath derive roofline.critical_intensity --chip tpu-v5", shell) == ["tpu-v5e", "tpu-v5p"]


def test_every_quantity_is_offered():
    """An empty word offers every quantity of the registry, sorted; a prefix, exactly those it starts."""
    from scalemath.quantities import QUANTITIES

    assert complete("scalemath derive ") == sorted(QUANTITIES)
    assert complete("scalemath derive collective.") == sorted(n for n in QUANTITIES if n.startswith("collective."))


def test_every_generator_and_topic_is_offered():
    """An empty word after --generator offers every generator of the index, sorted, and after --topic every topic;
    completing them imports no generator module."""
    from scalemath.problems.registry import TOPICS, index

    assert complete("scalemath problems generate --generator ") == sorted(index())
    assert complete("scalemath problems generate --topic ") == sorted(TOPICS)
    assert complete("scalemath problems generate --seed 3 --topic tpu --generator dot") == ["dot_product"]


def test_completing_a_generator_imports_none():
    import subprocess
    import sys

    code = ("import os, sys; from click.testing import CliRunner; from scalemath.cli import main; "
            "env = {'_SCALEMATH_COMPLETE': 'bash_complete', 'COMP_WORDS': 'scalemath problems generate --generator m', "
            "'COMP_CWORD': '4'}; r = CliRunner().invoke(main, [], prog_name='scalemath', env=env); "
            "assert 'plain,matmul_bounds' in r.output, r.output; "
            "loaded = [m for m in sys.modules if m.startswith('scalemath.problems.gen')]; "
            "assert loaded == ['scalemath.problems.generator_index'], loaded")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_hardware_file_is_read(tmp_path):
    """With --hardware-file before --chip, the user's catalog's chips are completed."""
    from pathlib import Path

    import scalemath.catalog.hardware as hardware

    text = Path(hardware.__file__).with_name("hardware.toml").read_text()
    mine = tmp_path / "mine.toml"
    mine.write_text(text.replace("[chips.h100]", "[chips.myh100]", 1).replace("[chips.h100.", "[chips.myh100."))
    assert "[chips.myh100]" in mine.read_text()
    line = f"scalemath derive roofline.critical_intensity --hardware-file {mine} --chip myh"
    assert complete(line) == ["myh100"]


def test_bash_source_is_a_script():
    result = CliRunner().invoke(main, [], prog_name="scalemath", env={"_SCALEMATH_COMPLETE": "bash_source"})
    assert result.exit_code == 0
    assert "_scalemath_completion" in result.output and "complete " in result.output
