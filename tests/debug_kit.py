"""Driving a paused agent from a test: the agent runs in a thread (or an event loop in
a thread), the test is the debugger, through the database as the app and MCP are."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from tracer.db.url import is_url
from tracer.debug import channel
from tracer.demo.models import ScriptedChatModel, call, turn_script

__all__ = ["Background", "quoting_model", "wait_paused"]


def quoting_model() -> ScriptedChatModel:
    """Lap 1 asks for the weather in Oslo (``get_weather``), lap 2 quotes the tool's
    result: "It says: <the last ToolMessage>" (what a debugger's edit of it gave)."""

    def answer(messages: Sequence[BaseMessage]) -> AIMessage:
        last = [m for m in messages if isinstance(m, ToolMessage)][-1]
        return AIMessage(content=f"It says: {last.content}", id="ai-2")

    return ScriptedChatModel(script=turn_script([
        AIMessage(content="", id="ai-1", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        answer,
    ]))


def wait_paused(db: Path | str, *, timeout: float = 30.0, n: int = 1,
                alive: Callable[[], bool] | None = None) -> list[dict[str, Any]]:
    """The paused runs of ``db`` (a file, or a PostgreSQL store's URL) once there are
    ``n`` (fails after ``timeout``)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if is_url(str(db)) or Path(db).exists():
            try:
                got = channel.list_paused(db, with_pending=True)
            except Exception:  # noqa: BLE001 - the file may be being created
                got = []
            if len(got) >= n:
                return got
        if alive is not None and not alive():
            msg = "the agent ended without pausing"
            raise AssertionError(msg)
        time.sleep(0.02)
    msg = f"no pause in {db} after {timeout} s"
    raise AssertionError(msg)


class Background:
    """``fn()`` (or ``await fn()``) in a thread; ``result()`` joins and returns or raises."""

    def __init__(self, fn: Callable[[], Any], *, is_async: bool = False) -> None:
        self.value: Any = None
        self.error: BaseException | None = None

        def go() -> None:
            try:
                self.value = asyncio.run(fn()) if is_async else fn()
            except BaseException as exc:  # noqa: BLE001 - handed to result()
                self.error = exc

        self.thread = threading.Thread(target=go, daemon=True)
        self.thread.start()

    def alive(self) -> bool:
        return self.thread.is_alive()

    def result(self, timeout: float = 60.0) -> Any:
        self.thread.join(timeout)
        if self.thread.is_alive():
            msg = "the agent did not finish"
            raise AssertionError(msg)
        if self.error is not None:
            raise self.error
        return self.value
