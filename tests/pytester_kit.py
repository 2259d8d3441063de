"""Inner pytest sessions (pytester) for the tests of our pytest plugin: without the cache,
and without the two third-party plugins the environment installs that the inner sessions
never use (LangSmith's and Hypothesis's).

- ``run_inline``: in this process (``pytester.runpytest_inprocess``). The plugin installs
  its recording at configure and uninstalls it at unconfigure
  (``tracer.record.autotrace.push`` / ``uninstall``), so a session leaves nothing behind.
  A session in its own process paid Python's start-up and the LangChain, LangGraph and
  sqlite-utils imports, seconds each time; here they are paid once, at the import of this
  kit (``PRELOADED``: pytester drops from ``sys.modules`` what an in-process session
  imported first, so a module missing here is imported again by every session).
- ``run_inner``: in a subprocess, for what needs a process of its own: xdist's workers,
  a module made unimportable, an exit code printed by a fresh interpreter.
"""

from __future__ import annotations

import importlib

import pytest

INNER = ("-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", "no:hypothesispytest")

# What an inner session of the plugin's tests imports: an agent run recorded through the
# configure hook, the fixture's assertions and checks, cassettes, the HTML replay.
# (Found by listing what each session added to ``sys.modules``. LangChain imports its
# configure hooks' module at the first run: a copy imported again would hold a hook list
# of its own. sqlite-utils imports pandas, numpy and pyarrow when they are installed.)
PRELOADED = (
    "langchain.agents", "langchain.agents.middleware", "langchain_core.messages",
    "langchain_core.messages.block_translators.langchain_v0", "langchain_core.tools",
    "langchain_core.tracers.context", "langchain_core.tracers.run_collector",
    "langchain_core.tracers.stdout", "langchain_core.runnables.retry", "langgraph.errors",
    "deepagents", "deepagents.profiles._builtin_profiles", "sqlite_utils", "genai_prices.data",
    "tracer.demo.models", "tracer.record.autotrace", "tracer.testing.fixture",
    "tracer.read.loader", "tracer.read.diff", "tracer.checks.run", "tracer.interop.exchange",
    "tracer.interop.html_export", "tracer.whatif.player", "tracer.whatif.cassette",
    "tracer.whatif.cassette_file",
)
for _name in PRELOADED:
    importlib.import_module(_name)


def run_inline(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytest ARGS`` in ``p``'s directory, in this process."""
    return p.runpytest_inprocess(*INNER, *args)


def run_inner(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytest ARGS`` in a subprocess of ``p``'s directory."""
    return p.runpytest_subprocess(*INNER, *args)
