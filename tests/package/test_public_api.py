"""``import tracer``: the public names, written out, each importable and documented, and
the read side cheap (no LangChain until a write-side name is asked for)."""

from __future__ import annotations

import inspect
import pkgutil
import subprocess
import sys

import pytest

import tracer

# Written by hand: a name added to (or dropped from) ``tracer.__all__`` must be added here.
EXPECTED = [
    "HOOKS", "HOOK_NAMES", "SCHEMA_VERSION", "DatabaseUnavailable", "Divergence", "Edit",
    "Event", "Finding", "ImportResult", "LeanTraceMiddleware", "LooptraceError", "Message",
    "NewerSchemaError", "NotALooptraceDatabase", "OtelUnavailable", "OtlpExportError", "Redactor",
    "Replay", "RerunDiverged", "RerunError", "RerunResult", "Run", "RunDiff", "RunFilter",
    "RunNotFound", "RunSummary", "Step", "Thresholds", "TraceCallbackHandler", "TraceDB",
    "TraceFileError", "TraceMiddleware", "arerun", "build_replay", "check_db", "check_run",
    "diff_runs", "diff_tree", "export_html", "export_otlp", "export_run", "import_many",
    "import_otlp_file", "import_trace", "rerun", "step_captions",
]


def test_all_is_the_written_out_list() -> None:
    assert tracer.__all__ == EXPECTED
    assert len(set(EXPECTED)) == len(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_each_name_imports_from_tracer_and_is_documented(name: str) -> None:
    exec(f"from tracer import {name}", {})  # noqa: S102 - the import statement itself
    obj = getattr(tracer, name)
    if inspect.isclass(obj) or inspect.isfunction(obj):
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        assert doc and doc.strip(), f"{name} has no docstring"
        # (a dataclass without one gets its signature as __doc__: that is not documentation)
        assert not doc.startswith(f"{obj.__name__}("), f"{name} has no docstring"
    # every name, data constants too, is introduced in the package docstring
    assert f"``{name}``" in (tracer.__doc__ or ""), f"{name} is not in tracer's docstring"


def test_no_public_name_is_shadowed_by_a_submodule() -> None:
    """``tracer.db.prune`` (the module) would hide a ``prune`` function once imported."""
    submodules = {m.name for m in pkgutil.iter_modules(tracer.__path__)}
    assert not submodules & set(EXPECTED)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        tracer.no_such_name  # noqa: B018


def test_the_read_side_starts_without_langchain() -> None:
    read = [n for n in EXPECTED if n not in (
        "LeanTraceMiddleware", "TraceCallbackHandler", "TraceMiddleware",
        "Edit", "RerunResult", "arerun", "rerun")]  # (the write side)
    code = ("import sys, tracer\n"
            f"for n in {read!r}: getattr(tracer, n)\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain', "
            "'langchain_core', 'langgraph', 'streamlit', 'opentelemetry'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
