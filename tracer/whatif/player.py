"""Playing a cassette back into a live agent: the rerun layer and the model hook.

Two pieces, driven by one ``Session`` (what is used up, where the live part began):

- ``RerunMiddleware``, put OUTERMOST in the agent's middleware list (just outside
  the tracer, so it sees each request as the tracer recorded it). At each model call
  it matches the request against the record (``tracer.whatif.cassette``); on a match it lets
  the call go down through every inner layer (the tracer records it as usual) and the
  model at the bottom is answered from the record. At each tool call it hands the
  inner layers a stand-in of the tool that gives back the recorded result (or raises
  the recorded exception); a tool call that started a subagent runs, and the
  subagent's model calls are answered from the subagent's record. It only has wrap
  hooks: no graph node is added, so a rerun has the graph of its record.
- ``RerunCache``, a LangChain LLM cache installed for the time of a rerun: every
  chat model called inside the rerun's context (the agent's, a fallback's, a
  subagent's, a summariser's) asks it first. It answers from the record what the
  layer above decided, or lets the call through (the live part of a fork), or
  answers from an offline model. Outside a rerun it passes every call to the cache
  that was installed before (none by default): nothing else changes.

A fork's edit (``tracer.vocab.edits.Edit``, made by ``tracer.record.edit_apply``) is applied here, at the first call at or after
the fork step. A request that matches nothing before the fork stops the rerun with
``RerunDiverged`` (which call, and the diff to the nearest recorded request), unless
the session may go live.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)
from langchain_core.outputs import ChatGeneration
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.types import Command

from tracer.db.serialize import message_json
from tracer.errors import RerunDiverged
from tracer.read.loader import Message
from tracer.record.edit_apply import apply_request
from tracer.vocab.edits import Edit
from tracer.vocab.redact import DEFAULT_REDACTOR

from .cassette import Cassette, Miss, ModelCall, Outcome, Request, ToolCall
from .cassette import request_of_messages as _request_of
from .tool_writes import StateWrite, StoreWrite, faithful, update_for

__all__ = ["RecordedError", "RerunCache", "RerunDiverged", "RerunMiddleware", "Session",
           "generations_of", "messages_of_prompt"]


class RecordedError(Exception):
    """Base of the exceptions a rerun raises again where the record has one whose
    class it cannot name (the class is made with the recorded name)."""


# -- the session -------------------------------------------------------------------


def fork_request(edit: Edit, request: ModelRequest[Any], session: Session,
                 ) -> tuple[ModelRequest[Any], Command[Any] | None]:
    """The request with a fork's model-call edit made, and the state update that keeps
    it (a message edit is written into the conversation, as the fork's record shows);
    a system prompt or model edit holds from the fork on (``Session``'s overrides)."""
    new = request
    for one in (edit, *session.more):  # (a rewind's several edits, made in order)
        new, _ = apply_request(new, one)
        if one.kind == "system":
            session.system_override = one.text
        elif one.kind == "model":
            session.model_override = new.model
    if any(e.spec.messages for e in (edit, *session.more)):
        return new, persist(list(request.messages), list(new.messages))
    return new, None


@dataclass
class Stats:
    """What a rerun served from the record, and where the live part began."""

    model_calls: int = 0  # answered from the record
    tokens: int = 0  # tokens of those calls, as recorded
    seconds: float = 0.0  # recorded time of the calls and tool calls served
    tool_calls: int = 0  # tool calls answered from the record
    live_model_calls: int = 0
    live_tool_calls: int = 0
    live_from: dict[str, Any] | None = None  # {"call": n, "index": i (0-based), "why": ...}
    subagent_calls: int = 0  # tool calls that started a subagent: run, their calls served
    unrecorded_model_calls: int = 0  # calls the record never held (a summariser's): run
    # why tool calls ran live outside a live part (``live_from``): reason -> how many
    live_why: dict[str, int] = field(default_factory=dict)

    def ran_live(self, why: str) -> None:
        """A tool call ran live, for ``why`` (when no live part had begun)."""
        self.live_tool_calls += 1
        self.live_why[why] = self.live_why.get(why, 0) + 1


@dataclass
class Session:
    """The state of one rerun: the cassette, what is used up, the fork and its edit."""

    cassette: Cassette
    edit: Edit | None = None  # the fork's edit (``tracer.vocab.edits``)
    fork_index: int | None = None  # 0-based step of the record where the fork is
    offline: BaseChatModel | None = None  # answers the live part instead of the agent's model
    continue_live: bool = False
    stats: Stats = field(default_factory=Stats)
    used: set[int] = field(default_factory=set)
    live: bool = False
    fork_applied: bool = False
    model_calls_seen: int = 0
    system_override: str | None = None
    model_override: BaseChatModel | None = None
    channels: dict[str, Any] = field(default_factory=dict)  # the rerun graph's state
    lock: threading.Lock = field(default_factory=threading.Lock)
    more: tuple[Edit, ...] = ()  # (a rewind) more model-call edits, made after ``edit``
    reached: bool = False  # a call at or after the fork step was reached

    @property
    def before_fork(self) -> bool:
        """The run is still in its part served from the record, before the fork step
        (a rewound run's debugger keeps quiet there: ``tracer.record.rebuild``)."""
        return not (self.reached or self.live or self.fork_applied)

    def reach(self, call: ModelCall | ToolCall | None) -> None:
        """Note ``call`` (recorded), matched: at or after the fork step, the fork is reached."""
        if call is not None and self.fork_index is not None and max(
                call.index, call.end) >= self.fork_index:
            self.reached = True

    @property
    def root_id(self) -> str:
        return self.cassette.root.id

    def may_go_live(self) -> bool:
        return self.fork_applied or self.continue_live or (
            self.edit is not None and self.edit.everywhere)

    def go_live(self, why: str, index: int | None) -> None:
        if not self.live:
            self.live = True
            self.stats.live_from = {"call": self.model_calls_seen, "index": index,
                                    "why": why}

    def diverged(self, where: str, miss: Miss | None, why: str = "") -> RerunDiverged:
        text = f"the rerun diverged from the record at {where}"
        if miss is not None:
            text += ": " + miss.explain()
        elif why:
            text += ": " + why
        text += " (--continue-live goes on with the agent's own model)"
        return RerunDiverged(text)

    def at_fork(self, call: ModelCall | ToolCall) -> bool:
        """``call`` (recorded) is the first at or after the fork step, or holds it."""
        return (self.edit is not None and not self.fork_applied and self.fork_index is not None
                and max(call.index, call.end) >= self.fork_index)

    # -- model invocations reaching the cache --------------------------------------
    def invoke_model(self, serving: Serving, prompt: str) -> list[ChatGeneration] | None:
        """Answer one model invocation (``prompt``: the messages as the LLM cache gets
        them): from the record, or None to let the model run."""
        with self.lock:
            if serving.queue is not None:
                if serving.queue:
                    return generations_of(serving.queue.pop(0))
                if not self.may_go_live():
                    raise self.diverged(f"model call {self.model_calls_seen}", None,
                                        "the model was called more often than recorded")
                self.go_live("more attempts than recorded", None)
            elif serving.run_id is not None and not serving.live and not self.live and not any(
                    c.hook == "model" for c in self.cassette.model_calls.get(serving.run_id, ())):
                # a call outside the agent's model calls (a summariser's own model, in a
                # before_model hook): answered from the hook's record; one the record does
                # not hold runs (after the fork, as part of the live run)
                request = _request_of(messages_of_prompt(prompt), system=None, tools=None)
                hooked = self.cassette.match_hook_call(serving.run_id, request, self.used)
                if hooked is not None and hooked.outcomes and hooked.outcomes[0].messages:
                    self.used.add(id(hooked))
                    self.stats.model_calls += 1
                    self.stats.tokens += hooked.tokens
                    return generations_of(hooked.outcomes[0])
                if not self.fork_applied:
                    self.stats.unrecorded_model_calls += 1
                    return None
                self.go_live("a model call the record does not hold", None)
            elif serving.run_id is not None and not serving.live and not self.live:
                request = _request_of(messages_of_prompt(prompt), system=None, tools=None)
                found = self.cassette.match_model(serving.run_id, request, self.used,
                                                  hook="model")
                if isinstance(found, ModelCall):
                    self.used.add(id(found))
                    self.stats.model_calls += 1
                    self.stats.tokens += found.tokens
                    self.stats.seconds += found.seconds
                    return generations_of(found.outcomes[0]) if found.outcomes else None
                if not self.may_go_live():
                    name = self.cassette.runs[serving.run_id].summary.name
                    raise self.diverged(f"a model call of run {name!r}", found)
                self.go_live("a model call not in the record", None)
            self.stats.live_model_calls += 1
            offline = None if serving.no_offline else self.offline
        if offline is not None:
            msgs = messages_from_dict([m.data for m in messages_of_prompt(prompt)])
            return list(offline._generate(msgs).generations)
        return None


@dataclass
class Serving:
    """What the model invocations in one context get: the queued outcomes of a matched
    call, content matching against a run's record (``run_id``), or the live model."""

    session: Session
    queue: list[Outcome] | None = None
    run_id: str | None = None
    live: bool = False
    no_offline: bool = False  # a swapped model answers itself
    parent_call: str | None = None  # a subagent's: the tool call that started it


SERVING: contextvars.ContextVar[Serving | None] = contextvars.ContextVar(
    "looptrace_rerun_serving", default=None)


def generations_of(outcome: Outcome) -> list[ChatGeneration]:
    """A recorded outcome as the LLM cache hands it back (its AI message), or its
    recorded exception raised again (``rebuild_error``)."""
    if outcome.is_error:
        raise rebuild_error(outcome)
    msgs = messages_from_dict(outcome.messages) if outcome.messages else [AIMessage("")]
    ai = next((m for m in msgs if isinstance(m, AIMessage)), AIMessage(""))
    return [ChatGeneration(message=ai)]


def rebuild_error(outcome: Outcome) -> Exception:
    """The recorded exception again: its class when it is a builtin one (or a known
    LangChain one), else a ``RecordedError`` subclass of the recorded name; the same
    ``Type: message`` text either way."""
    name = outcome.error_type or "Exception"
    text = outcome.error or ""
    message = text[len(name) + 2:] if text.startswith(name + ": ") else text
    cls = getattr(builtins, name, None)
    if cls is None and name == "ToolException":
        from langchain_core.tools import ToolException

        cls = ToolException
    if isinstance(cls, type) and issubclass(cls, Exception):
        with contextlib.suppress(Exception):  # (a constructor that wants other arguments)
            made: Exception = cls(message)
            return made
    recorded: type[RecordedError] = type(name, (RecordedError,), {})
    return recorded(message)


# -- requests as compared --------------------------------------------------------


def _as_recorded(m: BaseMessage, i: int) -> Message:
    """A live message in its recorded form: serialised and redacted as the writer does."""
    data = json.loads(DEFAULT_REDACTOR(message_json(m)))
    body = data.get("data") or {}
    return Message(i, 0, body.get("id"), str(data.get("type")), body.get("tool_call_id"),
                   "", data)


# the class names ``dumps`` writes -> the types ``messages_from_dict`` reads
_LC_TYPES = {"AIMessage": "ai", "HumanMessage": "human", "SystemMessage": "system",
             "ToolMessage": "tool", "ChatMessage": "chat", "FunctionMessage": "function",
             "AIMessageChunk": "AIMessageChunk", "HumanMessageChunk": "HumanMessageChunk",
             "SystemMessageChunk": "SystemMessageChunk", "ToolMessageChunk": "ToolMessageChunk"}


def messages_of_prompt(prompt: str) -> list[Message]:
    """The messages of an LLM cache key (``dumps`` of the message list), in their
    recorded form (redacted as the writer redacts)."""
    out = []
    for i, item in enumerate(json.loads(DEFAULT_REDACTOR(prompt))):
        name = str((item.get("id") or ["?"])[-1]) if isinstance(item, dict) else "?"
        kwargs = dict(item.get("kwargs") or {}) if isinstance(item, dict) else {}
        typ = _LC_TYPES.get(name, "human")
        kwargs.setdefault("content", "")
        kwargs.setdefault("type", typ if typ in ("ai", "human", "system", "tool") else None)
        out.append(Message(i, 0, kwargs.get("id"), typ.removesuffix("MessageChunk").lower()
                           if "Chunk" in typ else typ, kwargs.get("tool_call_id"), "",
                           {"type": typ, "data": kwargs}))
    return out


def live_request_of(messages: list[BaseMessage], *, system: str | None = None,
                    tools: list[str] | None = None, model: str | None = None,
                    settings: Any = None) -> Request:
    return _request_of([_as_recorded(m, i) for i, m in enumerate(messages)],
                       system=DEFAULT_REDACTOR(system) if system is not None else None,
                       tools=tools, model=model, settings=settings)


def _tool_names(tools: Sequence[object] | None) -> list[str]:
    from tracer.vocab.records import tool_name

    return [tool_name(t) for t in tools or []]


def _model_name(model: BaseChatModel) -> str | None:
    try:
        params = model._get_ls_params()
        return str(params.get("ls_model_name") or type(model).__name__)
    except Exception:  # noqa: BLE001
        return getattr(model, "model_name", None) or type(model).__name__


def request_view(request: ModelRequest[Any]) -> Request:
    return live_request_of(list(request.messages), system=request.system_prompt,
                           tools=_tool_names(request.tools), model=_model_name(request.model),
                           settings=request.model_settings or None)


# -- the LLM cache -----------------------------------------------------------------

_INSTALL_LOCK = threading.Lock()
_INSTALLED: list[Any] = []  # [the RerunCache, its refcount]


class RerunCache(BaseCache):
    """Answers model calls inside a rerun's context; passes every other call to the
    cache that was installed before it."""

    def __init__(self, previous: BaseCache | None) -> None:
        self.previous = previous

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        serving = SERVING.get()
        if serving is None:
            return self.previous.lookup(prompt, llm_string) if self.previous else None
        return serving.session.invoke_model(serving, prompt)

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        if SERVING.get() is None and self.previous is not None:
            self.previous.update(prompt, llm_string, return_val)

    def clear(self, **kwargs: Any) -> None:
        if self.previous is not None:
            self.previous.clear(**kwargs)

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        if SERVING.get() is None:
            return await self.previous.alookup(prompt, llm_string) if self.previous else None
        return self.lookup(prompt, llm_string)  # (memory only: no blocking call)

    async def aupdate(self, prompt: str, llm_string: str,
                      return_val: RETURN_VAL_TYPE) -> None:
        if SERVING.get() is None and self.previous is not None:
            await self.previous.aupdate(prompt, llm_string, return_val)

    async def aclear(self, **kwargs: Any) -> None:
        if self.previous is not None:
            await self.previous.aclear(**kwargs)


def install() -> None:
    """Install the rerun cache (counted: two reruns at once share it)."""
    from langchain_core.globals import get_llm_cache, set_llm_cache

    with _INSTALL_LOCK:
        if _INSTALLED:
            _INSTALLED[1] += 1
            return
        cache = RerunCache(get_llm_cache())
        set_llm_cache(cache)
        _INSTALLED[:] = [cache, 1]
        _patch_tool_node()


def uninstall() -> None:
    from langchain_core.globals import get_llm_cache, set_llm_cache

    with _INSTALL_LOCK:
        if not _INSTALLED:
            return
        _INSTALLED[1] -= 1
        if _INSTALLED[1] > 0:
            return
        cache: RerunCache = _INSTALLED[0]
        if get_llm_cache() is cache:
            set_llm_cache(cache.previous)
        _INSTALLED.clear()
        _unpatch_tool_node()


# -- a subagent's tool calls -------------------------------------------------------
# A subagent (Deep Agents' ``task``) is an agent of its own, built by its parent with
# its own middleware: the rerun layer is not in it. While a rerun runs, the innermost
# step of every ``ToolNode`` (below all wrap layers, where the tool is invoked, its
# callbacks included) asks the session first: inside a subagent being rerun, a call
# its record holds gets a stand-in of the tool that gives back the recorded result, as
# the rerun layer does for the agent's own calls. Everywhere else nothing changes.

_TOOL_NODE_REAL: dict[str, Any] = {}


def _subagent_tool(request: ToolCallRequest) -> ToolCallRequest:
    """The request, with the tool answered from the subagent's record when this call
    is a subagent's and its record holds it."""
    serving = SERVING.get()
    # (the pytest plugin's cassettes serve model calls only: their serving has no run)
    if (not isinstance(serving, Serving) or serving.parent_call is None
            or serving.run_id is None or serving.live):
        return request
    call = request.tool_call
    tcid, name, args = call.get("id") or "", str(call.get("name")), call.get("args")
    if tcid == serving.parent_call:  # (the parent's own call that starts the subagent)
        return request
    s = serving.session
    with s.lock:
        if s.live:
            s.stats.live_tool_calls += 1
            return request
        found = s.cassette.match_tool(serving.run_id, tcid, name, args, s.used)
        if found is None:
            if not s.may_go_live():
                run = s.cassette.runs[serving.run_id].summary.name
                raise s.diverged(f"tool call {name}({json.dumps(args, default=str)}) of run "
                                 f"{run!r}", None, "no such call is left in its record")
            s.stats.ran_live(NOT_RECORDED)
            return request
        s.used.add(id(found))
        why = _unservable(request.tool, found.outcomes, found.writes, found.store)
        if why is not None or request.tool is None:
            s.stats.ran_live(why or LACKING)
            return request
        s.stats.tool_calls += 1
        s.stats.seconds += found.seconds
        return request.override(tool=_served_tool(request.tool, found.outcomes, tcid, None,
                                                  _updates(s, found), found.store))


def _patch_tool_node() -> None:
    from langgraph.prebuilt.tool_node import ToolNode

    real_sync = ToolNode._execute_tool_sync
    real_async = ToolNode._execute_tool_async

    def execute_sync(self: Any, request: ToolCallRequest, *a: Any, **kw: Any) -> Any:
        return real_sync(self, _subagent_tool(request), *a, **kw)

    async def execute_async(self: Any, request: ToolCallRequest, *a: Any, **kw: Any) -> Any:
        return await real_async(self, _subagent_tool(request), *a, **kw)

    _TOOL_NODE_REAL.update(sync=real_sync, async_=real_async)
    ToolNode._execute_tool_sync = execute_sync  # type: ignore[method-assign]
    ToolNode._execute_tool_async = execute_async  # type: ignore[method-assign]


def _unpatch_tool_node() -> None:
    from langgraph.prebuilt.tool_node import ToolNode

    if _TOOL_NODE_REAL:
        ToolNode._execute_tool_sync = _TOOL_NODE_REAL["sync"]  # type: ignore[method-assign]
        ToolNode._execute_tool_async = _TOOL_NODE_REAL["async_"]  # type: ignore[method-assign]
        _TOOL_NODE_REAL.clear()


def serve(session: Session) -> contextvars.Token[Serving | None]:
    """Start answering model calls of this context from ``session`` (the root run)."""
    return SERVING.set(Serving(session, run_id=session.root_id))


def stop(token: contextvars.Token[Serving | None]) -> None:
    SERVING.reset(token)


# -- the rerun layer ----------------------------------------------------------------


def _served_tool(tool: BaseTool, outcomes: list[Outcome], tool_call_id: str,
                 edited: str | None, updates: dict[str, Any] | None = None,
                 store: list[StoreWrite] | None = None) -> BaseTool:
    """A copy of ``tool`` (same name, schema and error handling) whose function gives
    back the recorded outcomes in turn instead of running, and makes the call's
    recorded state writes again (``updates``: key -> the value to write): in its
    ``Command`` when the tool returned one, else straight to the channels, as the tool
    wrote them; and its writes to the LangGraph store (``store``), to the graph's store."""
    queue = list(outcomes)
    lock = threading.Lock()
    updates = updates or {}

    def give(*_a: Any, **_kw: Any) -> Any:
        _store_again(store)
        return answer()

    def answer() -> Any:
        with lock:
            outcome = queue.pop(0) if len(queue) > 1 else queue[0]
        if outcome.is_error:
            raise rebuild_error(outcome)
        msgs = messages_from_dict(outcome.messages) if outcome.messages else []
        msg = next((m for m in msgs if isinstance(m, ToolMessage)), None)
        if msg is None:
            msg = ToolMessage("", tool_call_id=tool_call_id)
        msg = msg.model_copy(update={"tool_call_id": tool_call_id})
        if edited is not None:
            msg = msg.model_copy(update={"content": edited})
        if outcome.command:
            return Command(update={**updates, "messages": [msg]})
        if updates:
            _send(updates)
        if getattr(tool, "response_format", None) == "content_and_artifact":
            return msg.content, msg.artifact
        return msg

    async def agive(*_a: Any, **_kw: Any) -> Any:
        await _astore_again(store)
        return answer()

    return tool.model_copy(update={"func": give, "coroutine": agive})


def _store_again(writes: list[StoreWrite] | None) -> None:
    """Make a served call's recorded writes to the LangGraph store again (on the store
    of the graph it runs in), as the tool made them: in order, a delete for None."""
    if not writes:
        return
    from langgraph.config import get_store

    store = get_store()
    for w in writes:
        if w.value is None:
            store.delete(w.namespace, w.key)
        else:
            store.put(w.namespace, w.key, w.value)


async def _astore_again(writes: list[StoreWrite] | None) -> None:
    if not writes:
        return
    from langgraph.config import get_store

    store = get_store()
    for w in writes:
        if w.value is None:
            await store.adelete(w.namespace, w.key)
        else:
            await store.aput(w.namespace, w.key, w.value)


def _send(updates: dict[str, Any]) -> None:
    """Write ``updates`` to the state channels of the tool's graph step (what a tool
    that writes to its channels does, such as Deep Agents' state backend)."""
    from langgraph._internal._constants import CONFIG_KEY_SEND
    from langgraph.config import get_config

    get_config()["configurable"][CONFIG_KEY_SEND](list(updates.items()))


# Why a recorded tool call runs again instead of being answered from the record.
NOT_RECORDED = "a call the record does not hold"
LACKING = "a tool the agent lacks"
FORK_ARGS = "the fork's new arguments"


def _unservable(tool: BaseTool | None, outcomes: list[Outcome], writes: dict[str, StateWrite],
                store: Sequence[StoreWrite] = ()) -> str | None:
    """Why the tool must run again rather than give back its recorded result; None when
    the record can answer for it."""
    from langchain_core.tools import StructuredTool, Tool

    if tool is None:
        return LACKING
    if not isinstance(tool, (StructuredTool, Tool)):
        return f"a tool of a kind the rerun cannot stand in for ({type(tool).__name__})"
    if not outcomes:
        return "a call whose result the record does not hold"
    if not all(faithful(w.after) for w in writes.values()) or not all(
            isinstance(w.value, dict) and faithful(w.value) for w in store
            if w.value is not None):
        return "a result the record holds only as a repr"
    last = outcomes[-1]
    # a Command's keys are given back from what the call wrote to the state
    if last.is_error or not last.command or set(last.update_keys) - {"messages"} <= set(
            writes):
        return None
    return "a Command whose state update the record does not hold whole"


def _servable(tool: BaseTool | None, outcomes: list[Outcome], writes: dict[str, StateWrite],
              store: Sequence[StoreWrite] = ()) -> bool:
    return _unservable(tool, outcomes, writes, store) is None


def _updates(session: Session, call: ToolCall) -> dict[str, Any]:
    return {k: update_for(session.channels.get(k), w) for k, w in call.writes.items()}


class RerunMiddleware(AgentMiddleware):
    """The rerun layer (see the module doc). Put it first in the middleware list."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    @property
    def name(self) -> str:
        return "LooptraceRerun"

    # -- model calls --------------------------------------------------------------
    def _plan(self, request: ModelRequest[Any],
              ) -> tuple[ModelRequest[Any], Serving, Command[Any] | None]:
        s = self.session
        with s.lock:
            s.model_calls_seen += 1
            n = s.model_calls_seen
            if s.live:
                return self._forked(request), self._live_serving(), None
            view = request_view(request)
            found = s.cassette.match_model(s.root_id, view, s.used)
            s.reach(found if isinstance(found, ModelCall) else None)
            command = None
            edit = s.edit
            if (edit is not None and isinstance(found, ModelCall) and s.at_fork(found)
                    and edit.on_model):
                request, command = fork_request(edit, request, s)
                s.fork_applied = True
                if edit.kind == "model" or not request_view(request).matches(found.request):
                    s.used.add(id(found))
                    s.go_live(f"the edit ({edit.describe()})", found.index)
                    return request, self._live_serving(), command
            if isinstance(found, Miss):
                if not s.may_go_live():
                    raise s.diverged(f"model call {n}", found)
                s.go_live("the request no longer matches the record", None)
                return self._forked(request), self._live_serving(), command
            s.used.add(id(found))
            s.stats.model_calls += 1
            s.stats.tokens += found.tokens
            s.stats.seconds += found.seconds
            return request, Serving(s, queue=list(found.outcomes)), command

    def _live_serving(self) -> Serving:
        s = self.session
        return Serving(s, live=True, no_offline=s.model_override is not None)

    def _forked(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        s = self.session
        if s.system_override is not None:
            request = request.override(system_message=SystemMessage(s.system_override))
        if s.model_override is not None:
            request = request.override(model=s.model_override)
        return request

    @staticmethod
    def _result(response: ModelResponse[Any] | AIMessage, command: Command[Any] | None,
                ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        if command is None:
            return response
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        # (the edit's command: ``Command(update={"messages": [...]})``, as ``persist`` makes)
        update = cast("dict[str, list[Any]]", command.update)["messages"]
        if update and isinstance(update[0], RemoveMessage) and update[0].id == REMOVE_ALL_MESSAGES:
            # the whole list again: the response goes after it (it was added before)
            command = Command(update={"messages": [*update, *response.result]})
        return ExtendedModelResponse(model_response=response, command=command)

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
                        ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        request, serving, command = self._plan(request)
        token = SERVING.set(serving)
        try:
            response = handler(request)
        finally:
            SERVING.reset(token)
        return self._result(response, command)

    async def awrap_model_call(
            self, request: ModelRequest[Any],
            handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        request, serving, command = self._plan(request)
        token = SERVING.set(serving)
        try:
            response = await handler(request)
        finally:
            SERVING.reset(token)
        return self._result(response, command)

    # -- tool calls ---------------------------------------------------------------
    def _tool_plan(self, request: ToolCallRequest) -> tuple[ToolCallRequest, Serving | None]:
        s = self.session
        call = request.tool_call
        tcid, name, args = call.get("id") or "", str(call.get("name")), call.get("args")
        with s.lock:
            if s.live:
                s.stats.live_tool_calls += 1
                return request, None
            found: ToolCall | None = s.cassette.match_tool(s.root_id, tcid, name, args, s.used)
            s.reach(found)
            edit = s.edit
            if edit is not None and found is not None and s.at_fork(found) and edit.on_tool:
                s.fork_applied = True
                s.used.add(id(found))
                if edit.kind == "tool_args":
                    s.stats.ran_live(FORK_ARGS)
                    return request.override(tool_call={**call, "args": edit.args or {}}), None
                if request.tool is not None and _servable(request.tool, found.outcomes,
                                                          found.writes, found.store):
                    good = [o for o in found.outcomes if not o.is_error] or found.outcomes
                    tool = _served_tool(request.tool, good[-1:], tcid, edit.text,
                                        _updates(s, found), found.store)
                    return request.override(tool=tool), None
            if found is None:
                if not s.may_go_live():
                    raise s.diverged(f"tool call {name}({json.dumps(args, default=str)})",
                                     None, "no such call is left in the record")
                s.stats.ran_live(NOT_RECORDED)
                return request, None
            s.used.add(id(found))
            child = s.cassette.child_of(found.tool_call_id)
            if child is not None:  # a subagent: it runs, answered from its own record
                s.stats.subagent_calls += 1
                return request, Serving(s, run_id=child, parent_call=tcid)
            why = _unservable(request.tool, found.outcomes, found.writes, found.store)
            if why is not None or request.tool is None:
                s.stats.ran_live(why or LACKING)
                return request, None
            s.stats.tool_calls += 1
            s.stats.seconds += found.seconds
            return request.override(tool=_served_tool(request.tool, found.outcomes, tcid,
                                                      None, _updates(s, found),
                                                      found.store)), None

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
                       ) -> ToolMessage | Command[Any]:
        request, serving = self._tool_plan(request)
        token = SERVING.set(serving) if serving is not None else None
        try:
            return handler(request)
        finally:
            if token is not None:
                SERVING.reset(token)

    async def awrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        request, serving = self._tool_plan(request)
        token = SERVING.set(serving) if serving is not None else None
        try:
            return await handler(request)
        finally:
            if token is not None:
                SERVING.reset(token)


def persist(old: list[BaseMessage], new: list[BaseMessage]) -> Command[Any]:
    """A state update that makes the conversation ``new`` (was ``old``): replaced and
    removed messages by id, or the whole list again when one was inserted."""
    old_ids = [m.id for m in old]
    new_ids = [m.id for m in new]
    if all(i is not None for i in new_ids) and set(new_ids) <= set(old_ids) and [
            i for i in old_ids if i in set(new_ids)] == new_ids:
        keep = {m.id: m for m in new}
        update: list[Any] = [RemoveMessage(id=str(i)) for i in old_ids if i not in keep]
        update += [m for m, o in zip(new, [x for x in old if x.id in keep]) if m is not o]
        return Command(update={"messages": update})
    return Command(update={"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new]})
