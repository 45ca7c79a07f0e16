"""``scalemath hlo``: HLO text read op by op, against hand counts, the book and the engine.

Hand-written modules (CPU and TPU dialect) carry their expected numbers, counted by hand in the
comments; real compilations (jax on 8 simulated CPU devices, skipped without jax) are held against
the engine's plans for the same shardings.
"""

import json
import re
from fractions import Fraction

import pytest
from click.testing import CliRunner

from scalemath.catalog import hardware
from scalemath.xla import analysis as hlo
from scalemath.cli import main
from scalemath.xla.shapes import arrays

MESH = {"X": 4, "Y": 2}  # device id = 2x + y, as jax's Mesh(devices.reshape(4, 2)) lays them out


def _module(*entry, extra="", partitions=8):
    body = "\n".join("  " + line for line in entry)
    return (f"HloModule m, num_partitions={partitions}\n\n{extra}\n"
            f"ENTRY %main (p: f32[1]) -> f32[1] {{\n{body}\n}}\n")


ADD = "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n" \
      "  ROOT %s = f32[] add(%a, %b)\n}\n"


# --------------------------------------------------------------------------------------------
# Collectives: kind, V, axes from the three spellings of replica_groups, async pairs
# --------------------------------------------------------------------------------------------

COLLECTIVES = [
    # explicit groups {0,2,4,6},{1,3,5,7}: devices that differ in x only -> X, 4-way.
    # AllGather V = result = 256*512*4 B = 524,288 B
    pytest.param(_module("%p = f32[256,128]{1,0} parameter(0)",
                         "ROOT %ag = f32[256,512]{1,0} all-gather(%p), replica_groups={{0,2,4,6},{1,3,5,7}}, "
                         "dimensions={1}"),
                 MESH, [("AllGather", 524_288, ["X"], 4)], id="explicit-groups-X"),
    # iota [4,2]<=[8]: rows {0,1},{2,3},{4,5},{6,7}: y varies -> Y, 2-way. AllReduce V = operand = 64*4 = 256 B
    pytest.param(_module("%p = f32[64]{0} parameter(0)",
                         "ROOT %ar = f32[64]{0} all-reduce(%p), replica_groups=[4,2]<=[8], to_apply=%add",
                         extra=ADD),
                 MESH, [("AllReduce", 256, ["Y"], 2)], id="iota-Y"),
    # iota [2,4]<=[4,2]T(1,0): iota(8) as 4x2, transposed: {0,2,4,6},{1,3,5,7} -> X
    pytest.param(_module("%p = bf16[16,8]{1,0} parameter(0)",
                         "ROOT %ag = bf16[64,8]{1,0} all-gather(%p), replica_groups=[2,4]<=[4,2]T(1,0), "
                         "dimensions={0}"),
                 MESH, [("AllGather", 64 * 8 * 2, ["X"], 4)], id="iota-transposed-X"),
    # on a 2x4 mesh (id = 4x + y), [2,4]<=[8] is {0..3},{4..7}: y varies -> Y, 4-way
    pytest.param(_module("%p = f32[32]{0} parameter(0)",
                         "ROOT %ar = f32[32]{0} all-reduce(%p), replica_groups=[2,4]<=[8], to_apply=%add",
                         extra=ADD),
                 {"X": 2, "Y": 4}, [("AllReduce", 128, ["Y"], 4)], id="iota-2x4-Y"),
    # the mesh spelling (jax 0.10): the devices varying along XLA's axis_0 -> X
    pytest.param(_module("%p = f32[8,8]{1,0} parameter(0)",
                         "ROOT %ag = f32[32,8]{1,0} all-gather(%p), "
                         "replica_groups=mesh['axis_0'=4,'axis_1'=2] {'axis_0'}, dimensions={0}"),
                 MESH, [("AllGather", 32 * 8 * 4, ["X"], 4)], id="mesh-form-X"),
    # all eight devices in one group -> XY, 8-way; an async pair is one collective, counted at its start
    pytest.param(_module("%p = f32[16]{0} parameter(0)",
                         "%ars = f32[16]{0} all-reduce-start(%p), replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add",
                         "ROOT %ard = f32[16]{0} all-reduce-done(%ars)", extra=ADD),
                 MESH, [("AllReduce", 64, ["X", "Y"], 8)], id="async-pair-once"),
    # all-gather-start's result is (operand, result): V is the result, 8*64*2 = 1024 B
    pytest.param(_module("%p = bf16[2,64]{1,0} parameter(0)",
                         "%ags = (bf16[2,64]{1,0}, bf16[8,64]{1,0}) all-gather-start(%p), "
                         "replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}",
                         "ROOT %agd = bf16[8,64]{1,0} all-gather-done(%ags)"),
                 MESH, [("AllGather", 1024, ["X"], 4)], id="async-tuple-result"),
    # profiling.md, worked problem 1: an AllReduce with replica_groups={{0,16,32,...,112},...} on the book's
    # Mesh(devices.reshape(8, 16), ('x', 'y')) is 8-way model parallelism over x; V = 8*8192*2 B = 131,072 B
    pytest.param(_module("%p = bf16[8,8192]{1,0} parameter(0)",
                         "ROOT %ar = bf16[8,8192]{1,0} all-reduce(%p), replica_groups={"
                         + ",".join("{" + ",".join(str(j + 16 * i) for i in range(8)) + "}" for j in range(16))
                         + "}, to_apply=%add", extra=ADD, partitions=128),
                 {"x": 8, "y": 16}, [("AllReduce", 131_072, ["x"], 8)], id="book-q1-8-way-model-parallel"),
    # TPU's async collective-permute: (operand, result, context, context); V = the operand, 4*128*2 = 1024 B
    pytest.param(_module("%p = bf16[4,128]{1,0:T(4,128)(2,1)} parameter(0)",
                         "%cps = (bf16[4,128]{1,0:T(4,128)(2,1)}, bf16[4,128]{1,0:T(4,128)(2,1)}, u32[], u32[]) "
                         "collective-permute-start(%p), source_target_pairs={{0,2},{2,4},{4,6},{6,0}}",
                         "ROOT %cpd = bf16[4,128]{1,0:T(4,128)(2,1)} collective-permute-done(%cps)"),
                 MESH, [("CollectivePermute", 1024, ["X"], None)], id="tpu-async-permute-along-X"),
    # without a mesh: the group size only
    pytest.param(_module("%p = f32[256,128]{1,0} parameter(0)",
                         "ROOT %ag = f32[256,512]{1,0} all-gather(%p), replica_groups={{0,2,4,6},{1,3,5,7}}, "
                         "dimensions={1}"),
                 None, [("AllGather", 524_288, None, 4)], id="no-mesh-group-size"),
]


@pytest.mark.parametrize("text,mesh,expected", COLLECTIVES)
def test_collectives(text, mesh, expected):
    report = hlo.analyse(text, None, mesh)
    got = [(c["kind"], c["bytes"], c["axes"], c["group_size"]) for c in report["collectives"]]
    assert got == expected
    # every collective is one op of the table (the -done half is not)
    names = [op.name for op in report["_ops"]]
    assert all(c["op"] in names for c in report["collectives"])
    assert not any(n.endswith(("ard", "agd", "cpd")) for n in names)


# --------------------------------------------------------------------------------------------
# Bytes as stored: tiling padding and memory spaces (profiling.md, "How to read an XLA op")
# --------------------------------------------------------------------------------------------

SHAPES = [
    # the book: f32[3,5] tiled T(2,2) is stored as [4,6]: 24 elements for 15, "about 1.6x"
    pytest.param("f32[3,5]{1,0:T(2,2)}", 15, 24, Fraction(96), 0, id="book-f32-3x5-T2x2"),
    # the book's second figure: bf16[4,8] T(2,4)(2,1): 4 and 8 are multiples already, no padding
    pytest.param("bf16[4,8]{1,0:T(2,4)(2,1)}", 32, 32, Fraction(64), 0, id="book-bf16-4x8-no-padding"),
    # column-major layout {0,1}: the tile covers (dim 1, dim 0) = (5, 3) -> [6, 4] again 24
    pytest.param("f32[3,5]{0,1:T(2,2)}", 15, 24, Fraction(96), 0, id="minor-to-major-swapped"),
    # bf16[3,100] T(8,128)(2,1): 3 -> 8, 100 -> 128: 1024 elements, 2048 B; in VMEM (S(1))
    pytest.param("bf16[3,100]{1,0:T(8,128)(2,1)S(1)}", 300, 1024, Fraction(2048), 1, id="T8x128-vmem"),
    # a 4-bit element is half a byte: s4[5] = 2.5 B
    pytest.param("s4[5]{0}", 5, 5, Fraction(5, 2), 0, id="s4-half-bytes"),
]


@pytest.mark.parametrize("text,elements,padded,padded_bytes,space", SHAPES)
def test_shapes(text, elements, padded, padded_bytes, space):
    [a] = arrays(text)
    assert (a.elements, a.padded_elements, a.padded_bytes, a.memory_space) == (elements, padded, padded_bytes, space)


def test_op_bytes_include_padding_and_vmem_is_priced_at_vmem_bandwidth():
    text = _module("%p = f32[3,5]{1,0:T(2,2)} parameter(0)",
                   "%c = f32[3,5]{1,0:T(2,2)} copy(%p)",
                   "%q = bf16[3,100]{1,0:T(8,128)(2,1)} parameter(1)",
                   "%cs = (bf16[3,100]{1,0:T(8,128)(2,1)S(1)}, bf16[3,100]{1,0:T(8,128)(2,1)}, u32[]) copy-start(%q)",
                   "ROOT %cd = bf16[3,100]{1,0:T(8,128)(2,1)S(1)} copy-done(%cs)", partitions=1)
    chip = hardware.get_chip("tpu-v5e")
    report = hlo.analyse(text, chip)
    ops = {op.name: op for op in report["_ops"]}
    assert set(ops) == {"c", "cs"}  # copy-done is the second half of the pair
    # the copy reads and writes 24 padded f32 = 96 B each (15 elements unpadded would be 60 B)
    assert (ops["c"].bytes_in, ops["c"].bytes_out) == (96, 96)
    # the prefetch reads 2048 B from HBM and writes 2048 B to VMEM:
    # tpu-v5e HBM 8.2e11 B/s, VMEM 1.804e13 B/s (hardware.toml, from tpus.md)
    assert ops["cs"].t_memory == Fraction(2048, 820_000_000_000) + Fraction(2048, 18_040_000_000_000)
    assert ops["c"].t_memory == Fraction(192, 820_000_000_000)


LOOP = """HloModule loop, num_partitions=1

%slice_fusion (p0: f32[4,64,64], p1: s32[]) -> f32[64,64] {
  %p0 = f32[4,64,64]{2,1,0} parameter(0)
  %p1 = s32[] parameter(1)
  %z = s32[] constant(0)
  %ds = f32[1,64,64]{2,1,0} dynamic-slice(%p0, %p1, %z, %z), dynamic_slice_sizes={1,64,64}
  ROOT %b = f32[64,64]{1,0} bitcast(%ds)
}

%body (t: (s32[], f32[8,64], f32[4,64,64])) -> (s32[], f32[8,64], f32[4,64,64]) {
  %t = (s32[], f32[8,64]{1,0}, f32[4,64,64]{2,1,0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %h = f32[8,64]{1,0} get-tuple-element(%t), index=1
  %ws = f32[4,64,64]{2,1,0} get-tuple-element(%t), index=2
  %w = f32[64,64]{1,0} fusion(%ws, %i), kind=kLoop, calls=%slice_fusion
  %d = f32[8,64]{1,0} dot(%h, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %r = (s32[], f32[8,64]{1,0}, f32[4,64,64]{2,1,0}) tuple(%i, %d, %ws)
}

%cond (t: (s32[], f32[8,64], f32[4,64,64])) -> pred[] {
  %t = (s32[], f32[8,64]{1,0}, f32[4,64,64]{2,1,0}) parameter(0)
  ROOT %c = pred[] constant(true)
}

ENTRY %main (x: f32[8,64], ws: f32[4,64,64]) -> (s32[], f32[8,64], f32[4,64,64]) {
  %x = f32[8,64]{1,0} parameter(0)
  %ws = f32[4,64,64]{2,1,0} parameter(1)
  %zero = s32[] constant(0)
  %t0 = (s32[], f32[8,64]{1,0}, f32[4,64,64]{2,1,0}) tuple(%zero, %x, %ws)
  ROOT %loop = (s32[], f32[8,64]{1,0}, f32[4,64,64]{2,1,0}) while(%t0), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
}
"""


def test_loop_trip_count_and_sliced_reads():
    report = hlo.analyse(LOOP)
    ops = {op.name: op for op in report["_ops"]}
    assert set(ops) == {"w", "d"} and ops["d"].count == ops["w"].count == 4
    # the fusion reads only the [1,64,64] slice of its [4,64,64] operand: 16 kB (+ the s32 index), writes 16 kB
    assert (ops["w"].bytes_in, ops["w"].bytes_out) == (64 * 64 * 4 + 4, 64 * 64 * 4)
    # the dot: 2*8*64*64 = 65,536 FLOPs a step, 4 steps (known_trip_count)
    assert report["total"]["flops"] == 4 * 65_536
    assert report["total"]["bytes"] == 4 * ((16_388 + 16_384) + (8 * 64 * 4 + 64 * 64 * 4 + 8 * 64 * 4))


def test_dynamic_update_slice_writes_its_update_in_place():
    text = _module("%buf = f32[1024,64]{1,0} parameter(0)", "%u = f32[1,64]{1,0} parameter(1)",
                   "%i = s32[] parameter(2)", "%z = s32[] constant(0)",
                   "ROOT %dus = f32[1024,64]{1,0} dynamic-update-slice(%buf, %u, %i, %z)", partitions=1)
    [op] = hlo.analyse(text)["_ops"]
    # reads the 256 B update and two s32 indices, writes 256 B; the 256 kB buffer is not copied
    assert (op.bytes_in, op.bytes_out) == (256 + 4 + 4, 256)


# --------------------------------------------------------------------------------------------
# FLOPs from dimension numbers
# --------------------------------------------------------------------------------------------

FUSED_DOT = ("%fused_dot (a: f32[32,64], b: f32[64,16]) -> f32[32,16] {\n"
             "  %a = f32[32,64]{1,0} parameter(0)\n  %b = f32[64,16]{1,0} parameter(1)\n"
             "  %d = f32[32,16]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
             "  ROOT %r = f32[32,16]{1,0} maximum(%d, %d)\n}\n")

FLOPS = [
    # the book's einsum (profiling.md): dot(f32[256,16] y, f32[128,256] x), lhs_contracting_dims={0}
    # -> f32[16,128]: 2 * 16*128 * 256 = 1,048,576
    pytest.param(_module("%y = f32[256,16]{1,0} parameter(0)", "%x = f32[128,256]{1,0} parameter(1)",
                         "ROOT %d = f32[16,128]{1,0} dot(%y, %x), lhs_contracting_dims={0}, rhs_contracting_dims={1}"),
                 1_048_576, id="book-einsum-dot"),
    # batch dims: [4,8,32] x [4,32,16] -> [4,8,16], contracting 32: 2 * 512 * 32 = 32,768
    pytest.param(_module("%a = bf16[4,8,32]{2,1,0} parameter(0)", "%b = bf16[4,32,16]{2,1,0} parameter(1)",
                         "ROOT %d = bf16[4,8,16]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                         "rhs_batch_dims={0}, rhs_contracting_dims={1}"),
                 32_768, id="batched-dot"),
    # a fusion with a dot inside: 2 * 32*16 * 64 = 65,536 (the maximum is not a matmul FLOP)
    pytest.param(_module("%a = f32[32,64]{1,0} parameter(0)", "%b = f32[64,16]{1,0} parameter(1)",
                         "ROOT %f = f32[32,16]{1,0} fusion(%a, %b), kind=kOutput, calls=%fused_dot", extra=FUSED_DOT),
                 65_536, id="fusion-with-dot"),
    # a GPU's cuBLAS matmul, a custom-call with the dimension numbers in backend_config: 2 * 128*256 * 64
    pytest.param(_module("%a = bf16[128,64]{1,0} parameter(0)", "%b = bf16[64,256]{1,0} parameter(1)",
                         "ROOT %g = (bf16[128,256]{1,0}, s8[4194304]{0}) custom-call(%a, %b), "
                         'custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{'
                         '"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],'
                         '"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}'),
                 4_194_304, id="gpu-cublas-gemm"),
    # a 3x3 convolution, 3 -> 16 features on 8x8 (valid): out [1,6,6,16] = 576 elements, each a sum over
    # 3*3*3 = 27 products: 2 * 576 * 27 = 31,104
    pytest.param(_module("%i = f32[1,8,8,3]{3,2,1,0} parameter(0)", "%k = f32[3,3,3,16]{3,2,1,0} parameter(1)",
                         "ROOT %c = f32[1,6,6,16]{3,2,1,0} convolution(%i, %k), window={size=3x3}, "
                         "dim_labels=b01f_01io->b01f"),
                 31_104, id="convolution"),
    # a TPU matmul written as a convolution with a size-1 window: [8,8192] x [8192,4096,1]:
    # 2 * 8*4096 * 8192 = 536,870,912
    pytest.param(_module("%x = bf16[8,8192]{1,0} parameter(0)", "%w = bf16[8192,4096,1]{2,1,0} parameter(1)",
                         "ROOT %c = bf16[8,4096]{1,0} convolution(%x, %w), dim_labels=bf_io0->bf"),
                 536_870_912, id="tpu-matmul-as-convolution"),
]


@pytest.mark.parametrize("text,flops", FLOPS)
def test_flops(text, flops):
    assert hlo.analyse(text)["total"]["flops"] == flops


def test_gemm_workspace_is_not_output():
    [op] = hlo.analyse(next(p for p in FLOPS if p.id == "gpu-cublas-gemm").values[0])["_ops"]
    # reads 128*64*2 + 64*256*2 = 49,152 B, writes the 128*256*2 = 65,536 B result (not the 4 MB scratch)
    assert (op.opcode, op.bytes_in, op.bytes_out) == ("custom-call", 49_152, 65_536)


# --------------------------------------------------------------------------------------------
# The profiling chapter's worked example on TPU v2 (4-way data x 2-way model parallel, mesh 4x2)
# --------------------------------------------------------------------------------------------

BOOK_FFW = """HloModule ffw, num_partitions=8

%all-reduce-scatter.1 (p0: bf16[8,1024,8192]) -> bf16[8,1024,4096] {
  %p0 = bf16[8,1024,8192]{2,1,0:T(8,128)(2,1)} parameter(0)
  %ar = bf16[8,1024,8192]{2,1,0:T(8,128)(2,1)} all-reduce(%p0), replica_groups={{0,1},{2,3},{4,5},{6,7}}, to_apply=%add
  ROOT %ds = bf16[8,1024,4096]{2,1,0:T(8,128)(2,1)} dynamic-slice(%ar, %p0, %p0, %p0), dynamic_slice_sizes={8,1024,4096}
}

%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}

ENTRY %main (x: bf16[8,1024,8192], w: bf16[8192,16384]) -> bf16[8,1024,4096] {
  %x = bf16[8,1024,8192]{2,1,0:T(8,128)(2,1)} parameter(0)
  %w = bf16[8192,16384]{1,0:T(8,128)(2,1)} parameter(1)
  %up = bf16[8,1024,16384]{2,1,0:T(8,128)(2,1)} dot(%x, %w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  %w2 = bf16[16384,8192]{1,0:T(8,128)(2,1)} parameter(2)
  %down = bf16[8,1024,8192]{2,1,0:T(8,128)(2,1)} dot(%up, %w2), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT %fusion.1 = bf16[8,1024,4096]{2,1,0:T(8,128)(2,1)} fusion(%down), kind=kCustom, calls=%all-reduce-scatter.1
}
"""


def test_book_profiling_example_on_tpu_v2():
    report = hlo.analyse(BOOK_FFW, hardware.get_chip("tpu-v2"), MESH)
    [rs] = report["collectives"]
    # profiling.md: the down-projection's ReduceScatter is the kCustom fusion calling %all-reduce-scatter;
    # V = 2*8*1024*8192 = 134,217,728 B ("134 MB"), over the 2-way model axis (Y)
    assert (rs["kind"], rs["bytes"], rs["axes"], rs["group_size"], rs["op"]) == \
        ("ReduceScatter", 134_217_728, ["Y"], 2, "fusion.1")
    ops = {op.name: op for op in report["_ops"]}
    # up-projection: 2*8*1024*8192*16384 = 2,199,023,255,552 FLOPs per core at 23e12 FLOP/s per core
    # (a v2 chip is 2 cores of 23e12): the book's expected 95.6 ms (measured 96 ms)
    assert ops["up"].flops == 2_199_023_255_552
    assert ops["up"].t_math == Fraction(2_199_023_255_552, 23 * 10**12)
    assert round(float(ops["up"].t_math) * 1e3, 1) == 95.6
    # two chips are joined by one link, so the 2-way "ring" is an open line: each core sends V/2 through one
    # link one way (W_ici/2 = 6e10 B/s), V/W_ici = 1.118 ms, the book's expected time (measured 1.13 ms);
    # the hop latency, 1 us, is far below
    assert rs["time"] == Fraction(134_217_728, 120_000_000_000)
    assert report["total"]["bound"] == "compute"


def test_book_q1_listing_without_its_fused_computation():
    # profiling.md, worked problem 1: the first matmul as the book prints it, one bare line whose fused
    # computation is not shown: its bytes are known (inputs 8*8192*2 + 4096*8192*2 B in HBM, output
    # 8*4096*2 B in VMEM), its FLOPs are not, and the report says so
    text = ("%fusion = bf16[8,4096]{1,0:T(8,128)(2,1)S(1)} fusion(bf16[8,8192]{1,0:T(8,128)(2,1)} %param, "
            "bf16[4096,8192]{1,0:T(8,128)(2,1)} %param.1), kind=kOutput, calls=%fused_computation")
    report = hlo.analyse(text, hardware.get_chip("tpu-v5e"))
    [op] = report["_ops"]
    assert (op.bytes_in, op.bytes_out, op.flops) == (8 * 8192 * 2 + 4096 * 8192 * 2, 8 * 4096 * 2, 0)
    assert op.t_memory == Fraction(8 * 8192 * 2 + 4096 * 8192 * 2, 820_000_000_000) + \
        Fraction(8 * 4096 * 2, 18_040_000_000_000)
    assert any("not in the text" in n for n in report["notes"])


def test_collective_permute_and_bare_lines():
    # the book prints bare instruction lines with operand shapes inline; they are read as one computation
    text = ("%cp = f32[512,512]{1,0} collective-permute(f32[512,512]{1,0} %a), "
            "source_target_pairs={{0,3},{1,0},{2,1},{3,2},{4,7},{5,4},{6,5},{7,6}}")
    report = hlo.analyse(text, hardware.get_chip("tpu-v5e"), {"X": 2, "Y": 4})
    [cp] = report["collectives"]
    # moves along Y only (4y + x... ids 0-3 and 4-7 are the rows of a 2x4 mesh); V = 512*512*4 = 1,048,576 B,
    # over one link one way: 1,048,576 / 4.5e10 B/s
    assert (cp["kind"], cp["bytes"], cp["axes"]) == ("CollectivePermute", 1_048_576, ["Y"])
    assert cp["time"] == Fraction(1_048_576, 45_000_000_000)


def test_gpu_prices_with_nvlink_and_the_op_dtype_rate():
    text = _module("%p = f32[256,128]{1,0} parameter(0)", "%w = f32[512,64]{1,0} parameter(1)",
                   "%ag = f32[256,512]{1,0} all-gather(%p), replica_groups={{0,2,4,6},{1,3,5,7}}, dimensions={1}",
                   "ROOT %d = f32[256,64]{1,0} dot(%ag, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}")
    report = hlo.analyse(text, hardware.get_chip("h100"), MESH)
    [ag] = report["collectives"]
    # gpus.md ring inside a node: V (N-1) / (N W_gpu), V = 524,288 B, N = 4, W_gpu = 4.5e11 B/s (H100 NVLink egress)
    assert ag["time"] == Fraction(524_288 * 3, 4 * 450_000_000_000)
    ops = {op.name: op for op in report["_ops"]}
    # f32 dot 2*256*64*512 = 16,777,216 FLOPs at the H100's fp32 rate, 6.6e13 FLOP/s
    assert ops["d"].t_math == Fraction(16_777_216, 66 * 10**12)
    # --dtype prices every matmul at that rate instead: int8 on a TPU v5e, 3.94e14
    assert hlo.analyse(text, hardware.get_chip("tpu-v5e"), MESH, "int8")["total"]["t_math"] == \
        Fraction(16_777_216, 394 * 10**12)


# --------------------------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------------------------

def _run(tmp_path, content, *args, name="m.txt"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return CliRunner().invoke(main, ["hlo", str(path), *args])


def test_cli_text(tmp_path):
    result = _run(tmp_path, BOOK_FFW, "--chip", "tpu-v2", "--mesh", "X=4,Y=2")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "ReduceScatter" in out and "Y (2-way)" in out and "134.2 MB" in out
    assert "95.61 ms" in out and "compute-bound" in out
    assert "one of its 2 cores" in out


def test_cli_json(tmp_path):
    result = _run(tmp_path, BOOK_FFW, "--chip", "tpu-v2", "--mesh", "X=4,Y=2", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"ops", "collectives", "total"} <= set(data)
    assert set(data["ops"][0]) >= {"name", "opcode", "shape", "dtype", "bytes", "flops", "t_math", "t_memory",
                                   "t_comms", "bound"}
    assert set(data["collectives"][0]) >= {"name", "kind", "bytes", "axes", "group_size", "time"}
    assert data["total"]["flops"] == 2 * 2_199_023_255_552
    assert data["total"]["exact"]["t_math"] == str(Fraction(2 * 2_199_023_255_552, 23 * 10**12))


def test_cli_lists_top_ops_or_all(tmp_path):
    text = _module(*[f"%c{i} = f32[{i + 1},8]{{1,0}} copy(f32[{i + 1},8]{{1,0}} %p)" for i in range(12)])
    short = _run(tmp_path, text, "--chip", "tpu-v5e")
    every = _run(tmp_path, text, "--chip", "tpu-v5e", "--all")
    assert "top 10 of 12" in short.output and "c11" in short.output and "c0 " not in short.output
    assert "c0 " in every.output and "top" not in every.output


BAD = [
    pytest.param(b"", "is empty", id="empty"),
    pytest.param(b"   \n\n", "is empty", id="blank"),
    pytest.param(b"\x08\x01\x12\x00\x1a\x05hello", "binary", id="binary-proto"),
    pytest.param(b"\xff\xfe f32[8]", "not UTF-8", id="not-utf8"),
    pytest.param(b"import jax\nprint(jax.devices())\n", "not HLO text", id="python-file"),
    pytest.param(b"ENTRY %main {\n}\n", "not HLO text", id="no-instructions"),
]


@pytest.mark.parametrize("content,fragment", BAD)
def test_cli_bad_files(tmp_path, content, fragment):
    result = _run(tmp_path, content)
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


UNREADABLE = [
    pytest.param("%p = f32[8]{0} parameter(0)\n%a = f32[8]{0} all-reduce(%p), "
                 "replica_groups=[100000000,100000]<=[10000000000000]", None, "at most 1048576", id="iota-too-many-devices"),
    pytest.param("%p = f32[8]{0} parameter(0)\n%a = f32[8]{0} all-reduce(%p), replica_groups=mesh['a'=0] {'a'}",
                 None, "size 0", id="mesh-axis-of-size-0"),
    pytest.param("%p = f33[8]{0} parameter(0)\n%c = f33[8]{0} copy(%p)", None, "unknown HLO element type 'f33'",
                 id="unknown-dtype"),
    pytest.param("%p = f32[8]{0} parameter(0)", {"X": 999_999, "Y": 999_999}, "--mesh has", id="mesh-too-large"),
]


@pytest.mark.parametrize("text,mesh,fragment", UNREADABLE)
def test_unreadable_hlo_is_one_clear_error(text, mesh, fragment):
    from scalemath.errors import BadValueError

    with pytest.raises(BadValueError, match=re.escape(fragment)):
        hlo.analyse(text, None, mesh)


def test_many_mesh_axes_are_matched_quickly():
    # 16 mesh axes (3 of size 2): only the axes a group's devices vary along are tried, not 16! orders.
    # [2,4]<=[8] groups {0..3},{4..7}: with A, B, C of size 2 (id = 4a + 2b + c) they vary along B and C
    mesh = {chr(65 + i): (2 if i < 3 else 1) for i in range(16)}
    text = "%p = f32[8]{0} parameter(0)\n%a = f32[8]{0} all-reduce(%p), replica_groups=[2,4]<=[8]"
    assert hlo.analyse(text, None, mesh)["collectives"][0]["axes"] == ["B", "C"]


def test_cli_huge_file(tmp_path, monkeypatch):
    monkeypatch.setattr(hlo, "MAX_FILE_BYTES", 100)
    result = _run(tmp_path, BOOK_FFW)
    assert result.exit_code == 2 and "larger than 100 bytes" in result.output


def test_cli_mesh_must_match_the_module(tmp_path):
    result = _run(tmp_path, BOOK_FFW, "--mesh", "X=4,Y=4")
    assert result.exit_code == 2 and "num_partitions" in result.output


def test_cli_missing_file(tmp_path):
    result = CliRunner().invoke(main, ["hlo", str(tmp_path / "nope.txt")])
    assert result.exit_code == 2 and "No such file" in result.output


def test_module_imports_without_jax(without_jax):
    out = without_jax("import scalemath.xla.analysis as h\n"
                      "print(h.analyse('%p = f32[4,4]{1,0} parameter(0)\\n%d = f32[4,4]{1,0} dot(%p, %p), "
                      "lhs_contracting_dims={1}, rhs_contracting_dims={0}')['total']['flops'])")
    assert out.strip() == "128"  # 2 * 16 * 4


# --------------------------------------------------------------------------------------------
# Real compilations: jax on 8 simulated CPU devices, against the engine's plans
# --------------------------------------------------------------------------------------------

SIZES = {"I": 64, "J": 128, "K": 256}
COMPILED = [
    pytest.param("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", id="1-no-comms"),
    pytest.param("A[I, J_X] @ B[J, K] -> C[I, K]", id="2-allgather"),
    pytest.param("A[I, J_X] @ B[J_X, K] -> C[I, K]", id="3-allreduce"),
    pytest.param("A[I, J_X] @ B[J_X, K] -> C[I, K_X]", id="3b-reducescatter"),
    pytest.param("A[I_X, J] @ B[J, K_X] -> C[I, K_X]", id="4-allgather-one-operand"),
]


def _signature(collectives):
    return sorted((c["kind"], tuple(c["axes"]), c["bytes"]) for c in collectives)


def _engine(pattern, sizes):
    from scalemath.symbolic.notation import parse_contraction
    from scalemath.symbolic.sharding import plans

    return plans(parse_contraction(pattern, MESH), MESH, sizes, 4)  # f32 on CPU: 4 bytes per element


@pytest.mark.parametrize("pattern", COMPILED)
def test_compiled_matmul_matches_the_engine(pattern, jax8):
    from scalemath.xla.compile import compile_hlo

    report = hlo.analyse(compile_hlo(pattern, MESH, SIZES), hardware.get_chip("tpu-v5e"), MESH)
    seen = _signature(report["collectives"])
    matching = [p for p in _engine(pattern, SIZES)
                if sorted((c.kind, tuple(c.axes), int(c.bytes)) for c in p.collectives) == seen]
    assert matching, f"XLA's {seen} is none of the engine's plans"
    assert report["total"]["flops"] == matching[0].flops
    assert all(c["time"] is not None for c in report["collectives"])


def test_compiled_transformer_layer_fsdp_and_tensor_parallel(jax8):
    """An MLP block with FSDP over X (weights' D sharded on X, gathered before use) and tensor
    parallelism over Y (F sharded on Y, the down-projection's partial sums all-reduced)."""
    jax = jax8
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    kwargs = {"axis_types": (jax.sharding.AxisType.Auto,) * 2} if hasattr(jax.sharding, "AxisType") else {}
    mesh = Mesh(np.array(jax.devices("cpu")[:8]).reshape(4, 2), ("X", "Y"), **kwargs)
    S = lambda *s: NamedSharding(mesh, P(*s))
    B, D, F = 64, 128, 512

    def layer(x, w_in, w_out):
        h = jax.lax.with_sharding_constraint(x @ w_in, S("X", "Y"))
        return h @ w_out

    args = (jax.ShapeDtypeStruct((B, D), jnp.float32, sharding=S("X", None)),
            jax.ShapeDtypeStruct((D, F), jnp.float32, sharding=S("X", "Y")),
            jax.ShapeDtypeStruct((F, D), jnp.float32, sharding=S("Y", "X")))
    text = jax.jit(layer, out_shardings=S("X", None)).lower(*args).compile().as_text()
    report = hlo.analyse(text, None, MESH)
    sizes = {"B": B, "D": D, "F": F}
    up = _engine("A[B_X, D] @ W[D_X, F_Y] -> H[B_X, F_Y]", sizes)
    down = _engine("H[B_X, F_Y] @ W[F_Y, D_X] -> O[B_X, D]", sizes)
    predicted = {tuple(sorted((c.kind, tuple(c.axes), int(c.bytes)) for c in p.collectives + q.collectives)):
                 p.flops + q.flops for p in up for q in down}
    seen = tuple(_signature(report["collectives"]))
    # the engine's plans: gather each weight over X (131,072 B each), all-reduce the output over Y (8,192 B)
    assert seen in predicted, f"XLA's {seen} is none of the engine's {list(predicted)}"
    assert report["total"]["flops"] == predicted[seen] == 2 * 2 * (B // 4) * D * (F // 2)
