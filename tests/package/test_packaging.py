"""The wheel coexists with the project that installs it.

Built with ``uv build --wheel`` and installed into a throwaway virtual environment
together with a tiny project that has its own top-level ``app`` package (as a
FastAPI or Flask project does): the wheel's only top-level package is ``tracer``
(the replay app and the sample traces are package data inside it), both ``import
app`` (the project's) and ``import tracer`` work, ``looptrace demo`` records, and
``looptrace ui``, started in the project's folder, serves the replay app.

Needs ``uv`` and, the first time, PyPI (afterwards uv's cache: ``--offline`` is
tried first). About a minute.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import (
    collect_console_errors,
    free_port,
    guard_network,
    wait_connected,
    wait_healthy,
)

from tracer.read.loader import TraceDB

ROOT = Path(__file__).resolve().parents[2]
USER_APP = "the user's own app package"


def _uv(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``uv ARGS``, from uv's cache if it can, else from the index."""
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI"):
            pytest.fail("uv is not installed: .ci/run installs it")
        pytest.skip("uv is not installed")
    env = {**os.environ, "UV_NO_PROGRESS": "1"}
    env.pop("VIRTUAL_ENV", None)
    for extra in (["--offline"], []):
        done = subprocess.run([uv, *args, *extra], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=600, check=False)
        if done.returncode == 0:
            return done
    raise AssertionError(f"uv {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the virtual environment's bin folder, the user's project folder)."""
    tmp = tmp_path_factory.mktemp("packaging")
    _uv("build", "--wheel", "-q", "-o", str(tmp / "dist"), cwd=ROOT)
    (wheel,) = (tmp / "dist").glob("looptrace-*.whl")
    project = tmp / "userproject"
    (project / "app").mkdir(parents=True)
    (project / "app" / "__init__.py").write_text(f"WHO = {USER_APP!r}\n", encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "userproject"\nversion = "0.1"\n'
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["app"]\n', encoding="utf-8")
    venv = tmp / "venv"
    _uv("venv", "-q", "--python", sys.executable, str(venv))
    _uv("pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel),
        str(project))
    yield venv / "bin", project


def _python(bin_dir: Path, code: str, cwd: Path, **env: str) -> str:
    done = subprocess.run([str(bin_dir / "python"), "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env}, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_wheel_installs_tracer_only(installed: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, _ = installed
    out = _python(bin_dir, (
        "import importlib.metadata as m, app, tracer\n"
        "print(app.WHO)\n"
        "print(sorted({f.parts[0] for f in m.files('looptrace')}))\n"
        "from tracer.interop.exchange import SAMPLES_DIR, sample_files\n"
        "print(SAMPLES_DIR.relative_to(__import__('pathlib').Path(tracer.__file__).parent))\n"
        "print(len(sample_files()))\n"
        "import tracer.cli.ui as ui\n"
        "print(ui.APP.relative_to(__import__('pathlib').Path(tracer.__file__).parent))\n"
        "print((ui.APP.parent / '.streamlit' / 'config.toml').is_file())\n"), cwd=tmp_path)
    who, tops, samples_dir, n_samples, app_main, config = out.splitlines()
    assert who == USER_APP  # the project's own `app`, untouched
    assert tops == "['..', 'looptrace-0.1.0.dist-info', 'tracer']"  # ('..': bin/looptrace)
    assert samples_dir == "_samples"
    assert int(n_samples) == len(list((ROOT / "sample_traces").glob("*.jsonl")))
    assert (app_main, config) == ("_app/main.py", "True")


def test_demo_and_ui_work_installed(installed: tuple[Path, Path],
                                    request: pytest.FixtureRequest) -> None:
    bin_dir, project = installed
    db = project / "x.db"
    done = subprocess.run([str(bin_dir / "looptrace"), "demo", "--db", str(db), "--only",
                           "weather"], cwd=project, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    with TraceDB(db) as t:
        (run,) = t.runs()
    # The app itself, installed, run by AppTest from the project's folder (where the
    # project's own `app` is importable first): the Runs page lists the run.
    out = _python(bin_dir, (
        "import tracer.cli.ui as ui\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file(str(ui.APP), default_timeout=120).run()\n"
        "assert not at.exception, at.exception\n"
        "import json\n"
        "rows = json.loads(at.get('bidi_component')[0].proto.json)['rows']\n"
        "print([t.value for t in at.title], [r['name'] for r in rows])\n"),
        cwd=project, LOOPTRACE_DB=str(db))
    assert out.strip() == "['Runs'] ['weather']"
    # `looptrace ui`, started in the project's folder, serves the app.
    port = free_port()
    log = project / "ui.log"
    with log.open("w") as sink:
        proc = subprocess.Popen([str(bin_dir / "looptrace"), "ui", "--db", str(db), "--port",
                                 str(port)], cwd=project, stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**os.environ, "HOME": str(project)})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout=90, log=log)  # (fails with the server's log)
        try:
            browser = request.getfixturevalue("browser")
        except pytest.skip.Exception:  # no chromium here (CI has it): served, not browsed
            return
        _in_a_browser(browser, url, run.id)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _in_a_browser(browser: object, url: str, run_id: str) -> None:
    """The Runs page lists the run; its replay opens at the step the link names; the
    toolbar has no "Deploy" button."""
    from playwright.sync_api import expect

    context = browser.new_context()  # type: ignore[attr-defined]
    blocked = guard_network(context, url)
    page = context.new_page()
    errors = collect_console_errors(page)
    try:
        page.goto(url + "/")
        wait_connected(page, 60_000)
        expect(page.get_by_role("heading", name="Runs")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("1–1 of 1")).to_be_visible(timeout=30_000)  # the run
        expect(page.get_by_role("link", name="Open in replay")).to_be_visible(timeout=60_000)
        expect(page.locator('[data-testid="stAppDeployButton"]')).to_have_count(0)
        page.goto(f"{url}/replay?run={run_id}&step=2")
        wait_connected(page, 60_000)
        expect(page.get_by_text("Step 2 / ")).to_be_visible(timeout=60_000)
    finally:
        context.close()
    assert blocked == []
    assert errors == []


def test_uv_tool_install_from_the_checkout_works_from_any_folder(tmp_path: Path) -> None:
    """The README's way to use looptrace on a project outside this checkout: ``uv tool
    install /path/to/looptrace``, then ``looptrace`` from any folder."""
    tools, bins, elsewhere = tmp_path / "tools", tmp_path / "bin", tmp_path / "myproject"
    elsewhere.mkdir()
    old = {k: os.environ.get(k) for k in ("UV_TOOL_DIR", "UV_TOOL_BIN_DIR")}
    os.environ["UV_TOOL_DIR"], os.environ["UV_TOOL_BIN_DIR"] = str(tools), str(bins)
    try:
        _uv("tool", "install", "-q", "--python", sys.executable, str(ROOT), cwd=elsewhere)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    done = subprocess.run([str(bins / "looptrace"), "runs", "--db", "samples", "--limit", "3"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=300,
                          check=False, env={**os.environ, "HOME": str(elsewhere)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") >= 3 and "status" in done.stdout
