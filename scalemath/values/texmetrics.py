r"""How wide TeX sets a display formula, in em of its 10 pt Computer Modern fonts (pdflatex's default).

:mod:`.mathsplit` estimates widths for a browser, where a rough figure does; a formula cut for a printed column
needs TeX's own figure, or the cut lines overrun it. The glyph widths here are those of the fonts' metric files
(``tftopl cmmi10.tfm`` and so on, in thousandths of an em, script sizes at 7 pt), and the spacing is TeX's:
a binary operator gets a medium space (4/18 em) either side, a relation a thick space (5/18 em), a comma a thin
space after it, a fraction the null delimiter space (0.12 em) either side. Sub- and superscripts are counted
side by side (stacked they are narrower), and italic corrections are allowed for, so the figure errs wide.

>>> float(glyphs("8192"))
2.0
"""

from __future__ import annotations

import re
import string
from fractions import Fraction

__all__ = ["glyphs", "script", "upright", "BINARY", "RELATION", "COMMA", "FRACTION", "DELIMITER", "SPACES",
           "OPERATORS", "RELATIONS", "BINARY_OPS", "measure"]

#: The relations and binary operators a formula is cut before (:mod:`.mathsplit` reads them from here).
RELATIONS = {"=", r"\approx", r"\le", r"\ge", "<", ">", r"\leq", r"\geq", r"\ne", r"\to", r"\ll", r"\gg", r"\sim"}
BINARY_OPS = {"+", "-", r"\cdot", r"\times", r"\pm", "/"}

_LETTERS = string.ascii_lowercase + string.ascii_uppercase


def _table(widths: str, digit: int, extra: dict[str, int]) -> dict[str, Fraction]:
    out = {c: Fraction(int(w), 1000) for c, w in zip(_LETTERS, widths.split())}
    out.update({d: Fraction(digit, 1000) for d in string.digits})
    out.update({c: Fraction(w, 1000) for c, w in extra.items()})
    return out


#: Math italic (cmmi10), with each capital's italic correction (up to 0.1 em) added: TeX adds it in math.
_ITALIC = _table("529 429 433 520 466 490 477 576 345 412 521 298 878 600 485 503 446 451 469 361 572 485 716 572 "
                 "490 465 750 759 765 828 788 743 786 881 518 655 899 681 1050 883 763 742 791 759 663 704 783 "
                 "805 1045 828 804 723", 500, {".": 278, ",": 278, "(": 389, ")": 389, "[": 278, "]": 278,
                                               "/": 500, "'": 275, "|": 278, "!": 278, ":": 278, ";": 278})
#: Upright (cmr10), as in ``\mathrm{...}`` and for digits.
_UPRIGHT = _table("500 556 444 556 444 306 500 556 278 306 528 278 833 556 500 556 528 392 394 389 556 528 722 528 "
                  "528 444 750 708 722 764 681 653 785 750 361 514 778 625 917 750 778 681 778 736 556 722 750 "
                  "750 1028 750 750 611", 500, {".": 278, ",": 278, "(": 389, ")": 389, "-": 333, " ": 333})
#: Script size: math italic (cmmi7) at 7 pt, with room for italic corrections.
_SCRIPT = _table("434 352 357 416 379 390 390 468 283 331 425 253 710 494 395 412 367 371 377 302 473 400 579 453 "
                 "406 382 601 604 624 654 637 557 623 705 404 492 722 549 843 683 608 559 630 602 541 552 615 "
                 "562 852 686 560 595", 410, {".": 226, ",": 226, "(": 313, ")": 313, "'": 250})
#: Script size upright (cmr7).
_SCRIPT_UPRIGHT = _table("399 442 356 442 356 248 399 442 226 248 420 226 657 442 399 442 420 313 317 313 442 420 571 "
                         "420 420 356 590 559 571 602 538 516 619 590 289 408 612 494 719 590 614 538 614 581 442 "
                         "571 590 590 806 590 590 485", 399, {".": 226, ",": 226, "(": 313, ")": 313, "-": 269})

#: A binary operator with its medium spaces: +, -, \times, \pm (0.778 em wide) and \cdot (0.278 em).
BINARY = {"+": Fraction(1222, 1000), "-": Fraction(1222, 1000), r"\times": Fraction(1222, 1000),
          r"\pm": Fraction(1222, 1000), r"\cdot": Fraction(722, 1000), "/": Fraction(500, 1000)}
#: A relation (=, \approx, \le, ...) with its thick spaces.
RELATION = Fraction(1334, 1000)
#: A comma and the thin space after it.
COMMA = Fraction(445, 1000)
#: What a fraction adds to its wider part: the null delimiter space either side.
FRACTION = Fraction(240, 1000)
#: One ``\left``/``\right`` delimiter grown round a fraction (about \biggl's size), or a plain bracket.
DELIMITER = {True: Fraction(750, 1000), False: Fraction(389, 1000)}
#: Spacing commands.
SPACES = {r"\,": Fraction(167, 1000), r"\:": Fraction(222, 1000), r"\;": Fraction(278, 1000),
          r"\!": Fraction(-167, 1000), r"\ ": Fraction(333, 1000), r"\quad": Fraction(1), r"\qquad": Fraction(2)}
#: Named operators (``\max`` and so on) with the thin space that may follow them.
OPERATORS = {r"\max": Fraction(2028, 1000), r"\min": Fraction(1778, 1000), r"\log": Fraction(1445, 1000),
             r"\exp": Fraction(1695, 1000), r"\ln": Fraction(1000, 1000), r"\sqrt": Fraction(833, 1000),
             # \biggl( read back from text: with its bracket (a glyph), a grown delimiter's width
             r"\biggl": Fraction(361, 1000), r"\biggr": Fraction(361, 1000)}


def glyphs(text: str, *, upright: bool = False, small: bool = False) -> Fraction:
    """The width of ``text``'s glyphs set side by side (letters italic unless ``upright``; ``small`` for the
    script size); a glyph not in the tables counts as a capital M, erring wide."""
    table = (_SCRIPT_UPRIGHT if upright else _SCRIPT) if small else (_UPRIGHT if upright else _ITALIC)
    wide = table["M"]
    return sum((table.get(c, wide) for c in text if not c.isspace() or upright), Fraction(0))


def script(text: str) -> Fraction:
    r"""A script's width: ``{\mathrm{ici}}``, ``{14}``, ``x``; commands count as one wide glyph, and the script
    space (0.05 em) is added."""
    upright = re.findall(r"\\(?:mathrm|text|operatorname)\{([^{}]*)\}", text)
    rest = re.sub(r"\\(?:mathrm|text|operatorname)\{[^{}]*\}", "", text)
    rest = re.sub(r"\\[A-Za-z]+", "M", rest).replace("{", "").replace("}", "").replace("^", "").replace("_", "")
    return (sum((glyphs(u, upright=True, small=True) for u in upright), Fraction(0))
            + glyphs(rest.replace(" ", ""), small=True) + Fraction(50, 1000))


def upright(text: str) -> Fraction:
    r"""``\mathrm{text}`` at full size."""
    return glyphs(text, upright=True)


def measure(a, width_of, tall, source) -> Fraction:
    """The width of one of :mod:`.mathsplit`'s atoms as TeX sets it in a display, erring wide; ``width_of``,
    ``tall`` and ``source`` are mathsplit's own (a list of atoms' width, whether it holds a fraction, its
    source)."""
    subs = sum((script(arg) for t, arg in a.scripts if t == "_"), Fraction(0))
    sups = sum((script(arg) for t, arg in a.scripts if t == "^"), Fraction(0))
    extra = max(subs, sups)  # a sub- and a superscript stack
    if a.kind in ("char", "cmd"):
        if a.head in RELATIONS:
            return RELATION
        if a.head in BINARY_OPS:
            return BINARY.get(a.head, BINARY["+"])
        if a.head in ("open", "close"):
            return DELIMITER[a.text.startswith(r"\big")] if a.text.startswith("\\") else glyphs(a.text)
        if a.head == ",":
            return COMMA
        if a.kind == "char":
            return glyphs(a.head) + extra
        return OPERATORS.get(a.head, Fraction(4, 5)) + extra
    if a.kind == "space":
        return SPACES.get(a.text, Fraction(278, 1000))
    if a.kind == "ws":
        return Fraction(0)
    if a.kind == "group":
        return width_of(a.parts[0], True) + extra
    if a.kind == "frac":
        scale = Fraction(3, 4) if a.head == r"\tfrac" else 1
        return max(width_of(a.parts[0], True), width_of(a.parts[1], True)) * scale + FRACTION + extra
    if a.kind == "arg1":
        if a.head in (r"\mathrm", r"\text", r"\operatorname", r"\textrm", r"\mathsf", r"\mathbf"):
            return upright("".join(source(a.parts[0]))) * (Fraction(23, 20) if a.head == r"\mathbf" else 1) + extra
        return width_of(a.parts[0], True) + extra
    if a.kind == "sqrt":
        return width_of(a.parts[0], True) + OPERATORS[r"\sqrt"] + extra
    if a.kind == "lr":
        return width_of(a.parts[0], True) + 2 * DELIMITER[tall(a.parts[0])] + extra
    return Fraction(1)
