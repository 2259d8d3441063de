"""``TraceMiddleware``: records every hook firing of a ``create_agent`` loop.

This module is the hook adapter: it decides when to record and into which run;
what each event records is built by ``tracer.record.hook_payloads``.

The ``Any`` left here are of two kinds: LangChain's type parameters, named once
in the aliases under ``TYPE_CHECKING`` with their reason, and the constructor's
arguments, which ``__new__`` / ``LeanTraceMiddleware.__init__`` pass through.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    Runtime,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.types import Command

from tracer.db.writer import on_event_loop
from tracer.vocab.payloads import ErrorPayload
from tracer.vocab.records import RunRecord
from tracer.vocab.redact import Redactor

from .basestore import TOOL_CALL, watch_store
from .hook_payloads import (
    RequestPayload,
    error_payload,
    interrupt_items,
    interrupt_payload,
    resume_payload,
    tool_enter_payload,
    tool_exit_payload,
)
from .layers import FRAME, INNER, Frame, InnerProbe, LayerProbe, answered, settle, wraps_calls
from .processors import (
    AFTER,
    BEFORE,
    ERROR,
    FIRE,
    Down,
    HookProcessor,
    Site,
    Work,
    adrive,
    arm,
    drive,
    off_loop,
)
from .recorder import (
    Recorder,
    ResponsePayload,
    RunState,
    begin_lap,
    user_metadata,
)
from .state_keys import note_state, note_store_writes, note_tool_end
from .watch import watch

if TYPE_CHECKING:
    from contextvars import Token

    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable, RunnableConfig

    from .callbacks import TraceCallbackHandler

    _Middleware: TypeAlias = AgentMiddleware[Any, Any]  # (see below)
    _Agent: TypeAlias = Runnable[Any, Any]

# LangChain's type parameters stand for the user's own types (the agent's context,
# state schema and structured response): the tracer wraps any agent and reads none of
# them, so each is ``Any``, here and only here. (Defined at run time: LangGraph may
# resolve a node hook's annotations.)
_State: TypeAlias = AgentState[Any]
_Runtime: TypeAlias = Runtime[Any]
_Request: TypeAlias = ModelRequest[Any]
_Response: TypeAlias = ModelResponse[Any]
_ToolResult: TypeAlias = ToolMessage | Command[Any]

# What a wrap hook's enter returns, for its exit: the run, the start time (and for a
# tool call, the asyncio task or thread it ran in).
_Entered = tuple["RunState", float] | tuple["RunState", float, str]


class TraceBase(AgentMiddleware):
    """The recording machinery shared by ``TraceMiddleware`` and its lean twin."""

    def __init__(self, *, db: str | os.PathLike[str] = "looptrace.db", name: str | None = None,
                 run_name: str | None = None, lean: bool = False, redact: bool = True,
                 redact_patterns: Iterable[str] = (), debug: Any = None) -> None:
        super().__init__()
        if name is not None and not isinstance(name, str):
            msg = "name must be a string"
            raise TypeError(msg)
        self._name = name or "TraceMiddleware"
        self.run_name = run_name
        self.lean = bool(lean)
        patterns = tuple(redact_patterns)
        redactor = Redactor(extra_patterns=patterns, enabled=redact) if (
            patterns or not redact) else None
        self.recorder = Recorder(db, redactor=redactor)
        # id(the invocation's stream writer) -> (a reference to it, its run)
        self._runs: dict[int, tuple[Callable[[], object], RunState]] = {}
        self._lock = threading.Lock()
        self._handler: TraceCallbackHandler | None = None
        self._layered = False  # probes inside the other layers (see ``around``)
        self._below: dict[str, str | None] = {}  # the first layer inside, per kind of call
        self._around: list[str] = []  # the names ``around`` put in order
        self._inner: InnerProbe | None = None  # (``innermost``)
        # (tells this middleware how each invocation ended: ``tracer.record.watch``)
        self._watcher = watch(self)
        # (what else each hook firing is asked of: the debugger, when armed;
        # tracer.record.processors; it watches this agent's graph nodes too)
        self._processors: tuple[HookProcessor, ...] = arm(debug, db, self)

    @property
    def name(self) -> str:
        return self._name

    @property
    def processors(self) -> tuple[HookProcessor, ...]:
        """What each hook firing is asked of besides the record (the debugger, armed)."""
        return self._processors

    # -- public helpers -----------------------------------------------------
    def callback_handler(self) -> TraceCallbackHandler:
        """A ``TraceCallbackHandler`` writing into the same runs as this middleware.

        Returns:
            The handler (one per middleware, made on first use).
        """
        if self._handler is None:
            from .callbacks import TraceCallbackHandler

            self._handler = TraceCallbackHandler(recorder=self.recorder, middleware=self)
        return self._handler

    def attach(self, agent: _Agent) -> _Agent:
        """Return ``agent`` bound with the callback handler: hooks AND callbacks, one run.

        Use it for Deep Agents so subagent runs are recorded nested under the parent.
        The agent's middleware stack is read here, once (``tracer.record.agent_stack``), and
        written with the start of each of its runs.

        Args:
            agent: the compiled agent (``create_agent``, ``create_deep_agent``) or any
                LangGraph runnable.

        Returns:
            ``agent.with_config(callbacks=[handler])``.
        """
        handler = self.callback_handler()
        from .agent_stack import agent_stack

        handler.note_stack(agent, agent_stack(agent, self._around))
        return agent.with_config(callbacks=[handler])

    def around(self, *middleware: _Middleware) -> list[_Middleware]:
        """The middleware list for ``create_agent``: this tracer first (the outermost
        layer), then ``middleware``, with a probe just inside each one that wraps
        model or tool calls, so the record shows what each layer changed, one at a
        time: the request on the way in, every attempt (retries, fallbacks), errors
        and the response on the way out (``tracer.record.layers``). The probes add no graph
        node; they cost a comparison per layer per call (see the README's figures).

        Example:
            ```python
            agent = create_agent(model, tools, middleware=trace.around(
                PIIMiddleware("email"), ContextEditingMiddleware(), ModelFallbackMiddleware(m2)))
            ```

        Args:
            *middleware: the agent's other middleware, outermost first.

        Returns:
            The list to pass as ``create_agent(middleware=...)``.
        """
        self._layered = True
        out: list[_Middleware] = [self]
        probes: list[LayerProbe] = []
        for mw in middleware:
            out.append(mw)
            if wraps_calls(mw):
                probes.append(LayerProbe(self, mw))
                out.append(probes[-1])
        # Who is next inside each probe, for each kind of call (a short-circuit or a
        # recovery is told to the frame above the layer that did it).
        for hook, attr in (("wrap_model_call", "_models"), ("wrap_tool_call", "_tools")):
            nxt: str | None = None
            for p in reversed(probes):
                p.below[hook] = nxt
                if getattr(p, attr):
                    nxt = p.layer
            self._below[hook] = nxt
        self._around = [str(getattr(mw, "name", "")) for mw in out
                        if not isinstance(mw, LayerProbe)]
        return out

    def innermost(self) -> InnerProbe:
        """The probe to put last in the agent's middleware list (``looptrace debug`` does
        it for every agent): the debugger then pauses each model call as the model
        receives it, after every other middleware (a message a middleware dropped is
        not shown), not at this tracer's own layer.

        Returns:
            The probe (one per tracer).
        """
        if self._inner is None:
            self._inner = InnerProbe(self)
        return self._inner

    def flush(self) -> None:
        """Block until everything recorded so far is committed."""
        self.recorder.writer.flush()

    def close(self) -> None:
        self.recorder.writer.close()

    # -- run identity -------------------------------------------------------
    def _run(self, runtime: object, state: object, *, starting: bool = False) -> RunState:
        """The run of the invocation ``runtime`` belongs to (one per invoke)."""
        writer = getattr(runtime, "stream_writer", None)
        key = id(writer)
        entry = self._runs.get(key)
        if entry is not None and entry[0]() is writer and not (starting and entry[1].ended):
            return entry[1]
        with self._lock:
            entry = self._runs.get(key)
            if entry is not None and entry[0]() is writer and not (starting and entry[1].ended):
                return entry[1]
            run = self._new_or_resumed(runtime, starting)
            try:
                # (mypy cannot infer the type of a lambda with a default argument)
                ref = weakref.ref(writer, lambda _r, k=key: self._invocation_gone(k))  # type: ignore[misc]
            except TypeError:  # not weak-referenceable: keep it alive with the run
                ref = (lambda w=writer: w)  # type: ignore[assignment]
            self._runs[key] = (ref, run)
            run.owner = key
            return run

    def _known(self, runtime: object) -> bool:
        """The invocation of ``runtime`` has its run already (no lookup needed)."""
        writer = getattr(runtime, "stream_writer", None)
        entry = self._runs.get(id(writer))
        return entry is not None and entry[0]() is writer

    async def _arun(self, runtime: object) -> None:
        """On the event loop, before an async hook: when finding the run may read the
        file (a thread resumed after this process forgot its pause), do that in a
        worker thread, so that the hook itself then finds the run in memory."""
        try:
            if self._known(runtime):
                return
            thread_id = getattr(getattr(runtime, "execution_info", None), "thread_id", None)
            if thread_id and not self.recorder.remembers(str(thread_id)):
                await asyncio.to_thread(self._run, runtime, None)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer.warn("hook", f"looptrace failed finding the run: {exc!r}")

    def _new_or_resumed(self, runtime: object, starting: bool) -> RunState:
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
        config = _config()
        # A callback handler on the same invocation created the run already.
        # (a store in the runtime: its writes are recorded, tracer.record.basestore)
        watch_store(self, getattr(runtime, "store", None))
        handler_run = self._handler_run(config)
        if handler_run is not None:
            handler_run.middleware = True
            self.recorder.defer_messages(handler_run)
            return handler_run
        run = self._open_run(runtime, starting, thread_id, config)
        run.watched = self._watcher.claim(config, self, run)
        return run

    def _open_run(self, runtime: object, starting: bool, thread_id: object,
                  config: RunnableConfig) -> RunState:
        if not starting and thread_id:
            resume = resume_payload(config)
            # Not starting at before_agent means a resumed thread (lean mode has no
            # before_agent, so there only a resume value says so).
            live = resume is not None or not self.lean
            run = self.recorder.resume_run(str(thread_id), live=live,
                                           from_file=not on_event_loop())
            if run is not None:
                run.middleware = True
                self.recorder.defer_messages(run)
                self.recorder.event(run, "resume", "fire", payload=resume)
                return run
        meta = config.get("metadata") or {}
        agent_name = meta.get("lc_agent_name")
        # (one agent, one name however it is traced: the graph run's, as the callback
        # handler of ``attach`` and ``looptrace run`` name it; issue 47)
        run = self.recorder.start_run(
            name=self.run_name or agent_name or self._watcher.graph_name(config) or "agent",
            thread_id=str(thread_id) if thread_id else None, source="middleware",
            agent_name=agent_name, metadata=user_metadata(meta),
        )
        run.middleware = True
        self.recorder.defer_messages(run)
        return run

    def _handler_run(self, config: RunnableConfig) -> RunState | None:
        cbs = config.get("callbacks")
        parent = getattr(cbs, "parent_run_id", None)
        if parent is None:
            return None
        if self._handler is None:
            # Traced with no code change (``looptrace run``, ``LOOPTRACE_DB``): the run
            # the configure hook's handler started for this invocation, handed over.
            auto = sys.modules.get("tracer.record.autotrace")
            run = auto.adopt(cbs, parent, self) if auto is not None else None
        else:
            run = self.recorder.lc_runs.get(parent)
        # (attached, but the handler left this invocation to an outer one: a subagent
        # attached inside an attached agent, ``TraceCallbackHandler._recorded_elsewhere``)
        return run if run is not None else self._outer_handler_run(cbs, parent)

    def _outer_handler_run(self, cbs: Any, parent: Any) -> RunState | None:
        """A subagent's own TraceMiddleware (not attached) inside an attached agent: the
        run the outer agent's handler started for this invocation, nested under the
        parent's tool call, when both write to one file under one name (the handler
        then leaves this middleware's hook firings to it, as with ``attach``)."""
        from .callbacks import TraceCallbackHandler

        for h in getattr(cbs, "handlers", None) or ():
            if (isinstance(h, TraceCallbackHandler) and h is not self._handler and
                    h.recorder.writer is self.recorder.writer and h._mw_name == self._name):
                run = h.recorder.lc_runs.get(h._known(parent))
                if run is not None:
                    return run
        return None

    def _invocation_gone(self, key: int) -> None:
        """The invocation ended without ``after_agent``: interrupted, or an error."""
        entry = self._runs.pop(key, None)
        if entry is None:
            return
        run = entry[1]
        if run.ended or run.owner != key:  # finished, or resumed by a later invocation
            return
        if run.error_seen:
            self.recorder.end_run(run, "error", run.error_seen)
        elif run.answered and not run.paused:
            # lean mode has no after_agent: a final answer with no tool calls ends the run
            self.recorder.end_run(run, "completed")
        elif run.thread_id:
            self.recorder.end_run(run, "interrupted")
        else:
            self.recorder.end_run(run, "error", "the invocation ended without after_agent")

    def invocation_ended(self, run: RunState, error: BaseException | None,
                         node: tuple[str, float] | None,
                         pause: GraphInterrupt | None) -> None:
        """The graph run this middleware recorded into ended (``tracer.record.watch``): with
        ``error``, which surfaced first at graph node ``node``; ``pause``: an
        interrupt() paused a node."""
        try:
            if run.ended or run.lc_ids:
                return
            end_invocation(self.recorder, run, error, node, pause)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer.warn("end", f"looptrace failed ending a run: {exc!r}")

    # -- node hooks ---------------------------------------------------------
    def _node(self, hook: str, state: _State, runtime: _Runtime) -> RunState | None:
        try:
            run = self._run(runtime, state, starting=hook == "before_agent")
            if hook == "before_model":
                if run.error_seen:
                    _error_handled(self.recorder, run)
                begin_lap(run)
            rec = self.recorder
            msgs = state.get("messages") if isinstance(state, dict) else None
            # (the messages first: a change made before this hook fired is its own
            # step, before this one)
            seq = rec.sync_messages(run, run.seq.__next__, msgs, by=run.last_node) if (
                msgs is not None) else None
            seq = rec.event(run, hook, "fire", middleware=self._name, seq=seq)
            note_state(rec, run, seq, state, by=run.last_node, runtime=runtime)
            if hook == "after_agent" and not run.lc_ids and not run.watched:
                # (with the callback handler attached, or the watcher, the run ends
                # when the graph returns, after the outer middlewares' after_agent hooks)
                rec.end_run(run, "completed")
            return run
        except Exception as exc:  # noqa: BLE001 - the tracer must never break the agent
            self.recorder.writer.warn("hook", f"looptrace failed in {hook}: {exc!r}")
            return None

    def _fire(self, hook: str, state: _State, runtime: _Runtime) -> RunState | None:
        """A node hook: recorded, then asked of the processors (sync: their work runs
        here)."""
        run = self._node(hook, state, runtime)
        if run is not None and self._processors:
            for p in self._processors:
                work = p.visit(Site(self.recorder, self._name, run, hook, FIRE, state=state))
                if work is not None:
                    work()
        return run

    async def _afire(self, hook: str, state: _State, runtime: _Runtime) -> None:
        """A node hook of an async agent: the processors' work runs in a worker thread."""
        if hook != "before_agent" and not self._known(runtime):
            await self._arun(runtime)
        run = self._node(hook, state, runtime)
        if run is not None and self._processors:
            for p in self._processors:
                work = p.visit(Site(self.recorder, self._name, run, hook, FIRE, state=state))
                if work is not None:
                    await off_loop(work)

    # -- model calls --------------------------------------------------------
    def _model_enter(self, request: _Request) -> tuple[RunState, float] | None:
        try:
            run = self._run(request.runtime, request.state)
            if run.error_seen:
                _error_handled(self.recorder, run)
            if not run.lap_open:  # (begin_lap, inlined: this is the hot path)
                run.lap_open = True
                run.lap += 1
            if run.model is None:
                _model_names(run, request.model)
            rec = self.recorder
            state_msgs = request.state.get("messages") or ()
            # (the messages first, so that the request payload, built on the writer
            # thread, knows which of them the run has recorded)
            seq = rec.sync_messages(run, run.seq.__next__, state_msgs, by=run.last_node)
            rec.event(run, "wrap_model_call", "enter", middleware=self._name, seq=seq,
                      payload=RequestPayload(rec, run, request, state_msgs))
            note_state(rec, run, seq, request.state, by=run.last_node, runtime=request.runtime)
            return run, time.perf_counter()
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer.warn("model", f"looptrace failed in wrap_model_call: {exc!r}")
            return None

    def _model_exit(self, pre: tuple[RunState, float] | None, request: _Request,
                    response: _Response | AIMessage) -> None:
        if pre is None:
            return
        run, t0 = pre
        try:
            dur = (time.perf_counter() - t0) * 1000
            run.lap_open = False  # (end_lap)
            result = getattr(response, "result", None)
            msgs: list[BaseMessage] = list(result) if result is not None else (
                [response] if isinstance(response, BaseMessage) else [])
            for m in msgs:
                if isinstance(m, AIMessage):
                    run.answered = not m.tool_calls
                    run.error_seen = None
            rec = self.recorder
            seq = rec.event(run, "wrap_model_call", "exit", middleware=self._name,
                            duration_ms=dur, payload=ResponsePayload(run, msgs))
            pos = len(request.state.get("messages") or ())
            for i, m in enumerate(msgs):
                rec.message(run, seq, pos + i, m)
            rec.update_totals(run)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer.warn("model", f"looptrace failed in wrap_model_call: {exc!r}")

    def _error(self, pre: _Entered | None, hook: str, exc: BaseException,
               tool_call_id: str | None = None,
               request: ToolCallRequest | None = None) -> None:
        if pre is None:
            return
        run, t0 = pre[0], pre[1]
        try:
            dur = (time.perf_counter() - t0) * 1000
            if isinstance(exc, GraphInterrupt):
                run.paused = True  # (recorded here: the end of the invocation need not)
                seq = self.recorder.event(run, hook, "interrupt", middleware=self._name,
                                          duration_ms=dur, tool_call_id=tool_call_id,
                                          payload=interrupt_payload(exc))
                if tool_call_id and run.state is not None and run.state.store:
                    note_store_writes(self.recorder, run, seq, tool_call_id)
                return
            # (a tool call: the payload says why nothing turned it into a message)
            payload = error_payload(exc, False if request is None else request.tool)
            text = payload["error"]
            run.error_seen = text
            rec = self.recorder
            seq = rec.event(run, hook, "error", middleware=self._name, duration_ms=dur,
                            tool_call_id=tool_call_id, payload=payload)
            if tool_call_id and run.state is not None and run.state.store:
                # (what the failed call wrote before it raised: at its error)
                note_store_writes(rec, run, seq, tool_call_id)
            # Most likely the invocation dies with it: say so now (a later lap undoes it).
            rec.writer.put(RunRecord(run.id, {"status": "error", "error": text,
                                          "ended_at": time.time()}))
            rec.writer.flush(wait=False)
        except Exception as inner:  # noqa: BLE001
            self.recorder.writer.warn(hook, f"looptrace failed recording an error: {inner!r}")

    def _call(self, hook: str, request: _Request | ToolCallRequest,
              pre: _Entered | None) -> Generator[Down | Work, object, object]:
        """One model or tool call through this layer, for both forms: recorded (``pre``:
        what its enter returned), framed for the probes inside (``around``), asked of
        the processors (before it goes down, after it came back, where it raised). A
        generator: it yields what to run, ``Down(request)`` (the handler) or a
        processor's ``Work``, and is sent what that returned (or thrown what it
        raised); ``drive`` runs it in a sync hook, ``adrive`` in an async one."""
        tool = hook == "wrap_tool_call"
        tcid: str | None = request.tool_call.get("id") if isinstance(
            request, ToolCallRequest) else None
        procs = self._processors if pre is not None else ()
        run = pre[0] if pre is not None else None
        framed = None
        # (a write to the LangGraph store inside the call is the call's: tracer.record.basestore)
        stored = TOOL_CALL.set(tcid) if tool and (
            getattr(request.runtime, "store", None) is not None) else None
        inner = None
        try:
            given: object = None
            # (with an innermost probe, a model call is asked of the processors there: as
            # the model receives it)
            asked_inside = self._inner is not None and not tool and run is not None
            for p in procs if not asked_inside else ():
                work = p.visit(Site(self.recorder, self._name, run, hook, BEFORE,  # type: ignore[arg-type]
                                    request=request))
                if work is not None:
                    request, given = yield work  # type: ignore[misc]
            framed = self._frame(pre, request, hook) if self._layered else None
            inner = INNER.set(run) if asked_inside else None
            result = answered(given, hook) if given is not None else (yield Down(request))
        except Exception as exc:
            self._error(pre, hook, exc, tcid, request if tool else None)  # type: ignore[arg-type]
            alt: object = None
            for p in procs:
                work = p.visit(Site(self.recorder, self._name, run, hook, ERROR,  # type: ignore[arg-type]
                                    request=request, error=exc))
                if work is not None:
                    alt = yield work
                    if alt is not None:
                        break
            if alt is None:
                raise
            result = answered(alt, hook)
        except BaseException as exc:
            self._error(pre, hook, exc, tcid, request if tool else None)  # type: ignore[arg-type]
            raise
        finally:
            if framed is not None:
                FRAME.reset(framed[1])
            if stored is not None:
                TOOL_CALL.reset(stored)
            if inner is not None:
                INNER.reset(inner)
        if framed is not None:
            self._settle(framed[0], hook, tcid, result)  # type: ignore[arg-type]
        for p in procs:
            work = p.visit(Site(self.recorder, self._name, run, hook, AFTER,  # type: ignore[arg-type]
                                request=request, result=result))
            if work is not None:
                result = yield work
        if tool:
            self._tool_exit(pre, request, result)  # type: ignore[arg-type]
        else:
            self._model_exit(pre, request, result)  # type: ignore[arg-type]
        return result

    def wrap_model_call(
            self, request: _Request,
            handler: Callable[[_Request], _Response]) -> _Response:
        pre = self._model_enter(request)
        return drive(self._call("wrap_model_call", request, pre), handler)  # type: ignore[arg-type, return-value]

    async def awrap_model_call(
            self, request: _Request,
            handler: Callable[[_Request], Awaitable[_Response]],
    ) -> _Response:
        if not self._known(request.runtime):
            await self._arun(request.runtime)
        pre = self._model_enter(request)
        return await adrive(self._call("wrap_model_call", request, pre), handler)  # type: ignore[arg-type, return-value]

    # -- with probes in the other layers (``around``) ----------------------
    def _frame(self, pre: _Entered | None, request: _Request | ToolCallRequest,
               hook: str) -> tuple[Frame, Token[Frame | None]] | None:
        """The frame the first probe inside reads (the request as this layer passed it
        down), set in the call's context; with its token, to reset it after the call."""
        if pre is None:
            return None
        frame = Frame(pre[0], request, self._below.get(hook))
        return frame, FRAME.set(frame)

    def _settle(self, frame: Frame, hook: str, tcid: str | None,
                response: _Response | _ToolResult) -> None:
        try:
            settle(self.recorder, frame, hook, tcid, response)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer.warn("layer", f"looptrace failed in a probe: {exc!r}")

    # -- tool calls ---------------------------------------------------------
    def _tool_enter(self, request: ToolCallRequest) -> tuple[RunState, float, str] | None:
        try:
            run = self._run(request.runtime, request.state)
            task = _task_name()  # (the exit runs in the same thread or asyncio task)
            seq = self.recorder.event(
                run, "wrap_tool_call", "enter", middleware=self._name,
                tool_call_id=request.tool_call.get("id"), task=task,
                payload=tool_enter_payload(request),
            )
            note_state(self.recorder, run, seq, request.state, by=run.last_node)
            return run, time.perf_counter(), task
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer.warn("tool", f"looptrace failed in wrap_tool_call: {exc!r}")
            return None

    def _tool_exit(self, pre: tuple[RunState, float, str] | None, request: ToolCallRequest,
                   result: _ToolResult) -> None:
        if pre is None:
            return
        run, t0, task = pre
        try:
            dur = (time.perf_counter() - t0) * 1000
            tcid = request.tool_call.get("id")
            rec = self.recorder
            note_tool_end(run, tcid, result)
            payload, msgs = tool_exit_payload(request.tool, result)
            seq = rec.event(run, "wrap_tool_call", "exit", middleware=self._name,
                            duration_ms=dur, tool_call_id=tcid, task=task,
                            payload=payload)
            if run.state is not None and run.state.store:
                note_store_writes(rec, run, seq, tcid)
            for m in msgs:
                rec.tool_result(run, seq, m)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer.warn("tool", f"looptrace failed in wrap_tool_call: {exc!r}")

    def wrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], _ToolResult],
    ) -> _ToolResult:
        pre = self._tool_enter(request)
        return drive(self._call("wrap_tool_call", request, pre), handler)  # type: ignore[arg-type, return-value]

    async def awrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], Awaitable[_ToolResult]],
    ) -> _ToolResult:
        if not self._known(request.runtime):
            await self._arun(request.runtime)
        pre = self._tool_enter(request)
        return await adrive(self._call("wrap_tool_call", request, pre), handler)  # type: ignore[arg-type, return-value]

class TraceMiddleware(TraceBase):
    """Record every hook of an agent loop, and every message, to a SQLite file.

    It observes and never changes what the agent does: every hook returns
    ``None`` or the handler's own result, and every exception propagates
    unchanged (``GraphInterrupt`` included). A failure of the tracer itself is
    contained: it warns once and the agent goes on.

    Example:
        ```python
        from langchain.agents import create_agent
        from tracer import TraceMiddleware

        trace = TraceMiddleware(db="looptrace.db")
        agent = create_agent(model, tools=[get_weather], middleware=[trace])
        agent = trace.attach(agent)  # also record what only callbacks see
        agent.invoke({"messages": [("user", "What's the weather in Oslo?")]})
        ```

    Args:
        db: path of the SQLite file (created if missing).
        name: middleware name; override it to use two instances in one stack.
        run_name: the name given to recorded runs (defaults to the agent's name).
        lean: record through the wrap hooks (and callbacks) only: the four node
            hooks are not installed, so the graph has no extra nodes. Runs,
            model calls, tool calls and every message are still recorded.
        redact: redact secrets before anything is written (on by default).
        redact_patterns: extra regular expressions whose matches are redacted.
    """

    def __new__(cls, *args: Any, lean: bool = False, **kwargs: Any) -> Any:
        if lean and cls is TraceMiddleware:
            obj: Any = object.__new__(LeanTraceMiddleware)  # (not a TraceMiddleware: Any)
            obj.__init__(*args, **kwargs)
            return obj
        return object.__new__(cls)

    def before_agent(self, state: _State, runtime: _Runtime) -> None:
        self._fire("before_agent", state, runtime)

    def before_model(self, state: _State, runtime: _Runtime) -> None:
        self._fire("before_model", state, runtime)

    def after_model(self, state: _State, runtime: _Runtime) -> None:
        self._fire("after_model", state, runtime)

    def after_agent(self, state: _State, runtime: _Runtime) -> None:
        self._fire("after_agent", state, runtime)

    async def abefore_agent(self, state: _State, runtime: _Runtime) -> None:
        await self._afire("before_agent", state, runtime)

    async def abefore_model(self, state: _State, runtime: _Runtime) -> None:
        await self._afire("before_model", state, runtime)

    async def aafter_model(self, state: _State, runtime: _Runtime) -> None:
        await self._afire("after_model", state, runtime)

    async def aafter_agent(self, state: _State, runtime: _Runtime) -> None:
        await self._afire("after_agent", state, runtime)


class LeanTraceMiddleware(TraceBase):
    """``TraceMiddleware(lean=True)``: wrap hooks only, no extra graph nodes."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["lean"] = True
        super().__init__(**kwargs)


# -- helpers -----------------------------------------------------------------
def end_invocation(rec: Recorder, run: RunState, error: BaseException | None,
                   node: tuple[str, float] | None, pause: GraphInterrupt | None) -> None:
    """End ``run`` as its invocation ended: completed, paused by an interrupt (the
    interrupt recorded unless the tracer's own wrap hook did), or failed (an
    ``error`` event at the node where the exception surfaced, as the callback
    handler records it, then the run's own).

    Args:
        rec: the recorder.
        run: the run to end.
        error: the exception the invocation ended with, if any.
        node: the graph node it surfaced at first, and when.
        pause: the interrupt that paused it, if any.
    """
    if isinstance(error, GraphInterrupt):  # (a subgraph's pause comes up as an exception)
        pause, error = error, None
    if error is not None and rec.end_not_failed(run, error):  # a handoff, a stopped stream
        return
    if error is None:
        if pause is None and not run.paused:
            rec.end_run(run, "completed")
            return
        if pause is not None and not run.paused:
            items = pause.args[0] if pause.args else []
            rec.event(run, "interrupt", "fire", payload={"interrupts": interrupt_items(items)})
        run.paused = False
        rec.end_run(run, "interrupted")
        return
    payload = error_payload(error)
    text = payload["error"]
    if node is not None:
        name = node[0]
        mw, hook = name.rsplit(".", 1) if "." in name else (None, "node")
        at: ErrorPayload = {"node": name, **payload} if hook == "node" else payload.copy()
        rec.event(run, hook, "error", middleware=mw, payload=at, ts=node[1])
        payload["node"] = name
    rec.event(run, "run", "error", payload=payload)
    rec.end_run(run, "error", text)


def _error_handled(rec: Recorder, run: RunState) -> None:
    """An error passed through a wrap hook but the loop went on: the run is running again."""
    run.error_seen = None
    rec.writer.put(RunRecord(run.id, {"status": "running", "error": None, "ended_at": None}))


def _config() -> RunnableConfig:
    """The invocation's config (empty outside a LangGraph run)."""
    try:
        return get_config()
    except Exception:  # noqa: BLE001 - e.g. called outside a runnable context
        return {}


def _task_name() -> str:
    if asyncio._get_running_loop() is not None:  # (no exception when there is no loop)
        task = asyncio.current_task()
        if task is not None:
            return task.get_name()
    return threading.current_thread().name


# id(model) -> (a reference to it, its name, its provider): asked once per model object.
_MODEL_NAMES: dict[int, tuple[weakref.ref[BaseChatModel], str, str | None]] = {}


def _model_names(run: RunState, model: BaseChatModel) -> None:
    entry = _MODEL_NAMES.get(id(model))
    if entry is not None and entry[0]() is model:
        run.model, run.provider = entry[1], entry[2]
        return
    try:
        params = model._get_ls_params()
        run.model = params.get("ls_model_name") or type(model).__name__
        run.provider = params.get("ls_provider")
    except Exception:  # noqa: BLE001
        run.model = getattr(model, "model_name", None) or getattr(model, "model", None) or type(
            model).__name__
    try:
        if len(_MODEL_NAMES) > 1024:
            _MODEL_NAMES.clear()
        _MODEL_NAMES[id(model)] = (weakref.ref(model), str(run.model), run.provider)
    except TypeError:
        pass
