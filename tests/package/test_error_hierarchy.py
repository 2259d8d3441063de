"""One error hierarchy (issue 22): every error looptrace reports is a ``LooptraceError``
declared in ``tracer/errors.py``, and the CLI says each in one line.

Errors a caller may catch as ``ValueError`` (a bad option, a malformed stream) are both.
Three exception classes are internal and never reach a user, by design: an HTTP answer
for a request body (``httpbody.BodyError``, turned into a status), an MCP tool error
(``mcp_server._Err``, turned into an error result) and an exception a replay raises
again under its recorded name (``player.RecordedError``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import tracer
from tracer import errors
from tracer.cli import main

# (signals caught inside the package, never reported: the proxy forwards what an emulator
# script raises ForwardUpstream for)
INTERNAL = {"tracer.vocab.httpbody.BodyError", "tracer.mcp.server._Err", "tracer.whatif.player.RecordedError",
            "tracer.wire.proxy.ForwardUpstream",
            # (a signal to stop, raised through the prompt: a BaseException on purpose)
            "tracer.cli.debug._Stopped"}
# (importing these runs something: the sitecustomize arms a hook, __main__ runs the CLI)
SKIP = ("tracer._autotrace", "tracer.__main__", "tracer.cli.__main__")


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(tracer.__path__, "tracer."):
        if info.name.startswith(SKIP):
            continue
        mod = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(mod, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__.startswith("tracer"):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_reported_error_is_declared_in_errors_py() -> None:
    found = _exception_classes()
    assert set(INTERNAL) <= set(found)
    elsewhere = sorted(n for n in found if not n.startswith("tracer.errors.")
                       and n not in INTERNAL)
    assert elsewhere == [], "exceptions declared outside tracer/errors.py"
    outside = sorted(n for n, c in found.items() if n not in INTERNAL
                     and not issubclass(c, errors.LooptraceError))
    assert outside == [], "exceptions outside the LooptraceError hierarchy"


@pytest.mark.parametrize("name", ["MalformedStream", "InvalidOption", "OtlpFormatError"])
def test_the_errors_callers_catch_as_value_error_are_both(name: str) -> None:
    cls = getattr(errors, name)
    assert issubclass(cls, errors.LooptraceError) and issubclass(cls, ValueError)


def test_the_names_stay_importable_where_they_were() -> None:
    from tracer.interop.show import StepOutOfRange
    from tracer.otel.syncwrite import StoreFailed
    from tracer.testing.fixture import CassetteMiss
    from tracer.wire.providers import MalformedStream
    from tracer.wire.render import RenderError

    assert (MalformedStream, RenderError, StepOutOfRange, StoreFailed, CassetteMiss) == (
        errors.MalformedStream, errors.RenderError, errors.StepOutOfRange,
        errors.StoreFailed, errors.CassetteMiss)


def test_an_unknown_emulator_script_is_one_line(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["proxy", "--provider", "openai", "--emulate", "no-such-script"]) == 1
    _out, err = capsys.readouterr()
    assert err.startswith("looptrace proxy: unknown emulator script 'no-such-script'")
    assert err.count("\n") == 1


def test_a_damaged_file_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "damaged.db"
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4080)
    assert main(["runs", "--db", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("looptrace runs: ") and err.count("\n") == 1
