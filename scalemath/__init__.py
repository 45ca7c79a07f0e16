"""scalemath: the arithmetic of scaling ML models, exact and checkable.

The engine derives closed forms with SymPy (``scalemath.symbolic``), the
registry names every quantity a user can ask for (``scalemath.quantities``),
the catalog holds real chips (``scalemath.hardware``), and the problem
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

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("scalemath")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

from .errors import ScalemathError

_API = ("derive", "solve", "check", "plan", "serve", "generate", "grade", "hlo")

__all__ = ["__version__", "ScalemathError", "Context", "evaluate", "get_quantity", "get_chip", "load_catalog",
           *_API]

_LAZY = {"Context": ("quantities", "Context"), "evaluate": ("quantities", "evaluate"),
         "get_quantity": ("quantities", "get"), "get_chip": ("hardware", "get_chip"),
         "load_catalog": ("hardware", "load_catalog"), **{name: ("api", name) for name in _API}}


def __getattr__(name):
    """Import the engine (and the API) on first use, so that ``import scalemath`` and ``scalemath --help``
    do not load SymPy."""
    if name not in _LAZY:
        raise AttributeError(f"module 'scalemath' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    return getattr(importlib.import_module(f".{module}", __name__), attr)


# ``plan``, ``serve`` and ``hlo`` are also modules of this package: importing one (as the CLI does) makes the
# package's attribute the module. So these modules are callable, and calling one calls the API function of
# its name: ``scalemath.plan(...)`` is ``scalemath.api.plan(...)``, and ``scalemath.plan.as_text`` is still
# the module's.
_CALLABLE_MODULES = ("plan", "serve", "hlo")


def _module_types():
    import types

    class CommandModule(types.ModuleType):
        """A module of scalemath that is also the API function of its name."""

        def __call__(self, *args, **kwargs):
            import importlib

            api = importlib.import_module(f"{__name__}.api")
            return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)

    def attribute(name):
        def get(package):
            module = package.__dict__.get(name)
            if module is None:
                import importlib

                importlib.import_module(f"{__name__}.{name}")  # the import system sets it (below)
                module = package.__dict__[name]
            return module

        def put(package, module):
            if type(module) is types.ModuleType:
                module.__class__ = CommandModule
            package.__dict__[name] = module

        return property(get, put, doc=f"scalemath.api.{name}, and the module scalemath.{name}")

    return type("Package", (types.ModuleType,), {name: attribute(name) for name in _CALLABLE_MODULES})


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _module_types()
del _sys
