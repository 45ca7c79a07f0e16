"""``scalemath hlo``'s memory per device: the entry computation's parameters and outputs against the chip's HBM.

Three routes to every figure: hand counts in the comments (the corpus modules' ENTRY shapes, element by element),
a second reading of the same text that shares no code with :mod:`scalemath.xla.memory` (the ENTRY line's
signature, with the element sizes of XLA's primitive types), and XLA itself: jax compiles small functions on
simulated CPU devices and ``compiled.memory_analysis()`` gives its own argument, output and alias sizes (skipped
without jax).
"""

import json
import re
import struct
from fractions import Fraction
from math import prod
from pathlib import Path

import pytest
from click.testing import CliRunner

from scalemath.catalog import hardware
from scalemath.cli import main
from scalemath.xla import analysis
from scalemath.xla.memory import held
from scalemath.xla.parse import parse_module

CORPUS = Path(__file__).resolve().parent.parent / "scalemath" / "xla" / "corpus"

# Bytes per element of the types in these modules, from XLA's xla_data.proto (F32 is 32 bits, BF16 16): the
# second route's own figures, not the project's table.
ELEMENT_BYTES = {"f32": 4, "bf16": 2}


def _signature_bytes(text: str) -> tuple[int, int, int]:
    """Second route: parameters, parameter bytes and result bytes from the ENTRY line's signature alone
    (``ENTRY %main (param: f32[256,128], param.1: f32[512,1024]) -> f32[256,1024] {``); no tiling padding."""
    line = next(x for x in text.splitlines() if x.startswith("ENTRY"))
    params, result = line.split(") -> ", 1)
    size = lambda part: [ELEMENT_BYTES[t] * prod(int(d) for d in dims.split(",") if d)
                         for t, dims in re.findall(r"(\w+)\[([\d,]*)\]", part)]
    return len(size(params)), sum(size(params)), sum(size(result))


def _held(text: str):
    return held(parse_module(text), text)


# --------------------------------------------------------------------------------------------
# The corpus: per-device shapes of SPMD-partitioned modules, counted by hand
# --------------------------------------------------------------------------------------------

CORPUS_ROWS = [
    # f32[64,512] + f32[512,512] = 32768*4 + 262144*4 = 131072 + 1048576 B; result f32[64,512] = 131072 B
    pytest.param("case1-no-comms-x4y2", 2, 131_072 + 1_048_576, 131_072, id="case1-no-comms-x4y2"),
    # f32[256,128] + f32[512,1024] = 32768*4 + 524288*4 = 131072 + 2097152 B; result f32[256,1024] = 1048576 B
    pytest.param("case2-gather-A-x4y2", 2, 131_072 + 2_097_152, 1_048_576, id="case2-gather-A-x4y2"),
    # f32[256,128] + f32[128,1024] = 131072 + 131072*4 = 131072 + 524288 B; result f32[256,256] = 65536*4 = 262144 B
    pytest.param("case3-reducescatter-x4y2", 2, 131_072 + 524_288, 262_144, id="case3-reducescatter-x4y2"),
    # one f32[128,512] = 65536*4 = 262144 B in, the same shape out (a permute moves blocks, not sizes)
    pytest.param("reshard-permute-x2y2", 1, 262_144, 262_144, id="reshard-permute-x2y2"),
    # TPU: bf16[256,128] + bf16[512,1024] with tiles T(8,128)(2,1); every dimension is a multiple of its tile
    # (256 and 512 of 8, 128 and 1024 of 128), so no padding: 32768*2 + 524288*2 = 65536 + 1048576 B; the
    # parameters are listed out of order (param.1 first); result bf16[256,1024] = 262144*2 = 524288 B
    pytest.param("tpu-case2-gather-A-x4y2", 2, 65_536 + 1_048_576, 524_288, id="tpu-case2-gather-A-x4y2"),
    # TPU: bf16[64,512] = 32768*2 = 65536 B in; bf16[256,128] = 65536 B out
    pytest.param("tpu-reshard-alltoall-x4y2", 1, 65_536, 65_536, id="tpu-reshard-alltoall-x4y2"),
]


@pytest.mark.parametrize("name, count, param_bytes, out_bytes", CORPUS_ROWS)
def test_corpus_parameters_and_outputs(name, count, param_bytes, out_bytes):
    text = (CORPUS / f"{name}.hlo.txt").read_text()
    h = _held(text)
    assert (h.parameters, h.parameter_bytes, h.output_bytes) == (count, param_bytes, out_bytes)
    assert _signature_bytes(text) == (count, param_bytes, out_bytes)
    assert (h.aliased_bytes, h.aliases, h.elsewhere_bytes) == (0, (), 0)  # none of them donates an input
    assert h.needed == param_bytes + out_bytes


# --------------------------------------------------------------------------------------------
# Hand-written modules: padding, aliasing, other memory spaces, tuples
# --------------------------------------------------------------------------------------------

def _entry(header: str, *lines: str) -> str:
    body = "\n".join("  " + line for line in lines)
    return f"HloModule m{header}\n\nENTRY %main {{\n{body}\n}}\n"


HAND = [
    # f32[3,5] tiled T(2,2) is stored as [4,6]: 24 elements * 4 = 96 B in and 96 B out (15 * 4 = 60 unpadded)
    pytest.param(_entry("", "%p = f32[3,5]{1,0:T(2,2)} parameter(0)", "ROOT %c = f32[3,5]{1,0:T(2,2)} copy(%p)"),
                 (1, 96, 96, 0, 0), id="tiling-padding-counted"),
    # output {1} lives in parameter 1's buffer: params f32[1024] + bf16[2048] = 4096 + 4096 B; result
    # (f32[], bf16[2048]) = 4 + 4096 B, of which 4096 B aliased; needed 8192 + 4100 - 4096 = 8196 B
    pytest.param(_entry(", input_output_alias={ {1}: (1, {}, must-alias) }",
                        "%p0 = f32[1024]{0} parameter(0)", "%p1 = bf16[2048]{0} parameter(1)",
                        "%s = f32[] constant(0)", "%n = bf16[2048]{0} negate(%p1)",
                        "ROOT %t = (f32[], bf16[2048]{0}) tuple(%s, %n)"),
                 (2, 8192, 4100, 4096, 0), id="tuple-output-1-aliases-parameter-1"),
    # parameter 1 in memory space S(5), the host's: f32[256] = 1024 B held apart; HBM holds f32[64] = 256 B in
    # and f32[64] = 256 B out
    pytest.param(_entry("", "%p = f32[64]{0} parameter(0)", "%h = f32[256]{0:S(5)} parameter(1)",
                        "ROOT %c = f32[64]{0} copy(%p)"),
                 (2, 256, 256, 0, 1024), id="host-memory-parameter-apart"),
    # one tuple parameter (f32[8], s32[2]) = 32 + 8 B, two arrays; the result, with no ROOT marked, is the
    # last instruction (as XLA's parser reads it): f32[8] = 32 B; a token holds no bytes and is not an array
    pytest.param(_entry("", "%t = (f32[8]{0}, s32[2]{0}) parameter(0)", "%k = token[] parameter(1)",
                        "%g = f32[8]{0} get-tuple-element(%t), index=0"),
                 (2, 40, 32, 0, 0), id="tuple-parameter-and-unmarked-root"),
    # s4[3]{0:E(4)}: 3 * 4 bits = 1.5 B, one whole buffer of 2 B in and out (XLA's own count below agrees)
    pytest.param(_entry("", "%p = s4[3]{0:E(4)} parameter(0)", "ROOT %n = s4[3]{0:E(4)} negate(%p)"),
                 (1, 2, 2, 0, 0), id="int4-rounded-up-to-whole-bytes"),
]


@pytest.mark.parametrize("text, expected", HAND)
def test_hand_modules(text, expected):
    h = _held(text)
    assert (h.parameters, h.parameter_bytes, h.output_bytes, h.aliased_bytes, h.elsewhere_bytes) == expected
    assert h.needed == expected[1] + expected[2] - expected[3]


# --------------------------------------------------------------------------------------------
# Against the chip's HBM
# --------------------------------------------------------------------------------------------

# Outside figure: Google's TPU v5e page (https://cloud.google.com/tpu/docs/v5e, key specifications) gives
# "HBM2 capacity 16 GB" per chip; the catalog keeps 16e9 B (the book's arithmetic; its prose says 16 GiB).
V5E_HBM_DATASHEET = 16 * 10**9
HUGE = _entry("", "%p = f32[65536,65536]{1,0} parameter(0)", "ROOT %c = f32[8]{0} slice(%p), slice={[0:1], [0:8]}")

HBM_ROWS = [
    # 16e9 - (2228224 + 1048576) = 15,996,723,200 B
    pytest.param("tpu-v5e", (CORPUS / "case2-gather-A-x4y2.hlo.txt").read_text(), 15_996_723_200, True,
                 id="v5e-case2-free"),
    # TPU v2's two cores are separate devices: 16e9 / 2 = 8e9 B each; 8e9 - (655360 + 262144) = 7,999,082,496 B
    pytest.param("tpu-v2", (CORPUS / "case3-reducescatter-x4y2.hlo.txt").read_text(), 7_999_082_496, True,
                 id="v2-one-core-case3-free"),
    # f32[65536,65536] = 2^32 * 4 = 17,179,869,184 B > 16e9, plus f32[8] = 32 B out: 1,179,869,216 B short
    pytest.param("tpu-v5e", HUGE, -1_179_869_216, False, id="v5e-does-not-fit"),
]


@pytest.mark.parametrize("chip_key, text, free, fits", HBM_ROWS)
def test_free_hbm(chip_key, text, free, fits):
    chip = hardware.get_chip(chip_key)
    memory = analysis.analyse(text, chip)["memory"]
    assert (memory["free_bytes"], memory["fits"]) == (free, fits)
    # second route: the catalog's raw fields in plain Fractions, the chip's HBM split over its separate cores
    cores = chip.cores_per_chip if (chip.cores_per_chip or 1) > 1 and not chip.megacore else 1
    assert memory["hbm_bytes"] == Fraction(chip.hbm_bytes, cores)
    assert free == Fraction(chip.hbm_bytes, cores) - memory["parameter_bytes"] - memory["output_bytes"]


def test_v5e_hbm_is_the_datasheet_figure():
    assert hardware.get_chip("tpu-v5e").hbm_bytes == V5E_HBM_DATASHEET


# --------------------------------------------------------------------------------------------
# XLA's own count: compiled.memory_analysis() on jax's CPU backend
# --------------------------------------------------------------------------------------------

def _compile(jax, case: str):
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    if case == "sharded":
        kwargs = {"axis_types": (jax.sharding.AxisType.Auto,) * 2} if hasattr(jax.sharding, "AxisType") else {}
        mesh = Mesh(np.array(jax.devices("cpu")[:8]).reshape(4, 2), ("X", "Y"), **kwargs)
        S = lambda *s: NamedSharding(mesh, P(*s))
        args = (jax.ShapeDtypeStruct((256, 512), jnp.float32, sharding=S("X", None)),
                jax.ShapeDtypeStruct((512, 1024), jnp.float32, sharding=S(None, "Y")))
        return jax.jit(lambda a, b: a @ b, out_shardings=S("X", "Y")).lower(*args).compile(), 1
    if case == "donated":
        return jax.jit(lambda a: a * 2, donate_argnums=0).lower(jnp.ones((128, 256), jnp.float32)).compile(), 1
    if case == "tuple-donated":
        f = lambda a, b: (a * 2, b + 1, a.sum())
        args = (jnp.ones((128, 256), jnp.float32), jnp.ones((64,), jnp.bfloat16))
        return jax.jit(f, donate_argnums=(0, 1)).lower(*args).compile(), 3
    return jax.jit(lambda a: a + a).lower(jnp.ones((3,), jnp.int4)).compile(), 1


XLA_ROWS = [
    # 8 devices, mesh X=4, Y=2: a[256,512] split on X -> f32[64,512] = 131072 B, b[512,1024] split on Y ->
    # f32[512,512] = 1048576 B; out [256,1024] on X and Y -> f32[64,512] = 131072 B
    pytest.param("sharded", (2, 131_072 + 1_048_576, 131_072, 0), id="xla-sharded-8-devices"),
    # f32[128,256] = 131072 B donated: the output reuses its buffer
    pytest.param("donated", (1, 131_072, 131_072, 131_072), id="xla-donated"),
    # f32[128,256] + bf16[64] = 131072 + 128 B in, both donated; out the same two and an f32[] (4 B)
    pytest.param("tuple-donated", (2, 131_200, 131_204, 131_200), id="xla-tuple-donated"),
    # s4[3]: 12 bits in one 2 B buffer, in and out
    pytest.param("int4", (1, 2, 2, 0), id="xla-int4"),
]


@pytest.mark.parametrize("case, expected", XLA_ROWS)
def test_against_xla_memory_analysis(case, expected, jax8):
    compiled, outputs = _compile(jax8, case)
    text = compiled.as_text()
    h = _held(text)
    xla = compiled.memory_analysis()
    assert (h.parameters, h.parameter_bytes, h.output_bytes, h.aliased_bytes) == expected
    assert h.parameter_bytes == xla.argument_size_in_bytes
    assert h.aliased_bytes == xla.alias_size_in_bytes
    # XLA's output size also counts a tuple result's own buffer: its index table, one pointer per element
    # (ShapeUtil::ByteSizeOf of a tuple shape is pointer_size * its elements; 8 B on a 64-bit host). It
    # holds addresses, not data, and is not in the HLO text's shapes; a single array has none.
    table = struct.calcsize("P") * outputs if outputs > 1 else 0
    assert h.output_bytes + table == xla.output_size_in_bytes


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------

DONATING = _entry(", input_output_alias={ {}: (0, {}, may-alias) }", "%p = f32[128,256]{1,0} parameter(0)",
                  "ROOT %y = f32[128,256]{1,0} multiply(%p, %p)")

CLI_ROWS = [
    # case2-gather-A-x4y2 (hand counts above) on tpu-v5e: 2228224 B in, 1048576 B out, 16e9 B of HBM
    pytest.param(CORPUS / "case2-gather-A-x4y2.hlo.txt", ["--chip", "tpu-v5e", "--mesh", "X=4,Y=2"],
                 ["parameters: 2 arrays, 2.228 MB (2228224 B)", "outputs: 1.049 MB (1048576 B)",
                  "HBM 16 GB: parameters and outputs need at least 3.277 MB (3276800 B); at most 16 GB "
                  "(15996723200 B) left free"], id="text-on-v5e"),
    pytest.param(CORPUS / "reshard-permute-x2y2.hlo.txt", [],
                 ["parameters: 1 array, 262.1 kB (262144 B)", "outputs: 262.1 kB (262144 B)"], id="text-no-chip"),
    # f32[128,256] = 131072 B in; the output in the same buffer; tpu-v5e: 16e9 - 131072 = 15,999,868,928 B free
    pytest.param(DONATING, ["--chip", "tpu-v5e"],
                 ["outputs: 131.1 kB (131072 B), of which 131.1 kB (131072 B) in 1 donated parameter buffer",
                  "need at least 131.1 kB (131072 B); at most 16 GB (15999868928 B) left free"], id="text-donated"),
    pytest.param(HUGE, ["--chip", "tpu-v5e"],
                 ["HBM 16 GB: does not fit: parameters and outputs alone need 17.18 GB (17179869216 B), "
                  "1.18 GB (1179869216 B) more than the HBM"], id="text-does-not-fit"),
]


def _invoke(tmp_path, source, args):
    path = source if isinstance(source, Path) else tmp_path / "m.hlo.txt"
    if not isinstance(source, Path):
        path.write_text(source)
    return CliRunner().invoke(main, ["hlo", str(path), *args])


@pytest.mark.parametrize("source, args, fragments", CLI_ROWS)
def test_cli_prints_the_block(tmp_path, source, args, fragments):
    result = _invoke(tmp_path, source, args)
    assert result.exit_code == 0, result.output
    assert "memory per device (the entry's parameters and result; temporaries not counted):" in result.output
    for fragment in fragments:
        assert fragment in result.output, fragment
    assert ("HBM" in result.output.split("memory per device", 1)[1]) == ("--chip" in args)


JSON_ROWS = [
    pytest.param(CORPUS / "case2-gather-A-x4y2.hlo.txt", ["--chip", "tpu-v5e"],
                 {"parameters": 2, "parameter_bytes": 2_228_224, "output_bytes": 1_048_576, "aliased_bytes": 0,
                  "needed_bytes": 3_276_800, "hbm_bytes": 16 * 10**9, "free_bytes": 15_996_723_200, "fits": True,
                  "aliases": []}, id="json-on-v5e"),
    pytest.param(DONATING, [],
                 {"parameters": 1, "parameter_bytes": 131_072, "output_bytes": 131_072, "aliased_bytes": 131_072,
                  "needed_bytes": 131_072, "hbm_bytes": None, "free_bytes": None, "fits": None,
                  "aliases": [{"output": [], "parameter": 0, "parameter_index": []}]}, id="json-donated-no-chip"),
]


@pytest.mark.parametrize("source, args, expected", JSON_ROWS)
def test_cli_json_carries_the_fields(tmp_path, source, args, expected):
    result = _invoke(tmp_path, source, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    memory = json.loads(result.output)["memory"]
    assert {k: memory[k] for k in expected} == expected


BAD_ALIAS = [
    # the result is one array, so it has no element {2}
    pytest.param(_entry(", input_output_alias={ {2}: (0, {}, may-alias) }", "%p = f32[8]{0} parameter(0)",
                        "ROOT %y = f32[8]{0} negate(%p)"), "names output {2}", id="alias-to-a-missing-output"),
]


@pytest.mark.parametrize("text, fragment", BAD_ALIAS)
def test_bad_alias_is_one_clear_error(tmp_path, text, fragment):
    result = _invoke(tmp_path, text, [])
    assert result.exit_code == 2 and fragment in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
