"""scalemath compare: the ratio of one quantity on two chips, or of two quantities of one unit, exactly."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from scalemath.cli import main


def run(*args):
    return CliRunner().invoke(main, ["compare", *args])


@pytest.mark.parametrize("args,exact", [
    # NVLink 900 against 450 GB/s per GPU: a B200 AllGather takes half an H100's (gpus.md, spec tables)
    (["gpu.all_gather.time", "--chip", "b200", "--vs", "h100", "--set", "V=1e9,N=8"], "1/2"),
    # critical intensities: B200 2.25e15/8e12 = 281.25 against H100 990e12/3.35e12 = 295.5
    (["roofline.critical_intensity", "--chip", "b200", "--vs", "h100"], "335/352"),
    # a TPU AllToAll on a v5e ring (V/(4 W_ici) with W_ici 90 GB/s) against an H100 node's (V(N-1)/(N^2 W_gpu))
    (["collective.all_to_all.time", "gpu.all_to_all.time", "--chip", "tpu-v5e", "--vs", "h100", "--set",
      "V=1e9,N=8"], "80/7"),
], ids=["chips", "intensity", "two-quantities"])
def test_ratios(args, exact):
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ratio"]["exact"] == exact
    assert data["ratio"]["value"] == pytest.approx(data["first"]["value"] / data["second"]["value"], rel=1e-12)


def test_text_says_which_is_faster():
    result = run("gpu.all_gather.time", "--chip", "b200", "--vs", "h100", "--set", "V=1e9,N=8")
    assert result.exit_code == 0 and "b200 takes 0.5 of the time: 2x faster than h100" in result.output


@pytest.mark.parametrize("args,fragment", [
    (["gpu.all_gather.time", "--chip", "h100", "--set", "V=1e9,N=8"], "give a second chip with --vs"),
    (["gpu.all_gather.time", "roofline.critical_intensity", "--chip", "h100", "--set", "V=1e9,N=8"],
     "only numbers of the same kind"),
    (["gpu.all_gather.time", "--chip", "h100", "--vs", "b200"], "give them with --set"),
    (["gpu.all_gather.time", "--chip", "h100", "--vs", "b200", "--set", "Q=1"], "unknown parameter"),
    (["gpu.all_gather.time", "--chip", "h100,b200", "--vs", "b200", "--set", "V=1,N=8"], "compare takes one chip"),
    (["gpu.all_gather.time", "--chip", "h100", "--vs", "h1000", "--set", "V=1,N=8"], "did you mean"),
], ids=["no-second-side", "units-differ", "symbols-left", "unknown-parameter", "chip-list", "chip-typo"])
def test_bad_input(args, fragment):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output
