"""An error pause shows the exception as the person debugging needs it
(``tracer.debug.raised``): its type, its message, and the traceback frames of their
own code, in what is pending (MCP ``get_pending``), in the terminal's summary and in
the app (tests/app/test_app_debug.py). It showed only ``KeyError('XYZ')``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from debug_kit import Background, quoting_model, wait_paused
from langchain_core.tools import tool
from tracer_kit import make_agent

from tracer import TraceMiddleware
from tracer.cli.debug import summary
from tracer.debug import Debugger, channel
from tracer.mcp.debug_tools import Debug

ORDERS: dict[str, str] = {"A1": "shipped"}


def _order_status(order_id: str) -> str:
    return ORDERS[order_id]  # the line that raises


@tool
def get_weather(city: str) -> str:
    """Weather for a city (here: an order lookup gone wrong)."""
    return _order_status(city)


def test_an_error_pause_shows_type_message_and_the_users_frames(tmp_path: Path) -> None:
    db = tmp_path / "dbg.db"
    trace = TraceMiddleware(db=db, debug=Debugger(["error"]))
    agent = make_agent(quoting_model(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))
    try:
        (p,) = wait_paused(db, alive=bg.alive)
        pending: dict[str, Any] = Debug(db).get_pending(p["run"])["pending"]  # (MCP's)
        exc = pending["exception"]
        assert (exc["type"], exc["message"]) == ("KeyError", "'Oslo'")
        here = str(Path(__file__).resolve())
        frames = [(f["file"], f["function"], f["code"]) for f in exc["frames"]]
        # the frames of this file's code, outermost first; no LangChain, LangGraph,
        # looptrace or Python frame among them
        assert frames == [
            (here, "get_weather", "return _order_status(city)"),
            (here, "_order_status", "return ORDERS[order_id]  # the line that raises")]
        lines = summary(pending).splitlines()
        assert lines[0] == "  the tool raised KeyError: 'Oslo'"
        assert lines[1] == "  Traceback (your code, most recent call last):"
        assert lines[-2].startswith(f'    File "{here}", line ') and lines[-2].endswith(
            ", in _order_status")
        assert lines[-1] == "      return ORDERS[order_id]  # the line that raises"
        channel.answer(db, p["run"], "continue", {"kind": "tool_result", "text": "Sunny"})
        assert bg.result()["messages"][-1].content == "It says: Sunny"
    finally:
        if bg.alive():
            channel.answer(db, wait_paused(db)[0]["run"], "run")
        trace.flush()
