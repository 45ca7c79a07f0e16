"""``scalemath shardmap``: a shard_map program as the JAX chapter writes it, run device by device."""

from __future__ import annotations

import math

import click

from .common import DTYPES, Choice, Command, _catalog, _dumps, complete_chip, friendly

__all__ = ["shardmap_cmd"]

MAX_DEVICES = 64
MAX_ELEMENTS = 1 << 22  # elements of all inputs together: the program runs on every device in numpy
#: jax's time for --xla: the chapter's collective matmul at its own sizes (the limit, 4,194,304 elements, 18
#: statements on 8 devices) takes about 7 s with its values sent back in an .npz (89 s as JSON lists)
XLA_SECONDS = 120


def _public(value):
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return value


def _from_file(path: str) -> tuple[str, list, str, list]:
    from ..errors import BadValueError
    from ..files import load_toml_file

    data = load_toml_file(path, "shard_map program")
    unknown = set(data) - {"mesh", "in", "body", "out"}
    if unknown:
        raise BadValueError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} (mesh, in, body, out)")
    try:
        mesh, ins, body, outs = data["mesh"], data["in"], data["body"], data["out"]
    except KeyError as e:
        raise BadValueError(f"{path}: missing key {e.args[0]!r} (a program has mesh, in, body and out)") from None
    ins = [ins] if isinstance(ins, str) else ins
    outs = [outs] if isinstance(outs, str) else outs
    body = "\n".join(body) if isinstance(body, list) else body
    if not (isinstance(mesh, str) and isinstance(body, str) and all(isinstance(x, str) for x in ins + outs)):
        raise BadValueError(f"{path}: mesh and body are strings, in and out strings or lists of strings")
    return mesh, ins, body, outs


@click.command("shardmap", cls=Command)
@click.option("--mesh", "mesh_text", metavar="AXIS=SIZE,...", help="mesh axes and sizes in order, e.g. X=2,Y=4")
@click.option("--in", "inputs", multiple=True, metavar='"x: f32[8, 16] P(X, None)"',
              help="an input: name, element type (f32, bf16, f16, i32), global shape, PartitionSpec (repeatable)")
@click.option("--body", "body", multiple=True, metavar='"y = psum(x, X)"',
              help="statements, one per option or separated by ';' (psum, pmean, all_gather, psum_scatter, "
                   "all_to_all, ppermute, axis_index, axis_size, roll, einsum, slices, + - *)")
@click.option("--out", "outputs", multiple=True, metavar='"y: P(None, None)"',
              help="a result and its out spec (repeatable)")
@click.option("--file", "path", type=click.Path(dir_okay=False),
              help="a TOML file with mesh, in, body and out instead of the options")
@click.option("--chip", help="price the collectives on this chip: a TPU over ICI (e.g. tpu-v5e), or a GPU (e.g. h100) "
              "over NVLink inside a node and the NIC across nodes", shell_complete=complete_chip)
@click.option("--slice", "slice_text", metavar="AxBxC",
              help="the TPU slice the mesh lies on, as shard takes it (default: the mesh's own shape); the chip's "
                   "wraparound rule says which axes are rings")
@click.option("--dtype", type=Choice(DTYPES), default="bf16", show_default=True,
              help="the rate local matmuls run at on the chip (the values are computed in the inputs' own types)")
@click.option("--hardware-file", type=click.Path())
@click.option("--xla", "with_xla", is_flag=True,
              help="also run it with jax.shard_map on simulated CPU devices (the xla extra) and compare the values "
                   "and the compiled HLO's collectives with ours")
@click.option("--format", "fmt", type=Choice(["text", "json"]), default="text", show_default=True)
@friendly
def shardmap_cmd(mesh_text, inputs, body, outputs, path, chip, slice_text, dtype, hardware_file, with_xla, fmt):
    """Local shapes, every device's values after each statement, and each collective's cost.

    \b
    The chapter's pmean example, one line each:
      scalemath shardmap --mesh X=2,Y=4 --in "x: i32[512] P((X, Y))" \\
          --body "y = pmean(x[:4], (X, Y))" --out "y: P(None)"
    Inputs hold arange of their global shape. all_gather, psum_scatter and all_to_all are jax's tiled forms
    (the book's); spelled jax.lax.all_gather etc. they take jax's default tiled=False (untiled, as jax);
    ppermute(x, Y, shift=-1) sends device j's block to j - 1 along Y; ppermute(x, 'Y', perm=[(0, 1), (1, 0)])
    or perm=[(j, (j - 1) % 4) for j in range(4)] names (source, target) pairs (read, never run as Python).
    On a GPU, devices fill NVLink nodes in order, the last mesh axis innermost (the report says which network
    each axis crosses).
    """
    from ..errors import BadValueError
    from ..reports.shardmap import as_text, report
    from ..symbolic.shardmap import parse_program
    from ..symbolic.shardmap_run import run

    if path is not None:
        if mesh_text or inputs or body or outputs:
            raise BadValueError("give the program either with --file or with --mesh/--in/--body/--out, not both")
        mesh_text, inputs, body, outputs = _from_file(path)
    elif not mesh_text:
        raise BadValueError("give --mesh (e.g. X=2,Y=4), or the whole program with --file")
    program = parse_program(mesh_text, list(inputs), "\n".join(body) if not isinstance(body, str) else body,
                            list(outputs))
    if program.devices > MAX_DEVICES:
        raise BadValueError(f"the mesh has {program.devices} devices; shardmap runs at most {MAX_DEVICES}")
    elements = sum(math.prod(i.shape) for i in program.inputs)
    if elements > MAX_ELEMENTS:
        raise BadValueError(f"the inputs hold {elements} elements; shardmap runs at most {MAX_ELEMENTS} "
                            "(the cost does not depend on the values: scale the shapes down)")
    chip_record = _catalog(hardware_file)[chip] if chip is not None else None
    result = run(program)
    record = report(program, result, chip_record, dtype, slice_text)
    xla = None
    if with_xla:
        from ..xla.shardmap import compare_jax, run_jax

        hint = (f"the inputs hold {elements} elements (shardmap takes at most {MAX_ELEMENTS}); the bytes V and "
                "every collective's bandwidth time scale linearly with the elements: run it with a dimension k "
                "times smaller and multiply V and those times by k")
        theirs = run_jax(mesh_text, list(inputs), "\n".join(body) if not isinstance(body, str) else body,
                         list(outputs), program.devices, timeout=XLA_SECONDS, hint=hint)
        cmp = compare_jax(result, theirs)
        xla = {"verdict": "agrees" if cmp.ok else "differs", "values_agree": cmp.values_agree and all(cmp.steps_agree),
               "collectives_agree": cmp.collectives_agree, "ours": list(cmp.ours), "xla": list(cmp.xla),
               "notes": list(cmp.notes)}
        record["xla"] = xla
    if fmt == "json":
        click.echo(_dumps(_public(record), indent=2, ensure_ascii=False))
    else:
        click.echo(as_text(record, xla))
