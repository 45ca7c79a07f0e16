"""What a device holds for an HLO module: the entry computation's parameters and result against its HBM.

profiling.md's "Memory Profile" shows the parameters a program keeps in HBM and what is left free. After
SPMD partitioning every shape in the HLO is per device, so the entry computation's parameters are the
arrays each device holds as inputs and its ROOT's shape what it holds as outputs (a tuple's elements
summed). A module compiled with donated inputs (``jax.jit(f, donate_argnums=0)``) names in its header the
outputs that reuse a parameter's buffer::

    HloModule jit_f, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }, ...

(output 0 lives in parameter 0's buffer, output 1 in parameter 1's); such an output takes no memory of its
own and is counted once, as the parameter. Bytes are as stored (tiling padding included, see
:mod:`scalemath.xla.shapes`), each array rounded up to whole bytes. Temporaries are not counted: XLA's
buffer assignment decides them, so parameters + outputs is a lower bound on what a device needs. Arrays
in a memory space other than HBM (``S(5)``, the host's memory) are held apart.

>>> text = '''HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
... ENTRY %main (p: f32[128,256], q: bf16[8]) -> f32[128,256] {
...   %p = f32[128,256]{1,0} parameter(0)
...   %q = bf16[8]{0} parameter(1)
...   ROOT %y = f32[128,256]{1,0} add(%p, %p)
... }'''
>>> held(parse_module(text), text)
Held(parameters=2, parameter_bytes=131088, output_bytes=131072, aliased_bytes=131072, aliases=(((), 0, ()),), \
elsewhere_bytes=0)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from .groups import _balanced, _ints, _split_top
from .parse import HloModule, parse_module
from .shapes import HloArray, arrays

__all__ = ["Held", "as_lines", "held", "summary"]

_NOT_DATA = {"token", "opaque"}


@dataclass(frozen=True)
class Held:
    """The bytes a device holds for the entry computation (exact integers).

    ``parameters`` counts the parameters' arrays (a tuple parameter's elements each), ``parameter_bytes``
    and ``output_bytes`` the arrays in HBM, ``aliased_bytes`` the outputs that share a parameter's buffer
    (``aliases`` lists them as (output index, parameter number, index in the parameter)), and
    ``elsewhere_bytes`` the parameters and outputs in another memory space.
    """

    parameters: int
    parameter_bytes: int
    output_bytes: int
    aliased_bytes: int
    aliases: tuple[tuple[tuple[int, ...], int, tuple[int, ...]], ...]
    elsewhere_bytes: int

    @property
    def needed(self) -> int:
        """Parameters and outputs, each buffer once: the least a device needs in HBM."""
        return self.parameter_bytes + self.output_bytes - self.aliased_bytes


def _tree(shape_text: str):
    """A shape as a nested list of its arrays: ``(f32[8]{0}, (s32[], bf16[2]))`` -> [a, [b, c]]."""
    text = shape_text.strip()
    if text.startswith("("):
        return [_tree(part) for part in _split_top(text[1:_balanced(text, 0) - 1]) if part.strip()]
    found = arrays(text)
    return found[0] if found else []


def _leaves(tree) -> list[HloArray]:
    return [tree] if isinstance(tree, HloArray) else [a for t in tree for a in _leaves(t)]


def _at(tree, index: tuple[int, ...]):
    for i in index:
        if isinstance(tree, HloArray) or i >= len(tree):
            raise ValueError(f"input_output_alias names output {{{','.join(map(str, index))}}}, which the "
                             "entry's result does not have")
        tree = tree[i]
    return tree


def _bytes(arrs, space: bool = True) -> int:
    """Whole bytes of the arrays in HBM (``space``) or elsewhere (not ``space``)."""
    return sum(math.ceil(a.padded_bytes) for a in arrs if (a.memory_space == 0) == space and a.dtype not in _NOT_DATA)


def _aliases(header: str) -> list[tuple[tuple[int, ...], int, tuple[int, ...]]]:
    """``input_output_alias={ {1}: (0, {}, may-alias) }`` as [((1,), 0, ())]."""
    m = re.search(r"\binput_output_alias=", header)
    if not m:
        return []
    body = header[m.end():_balanced(header, m.end(), "{", "}")]
    pair = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([\d,\s]*)\}")
    return [(tuple(_ints(out)), int(param), tuple(_ints(inner))) for out, param, inner in pair.findall(body)]


def _root(module: HloModule, text: str):
    """The entry's ROOT instruction; the last one when none is marked (as XLA's parser reads it)."""
    body = module.computations.get(module.entry) or []
    for name in re.findall(r"^\s*ROOT\s+%?([\w.\-]+)\s*=", text, re.MULTILINE):
        ins = module.instructions.get(name)
        if ins is not None and ins.computation == module.entry:
            return ins
    return body[-1] if body else None


def held(module: HloModule, text: str = "") -> Held:
    """The entry computation's parameters and result, per device; ``text`` is the module's HLO text
    (for its ROOT line and header; without it the entry's last instruction is its result)."""
    body = module.computations.get(module.entry) or []
    params = sorted((i for i in body if i.opcode == "parameter" and i.args and i.args[0].isdigit()),
                    key=lambda i: int(i.args[0]))
    param_arrays = [a for p in params for a in arrays(p.shape) if a.dtype not in _NOT_DATA]
    root = _root(module, text)
    result = _tree(root.shape) if root is not None else []
    outputs = _leaves(result)
    header = next((line for line in text.splitlines() if line.lstrip().startswith("HloModule")), "")
    aliases = _aliases(header)
    aliased = sum(_bytes(_leaves(_at(result, out))) for out, _, _ in aliases)
    return Held(len(param_arrays), _bytes(param_arrays), _bytes(outputs), aliased, tuple(aliases),
                _bytes(param_arrays, False) + _bytes(outputs, False))


def summary(module: HloModule, text: str, hbm_bytes: Fraction | int | None = None) -> dict:
    """:func:`held` as the report carries it; with the HBM of one device, what is left free and whether
    parameters and outputs fit at all."""
    h = held(module, text)
    out = {"parameters": h.parameters, "parameter_bytes": h.parameter_bytes, "output_bytes": h.output_bytes,
           "aliased_bytes": h.aliased_bytes, "needed_bytes": h.needed, "elsewhere_bytes": h.elsewhere_bytes,
           "aliases": [{"output": list(o), "parameter": p, "parameter_index": list(i)} for o, p, i in h.aliases],
           "hbm_bytes": None, "free_bytes": None, "fits": None}
    if hbm_bytes is not None:
        hbm = Fraction(hbm_bytes)
        out.update(hbm_bytes=hbm, free_bytes=hbm - h.needed, fits=h.needed <= hbm)
    return out


def _size(n) -> str:
    """Bytes to four figures, and exactly too when the four figures round them: ``2.228 MB (2228224 B)``."""
    from ..values import printing as formatting

    if not n:
        return "0 B"
    n = Fraction(n)
    number, _ = formatting.scaled(n, "byte")
    shown = formatting.with_unit(n, "byte")
    if Fraction(formatting.decimal(number)) == Fraction(int(number.p), int(number.q)) or n.denominator != 1:
        return shown
    return f"{shown} ({n.numerator} B)"


def as_lines(memory: dict) -> list[str]:
    """The "memory per device" block of ``scalemath hlo``'s text report."""
    n = memory["parameters"]
    lines = ["memory per device (the entry's parameters and result; temporaries not counted):",
             f"  parameters: {n} array{'s' if n != 1 else ''}, {_size(memory['parameter_bytes'])}",
             f"  outputs: {_size(memory['output_bytes'])}"]
    if memory["aliased_bytes"]:
        k = len(memory["aliases"])
        lines[-1] += (f", of which {_size(memory['aliased_bytes'])} in {k} donated parameter buffer{'s' if k != 1 else ''}"
                      " (input_output_alias: counted once)")
    if memory["elsewhere_bytes"]:
        lines.append(f"  not in HBM (another memory space, e.g. S(5) host memory): {_size(memory['elsewhere_bytes'])}")
    if memory["hbm_bytes"] is not None:
        hbm, needed = _size(memory["hbm_bytes"]), _size(memory["needed_bytes"])
        if memory["fits"]:
            lines.append(f"  HBM {hbm}: parameters and outputs need at least {needed}; at most "
                         f"{_size(memory['free_bytes'])} left free for XLA's temporaries")
        else:
            lines.append(f"  HBM {hbm}: does not fit: parameters and outputs alone need {needed}, "
                         f"{_size(-memory['free_bytes'])} more than the HBM")
    return lines
