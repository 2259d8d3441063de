"""Start the replay app ready: the server prints its URL once a first visit is fast.

``python app/serve.py [streamlit run options]`` (what ``looptrace ui`` runs) is
``streamlit run app/main.py``, except that before the server listens (and prints
its URL) it does what a first visit would otherwise wait for, in this process:

- imports: pandas and pyarrow (every table), plotly (the timeline), the app's
  pages and panes, the read side (``app.data.wire.preload``: the tracer's modules
  and the wire formats' adapters);
- loads, into the app's own caches (``st.cache_data`` / ``st.cache_resource``,
  which live in this process and which the pages then find filled): the Runs
  page's first page of runs with their health (``app.screens.runs.page.warm``), and
  the run a bare ``/replay`` opens, the newest, with its replay, the JSON the
  browser is sent first and its findings (``app.screens.replay.page.warm``).

A database that cannot be read is left for the page to say so: a warm-up that
fails only makes the first visit slower. ``LOOPTRACE_NO_WARM=1`` skips it. When
it is done, one line on stderr says so (``looptrace ui: warmed up in 2.1 s``).

Streamlit prints its own URL once it listens, after all this. The link that
``looptrace ui --token`` / ``--password`` makes (``$LOOPTRACE_UI_LINK``: Streamlit
knows no token) is printed at the same moment, by a hook on the server's start.

Before the server starts, ``guard`` puts ``app.kit.access.Guard`` in front of it: only a
Host (and a WebSocket's Origin) that names this machine or ``--host``, the metrics and
Streamlit's "clear cache" only with the password.

Streamlit runs this file as a script (not as a module of its package), so it
imports the app by the package's name, as ``main.py`` does: ``app`` in a
checkout, ``tracer._app`` when installed.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

MAIN = Path(__file__).resolve().parent / "main.py"
PAGES = ("runs", "replay", "timeline", "presenter", "wire", "compare", "playground")
LINK_ENV = "LOOPTRACE_UI_LINK"  # (tracer/cli/ui.py sets it)
# (Streamlit's caches called before its runtime exists log a warning each: expected here)
QUIET = ("streamlit.runtime.caching.cache_data_api",
         "streamlit.runtime.caching.cache_resource_api")


def _errors_only(record: logging.LogRecord) -> bool:
    # (a filter, not a level: Streamlit sets its loggers' level when it first makes them,
    # which the preload's imports do)
    return record.levelno >= logging.ERROR


def package() -> str:
    """The dotted name of the app's package (the folders above this file with an
    ``__init__.py``, as ``main.package_of``)."""
    parts: list[str] = []
    folder = MAIN.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def preload(pkg: str) -> None:
    """Import what the pages import: the libraries, the app's modules, the read side."""
    import pandas  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    import pyarrow  # noqa: F401

    # Streamlit's own, imported by a first page: the emoji catalogue (set_page_config's
    # icon: 0.86 s of the first visit, its regex compiled at import) and the icon names.
    import streamlit.emojis
    import streamlit.material_icon_names  # noqa: F401

    importlib.import_module(f"{pkg}.data.wire").preload()
    for page in PAGES:
        importlib.import_module(f"{pkg}.screens.{page}.page")
    importlib.import_module(f"{pkg}.panes.wire_pane").import_adapters()


def warm_inspect() -> None:
    """Fill ``inspect``'s cache of which file is which module, for every module imported
    so far. The first element a Streamlit server's page shows looks at the call stack
    (``env_util.is_repl``: ``inspect.stack()``, once per process), and ``inspect``
    then resolves the file of each of the ~6,000 modules loaded: 0.85 s of the first
    visit's script run, measured (the next visits: none)."""
    import inspect

    inspect.stack()


def skip_use_warning() -> None:
    """Tell Streamlit its "use streamlit run" warning was considered: it is (this is
    ``streamlit run``). The first element of the first page otherwise decides it with
    ``env_util.is_repl`` (``inspect.stack()``, whose frames of scripts that are no
    module make ``inspect.getmodule`` scan every loaded module): 50 ms of the first
    visit's script run on a quiet machine, 0.4 s at a load of 7 (issue 29)."""
    from streamlit import delta_generator

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True


def freeze() -> None:
    """Collect, then move every object alive now (modules, the warmed caches) out of the
    garbage collector's sight (``gc.freeze``). Streamlit collects after every script run
    (``runner.postScriptGC``), holding the GIL, so the page's messages wait for it: a
    full collection over the warmed heap was 0.9 s of the first visit. Frozen objects
    are still freed by reference counting; a cycle among them stays."""
    import gc

    gc.collect()
    gc.freeze()


def warm(pkg: str) -> float:
    """Preload, then fill the caches of the first pages; the seconds it took."""
    t = time.perf_counter()
    for name in QUIET:
        logging.getLogger(name).addFilter(_errors_only)
    try:
        preload(pkg)
        path = importlib.import_module(f"{pkg}.data.store").db_path()
        importlib.import_module(f"{pkg}.screens.runs.page").warm(path)
        importlib.import_module(f"{pkg}.screens.replay.page").warm(path)
        warm_inspect()
        skip_use_warning()
        freeze()
    except Exception as exc:  # noqa: BLE001 - the page says what is wrong, in the browser
        print(f"looptrace ui: not warmed up ({type(exc).__name__}: {exc})", file=sys.stderr)
    finally:
        for name in QUIET:
            logging.getLogger(name).removeFilter(_errors_only)
    return time.perf_counter() - t


def announce_when_listening(text: str) -> None:
    """Print ``text`` (stderr) when the server has started listening, just after
    Streamlit prints its own URL (its ``bootstrap._on_server_start``, called once the
    server is up; a test holds the server answering when the line is read)."""
    from streamlit.web import bootstrap

    started = bootstrap._on_server_start

    def on_start(server: object) -> None:
        started(server)  # type: ignore[arg-type]
        print(text, file=sys.stderr, flush=True)

    bootstrap._on_server_start = on_start


def guard(pkg: str) -> None:
    """Put the app's ``access.Guard`` in front of the server Streamlit is about to make
    (the Host, a WebSocket's Origin, the metrics: every route), and let only a session
    that gave the password clear the caches (Streamlit's ``clear_cache`` message empties
    them for every user)."""
    from streamlit import config
    from streamlit.runtime.app_session import AppSession
    from streamlit.web.server.starlette import starlette_server

    access = importlib.import_module(f"{pkg}.kit.access")
    make = starlette_server.create_starlette_app  # type: ignore[attr-defined]

    def guarded(runtime: Any) -> Any:
        return access.Guard(make(runtime), bound=str(config.get_option("server.address") or ""),
                            token=os.environ.get(access.ENV, ""))

    starlette_server.create_starlette_app = guarded  # type: ignore[attr-defined]
    clear = AppSession._handle_clear_cache_request

    def clear_if_let_in(self: AppSession) -> None:
        if not access.let_in(self._session_state):
            access.LOG.warning("refused clear_cache from session %s: no password given",
                               self.id)
            return
        clear(self)

    AppSession._handle_clear_cache_request = clear_if_let_in  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("LOOPTRACE_NO_WARM") != "1":
        took = warm(package())
        print(f"looptrace ui: warmed up in {took:.1f} s", file=sys.stderr, flush=True)
    guard(package())  # (before the server is made)
    link = os.environ.pop(LINK_ENV, "")
    if link:
        announce_when_listening(link)
    from streamlit.web import cli

    return int(cli.main(args=["run", str(MAIN), *(sys.argv[1:] if argv is None else argv)],
                        prog_name="streamlit", standalone_mode=False) or 0)


if __name__ == "__main__":
    sys.exit(main())
