"""The package's architecture, enforced: the import graph has no cycle, and no part imports a part above it.

The layers, lowest first (docs/development.rst lists them): a part may import its own modules and any part
below it, never one above. Imports are read from the source (module level and inside functions alike, since a
function-level import is still a dependency), so the check runs no import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "scalemath"

#: Lowest first. Each entry names top-level parts of scalemath: modules or subpackages.
LAYERS = [
    ("foundation", {"errors", "files", "limits", "cache", "conventions"}),
    ("engine", {"symbolic"}),
    ("catalog", {"catalog"}),
    ("values", {"values"}),
    ("quantities", {"quantities"}),
    ("reports", {"reports"}),
    ("search", {"search"}),
    ("xla", {"xla"}),
    ("plots", {"plots"}),
    ("problems", {"problems"}),
    ("api", {"api"}),
    ("cli", {"cli", "__main__"}),
]
RANK = {part: i for i, (_, parts) in enumerate(LAYERS) for part in parts}
# The package's own __init__ (its version, and the public API named lazily) is in no layer: importing it (for
# ``__version__``) is allowed from anywhere, as it loads only the errors.
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(["scalemath", *parts])] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The scalemath modules ``name`` imports (a name imported from a package counts as its submodule when it
    is one, else as the package)."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "scalemath"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "scalemath":
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in MODULES else target)
    found.discard(name)
    return {m for m in found if m in MODULES}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _rank(module: str) -> int:
    part = _part(module)
    return 0 if part == "" else RANK[part]


def test_every_part_has_a_layer():
    assert sorted({_part(m) for m in MODULES} - set(RANK) - {""}) == []


def test_no_part_imports_a_part_above_it():
    upward = sorted(f"{m} ({LAYERS[_rank(m)][0]}) imports {d} ({LAYERS[_rank(d)][0]})"
                    for m, deps in GRAPH.items() if _part(m) for d in deps if _rank(d) > _rank(m))
    assert upward == []


def test_the_engine_imports_only_itself_and_the_foundation():
    engine = sorted(f"{m} imports {d}" for m, deps in GRAPH.items() if _part(m) == "symbolic" for d in deps
                    if _part(d) not in {"symbolic", "", *LAYERS[0][1]})
    assert engine == []


def test_no_import_cycle():
    """Tarjan's strongly connected components: every component must be a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_checks_see_a_planted_fault():
    """The graph reader finds what the checks above look for: a function-level import upward, and a cycle."""
    planted = {"scalemath.symbolic.x": {"scalemath.cli"}, "scalemath.cli": {"scalemath.symbolic.x"}}
    assert any(_rank(d) > _rank(m) for m, deps in planted.items() for d in deps)
    assert "scalemath.values.parse" in GRAPH["scalemath.values.check"]  # a module-level import is seen
    assert "scalemath.values.printing" in GRAPH["scalemath.values.size"]  # and one inside a function
    assert "scalemath.quantities" in GRAPH["scalemath.cli.common"]  # so is one inside a function


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_400_lines(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module} has {lines} lines: split it by concern"
