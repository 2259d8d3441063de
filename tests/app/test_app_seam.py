"""``app/`` reads the tracer through one module: ``app/data/``.

Every other module of ``app/`` takes the read side's names from ``app.data``
(``from .data import Replay``), never from ``tracer`` itself. ``app.data`` imports
them when it is imported, except those of the modules that import LangChain (the
wire formats' adapters), which it imports on first use (``EXPORTS``): importing it
imports no LangChain, and only those modules are lazy.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
SEAM = APP / "data" / "__init__.py"


def tracer_imports(path: Path) -> list[str]:
    """``file:line: module`` of every import of ``tracer`` (or a module under it) in
    ``path``: at the top, in a function, ``import tracer.x``, ``from tracer import x``,
    and ``importlib.import_module("tracer...")`` with a literal name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
              in ("import_module", "__import__")
              and node.args and isinstance(node.args[0], ast.Constant)):
            names = [str(node.args[0].value)]
        found += [f"{path.name}:{node.lineno}: {n}" for n in names
                  if n == "tracer" or n.startswith("tracer.")]
    return found


def test_only_app_data_imports_the_tracer() -> None:
    others = [p for p in sorted(APP.rglob("*.py")) if (APP / "data") not in p.parents]
    assert len(others) > 20  # (the whole app: its panes, pages, picker, serve.py)
    found = [hit for p in others for hit in tracer_imports(p)]
    assert not found, "app/ modules importing tracer around app/data/:\n" + "\n".join(found)


def test_the_check_sees_each_way_of_importing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import tracer\n"
                   "import tracer.read.loader as L\n"
                   "from tracer.read.steps import Replay\n"
                   "from . import data\n"
                   "from .data import Replay as R\n"
                   "import tracery\n"
                   "def f():\n"
                   "    from tracer import check\n"
                   "    importlib.import_module('tracer.wire.view')\n"
                   "    __import__('tracer.read.diff')\n", encoding="utf-8")
    assert [h.split(": ", 1)[1] for h in tracer_imports(bad)] == [
        "tracer", "tracer.read.loader", "tracer.read.steps", "tracer", "tracer.wire.view", "tracer.read.diff"]


def _type_checking_imports() -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` in app/data/."""
    tree = ast.parse(SEAM.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level == 0:
                    out.update({a.asname or a.name: imp.module or "" for a in imp.names})
    return out


def test_the_lazy_names_are_the_typed_names_and_resolve() -> None:
    from app import data

    assert _type_checking_imports() == data.EXPORTS
    for name, module in data.EXPORTS.items():
        assert getattr(data, name) is getattr(importlib.import_module(module), name), name
        assert name in data.__all__, name


def test_the_runs_page_imports_no_wire_adapter() -> None:
    """``import app.data`` (what every page imports) leaves the wire formats out; a
    name of theirs imports them when asked for."""
    code = ("import sys\n"
            "from app import data\n"
            "from app.screens.runs import runs_table\n"
            "from app.screens.runs import page\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('tracer.wire.render', "
            "'tracer.wire.view', 'langchain_openai', 'langchain_anthropic')))\n"
            "assert not heavy, heavy\n"
            "data.call_at\n"
            "assert 'tracer.wire.render' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=APP.parent, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_only_what_imports_langchain_is_lazy() -> None:
    """``import app.data`` imports no LangChain, and each module whose names it imports
    on first use (``EXPORTS``) does: a name that costs nothing to import is imported
    with the others, written once, not three times (issue 38)."""
    from app import data

    def langchain_after(module: str) -> list[str]:
        code = ("import sys, importlib\n"
                "from app import data\n"
                f"importlib.import_module({module!r}) if {module!r} else None\n"
                "print(sorted({m.split('.')[0] for m in sys.modules\n"
                "              if m.startswith(('langchain', 'langgraph'))}))\n")
        done = subprocess.run([sys.executable, "-c", code], cwd=APP.parent,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))

    assert langchain_after("") == []
    modules = sorted(set(data.EXPORTS.values()))
    assert modules  # (the provider adapters stay lazy)
    light = [m for m in modules if not langchain_after(m)]
    assert light == [], f"lazy in app/data/, and light to import: {light}"
