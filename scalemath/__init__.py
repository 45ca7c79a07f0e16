"""scalemath: the arithmetic of scaling ML models, exact and checkable.

The engine derives closed forms with SymPy (``scalemath.symbolic``), the
registry names every quantity a user can ask for (``scalemath.quantities``),
the catalog holds real chips (``scalemath.catalog.hardware``), and the problem
generator renders checked homework sets (``scalemath.problems``).

>>> from scalemath import evaluate, get_quantity, Context
>>> evaluate(get_quantity("matmul.critical_batch_approx"), Context(chip="h100")).value
19800/67

For notebooks and scripts, the commands are functions (``scalemath.api``), whose results show
themselves in Jupyter and keep the exact value:

>>> import scalemath
>>> scalemath.derive("matmul.critical_batch_approx", chip="h100").exact
19800/67
"""

from .errors import ScalemathError

_API = ("derive", "solve", "check", "plan", "serve", "shard", "generate", "grade", "hlo")

__all__ = ["__version__", "ScalemathError", "Context", "evaluate", "get_quantity", "get_chip", "load_catalog",
           *_API]

_LAZY = {"Context": ("quantities", "Context"), "evaluate": ("quantities", "evaluate"),
         "get_quantity": ("quantities", "get"), "get_chip": ("catalog.hardware", "get_chip"),
         "load_catalog": ("catalog.hardware", "load_catalog"), **{name: ("api", name) for name in _API}}


def __dir__():
    """The public API, though it loads on first use: ``dir(scalemath)`` and tab completion list it."""
    return sorted(set(globals()) | set(__all__))


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("scalemath")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0+unknown"


def __getattr__(name):
    """Import the engine (and the API) on first use, so that ``import scalemath`` and ``scalemath --help``
    do not load SymPy; ``__version__`` reads the package's metadata when first asked for."""
    if name == "__version__":
        globals()["__version__"] = version = _version()
        return version
    if name not in _LAZY:
        raise AttributeError(f"module 'scalemath' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    return getattr(importlib.import_module(f".{module}", __name__), attr)
