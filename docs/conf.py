"""Sphinx configuration: builds offline from the repository (no intersphinx, no theme download).

    python -m sphinx -W --keep-going -b html docs build/docs        # the pages
    python -m sphinx -W --keep-going -b doctest docs build/doctest  # every >>> example runs
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))  # the checkout's scalemath, installed or not

project = "scalemath"
author = "scalemath contributors"
copyright = "scalemath contributors"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.doctest", "sphinx.ext.napoleon"]
exclude_patterns = ["_build", "examples/*.ipynb_checkpoints"]
html_theme = "alabaster"  # ships with Sphinx: nothing to fetch
html_static_path = []
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
