"""Figures in problems: a generator names a figure, scalemath.plots draws it, the set writer files it.

A generator that asks a student to read a plot registers ``figure(params) -> Spec`` with
:func:`register_figure`; the spec is a kind and the plain values that kind needs (a chip key, op texts,
a ring size), never drawn data. :func:`build` turns a spec into a :class:`scalemath.plots.common.Figure`
through the plots package's own ``data()`` functions (the generator's key comes from the same data, so the
drawing and the key cannot disagree), with the answer's labels left off (an unlabelled ridge, ops named
A, B). :func:`files` draws it once in every format a set needs (SVG for Markdown and HTML, PDF for LaTeX),
with no dates in it, so the same seed gives the same bytes.

Where the figure goes:

- HTML: an ``<img>`` whose source is the SVG as a ``data:`` URI, so the page stays one self-contained
  file, and each figure keeps its own ids and styles (matplotlib's SVG ids would clash inline).
- Markdown: a link to ``figures/<name>.svg``; LaTeX: ``\\includegraphics{figures/<name>.pdf}``.
  :func:`write_files` puts those files beside every document that links them (the set folder, and each
  variant's ``sheets/<id>/`` so a sheet folder can be handed out on its own). The set's marker lists
  them, so ``--force`` replaces them and refuses a folder whose figures were edited.

``<name>`` is the problem id and 8 hex digits of a hash of its generator and seed: variants repeat
problem ids, and the hash does not reveal the seed (which regenerates the key).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from markupsafe import Markup

from ..files import write_file
from .model import Problem

__all__ = ["Spec", "register_figure", "spec_for", "has_figure", "build", "file_bytes", "files", "prepare", "drawn",
           "remember", "figure_name", "markup", "load_drawing", "write_files", "inline_html", "linked_files",
           "drop_latex_files", "FIGURE_KINDS"]


@dataclass(frozen=True)
class Spec:
    """What to draw: a kind of :data:`FIGURE_KINDS` and its arguments (hashable plain values)."""

    kind: str
    args: tuple
    alt: str = ""  # the image's text alternative


_FIGURES: dict[str, Callable[[Mapping[str, object]], Spec]] = {}


def register_figure(generator: str, figure: Callable[[Mapping[str, object]], Spec]) -> None:
    """Declare that ``generator``'s problems carry the figure ``figure(params)``."""
    _FIGURES[generator] = figure


def has_figure(generator: str) -> bool:
    """Whether the problems of ``generator`` (its module imported) show a figure."""
    return generator in _FIGURES


def spec_for(problem: Problem) -> Spec | None:
    from .registry import ensure_loaded

    ensure_loaded(problem.generator)  # a generator's module registers its figure when imported
    make = _FIGURES.get(problem.generator)
    return None if make is None else make(problem.params)


def figure_name(problem: Problem) -> str:
    tag = hashlib.sha256(f"scalemath-figure:{problem.generator}:{problem.seed}".encode()).hexdigest()[:8]
    return f"{problem.id}-{tag}"


# -- the kinds: exact data from scalemath.plots, the answer's labels taken off ------------------------

def _roofline(chip: str, dtype: str, ops: tuple[str, ...], window: tuple[int, int]):
    """One chip's HBM roofline, its ridge unlabelled, ``ops`` marked as op A, op B, ..., x from 2^lo to 2^hi."""
    from .. import quantities as Q
    from ..plots import roofline
    from ..plots.common import Panel

    fig = roofline.data([Q.Context(chip=chip, dtype=dtype)], [roofline.parse_op(t) for t in ops])
    lo, hi = 2 ** window[0], 2 ** window[1]
    panel = fig.panels[0]
    series = tuple(dataclasses.replace(s, label=f"{s.label}, HBM",
                                       x=tuple(x for x in s.x if lo <= x <= hi),
                                       y=tuple(y for x, y in zip(s.x, s.y) if lo <= x <= hi)) for s in panel.series)
    marks = tuple(dataclasses.replace(m, label=f"op {'ABCDEFGH'[m.group]}") for m in panel.marks if m.kind == "op")
    panel = Panel(panel.xlabel, panel.ylabel, panel.xunit, panel.yunit, series, marks, legend="lower right")
    return dataclasses.replace(fig, title=fig.title.split(":")[0] + " (read the values off the axes)",
                               panels=(panel,), note="attainable FLOPs/s = min(peak FLOPs/s, HBM bandwidth "
                                                     "x intensity); the dotted grid marks 2, 3, ... 9 of each decade")


def _collective(chip: str, ring: int, window: tuple[int, int]):
    """An AllGather's time against its size on a ring, the crossover unlabelled, sizes 2^lo to 2^hi."""
    from .. import quantities as Q
    from ..plots import collective
    from ..plots.common import Panel

    fig = collective.data(Q.Context(chip=chip), "all-gather", ring)
    lo, hi = 2 ** window[0], 2 ** window[1]
    panel = fig.panels[0]
    main = panel.series[0]
    keep = [i for i, x in enumerate(main.x) if lo <= x <= hi]
    series = (dataclasses.replace(main, label="AllGather time", x=tuple(main.x[i] for i in keep),
                                  y=tuple(main.y[i] for i in keep)),)
    panel = Panel(panel.xlabel, panel.ylabel, panel.xunit, panel.yunit, series, (), legend="upper left")
    return dataclasses.replace(fig, title=fig.title + " (read the values off the axes)", panels=(panel,),
                               note="the dotted grid marks 2, 3, ... 9 of each decade")


#: kind -> function(*args) giving the Figure (exact values from scalemath.plots' data functions).
FIGURE_KINDS: dict[str, Callable] = {"roofline": _roofline, "collective": _collective}


@functools.lru_cache(maxsize=256)
def build(spec: Spec):
    return FIGURE_KINDS[spec.kind](*spec.args)


# -- drawing --------------------------------------------------------------------------------------

#: The figures this process drew or read, per (spec, format).
_FILES: dict[tuple[Spec, str], bytes] = {}


def file_bytes(spec: Spec, fmt: str) -> bytes:
    """The figure as ``svg`` or ``pdf`` bytes, the same for the same spec (no dates, no random ids)."""
    return files(spec, (fmt,))[fmt]


def files(spec: Spec, fmts: Sequence[str]) -> dict[str, bytes]:
    """The figure in each of ``fmts``; those not drawn before are drawn together, from one drawing and one
    layout. Kept in this process and between runs in scalemath's persistent cache (:mod:`scalemath.cache`),
    which spares importing matplotlib and drawing when a figure was drawn before."""
    from .. import cache

    out = {}
    for fmt in fmts:
        data = _FILES.get((spec, fmt))
        if data is None:
            data = cache.load("figure", _key(spec, fmt))
        if isinstance(data, bytes):
            out[fmt] = _FILES[spec, fmt] = data
    missing = [fmt for fmt in fmts if fmt not in out]
    if missing:
        for fmt, data in _draw(spec, missing).items():
            cache.store("figure", _key(spec, fmt), data)
            out[fmt] = _FILES[spec, fmt] = data
    return out


def load_drawing() -> None:
    """Import what drawing a figure takes (matplotlib and its Agg, SVG and PDF backends, fontTools' subsetter):
    workers forked afterwards share those modules instead of each importing them again (about half a second of CPU
    a worker)."""
    from ..plots.common import _pyplot

    _pyplot()
    import fontTools.subset  # noqa: F401 - imported for the workers
    import matplotlib.backends.backend_pdf  # noqa: F401
    import matplotlib.backends.backend_svg  # noqa: F401


def _kinds(formats: Sequence[str]) -> list[str]:
    """The figure files documents in ``formats`` show: SVG for Markdown and HTML, PDF for LaTeX and PDF."""
    return [f for f, wanted in (("svg", "md" in formats or "html" in formats),
                                ("pdf", "tex" in formats or "pdf" in formats)) if wanted]


def prepare(problems: Sequence[Problem], formats: Sequence[str]) -> None:
    """Draw the figures of ``problems`` that documents in ``formats`` show before the documents ask for them one
    format at a time, so each figure is drawn once."""
    kinds = _kinds(formats)
    for spec in dict.fromkeys(s for s in map(spec_for, problems) if s is not None):
        files(spec, kinds)


def drawn(problem: Problem, formats: Sequence[str]) -> dict[str, bytes]:
    """The files of ``problem``'s figure that this process holds for ``formats`` (none when it has no figure)."""
    spec = spec_for(problem)
    if spec is None:
        return {}
    return {fmt: _FILES[spec, fmt] for fmt in _kinds(formats) if (spec, fmt) in _FILES}


def remember(problem: Problem, drawn_files: dict[str, bytes]) -> None:
    """Keep the files of ``problem``'s figure drawn in another process (a worker)."""
    if drawn_files:
        spec = spec_for(problem)
        for fmt, data in drawn_files.items():
            _FILES[spec, fmt] = data


@functools.cache
def _drawing_libraries() -> str:
    """The versions of what draws and embeds a figure: a drawing another matplotlib or fontTools made is not reused
    (the cache's own key covers this package, Python and SymPy only)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("matplotlib", "fonttools"):
        try:
            found.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            found.append(f"{name}=?")
    return " ".join(found)


def _key(spec: Spec, fmt: str) -> str:
    return f"{fmt} {spec.kind} {spec.args!r} {_drawing_libraries()}"


def _draw(spec: Spec, fmts: Sequence[str]) -> dict[str, bytes]:
    from ..plots.grid import reading_grid
    from ..plots.output import saved_files

    figure = build(spec)
    return saved_files(figure, fmts, before=lambda fig: reading_grid(fig, figure.panels))


def markup(problem: Problem, fmt: str) -> Markup:
    """The figure where a template puts it, in ``fmt`` (md, tex, html); empty when the problem has none."""
    spec = spec_for(problem)
    if spec is None:
        return Markup("")
    name = figure_name(problem)
    alt = spec.alt or f"Figure for {problem.title}"
    if fmt == "html":
        data = base64.b64encode(file_bytes(spec, "svg")).decode("ascii")
        return Markup(f'<div class="figure" style="margin: 0.8em 0"><img src="data:image/svg+xml;base64,{data}" '
                      f'alt="{html.escape(alt)}" style="width: 100%; max-width: 640px; height: auto" /></div>')
    if fmt == "tex":
        return Markup("\\begin{center}\n\\includegraphics[width=0.85\\linewidth]{figures/" + name
                      + ".pdf}\n\\end{center}")
    return Markup(f"![{alt.replace(']', ')').replace('[', '(')}](figures/{name}.svg)")


def inline_html(problem: Problem, statement_html: str) -> str:
    """An LMS statement (HTML made from the Markdown one) with its figure link replaced by the image itself,
    an SVG ``data:`` URI (PrairieLearn shows it so; the Moodle and QTI exports turn it into a file of their
    package with :func:`linked_files`)."""
    spec = spec_for(problem)
    if spec is None:
        return statement_html
    link = re.compile(r"!\[[^\]\n]*\]\(figures/" + re.escape(figure_name(problem)) + r"\.svg\)")
    return link.sub(lambda m: str(markup(problem, "html")).replace("<div", "<span").replace("</div>", "</span>"),
                    statement_html)


_DATA_SVG = re.compile(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')


def linked_files(statement_html: str, base: str) -> tuple[str, list[tuple[str, str]]]:
    """The figures of ``statement_html`` as files of a package instead of SVG ``data:`` URIs (which Canvas
    drops): each becomes ``src="<base>figure-<hash>.svg"``, returned with the (name, base64) of the file to
    ship beside it. Moodle's ``base`` is ``@@PLUGINFILE@@/``; a QTI package's is the folder the file goes in."""
    files: dict[str, str] = {}

    def swap(m: re.Match) -> str:
        name = "figure-" + hashlib.sha256(m.group(1).encode("ascii")).hexdigest()[:12] + ".svg"
        files[name] = m.group(1)
        return f'src="{base}{name}"'

    return _DATA_SVG.sub(swap, statement_html), sorted(files.items())


def write_files(folder: Path, groups: Sequence[tuple[Path, Sequence[Problem]]], formats: Sequence[str]) -> None:
    """Write the figures of each (subfolder, problems) into ``subfolder/figures/``: SVG when Markdown is
    written, PDF when LaTeX or PDF is (HTML carries its figures inside)."""
    kinds = [f for f, wanted in (("svg", "md" in formats), ("pdf", "tex" in formats or "pdf" in formats)) if wanted]
    for where, problems in groups:
        for p in problems:
            spec = spec_for(p)
            if spec is None:
                continue
            target = folder / where / "figures"
            target.mkdir(parents=True, exist_ok=True)
            for ext in kinds:
                write_file(target / f"{figure_name(p)}.{ext}", file_bytes(spec, ext), what="figure")


def drop_latex_files(folder: Path) -> None:
    """Remove the figures' PDFs pdflatex read (when the set keeps no .tex), and figure folders left empty."""
    for where in sorted(folder.rglob("figures"), reverse=True):
        if not where.is_dir() or where.is_symlink():
            continue
        for pdf in where.glob("*.pdf"):
            pdf.unlink()
        if not any(where.iterdir()):
            where.rmdir()
