"""Hostile files on every channel a user names one: answers.json, the --key manifest, --hardware-file
and --model-config. Each must give one ``error:`` line naming the file and exit 1 or 2: no
traceback, no hang, no unbounded read."""

import ast
import json
import os
import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

from scalemath.values import printing as formatting
from scalemath.cli import main
from scalemath.errors import BadValueError, CatalogError
from scalemath.catalog.hardware import load_catalog
from scalemath.catalog.models import load_models
from scalemath.catalog.reader import KEY_PATTERN
from scalemath.files import MAX_BYTES, load_json_file, loads_toml, read_user_file

GOOD_CHIP = """\
[chips.x1]
name = "X1"
family = "tpu"
source = "test"
flops_per_s = { bf16 = 100 }
hbm_bytes = 10
hbm_bytes_per_s = 5
"""

GOOD_CONFIG = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 256, "num_attention_heads": 4,
               "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100}


@pytest.fixture(scope="module")
def key_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("set") / "s"
    result = subprocess.run([sys.executable, "-m", "scalemath", "problems", "generate", "--topic", "roofline",
                             "--n", "3", "--seed", "1", "--format", "json", "--out", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return out


def _manifest(key_dir):
    return json.loads((key_dir / "manifest.json").read_text(encoding="utf-8"))


def _right_answers(key_dir):
    """Every answer filled in with the manifest's exact value (text such as '9850/41'); a choice with the text of
    the right one (its exact value is the choice's index, which a student does not type)."""
    def right(a):
        return a["choices"][int(a["exact"])] if a.get("kind") == "choice" else a["exact"]

    return {p["id"]: {a["name"]: right(a) for a in p["answers"]} for p in _manifest(key_dir)["problems"]}


# -- the channels: how a path reaches the CLI, and the exit code a bad file gives ------------------

def _answers_args(path, key_dir, tmp_path):
    return ["problems", "grade", str(path), "--key", str(key_dir / "manifest.json")]


def _manifest_args(path, key_dir, tmp_path):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(_right_answers(key_dir)), encoding="utf-8")
    return ["problems", "grade", str(answers), "--key", str(path)]


def _hardware_args(path, key_dir, tmp_path):
    return ["hardware", "list", "--hardware-file", str(path)]


def _model_args(path, key_dir, tmp_path):
    return ["derive", "transformer.params", "--model-config", str(path)]


CHANNELS = {  # name: (arguments, exit code, file format)
    "answers": (_answers_args, 2, "json"),
    "manifest": (_manifest_args, 2, "json"),
    "hardware-file": (_hardware_args, 1, "toml"),
    "model-config": (_model_args, 1, "json"),
}

# -- the hostile files: (id, content by format or a special kind, channels it applies to) ----------

DEEP_JSON = "[" * 100_000
DEEP_TOML = "a = " + "[" * 100_000
LONG_INT = "9" * 5000
ALL = tuple(CHANNELS)
JSON_CHANNELS = ("answers", "manifest", "model-config")

HOSTILE = [
    ("missing", "@missing", ALL),
    ("directory", "@directory", ALL),
    ("fifo", "@fifo", ALL),
    ("dev-zero", "@dev-zero", ALL),
    ("larger-than-limit", "@sparse", ALL),
    ("invalid-utf8", b"\xff\xfe{\x80}", ALL),
    ("empty-file", {"json": "", "toml": ""}, ALL),
    ("invalid-syntax", {"json": '{"a": 1,', "toml": "[chips.x1\nname = "}, ALL),
    ("deeply-nested", {"json": DEEP_JSON, "toml": DEEP_TOML}, ALL),
    ("deeply-nested-inline-table", {"toml": "a = " + "{b = " * 100_000}, ("hardware-file",)),
    ("5000-digit-integer", {"json": '{"a": ' + LONG_INT + "}", "toml": "a = " + LONG_INT}, ALL),
    ("31-digit-integer", {"toml": GOOD_CHIP.replace("hbm_bytes = 10", "hbm_bytes = " + "1" * 31),
                          "json": json.dumps({**GOOD_CONFIG, "vocab_size": 10**30})},
     ("hardware-file", "model-config")),
    ("nan", {"json": '{"a": NaN}'}, JSON_CHANNELS),
    ("infinity", {"json": '{"a": -Infinity}'}, JSON_CHANNELS),
    ("float-overflow", {"json": '{"a": 1e999}'}, JSON_CHANNELS),
    ("wrong-top-level", {"json": "[1, 2]", "toml": "chips = [1, 2]"}, ALL),
    ("wrong-field-type", {"json": json.dumps({**GOOD_CONFIG, "hidden_size": "64"}),
                          "toml": GOOD_CHIP.replace("hbm_bytes = 10", 'hbm_bytes = "10"')},
     ("hardware-file", "model-config")),
    ("nan-in-toml", {"toml": GOOD_CHIP.replace("hbm_bytes = 10", "hbm_bytes = nan")}, ("hardware-file",)),
    ("bad-chip-key", {"toml": GOOD_CHIP.replace("[chips.x1]", '[chips."a_b&c"]')}, ("hardware-file",)),
    ("manifest-params-list", "@manifest:params=[]", ("manifest",)),
    ("manifest-exact-not-text", "@manifest:exact=1", ("manifest",)),
    ("manifest-exact-not-a-number", "@manifest:exact='import os'", ("manifest",)),
    ("manifest-rel-tol-text", "@manifest:rel_tol='0.01'", ("manifest",)),
    ("manifest-rel-tol-negative", "@manifest:rel_tol=-1", ("manifest",)),
    ("manifest-missing-unit", "@manifest:-unit", ("manifest",)),
    ("manifest-missing-id", "@manifest:-id", ("manifest",)),
    ("manifest-answers-object", "@manifest:answers={}", ("manifest",)),
    ("manifest-problems-not-list", {"json": '{"problems": {"a": 1}}'}, ("manifest",)),
    ("manifest-no-problems-key", {"json": '{"n": 3}'}, ("manifest",)),
    ("empty-manifest", {"json": '{"problems": []}'}, ("manifest",)),
    ("answers-not-object", {"json": '"all right"'}, ("answers",)),
]

CASES = [pytest.param(channel, content, id=f"{channel}-{name}")
         for name, content, channels in HOSTILE for channel in channels]


def _manifest_edit(key_dir, spec):
    """A copy of the set's manifest with one field broken, e.g. 'params=[]' or '-unit'."""
    doc = _manifest(key_dir)
    problem = doc["problems"][-1]
    answer = problem["answers"][0]
    if spec.startswith("-"):
        (answer if spec[1:] in answer else problem).pop(spec[1:])
        return json.dumps(doc)
    field, _, value = spec.partition("=")
    value = ast.literal_eval(value)
    (answer if field in answer else problem)[field] = value
    return json.dumps(doc)


def _make(tmp_path, key_dir, channel, content):
    fmt = CHANNELS[channel][2]
    if content == "@missing":
        return tmp_path / f"absent.{fmt}"
    if content == "@directory":
        path = tmp_path / "folder"
        path.mkdir()
        return path
    if content == "@fifo":
        path = tmp_path / f"pipe.{fmt}"
        os.mkfifo(path)
        return path
    if content == "@dev-zero":
        return "/dev/zero"
    path = tmp_path / f"hostile.{fmt}"
    if content == "@sparse":
        with open(path, "wb") as f:
            f.truncate(5 * 2**20)
    elif isinstance(content, str) and content.startswith("@manifest:"):
        path.write_text(_manifest_edit(key_dir, content.split(":", 1)[1]), encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content[fmt], encoding="utf-8")
    return path


def _run(args, needs_subprocess):
    """(exit code, stdout, stderr): in a subprocess with a time limit where a bug could block."""
    if needs_subprocess:
        result = subprocess.run([sys.executable, "-m", "scalemath", *args], capture_output=True, text=True,
                                timeout=20, stdin=subprocess.DEVNULL)
        return result.returncode, result.stdout, result.stderr
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("channel, content", CASES)
def test_hostile_file_is_one_error_line(tmp_path, key_dir, channel, content):
    path = _make(tmp_path, key_dir, channel, content)
    make_args, code, _ = CHANNELS[channel]
    returncode, _, stderr = _run(make_args(path, key_dir, tmp_path), content in ("@fifo", "@dev-zero"))
    lines = stderr.strip().splitlines()
    assert returncode == code, stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    assert str(path) in lines[0]


# -- the reader itself ---------------------------------------------------------------------------

def _socket_path(tmp_path):
    path = tmp_path / "s.sock"
    if len(str(path)) > 100:
        pytest.skip("temporary path too long for a Unix socket")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return path, sock


READER_CASES = [
    ("missing", "No such file"),
    ("directory", "it is a directory"),
    ("fifo", "it is a FIFO"),
    ("dev-zero", "it is a device"),
    ("socket", "not a regular file"),
    ("sparse", "is larger than 4 MiB; is it the right answers file?"),
    ("invalid-utf8", "is not UTF-8 text"),
]


@pytest.mark.parametrize("kind, fragment", READER_CASES, ids=[c[0] for c in READER_CASES])
def test_read_user_file_refuses(tmp_path, kind, fragment):
    sock = None
    path = tmp_path / "f.json"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = "/dev/zero"
    elif kind == "socket":
        path, sock = _socket_path(tmp_path)
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(5 * 2**20)
    elif kind == "invalid-utf8":
        path.write_bytes(b"\xc3\x28")
    try:
        with pytest.raises(BadValueError) as info:
            read_user_file(path, "answers file")
    finally:
        if sock is not None:
            sock.close()
    message = str(info.value)
    assert fragment in message and str(path) in message and "\n" not in message


def test_read_user_file_error_class_and_limit(tmp_path):
    path = tmp_path / "f.toml"
    path.write_text("x" * 101, encoding="utf-8")
    with pytest.raises(CatalogError, match="larger than 100 bytes"):
        read_user_file(path, "hardware file", 100, error=CatalogError)
    path.write_text("x" * 100, encoding="utf-8")
    assert read_user_file(path, "hardware file", 100) == "x" * 100
    assert MAX_BYTES == 4 * 2**20


def test_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}')
    assert load_json_file(path, "answers file") == {"a": 1}


JSON_REFUSED = [
    ("deep", DEEP_JSON, "nested too deeply"),
    ("deep-objects", '{"a": ' * 100_000, "nested too deeply"),
    ("long-int", LONG_INT, "5000 digits"),
    ("negative-long-int", "-" + LONG_INT, "5000 digits"),
    ("nan", "NaN", "NaN is not a JSON number"),
    ("infinity", "Infinity", "Infinity is not a JSON number"),
    ("overflow", "[1e400]", "overflows to infinity"),
    ("invalid", "{'a': 1}", "not valid JSON"),
    ("trailing", "{} {}", "not valid JSON"),
]


@pytest.mark.parametrize("text, fragment", [c[1:] for c in JSON_REFUSED], ids=[c[0] for c in JSON_REFUSED])
def test_json_refused(tmp_path, text, fragment):
    path = tmp_path / "a.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BadValueError) as info:
        load_json_file(path, "answers file")
    assert fragment in str(info.value) and str(path) in str(info.value)


TOML_REFUSED = [
    ("deep-array", DEEP_TOML, "nested too deeply"),
    ("deep-inline-table", "a = " + "{b = " * 100_000, "nested too deeply"),
    ("long-int", "a = " + LONG_INT, "more than 4300 digits"),
    ("invalid", "a = ", "not valid TOML"),
]


@pytest.mark.parametrize("text, fragment", [c[1:] for c in TOML_REFUSED], ids=[c[0] for c in TOML_REFUSED])
def test_toml_refused(text, fragment):
    with pytest.raises(CatalogError) as info:
        loads_toml(text, "hw.toml", error=CatalogError)
    assert fragment in str(info.value) and str(info.value).startswith("hw.toml: ")


# -- one unreadable answer among right ones --------------------------------------------------------

UNREADABLE = [
    ("hex", "0x10"),
    ("huge-exponent", "1e999999999"),
    ("code", "import os"),
    ("dunder-import", "__import__('os')"),
    ("list", [1, 2]),
    ("object", {"a": 1}),
    ("bool", True),
    ("long-text", "1" * 10_000),
    ("division-by-zero", "1/0"),
    ("unknown-unit", "3 parsec"),
    ("empty-text", ""),
]


@pytest.mark.parametrize("bad", [c[1] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE])
def test_one_unreadable_answer_among_right_ones(tmp_path, key_dir, bad):
    answers = _right_answers(key_dir)
    victim = sorted(answers)[1]
    name = sorted(answers[victim])[0]
    answers[victim][name] = bad
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    result = CliRunner().invoke(main, ["problems", "grade", str(path), "--key", str(key_dir / "manifest.json"),
                                       "--format", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1 and result.stderr == ""
    graded = json.loads(result.stdout)["answers"]
    verdicts = {(g["problem"], g["answer"]): g for g in graded}
    assert verdicts.pop((victim, name))["verdict"] == "unreadable"
    bad_one = next(g for g in graded if g["verdict"] == "unreadable")
    assert bad_one["diagnosis"] and "\n" not in bad_one["diagnosis"] and len(bad_one["diagnosis"]) < 300
    assert verdicts and all(g["verdict"] == "right" for g in verdicts.values())


def test_right_answers_as_json_numbers_score_100(tmp_path, key_dir):
    doc = _manifest(key_dir)
    # numbers as JSON numbers; a choice by its letter, (a) being the first
    answers = {p["id"]: {a["name"]: "abcdefghij"[int(a["exact"])] if a.get("kind") == "choice"
                         else a["exact"] if a.get("kind") == "expression" else a["value"]  # a formula as text
                         for a in p["answers"]} for p in doc["problems"]}
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    result = CliRunner().invoke(main, ["problems", "grade", str(path), "--key", str(key_dir / "manifest.json")])
    assert result.exit_code == 0 and "= 100%" in result.stdout


# -- catalog names and escaping --------------------------------------------------------------------

KEYS = [
    ("packaged-style", "tpu-v5e", True),
    ("upper-case", "A100", True),
    ("dots-underscore-plus", "gpt_4.o+mini", True),
    ("64-characters", "a" * 64, True),
    ("ampersand", "a_b&c", False),
    ("space", "my chip", False),
    ("leading-dash", "-x", False),
    ("leading-dot", ".x", False),
    ("65-characters", "a" * 65, False),
    ("backslash", "a\\b", False),
    ("dollar", "a$b", False),
    ("pipe", "a|b", False),
    ("non-ascii", "tpu-\u00e9", False),
    ("newline", "a\nb", False),
]


@pytest.mark.parametrize("key, ok", [c[1:] for c in KEYS], ids=[c[0] for c in KEYS])
def test_catalog_keys(tmp_path, key, ok):
    hw = tmp_path / "hw.toml"
    hw.write_text(GOOD_CHIP.replace("[chips.x1]", f"[chips.{json.dumps(key)}]"), encoding="utf-8")
    models = tmp_path / "models.toml"
    models.write_text(f'[models.{json.dumps(key)}]\nname = "M"\nsource = "t"\n'
                      "D = 64\nF = 256\nN = 4\nK = 2\nH = 16\nL = 2\nV = 100\n", encoding="utf-8")
    assert bool(KEY_PATTERN.match(key)) is ok
    if ok:
        assert len(load_catalog(hw)) == 1 and len(load_models(models)) == 1
        return
    for loader, what in ((load_catalog, "chip"), (load_models, "model")):
        path = hw if what == "chip" else models
        with pytest.raises(CatalogError) as info:
            loader(path)
        message = str(info.value)
        assert f"{what} name" in message and "is not allowed" in message and str(path) in message
        assert "\n" not in message


def test_chip_key_with_ampersand_is_refused_by_the_cli(tmp_path):
    path = tmp_path / "hw.toml"
    path.write_text(GOOD_CHIP.replace("[chips.x1]", '[chips."a_b&c"]'), encoding="utf-8")
    result = CliRunner().invoke(main, ["table", "roofline.critical_intensity", "--hardware-file", str(path),
                                       "--format", "latex"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {path}: chip name 'a_b&c' is not allowed")


ESCAPES = [
    ("plain", "TPU v5e", "TPU v5e", "TPU v5e"),
    ("underscore", "a_b", r"a\_b", r"a\_b"),
    ("ampersand", "a&b", r"a\&b", "a&b"),
    ("percent", "50%", r"50\%", "50%"),
    ("hash", "#1", r"\#1", r"\#1"),
    ("dollar", "$x$", r"\$x\$", r"\$x\$"),
    ("braces", "{x}", r"\{x\}", "{x}"),
    ("tilde", "a~b", r"a\textasciitilde{}b", r"a\~b"),
    ("caret", "a^b", r"a\textasciicircum{}b", "a^b"),
    ("backslash", "a\\input{x}", r"a\textbackslash{}input\{x\}", "a\\\\input{x}"),
    ("pipe", "a|b", "a|b", r"a\|b"),
    ("newline", "a\nb", "a b", "a b"),
    ("tab", "a\tb", "a b", "a b"),
    ("all-at-once", "X_1 &|#%", r"X\_1 \&|\#\%", r"X\_1 &\|\#%"),
    ("html", "<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
    ("link", "[x](javascript:alert(1))", "[x](javascript:alert(1))", r"\[x\](javascript:alert(1))"),
    ("entity", "&lt;b&gt; & c", r"\&lt;b\&gt; \& c", "&amp;lt;b&amp;gt; & c"),
]


@pytest.mark.parametrize("text, latex, markdown", [c[1:] for c in ESCAPES], ids=[c[0] for c in ESCAPES])
def test_escape(text, latex, markdown):
    assert formatting.escape(text, "latex") == latex
    assert formatting.escape(text, "markdown") == markdown


@pytest.mark.parametrize("fmt, shown", [("latex", r"X\_1 \&|\#\%"), ("markdown", r"| X\_1 &\|\#% |")],
                         ids=["latex", "markdown"])
def test_table_escapes_chip_names(tmp_path, fmt, shown):
    path = tmp_path / "hw.toml"
    path.write_text(GOOD_CHIP.replace('"X1"', '"X_1 &|#%"'), encoding="utf-8")
    result = CliRunner().invoke(main, ["table", "roofline.critical_intensity", "--hardware-file", str(path),
                                       "--format", fmt])
    assert result.exit_code == 0, result.output
    assert shown in result.stdout


def test_escape_unknown_format():
    with pytest.raises(ValueError):
        formatting.escape("x", "html")
