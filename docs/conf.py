"""Sphinx configuration: builds offline from the repository (no intersphinx, no theme download, no MathJax).

    python -m sphinx -W --keep-going -b html docs build/docs        # the pages
    python -m sphinx -W --keep-going -b doctest docs build/doctest  # every >>> example runs

The extensions in ``_ext/`` generate the quantity and generator references from the registries at build
time and render math as MathML; ``sphinx_click`` writes the command reference from the click commands.
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))  # the checkout's scalemath, installed or not
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

project = "scalemath"
author = "scalemath contributors"
copyright = "scalemath contributors"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.doctest", "sphinx.ext.napoleon", "sphinx_click", "cli_reference",
              "mathml", "quantity_reference", "generator_reference", "plot_figure",
              "console_lexer", "book_ideas"]
exclude_patterns = ["_build", "examples/*.ipynb_checkpoints"]
html_theme = "alabaster"  # ships with Sphinx: nothing to fetch
html_theme_options = {"page_width": "1100px", "sidebar_width": "240px", "fixed_sidebar": False}
html_static_path = ["_static"]
html_css_files = ["scalemath.css"]
smartquotes = False  # commands and options keep their -- and quotes as typed
html_math_renderer = "mathml"  # _ext/mathml.py: MathML written at build time, no script to load
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
nitpicky = False
_EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples")
doctest_global_setup = f"""
import os, shutil, tempfile
import scalemath
from scalemath.api import *  # the reference pages show the API docstrings, whose examples use bare names
os.chdir(tempfile.mkdtemp(prefix="scalemath-docs-"))  # examples write their files into a fresh folder
shutil.copytree({_EXAMPLES!r}, "examples")  # the files the examples read (examples/ffw.hlo)
"""
