"""Captions with math in them: find the formulas in a step's one-line reason and write them as LaTeX.

The engine writes each step's reason as plain text (``solve T_math = T_comms for B``), because the
same text is printed by the CLI. On a sheet the formulas in it are typeset like the rest of the
math: :func:`split` cuts a caption into prose and formulas, and :func:`to_latex` writes a formula
with the book's letters (the symbol table's LaTeX names, subscripts upright when they are words).

>>> [(kind, text) for kind, text in split("solve T_math = T_comms for B; above it")]
[('text', 'solve '), ('math', 'T_math = T_comms'), ('text', ' for B; above it')]
>>> to_latex("T_math = T_comms")
'T_{\\\\mathrm{math}} = T_{\\\\mathrm{comms}}'
>>> to_latex("C·b_w/(2W)")
'C \\\\cdot b_w/(2W)'
>>> [kind for kind, _ in split("peak FLOPs/s of a pod, AllGather/ReduceScatter bandwidth")]
['text']
"""

from __future__ import annotations

import functools
import re
from typing import Iterator

from ..symbolic.symbols import SYMBOLS

__all__ = ["split", "to_latex"]

_GREEK = {"α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "τ": r"\tau", "η": r"\eta", "µ": r"\mu"}

# one token of a caption: an identifier (with _sub and ^sup parts), a number, an operator, a space, other
_SUP = r"(?:\^(?:\([^)]*\)|[A-Za-z0-9αβγτη]+)|[²³])"
_TOKEN = re.compile(r"""
    (?P<poss>['’]s\b)
  | (?P<ident>[A-Za-zαβγτη][A-Za-z0-9αβγτη]*(?:_(?:\{[^}]*\}|[A-Za-z0-9]+))*""" + _SUP + r"""?)
  | (?P<num>\d+(?:\.\d+)?""" + _SUP + r"""?)
  | (?P<arrow>->|>>|<<)
  | (?P<dots>\.\.\.?)
  | (?P<op>[=+\-−·×/()\[\]{},<>≤≥≈|])
  | (?P<space>[ ]+)
  | (?P<other>.)
""", re.VERBOSE)

_OPERATORS_STRONG = set("=·×/[]{}≤≥≈")
_FUNCTIONS = {"min", "max", "softmax", "cache", "log", "exp", "sqrt"}
_ACRONYMS = {"MLP", "MFU", "MHA", "MQA", "GQA", "GPU", "GPUs", "TPU", "KV", "DCN", "ICI", "HBM", "FSDP", "TP", "DP", "EP",
             "PP", "MoE", "ZeRO", "HLO", "XLA", "NCCL", "FLOP", "FLOPs", "MXU", "VMEM", "PCIe", "DMA", "CPU", "LLM"}
_PROSE_LETTERS = {"a", "x", "A", "I"}  # an article, "x" for times, the pronoun


def _strong_ident(text: str) -> bool:
    return "_" in text or "^" in text or "²" in text or "³" in text or any(c in _GREEK for c in text)


def split(caption: str) -> Iterator[tuple[str, str]]:
    """Yield ``("text", ...)`` and ``("math", ...)`` pieces whose concatenation is ``caption``.

    A formula is a run of identifiers with subscripts or superscripts, single letters, numbers and
    operators that holds at least one strong sign of math (a subscript, ``=``, ``/``, ``·``, a greek
    letter, a bracket); a comma ends it unless it is inside brackets.
    """
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(caption)]
    kinds = []  # per token: "strong", "weak" or "prose"
    for i, (kind, text) in enumerate(tokens):
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        dotted = i > 0 and tokens[i - 1] == ("other", ".")
        if kind == "ident":
            if dotted or text in _ACRONYMS:  # a dotted name (inference.decode.t_comms), an acronym
                kinds.append("prose")
            elif _strong_ident(text):
                kinds.append("strong")
            elif nxt in ("(", "[") and (text in _FUNCTIONS or len(text) <= 3 or text[0].isupper()):
                kinds.append("strong" if nxt == "[" else "weak")
            elif (len(text) == 1 and text not in _PROSE_LETTERS) or (text.isupper() and len(text) <= 3):
                kinds.append("weak")
            else:
                kinds.append("prose")
        elif kind == "num":
            kinds.append("strong" if "^" in text else "weak")
        elif kind == "arrow":
            kinds.append("strong")
        elif kind == "dots":
            kinds.append("weak")
        elif kind == "op":
            kinds.append("strong" if text in _OPERATORS_STRONG else "weak")
        elif kind == "space":
            kinds.append("space")
        else:
            kinds.append("prose")
    pieces: list[tuple[str, str]] = []
    i = 0
    text_buf = ""
    while i < len(tokens):
        if kinds[i] in ("strong", "weak") and tokens[i][1] not in (",", ")", "]", "}", "/", "·", "×", "=", "|", "...", ".."):
            j, depth, end = i, 0, i
            while j < len(tokens) and kinds[j] != "prose":
                t = tokens[j][1]
                if t in ("(", "[", "{"):
                    depth += 1
                elif t in (")", "]", "}"):
                    if depth == 0:
                        break
                    depth -= 1
                elif t == "," and depth == 0:
                    break
                if kinds[j] != "space" and depth == 0:
                    end = j + 1  # the formula ends where its brackets are closed
                j += 1
            run = tokens[i:end]
            run_kinds = kinds[i:end]
            # an unbalanced bracket is left to the prose; the run must not end on an operator
            while run and (run[-1][1] in "=+-−·×/([,<>" ):
                run, run_kinds = run[:-1], run_kinds[:-1]
                while run and run_kinds[-1] == "space":
                    run, run_kinds = run[:-1], run_kinds[:-1]
            text = "".join(t for _, t in run)
            if run and _balanced(text) and _is_math(run, run_kinds):
                if text_buf:
                    pieces.append(("text", text_buf))
                    text_buf = ""
                pieces.append(("math", text))
                i += len(run)
                continue
            text_buf += tokens[i][1]
            i += 1
            continue
        text_buf += tokens[i][1]
        i += 1
    if text_buf:
        pieces.append(("text", text_buf))
    return iter(pieces)


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _is_math(run, run_kinds) -> bool:
    if "strong" not in run_kinds:
        return False
    words = [t for (kind, t), k in zip(run, run_kinds) if kind == "ident"]
    # a slash between two words ("FLOPs/s", "AllGather/ReduceScatter") is prose
    if all(t in ("/",) for (kind, t), k in zip(run, run_kinds) if k == "strong") and not words:
        return False
    return bool(words) or any(kind == "num" for kind, _ in run)


@functools.cache
def _symbol_latex() -> dict[str, str]:
    return {name: info.latex for name, info in SYMBOLS.items() if "_" in name}


def _ident(text: str) -> str:
    sup = ""
    if text[-1] in "²³":
        text, sup = text[:-1], "^{" + _plain(text[-1]) + "}"
    elif "^" in text:
        text, sup = text.split("^", 1)
        sup = sup[1:-1] if sup.startswith("(") and sup.endswith(")") else sup
        sup = "^{" + _plain(sup) + "}"
    known = _symbol_latex().get(text)
    if known:
        return known + sup
    base, *subs = text.split("_")
    out = _word(base)
    for sub in subs:
        sub = sub.strip("{}")
        out += "_{" + (r"\mathrm{" + sub + "}" if len(sub) > 1 else sub) + "}"
    return out + sup


def _word(word: str) -> str:
    if word in _GREEK:
        return _GREEK[word]
    if all(c in _GREEK for c in word):
        return " ".join(_GREEK[c] for c in word)
    if word in ("min", "max", "log", "exp"):
        return "\\" + word
    if word == "sqrt":
        return r"\operatorname{sqrt}"
    if len(word) > 1 and not (word.isupper() and len(word) <= 4):
        return r"\mathrm{" + word + "}"
    return word


def _plain(text: str) -> str:
    """A superscript's inside: greek letters and operators only."""
    return "".join(_GREEK.get(c, {"−": "-", "²": "2", "³": "3"}.get(c, c)) for c in text)


_OPS = {"·": r" \cdot ", "×": r" \times ", "−": "-", "≤": r" \le ", "≥": r" \ge ", "≈": r" \approx ", "->": r" \to ",
        ">>": r" \gg ", "<<": r" \ll ", "|": r"\vert ", "{": r"\{", "}": r"\}"}


def to_latex(formula: str) -> str:
    """A formula found by :func:`split`, as LaTeX."""
    out = []
    for m in _TOKEN.finditer(formula):
        kind, text = m.lastgroup, m.group()
        if kind == "ident":
            out.append(_ident(text))
        elif kind == "num" and text[-1] in "²³":
            out.append(text[:-1] + "^{" + _plain(text[-1]) + "}")
        elif kind == "num" and "^" in text:
            base, sup = text.split("^", 1)
            out.append(base + "^{" + _plain(sup.strip("()")) + "}")
        elif kind == "dots":
            out.append(r"\ldots ")
        elif text in _OPS:
            out.append(_OPS[text])
        else:
            out.append(text)
    return re.sub(r" {2,}", " ", "".join(out)).strip()
