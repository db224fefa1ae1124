"""Sphinx configuration of the dprivacy documentation site.

Build (from the repository root, with ``pip install -e '.[docs]'``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(ROOT / "src"))

import dprivacy  # noqa: E402

project = "dprivacy"
author = "the dprivacy developers"
copyright = "the dprivacy developers"
release = version = dprivacy.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into the site: formulas render without a network (a local build)
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinxcontrib.bibtex",
    "sphinxarg.ext",
    "rst_clean",
]

templates_path = ["_templates"]
exclude_patterns = ["_build"]
nitpicky = False
smartquotes = False  # the docstrings write primes (ε') and quotes as they mean them
default_role = "code"

# -- API reference -----------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"  # the numpydoc Parameters sections say it; the signatures stay readable
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set = set()
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = False

# -- bibliography ------------------------------------------------------------------------------
bibtex_bibfiles = ["references.bib"]
bibtex_default_style = "plain"
bibtex_reference_style = "author_year"

# -- gallery -----------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "gallery_order.example_order",
    "abort_on_example_error": True,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "min_reported_time": 0,
    "show_memory": False,
    "reset_modules": ("matplotlib",),
    "write_computation_times": True,
}

# -- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dprivacy {release}"
html_static_path: list = []
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
