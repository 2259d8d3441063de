"""``TraceMiddleware``: records every hook firing of a ``create_agent`` loop."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

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
from langgraph.prebuilt.tool_node import TOOL_INVOCATION_ERROR_TEMPLATE
from langgraph.types import Command

from .layers import FRAME, Frame, LayerProbe, settle, wraps_calls
from .recorder import (
    Recorder,
    ResponsePayload,
    RunState,
    begin_lap,
    note_request,
    user_metadata,
)
from .records import RunRecord
from .redact import Redactor
from .state_record import note_state, note_tool_end
from .store import on_event_loop
from .tool_life import signatures
from .watch import watch


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _TraceBase(AgentMiddleware):  # type: ignore[type-arg]
    """The recording machinery shared by ``TraceMiddleware`` and its lean twin."""

    def __init__(self, *, db: str | os.PathLike[str] = "looptrace.db", name: str | None = None,
                 run_name: str | None = None, lean: bool = False, redact: bool = True,
                 redact_patterns: Iterable[str] = ()) -> None:
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
        self._runs: dict[int, tuple[weakref.ref[Any], RunState]] = {}
        self._lock = threading.Lock()
        self._handler: Any = None
        self._layered = False  # probes inside the other layers (see ``around``)
        self._below: dict[str, str | None] = {}  # the first layer inside, per kind of call
        self._around: list[str] = []  # the names ``around`` put in order
        # (tells this middleware how each invocation ended: ``tracer.watch``)
        self._watcher = watch(self)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    # -- public helpers -----------------------------------------------------
    def callback_handler(self) -> Any:
        """A ``TraceCallbackHandler`` writing into the same runs as this middleware."""
        if self._handler is None:
            from .callbacks import TraceCallbackHandler

            self._handler = TraceCallbackHandler(recorder=self.recorder, middleware=self)
        return self._handler

    def attach(self, agent: Any) -> Any:
        """Return ``agent`` bound with the callback handler: hooks AND callbacks, one run.

        Use it for Deep Agents so subagent runs are recorded nested under the parent.
        The agent's middleware stack is read here, once (``tracer.agent_stack``), and
        written with the start of each of its runs.
        """
        handler = self.callback_handler()
        from .agent_stack import agent_stack

        handler.note_stack(agent, agent_stack(agent, self._around))
        return agent.with_config(callbacks=[handler])

    def around(self, *middleware: Any) -> list[Any]:
        """The middleware list for ``create_agent``: this tracer first (the outermost
        layer), then ``middleware``, with a probe just inside each one that wraps
        model or tool calls, so the record shows what each layer changed, one at a
        time: the request on the way in, every attempt (retries, fallbacks), errors
        and the response on the way out (``tracer.layers``). The probes add no graph
        node; they cost a comparison per layer per call (see the README's figures).

        Example:
            ```python
            agent = create_agent(model, tools, middleware=trace.around(
                PIIMiddleware("email"), ContextEditingMiddleware(), ModelFallbackMiddleware(m2)))
            ```
        """
        self._layered = True
        out: list[Any] = [self]
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

    def flush(self) -> None:
        """Block until everything recorded so far is committed."""
        self.recorder.writer.flush()

    def close(self) -> None:
        self.recorder.writer.close()

    # -- run identity -------------------------------------------------------
    def _run(self, runtime: Any, state: Any, *, starting: bool = False) -> RunState:
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

    def _known(self, runtime: Any) -> bool:
        """The invocation of ``runtime`` has its run already (no lookup needed)."""
        writer = getattr(runtime, "stream_writer", None)
        entry = self._runs.get(id(writer))
        return entry is not None and entry[0]() is writer

    async def _arun(self, runtime: Any) -> None:
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
            self.recorder.writer._warn("hook", f"looptrace failed finding the run: {exc!r}")

    def _new_or_resumed(self, runtime: Any, starting: bool) -> RunState:
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
        config = _config()
        # A callback handler on the same invocation created the run already.
        handler_run = self._handler_run(config)
        if handler_run is not None:
            handler_run.middleware = True
            self.recorder.defer_messages(handler_run)
            return handler_run
        run = self._open_run(runtime, starting, thread_id, config)
        run.watched = self._watcher.claim(config, self, run)
        return run

    def _open_run(self, runtime: Any, starting: bool, thread_id: Any,
                  config: dict[str, Any]) -> RunState:
        if not starting and thread_id:
            resume = _resume_payload(config)
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
        run = self.recorder.start_run(
            name=self.run_name or agent_name or "agent",
            thread_id=str(thread_id) if thread_id else None, source="middleware",
            agent_name=agent_name, metadata=user_metadata(meta),
        )
        run.middleware = True
        self.recorder.defer_messages(run)
        return run

    def _handler_run(self, config: dict[str, Any]) -> RunState | None:
        cbs = config.get("callbacks")
        parent = getattr(cbs, "parent_run_id", None)
        if parent is None:
            return None
        if self._handler is None:
            # Traced with no code change (``looptrace run``, ``LOOPTRACE_DB``): the run
            # the configure hook's handler started for this invocation, handed over.
            auto = sys.modules.get("tracer.autotrace")
            return auto.adopt(cbs, parent, self) if auto is not None else None
        return self.recorder.lc_runs.get(parent)

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
        """The graph run this middleware recorded into ended (``tracer.watch``): with
        ``error``, which surfaced first at graph node ``node``; ``pause``: an
        interrupt() paused a node."""
        try:
            if run.ended or run.lc_ids:
                return
            end_invocation(self.recorder, run, error, node, pause)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer._warn("end", f"looptrace failed ending a run: {exc!r}")

    # -- node hooks ---------------------------------------------------------
    def _node(self, hook: str, state: AgentState[Any], runtime: Runtime[Any]) -> None:
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
        except Exception as exc:  # noqa: BLE001 - the tracer must never break the agent
            self.recorder.writer._warn("hook", f"looptrace failed in {hook}: {exc!r}")

    # -- model calls --------------------------------------------------------
    def _model_enter(self, request: ModelRequest[Any]) -> tuple[RunState, float] | None:
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
                      payload=_RequestPayload(rec, run, request, state_msgs))
            note_state(rec, run, seq, request.state, by=run.last_node, runtime=request.runtime)
            return run, time.perf_counter()
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer._warn("model", f"looptrace failed in wrap_model_call: {exc!r}")
            return None

    def _model_exit(self, pre: tuple[RunState, float] | None, request: ModelRequest[Any],
                    response: ModelResponse[Any] | AIMessage) -> None:
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
            self.recorder.writer._warn("model", f"looptrace failed in wrap_model_call: {exc!r}")

    def _error(self, pre: tuple[Any, ...] | None, hook: str, exc: BaseException,
               tool_call_id: str | None = None,
               request: ToolCallRequest | None = None) -> None:
        if pre is None:
            return
        run, t0 = pre[0], pre[1]
        try:
            dur = (time.perf_counter() - t0) * 1000
            if isinstance(exc, GraphInterrupt):
                run.paused = True  # (recorded here: the end of the invocation need not)
                self.recorder.event(run, hook, "interrupt", middleware=self._name,
                                    duration_ms=dur, tool_call_id=tool_call_id,
                                    payload={"interrupts": _interrupts(exc)})
                return
            text = _error_text(exc)
            run.error_seen = text
            rec = self.recorder
            payload: dict[str, Any] = {"error": text, "type": type(exc).__name__}
            if request is not None:  # a tool call: why nothing turned it into a message
                payload.update(_tool_error_flags(request.tool))
            rec.event(run, hook, "error", middleware=self._name, duration_ms=dur,
                      tool_call_id=tool_call_id, payload=payload)
            # Most likely the invocation dies with it: say so now (a later lap undoes it).
            rec.writer.put(RunRecord(run.id, {"status": "error", "error": text,
                                          "ended_at": time.time()}))
            rec.writer.flush(wait=False)
        except Exception as inner:  # noqa: BLE001
            self.recorder.writer._warn(hook, f"looptrace failed recording an error: {inner!r}")

    def wrap_model_call(
            self, request: ModelRequest[Any],
            handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]) -> ModelResponse[Any]:
        pre = self._model_enter(request)
        framed = self._frame(pre, request, "wrap_model_call") if self._layered else None
        try:
            response = handler(request)
        except BaseException as exc:
            self._error(pre, "wrap_model_call", exc)
            raise
        finally:
            if framed is not None:
                FRAME.reset(framed[1])
        if framed is not None:
            self._settle(framed[0], "wrap_model_call", None, response)
        self._model_exit(pre, request, response)
        return response

    async def awrap_model_call(
            self, request: ModelRequest[Any],
            handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        if not self._known(request.runtime):
            await self._arun(request.runtime)
        pre = self._model_enter(request)
        framed = self._frame(pre, request, "wrap_model_call") if self._layered else None
        try:
            response = await handler(request)
        except BaseException as exc:
            self._error(pre, "wrap_model_call", exc)
            raise
        finally:
            if framed is not None:
                FRAME.reset(framed[1])
        if framed is not None:
            self._settle(framed[0], "wrap_model_call", None, response)
        self._model_exit(pre, request, response)
        return response

    # -- with probes in the other layers (``around``) ----------------------
    def _frame(self, pre: Any, request: ModelRequest[Any] | ToolCallRequest,
               hook: str) -> tuple[Frame, Any] | None:
        """The frame the first probe inside reads (the request as this layer passed it
        down), set in the call's context; with its token, to reset it after the call."""
        if pre is None:
            return None
        frame = Frame(pre[0], request, self._below.get(hook))
        return frame, FRAME.set(frame)

    def _settle(self, frame: Frame, hook: str, tcid: str | None,
                response: ModelResponse[Any] | ToolMessage | Command[Any]) -> None:
        try:
            settle(self.recorder, frame, hook, tcid, response)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer._warn("layer", f"looptrace failed in a probe: {exc!r}")

    # -- tool calls ---------------------------------------------------------
    def _tool_enter(self, request: ToolCallRequest) -> tuple[RunState, float, str] | None:
        try:
            call = request.tool_call
            run = self._run(request.runtime, request.state)
            task = _task_name()  # (the exit runs in the same thread or asyncio task)
            seq = self.recorder.event(
                run, "wrap_tool_call", "enter", middleware=self._name,
                tool_call_id=call.get("id"), task=task,
                payload={"name": call.get("name"), "args": call.get("args"),
                         "known_tool": request.tool is not None},
            )
            note_state(self.recorder, run, seq, request.state, by=run.last_node)
            return run, time.perf_counter(), task
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer._warn("tool", f"looptrace failed in wrap_tool_call: {exc!r}")
            return None

    def _tool_exit(self, pre: tuple[RunState, float, str] | None, request: ToolCallRequest,
                   result: ToolMessage | Command[Any]) -> None:
        if pre is None:
            return
        run, t0, task = pre
        try:
            dur = (time.perf_counter() - t0) * 1000
            tcid = request.tool_call.get("id")
            rec = self.recorder
            note_tool_end(run, tcid, result)
            if isinstance(result, ToolMessage):
                msgs: list[BaseMessage] = [result]
                payload: dict[str, Any] = {"status": result.status}
                if result.status == "error":  # (rare: which path made it an error message)
                    payload["error_path"] = _error_path(request.tool, result)
            elif isinstance(result, Command):
                update = result.update if isinstance(result.update, dict) else {}
                msgs = [m for m in update.get("messages", ()) if isinstance(m, BaseMessage)]
                payload = {"command": True, "goto": _jsonable_goto(result.goto),
                           "update_keys": sorted(update)}
            else:
                msgs = []
                payload = {"result_type": type(result).__name__}
            seq = rec.event(run, "wrap_tool_call", "exit", middleware=self._name,
                            duration_ms=dur, tool_call_id=tcid, task=task,
                            payload=payload)
            for m in msgs:
                rec.tool_result(run, seq, m)
        except Exception as exc:  # noqa: BLE001
            self.recorder.writer._warn("tool", f"looptrace failed in wrap_tool_call: {exc!r}")

    def wrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        pre = self._tool_enter(request)
        framed = self._frame(pre, request, "wrap_tool_call") if self._layered else None
        try:
            result = handler(request)
        except BaseException as exc:
            self._error(pre, "wrap_tool_call", exc, request.tool_call.get("id"), request)
            raise
        finally:
            if framed is not None:
                FRAME.reset(framed[1])
        if framed is not None:
            self._settle(framed[0], "wrap_tool_call", request.tool_call.get("id"), result)
        self._tool_exit(pre, request, result)
        return result

    async def awrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        if not self._known(request.runtime):
            await self._arun(request.runtime)
        pre = self._tool_enter(request)
        framed = self._frame(pre, request, "wrap_tool_call") if self._layered else None
        try:
            result = await handler(request)
        except BaseException as exc:
            self._error(pre, "wrap_tool_call", exc, request.tool_call.get("id"), request)
            raise
        finally:
            if framed is not None:
                FRAME.reset(framed[1])
        if framed is not None:
            self._settle(framed[0], "wrap_tool_call", request.tool_call.get("id"), result)
        self._tool_exit(pre, request, result)
        return result


class TraceMiddleware(_TraceBase):
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
            obj: Any = object.__new__(LeanTraceMiddleware)
            obj.__init__(*args, **kwargs)
            return obj
        return object.__new__(cls)

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self._node("before_agent", state, runtime)

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self._node("before_model", state, runtime)

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self._node("after_model", state, runtime)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self._node("after_agent", state, runtime)

    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        self._node("before_agent", state, runtime)

    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        if not self._known(runtime):
            await self._arun(runtime)
        self._node("before_model", state, runtime)

    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        if not self._known(runtime):
            await self._arun(runtime)
        self._node("after_model", state, runtime)

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        if not self._known(runtime):
            await self._arun(runtime)
        self._node("after_agent", state, runtime)


class LeanTraceMiddleware(_TraceBase):
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
    handler records it, then the run's own)."""
    if isinstance(error, GraphInterrupt):  # (a subgraph's pause comes up as an exception)
        pause, error = error, None
    if error is None:
        if pause is None and not run.paused:
            rec.end_run(run, "completed")
            return
        if pause is not None and not run.paused:
            items = pause.args[0] if pause.args else []
            rec.event(run, "interrupt", "fire", payload={"interrupts": _interrupts_of(items)})
        run.paused = False
        rec.end_run(run, "interrupted")
        return
    text = _error_text(error)
    payload: dict[str, Any] = {"error": text, "type": type(error).__name__}
    if node is not None:
        name = node[0]
        mw, hook = name.rsplit(".", 1) if "." in name else (None, "node")
        at = {"node": name, **payload} if hook == "node" else dict(payload)
        rec.event(run, hook, "error", middleware=mw, payload=at, ts=node[1])
        payload["node"] = name
    rec.event(run, "run", "error", payload=payload)
    rec.end_run(run, "error", text)


def _interrupts_of(items: Any) -> list[Any]:
    return [{"value": getattr(it, "value", it), "id": getattr(it, "id", None)}
            for it in (items if isinstance(items, (list, tuple)) else [items])]


def _error_handled(rec: Recorder, run: RunState) -> None:
    """An error passed through a wrap hook but the loop went on: the run is running again."""
    run.error_seen = None
    rec.writer.put(RunRecord(run.id, {"status": "running", "error": None, "ended_at": None}))


def _config() -> dict[str, Any]:
    """The invocation's config (empty outside a LangGraph run)."""
    try:
        return get_config()  # type: ignore[return-value]  # RunnableConfig: a TypedDict, a dict
    except Exception:  # noqa: BLE001 - e.g. called outside a runnable context
        return {}


def _resume_payload(config: dict[str, Any]) -> dict[str, Any] | None:
    try:
        pad = config["configurable"].get("__pregel_scratchpad")
        resume = list(getattr(pad, "resume", None) or [])
        return {"resume": resume} if resume else None
    except Exception:  # noqa: BLE001
        return None


def _interrupts(exc: GraphInterrupt) -> list[Any]:
    items = exc.args[0] if exc.args and isinstance(exc.args[0], (list, tuple)) else []
    return _interrupts_of(items)


# ToolNode's message for arguments that failed the tool's schema (``ToolInvocationError``).
_INVALID_ARGS = TOOL_INVOCATION_ERROR_TEMPLATE.split("{", 1)[0]


def _error_path(tool: Any, result: ToolMessage) -> str:
    """Which path made a tool call's result an error ToolMessage (``tracer.tool_life``)."""
    if tool is None:
        return "unknown_tool"
    if isinstance(result.content, str) and result.content.startswith(_INVALID_ARGS):
        return "validation"
    if getattr(tool, "handle_tool_error", None):
        return "handle_tool_error"
    if getattr(tool, "handle_validation_error", None):
        return "handle_validation_error"
    return "returned"


def _tool_error_flags(tool: Any) -> dict[str, Any]:
    """Whether the tool would have turned an exception into a message itself."""
    if tool is None:
        return {"known_tool": False}
    return {"handle_tool_error": bool(getattr(tool, "handle_tool_error", None))}


def _task_name() -> str:
    if asyncio._get_running_loop() is not None:  # (no exception when there is no loop)
        task = asyncio.current_task()
        if task is not None:
            return task.get_name()
    return threading.current_thread().name


def _jsonable_goto(goto: Any) -> Any:
    if isinstance(goto, (list, tuple)):
        return [str(g) for g in goto]
    return str(goto) if goto else None


_MODEL_NAMES: dict[int, tuple[Any, str, str | None]] = {}


def _model_names(run: RunState, model: Any) -> None:
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


class _RequestPayload:
    """The request as the model gets it, without repeating the history.

    Built on the writer thread (``__looptrace_json__``), off the agent's path: the
    hook keeps references only (and, when a middleware rewrote the messages, the
    keys and changed messages). The writer handles a run's records in order, so
    the system prompt and tool schemas are written when they differ from what
    it last wrote.
    """

    __slots__ = ("model", "n", "rewrite", "run", "settings", "system", "tool_choice", "tools")

    def __init__(self, rec: Recorder, run: RunState, request: Any, state_msgs: Any) -> None:
        msgs = request.messages
        self.run = run
        self.n = len(msgs)
        # A middleware rewrote the messages: which ones, decided now (``run.seen``
        # is the caller's); what the model finally got is compared with this list.
        same = msgs is state_msgs or (
            len(msgs) == len(state_msgs) and all(a is b for a, b in zip(msgs, state_msgs)))
        self.rewrite = None if same else rec.request_view(run, msgs)
        run.req_objs = state_msgs if same else list(msgs)
        self.system = request.system_prompt
        run.req_system = self.system
        self.tools = request.tools or []
        self.model = run.model
        self.tool_choice = request.tool_choice
        self.settings = request.model_settings

    def __looptrace_json__(self) -> dict[str, Any]:
        run = self.run
        payload: dict[str, Any] = {"messages": self.n}
        if self.rewrite is not None:
            payload.update(self.rewrite)
        tools = self.tools
        tools_key = hash(tuple(id(t) for t in tools))
        note_request(run, payload, system=self.system, tools=tools, tools_key=tools_key,
                     schemas=lambda: [_tool_schema(t) for t in tools])
        if "tools" in payload:  # (written with the schemas: once, or when the tools change)
            sigs = _signatures(tools_key, tools, payload["tools"])
            if sigs:
                payload["signatures"] = sigs
        if self.model:
            payload["model"] = self.model
        if self.tool_choice is not None:
            payload["tool_choice"] = self.tool_choice
        if self.settings:
            payload["model_settings"] = self.settings
        return payload


# id(tool) -> (a reference to the tool, its schema): tools live long, converting is slow.
_SCHEMAS: dict[int, tuple[Any, Any, dict[str, Any]]] = {}


# hash of the tools' ids -> (references to the tools, their schemas, their signatures):
# every run writes its tools once, and reading a signature (``inspect``) is slow.
_SIGNATURES: dict[int, tuple[list[Any], list[Any], dict[str, Any]]] = {}


def _signatures(key: int, tools: Sequence[Any], schemas: list[Any]) -> dict[str, Any]:
    """``tool_life.signatures`` of ``tools``, made once for the same tool objects with
    the same schema objects (``_tool_schema`` keeps those while a tool is unchanged)."""
    entry = _SIGNATURES.get(key)
    if (entry is not None and len(entry[0]) == len(tools) and len(entry[1]) == len(schemas)
            and all(r() is t for r, t in zip(entry[0], tools))
            and all(a is b for a, b in zip(entry[1], schemas))):
        return entry[2]
    sigs = signatures(tools, schemas)
    try:
        refs = [weakref.ref(t) for t in tools]
    except TypeError:  # a dict (a provider's built-in tool): not kept
        return sigs
    if len(_SIGNATURES) > 1024:
        _SIGNATURES.clear()
    _SIGNATURES[key] = (refs, list(schemas), sigs)
    return sigs


def _tool_schema(tool: Any) -> dict[str, Any]:
    entry = _SCHEMAS.get(id(tool))
    desc = getattr(tool, "description", None)
    if entry is not None and entry[0]() is tool and entry[1] == desc:
        return entry[2]
    from langchain_core.utils.function_calling import convert_to_openai_tool

    try:
        schema = convert_to_openai_tool(tool)
    except Exception:  # noqa: BLE001
        return {"name": getattr(tool, "name", repr(tool))}
    try:
        ref: Any = weakref.ref(tool)
    except TypeError:  # a dict or another value that cannot be weakly referenced
        return schema
    if len(_SCHEMAS) > 4096:
        _SCHEMAS.clear()
    _SCHEMAS[id(tool)] = (ref, desc, schema)
    return schema
