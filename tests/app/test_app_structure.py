"""The app is Streamlit used as documented: ``st.navigation`` over page functions in
``app/screens/`` (not the legacy ``pages/`` folder), every session-state key declared
in ``app/kit/state.py``, no ``sys.path`` edits, no private Streamlit API, no import
guards, a viewer's toolbar."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from app_kit import MAIN, PAGES
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[2] / "app"
SOURCES = sorted(APP.rglob("*.py"))
SESSION_METHODS = {"get", "pop", "setdefault"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def declared_keys() -> dict[str, str]:
    """The module-level string constants of app/kit/state.py: the session-state keys."""
    out = {}
    for node in _tree(APP / "kit" / "state.py").body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            out[node.targets[0].id] = node.value.value
    return out


def _is_session_state(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "session_state"
            and isinstance(node.value, ast.Name) and node.value.id == "st")


def _key_ok(node: ast.AST, keys: dict[str, str]) -> bool:
    """``state.NAME`` with NAME declared in app/kit/state.py."""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "state" and node.attr in keys)


def session_state_uses(path: Path) -> list[tuple[int, ast.AST | None]]:
    """(line, key expression) of every use of ``st.session_state`` in ``path``: ``[key]``,
    ``.get(key)`` / ``.pop(key)`` / ``.setdefault(key)``, ``key in``; None for a use that
    names its key as an attribute (``st.session_state.x``)."""
    tree = _tree(path)
    method_calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute) and n.func.attr in SESSION_METHODS
                    and _is_session_state(n.func.value)}
    uses: list[tuple[int, ast.AST | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_session_state(node.value):
            uses.append((node.lineno, node.slice))
        elif isinstance(node, ast.Compare) and any(map(_is_session_state, node.comparators)):
            uses.append((node.lineno, node.left))
        elif isinstance(node, ast.Attribute) and _is_session_state(node.value):
            call = method_calls.get(id(node))
            uses.append((node.lineno, call.args[0] if call is not None and call.args else None))
    return uses


def test_every_session_state_key_is_declared_in_state_py() -> None:
    keys = declared_keys()
    assert len(set(keys.values())) == len(keys), "two names for one key"
    raw = []
    for path in SOURCES:
        if path == APP / "kit" / "state.py":
            continue
        for line, key in session_state_uses(path):
            if key is None or not _key_ok(key, keys):
                what = ast.unparse(key) if key is not None else "st.session_state.<attribute>"
                raw.append(f"{path.relative_to(APP.parent)}:{line}: {what}")
    assert not raw, "session-state keys not declared in app/kit/state.py:\n" + "\n".join(raw)


def test_state_py_itself_uses_its_names() -> None:
    for line, key in session_state_uses(APP / "kit" / "state.py"):
        assert not isinstance(key, ast.Constant), f"app/kit/state.py:{line}: a literal key"


def test_widgets_whose_value_is_read_take_their_key_from_state_py() -> None:
    """A widget's ``key=`` written out as the string a state.py name holds would be read
    under that name and written under another spelling one day."""
    values = set(declared_keys().values())
    found = []
    for path in SOURCES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if (kw.arg == "key" and isinstance(kw.value, ast.Constant)
                            and kw.value.value in values):
                        found.append(f"{path.relative_to(APP.parent)}:{node.lineno}: "
                                     f"key={kw.value.value!r}")
    assert not found, found


def test_the_check_sees_raw_keys(tmp_path: Path) -> None:
    """The structural check itself finds each way of spelling a raw key."""
    bad = tmp_path / "bad.py"
    bad.write_text("import streamlit as st\n"
                   "st.session_state['x'] = 1\n"
                   "st.session_state.get('y')\n"
                   "'z' in st.session_state\n"
                   "st.session_state.w = 2\n"
                   "K = 'k'\n"
                   "st.session_state.pop(K)\n"
                   "st.session_state[state.RUN] = 3\n", encoding="utf-8")
    keys = declared_keys()
    verdicts = [(line, key is not None and _key_ok(key, keys))
                for line, key in session_state_uses(bad)]
    assert sorted(verdicts) == [(2, False), (3, False), (4, False), (5, False), (7, False),
                                (8, True)]


def test_no_sys_path_edits_private_streamlit_or_import_guards() -> None:
    problems = []
    for path in SOURCES:
        where = path.relative_to(APP.parent)
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(
                    node.value, ast.Name) and node.value.id == "sys":
                problems.append(f"{where}:{node.lineno}: sys.path")
            # (app/serve.py starts Streamlit's command line in-process: streamlit.web.cli;
            # and hooks its server: the app's guard in front of it, clear_cache behind the
            # password, app_session)
            private = ("streamlit.runtime", "streamlit.navigation") + (
                () if path.name == "serve.py" else ("streamlit.web",))
            hooked = (path.name == "serve.py" and isinstance(node, ast.ImportFrom)
                      and node.module == "streamlit.runtime.app_session")
            if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(private)
                    and not hooked):
                problems.append(f"{where}:{node.lineno}: private {node.module}")
            if isinstance(node, ast.ExceptHandler) and node.type is not None and any(
                    isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
                    for n in ast.walk(node.type)):
                problems.append(f"{where}:{node.lineno}: an import guard")
    assert not problems, problems


def test_pages_are_functions_in_screens_listed_by_the_navigation() -> None:
    from app import navigation

    assert not (APP / "pages").exists(), "app/pages/ is Streamlit's legacy auto-discovery"
    assert tuple(s.url_path for s in navigation.SCREENS) == PAGES
    screens = {p.parent.name for p in (APP / "screens").glob("*/page.py")}
    assert screens == {s.show.__module__.rsplit(".", 2)[1] for s in navigation.SCREENS}
    for p in (APP / "screens").glob("*/page.py"):
        tree = _tree(p)
        assert ast.get_docstring(tree), f"{p.parent.name}/page.py: say what the screen shows"
        assert len(p.read_text(encoding="utf-8").splitlines()) < 300, p.parent.name


def test_the_toolbar_is_a_viewers() -> None:
    """No "Deploy" button, however the app is started: Streamlit reads the
    .streamlit/config.toml beside the entry script (checked in a browser by
    tests/browser/test_browser_replay.py, and installed by tests/package/test_packaging.py)."""
    config = tomllib.loads((APP / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["toolbarMode"] in ("viewer", "minimal")
    assert config["server"]["address"] == "127.0.0.1"
    assert config["browser"]["gatherUsageStats"] is False


@pytest.mark.usefixtures("clean_streamlit_caches")
def test_the_entry_script_opens_the_runs_page(sample_db: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Runs"]


def test_the_test_kit_reads_the_apps_replayer() -> None:
    """tests/app_kit.py finds the replay page's replayer component by its key."""
    import app_kit

    from app.kit import state

    assert app_kit.REPLAYER_KEY == state.REPLAYER == declared_keys()["REPLAYER"]
