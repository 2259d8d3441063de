"""``replay --at N --model os:sep`` (or ``os:getcwd``) exited 0 having written an error
run, and MCP ``fork_run`` did the same (issue 36, item 11): ``--model`` named a string,
not a chat model. It is now refused, one line, before anything is written (the CLI, the
``Edit`` of the API, and so the MCP tool, which runs ``looptrace rerun``)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import uuid
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from whatif_kit import root_run

from tracer.cli import main
from tracer.errors import RerunError
from tracer.whatif.rerun import Edit, rerun

# the weather demo agent (as tests/cli/test_whatif_cli.py has it)
AGENT_MODULE = '''
import os
from tracer.demo.scenarios import weather_agent

demo = weather_agent(os.environ["LOOPTRACE_TEST_DB"])
make_agent = demo.factory
'''
SUFFIX = ("(module:attr must name a chat model or a function making one; or an "
          "init_chat_model name such as openai:gpt-4o-mini)")


def dump(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A recorded weather run, and a module beside it whose ``make_agent`` builds its agent."""
    where = tmp_path_factory.mktemp("model")
    db = where / "trace.db"
    name = f"agent_{uuid.uuid4().hex[:8]}"
    (where / f"{name}.py").write_text(AGENT_MODULE)
    from tracer.demo.scenarios import AGENTS

    AGENTS["weather"](str(db)).record()
    return db, root_run(db), name


@pytest.mark.parametrize(("spec", "says"), [
    ("os:sep", "str '/' is not a BaseChatModel"),
    ("os:getcwd", "str {cwd} is not a BaseChatModel"),
    ("json:dumps", None),
    ("langchain_core.language_models.fake_chat_models:FakeListChatModel", None),
])
def test_a_model_that_is_no_chat_model_is_refused_before_anything_is_written(
        recorded: tuple[Path, str, str], capsys, monkeypatch, spec: str,  # type: ignore[no-untyped-def]
        says: str | None) -> None:
    db, run_id, module = recorded
    monkeypatch.chdir(db.parent)
    monkeypatch.setenv("LOOPTRACE_TEST_DB", str(db))
    before = dump(db)
    code = main(["rerun", run_id, "--agent", f"{module}:make_agent", "--db", str(db),
                 "--at", "4", "--model", spec])
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    assert err.count("\n") == 1, err
    if spec == "json:dumps":  # (a function that needs its arguments)
        assert err.startswith("looptrace rerun: --model 'json:dumps': calling it failed: "
                              "TypeError: "), err
    elif says is None:  # (a chat model class that needs its arguments: pydantic says so)
        assert err.startswith(f"looptrace rerun: --model '{spec}': calling it failed: "
                              "ValidationError: "), err
    else:
        # (a long repr is cut to 37 characters and "...": the temporary folder's path is
        # longer under xdist, so what is shown depends on where the test runs)
        cwd = repr(os.getcwd())
        shown = says.format(cwd=cwd if len(cwd) <= 40 else cwd[:37] + "...")
        assert err == f"looptrace rerun: --model {spec!r}: {shown} {SUFFIX}\n"
    assert dump(db) == before


def test_a_chat_model_factory_is_taken() -> None:
    from langchain_core.language_models import BaseChatModel

    from tracer.cli.rerun import _model

    assert isinstance(_model("tracer.demo.models:echo_model"), BaseChatModel)


def test_the_api_refuses_it_too(recorded: tuple[Path, str, str], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # (the one Edit takes an init_chat_model name, as the debugger's does: "/" is none,
    # and the fork refuses it before the agent's module is imported)
    db, run_id, module = recorded
    monkeypatch.chdir(db.parent)
    monkeypatch.setenv("LOOPTRACE_TEST_DB", str(db))
    before = dump(db)
    with pytest.raises(RerunError) as info:
        rerun(run_id, agent=f"{module}:make_agent", db=db, at=4,
                   edit=Edit("model", model="/"))
    assert str(info.value).startswith("the model edit needs a chat model: ValueError: ")
    assert "\n" not in str(info.value)
    with pytest.raises(RerunError) as info:
        Edit("model", model=sys.maxsize)
    assert str(info.value) == (f"the model edit needs a chat model: int {sys.maxsize} is not "
                               "a BaseChatModel")
    assert dump(db) == before


def test_mcp_fork_run_refuses_it(recorded: tuple[Path, str, str]) -> None:
    db, run_id, module = recorded
    before = dump(db)

    async def body() -> str:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "tracer", "mcp", "--db", str(db)],
            env={**os.environ, "LOOPTRACE_TEST_DB": str(db)}, cwd=str(db.parent))
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("fork_run", {
                "run": run_id, "step": 4, "edit_kind": "model", "model": "os:sep",
                "agent": f"{module}:make_agent"})
            assert res.is_error, res.content
            return str(res.content[0].text)

    err = asyncio.run(body())
    assert err == ("Error executing tool fork_run: --model 'os:sep': str '/' is not a "
                   f"BaseChatModel {SUFFIX}")
    assert dump(db) == before
