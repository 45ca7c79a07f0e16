"""The child process that runs a shard_map program with jax itself (``python -m scalemath.xla.shardmap_child``).

It reads a JSON request on stdin (the program's four parts as the user typed them), parses them with
:func:`scalemath.symbolic.shardmap.parse_program`, interprets the body with ``jax.lax`` and ``jnp`` (never
``eval``), runs ``jax.shard_map`` under ``jax.jit`` on simulated CPU devices (the parent sets ``XLA_FLAGS``) with
``arange`` inputs, and writes JSON on stdout: the outputs, every statement's value on every device, and the
compiled HLO text of the program with only its outputs. It runs apart so that the parent's jax (if any) and its
device count do not matter.

The engine checks that an output its out spec replicates is the same on every device, by value; jax's static
check (``check_vma``) would refuse e.g. an ``all_gather`` result returned replicated (its type stays varying
unless ``all_gather_invariant`` is used), so it is turned off here and the values are compared instead.
"""

from __future__ import annotations

import json
import sys

__all__ = ["main"]


def _interpret(program, mesh_axes):
    import jax
    import jax.numpy as jnp

    from ..symbolic.shardmap_perm import axes_node

    def axes_of(node):
        return node[1] if node[0] in ("name", "str") else tuple(x[1] for x in node[1])

    def const(node):
        return -node[1][1] if node[0] == "neg" else node[1]

    def ev(env, node):
        kind = node[0]
        if kind == "name":
            return env[node[1]]
        if kind == "num":
            return jnp.asarray(node[1])
        if kind == "neg":
            return -ev(env, node[1])
        if kind == "bin":
            a, b = ev(env, node[2]), ev(env, node[3])
            ops = {"+": jnp.add, "-": jnp.subtract, "*": jnp.multiply, "%": jnp.mod, "@": jnp.matmul}
            return ops[node[1]](a, b)
        if kind == "index":
            key = tuple(slice(*s) if isinstance(s, tuple) else s for s in node[2])
            return ev(env, node[1])[key]
        _, f, args, kwargs, _ = node
        kw = dict(kwargs)
        if f == "axis_index":
            return jax.lax.axis_index(axes_of(args[0] if args else kw["axis_name"]))
        if f == "axis_size":
            return jax.lax.axis_size(axes_of(args[0] if args else kw["axis_name"]))
        if f == "einsum":
            return jnp.einsum(args[0][1], *(ev(env, a) for a in args[1:]))
        if f in ("sum", "mean", "max", "min"):
            axis = const(kw["axis"]) if "axis" in kw else None
            return getattr(jnp, f)(ev(env, args[0]), axis=axis, keepdims=bool(const(kw.get("keepdims", ("num", 0)))))
        if f == "zeros_like":
            return jnp.zeros_like(ev(env, args[0]))
        if f == "dynamic_slice_in_dim":
            return jax.lax.dynamic_slice_in_dim(ev(env, args[0]), ev(env, args[1]), const(args[2]),
                                                axis=const(kw.get("axis", ("num", 0))))
        if f == "roll":
            return jnp.roll(ev(env, args[0]), const(args[1]), axis=const(kw.get("axis", ("num", 0))))
        axes = axes_of(axes_node(args, kwargs))
        tiled = kw.get("tiled", ("name", "True"))[1] in ("True", 1)  # the parser wrote jax's default for jax.lax.*
        x = ev(env, args[0])
        if f in ("psum", "pmean") and (args[0][0] == "num" or args[0][0] == "neg" and args[0][1][0] == "num"):
            x = const(args[0])  # a Python number, as the chapter's psum(1, axis): jax sums it while tracing
        if f == "psum":
            return jax.lax.psum(x, axes)
        if f == "pmean":
            return jax.lax.pmean(x, axes)
        if f == "all_gather":
            return jax.lax.all_gather(x, axes, axis=const(kw.get("axis", args[2] if len(args) > 2 else ("num", 0))),
                                      tiled=tiled)
        if f == "psum_scatter":
            d = const(kw.get("scatter_dimension", args[2] if len(args) > 2 else ("num", 0)))
            return jax.lax.psum_scatter(x, axes, scatter_dimension=d, tiled=tiled)
        if f == "all_to_all":
            split = const(kw.get("split_axis", args[2] if len(args) > 2 else None))
            concat = const(kw.get("concat_axis", args[3] if len(args) > 3 else None))
            return jax.lax.all_to_all(x, axes, split, concat, tiled=tiled)
        if f == "ppermute" and "perm" in kw:  # the pairs, resolved when the program was parsed
            return jax.lax.ppermute(x, axes, perm=[tuple(p) for p in kw["perm"][1]])
        if f == "ppermute":
            axis = axes if isinstance(axes, str) else axes[0]
            n = program.mesh[axis]
            shift = const(kw.get("shift", args[2] if len(args) > 2 else ("num", 1)))
            return jax.lax.ppermute(x, axis, perm=[(j, (j + shift) % n) for j in range(n)])
        raise ValueError(f"unknown function {f}")

    def body(*arrays, keep_steps):
        env = dict(zip((i.name for i in program.inputs), arrays))
        steps = []
        for stmt in program.body:
            env[stmt.target] = jnp.asarray(ev(env, stmt.expr))
            steps.append(jnp.asarray(env[stmt.target])[None])
        outs = tuple(env[o.name] for o in program.outputs)
        return (outs, tuple(steps)) if keep_steps else outs

    return body


def main() -> None:
    import numpy as np

    request = json.load(sys.stdin)
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, PartitionSpec

    from ..symbolic.shardmap import DTYPES, parse_program

    program = parse_program(request["mesh"], request["inputs"], request["body"], request["outputs"])
    names = tuple(program.mesh)
    n = program.devices
    devices = jax.devices("cpu")[:n]
    kwargs = {}
    if getattr(jax.sharding, "AxisType", None) is not None:
        kwargs["axis_types"] = (jax.sharding.AxisType.Auto,) * len(names)
    mesh = Mesh(np.array(devices).reshape([program.mesh[a] for a in names]), names, **kwargs)

    def spec(s):
        return PartitionSpec(*[None if not a else a[0] if len(a) == 1 else tuple(a) for a in s.dims])

    jdtype = {"bf16": jnp.bfloat16, "bfloat16": jnp.bfloat16}
    args = [jnp.arange(int(np.prod(i.shape))).reshape(i.shape).astype(jdtype.get(i.dtype, DTYPES[i.dtype][1]))
            for i in program.inputs]
    in_specs = tuple(spec(i.spec) for i in program.inputs)
    out_specs = tuple(spec(o.spec) for o in program.outputs)
    body = _interpret(program, names)
    plain = jax.jit(jax.shard_map(lambda *a: body(*a, keep_steps=False), mesh=mesh, in_specs=in_specs,
                                  out_specs=out_specs, check_vma=False))
    every = PartitionSpec(names)
    traced = jax.jit(jax.shard_map(lambda *a: body(*a, keep_steps=True), mesh=mesh, in_specs=in_specs,
                                   out_specs=(out_specs, tuple(every for _ in program.body)), check_vma=False))
    outs, steps = traced(*args)
    hlo = plain.lower(*args).compile().as_text()

    def plain_array(a):
        return np.asarray(a, dtype=np.float64 if a.dtype == jnp.bfloat16 else a.dtype)

    # the values go to an .npz file the parent named (as JSON lists, millions of numbers took over a minute)
    np.savez(request["npz"], **{f"out{k}": plain_array(v) for k, v in enumerate(outs)},
             **{f"step{k}": plain_array(v) for k, v in enumerate(steps)})
    json.dump({"outputs": [o.name for o in program.outputs], "steps": len(steps),
               "output_dtypes": {o.name: str(v.dtype) for o, v in zip(program.outputs, outs)}, "hlo": hlo},
              sys.stdout)


if __name__ == "__main__":
    main()
