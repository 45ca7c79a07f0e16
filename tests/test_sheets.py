"""What a teacher hands out: no seed on the sheet, set_id, answer names, options and TOML config,
--generator, no repeated problem, per-student variants and rosters (issue 12)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from scalemath.cli import main
from scalemath.problems import sets

MARKER = ".scalemath-set.json"


def run(args, cwd, monkeypatch):
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, ["problems", "generate", *args])


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "set"
    pset = sets.build_set(["roofline"], 4, 123456789)
    sets.write_set(pset, out, ("md", "tex", "html", "json"))
    return out, pset


@pytest.mark.parametrize("name", ["problems.md", "problems.tex", "problems.html"])
def test_sheet_never_shows_the_seed_but_names_the_set(plain, name):
    out, pset = plain
    text = (out / name).read_text()
    assert "123456789" not in text and not re.search(r"\bseed\b", text, re.I)
    assert pset.set_id in text and re.fullmatch(r"[0-9a-f]{10}", pset.set_id)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 123456789 and manifest["set_id"] == pset.set_id


@pytest.mark.parametrize("name", ["problems.md", "problems.tex", "problems.html"])
def test_sheet_states_the_tolerance_and_every_answer_name(plain, name):
    out, pset = plain
    text = (out / name).read_text().replace(r"\_\allowbreak{}", "_").replace(r"\_", "_")
    assert re.search(r"within 1(\\,| |\u202f)?\\?%", text), "the tolerance is stated"
    for p in pset.problems:
        for a in p.answers:
            assert a.name in text, (p.id, a.name)


@pytest.mark.parametrize("a,b,same", [
    ((7, ["roofline"], [], 8), (7, ["roofline"], [], 8), True),
    ((7, ["roofline"], [], 8), (8, ["roofline"], [], 8), False),
    ((7, ["roofline"], [], 8), (7, ["roofline"], [], 9), False),
    ((7, ["roofline"], [], 8, ["v01"]), (7, ["roofline"], [], 8, ["v01", "v02"]), False),
], ids=["same-options", "other-seed", "other-n", "other-variants"])
def test_set_id_follows_seed_and_options(a, b, same):
    assert (sets.set_id(*a) == sets.set_id(*b)) is same


def test_set_id_is_a_one_way_hash_not_the_seed():
    sid = sets.set_id(7, ["roofline"], [], 8)
    assert sid == hashlib.sha256(b"scalemath-set:" + json.dumps(
        {"seed": 7, "topics": ["roofline"], "generators": [], "n": 8, "variants": []}, sort_keys=True).encode()
    ).hexdigest()[:10]


def test_sheet_options_appear_on_the_sheet(tmp_path, monkeypatch):
    result = run(["--topic", "roofline", "--n", "2", "--format", "md,tex,html", "--out", "s", "--title", "Week 3 & 4",
                  "--course", "CS 329 {fall}", "--instructions", "No calculators_allowed.", "--points", "4,6",
                  "--name-line"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    md = (tmp_path / "s" / "problems.md").read_text()
    assert md.startswith("# Week 3 & 4") and "CS 329 {fall}" in md and "10 points" in md and "(6 points)" in md
    assert "Name:" in md and "Date:" in md and r"No calculators\_allowed." in md
    tex = (tmp_path / "s" / "problems.tex").read_text()
    assert r"Week 3 \& 4" in tex and r"CS 329 \{fall\}" in tex and r"calculators\_allowed" in tex
    html = (tmp_path / "s" / "problems.html").read_text()
    assert "Week 3 &amp; 4" in html and 'class="nameline"' in html


def test_config_file_sets_the_sheet_and_options_override_it(tmp_path, monkeypatch):
    (tmp_path / "sheet.toml").write_text('title = "Quiz 1"\ncourse = "ML systems"\npoints = 5\nname_line = true\n'
                                         'instructions = """Work alone.\n\nShow your steps."""\n')
    result = run(["--topic", "roofline", "--n", "2", "--format", "md", "--out", "s", "--config", "sheet.toml",
                  "--course", "ML systems, spring"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    md = (tmp_path / "s" / "problems.md").read_text()
    assert md.startswith("# Quiz 1") and "ML systems, spring" in md and "(5 points)" in md
    assert "Work alone.\n\nShow your steps." in md and "Name:" in md


@pytest.mark.parametrize("toml,fragment", [
    ('titel = "x"\n', "unknown key 'titel'"),
    ("points = -1\n", "points must be whole numbers from 0 to 1000"),
    ('points = "5"\n', "points must be whole numbers"),
    ('paper = "a3"\n', "paper must be one of letter, a4"),
    ("name_line = 1\n", "name_line must be true or false"),
    ('title = "a\\u0007b"\n', "control character"),
    ('title = "' + "x" * 201 + '"\n', "at most 200"),
    ("title = \n", "not valid TOML"),
], ids=["unknown-key", "negative-points", "text-points", "paper", "name-line", "control", "long-title", "bad-toml"])
def test_bad_config_is_one_error_exit_2(tmp_path, monkeypatch, toml, fragment):
    (tmp_path / "sheet.toml").write_text(toml)
    result = run(["--topic", "roofline", "--n", "2", "--format", "md", "--out", "s", "--config", "sheet.toml"],
                 tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("args,fragment", [
    (["--points", "1,2,3"], "3 points given for 2 questions"),
    (["--points", "x"], "is not a whole number"),
    (["--variants", "2", "--students", "r.csv"], "not both"),
    (["--generator", "dot_prodcut"], "dot_product"),
], ids=["points-count", "points-text", "variants-and-students", "generator-did-you-mean"])
def test_bad_options_exit_2(tmp_path, monkeypatch, args, fragment):
    (tmp_path / "r.csv").write_text("id\na\n")
    result = run(["--topic", "roofline", "--n", "2", "--format", "md", "--out", "s", *args], tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    assert fragment in result.output


def test_generator_option_picks_those_generators():
    pset = sets.build_set(None, 3, 1, generator_names=["dot_product", "tpu_mxu_peak"])
    assert {p.generator for p in pset.problems} == {"dot_product", "tpu_mxu_peak"}
    assert pset.topics == ("roofline", "tpu")
    both = sets.build_set(["gpu"], None, 1, generator_names=["dot_product"])
    assert "dot_product" in {p.generator for p in both.problems} and "gpu" in {p.topic for p in both.problems}


@pytest.mark.parametrize("generator,n", [("dot_product", 12), ("tpu_mxu_peak", 10), ("critical_intensity", 12)])
def test_a_set_never_repeats_a_statement(generator, n):
    from scalemath.problems import render

    pset = sets.build_set(None, n, 5, generator_names=[generator])
    statements = [render.render_problem(p, "md", "statement") for p in pset.problems]
    assert len(set(statements)) == n
    again = sets.build_set(None, n, 5, generator_names=[generator])
    assert [p.seed for p in again.problems] == [p.seed for p in pset.problems], "redraws are deterministic"


def test_progress_bar_stays_off_when_stderr_is_not_a_terminal(tmp_path, monkeypatch):
    result = CliRunner().invoke(main, ["problems", "generate", "--topic", "roofline", "--n", "2", "--format",
                                       "md,json", "--out", str(tmp_path / "s")])  # json: no warning of a missing key
    assert result.exit_code == 0 and result.stderr == ""


def test_progress_callback_counts_every_problem_and_document():
    seen = []
    pset = sets.build_set(["roofline"], 3, 1, variants=2, progress=seen.append)
    assert sum(seen) == 6
    assert sets.documents_to_write(pset, ["md", "json"]) == 3


@pytest.mark.parametrize("topics, n, names", [
    (None, None, None),
    (["roofline"], None, None),
    (["roofline"], None, ["dot_product", "tpu_mxu_peak"]),
    (None, 7, None),
], ids=["every generator", "one topic", "a topic and generators", "n given"])
def test_problem_count_is_what_the_progress_bar_expects(topics, n, names):
    # the bar's length: one problem per chosen generator when --n is left out (a fixed 44 overran it)
    assert sets.problem_count(topics, n, names) == len(sets.build_set(topics, n, 3, generator_names=names).problems)


# --- variants ------------------------------------------------------------------------------------

def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_variants_layout_manifest_and_marker(tmp_path, monkeypatch):
    # two generators without figures (a problem with one adds figures/ beside each sheet)
    result = run(["--generator", "dot_product", "--generator", "matmul_bounds", "--n", "2", "--variants", "3",
                  "--format", "md,html,json", "--out", "s"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    out = tmp_path / "s"
    per = ["answers.json", "problems.html", "problems.md"]
    assert _files(out) == sorted([MARKER, "manifest.json", "solutions.html", "solutions.md"]
                                 + [f"sheets/v0{i}/{f}" for i in (1, 2, 3) for f in per])
    manifest = json.loads((out / "manifest.json").read_text())
    assert "problems" not in manifest and [v["id"] for v in manifest["variants"]] == ["v01", "v02", "v03"]
    assert manifest["set_id"] and manifest["seed"] == 0 and all(v["student"] is None for v in manifest["variants"])
    seeds = [[p["seed"] for p in v["problems"]] for v in manifest["variants"]]
    assert len({tuple(s) for s in seeds}) == 3, "each variant draws its own problems"
    gens = [[p["generator"] for p in v["problems"]] for v in manifest["variants"]]
    assert gens[0] == gens[1] == gens[2], "every student gets the same kinds of problem"
    answers = json.loads((out / "sheets" / "v02" / "answers.json").read_text())
    assert answers["variant"] == "v02" and answers["student"] is None
    assert answers["answers"] == {p["id"]: {a["name"]: None for a in p["answers"]}
                                  for p in manifest["variants"][1]["problems"]}
    key = (out / "solutions.md").read_text()
    assert all(f"# Variant v0{i}" in key for i in (1, 2, 3))
    marker = json.loads((out / MARKER).read_text())
    assert marker["files"] == {f: hashlib.sha256((out / f).read_bytes()).hexdigest()
                               for f in _files(out) if f != MARKER}
    again = run(["--topic", "roofline", "--n", "2", "--variants", "3", "--format", "md,html,json", "--out", "s",
                 "--force"], tmp_path, monkeypatch)
    assert again.exit_code == 0, again.output


def test_force_keeps_a_file_a_user_added_in_a_variant_folder(tmp_path, monkeypatch):
    args = ["--topic", "roofline", "--n", "1", "--variants", "2", "--format", "md", "--out", "s"]
    assert run(args, tmp_path, monkeypatch).exit_code == 0
    (tmp_path / "s" / "sheets" / "v01" / "graded.txt").write_text("mine\n")
    result = run([*args, "--force"], tmp_path, monkeypatch)
    assert result.exit_code == 2 and "sheets/v01/graded.txt" in result.output
    assert (tmp_path / "s" / "sheets" / "v01" / "graded.txt").read_text() == "mine\n"
    (tmp_path / "s" / "sheets" / "notes").mkdir()
    (tmp_path / "s" / "sheets" / "v01" / "graded.txt").unlink()
    result = run([*args, "--force"], tmp_path, monkeypatch)
    assert result.exit_code == 2 and "sheets/notes/" in result.output


def test_roster_gives_each_student_a_named_sheet(tmp_path, monkeypatch):
    (tmp_path / "roster.csv").write_text("name,id,email\nAda Lovelace,s001,a@x\n\"Turing, Alan\",s002,t@x\n")
    result = run(["--topic", "roofline", "--n", "2", "--students", "roster.csv", "--format", "md,json", "--out", "s"],
                 tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    out = tmp_path / "s"
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(v["id"], v["student"]) for v in manifest["variants"]] == [("s001", "Ada Lovelace"), ("s002", "Turing, Alan")]
    assert json.loads((out / "sheets" / "s002" / "answers.json").read_text())["student"] == "Turing, Alan"
    assert "Turing, Alan" in (out / "sheets" / "s002" / "problems.md").read_text()


@pytest.mark.parametrize("data,expected", [
    (b"id,name\ns1,Ada\ns2,\"Diaz, Carol\"\n", [("s1", "Ada"), ("s2", "Diaz, Carol")]),
    (b"id;name\ns1;Ada\ns2;\"Diaz; Carol\"\n", [("s1", "Ada"), ("s2", "Diaz; Carol")]),
    (b"name;id;email\r\nAda;s1;a@x\r\nZo\xc3\xab;s2;z@x\r\n", [("s1", "Ada"), ("s2", "Zo\u00eb")]),
    (b"id\tname\ns1\tAda Lovelace\n", [("s1", "Ada Lovelace")]),
    (b"\xef\xbb\xbfid;name\r\ns1;Ada\r\n", [("s1", "Ada")]),
    ("id\tname\r\ns1\tZo\u00eb\r\n".encode("utf-16"), [("s1", "Zo\u00eb")]),
    (b"Name;ID\nAda;s1\n", [("s1", "Ada")]),
    (b"id;name\ns1;Smith, John\n", [("s1", "Smith, John")]),
], ids=["comma", "semicolon-quoted", "semicolon-crlf-excel", "tab", "utf8-bom-semicolon", "utf16-tab-excel-unicode",
        "header-case", "semicolon-comma-in-name"])
def test_roster_reads_comma_semicolon_and_tab_separated_exports(tmp_path, data, expected):
    from scalemath.problems.sheet import read_roster

    (tmp_path / "roster.csv").write_bytes(data)
    assert read_roster(tmp_path / "roster.csv") == expected


@pytest.mark.parametrize("roster,fragment", [
    ("name;email\nAda;a@x\n", "has no 'id' column in its header (name, email)"),
    ("name\temail\nAda\ta@x\n", "has no 'id' column in its header (name, email)"),
    ("id;name\ns1;Diaz; Carol\n", 'holds a semicolon in double quotes ("Diaz; Carol")'),
], ids=["semicolon-no-id", "tab-no-id", "semicolon-unquoted"])
def test_separated_roster_without_id_is_still_a_clear_error(tmp_path, monkeypatch, roster, fragment):
    (tmp_path / "roster.csv").write_text(roster)
    result = run(["--topic", "roofline", "--n", "1", "--students", "roster.csv", "--format", "md", "--out", "s"],
                 tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("roster,fragment", [
    ("id,name\na,A\nb,B\na,C\n", "id 'a' is already on line 2"),
    ("id,name\nA1,x\na1,y\n", "id 'a1' is already on line 2"),
    ("id,name\n../x,Evil\n", "is not usable"),
    ("id,name\n.hidden,x\n", "is not usable"),
    ("id,name\n,Nobody\n", "is not usable"),
    ("name\nAda\n", "has no 'id' column"),
    ("", "is empty"),
    ("id,name\n", "has a header but no students"),
    ("id,name\ns1,Ada\x07\n", "control character"),
    ("id\n" + "".join(f"s{i}\n" for i in range(501)), "more than 500 students"),
    ("id,name\nalice01,Diaz, Carol\n", "line 2 has 3 fields but the header names 2"),
], ids=["duplicate", "duplicate-case", "path", "hidden", "empty-id", "no-id-column", "empty-file", "no-rows",
        "control-in-name", "too-many", "unquoted-comma"])
def test_bad_roster_is_one_error_exit_2(tmp_path, monkeypatch, roster, fragment):
    (tmp_path / "roster.csv").write_text(roster)
    result = run(["--topic", "roofline", "--n", "1", "--students", "roster.csv", "--format", "md", "--out", "s"],
                 tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("path,fragment", [("missing.csv", "No such file"), ("/dev/zero", "not a regular file")],
                         ids=["missing", "device"])
def test_roster_file_goes_through_the_size_limited_reader(tmp_path, monkeypatch, path, fragment):
    result = run(["--topic", "roofline", "--n", "1", "--students", path, "--format", "md", "--out", "s"],
                 tmp_path, monkeypatch)
    assert result.exit_code == 2 and fragment in result.output, result.output


def test_large_roster_file_is_refused_before_reading(tmp_path, monkeypatch):
    with open(tmp_path / "big.csv", "wb") as fh:
        fh.truncate(2 * 2**20)
    result = run(["--topic", "roofline", "--n", "1", "--students", "big.csv", "--format", "md", "--out", "s"],
                 tmp_path, monkeypatch)
    assert result.exit_code == 2 and "larger than 1 MiB" in result.output, result.output


def test_plain_set_layout_is_unchanged(plain):
    from scalemath.problems import figures

    out, pset = plain
    drawn = ["figures"] if any(figures.spec_for(p) is not None for p in pset.problems) else []
    assert sorted(os.listdir(out)) == sorted([MARKER, "answers.json", "manifest.json", "problems.html",
                                              "problems.md", "problems.tex", "solutions.html", "solutions.md",
                                              "solutions.tex"] + drawn)
    answers = json.loads((out / "answers.json").read_text())
    assert answers["set"] == json.loads((out / "manifest.json").read_text())["set_id"]
    assert all(isinstance(v, dict) and all(x is None for x in v.values()) for v in answers["answers"].values())


def test_a_large_set_never_repeats_and_never_runs_dry():
    # 400 problems over every topic: generators with few different problems (gpu_node_bandwidth) give their
    # slots to others instead of failing the set
    from scalemath.problems import render, sets

    pset = sets.build_set(None, n=400, seed=1)
    statements = [render.render_problem(p, "md", "statement") for p in pset.problems]
    assert len(pset.problems) == 400 and len(set(statements)) == 400
    assert len({p.id for p in pset.problems}) == 400
    assert [p.id for p in sets.build_set(None, n=400, seed=1).problems] == [p.id for p in pset.problems]


def test_too_many_problems_of_one_generator_is_a_clear_error():
    from scalemath.errors import BadValueError
    from scalemath.problems import sets

    with pytest.raises(BadValueError, match="different problems for this seed"):
        sets.build_set(None, n=200, seed=1, generator_names=["gpu_node_bandwidth"])


@pytest.mark.parametrize("name,printable", [
    ("Ana", True), ("Zoë Łukasiewicz", True), ("Émile Ørsted-Šimůnek", True),   # Latin-1 and Latin Extended-A: T1
    ("Дмитрий Иванов", False), ("李雷", False), ("Ἀριστοτέλης", False),         # Cyrillic, CJK, Greek: not in T1
], ids=["ascii", "latin-extended", "latin-extended-2", "cyrillic", "cjk", "greek"])
def test_which_names_pdflatex_can_typeset(name, printable):
    from scalemath.problems.sheet import tex_can_set, tex_student

    assert tex_can_set(name) is printable
    assert tex_student(name) == (name if printable else None)


NAMES = {"s01": "Zoë Łukasiewicz", "s02": "Дмитрий Иванов", "s03": "李雷", "s04": "Ἀριστοτέλης"}


@pytest.mark.skipif(not (shutil.which("pdflatex") and shutil.which("pdftotext")), reason="needs pdflatex and pdftotext")
def test_a_roster_of_non_latin_names_loses_no_name(tmp_path, monkeypatch):
    roster = "id,name\n" + "".join(f"{k},{v}\n" for k, v in NAMES.items())
    (tmp_path / "roster.csv").write_text(roster, encoding="utf-8")
    result = run(["--students", "roster.csv", "--n", "1", "--seed", "5", "--generator", "dot_product",
                  "--format", "md,html,tex,pdf,json", "--out", "set"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    out = tmp_path / "set"
    # one warning naming every student whose name the PDF cannot show, and what to do instead
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "3 student names" in warnings[0] and "HTML" in warnings[0]
    assert all(f"{NAMES[k]} ({k})" in warnings[0] for k in ("s02", "s03", "s04")) and "s01" not in warnings[0]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert {v["id"]: v["student"] for v in manifest["variants"]} == NAMES
    for sid, name in NAMES.items():
        sheet = out / "sheets" / sid
        for fmt in ("md", "html"):
            assert name in (sheet / f"problems.{fmt}").read_text(encoding="utf-8"), (sid, fmt)
        assert json.loads((sheet / "answers.json").read_text(encoding="utf-8"))["student"] == name
        tex = (sheet / "problems.tex").read_text(encoding="utf-8")
        text = subprocess.run(["pdftotext", str(sheet / "problems.pdf"), "-"], capture_output=True, text=True,
                              check=True).stdout
        if sid == "s01":   # Latin Extended: typeset, and copied back out of the PDF
            assert name in tex and name in text
        else:              # the sheet names its variant, the student's id, and no name
            assert name not in tex and f"variant {sid}" in " ".join(text.split()) and "For " not in text


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    out = tmp_path_factory.mktemp("verdicts") / "set"
    pset = sets.build_set(None, 3, 11, generator_names=["gpu_fat_tree", "sharding_gather_or_reduce", "tpu_torus_hops"])
    sets.write_set(pset, out, ("md", "tex", "html"))
    return out, pset


@pytest.mark.parametrize("fmt", ["md", "tex", "html"])
def test_a_choice_is_listed_on_the_sheet_and_keyed_by_letter_and_text(verdicts, fmt):
    out, pset = verdicts
    sheet = (out / f"problems.{fmt}").read_text(encoding="utf-8")
    key = (out / f"solutions.{fmt}").read_text(encoding="utf-8")
    if fmt == "html":
        sheet, key = (re.sub(r"\s+", " ", t.replace("&#x27;", "'").replace("&#39;", "'")) for t in (sheet, key))
    chosen = [a for p in pset.problems for a in p.answers if a.kind == "choice"]
    assert len(chosen) == 3
    for a in chosen:
        letter = "abcdefghijklmnopqrstuvwxyz"[int(a.value)]
        right = a.choices[int(a.value)]
        shown = {"md": "({}) {}", "tex": "\\item[({})] {}", "html": "<li>({}) {}</li>"}[fmt]
        assert all(shown.format("abcdefghijklmnopqrstuvwxyz"[i], c) in sheet for i, c in enumerate(a.choices))
        assert f"({letter}) {right}" in key, (fmt, a.name)   # the key: the letter and the text, not an index


@pytest.mark.parametrize("fmt", ["json", "md,json"], ids=["key-only", "sheets-and-key"])
def test_variants_get_their_answer_files_in_every_format_choice(tmp_path, monkeypatch, fmt):
    out = tmp_path / "set"
    result = run(["--topic", "gpu", "--n", "2", "--seed", "4", "--variants", "2", "--format", fmt,
                  "--out", str(out)], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    set_id = json.loads((out / "manifest.json").read_text())["set_id"]
    for v in ("v01", "v02"):
        sheet = json.loads((out / "sheets" / v / "answers.json").read_text())
        assert sheet["set"] == set_id and sheet["variant"] == v


def test_a_choice_and_its_options_stay_on_one_page_in_latex(tmp_path, monkeypatch):
    out = tmp_path / "set"
    result = run(["--generator", "gpu_fat_tree", "--n", "1", "--seed", "5", "--format", "tex", "--out", str(out)],
                 tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    tex = (out / "problems.tex").read_text()
    block = tex[tex.index(r"\item \begin{minipage}[t]{\linewidth}"):]
    assert block.index(r"\item[(a)]") < block.index(r"\end{minipage}")


@pytest.mark.parametrize("args", [["--topic", "roofline,gpu"], ["--topic", "roofline, gpu"]],
                         ids=["comma", "comma-space"])
def test_a_comma_list_of_topics_is_the_repeated_option(tmp_path, monkeypatch, args):
    one, two = tmp_path / "one", tmp_path / "two"
    assert run(["--topic", "roofline", "--topic", "gpu", "--n", "3", "--seed", "2", "--format", "json", "--out",
                str(one)], tmp_path, monkeypatch).exit_code == 0
    result = run([*args, "--n", "3", "--seed", "2", "--format", "json", "--out", str(two)], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert (one / "manifest.json").read_text() == (two / "manifest.json").read_text()
