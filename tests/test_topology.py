"""Around the GPU: the NVLink node, the scale-out fat tree and clusters (symbolic/topology.py), bound from the
catalog's chips and switches. Figures the book prints cite gpus.md; others are arithmetic on the catalog
([D]) or NVIDIA's SuperPod designs the book describes (2048 GPUs in 8 SUs with 32 spines; 4096 GPUs with 128
spine and 64 core switches).
"""

from __future__ import annotations

import pytest
import sympy as sp

from scalemath.errors import BadValueError, CatalogError, UnknownNameError
from scalemath.catalog.hardware import default_catalog, load_catalog
from scalemath.quantities import Context, evaluate, get

R = sp.Rational
TB = 10**12


def value(quantity, chip, **given):
    return evaluate(get(quantity), Context(chip=chip), given).value


# (quantity, chip, given, exact value)
NODE = [
    # gpus.md 'At the node level': 18 x 25 GB/s = 450 GB/s; Blackwell 18 x 50 = 900
    ("gpu.nvlink.egress", "h100", {}, 450 * 10**9),
    ("gpu.nvlink.egress", "b200", {}, 900 * 10**9),
    ("gpu.nvlink.egress", "a100", {}, 300 * 10**9),
    ("gpu.nvlink.egress", "h800", {}, 200 * 10**9),  # DeepSeek's 8 links; the catalog's W_gpu keeps the book's 300
    ("gpu.node.gpu_links", "h100", {}, 144),  # 8 x (5 + 4 + 4 + 5)
    ("gpu.node.switch_ports", "h100", {}, 256),  # 4 x 64
    ("gpu.node.switch_ports", "gb200", {}, 1296),  # 18 x 72 = 72 x 18 links: every port used
    # Quiz 2 Q1: min(4 x 64 x 25e9 = 6.4 TB/s, 8 x 450e9 = 3.6 TB/s)
    ("gpu.node.switch_capacity", "h100", {}, R(64, 10) * TB),
    ("gpu.node.gpu_capacity", "h100", {}, R(36, 10) * TB),
    ("gpu.node.capacity", "h100", {}, R(36, 10) * TB),
    ("gpu.node.capacity", "b200", {}, R(72, 10) * TB),  # [D] 2 x 72 x 50e9 = 8 x 900e9
    ("gpu.node.capacity", "gb200", {}, R(648, 10) * TB),  # [D] 72 x 900e9
    # Quiz 2 Q2: bisection 3.6 TB/s counting both directions
    ("gpu.node.bisection", "h100", {}, R(36, 10) * TB),
    # node egress: 400 GB/s (H100, B200), GB200 NVL72 4 x 18 x 400 Gb/s = 3.6 TB/s
    ("gpu.node.egress", "h100", {}, 400 * 10**9),
    ("gpu.node.egress", "b200", {}, 400 * 10**9),
    ("gpu.node.egress", "gb200", {}, R(36, 10) * TB),
    ("gpu.node.egress", "a100", {}, 200 * 10**9),
    ("gpu.switch.capacity", "h100", {}, R(32, 10) * TB),  # 64 x 50 GB/s, twice an NVSwitch
]

SIZING = [
    # gpus.md 'Beyond the node level': 1024 H100 = 128 nodes in 4 SUs of 32, 8 leaves each, 16 spines,
    # 512 + 32 + 16 = 560 switches; Quiz 3: 2 cables per leaf-spine pair
    ("gpu.cluster.nodes", "h100", {"n_dev": 1024}, 128),
    ("gpu.cluster.units", "h100", {"n_dev": 1024}, 4),
    ("gpu.su.gpus", "h100", {}, 256),
    ("gpu.su.leaf_switches", "h100", {}, 8),
    ("gpu.cluster.leaf_switches", "h100", {"n_dev": 1024}, 32),
    ("gpu.cluster.spine_switches", "h100", {"n_dev": 1024}, 16),
    ("gpu.cluster.cables_per_leaf_spine", "h100", {"n_dev": 1024}, 2),
    ("gpu.cluster.switches", "h100", {"n_dev": 1024}, 560),
    # Quiz 3 Q2: 2048 GPUs: 8 SUs, 32 spines, one cable per pair
    ("gpu.cluster.units", "h100", {"n_dev": 2048}, 8),
    ("gpu.cluster.spine_switches", "h100", {"n_dev": 2048}, 32),
    ("gpu.cluster.cables_per_leaf_spine", "h100", {"n_dev": 2048}, 1),
    # ... 4096 GPUs: two levels no longer reach every spine (0 cables): NVIDIA's 128 spine + 64 core switches
    ("gpu.cluster.cables_per_leaf_spine", "h100", {"n_dev": 4096}, 0),
    ("gpu.cluster.max_gpus_two_level", "h100", {}, 2048),
    ("gpu.cluster.spine_switches_three_level", "h100", {"n_dev": 4096}, 128),
    ("gpu.cluster.core_switches_three_level", "h100", {"n_dev": 4096}, 64),
    # a partial SU still needs its leaves: 1000 GPUs = 125 nodes, 4 SUs (rounded up)
    ("gpu.cluster.nodes", "h100", {"n_dev": 1000}, 125),
    ("gpu.cluster.units", "h100", {"n_dev": 1000}, 4),
    # B200 DGX SuperPod, 1024 GPUs: 2 NVSwitches per node: 256 + 32 + 16 [D]
    ("gpu.cluster.switches", "b200", {"n_dev": 1024}, 304),
    # GB200 NVL72: 576 GPUs = 8 racks = one SU of 8 nodes; 576 / 32 = 18 leaves, 9 spines [D]
    ("cluster.racks", "gb200", {"n_dev": 576}, 8),
    ("gpu.cluster.nodes", "gb200", {"n_dev": 576}, 8),
    ("gpu.su.gpus", "gb200", {}, 576),
    ("gpu.su.leaf_switches", "gb200", {}, 18),
    ("gpu.cluster.spine_switches", "gb200", {"n_dev": 576}, 9),
    ("gpu.cluster.cables_per_leaf_spine", "gb200", {"n_dev": 576}, 3),
    ("gpu.cluster.switches", "gb200", {"n_dev": 576}, 8 * 18 + 18 + 9),
    # TPU racks are 4x4x4 cubes: a full v5p pod is 140 of them [D]
    ("cluster.racks", "tpu-v5p", {"n_dev": 8960}, 140),
    # A100 on 40-port HDR switches [D]: 40 leaves x 20 GPUs = 800 at most on two levels
    ("gpu.cluster.max_gpus_two_level", "a100", {}, 800),
]

CAPACITY = [
    # Quiz 3 Q1 and the SuperPod table: 12.8 TB/s per SU (nodes and uplinks), 25.6 TB/s of leaf switches,
    # 51.2 TB/s of spine, 400 GB/s per node at every level
    ("gpu.su.node_capacity", "h100", {}, R(128, 10) * TB),
    ("gpu.su.leaf_capacity", "h100", {}, R(256, 10) * TB),
    ("gpu.su.uplink", "h100", {}, R(128, 10) * TB),
    ("gpu.cluster.spine_capacity", "h100", {"n_dev": 1024}, R(512, 10) * TB),
    ("gpu.cluster.spine_capacity_per_node", "h100", {"n_dev": 1024}, 400 * 10**9),
]

DP = [
    # gpus.md Examples: LLaMA-3 (8 TP x 16 PP = 128 GPUs per replica, 16 nodes) cuts the DP cost 16x;
    # DeepSeek-V3's 2-way DP doubles the bandwidth; Quiz 5: 8 TP x 8 PP spans 8 nodes: 3.2 TB/s
    ("gpu.dp.effective_bandwidth", "h100", {"X": 128, "Y": 128}, 16 * 400 * 10**9 * R(128, 127)),
    ("gpu.dp.effective_bandwidth", "h100", {"X": 2, "Y": 8}, 800 * 10**9),
    ("gpu.dp.effective_bandwidth", "h100", {"X": 512, "Y": 64}, R(32, 10) * TB * R(512, 511)),
    # SHARP (Quiz 4 Q2): V bytes leave each GPU, against 2V(N - 1)/N on a ring
    ("gpu.sharp.bytes_per_gpu", "h100", {"V": 8, "N": 8}, 8),
    ("gpu.sharp.switch_bytes", "h100", {"V": 8, "N": 8}, 64),
    ("gpu.sharp.sharded_time", "h100", {"V": 450 * 10**9, "N": 8, "Y": 8}, R(1, 8)),
]

ROWS = NODE + SIZING + CAPACITY + DP


@pytest.mark.parametrize("quantity, chip, given, expected", ROWS,
                         ids=[f"{q}-{c}{'-' + '-'.join(f'{k}{v}' for k, v in g.items()) if g else ''}"
                              for q, c, g, _ in ROWS])
def test_value(quantity, chip, given, expected):
    assert value(quantity, chip, **given) == sp.nsimplify(expected)


@pytest.mark.parametrize("n_su", [1, 2, 4, 8])
def test_two_level_tree_keeps_full_bisection(n_su):
    # 'Beyond the node level': every level preserves 400 GB/s per node while two levels suffice
    n_dev = 256 * n_su
    assert value("gpu.cluster.spine_capacity_per_node", "h100", n_dev=n_dev) == 400 * 10**9
    assert value("gpu.cluster.cables_per_leaf_spine", "h100", n_dev=n_dev) >= 1


def test_whole_counts_keep_the_exact_value_as_a_step():
    ev = evaluate(get("gpu.cluster.nodes"), Context(chip="h100"), {"n_dev": 1000})
    assert [s.value for s in ev.steps] == [125, 125]
    ev = evaluate(get("cluster.racks"), Context(chip="gb200"), {"n_dev": 100})
    assert [s.value for s in ev.steps] == [R(100, 72), 2]


MISSING = [
    ("gpu.node.switch_capacity", "a100", "a100 has no nvlink_switch"),
    ("gpu.node.switch_ports", "v100", "v100 has no n"),  # no NVSwitch in a DGX-1 (nvswitches missing first)
    ("gpu.su.gpus", "h200", "h200 has no su_nodes"),
    ("cluster.racks", "h100", "h100 has no rack_chips"),
    ("gpu.node.egress", "tpu-v5e", "tpu-v5e has no nvlink_domain"),
]


@pytest.mark.parametrize("quantity, chip, fragment", MISSING, ids=[f"{q}-{c}" for q, c, _ in MISSING])
def test_missing_catalog_value_names_chip_and_field(quantity, chip, fragment):
    given = {"n_dev": 64} if "n_dev" in {p.name for p in get(quantity).params} else {}
    with pytest.raises(BadValueError, match=fragment):
        value(quantity, chip, **given)


def test_switch_lookup_did_you_mean():
    with pytest.raises(UnknownNameError, match="ib-ndr"):
        default_catalog().switch("ib-nd")


SWITCH_HEADER = """
[chips.x1]
name = "X1"
family = "gpu"
source = "mine"
flops_per_s = { bf16 = 100 }
hbm_bytes = 10
hbm_bytes_per_s = 10
"""

# (catalog text after the chip, message fragment)
BAD_SWITCHES = [
    ('scaleout_switch = "ib-zzz"\n', "names no [switches.ib-zzz] table"),
    ('scaleout_switch = "bad name!"\n', "the key of a [switches.NAME] table"),
    ('\n[switches.s1]\nname = "S"\nkind = "infiniband"\nsource = "x"\nports = 64\n', "lacks required key(s) "
     "port_bytes_per_s"),
    ('\n[switches.s1]\nname = "S"\nkind = "token-ring"\nsource = "x"\nports = 64\nport_bytes_per_s = 1\n',
     "one of nvswitch, infiniband, ethernet"),
    ('\n[switches.s1]\nname = "S"\nkind = "ethernet"\nsource = "x"\nports = 0\nport_bytes_per_s = 1\n',
     "a whole number from 1 to 10^9"),
    ('\n[switches.s1]\nname = "S"\nkind = "ethernet"\nsource = "x"\nports = 2\nport_bytes_per_s = 1\nspeed = 3\n',
     "unknown key 'speed'"),
]


@pytest.mark.parametrize("extra, fragment", BAD_SWITCHES, ids=["unknown-switch", "bad-key", "missing-key",
                                                                "bad-kind", "zero-ports", "unknown-field"])
def test_bad_switch_tables(tmp_path, extra, fragment):
    path = tmp_path / "hw.toml"
    path.write_text(SWITCH_HEADER + extra, encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert fragment in str(info.value) and str(path) in str(info.value)


def test_user_catalog_with_a_switch(tmp_path):
    path = tmp_path / "hw.toml"
    path.write_text(SWITCH_HEADER + 'nvlink_domain = 4\nnic_bytes_per_s = 5\nscaleout_switch = "s1"\nsu_nodes = 2\n'
                    '\n[switches.s1]\nname = "S"\nkind = "ethernet"\nsource = "x"\nports = 8\nport_bytes_per_s = 5\n',
                    encoding="utf-8")
    catalog = load_catalog(path)
    ctx = Context(chip="x1", catalog=catalog)
    assert evaluate(get("gpu.su.leaf_switches"), ctx).value == 2  # 2 nodes x 4 GPUs over 4 down-ports
    assert evaluate(get("gpu.switch.capacity"), ctx).value == 40


# -- one binder per hardware symbol, for every quantity ---------------------------------------------------------

# (quantity, chip, symbol, catalog value): NVLink per link (H100 NVLink 4: 25 GB/s each way, 18 links = 450 GB/s;
# B200 NVLink 5: 50 GB/s) is W_nvl, a TPU's ICI link (v5p 90 GB/s, v5e 45 GB/s each way) is W_link
LINK_BINDINGS = [
    ("gpu.nvlink.egress", "h100", "W_nvl", 25 * 10**9),
    ("gpu.node.switch_capacity", "b200", "W_nvl", 50 * 10**9),
    ("tpu.ici.egress", "tpu-v5p", "W_link", 90 * 10**9),
    ("collective.all_gather.time_no_wraparound", "tpu-v5e", "W_link", 45 * 10**9),
]


@pytest.mark.parametrize("quantity, chip, name, expected", LINK_BINDINGS, ids=[f"{q}-{c}" for q, c, _, _ in LINK_BINDINGS])
def test_link_symbols_bind_from_the_chip(quantity, chip, name, expected):
    from scalemath.quantities import bind
    from scalemath.symbolic.symbols import sym

    values = bind(get(quantity), Context(chip=chip))
    assert values[sym(name)] == expected


def test_nvlink_and_ici_links_are_different_symbols():
    names = {p.name for p in get("gpu.nvlink.egress").params}
    assert "W_nvl" in names and "W_link" not in names
    assert "W_link" in {p.name for p in get("tpu.ici.egress").params}
    # a GPU has no ICI link: the TPU symbol is refused by name instead of taking the NVLink's bandwidth
    with pytest.raises(BadValueError, match="h100 has no ici-link bandwidth"):
        value("tpu.ici.egress", "h100")


def test_every_hardware_symbol_has_one_shared_binder():
    from scalemath import quantities

    assert set(quantities.HARDWARE_BINDERS) <= set(quantities.DEFAULT_BINDERS)
    for name, binder in quantities.HARDWARE_BINDERS.items():
        assert quantities.DEFAULT_BINDERS[name] is binder
    # the hardware quantities are plain registry entries: no class of their own binds differently
    assert type(get("gpu.node.capacity")) is quantities.Quantity
    # the fat tree's leaf fan-in comes from the chip's scalable unit (32 DGX H100 nodes) as everywhere else
    assert evaluate(get("gpu.fat_tree.bandwidth"), Context(chip="h100")).value == \
        evaluate(get("gpu.fat_tree.bandwidth"), Context(chip="h100"), {"D_leaf": 32}).value
