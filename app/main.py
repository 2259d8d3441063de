"""looptrace's replay app: ``looptrace ui [--db PATH]``, or ``streamlit run app/main.py``
from a checkout.

The database is ``$LOOPTRACE_DB``; without it, a database built from the
bundled sample traces is opened, so a fresh checkout shows real runs.

Streamlit runs this file as a script, not as a module of its package, so it
imports the app by the package's name: ``app`` in a checkout, ``tracer._app``
when installed from the wheel (the folders above this file that hold an
``__init__.py``).
"""

from __future__ import annotations

import importlib
from pathlib import Path


def package_of(script: Path) -> str:
    """The dotted name of the package that holds ``script``."""
    parts: list[str] = []
    folder = script.resolve().parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


importlib.import_module(f"{package_of(Path(__file__))}.navigation").main()
