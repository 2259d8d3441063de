"""A Deep Agents agent whose files live in the LangGraph store (``StoreBackend`` on an
``InMemoryStore``), driven by a scripted model: a file written, edited, a scratch file
written (hostile text) and deleted by a tool, a note put by a middleware's own hook.
Used by ``tests/record/test_basestore_writes.py`` and the State view's browser tests."""

from __future__ import annotations

from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import StoreBackend
from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore

from tracer.demo.models import ScriptedChatModel, call, turn_script

FS = ("fs",)
# (markup and a script: the State view must show them as text)
SCRATCH_TEXT = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\n'


@tool
def forget(path: str, runtime: ToolRuntime) -> str:
    """Forget a file of the workspace."""
    runtime.store.delete(FS, path)
    return f"forgot {path}"


class Seeder(AgentMiddleware):  # type: ignore[type-arg]
    """Writes a note to the store from its own node hook (no tool call)."""

    name = "Seeder"

    def before_agent(self, state: Any, runtime: Any) -> None:
        runtime.store.put(("memo",), "seen", {"visits": 1})

    async def abefore_agent(self, state: Any, runtime: Any) -> None:
        self.before_agent(state, runtime)


def store_model() -> ScriptedChatModel:
    return ScriptedChatModel(script=turn_script([
        AIMessage("Drafting.", id="ai-st-1", tool_calls=[
            call("write_file", {"file_path": "/notes.md", "content": "Q3 revenue: 12\nQ3 cost: 7\n"},
                 "call-st-write")]),
        AIMessage("Fixing, and a scratch file.", id="ai-st-2", tool_calls=[
            call("edit_file", {"file_path": "/notes.md", "old_string": "revenue: 12",
                               "new_string": "revenue: 13"}, "call-st-edit"),
            call("write_file", {"file_path": "/scratch.md", "content": SCRATCH_TEXT}, "call-st-scratch")]),
        AIMessage("Cleaning up.", id="ai-st-3", tool_calls=[
            call("forget", {"path": "/scratch.md"}, "call-st-forget")]),
        AIMessage("The notes are ready.", id="ai-st-4"),
    ]), model_name="store-model")


def store_agent(store: InMemoryStore, middleware: list[Any]) -> Any:
    return create_deep_agent(model=store_model(), tools=[forget], middleware=[*middleware, Seeder()],
                             store=store, backend=StoreBackend(namespace=lambda rt: FS),
                             system_prompt="You keep notes.")


def store_seeded() -> InMemoryStore:
    store = InMemoryStore()
    store.put(FS, "/old.md", {"content": "before the run\n"})  # (not the run's write)
    return store


