"""shardmap --chip on a GPU: each collective priced on NVLink inside a node and on the NIC across nodes.

Every time is counted by hand here from the catalog's figures (gpus.md's forms written out in plain arithmetic):
H100, 8 GPUs per NVLink node, NVLink 450 GB/s per GPU one way, one 400 Gb/s NIC (50 GB/s) per GPU; devices
numbered row-major fill the nodes in order (the last mesh axis innermost).
"""

import json

import pytest
from click.testing import CliRunner

from scalemath.cli import main

NVLINK, NIC, NODE = 450e9, 50e9, 8


def _run(mesh, ins, body, outs, chip="h100"):
    args = ["shardmap", "--mesh", mesh, "--body", body, "--chip", chip, "--format", "json"]
    for i in ins:
        args += ["--in", i]
    for o in outs:
        args += ["--out", o]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _collectives(data):
    return [c for s in data["steps"] for c in s["collectives"]]


def test_tensor_parallel_inside_a_node_and_data_parallel_across():
    # X=2 (across two nodes), Y=8 (one node); x: bf16[16, 1024] P(X, Y) holds [8, 128] bf16 = 2048 B per device
    data = _run("X=2,Y=8", ["x: bf16[16, 1024] P(X, Y)"], "s = psum(x, Y); g = all_gather(x, Y, axis=1); "
                "r = psum_scatter(x, X, scatter_dimension=0); t = psum(x, X)",
                ["s: P(X)", "g: P(X)", "r: P((X, Y))", "t: P(None, Y)"])
    assert data["networks"] == {"X": "NIC", "Y": "NVLink"}
    s, g, r, t = _collectives(data)
    v = 8 * 128 * 2
    # AllReduce in a node of 8: ReduceScatter + AllGather, each V (N - 1) / (N W_nvlink)
    assert s["bytes"] == v and s["time"] == pytest.approx(2 * v * 7 / (8 * NVLINK))
    # AllGather over Y: V is the gathered array, 8 blocks
    assert g["bytes"] == 8 * v and g["time"] == pytest.approx(8 * v * 7 / (8 * NVLINK))
    # across 2 nodes, one GPU of each group per node: max(V / W_nvlink, V / (1 x W_nic))
    assert r["bytes"] == v and r["time"] == pytest.approx(max(v / NVLINK, v / NIC))
    assert t["time"] == pytest.approx(2 * max(v / NVLINK, v / NIC))
    assert "groups span 2 nodes, 1 GPU(s) in each" in r["how"]
    assert data["collective_time"] == pytest.approx(sum(c["time"] for c in (s, g, r, t)))


def test_a_group_spanning_two_whole_nodes_uses_both_nodes_nics():
    # X=2, Y=8 and a collective over (X, Y): 16 GPUs, 8 in each node, so W_node = 8 NICs = 400 GB/s
    data = _run("X=2,Y=8", ["x: f32[16, 4] P((X, Y))"], "g = all_gather(x, (X, Y), axis=0)", ["g: P()"])
    (g,) = _collectives(data)
    v = 16 * 4 * 4  # the gathered f32[16, 4]
    assert g["bytes"] == v and g["time"] == pytest.approx(max(v / NVLINK, v / (8 * NIC)))
    assert "8 GPU(s) in each" in g["how"]


def test_all_to_all_and_permutes():
    # X=4, Y=4 on 8-GPU nodes: Y spans 4 GPUs (inside a node); X with Y inside it spans 16 (across nodes)
    data = _run("X=4,Y=4", ["x: f32[16, 16] P(X, Y)"],
                "a = all_to_all(x, Y, 0, 1); b = all_to_all(x, X, 0, 1); p = ppermute(x, Y, perm=[(0, 1)]); "
                "q = ppermute(x, X, perm=[(0, 1)]); u = ppermute(x, X, perm=[(1, 2)])",
                ["a: P(X, Y)", "b: P(X, Y)", "p: P(X, Y)", "q: P(X, Y)", "u: P(X, Y)"])
    assert data["networks"] == {"X": "NIC", "Y": "NVLink"}
    a, b, p, q, u = _collectives(data)
    block = 4 * 4 * 4  # each device's f32[4, 4]
    # AllToAll in a node of N = 4: V = N blocks, each GPU sends N - 1 pieces of V / N^2: V (N - 1) / (N^2 W)
    assert a["bytes"] == 4 * block and a["time"] == pytest.approx(4 * block * 3 / (16 * NVLINK))
    # over X: devices 0, 4, 8, 12 are on nodes 0, 0, 1, 1: 2 nodes, 2 GPUs of the group in each
    assert "groups span 2 nodes, 2 GPU(s) in each" in b["how"]
    assert b["time"] == pytest.approx(4 * block * (2 - 1) / (2 ** 2 * 2 * NIC))
    # a permute inside a node: straight through the NVLink switch
    assert p["time"] == pytest.approx(block / NVLINK)
    # X position 0 -> 1 is device 0 -> 4 (same node); 1 -> 2 is device 4 -> 8 (the next node)
    assert q["time"] == pytest.approx(block / NVLINK)
    assert u["time"] == pytest.approx(block / NIC) and "crosses nodes" in u["how"]


def test_text_names_each_axis_network():
    result = CliRunner().invoke(main, ["shardmap", "--mesh", "X=2,Y=8", "--in", "x: f32[16] P((X, Y))", "--body",
                                       "s = psum(x, X)", "--out", "s: P(Y)", "--chip", "h100"])
    assert result.exit_code == 0, result.output
    assert "networks: X over the NIC (50 GB/s per GPU), Y over NVLink (450 GB/s per GPU)" in result.output
    assert "8-GPU NVLink nodes in row-major order" in result.output


@pytest.mark.parametrize("chip", ["a100", "b200", "v100"])
def test_every_gpu_in_the_catalog_prices(chip):
    data = _run("X=2,Y=4", ["x: f32[8] P((X, Y))"], "s = psum(x, (X, Y)); p = ppermute(x, Y, shift=1)",
                ["s: P(None)", "p: P((X, Y))"], chip=chip)
    assert all(c["time"] > 0 for c in _collectives(data))
