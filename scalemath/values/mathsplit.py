r"""Long formulas for HTML: cut LaTeX into pieces a browser can wrap between.

MathML as browsers implement it (MathML Core) never breaks a line inside one ``<math>``
element, and latex2mathml turns ``aligned`` into a table that cannot wrap either. So the HTML
writes a long formula as several inline ``<math>`` elements, cut before the binary operators and
relations at the top level (after commas), the way a printed formula is broken; never inside a number in
scientific notation (``1.97 \times 10^{14}``). A fraction or a bracketed group too wide to stay whole is
written inline first (``\frac{a+b}{c d}`` becomes ``(a+b)/(c d)``, ``\left( ... \right)`` plain brackets)
so its inside can be cut too.

The same pieces, measured as TeX sets them, make the lines of a printed display (:mod:`.texlines`, for
``derive --format latex``): there a fraction stays whole and a product may be cut between its factors.

>>> pieces(r"a + b = \frac{c}{d}")
['a', '+ b', '= \\frac{c}{d}']
>>> pieces(r"x = \frac{2 \cdot 8192 \cdot 32768 \cdot 2 \cdot 2 \cdot 4096}{1.97 \times 10^{14} \cdot 16}", wide=12)
['x', '= 2', '\\cdot 8192', '\\cdot 32768', '\\cdot 2', '\\cdot 2', '\\cdot 4096/', '(1.97 \\times 10^{14}', '\\cdot 16)']
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction

from . import texmetrics

__all__ = ["lines", "pieces", "width", "rows", "starts_with_operator"]

#: The widest group (in em, estimated) kept whole; wider fractions and brackets are opened up.
WIDE = 12.0

_BINARY = texmetrics.BINARY_OPS
_RELATIONS = texmetrics.RELATIONS
_ONE_ARG = {r"\mathrm", r"\text", r"\operatorname", r"\mathbf", r"\mathit", r"\textrm", r"\mathsf", r"\boldsymbol",
            r"\hat", r"\bar", r"\tilde", r"\overline", r"\underline", r"\vec"}
_TWO_ARGS = {r"\frac", r"\tfrac", r"\dfrac", r"\binom"}
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[{}^_&]|\s+|[^\\{}^_&\s]")


@dataclass
class _Atom:
    kind: str  # "char", "cmd", "group", "frac", "lr", "arg1", "sqrt", "space"
    text: str  # the LaTeX source of the atom (with its scripts)
    parts: list = field(default_factory=list)  # inner atom lists (group: [inner]; frac: [num, den]; lr: [inner])
    head: str = ""  # command, or the left delimiter of an lr group
    tail: str = ""  # the right delimiter of an lr group
    scripted: bool = False
    scripts: list = field(default_factory=list)  # (^ or _, the script's source), in order
    widths: dict = field(default_factory=dict)  # in em, by metric, once measured (:func:`_atom_width`)


def _parse(tokens: list[str], i: int = 0, stop: str | None = None) -> tuple[list[_Atom], int]:
    atoms: list[_Atom] = []
    while i < len(tokens):
        t = tokens[i]
        if stop == r"\right" and t == r"\right":
            return atoms, i
        if stop is not None and t == stop:
            return atoms, i + 1
        if t == "}":  # unbalanced: keep it as text
            atoms.append(_Atom("char", t))
            i += 1
            continue
        if t.isspace():
            atoms.append(_Atom("ws", " "))
            i += 1
            continue
        if t in ("^", "_") and atoms:
            while atoms and atoms[-1].kind == "ws":
                atoms.pop()
            arg, i = _one(tokens, i + 1)
            atoms[-1].text += t + (arg.text if arg.kind == "group" else arg.text)
            atoms[-1].scripted = True
            atoms[-1].scripts.append((t, arg.text))
            continue
        atom, i = _atom(tokens, i)
        atoms.append(atom)
    return atoms, i


@functools.lru_cache(maxsize=4096)
def _parsed(tex: str) -> tuple[_Atom, ...]:
    """``tex`` parsed, remembered: a derivation's formulas are measured for the printed page and cut for the
    HTML, and every document of a set shows them (the atoms are never changed once parsed)."""
    return tuple(_parse(_TOKEN.findall(tex))[0])


def _one(tokens: list[str], i: int) -> tuple[_Atom, int]:
    while i < len(tokens) and tokens[i].isspace():
        i += 1
    if i >= len(tokens):
        return _Atom("char", ""), i
    return _atom(tokens, i)


def _atom(tokens: list[str], i: int) -> tuple[_Atom, int]:
    t = tokens[i]
    if t == "{":
        inner, j = _parse(tokens, i + 1, "}")
        return _Atom("group", "{" + "".join(_source(inner)) + "}", [inner]), j
    if t in _TWO_ARGS:
        a, j = _one(tokens, i + 1)
        b, j = _one(tokens, j)
        return _Atom("frac", t + _braced(a) + _braced(b), [_inner(a), _inner(b)], head=t), j
    if t in _ONE_ARG:
        a, j = _one(tokens, i + 1)
        return _Atom("arg1", t + _braced(a), [_inner(a)], head=t), j
    if t == r"\sqrt":
        j, opt = i + 1, ""
        if j < len(tokens) and tokens[j] == "[":
            k = tokens.index("]", j)
            opt, j = "".join(tokens[j:k + 1]), k + 1
        a, j = _one(tokens, j)
        return _Atom("sqrt", t + opt + _braced(a), [_inner(a)], head=t), j
    if t == r"\left":
        delim, j = tokens[i + 1] if i + 1 < len(tokens) else ".", i + 2
        inner, j = _parse(tokens, j, r"\right")
        close = tokens[j + 1] if j + 1 < len(tokens) else "."
        return _Atom("lr", r"\left" + delim + "".join(_source(inner)) + r"\right" + close, [inner],
                     head=delim, tail=close), j + 2
    if t in (r"\,", r"\;", r"\:", r"\!", r"\ ", r"\quad", r"\qquad"):
        return _Atom("space", t), i + 1
    return _Atom("cmd" if t.startswith("\\") else "char", t, head=t), i + 1


def _inner(atom: _Atom) -> list[_Atom]:
    return atom.parts[0] if atom.kind == "group" else [atom]


def _braced(atom: _Atom) -> str:
    return atom.text if atom.kind == "group" else "{" + atom.text + "}"


def _source(atoms: list[_Atom]) -> list[str]:
    return [a.text for a in atoms]


_NARROW = set("ijlt.,;:!|'()[]1")


@functools.cache
def _em(text: str) -> Fraction:
    """An estimate in em, held exactly: widths are sums, and a sum of floats depends on its order (a line
    measured whole could come out wider than the sum of its pieces, 30.000000000000004 em against 30)."""
    return Fraction(text)


#: No width (held once: a class set measures a few hundred thousand atoms).
_ZERO = Fraction(0)


def _width(atoms: list[_Atom], tex: bool = False) -> Fraction:
    """The sum of the atoms' widths (those measured before read straight from the atom, zeros not added)."""
    total = _ZERO
    for a in atoms:
        w = a.widths.get(tex)
        if w is None:
            w = _atom_width(a, tex)
        if w:
            total += w
    return total


def _visible(tex: str) -> int:
    """Roughly how many glyphs ``tex`` shows (commands count one, braces none)."""
    tex = re.sub(r"\\(mathrm|text|operatorname|mathit|mathbf)\b", "", tex)
    return len(re.sub(r"\\[A-Za-z]+", "x", tex).replace("{", "").replace("}", "").replace(" ", ""))


def _script_width(text: str) -> Fraction:
    """Sub- and superscripts of an atom: about 0.42 em per glyph (they are set smaller)."""
    cut = min((text.index(c) for c in "^_" if c in text), default=len(text))
    return _em("0.42") * _visible(re.sub(r"[_^]", "", text[cut:]))


def _atom_width(a: _Atom, tex: bool = False) -> Fraction:
    """The atom's width, measured once (a group's is asked again for every level it is nested in); ``tex``:
    as TeX sets it in a display (:mod:`.texmetrics`), else the browser estimate."""
    if tex not in a.widths:
        a.widths[tex] = texmetrics.measure(a, _width, _tall, _source) if tex else _measure(a)
    return a.widths[tex]


def _measure(a: _Atom) -> Fraction:
    extra = _script_width(a.text) if a.scripted else _ZERO
    if a.kind == "char":
        if a.head in _BINARY or a.head in _RELATIONS:
            return _em("1.3")
        glyph = _em("0.3") if a.text.split("^")[0].split("_")[0] in _NARROW else _em("0.55")
        return glyph + extra if a.scripted else glyph
    if a.kind == "cmd":
        if a.head in _BINARY or a.head in _RELATIONS:
            return _em("1.4")
        if a.head in (r"\max", r"\min", r"\log", r"\exp"):
            return _em("1.8") + extra
        return _em("0.7") + extra
    if a.kind == "space":
        return _em("0.2")
    if a.kind == "ws":
        return Fraction(0)
    if a.kind == "group":
        return _width(a.parts[0]) + extra
    if a.kind == "frac":
        scale = _em("0.72") if a.head == r"\tfrac" else _em("0.9")
        return max(_width(a.parts[0]), _width(a.parts[1])) * scale + _em("0.3") + extra
    if a.kind == "arg1":
        letters = "".join(_source(a.parts[0]))
        return _em("0.5") * len(letters) + extra
    if a.kind == "sqrt":
        return _width(a.parts[0]) + 1 + extra
    if a.kind == "lr":
        return _width(a.parts[0]) + 1 + extra
    return _em("0.6")


def _tall(atoms: list[_Atom]) -> bool:
    """Whether a fraction is among ``atoms``, at any depth (brackets round them grow to its height)."""
    return any(a.kind == "frac" or _tall([p for part in a.parts for p in part]) for a in atoms)


def width(tex: str, *, tex_metrics: bool = False) -> Fraction:
    """A rough width of ``tex`` in em (for deciding what to open up; the browser does the real layout), held
    exactly, so that the width of pieces set side by side is exactly the sum of theirs; with ``tex_metrics``,
    TeX's width in a display at 10 pt, erring wide."""
    atoms = _parsed(tex)
    return _width(atoms, tex_metrics)


def _solid(atoms: list[_Atom]) -> list[_Atom]:
    return [a for a in atoms if a.kind != "ws"]


def _is_op(a: _Atom) -> bool:
    return a.kind in ("char", "cmd") and not a.scripted and (a.head in _BINARY or a.head in _RELATIONS)


def _needs_parens(atoms: list[_Atom], denominator: bool) -> bool:
    atoms = _solid(atoms)
    if len(atoms) == 1 and atoms[0].kind not in ("frac",):
        return False
    if not denominator:
        return any(_is_op(a) and a.head in ("+", "-") for a in atoms[1:])
    return len(atoms) > 1


_PLAIN = {"(": "(", ")": ")", "[": "[", "]": "]", r"\{": r"\{", r"\}": r"\}", "|": "|", ".": "",
          r"\lbrace": r"\{", r"\rbrace": r"\}", r"\langle": r"\langle", r"\rangle": r"\rangle", r"\vert": "|"}


def _sized(delim: str, side: str, tall: bool) -> str:
    r"""A ``\left``/``\right`` delimiter as one that needs no partner (a line may end between the two):
    ``\biggl(`` round a fraction, else the plain bracket."""
    plain = _PLAIN.get(delim, delim)
    return f"\\bigg{side}{plain}" if tall and plain else plain


def _open_up(atoms: list[_Atom], wide: float, tex: bool = False, stack=None) -> list[_Atom]:
    """Replace fractions and brackets wider than ``wide`` em by their inline forms, recursively; with ``tex``
    (widths as TeX sets them, for print), a fraction stays whole, ``stack(fraction, wide)`` setting its parts on
    lines (:mod:`.texlines`), and brackets round one keep a fraction's height."""
    out: list[_Atom] = []
    for a in atoms:
        if a.kind == "ws":
            out.append(a)
            continue
        if a.scripted or _atom_width(a, tex) <= wide or a.kind not in ("frac", "lr", "group"):
            out.append(a)
            continue
        if tex and a.kind == "frac":
            out.append(stack(a, wide))
            continue
        if a.kind == "group":
            out.extend(_open_up(a.parts[0], wide, tex, stack))
        elif a.kind == "lr":
            tall = tex and _tall(a.parts[0])
            out.append(_Atom("char", _sized(a.head, "l", tall), head="open"))
            out.extend(_open_up(a.parts[0], wide, tex, stack))
            out.append(_Atom("char", _sized(a.tail, "r", tall), head="close"))
        else:
            num, den = a.parts
            for k, part in enumerate((num, den)):
                if k == 1:
                    out.append(_Atom("char", "/", head="/"))
                paren = _needs_parens(part, denominator=k == 1)
                if paren:
                    out.append(_Atom("char", "(", head="open"))
                out.extend(_open_up(part, wide))
                if paren:
                    out.append(_Atom("char", ")", head="close"))
    return out


def pieces(tex: str, wide: float = WIDE, within: float | None = None) -> list[str]:
    """``tex`` cut into LaTeX pieces, each valid on its own, that read as ``tex`` when set side by side; with
    ``within``, a formula no wider than that (in em, estimated) stays whole."""
    atoms = _parsed(tex)
    if within is not None and _width(atoms) <= within:
        return [tex]
    return [text for text, _, _ in _pieces(atoms, wide)]


def lines(tex: str, em: float, wide: float = WIDE) -> list[str]:
    """``tex`` as lines no wider than ``em`` (estimated): whole when it fits, else its :func:`pieces` joined
    back into as few lines as fit (a piece wider than ``em`` is a line of its own). Parsed once: a width is
    the sum of its atoms' (exact: :func:`_em`), so a line's is the sum of its pieces'. (Lines for print, in
    TeX's widths: :func:`.texlines.lines`.)"""
    atoms = _parsed(tex)
    if _width(atoms) <= em:
        return [tex]
    out: list[str] = []
    room = Fraction(0)
    for text, w, _ in _pieces(atoms, wide):
        if out and room + w <= em:
            out[-1] += " " + text
            room += w
        else:
            out.append(text)
            room = w
    return out


def _gap(before: _Atom | None, after: _Atom | None) -> bool:
    r"""Whether a space between ``before`` and ``after`` sits between two factors of a product (``B D``,
    ``C \, \mathrm{MFU}``), where a printed line may be cut; never after a number (``2 B``, a value and its
    unit: ``1.01\,\mathrm{ms}``)."""
    if before is None or after is None or _is_op(before) or _is_op(after) or before.head[:1].isdigit():
        return False
    return (before.head not in ("open", ",", r"\max", r"\min", r"\log", r"\exp", r"\ln") and before.kind != "space"
            and after.head not in ("close", ",") and after.kind != "space")


def _pieces(atoms: list[_Atom], wide: float, tex: bool = False, stack=None) -> list[tuple[str, Fraction, bool]]:
    """The pieces of a parsed formula with their widths, and whether each begins between two factors of a
    product (with ``tex`` only, for a printed line: a browser wraps a formula's pieces, it cannot add a sign)."""
    atoms = _open_up(atoms, wide, tex, stack)
    chunks: list[list[_Atom]] = [[]]
    gaps: set[int] = set()
    solid = [k for k, a in enumerate(atoms) if a.kind != "ws"]
    previous = {k: (atoms[solid[n - 1]] if n else None) for n, k in enumerate(solid)}
    following = {k: [atoms[j] for j in solid[n + 1:n + 3]] for n, k in enumerate(solid)}
    for k, a in enumerate(atoms):
        if tex and chunks[-1] and a.kind in ("ws", "space") and a.text.strip() in ("", r"\,"):
            n = bisect.bisect_left(solid, k)  # the solid atoms either side
            before = atoms[solid[n - 1]] if n else None
            after = atoms[solid[n + (a.kind != "ws")]] if n + (a.kind != "ws") < len(solid) else None
            if _gap(before, after):
                gaps.add(len(chunks))
                chunks.append([a] if a.kind == "space" else [])
                continue
        if a.kind == "ws":
            chunks[-1].append(a)
            continue
        prev = previous[k]
        unary = prev is None or _is_op(prev) or prev.head == "open" or (prev.kind == "char" and prev.text == ",")
        if chunks[-1] and _is_op(a) and not unary and not _scientific(a, following[k]) and not (tex and a.head == "/"):
            if a.head == "/":  # keep a slash at the end of the line it divides
                chunks[-1].append(a)
                chunks.append([])
                continue
            chunks.append([])
        chunks[-1].append(a)
        if a.kind == "char" and (a.text == "," or (tex and a.head == "open")) and k + 1 < len(atoms):
            chunks.append([])  # after a comma; in print, after an opened bracket too (``\max\biggl(`` ends a line)
    texts = [("".join(_source(c)).strip(), _width(c, tex), n in gaps) for n, c in enumerate(chunks)]
    return [(t, w, gap) for t, w, gap in texts if t]


def _scientific(op: _Atom, after: list[_Atom]) -> bool:
    r"""Whether ``op`` is the ``\times`` of a number in scientific notation (``4.59 \times 10^{14}``), which is
    never cut."""
    return (op.head == r"\times" and len(after) == 2 and after[0].text == "1"
            and after[1].text.startswith("0^") and after[1].scripted)


def starts_with_operator(tex: str) -> bool:
    """Whether a piece from :func:`pieces` begins with a binary operator or a relation."""
    atoms = _solid(_parsed(tex))
    return bool(atoms) and _is_op(atoms[0])


def rows(tex: str) -> list[list[str]]:
    r"""The rows of an ``aligned`` environment (or of plain ``\\``-separated lines), each as its cells."""
    body = re.sub(r"\\begin\{(aligned|align\*?|gathered)\}|\\end\{(aligned|align\*?|gathered)\}", "", tex)
    return [[cell.strip() for cell in row.split("&")] for row in re.split(r"\\\\", body) if row.strip()]
