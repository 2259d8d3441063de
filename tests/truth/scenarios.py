"""The scenarios: real ``create_agent`` (or Deep Agents) loops with real prebuilt
middleware from ``langchain.agents.middleware``, driven by
:class:`~truth.model.RecordingChatModel`; ``SCENARIOS`` run to their end, ``FAILING``
end in an exception (``Scenario.raises``).

Middleware placement
--------------------

``Scenario.build(extra, position=...)`` places the EXTRA middleware with
:func:`place`: ``"first"`` (outermost wrapper; its before_* hooks run first,
after_* hooks last), ``"last"`` (innermost) or ``"middle"`` (after
``max(1, len(stack) // 2)`` scenario middlewares). Only ``pii`` has two scenario
middlewares (``PIIMiddleware[email]``, ``PIIMiddleware[credit_card]``), so only there is
"middle" a third placement; every other ``create_agent`` scenario has one, and "middle"
is the same as "last". Every combination of scenario x position x sync/async, with and
without looptrace's callback handler, runs to completion. ``deep_agent`` ignores
``position``: ``create_deep_agent(middleware=...)`` always splices user middleware
after its core stack (Filesystem, SubAgent, _ParentNotifier, Summarization,
PatchToolCalls) and before its tail (prompt caching, UnsupportedContent), so it
lands in the middle whatever ``position`` says.

Async
-----

Every scenario tool has a coroutine (:func:`~truth.model.make_tool`). The scenarios do
no file I/O, no ``time.sleep`` and take no lock on the event loop; ToolRetry's backoff
is 0. Run async runs under ``blockbuster.blockbuster_ctx()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, NotRequired

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    HumanInTheLoopMiddleware,
    ModelCallLimitMiddleware,
    ModelFallbackMiddleware,
    PIIMiddleware,
    SummarizationMiddleware,
    TodoListMiddleware,
    ToolRetryMiddleware,
    hook_config,
)
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel

from truth.model import Script, call, last_tool_message, make_tool, recording_model, turn_script

# ---------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------


def place(stack: list[Any], extra: Any, position: str) -> list[Any]:
    """``stack`` with ``extra`` (one middleware or a list, kept together) inserted.

    ``"first"``: before everything (outermost); ``"last"``: after everything
    (innermost); ``"middle"``: after ``max(1, len(stack) // 2)`` entries (so for a
    one-middleware stack "middle" is "last"); ``"around"``: ``extra[0]`` is a
    ``TraceMiddleware`` and the stack is ``trace.around(*stack)`` (the tracer first,
    a probe inside every layer that wraps calls).
    """
    extras = list(extra) if isinstance(extra, (list, tuple)) else [extra]
    stack = list(stack)
    if position == "first":
        return [*extras, *stack]
    if position == "last":
        return [*stack, *extras]
    if position == "middle":
        i = max(1, len(stack) // 2) if stack else 0
        return [*stack[:i], *extras, *stack[i:]]
    if position == "around":  # the tracer first, with a probe inside every wrap layer
        # (a layer before the tracer, such as looptrace's replay layer, stays outside it)
        i = next((k for k, m in enumerate(extras) if hasattr(m, "around")), 0)
        lead, (trace, *rest) = extras[:i], extras[i:]
        return [*lead, *trace.around(*stack), *rest]
    msg = f"position must be 'first', 'middle', 'last' or 'around', not {position!r}"
    raise ValueError(msg)


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------


@dataclass
class Scenario:
    name: str
    build: Callable[..., Any]   # build(extra: list[AgentMiddleware], position="last") -> agent
    inputs: list[Any]
    config: dict[str, Any] = field(default_factory=dict)
    doc: str = ""
    raises: type[BaseException] | None = None  # a failing agent: its stream ends in this

    def __post_init__(self) -> None:
        if not self.doc:
            self.doc = " ".join((self.build.__doc__ or "").split())


def _user(text: str, msg_id: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text, id=msg_id)]}


# 1. pii ----------------------------------------------------------------------

def _build_pii(extra: list[Any], position: str = "last") -> Any:
    """PII redaction of the input and of the answer; one tool call (stack of two PII)."""
    def lookup_account(user: str) -> str:
        """Look up the account of a user."""
        return f"Account of {user}: premium plan, 3 open tickets."

    def script(messages: list[BaseMessage]) -> AIMessage:
        if last_tool_message(messages) is None:
            human = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
            who = str(human.content).removeprefix("I am ").strip()
            return AIMessage("", id="ai-pii-1",
                             tool_calls=[call("lookup_account", {"user": who}, "call_pii_1")])
        return AIMessage("Found it. mail me at bob@example.com", id="ai-pii-2")

    stack = [PIIMiddleware("email", strategy="redact", apply_to_input=True,
                           apply_to_output=True),
             PIIMiddleware("credit_card", strategy="mask")]  # finds nothing; makes "middle" real
    return create_agent(recording_model(script, model_name="pii-model"),
                        tools=[make_tool(lookup_account)],
                        middleware=place(stack, extra, position),
                        system_prompt="You are a support agent.")


# 2. summarization ------------------------------------------------------------

SUMMARY_TEXT = "SUMMARY: the user wants three reports; reports 0 and 1 are done."


def _laps_script(tool: str, laps: int, prefix: str) -> Script:
    """Lap k calls ``tool(n=k)``; decided from the last tool result (robust to summaries)."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = last_tool_message(messages)
        done = -1 if last is None else int(str(last.tool_call_id).rsplit("-", 1)[1])
        lap = done + 1
        if lap < laps:
            return AIMessage(f"lap {lap}", id=f"ai-{prefix}-{lap}",
                             tool_calls=[call(tool, {"n": lap}, f"call-{prefix}-{lap}")])
        return AIMessage(f"All {laps} done.", id=f"ai-{prefix}-final")

    return script


def _build_summarization(extra: list[Any], position: str = "last") -> Any:
    """Three laps of tools; LangChain's summarization (before_model) fires before lap 4."""
    def make_report(n: int) -> str:
        """Make report number n."""
        return f"report {n}: " + " ".join(f"row{n}-{i}" for i in range(30))

    summarizer = recording_model(None, model_name="summarizer-model", summary=SUMMARY_TEXT)
    stack = [SummarizationMiddleware(summarizer, trigger=("messages", 6),
                                     keep=("messages", 2))]
    model = recording_model(_laps_script("make_report", 3, "sum"), model_name="main-model")
    return create_agent(model,
                        tools=[make_tool(make_report)],
                        middleware=place(stack, extra, position),
                        system_prompt="You write reports.")


# 3. context_editing ----------------------------------------------------------

CLEARED = "[cleared by context editing]"


def _build_context_editing(extra: list[Any], position: str = "last") -> Any:
    """Three laps; older tool results are cleared in the model request, not in the state."""
    def fetch_page(n: int) -> str:
        """Fetch page n of the archive."""
        return f"page {n}: " + " ".join(f"word{n}x{i}" for i in range(120))

    stack = [ContextEditingMiddleware(edits=[ClearToolUsesEdit(
        trigger=150, keep=1, placeholder=CLEARED)])]
    model = recording_model(_laps_script("fetch_page", 3, "ctx"), model_name="ctx-model")
    return create_agent(model,
                        tools=[make_tool(fetch_page)],
                        middleware=place(stack, extra, position),
                        system_prompt="You read archives.")


# 4. model_call_limit ---------------------------------------------------------

def _build_model_call_limit(extra: list[Any], position: str = "last") -> Any:
    """A model that always calls a tool; the run limit (2) jumps to the end."""
    def ping(n: int) -> str:
        """Ping."""
        return f"pong {n}"

    def script(messages: list[BaseMessage]) -> AIMessage:
        n = sum(1 for m in messages if isinstance(m, AIMessage))
        return AIMessage(f"ping {n}", id=f"ai-limit-{n}",
                         tool_calls=[call("ping", {"n": n}, f"call-limit-{n}")])

    stack = [ModelCallLimitMiddleware(run_limit=2, exit_behavior="end")]
    return create_agent(recording_model(script, model_name="limit-model"), tools=[make_tool(ping)],
                        middleware=place(stack, extra, position),
                        system_prompt="You ping forever.")


# 5. tool_retry ---------------------------------------------------------------

def _build_tool_retry(extra: list[Any], position: str = "last") -> Any:
    """Two parallel tool calls; ``flaky_lookup`` fails on its first attempt only."""
    attempts: list[int] = []

    def flaky_lookup(key: str) -> str:
        """Look a key up in a flaky service."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("flaky service: connection reset")
        return f"{key} = 42 (attempt {len(attempts)})"

    def stable_lookup(key: str) -> str:
        """Look a key up in a stable service."""
        return f"{key} = 7"

    def answer(messages: list[BaseMessage]) -> AIMessage:
        results = sorted(str(m.content) for m in messages if isinstance(m, ToolMessage))
        return AIMessage("The services say: " + "; ".join(results), id="ai-retry-2")

    model = recording_model(turn_script([
        AIMessage("", id="ai-retry-1", tool_calls=[
            call("flaky_lookup", {"key": "answer"}, "call-retry-1"),
            call("stable_lookup", {"key": "other"}, "call-retry-2")]),
        answer,
    ]), model_name="retry-model")
    stack = [ToolRetryMiddleware(max_retries=2, initial_delay=0.0, backoff_factor=0.0,
                                 max_delay=0.0, jitter=False)]
    return create_agent(model, tools=[make_tool(flaky_lookup), make_tool(stable_lookup)],
                        middleware=place(stack, extra, position),
                        system_prompt="You look things up.")


# 6. model_fallback -----------------------------------------------------------

def _build_model_fallback(extra: list[Any], position: str = "last") -> Any:
    """The primary model raises on every call; the fallback model does the work."""
    def get_time(city: str) -> str:
        """Current time in a city."""
        return f"It is 10:00 in {city}."

    primary = recording_model(None, model_name="primary-model", fail=True)
    backup = recording_model(turn_script([
        AIMessage("", id="ai-fb-1", tool_calls=[call("get_time", {"city": "Oslo"}, "call-fb-1")]),
        AIMessage("In Oslo it is 10:00.", id="ai-fb-2"),
    ]), model_name="fallback-model")
    stack = [ModelFallbackMiddleware(backup)]
    return create_agent(primary, tools=[make_tool(get_time)],
                        middleware=place(stack, extra, position),
                        system_prompt="You tell the time.")


# 7. todo -----------------------------------------------------------------------

TODOS = [{"content": "Collect the figures", "status": "completed"},
         {"content": "Write the summary", "status": "in_progress"}]


def _build_todo(extra: list[Any], position: str = "last") -> Any:
    """``write_todos`` (a Command updating ``todos`` and messages), then an answer."""
    model = recording_model(turn_script([
        AIMessage("Planning first.", id="ai-todo-1",
                  tool_calls=[call("write_todos", {"todos": TODOS}, "call-todo-1")]),
        AIMessage("Plan written; the summary is next.", id="ai-todo-2"),
    ]), model_name="todo-model")
    return create_agent(model, tools=[], middleware=place([TodoListMiddleware()], extra, position),
                        system_prompt="You plan.")


# 8. hitl_edit ------------------------------------------------------------------

HITL_EDITED_ARGS = {"to": "boss@corp.test", "subject": "Q3", "body": "Edited by a human."}


def _build_hitl_edit(extra: list[Any], position: str = "last") -> Any:
    """Pause before ``send_email``; resume with an ``edit`` decision (a checkpointer)."""
    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email."""
        return f"sent to {to}: {subject} / {body}"

    model = recording_model(turn_script([
        AIMessage("I'll send it.", id="ai-hitl-1", tool_calls=[call(
            "send_email", {"to": "team@corp.test", "subject": "Q3", "body": "Draft."},
            "call-hitl-1")]),
        lambda msgs: AIMessage(f"Done: {last_tool_message(msgs).content}", id="ai-hitl-2"),
    ]), model_name="hitl-model")
    stack = [HumanInTheLoopMiddleware(interrupt_on={"send_email": True})]
    return create_agent(model, tools=[make_tool(send_email)],
                        middleware=place(stack, extra, position), checkpointer=InMemorySaver(),
                        system_prompt="You send emails.")


# 9. after_agent_jump -------------------------------------------------------------

class OneMoreThing(AgentMiddleware):  # type: ignore[type-arg]
    """``after_agent`` sends the agent back to the model once, with a new user message."""

    def __init__(self) -> None:
        super().__init__()
        self.fired = 0

    def _hook(self) -> dict[str, Any] | None:
        self.fired += 1
        if self.fired == 1:
            return {"jump_to": "model", "messages": [HumanMessage("one more thing",
                                                                  id="human-one-more")]}
        return None

    @hook_config(can_jump_to=["model"])
    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._hook()

    @hook_config(can_jump_to=["model"])
    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._hook()


def _build_after_agent_jump(extra: list[Any], position: str = "last") -> Any:
    """``after_agent`` jumps back to the model once with a new HumanMessage."""
    def note(text: str) -> str:
        """Take a note."""
        return f"noted: {text}"

    def script(messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.content == "one more thing":
            return AIMessage("Sure, the one more thing is done too.", id="ai-jump-3")
        if last_tool_message(messages) is None:
            return AIMessage("", id="ai-jump-1",
                             tool_calls=[call("note", {"text": "first task"}, "call-jump-1")])
        return AIMessage("First task done.", id="ai-jump-2")

    return create_agent(recording_model(script, model_name="jump-model"), tools=[make_tool(note)],
                        middleware=place([OneMoreThing()], extra, position),
                        system_prompt="You take notes.")


# 10. deep_agent --------------------------------------------------------------------

BIG_RESULT_CHARS = 150_000
SUB_ANSWER = "The key figure is 12345. " + " ".join(f"detail-{i}" for i in range(900))
DEEP_SUMMARY = "SUMMARY: the sales report was fetched and analysed; the key figure is 12345."
# Main-agent calls count ~2.7k, ~3.1k, then ~5.1k tokens (system prompt and tool schemas
# included; the subagent's long answer makes the jump). Deep Agents summarizes at 85 % of
# the profile's max_input_tokens (0.85 * 4800 = 4080): only before the third main call.
DEEP_MAX_INPUT_TOKENS = 4_800


def _build_deep_agent(extra: list[Any], position: str = "last") -> Any:
    """Deep Agents: a 150 KB tool result is evicted to the filesystem, the ``task`` tool
    runs the general-purpose subagent, and summarization fires before the third main
    call. ``position`` is ignored: Deep Agents splices user middleware after its core
    stack."""
    from deepagents import create_deep_agent

    def big_report(topic: str) -> str:
        """Download the full report on a topic (very large)."""
        line = f"{topic} measurement row with value 12345 and some padding text.\n"
        text = f"BEGIN REPORT {topic}\n"
        while len(text) < BIG_RESULT_CHARS:
            text += line
        return text + "END REPORT\n"

    def script(messages: list[BaseMessage]) -> AIMessage:
        summarized = any(m.additional_kwargs.get("lc_source") == "summarization"
                         for m in messages)
        last = last_tool_message(messages)
        if summarized or (last is not None and last.tool_call_id == "call_task"):
            return AIMessage("Final answer: the key figure is 12345.", id="ai-deep-3")
        if last is None:
            return AIMessage("Fetching the report.", id="ai-deep-1", tool_calls=[
                call("big_report", {"topic": "sales"}, "call_big")])
        return AIMessage("Delegating the analysis.", id="ai-deep-2", tool_calls=[
            call("task", {"description": "Find the key figure in the sales report.",
                          "subagent_type": "general-purpose"}, "call_task")])

    def sub_script(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(SUB_ANSWER)

    model = recording_model(script, sub_script=sub_script, model_name="deep-model",
                            summary=DEEP_SUMMARY,
                            profile={"max_input_tokens": DEEP_MAX_INPUT_TOKENS})
    return create_deep_agent(model=model, tools=[make_tool(big_report)], middleware=list(extra),
                             system_prompt="You analyse reports.")


# 11. deep_workspace ---------------------------------------------------------------
# The whole state beyond messages (issue 26): a plan and files that evolve.

WORKSPACE_PLAN = [{"content": "Draft the notes", "status": "in_progress"},
                  {"content": "Check the figures", "status": "pending"}]
WORKSPACE_DONE = [{"content": "Draft the notes", "status": "completed"},
                  {"content": "Check the figures", "status": "completed"}]


def _build_deep_workspace(extra: list[Any], position: str = "last") -> Any:
    """Deep Agents: ``write_todos`` (a plan), ``write_file``, ``edit_file``, then
    ``read_file`` and ``write_todos`` in one turn (parallel), then an answer."""
    from deepagents import create_deep_agent

    model = recording_model(turn_script([
        AIMessage("Planning.", id="ai-ws-1", tool_calls=[
            call("write_todos", {"todos": WORKSPACE_PLAN}, "call-ws-plan")]),
        AIMessage("Drafting.", id="ai-ws-2", tool_calls=[
            call("write_file", {"file_path": "/notes.md", "content": "Q3 revenue: 12\nQ3 cost: 7\n"},
                 "call-ws-write")]),
        AIMessage("Fixing a figure.", id="ai-ws-3", tool_calls=[
            call("edit_file", {"file_path": "/notes.md", "old_string": "revenue: 12",
                               "new_string": "revenue: 13"}, "call-ws-edit")]),
        AIMessage("Checking.", id="ai-ws-4", tool_calls=[
            call("read_file", {"file_path": "/notes.md"}, "call-ws-read"),
            call("write_todos", {"todos": WORKSPACE_DONE}, "call-ws-done")]),
        AIMessage("The notes are ready: revenue 13, cost 7.", id="ai-ws-5"),
    ]), model_name="workspace-model")
    # (this Deep Agents version plans only with the todo list middleware given)
    return create_deep_agent(model=model, tools=[], middleware=[TodoListMiddleware(), *extra],
                             system_prompt="You keep notes.")


# 12. structured ---------------------------------------------------------------------

class Forecast(BaseModel):
    """A weather forecast."""

    city: str
    celsius: int


def _build_structured(extra: list[Any], position: str = "last") -> Any:
    """``response_format`` (a tool strategy): the answer lands in ``structured_response``."""
    def get_temperature(city: str) -> str:
        """The temperature in a city."""
        return f"{city}: 21 C"

    model = recording_model(turn_script([
        AIMessage("", id="ai-sr-1", tool_calls=[
            call("get_temperature", {"city": "Oslo"}, "call-sr-1")]),
        AIMessage("", id="ai-sr-2", tool_calls=[
            call("Forecast", {"city": "Oslo", "celsius": 21}, "call-sr-2")]),
    ]), model_name="structured-model")
    return create_agent(model, tools=[make_tool(get_temperature)],
                        middleware=place([], extra, position),
                        response_format=ToolStrategy(Forecast),
                        system_prompt="You forecast.")


# 13. custom_jump ----------------------------------------------------------------------

class AttemptsState(AgentState):  # type: ignore[type-arg]
    attempts: NotRequired[int]


class GiveUpAfterTwo(AgentMiddleware):  # type: ignore[type-arg]
    """Its own state key, ``attempts``, counted in ``after_model``; at two it jumps to
    the end (the key drives the jump)."""

    state_schema = AttemptsState

    def _hook(self, state: Any) -> dict[str, Any]:
        n = int(state.get("attempts") or 0) + 1
        return {"attempts": n, "jump_to": "end"} if n >= 2 else {"attempts": n}

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._hook(state)

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._hook(state)


def _build_custom_jump(extra: list[Any], position: str = "last") -> Any:
    """A custom ``state_schema`` key (``attempts``) that makes ``after_model`` jump to the
    end on the second lap."""
    def fetch(n: int) -> str:
        """Fetch a page."""
        return f"page {n}: still loading"

    model = recording_model(_laps_script("fetch", 5, "ai-cj"), model_name="jump-key-model")
    return create_agent(model,
                        tools=[make_tool(fetch)],
                        middleware=place([GiveUpAfterTwo()], extra, position),
                        system_prompt="You fetch pages.")


# 14. command_update ------------------------------------------------------------------

class NotesState(AgentState):  # type: ignore[type-arg]
    notes: NotRequired[list[str]]


class KeepsNotes(AgentMiddleware):  # type: ignore[type-arg]
    """Declares the ``notes`` key (no hooks)."""

    state_schema = NotesState


def _build_command_update(extra: list[Any], position: str = "last") -> Any:
    """A tool returning ``Command(update=...)`` that writes a custom key (``notes``) and
    its ToolMessage."""
    @tool
    def remember(fact: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Remember a fact."""
        return Command(update={"notes": [fact], "messages": [
            ToolMessage(f"remembered: {fact}", tool_call_id=tool_call_id)]})

    model = recording_model(turn_script([
        AIMessage("", id="ai-cmd-1", tool_calls=[
            call("remember", {"fact": "the meeting is at 10"}, "call-cmd-1")]),
        AIMessage("Noted.", id="ai-cmd-2"),
    ]), model_name="command-model")
    return create_agent(model, tools=[remember], middleware=place([KeepsNotes()], extra, position),
                        system_prompt="You remember.")


_HITL_RESUME = Command(resume={"decisions": [{
    "type": "edit", "edited_action": {"name": "send_email", "args": HITL_EDITED_ARGS}}]})

SCENARIOS: dict[str, Scenario] = {
    s.name: s for s in [
        Scenario("pii", _build_pii, [_user("I am alice@example.com", "human-pii")]),
        Scenario("summarization", _build_summarization,
                 [_user("Make three reports.", "human-summarization")]),
        Scenario("context_editing", _build_context_editing,
                 [_user("Read three pages.", "human-context-editing")]),
        Scenario("model_call_limit", _build_model_call_limit,
                 [_user("Ping until stopped.", "human-model-call-limit")]),
        Scenario("tool_retry", _build_tool_retry,
                 [_user("What is the answer?", "human-tool-retry")]),
        Scenario("model_fallback", _build_model_fallback,
                 [_user("What time is it in Oslo?", "human-model-fallback")]),
        Scenario("todo", _build_todo, [_user("Plan the quarterly summary.", "human-todo")]),
        Scenario("hitl_edit", _build_hitl_edit,
                 [_user("Email the Q3 draft to the team.", "human-hitl"), _HITL_RESUME],
                 config={"configurable": {"thread_id": "truth-hitl"}}),
        Scenario("after_agent_jump", _build_after_agent_jump,
                 [_user("Note the first task.", "human-after-agent-jump")]),
        Scenario("deep_agent", _build_deep_agent,
                 [_user("Analyse the sales report.", "human-deep-agent")]),
        Scenario("deep_workspace", _build_deep_workspace,
                 [_user("Write the Q3 notes.", "human-deep-workspace")]),
        Scenario("structured", _build_structured,
                 [_user("Forecast for Oslo?", "human-structured")]),
        Scenario("custom_jump", _build_custom_jump,
                 [_user("Fetch until it loads.", "human-custom-jump")]),
        Scenario("command_update", _build_command_update,
                 [_user("Remember the meeting time.", "human-command-update")]),
    ]
}


# Failing agents: the stream ends in an exception (``Scenario.raises``), raised by a
# prebuilt middleware's node hook, a wrap hook that gives up, a tool, the model.

def _build_call_limit_error(extra: list[Any], position: str = "last") -> Any:
    """A call limit with ``exit_behavior="error"``: its before_model raises at lap 2."""
    def ping(n: int) -> str:
        """Ping a host."""
        return f"pong {n}"

    model = recording_model(_laps_script("ping", 5, "ai-limit-err"), model_name="limit-model")
    stack = [ModelCallLimitMiddleware(run_limit=1, exit_behavior="error")]
    return create_agent(model, tools=[make_tool(ping)], middleware=place(stack, extra, position),
                        system_prompt="You ping hosts.")


def _build_tool_retry_gives_up(extra: list[Any], position: str = "last") -> Any:
    """Tool retry re-raises (``on_failure="error"``) once a tool failed twice."""
    def dead_lookup(key: str) -> str:
        """Look a key up in a dead service."""
        raise ConnectionError("dead service: connection refused")

    model = recording_model(turn_script([
        AIMessage("", id="ai-dead-1", tool_calls=[call("dead_lookup", {"key": "k"}, "call-dead-1")]),
        AIMessage("unreachable", id="ai-dead-2"),
    ]), model_name="dead-model")
    stack = [ToolRetryMiddleware(max_retries=1, initial_delay=0.0, backoff_factor=0.0,
                                 max_delay=0.0, jitter=False, on_failure="error")]
    return create_agent(model, tools=[make_tool(dead_lookup)],
                        middleware=place(stack, extra, position),
                        system_prompt="You look things up.")


def _build_tool_raises(extra: list[Any], position: str = "last") -> Any:
    """A tool without error handling raises; a PII middleware is in the stack."""
    def charge_card(amount: int) -> str:
        """Charge the customer's card."""
        raise ValueError("card declined: insufficient funds")

    model = recording_model(turn_script([
        AIMessage("", id="ai-charge-1",
                  tool_calls=[call("charge_card", {"amount": 30}, "call-charge-1")]),
        AIMessage("unreachable", id="ai-charge-2"),
    ]), model_name="charge-model")
    stack = [PIIMiddleware("email", strategy="redact", apply_to_input=True)]
    return create_agent(model, tools=[make_tool(charge_card)],
                        middleware=place(stack, extra, position),
                        system_prompt="You take payments.")


def _build_fallback_exhausted(extra: list[Any], position: str = "last") -> Any:
    """The primary model and its fallback both raise: the model node fails."""
    def get_time(city: str) -> str:
        """Current time in a city."""
        return f"It is 10:00 in {city}."

    primary = recording_model(None, model_name="primary-model", fail=True)
    backup = recording_model(None, model_name="backup-model", fail=True)
    stack = [ModelFallbackMiddleware(backup)]
    return create_agent(primary, tools=[make_tool(get_time)],
                        middleware=place(stack, extra, position),
                        system_prompt="You tell the time.")


FAILING: dict[str, Scenario] = {
    s.name: s for s in [
        Scenario("call_limit_error", _build_call_limit_error,
                 [_user("Ping until stopped.", "human-limit-error")],
                 raises=ModelCallLimitExceededError),
        Scenario("tool_retry_gives_up", _build_tool_retry_gives_up,
                 [_user("Look k up.", "human-dead")], raises=ConnectionError),
        Scenario("tool_raises", _build_tool_raises,
                 [_user("Charge me 30, I am bob@example.com", "human-charge")],
                 raises=ValueError),
        Scenario("fallback_exhausted", _build_fallback_exhausted,
                 [_user("What time is it in Oslo?", "human-exhausted")], raises=RuntimeError),
    ]
}


__all__ = [
    "BIG_RESULT_CHARS", "CLEARED", "DEEP_MAX_INPUT_TOKENS", "DEEP_SUMMARY", "FAILING",
    "HITL_EDITED_ARGS", "SCENARIOS", "SUB_ANSWER", "SUMMARY_TEXT", "TODOS", "WORKSPACE_DONE",
    "WORKSPACE_PLAN", "Scenario", "place",
]
