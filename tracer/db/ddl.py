"""sqlite-utils, imported lean, to write the schema's ``CREATE TABLE`` statements with.

sqlite-utils imports pandas and numpy at its import when they are installed (for column
types of theirs), and the app's dependencies install both: seconds of start-up in every
process that creates a file (``looptrace run``, ``looptrace debug``, an agent writing a
new trace), for statements that never use either. So, in a process that has not
imported them itself, sqlite-utils is imported with both refused, to the importing
thread only (a finder first on ``sys.meta_path`` for the length of the import: another
thread importing pandas meanwhile gets it), and that copy is then taken out of
``sys.modules`` again: the program's own ``import sqlite_utils`` later gets the usual
one, pandas and all.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils

__all__ = ["LEFT_OUT", "memory_db"]

LEFT_OUT = ("pandas", "numpy")  # what sqlite-utils imports if it can and the DDL never needs


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses ``names`` (and their submodules) to one thread's imports."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.thread = threading.get_ident()

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if threading.get_ident() == self.thread and fullname.split(".")[0] in self.names:
            msg = f"{fullname} left out (sqlite-utils is only writing DDL)"
            raise ModuleNotFoundError(msg, name=fullname)


@functools.cache
def _sqlite_utils() -> ModuleType:
    missing = [m for m in LEFT_OUT if m not in sys.modules]
    if "sqlite_utils" in sys.modules or not missing:
        return importlib.import_module("sqlite_utils")
    refuse = _Refuse(missing)
    sys.meta_path.insert(0, refuse)
    try:
        module = importlib.import_module("sqlite_utils")
    finally:
        sys.meta_path.remove(refuse)
        for name in [n for n in sys.modules if n == "sqlite_utils" or n.startswith("sqlite_utils.")]:
            del sys.modules[name]
    return module


def memory_db() -> sqlite_utils.Database:
    """An in-memory sqlite-utils ``Database``, for its ``create_table_sql``."""
    db: sqlite_utils.Database = _sqlite_utils().Database(memory=True)
    return db
