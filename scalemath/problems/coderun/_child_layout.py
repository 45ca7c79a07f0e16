"""The sandbox child's part for a layout task: check the layout ``shardings()`` returned, then build the block.

:mod:`._child` reads this file and runs it in a namespace of its own (no import, so nothing of scalemath is
loaded and no bytecode is written) before the limits and walls are set; like the child it uses only the standard
library and, passed in, jax. The block is fixed, written here and not by the submission::

    out = jax.nn.gelu(x @ w_in, approximate=False) @ w_out

jitted with the ``NamedSharding`` each array's entry names (``in_shardings`` for x, w_in and w_out,
``out_shardings`` for out) and, when ``"hidden"`` is given, ``jax.lax.with_sharding_constraint`` on the
``[B, F]`` intermediate. A layout that breaks a rule raises :class:`LayoutError` with one line saying which.

>>> check({"x": (None, None), "w_in": (None, "x"), "w_out": ("x", None), "out": [None, None]},
...       {"x": (8, 16), "w_in": (16, 32), "w_out": (32, 16)}, 4)
{'x': (None, None), 'w_in': (None, 'x'), 'w_out': ('x', None), 'out': (None, None)}
>>> try:
...     check({"x": (None, None), "w_in": (None, "y"), "w_out": ("x", None), "out": (None, None)},
...           {"x": (8, 16), "w_in": (16, 32), "w_out": (32, 16)}, 4)
... except LayoutError as e:
...     print(e)
shardings()['w_in'][1] is 'y': the mesh has one axis, 'x'; each entry is 'x' (sharded over it) or None (replicated)
"""

AXIS = "x"
#: the arrays a layout names, each with its dimensions (the hidden one optional)
DIMS = {"x": ("B", "D"), "w_in": ("D", "F"), "w_out": ("F", "D"), "out": ("B", "D"), "hidden": ("B", "F")}
REQUIRED = ("x", "w_in", "w_out", "out")


class LayoutError(Exception):
    """A layout that breaks a rule; its text is the one line the student reads."""


def _shown(value) -> str:
    """A value as the message names it; only plain values by their repr (a submission's object is not asked)."""
    if value is None or type(value) in (str, int, float, bool):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__[:40]}"


def check(layout, shapes, n: int) -> dict:
    """The layout as ``{name: tuple}`` (``hidden`` only when given), or :class:`LayoutError`.

    ``shapes`` holds the shapes of x, w_in and w_out; ``n`` is the number of devices on the mesh axis ``'x'``.
    """
    keys = ", ".join(REQUIRED)
    if type(layout) is not dict:
        raise LayoutError(f"shardings() must return a dict with the keys {keys} (and optionally hidden), "
                          f"not {_shown(layout)}")
    for key in layout:
        if type(key) is not str or key not in DIMS:
            raise LayoutError(f"shardings() returned the key {_shown(key)}; the keys are {keys} and, optionally, "
                              "hidden")
    missing = [k for k in REQUIRED if k not in layout]
    if missing:
        raise LayoutError(f"shardings() returned no {' or '.join(map(repr, missing))}; the keys are {keys} and, "
                          "optionally, hidden")
    b, d = shapes["x"]
    sizes = {"B": b, "D": d, "F": shapes["w_in"][1]}
    out = {}
    for name, dims in DIMS.items():
        spec = layout.get(name)
        if name == "hidden" and spec is None:
            continue
        where = f"shardings()[{name!r}]"
        if type(spec) not in (tuple, list):
            raise LayoutError(f"{where} must be a tuple with one entry per dimension of {name}[{', '.join(dims)}], "
                              f"not {_shown(spec)}")
        spec = tuple(spec)
        if len(spec) != len(dims):
            raise LayoutError(f"{where} has {len(spec)} entr{'y' if len(spec) == 1 else 'ies'}; {name}"
                              f"[{', '.join(dims)}] has {len(dims)} dimensions: give one entry, 'x' or None, each")
        for i, entry in enumerate(spec):
            if entry is not None and not (type(entry) is str and entry == AXIS):
                raise LayoutError(f"{where}[{i}] is {_shown(entry)}: the mesh has one axis, 'x'; each entry is 'x' "
                                  "(sharded over it) or None (replicated)")
        if spec.count(AXIS) > 1:
            raise LayoutError(f"{where} uses 'x' for {spec.count(AXIS)} dimensions: a mesh axis shards at most one "
                              "dimension of an array")
        for dim, entry in zip(dims, spec):
            if entry == AXIS and sizes[dim] % n:
                raise LayoutError(f"{where} shards {dim} = {sizes[dim]} over the {n} devices of 'x', which does not "
                                  f"divide it: shard a dimension whose size {n} divides")
        out[name] = spec
    return out


def build(jax, mesh, layout: dict):
    """The fixed block, jitted with the layout's shardings on ``mesh``."""
    from jax.sharding import NamedSharding, PartitionSpec

    named = {name: NamedSharding(mesh, PartitionSpec(*spec)) for name, spec in layout.items()}
    hidden = named.get("hidden")

    def block(x, w_in, w_out):
        h = jax.nn.gelu(x @ w_in, approximate=False)
        if hidden is not None:
            h = jax.lax.with_sharding_constraint(h, hidden)
        return h @ w_out

    return jax.jit(block, in_shardings=(named["x"], named["w_in"], named["w_out"]), out_shardings=named["out"])
