"""No import cycle anywhere in `tracer` or `app`, `tracer/demo/` included (issues 22, 38).

The graph is grimp's, the one import-linter checks: function-level ("lazy") imports and
`if TYPE_CHECKING:` imports count, so a cycle hidden inside a function body, or behind a
type annotation, fails here too. `benchmarks/import_graph_report.py` prints the cycles.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import import_graph_report as report
import pytest


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package on disk: a -> b at module level, b -> a inside a function, c -> d only
    under TYPE_CHECKING and d -> c at module level, e alone, and a cycle inside demo/."""
    root = tmp_path / "toy_i22a"
    (root / "demo").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from . import a  # (it imports this module)\n    return a\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
        "d.py": "from . import c\nclass D: ...\n",
        "e.py": "from . import a\n",
        "demo/__init__.py": "from . import x\n",
        "demo/x.py": "from toy_i22a import demo\n",
    }
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "toy_i22a"
    for m in [m for m in sys.modules if m.startswith("toy_i22a")]:
        del sys.modules[m]


def test_the_cycle_finder_sees_lazy_and_type_checking_cycles(toy_package: str) -> None:
    found = report.cycles(report.build_graph(toy_package))
    assert found == [
        ["toy_i22a.a", "toy_i22a.b"],
        ["toy_i22a.c", "toy_i22a.d"],
        ["toy_i22a.demo", "toy_i22a.demo.x"],
    ]
    assert report.outside_demo(found, allowed="toy_i22a.demo") == found[:2]


@pytest.mark.parametrize("package", ["tracer", "app"])
def test_no_import_cycle_anywhere(package: str) -> None:
    found = report.cycles(report.build_graph(package))
    assert found == [], f"import cycles in {package}:\n" + "\n".join(" -> ".join(c) for c in found)
