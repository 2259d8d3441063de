"""``looptrace ARGV`` run in the test's own process: one helper for every CLI test."""

from __future__ import annotations

import pytest

from tracer.cli import main


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``looptrace ARGV`` here: its exit code, what it printed, its errors (only
    what this call printed: anything printed before it is dropped first)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
