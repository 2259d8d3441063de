"""``app/`` reads the tracer through one folder: ``app/data/``, the seam.

Every other module of ``app/`` takes what it reads from a module of ``app/data/``
(``from ..data.runs import runs_page``), never from ``tracer`` itself. The seam is not a
barrel: its package holds no names, and each of its modules (one concern) offers what
its ``__all__`` lists, and only that is taken from it. Importing any of them imports no
LangChain: the wire formats' adapters (``app.data.wire``) are imported on first use
(``EXPORTS``), and only those modules are lazy.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
SEAM = APP / "data"
SEAM_MODULES = sorted(p.stem for p in SEAM.glob("*.py") if p.stem != "__init__")


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


def outside_the_seam() -> list[Path]:
    return [p for p in sorted(APP.rglob("*.py")) if SEAM not in p.parents]


def test_only_the_seam_imports_the_tracer() -> None:
    others = outside_the_seam()
    assert len(others) > 20  # (the whole app: its screens, panes, kit, serve.py)
    found = [hit for p in others for hit in tracer_imports(p)]
    assert not found, "app/ modules importing tracer around app/data/:\n" + "\n".join(found)
    assert all(tracer_imports(SEAM / f"{m}.py") for m in SEAM_MODULES)  # (each reads it)


def test_the_check_sees_each_way_of_importing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import tracer\n"
                   "import tracer.read.loader as L\n"
                   "from tracer.read.steps import Replay\n"
                   "from . import data\n"
                   "from .data.steps import Replay as R\n"
                   "import tracery\n"
                   "def f():\n"
                   "    from tracer import check\n"
                   "    importlib.import_module('tracer.wire.view')\n"
                   "    __import__('tracer.read.diff')\n", encoding="utf-8")
    assert [h.split(": ", 1)[1] for h in tracer_imports(bad)] == [
        "tracer", "tracer.read.loader", "tracer.read.steps", "tracer", "tracer.wire.view", "tracer.read.diff"]


def _all(module: str) -> list[str]:
    tree = ast.parse((SEAM / f"{module}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [str(e.value) for e in node.value.elts]  # type: ignore[attr-defined]
    return []


def seam_uses(path: Path) -> list[tuple[int, str, str]]:
    """(line, seam module, name) of every name ``path`` imports from a seam module
    (``from ..data.runs import runs_page``); ("", name) for one taken from the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    depth = len(path.relative_to(APP).parts)  # (the dots that reach app/ from path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == depth and node.module:
            parts = node.module.split(".")
            if parts[0] == "data":
                out += [(node.lineno, ".".join(parts[1:]), a.name) for a in node.names]
    return out


def test_no_barrel_each_module_offers_its_all_and_only_that_is_taken() -> None:
    package = ast.parse((SEAM / "__init__.py").read_text(encoding="utf-8"))
    assert [type(n).__name__ for n in package.body] == ["Expr"], \
        "app/data/__init__.py holds names: the seam would be a barrel again"
    offered = {m: set(_all(m)) for m in SEAM_MODULES}
    assert all(offered.values()), [m for m, names in offered.items() if not names]
    assert max(len(n) for n in offered.values()) <= 20  # (thin: one concern each)
    wrong = []
    for path in outside_the_seam():
        for line, module, name in seam_uses(path):
            ok = (name in SEAM_MODULES) if module == "" else name in offered.get(module, ())
            if not ok:
                wrong.append(f"{path.relative_to(APP.parent)}:{line}: {module or 'data'}.{name}")
    assert not wrong, "taken from the seam but not offered by it (its __all__):\n" + \
        "\n".join(wrong)


def test_the_seam_check_sees_a_name_not_offered(tmp_path: Path) -> None:
    bad = APP / "screens" / "replay" / "_seam_probe.py"  # (3 dots reach app/)
    bad.write_text("from ...data.runs import TraceDB, runs_page\n"
                   "from ...data import store, Replay\n", encoding="utf-8")
    try:
        uses = seam_uses(bad)
    finally:
        bad.unlink()
    assert uses == [(1, "runs", "TraceDB"), (1, "runs", "runs_page"), (2, "", "store"),
                    (2, "", "Replay")]
    assert "TraceDB" not in _all("runs") and "runs_page" in _all("runs")
    assert "store" in SEAM_MODULES and "Replay" not in SEAM_MODULES


def _type_checking_imports() -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` in app/data/wire.py."""
    tree = ast.parse((SEAM / "wire.py").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level == 0:
                    out.update({a.asname or a.name: imp.module or "" for a in imp.names})
    return out


def test_the_lazy_names_are_the_typed_names_and_resolve() -> None:
    from app.data import wire

    lazy = {name: f"{wire.BASE}.{module}" for name, module in wire.EXPORTS.items()}
    assert _type_checking_imports() == lazy
    for name, module in lazy.items():
        assert getattr(wire, name) is getattr(importlib.import_module(module), name), name
        assert name in wire.__all__, name


def test_the_runs_page_imports_no_wire_adapter() -> None:
    """The Runs screen (and every seam module) leaves the wire formats out; a name of
    theirs imports them when asked for."""
    code = ("import sys\n"
            "from app.data import " + ", ".join(SEAM_MODULES) + "\n"
            "from app.screens.runs import page, runs_table\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('tracer.wire.render', "
            "'tracer.wire.view', 'langchain_openai', 'langchain_anthropic')))\n"
            "assert not heavy, heavy\n"
            "wire.call_at\n"
            "assert 'tracer.wire.render' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=APP.parent, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_replay_page_imports_no_langchain_until_the_wire_pane_is_drawn() -> None:
    """The Replay screen offers the wire pane behind a toggle: importing it imported the
    wire's lazy names at once (``app/panes/wire_pane.py`` took them by name), and with
    them LangChain and the provider adapters, seconds before a first page."""
    code = ("import sys\n"
            "from app.screens.replay import page\n"
            "from app.panes import wire_pane\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('tracer.wire.render', "
            "'tracer.wire.view', 'langchain', 'langgraph')))\n"
            "assert not heavy, heavy\n"
            "wire_pane._columns()\n"
            "assert 'tracer.wire.view' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=APP.parent, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_only_what_imports_langchain_is_lazy() -> None:
    """Importing the seam imports no LangChain, and each module whose names it imports
    on first use (``EXPORTS``) does: a name that costs nothing to import is imported
    with the others, written once, not three times (issue 38)."""
    from app.data import wire

    def langchain_after(module: str) -> list[str]:
        code = ("import sys, importlib\n"
                "from app.data import " + ", ".join(SEAM_MODULES) + "\n"
                f"importlib.import_module({module!r}) if {module!r} else None\n"
                "print(sorted({m.split('.')[0] for m in sys.modules\n"
                "              if m.startswith(('langchain', 'langgraph'))}))\n")
        done = subprocess.run([sys.executable, "-c", code], cwd=APP.parent,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))

    assert langchain_after("") == []
    modules = sorted({f"{wire.BASE}.{m}" for m in wire.EXPORTS.values()})
    assert modules  # (the provider adapters stay lazy)
    light = [m for m in modules if not langchain_after(m)]
    assert light == [], f"lazy in app/data/wire.py, and light to import: {light}"
