"""The parts of a class set that issue 28's last changes made cheaper, timed alone on real problems (run it once per
checkout, ``PYTHONPATH=CHECKOUT python3 benchmarks/parts.py``, the checkouts in turns; best of five, CPU time):

- the line breaker (:mod:`scalemath.values.mathsplit`): the page lines and the HTML pieces of every derivation row
  of 80 problems of ten generators, parsed afresh;
- the named steps (:func:`scalemath.problems.typeset._named_steps`) of those problems' evaluations, from nothing
  (eight draws of each generator: where the shapes are shared, the first draw works them out);
- a PDF figure's font subsets: made by fontTools, against read back from scalemath's persistent cache (a temporary
  folder), for the glyphs of three collective figures;
- drawing: the figures of every figure generator (two seeds each) as SVG and PDF, with new font subsets and with
  them made (``python3 benchmarks/parts.py drawing`` runs that part alone).
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("SCALEMATH_CACHE_DIR", "off")

GENERATORS = ["training_choose_mesh", "gpu_superpod", "inference_min_topology", "transformer_flops",
              "inference_kv_cache", "sharding_collective_time", "training_gpu", "inference_tp_limits",
              "matmul_bounds", "training_fsdp_tp"]


def _best(work, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def rows_and_steps() -> str:
    from scalemath.problems import typeset
    from scalemath.problems.registry import made_problem
    from scalemath.values import mathsplit

    evs = [a.evaluated for g in GENERATORS for seed in range(1, 9)
           for a in made_problem(g, seed, f"p{seed}").answers if a.evaluated is not None]
    texs = []
    for ev in evs:
        for st, expr, named in typeset._named_steps(ev):
            used = typeset._free_symbols(expr)
            given = tuple(sorted(((k, v) for k, v in ev.given.items() if k in used), key=lambda kv: kv[0].name))
            given += tuple((k, v) for k, v in named if k in used)
            texs += [t for _, t in typeset._step_parts(expr, given, st.value if st.is_numeric else None,
                                                       st.step.unit)]
    texs = list(dict.fromkeys(texs))

    def breaker():
        mathsplit._parsed.cache_clear()
        for tex in texs:
            mathsplit.lines(tex, 30.0)
            mathsplit.pieces(tex, within=8.0)

    def named():
        typeset._NAMED.clear()
        if hasattr(typeset, "_shapes"):
            typeset._shapes.cache_clear()
        for ev in evs:
            typeset._named_steps(ev)

    return (f"{len(texs)} formulas: line breaker {_best(breaker) * 1000:.0f} ms; {len(evs)} evaluations: named steps "
            f"{_best(named) * 1000:.0f} ms")


def subsets() -> str:
    from matplotlib.backends import _backend_pdf_ps as pdf_ps

    from scalemath import cache
    try:
        from scalemath.plots import fontsubset
    except ImportError:  # a checkout before the subsets had their own module
        from scalemath.plots import output as fontsubset
    from scalemath.problems import figures
    from scalemath.problems.figures import Spec

    if not hasattr(fontsubset, "_stored_subset"):
        return "font subsets: not kept between runs in this checkout"
    specs = [Spec("collective", ("tpu-v5e", 16, (10, 34))), Spec("collective", ("tpu-v4p", 8, (12, 34))),
             Spec("collective", ("tpu-v5p", 8, (12, 30)))]
    fontsubset._SUBSETS.clear()
    for spec in specs:
        figures._draw(spec, ["pdf"])
    keys = list(fontsubset._SUBSETS)
    made = pdf_ps.get_glyphs_subset

    def by_fonttools():
        for path, face, _size, _mtime, glyphs in keys:
            from matplotlib.font_manager import FontPath

            with made(FontPath(path, face), set(glyphs)) as subset:
                pdf_ps.font_as_file(subset.font).getvalue()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ[cache.ENV] = tmp
        cache._FOLDERS.clear()
        for key in keys:
            fontsubset._store_subset(key, fontsubset._SUBSETS[key])

        def read_back():
            for key in keys:
                assert fontsubset._stored_subset(key) is not None

        stored = _best(read_back)
        cache._FOLDERS.clear()
    return (f"{len(keys)} font subsets: made by fontTools {_best(by_fonttools) * 1000:.0f} ms, read back from the "
            f"cache {stored * 1000:.1f} ms")


def drawing() -> str:
    """The figures of the figure generators (two seeds each) drawn as SVG and PDF from their specs, in a process whose
    font subsets start empty: CPU per figure, best of three passes (the first pass makes the subsets)."""
    from scalemath.problems import figures
    from scalemath.problems.registry import generators, made_problem

    try:
        from scalemath.plots import fontsubset
    except ImportError:
        from scalemath.plots import output as fontsubset
    specs = [figures.spec_for(made_problem(g, seed, f"p{seed}")) for g in generators() if g.startswith("figure_")
             for seed in (1, 2)]
    specs = [s for s in specs if s is not None]
    for spec in specs:
        figures.build(spec)
    figures.load_drawing()
    fontsubset._SUBSETS.clear()
    first = time.process_time()
    for spec in specs:
        figures._draw(spec, ["svg", "pdf"])
    first = time.process_time() - first

    def draw():
        for spec in specs:
            figures._draw(spec, ["svg", "pdf"])

    return (f"{len(specs)} figures as SVG + PDF: {first / len(specs) * 1000:.0f} ms a figure with new font subsets, "
            f"{_best(draw, 3) / len(specs) * 1000:.0f} ms with them made")


if __name__ == "__main__":
    import sys

    PARTS = {"rows": rows_and_steps, "subsets": subsets, "drawing": drawing}
    for name in sys.argv[1:] or PARTS:  # python3 benchmarks/parts.py [rows] [subsets] [drawing]
        print(PARTS[name]())
