"""Turning exact values and expressions into text and LaTeX (rounding happens only here).

>>> decimal(sp.Rational(9850, 41))
'240.2'
>>> with_unit(sp.Rational(1, 1000), "s")
'1 ms'
>>> latex_number(197 * 10**12)
'1.97 \\\\times 10^{14}'
"""

from __future__ import annotations

import functools
import html
import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_UP, Decimal, localcontext
from typing import Mapping

import sympy as sp
from sympy.printing.latex import LatexPrinter

from ..symbolic.symbols import SYMBOLS

__all__ = ["binary_bytes", "decimal", "escape", "exact_text", "markdown_text", "shown_exactly", "with_unit", "latex",
           "latex_number", "latex_unit", "latex_with_unit", "plural_unit", "to_float", "scaled"]

SIG = 4
_SYMBOL_NAMES = {info.symbol: info.latex for info in SYMBOLS.values()}

# unit -> prefixes to choose from (factor, label); decimal prefixes only: GB is 1e9 bytes, never GiB.
_PREFIXES = {
    "s": [(1, "s"), (sp.Rational(1, 10**3), "ms"), (sp.Rational(1, 10**6), "µs"), (sp.Rational(1, 10**9), "ns")],
    "byte": [(10**15, "PB"), (10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "kB"), (1, "B")],
    "byte/s": [(10**12, "TB/s"), (10**9, "GB/s"), (10**6, "MB/s"), (1, "B/s")],
    "FLOP/s": [(10**18, "EFLOP/s"), (10**15, "PFLOP/s"), (10**12, "TFLOP/s"), (10**9, "GFLOP/s"), (1, "FLOP/s")],
    "Hz": [(10**9, "GHz"), (10**6, "MHz"), (1, "Hz")],
}

_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
#: LaTeX for the typography of scalemath's own prose (``escape(text, "tex", prose=True)``).
_TEX_TYPOGRAPHY = {"·": r"\(\cdot\)", "≪": r"\(\ll\)", "×": r"\(\times\)", "→": r"\(\to\)", "≈": r"\(\approx\)",
                   "µ": r"\(\mu\)", "−": "-", "≤": r"\(\le\)", "≥": r"\(\ge\)", "α": r"\(\alpha\)", "β": r"\(\beta\)",
                   "γ": r"\(\gamma\)", "τ": r"\(\tau\)", "²": r"\(^2\)", "³": r"\(^3\)", "≠": r"\(\ne\)",
                   "∞": r"\(\infty\)", "\u202f": r"\,", "\u00a0": "~", "’": "'", "“": "``", "”": "''", "–": "--",
                   "—": "---"}
_TEX_PROSE = str.maketrans({**_LATEX_SPECIALS, **_TEX_TYPOGRAPHY})
#: Markdown: ``<`` and ``>`` as entities (no raw HTML, no autolink); a backslash before what makes emphasis, code,
#: links and images, tables, strikethrough, math and headings (\\ * _ ` [ ] | ~ $ #).
_MARKDOWN_SPECIALS = {"<": "&lt;", ">": "&gt;", **{c: "\\" + c for c in "\\*_`[]|~$#"}}
#: An ``&`` that starts a character reference (``&lt;``, ``&#60;``, ``&#x3c;``); any other ``&`` is shown as it is.
_CHARACTER_REFERENCE = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
#: What opens a block at the start of a line: a list item (- + 1. 1)), a thematic break or a setext underline.
_MARKDOWN_BLOCK_START = re.compile(r"^(?=[-+=])|^[0-9]{1,9}(?=[.)](?:\s|$))")


def markdown_text(text: str) -> str:
    r"""``text`` a user or a file gave (a title, a student's name, a chip's name) as Markdown that shows it as
    typed, wherever it lands: a heading, a paragraph, a table cell.

    Raw HTML cannot pass (``<`` and ``>`` become entities, and so does the ``&`` of a character reference, so that
    ``&lt;`` shows as typed), nor can a link, an image, emphasis, code, a table cell's end, strikethrough or math
    (their characters get a backslash); line breaks and other control characters become spaces and the text is
    stripped, so it never starts a block of its own (a list item or a heading at its start is escaped too). ``(``,
    ``)`` and ``!`` stay as typed: with the brackets escaped they make no link. Ordinary names stay as they are.

    >>> print(markdown_text("Zoë O'Brien (TA) & Week 3!"))
    Zoë O'Brien (TA) & Week 3!
    >>> print(markdown_text("<img src=x onerror=alert(1)> [x](javascript:alert(1)) *a_b* `c` a|b $x$ &lt;"))
    &lt;img src=x onerror=alert(1)&gt; \[x\](javascript:alert(1)) \*a\_b\* \`c\` a\|b \$x\$ &amp;lt;
    >>> print(markdown_text("# one\n- two"), markdown_text("1. three"), markdown_text("- four"), markdown_text("1.5"))
    \# one - two 1\. three \- four 1.5
    """
    text = _CHARACTER_REFERENCE.sub("&amp;", text)
    text = "".join(_MARKDOWN_SPECIALS.get(c, c) if c.isprintable() else " " for c in text).strip()
    return _MARKDOWN_BLOCK_START.sub(lambda m: m.group() + "\\", text, count=1)


def escape(text: str, fmt: str, *, prose: bool = False) -> str:
    r"""``text`` made literal in ``fmt``. By default a value a user or a file gave (a chip's name): "latex" ("tex")
    escapes ten specials, "markdown" ("md") is :func:`markdown_text`, control characters and line breaks become
    spaces (a row stays a row). ``prose``: scalemath's own running text, line breaks kept; LaTeX also spells its
    typography (``×``, ``µ``, dashes), "html" is :func:`html.escape`, Markdown escapes only ``*`` and ``_``.

    >>> print(escape("a_b&c 50% #1 $x {y} ~^ \\", "latex"), escape("a|b\\c\nd", "markdown"))
    a\_b\&c 50\% \#1 \$x \{y\} \textasciitilde{}\textasciicircum{} \textbackslash{} a\|b\\c d
    >>> print(escape("2 × 8 ≈ 16 µs", "tex", prose=True), escape("a_b *c*", "md", prose=True))
    2 \(\times\) 8 \(\approx\) 16 \(\mu\)s a\_b \*c\*
    """
    if fmt in ("latex", "tex"):
        if prose:
            return text.translate(_TEX_PROSE)
        return "".join(_LATEX_SPECIALS.get(c, c) if c.isprintable() else " " for c in text)
    if fmt in ("markdown", "md"):
        return text.replace("*", r"\*").replace("_", r"\_") if prose else markdown_text(text)
    if fmt == "html" and prose:
        return html.escape(text, quote=True)
    raise ValueError(f"escape: unknown format {fmt!r} (latex or markdown; html for prose)")


def to_float(value: sp.Expr) -> float:
    return float(sp.N(value, 30))


def decimal(value: sp.Expr, sig: int = SIG) -> str:
    """``value`` rounded half-up to ``sig`` significant figures, in plain or e-notation.

    >>> decimal(sp.Rational(1125, 4)), decimal(sp.Rational(1, 3)), decimal(4112640000000000000)
    ('281.3', '0.3333', '4.113e18')
    """
    value = sp.sympify(value)
    if value == 0:
        return "0"
    if value.is_Integer and abs(value) < 10 ** (sig + 1):
        return str(int(value))
    if value.is_Rational and max(abs(value.p).bit_length(), value.q.bit_length()) > 1000:
        # a huge exact value (a result with thousands of digits): round it with mpmath's binary
        # arithmetic; Decimal(int) of a million-digit integer takes minutes
        from mpmath import libmp

        d = Decimal(libmp.to_str(libmp.from_rational(int(value.p), int(value.q), 120, libmp.round_nearest), 30))
    elif value.is_Rational:
        with localcontext() as ctx:
            ctx.prec = 60
            d = Decimal(int(value.p)) / Decimal(int(value.q))
    else:
        d = Decimal(repr(to_float(value)))
    exp = d.copy_abs().adjusted()
    with localcontext() as ctx:  # exponents beyond Decimal's default 999999 (a result with millions of digits)
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        rounded = d.scaleb(-exp).quantize(Decimal(1).scaleb(1 - sig), rounding=ROUND_HALF_UP)
        if rounded.copy_abs() >= 10:  # 9.9995 -> 10.00
            exp += 1
            rounded = d.scaleb(-exp).quantize(Decimal(1).scaleb(1 - sig), rounding=ROUND_HALF_UP)
    if -3 <= exp < 7:
        text = format(rounded.scaleb(exp), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa = format(rounded, "f")
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    return f"{mantissa}e{exp}"


@functools.lru_cache(maxsize=8192, typed=True)
def exact_text(value: sp.Expr) -> str:
    """The exact value as text: ``9850/41``, ``8192``, ``floor(N/2)`` (remembered: SymPy's printer is slow)."""
    return str(value)


def scaled(value: sp.Expr, unit: str) -> tuple[sp.Expr, str]:
    """``value`` divided by the SI prefix that suits it, and the prefixed unit (none for zero: ``0 s``)."""
    value = sp.sympify(value)
    if value.is_zero:
        return value, next((label for factor, label in _PREFIXES.get(unit, []) if factor == 1), unit)
    magnitude = abs(value) if value.is_Rational else abs(to_float(value))
    for factor, label in _PREFIXES.get(unit, []):
        if magnitude >= factor:
            return value / factor, label
    if unit in _PREFIXES:
        factor, label = _PREFIXES[unit][-1]
        return sp.sympify(value) / factor, label
    return sp.sympify(value), unit


def binary_bytes(n: int) -> str:
    """On-chip sizes are binary: ``128 MiB``, ``256 KiB``.

    >>> binary_bytes(134217728)
    '128 MiB'
    """
    for shift, label in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift:
            return f"{decimal(sp.Rational(n, 1 << shift))} {label}"
    return f"{n} B"


def unrounded(value: sp.Expr) -> str:
    """A count's value before rounding: four figures, and always down to hundredths, so the side of the whole
    number it lies on shows (``1.848``, ``57.9``, ``12222.22``, not ``12220``).

    >>> unrounded(sp.Rational(9241, 5000)), unrounded(sp.Rational(579, 10)), unrounded(sp.Rational(1222222, 100))
    ('1.848', '57.9', '12222.22')
    """
    value = sp.sympify(value)
    whole_digits = len(str(abs(int(value)))) if abs(value) >= 1 else 0
    return decimal(value, max(SIG, whole_digits + 2))


def plain_result(value: sp.Expr, unit: str) -> str:
    """A key's value as plain text (grading reports, LMS answer panels), as the key shows it: a count with all
    its digits, a time, size or rate with its prefix to four figures; counted units plural.

    >>> plain_result(262143, "FLOP"), plain_result(sp.Rational(1, 100), "s"), plain_result(1, "chip")
    ('262143 FLOPs', '10 ms', '1 chip')
    >>> plain_result(920 * 10**12, "FLOP/s")
    '920 TFLOP/s'
    """
    value = sp.sympify(value)
    if value.is_Integer and abs(value) < 10**15 and unit not in _PREFIXES:
        number, label, text = value, unit, str(int(value))
    else:
        number, label = scaled(value, unit)
        text = decimal(number)
    return text if label in ("1", "") else f"{text} {plural_unit(label, number)}"


def with_unit(value: sp.Expr, unit: str, sig: int = SIG) -> str:
    """A rounded value with a readable unit: ``1.395 ms``, ``57500 token``."""
    if not sp.sympify(value).is_number:
        return f"{value} {unit}"
    number, label = scaled(value, unit)
    return f"{decimal(number, sig)} {label}" if label not in ("1", "") else decimal(number, sig)


def latex_number(value, sig: int = SIG, fractions: bool = True, exact_digits: int = 6) -> str:
    """A number for display inside LaTeX: exact where that stays short.

    ``fractions=False`` shows a non-decimal rational as a rounded decimal (for values with units).
    A decimal of at most ``exact_digits`` significant digits is shown exactly; others are rounded to ``sig``.

    >>> latex_number(sp.Rational(1, 10)), latex_number(sp.Rational(75, 52), fractions=False)
    ('0.1', '1.442')
    >>> latex_number(sp.Rational(147456, 100000)), latex_number(sp.Rational(147456, 100000), exact_digits=4)
    ('1.47456', '1.475')
    """
    value = sp.sympify(value)
    if value.is_Integer:
        n = int(value)
        if abs(n) < 10**7:
            return str(n)
        if n > 0 and n & (n - 1) == 0:
            return f"2^{{{n.bit_length() - 1}}}"
        stripped, exp = abs(n), 0
        while stripped % 10 == 0:
            stripped //= 10
            exp += 1
        if len(str(stripped)) <= sig and exp > 0:
            mant = str(stripped)
            mant = mant[0] + ("." + mant[1:] if len(mant) > 1 else "")
            return ("-" if n < 0 else "") + f"{mant} \\times 10^{{{exp + len(str(stripped)) - 1}}}"
    if value.is_Rational and not value.is_Integer:
        p, q = int(value.p), int(value.q)
        if abs(p) == 1 and 10 ** (len(str(q)) - 1) == q and q > 1000:  # 0.1, 0.01, 0.001 stay decimals
            return f"10^{{-{len(str(q)) - 1}}}" if p == 1 else f"-10^{{-{len(str(q)) - 1}}}"
        text = decimal(value, max(sig, exact_digits))
        if "e" not in text and sp.Rational(text) == value:
            return text
        if fractions and abs(p) < 1000 and q < 100:
            return rf"\tfrac{{{p}}}{{{q}}}" if p > 0 else rf"-\tfrac{{{-p}}}{{{q}}}"
    if not value.is_number:
        return latex(value)
    text = decimal(value, sig)
    if "e" in text:
        mant, exp = text.split("e")
        return f"{mant} \\times 10^{{{int(exp)}}}"
    return text


#: Units that are counted things: their name takes an "s" after a number other than 1 (``6 hops``).
_COUNTED = frozenset({"token", "element", "hop", "chip", "link", "core", "layer", "expert", "axis", "node", "param",
                      "sequence", "step", "cent", "day", "hour", "unit", "FLOP", "byte", "cycle", "device", "host",
                      "server", "stage", "head", "micro-batch", "batch", "slice", "pod", "switch", "cable"})
_IRREGULAR = {"axis": "axes", "batch": "batches", "FLOP": "FLOPs", "switch": "switches"}


def plural_unit(unit: str, value=2) -> str:
    """``unit`` as it reads after ``value``: ``6 hops``, ``1 hop``, ``5100 elements``, ``45 tokens/s``.

    Only counted things change (the first word of a rate too); symbols such as ``s``, ``GB`` or ``FLOP/byte``'s
    denominator do not.

    >>> plural_unit("hop", 6), plural_unit("hop", 1), plural_unit("token/s", 45), plural_unit("GB/s", 2)
    ('hops', 'hop', 'tokens/s', 'GB/s')
    """
    head, sep, rest = unit.partition("/")
    if head not in _COUNTED or sp.sympify(value) == 1:
        return unit
    return _IRREGULAR.get(head, head + "s") + sep + rest


def latex_unit(unit: str) -> str:
    if unit in ("1", ""):
        return ""
    return r"\,\mathrm{" + unit.replace("µ", r"\mu ").replace("/", "}/\\mathrm{") + "}"


def latex_with_unit(value, unit: str, sig: int = SIG, *, fractions: bool | None = None,
                    exact_digits: int = 6, plural: bool = False) -> str:
    r"""A value scaled to a readable prefix, as LaTeX: ``1.395\,\mathrm{ms}``.

    A dimensionless value is shown as a small fraction when exact (``fractions=None``); ``fractions=False``
    always shows decimals. ``plural`` writes counted units in the plural after numbers other than 1.

    >>> print(latex_with_unit(6, "hop", plural=True), latex_with_unit(sp.Rational(75, 52), "1", fractions=False))
    6\,\mathrm{hops} 1.442
    """
    if not sp.sympify(value).is_number:
        return latex(value) + latex_unit(unit)
    number, label = scaled(value, unit)
    fractions = unit in ("1", "") if fractions is None else fractions
    shown = latex_number(number, sig, fractions=fractions, exact_digits=exact_digits)
    return shown + latex_unit(plural_unit(label, number) if plural else label)


def shown_exactly(value, unit: str, sig: int = SIG, *, fractions: bool | None = None, exact_digits: int = 6) -> bool:
    """Whether :func:`latex_with_unit` (with the same options) shows ``value`` without rounding it.

    >>> shown_exactly(sp.Rational(9850, 41), "FLOP/byte"), shown_exactly(sp.Rational(1, 2), "1")
    (False, True)
    >>> shown_exactly(123456789012, "token"), shown_exactly(2**34, "token")
    (False, True)
    >>> shown_exactly(sp.Rational(1, 3), "1", fractions=False), shown_exactly(sp.Rational(147456, 10**8), "s", exact_digits=4)
    (False, False)
    """
    number = sp.sympify(scaled(value, unit)[0])
    if not number.is_Rational:
        return False
    if number.is_Integer:
        n = stripped = abs(int(number))
        while stripped and stripped % 10 == 0:
            stripped //= 10
        return n < 10**7 or n & (n - 1) == 0 or len(str(stripped)) <= sig
    fractions = unit in ("1", "") if fractions is None else fractions
    shown = latex_number(number, sig, fractions=fractions, exact_digits=exact_digits)
    if r"\tfrac" in shown or shown.startswith("10^") or shown.startswith("-10^"):
        return True
    return "times" not in shown and sp.Rational(shown) == number


def _multi_letter(latex_name: str) -> bool:
    r"""``\mathrm{MFU}``, ``\mathrm{KV}_{...}``: a name of several upright letters, which would run into its
    neighbours in a product (``C MFU n`` reads ``CMFUn``)."""
    return latex_name.startswith("\\mathrm{") and len(latex_name.split("}")[0]) > len("\\mathrm{") + 1


_MULTI = frozenset(s for s, name in _SYMBOL_NAMES.items() if _multi_letter(name))


class _Printer(LatexPrinter):
    r"""SymPy's LaTeX printer with two changes for readers: a product that holds a multi-letter name
    separates its factors with a thin space (``C\,\mathrm{MFU}\,n``), and a sum starts with a positive
    term when it has one (no denominator starts with a minus: ``2DFW - CDb_x``)."""

    def _print_Mul(self, expr):
        old = self._settings["mul_symbol_latex"]
        if old == " " and any(f in _MULTI or (f.is_Pow and f.base in _MULTI) for f in expr.args):
            self._settings["mul_symbol_latex"] = r" \, "
        try:
            return super()._print_Mul(expr)
        finally:
            self._settings["mul_symbol_latex"] = old

    def _print_Add(self, expr, order=None):
        terms = self._as_ordered_terms(expr, order=order)
        if terms and terms[0].could_extract_minus_sign():
            first = next((i for i, t in enumerate(terms) if not t.could_extract_minus_sign()), None)
            if first is not None:
                terms = [terms[first]] + terms[:first] + terms[first + 1:]
        tex = ""
        for i, term in enumerate(terms):
            if i == 0:
                pass
            elif term.could_extract_minus_sign():
                tex += " - "
                term = -term
            else:
                tex += " + "
            term_tex = self._print(term)
            if self._needs_add_brackets(term):
                term_tex = r"\left(%s\right)" % term_tex
            tex += term_tex
        return tex


def _print_latex(expr, **settings) -> str:
    return _Printer(settings).doprint(expr)


@functools.lru_cache(maxsize=4096)
def _latex_symbolic(expr: sp.Expr) -> str:
    return _print_latex(expr, symbol_names=_SYMBOL_NAMES, mul_symbol=None)


def latex(expr: sp.Expr, values: Mapping[sp.Symbol, object] | None = None) -> str:
    r"""LaTeX of ``expr`` in the book's letters; with ``values``, numbers shown in place of symbols.

    >>> from scalemath.symbolic.symbols import sym
    >>> latex(sym("C") / sym("W_hbm"), {sym("C"): 197 * 10**12})
    '\\frac{1.97 \\times 10^{14}}{W_{\\mathrm{hbm}}}'
    >>> print(latex(sym("C") * sym("MFU") * sym("n_dev")))
    C \, \mathrm{MFU} \, n_{\mathrm{dev}}
    >>> print(latex(sym("C") * sym("D") * sym("F") / (2 * sym("D") * sym("F") * sym("W") - sym("C") * sym("D"))))
    \frac{C D F}{2 D F W - C D}
    """
    used = {s: v for s, v in (values or {}).items() if s in expr.free_symbols}
    if not used:
        return _latex_symbolic(expr)
    names = dict(_SYMBOL_NAMES)
    for s, v in used.items():
        names[s] = r"\left(" + latex_number(v) + r"\right)" if sp.sympify(v) < 0 else latex_number(v)
    return _print_latex(expr, symbol_names=names, mul_symbol="dot" if used else None)
