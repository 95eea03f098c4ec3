"""Sphinx configuration for kafkaev's reference documentation.

Build: ``python -m sphinx -W -b html docs docs/_build/html``. The options page is
``options.md`` itself (the one table, checked against ``ClientConfig`` by
tests/test_options_doc.py); the error table and the command-line help are generated from
``kafkaev.errors`` and ``kafkaev.__main__.build_parser()`` at build time (``_ext/kafkaev_docs.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))  # the checkout's kafkaev, also when it is not installed

import kafkaev  # noqa: E402

project = "kafkaev"
author = "the kafkaev authors"
release = version = kafkaev.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "kafkaev_docs",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"undoc-members": False}

html_theme = "alabaster"
html_static_path: list[str] = []
html_title = f"kafkaev {release}"
autodoc_type_aliases = {"Client": "kafkaev.Client"}  # unqualified in signatures: the callback client, not kafkaev.aio.Client
