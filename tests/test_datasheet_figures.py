"""The vendors' published figures beside the book's (``[chips.KEY.datasheet]``, ``--convention hardware=datasheet``).

Every row below is a figure as the vendor prints it, with the page it is printed on; the expected value is the
printed number in SI units by plain arithmetic (a dense rate is half NVIDIA's printed sparse one; one ICI link
one way is the printed bidirectional per-chip figure over the ports and the two directions). Printed figures are
whole numbers in their unit, so each is checked exactly.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.catalog.hardware import default_catalog, get_chip, load_catalog
from scalemath.cli import main
from scalemath.conventions import parse
from scalemath.errors import CatalogError
from scalemath.quantities import Context

T, G, GiB = 10**12, 10**9, 2**30

V3 = "https://cloud.google.com/tpu/docs/v3"
V4 = "https://cloud.google.com/tpu/docs/v4"
V5P = "https://cloud.google.com/tpu/docs/v5p"
V5E = "https://cloud.google.com/tpu/docs/v5e"
V6E = "https://cloud.google.com/tpu/docs/v6e"
TPU7X = "https://cloud.google.com/tpu/docs/tpu7x"
A100 = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
        "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
H100 = "https://www.nvidia.com/en-us/data-center/h100/"
H200 = "https://www.nvidia.com/en-us/data-center/h200/"
DGX_B200 = "https://www.nvidia.com/en-us/data-center/dgx-b200/"

# (chip, figure, the published value by plain arithmetic from the printed numbers, the page that prints them)
PUBLISHED = [
    ("tpu-v3", "flops_per_s.bf16", 123 * T, V3),                     # "123 teraflops (bf16)" per chip
    ("tpu-v3", "hbm_bytes", 32 * GiB, V3),                           # "32 GiB, 900 GBps"
    ("tpu-v3", "hbm_bytes_per_s", 900 * G, V3),
    ("tpu-v4p", "flops_per_s.bf16", 275 * T, V4),                    # "275 teraflops (bf16 or int8)"
    ("tpu-v4p", "flops_per_s.int8", 275 * T, V4),
    ("tpu-v4p", "hbm_bytes", 32 * GiB, V4),                          # "32 GiB, 1200 GBps"
    ("tpu-v4p", "hbm_bytes_per_s", 1200 * G, V4),
    ("tpu-v5p", "flops_per_s.bf16", 459 * T, V5P),                   # BF16 and FP8 459 TFLOPs
    ("tpu-v5p", "flops_per_s.fp8", 459 * T, V5P),
    ("tpu-v5p", "hbm_bytes", 95 * GiB, V5P),                         # HBM capacity per chip (GiB) 95
    ("tpu-v5p", "hbm_bytes_per_s", 2765 * G, V5P),                   # HBM bandwidth per chip 2765 GBps
    ("tpu-v5p", "ici_link_bytes_per_s", Fraction(1200 * G, 6 * 2), V5P),  # ICI 1200 GBps bidirectional, 3-D torus
    ("tpu-v5p", "dcn_bytes_per_s", Fraction(50 * G, 8), V5P),        # DCN 50 Gbps per chip
    ("tpu-v5e", "flops_per_s.bf16", 197 * T, V5E),                   # 197 TFLOPs bf16
    ("tpu-v5e", "flops_per_s.int8", 393 * T, V5E),                   # 393 TOPs int8
    ("tpu-v5e", "hbm_bytes", 16 * G, V5E),                           # "16 GB, 819 GBps"
    ("tpu-v5e", "hbm_bytes_per_s", 819 * G, V5E),
    ("tpu-v5e", "ici_link_bytes_per_s", Fraction(400 * G, 4 * 2), V5E),  # 400 GBps bidirectional, 4 ICI ports
    ("tpu-v5e", "dcn_bytes_per_s", Fraction(2 * 100 * G, 8 * 8), V5E),    # 2 x 100 Gbps NIC per 8-chip host
    ("tpu-v6e", "flops_per_s.bf16", 918 * T, V6E),                   # 918 TFLOPs bf16
    ("tpu-v6e", "flops_per_s.int8", 1836 * T, V6E),                  # 1836 TOPs int8
    ("tpu-v6e", "flops_per_s.fp8", 918 * T, TPU7X),                  # v6e column: FP8 918 TFLOPs
    ("tpu-v6e", "hbm_bytes", 32 * G, V6E),                           # HBM capacity per chip 32 GB
    ("tpu-v6e", "hbm_bytes_per_s", 1638 * G, V6E),                   # 1638 GBps
    ("tpu-v6e", "ici_link_bytes_per_s", Fraction(800 * G, 4 * 2), V6E),  # 800 GBps bidirectional, 4 ICI ports
    ("tpu-v6e", "dcn_bytes_per_s", Fraction(100 * G, 8), TPU7X),     # v6e column: DCN 100 Gbps per chip
    ("tpu7x", "flops_per_s.bf16", 2307 * T, TPU7X),                  # 2307 TFLOPs BF16
    ("tpu7x", "flops_per_s.fp8", 4614 * T, TPU7X),                   # 4614 TFLOPs FP8
    ("tpu7x", "hbm_bytes", 192 * GiB, TPU7X),                        # HBM capacity per chip (GiB) 192
    ("tpu7x", "hbm_bytes_per_s", 7380 * G, TPU7X),                   # 7380 GBps
    ("tpu7x", "dcn_bytes_per_s", Fraction(100 * G, 8), TPU7X),       # DCN 100 Gbps per chip
    ("a100", "flops_per_s.bf16", 312 * T, A100),                     # BFLOAT16 Tensor Core 312 TFLOPS (dense)
    ("a100", "flops_per_s.fp16", 312 * T, A100),                     # FP16 Tensor Core 312 TFLOPS
    ("a100", "flops_per_s.int8", 624 * T, A100),                     # INT8 Tensor Core 624 TOPS
    ("a100", "flops_per_s.fp32", Fraction(195, 10) * T, A100),       # FP32 19.5 TFLOPS
    ("a100", "hbm_bytes", 80 * G, A100),                             # A100 80GB
    ("a100", "hbm_bytes_per_s", 2039 * G, A100),                     # 2,039 GB/s (SXM)
    ("a100", "nvlink_bytes_per_s", 600 * G // 2, A100),              # NVLink 600 GB/s, both directions
    ("h100", "flops_per_s.fp32", 67 * T, H100),                      # FP32 67 TFLOPS
    ("h100", "flops_per_s.bf16", Fraction(1979, 2) * T, H100),       # BFLOAT16 1,979 TFLOPS with sparsity
    ("h100", "flops_per_s.fp16", Fraction(1979, 2) * T, H100),       # FP16 1,979 TFLOPS with sparsity
    ("h100", "flops_per_s.fp8", Fraction(3958, 2) * T, H100),        # FP8 3,958 TFLOPS with sparsity
    ("h100", "flops_per_s.int8", Fraction(3958, 2) * T, H100),       # INT8 3,958 TOPS with sparsity
    ("h100", "hbm_bytes", 80 * G, H100),                             # 80 GB
    ("h100", "hbm_bytes_per_s", Fraction(335, 100) * T, H100),       # 3.35 TB/s
    ("h100", "nvlink_bytes_per_s", 900 * G // 2, H100),              # NVLink 900 GB/s, both directions
    ("h100", "pcie_bytes_per_s", 128 * G // 2, H100),                # PCIe Gen5 128 GB/s, both directions
    ("h200", "flops_per_s.bf16", Fraction(1979, 2) * T, H200),       # BFLOAT16 1,979 TFLOPS with sparsity
    ("h200", "flops_per_s.fp16", Fraction(1979, 2) * T, H200),
    ("h200", "flops_per_s.fp8", Fraction(3958, 2) * T, H200),        # FP8 3,958 TFLOPS with sparsity
    ("h200", "flops_per_s.int8", Fraction(3958, 2) * T, H200),
    ("h200", "hbm_bytes", 141 * G, H200),                            # 141 GB
    ("h200", "hbm_bytes_per_s", Fraction(48, 10) * T, H200),         # 4.8 TB/s
    ("b200", "hbm_bytes", Fraction(1440 * G, 8), DGX_B200),          # 1,440 GB HBM3e over 8 GPUs
    ("b200", "hbm_bytes_per_s", Fraction(64 * T, 8), DGX_B200),      # 64 TB/s over 8 GPUs
    ("b200", "flops_per_s.fp8", Fraction(72 * 1000 * T, 8 * 2), DGX_B200),  # FP8 72 PFLOPS with sparsity
    ("b200", "flops_per_s.fp4", Fraction(72 * 1000 * T, 8), DGX_B200),      # FP4 72 PFLOPS dense
]


def _figure(chip, figure):
    if figure.startswith("flops_per_s."):
        return chip.flops(figure.split(".", 1)[1])
    return getattr(chip, figure)


@pytest.mark.parametrize("key, figure, published, url", PUBLISHED,
                         ids=[f"{k}-{f}" for k, f, _, _ in PUBLISHED])
def test_the_datasheet_convention_gives_the_published_figure(key, figure, published, url):
    chip = Context(chip=key, conventions=parse(["hardware=datasheet"])).get_chip()
    assert chip.figures == "datasheet"
    assert _figure(chip, figure) == published, url


def test_every_datasheet_figure_in_the_catalog_has_a_row_with_its_page():
    rows = {(k, f): url for k, f, _, url in PUBLISHED}
    for chip in default_catalog().every_chip():
        if chip.datasheet is None:
            continue
        for key, value in chip.datasheet.figures.items():
            names = [f"flops_per_s.{d}" for d in value] if key == "flops_per_s" else [key]
            for name in names:
                assert (chip.key, name) in rows, (chip.key, name)
                assert rows[(chip.key, name)].split("//", 1)[1].split(" ")[0] in chip.datasheet.source, name


# the book's figure, and the vendor's where it differs (the rows above)
DIFFERENCES = [
    ("a100", "flops_per_s.bf16", 310 * T, 312 * T),
    ("a100", "hbm_bytes_per_s", 2 * T, 2039 * G),
    ("tpu-v5p", "hbm_bytes_per_s", 28 * T // 10, 2765 * G),
    ("tpu-v5p", "ici_link_bytes_per_s", 90 * G, 100 * G),
    ("tpu-v5e", "ici_link_bytes_per_s", 45 * G, 50 * G),
    ("tpu-v6e", "hbm_bytes_per_s", 16 * T // 10, 1638 * G),
    ("tpu7x", "flops_per_s.bf16", 23 * T * 100, 2307 * T),
    ("h100", "flops_per_s.bf16", 990 * T, Fraction(1979, 2) * T),
    ("b200", "hbm_bytes", 192 * G, 180 * G),
]


@pytest.mark.parametrize("key, figure, book, vendor", DIFFERENCES, ids=[f"{k}-{f}" for k, f, _, _ in DIFFERENCES])
def test_the_book_keeps_its_figure_and_the_difference_is_listed(key, figure, book, vendor):
    assert _figure(Context(chip=key).get_chip(), figure) == book
    assert _figure(Context(chip=key, conventions=parse(["datasheet"])).get_chip(), figure) == vendor
    assert get_chip(key).datasheet_differences()[figure] == (book, vendor)


@pytest.mark.parametrize("key, figure", [
    ("a100", "flops_per_s.fp32"), ("a100", "nvlink_bytes_per_s"), ("tpu-v6e", "flops_per_s.int4"),
    ("tpu7x", "ici_link_bytes_per_s"), ("tpu7x", "flops_per_s.int8"), ("tpu-v3", "flops_per_s.int8"),
    ("v100", "flops_per_s.fp16"), ("gb200", "flops_per_s.bf16"), ("h800", "nvlink_bytes_per_s"),
], ids=["A100 fp32 (published, equal)", "A100 NVLink (published, equal)", "v6e int4 (unpublished)",
        "TPU7x ICI link (no port count)", "TPU7x int8 (unpublished)", "v3 int8 (unpublished)",
        "V100 (no datasheet table)", "GB200 (no datasheet table)", "H800 (no datasheet table)"])
def test_a_figure_the_datasheet_does_not_change_stays_the_books(key, figure):
    book = get_chip(key)
    assert _figure(book.under("datasheet"), figure) == _figure(book, figure)
    assert figure not in book.datasheet_differences()


def _derive(*args):
    result = CliRunner().invoke(main, ["derive", "roofline.critical_intensity", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("convention, chip, expected", [
    ([], "a100", Fraction(310 * T, 2 * T)),                           # the book's worked 155
    (["--convention", "hardware=datasheet"], "a100", Fraction(312 * T, 2039 * G)),
    (["--convention", "datasheet"], "a100", Fraction(312 * T, 2039 * G)),
    (["--convention", "palm"], "tpu-v5p", Fraction(459 * T, 2765 * G)),
    (["--convention", "hardware=datasheet"], "tpu-v6e", Fraction(918 * T, 1638 * G)),
    (["--convention", "hardware=datasheet"], "h100", Fraction(1979 * T, 2 * 3350 * G)),
    (["--convention", "hardware=datasheet", "--dtype", "fp16"], "v100", Fraction(125 * T, 900 * G)),  # no table
], ids=["a100 book", "a100 datasheet", "a100 datasheet profile", "v5p palm profile", "v6e datasheet",
        "h100 datasheet", "v100 datasheet (equal)"])
def test_derive_takes_the_figures_the_convention_chooses(convention, chip, expected):
    data = json.loads(_derive("--chip", chip, "--format", "json", *convention))
    assert Fraction(data["exact"]) == expected
    assert data["conventions"]["hardware"] == ("datasheet" if convention else "book")


def test_derive_text_names_the_datasheet_convention():
    out = _derive("--chip", "a100", "--convention", "hardware=datasheet")
    assert "conventions: hardware figures: datasheet" in out and "312000/2039" in out


# -- hardware show / list -----------------------------------------------------------------------------------------


def _cli(*args, code=0):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == code, result.output
    return result.output


def test_show_prints_both_figures_with_the_source():
    out = _cli("hardware", "show", "a100")
    assert "book 310 TFLOP/s  datasheet 312 TFLOP/s" in out
    assert "book 2 TB/s  datasheet 2.039 TB/s" in out
    assert A100 in out and "every other figure stays the book's" in out
    data = json.loads(_cli("hardware", "show", "tpu-v5p", "--format", "json"))
    assert data["hbm_bytes_per_s"] == 2_800_000_000_000  # the chip's own figures stay the book's
    assert data["datasheet"]["differences"]["hbm_bytes_per_s"] == {"book": 2_800_000_000_000,
                                                                   "datasheet": 2_765_000_000_000}
    assert V5P in data["datasheet"]["source"]
    assert "datasheet" not in json.loads(_cli("hardware", "show", "v100", "--format", "json"))
    assert "datasheet (" not in _cli("hardware", "show", "v100")


def test_list_marks_the_chips_whose_figures_differ():
    marks = {line.split()[0]: line.split()[-1] for line in _cli("hardware", "list").splitlines()[1:15]}
    assert marks["a100"] == "d" and marks["tpu-v5p"] == "d" and marks["v100"] != "d" and marks["h800"] == "*"
    assert "d the vendor's datasheet prints figures" in _cli("hardware", "list")
    listed = {c["key"]: c for c in json.loads(_cli("hardware", "list", "--format", "json"))}
    assert listed["a100"]["datasheet"]["figures"]["hbm_bytes_per_s"] == 2_039_000_000_000


# -- a user's file ------------------------------------------------------------------------------------------------

_MINE = """
[chips.mine]
name = "Mine"
family = "gpu"
source = "my notes"
flops_per_s = { bf16 = 100_000_000_000_000 }
hbm_bytes = 10_000_000_000
hbm_bytes_per_s = 1_000_000_000_000
"""


def test_a_users_file_may_carry_a_datasheet_table(tmp_path):
    path = tmp_path / "hw.toml"
    path.write_text(_MINE + '[chips.mine.datasheet]\nsource = "https://example.com/mine"\n'
                    "flops_per_s = { bf16 = 120_000_000_000_000 }\n", encoding="utf-8")
    assert load_catalog(path)["mine"].under("datasheet").flops("bf16") == 120 * T
    out = _cli("hardware", "show", "mine", "--hardware-file", str(path))
    assert "book 100 TFLOP/s  datasheet 120 TFLOP/s" in out and "https://example.com/mine" in out
    data = json.loads(_derive("--chip", "mine", "--hardware-file", str(path), "--format", "json",
                              "--convention", "hardware=datasheet"))
    assert Fraction(data["exact"]) == Fraction(120 * T, 1 * T)


@pytest.mark.parametrize("table, message", [
    ('[chips.mine.datasheet]\nflops_per_s = { bf16 = 1 }\n',
     r"chip 'mine', \[chips.mine.datasheet\] lacks required key source"),
    ('[chips.mine.datasheet]\nsource = "x"\nhbm_byts = 1\n',
     r"chip 'mine', \[chips.mine.datasheet\] has unknown key 'hbm_byts'"),
    ('[chips.mine.datasheet]\nsource = "x"\nhbm_bytes_per_s = -5\n',
     r"chip 'mine', key 'datasheet.hbm_bytes_per_s' = -5 must be a whole number from 1 to 10\^16 bytes/s"),
    ('[chips.mine.datasheet]\nsource = "x"\nflops_per_s = { bf17 = 1 }\n',
     r"chip 'mine', key 'datasheet.flops_per_s' = \{'bf17': 1\} must be a known dtype"),
    ('[chips.mine.datasheet]\nsource = "x"\nname = "Other"\n',
     r"chip 'mine', \[chips.mine.datasheet\] has unknown key 'name'"),
    ('[chips.mine.datasheet]\nsource = "x"\n', r"chip 'mine', \[chips.mine.datasheet\] gives no figure"),
    ('', None),
], ids=["no source", "unknown key", "negative figure", "unknown dtype", "a name is no figure", "no figure",
        "not a table"])
def test_a_bad_datasheet_table_names_file_chip_and_key(tmp_path, table, message):
    path = tmp_path / "bad.toml"
    text = _MINE + table if table else _MINE.replace('source = "my notes"', 'source = "my notes"\ndatasheet = 3')
    path.write_text(text, encoding="utf-8")
    message = message or r"chip 'mine', key 'datasheet' must be a table \(\[chips.mine.datasheet\]\)"
    with pytest.raises(CatalogError, match=message) as caught:
        load_catalog(path)
    assert "bad.toml" in str(caught.value)
    # a malformed catalog file exits as every catalog error does (tests/test_hostile_values.py: code 1)
    out = _cli("hardware", "show", "mine", "--hardware-file", str(path), code=CatalogError.exit_code)
    assert "bad.toml" in out and "Traceback" not in out
