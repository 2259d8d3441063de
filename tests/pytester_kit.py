"""One way to run an inner pytest session in a subprocess (pytester) for the tests of
our pytest plugin: without the cache, and without the two third-party plugins the
environment installs that the inner sessions never use (LangSmith's and Hypothesis's,
about 2 s of imports per session, and the suites start dozens of sessions)."""

from __future__ import annotations

import pytest

INNER = ("-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", "no:hypothesispytest")


def run_inner(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytest ARGS`` in a subprocess of ``p``'s directory."""
    return p.runpytest_subprocess(*INNER, *args)
