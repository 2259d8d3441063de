"""``TraceCallbackHandler``: what middleware cannot see, and loops without middleware.

It records a hand-rolled ``llm.bind_tools(...)`` loop (model calls with the
exact messages and tool schemas sent, each tool call and its result), a plain
LangGraph graph (one event per node), the node hooks of every other middleware
in a stack (graph nodes named ``<Middleware>.<hook>``), interrupts, and Deep
Agents subagents, whose runs are nested under the parent's ``task`` call.
"""

from __future__ import annotations

import atexit
import json
import os
import time
import weakref
from collections.abc import Container
from typing import Any, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.types import Command

from tracer.db.serialize import message_json, message_key
from tracer.db.writer import on_event_loop
from tracer.vocab.payloads import ModelEnterPayload
from tracer.vocab.redact import Redactor

from .recorder import (
    Recorder,
    ResponsePayload,
    RunState,
    begin_lap,
    end_lap,
    note_request,
    user_metadata,
)
from .state_keys import note_state, note_tool_end

# what ``create_agent`` puts in its graph's metadata (``ls_integration``)
CREATE_AGENT = "langchain_create_agent"
_SKIP_NODES = frozenset({"model", "tools", "__start__", "__end__"})
# handlers that started a run of root-less calls: ended at exit (``end_loose_at_exit``)
_LOOSE: weakref.WeakSet[TraceCallbackHandler] = weakref.WeakSet()
# every handler alive: a subagent's own handler looks here for an outer one that records
# its runs already (``_recorded_elsewhere``)
_HANDLERS: weakref.WeakSet[TraceCallbackHandler] = weakref.WeakSet()


def _at_exit() -> None:
    """Registered after ``tracer.record.recorder``'s exit hook, so it runs before it
    (``atexit`` runs in reverse order), and before the writers' exit flush."""
    for handler in list(_LOOSE):
        try:
            handler.end_loose_at_exit()
        except Exception:  # noqa: BLE001, S110 - never fail the interpreter's exit
            pass


atexit.register(_at_exit)
_Entry = TypeVar("_Entry")  # what a model or tool call's start keeps until its end


class TraceCallbackHandler(BaseCallbackHandler):
    """Record agent runs from LangChain callbacks into a looptrace database.

    Example:
        ```python
        from tracer import TraceCallbackHandler

        handler = TraceCallbackHandler(db="looptrace.db")
        graph.invoke(inputs, config={"callbacks": [handler]})
        ```

    For a hand-rolled loop, wrap it in a ``@chain`` runnable (or pass
    ``config={"run_name": ...}``) so that its model and tool calls share one run;
    model and tool calls that arrive with no parent at all are gathered into one
    run per handler, ended by ``close()``.
    """

    run_inline = True  # keep events in order under ainvoke as well
    raise_error = False

    def __init__(self, *, db: str | os.PathLike[str] = "looptrace.db",
                 recorder: Recorder | None = None, middleware: Any = None,
                 redact: bool = True) -> None:
        super().__init__()
        self.recorder = recorder or Recorder(
            db, redactor=None if redact else Redactor(enabled=False))
        self._mw_name = getattr(middleware, "name", None)
        self._run_name = getattr(middleware, "run_name", None)  # TraceMiddleware(run_name=)
        self._nodes: dict[UUID, tuple[RunState, str, float]] = {}
        # a model a node hook calls (a summariser's, in before_model): started ones, and
        # the finished ones by the node they were made in, kept on the node's event
        self._inner: dict[UUID, tuple[RunState, str, list[BaseMessage], Any]] = {}
        self._node_calls: dict[UUID, list[dict[str, Any]]] = {}
        self._roots: dict[UUID, RunState] = {}
        self._tools: dict[UUID, tuple[RunState, float, str | None, str]] = {}
        self._llm: dict[UUID, tuple[RunState, float, int]] = {}
        self._loose: RunState | None = None
        self._omitted: dict[str, frozenset[str]] = {}  # run id -> recorded keys not sent
        # run id -> the calls the latest reply asked for, not yet seen to start
        self._asked: dict[str, list[tuple[str, Any, Any]]] = {}
        # graph name -> its middleware stack (``TraceMiddleware.attach``), and the latest
        self._stacks: dict[str, list[dict[str, Any]]] = {}
        self._stack: list[dict[str, Any]] | None = None
        # callback runs an outer handler records (a subagent attached inside an attached
        # agent), and everything started under them: not recorded here again
        self._elsewhere: set[UUID] = set()
        _HANDLERS.add(self)

    def note_stack(self, agent: Any, stack: list[dict[str, Any]]) -> None:
        """Remember ``agent``'s middleware stack (``tracer.record.agent_stack``), to be written
        with the start of each of its runs (``payload["stack"]`` of ``("run", "start")``)."""
        if not stack:
            return
        graph = agent
        while not hasattr(graph, "builder") and hasattr(graph, "bound"):
            graph = graph.bound
        self._stacks[str(getattr(graph, "name", None) or "")] = stack
        self._stack = stack

    # -- housekeeping -------------------------------------------------------
    def flush(self) -> None:
        self.recorder.writer.flush()

    def close(self) -> None:
        """End the run of root-less calls, if any, and commit everything."""
        if self._loose is not None and not self._loose.ended:
            self.recorder.end_run(self._loose, "completed")
        self.recorder.writer.flush()

    def _guard(self, where: str, exc: Exception) -> None:
        self.recorder.writer.warn("cb:" + where, f"looptrace callback {where} failed: {exc!r}")

    def _ended(self, started: dict[UUID, _Entry], run_id: UUID) -> _Entry | None:
        """The entry the start of model or tool call ``run_id`` left in ``started``
        (``_llm``, ``_tools``), taken out together with the call's link to its run
        (``lc_runs``); None for a call this handler did not see start."""
        self._elsewhere.discard(run_id)
        self.recorder.lc_runs.pop(run_id, None)
        return started.pop(run_id, None)

    def _known(self, parent_run_id: UUID | None) -> UUID | None:
        """``parent_run_id``, or when this handler never saw that run start, the
        nearest ancestor it did see. With LangSmith tracing on, LangChain wraps each
        middleware's ``wrap_model_call`` / ``wrap_tool_call`` in a LangSmith
        ``traceable`` span that is not a callback run, and makes it the parent of the
        model or tool call made inside: the span's ancestry (its ``dotted_order``)
        names the node it runs in. Without that, the call would look root-less."""
        if parent_run_id is None or parent_run_id in self.recorder.lc_runs:
            return parent_run_id
        return _traced_ancestor(parent_run_id, self.recorder.lc_runs) or parent_run_id

    def _recorded_elsewhere(self, parent_run_id: UUID) -> bool:
        """A graph starting under ``parent_run_id``, a call this handler never saw, is
        recorded by another handler into the same file under the same tracer's name:
        a subagent attached to its own tracer, inside an agent attached to another
        (a ``TraceMiddleware`` in every ``create_agent`` call, each agent attached).
        That handler nests the subagent's run under its tool call, and this one's
        middleware writes into that run (``TraceMiddleware._outer_handler_run``);
        recording it here too made a second, top-level run (issue 47)."""
        return any(h is not self and h.recorder.writer is self.recorder.writer
                   and h._mw_name == self._mw_name
                   and h._known(parent_run_id) in h.recorder.lc_runs
                   for h in list(_HANDLERS))

    def _skipped(self, run_id: UUID, parent_run_id: UUID | None) -> bool:
        """A call or graph under one an outer handler records: noted, not recorded."""
        if parent_run_id is None or not self._elsewhere:
            return False
        if parent_run_id in self._elsewhere or (
                parent_run_id not in self.recorder.lc_runs
                and _traced_ancestor(parent_run_id, self._elsewhere) is not None):
            # (with LangSmith on, a call's parent may be a span inside the subagent)
            self._elsewhere.add(run_id)
            return True
        return False

    def _run_of(self, parent_run_id: UUID | None) -> RunState:
        run = self.recorder.lc_runs.get(parent_run_id) if parent_run_id else None
        if run is not None:
            return run
        if self._loose is None or self._loose.ended:
            self._loose = self.recorder.start_run(name="loop", source="callbacks")
            _LOOSE.add(self)
        return self._loose

    def end_loose_at_exit(self) -> None:
        """At interpreter exit: the run of root-less calls (a hand-rolled loop with no
        ``@chain`` parent) has no end of its own, and a process that exits normally
        ends it ``completed``, as ``looptrace run`` does, when every call of it has
        answered. One with a call still open is left to the recorder's own exit hook
        (``error``: the process exited while it was still running)."""
        run = self._loose
        if run is None or run.ended:
            return
        open_calls = [e for e in (*self._llm.values(), *self._tools.values()) if e[0] is run]
        if not open_calls:
            self.recorder.end_run(run, "completed")

    # -- chains: graphs and their nodes ---------------------------------------
    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, tags: list[str] | None = None,
                       metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        try:
            if self._skipped(run_id, parent_run_id):
                return
            name = kwargs.get("name") or (serialized or {}).get("name") or "chain"
            meta = metadata or {}
            rec = self.recorder
            parent_run_id = self._known(parent_run_id)
            parent = rec.lc_runs.get(parent_run_id) if parent_run_id else None
            tool = self._tools.get(parent_run_id) if parent_run_id else None
            if (parent_run_id is not None and parent is None
                    and self._recorded_elsewhere(parent_run_id)):
                self._elsewhere.add(run_id)
                return
            if parent_run_id is None or tool is not None or parent is None:
                # A root run, or a graph started inside a tool call (a subagent).
                thread_id = meta.get("thread_id")
                run = None
                if (parent_run_id is None and thread_id and isinstance(inputs, Command)
                        and inputs.resume is not None):
                    # (on an event loop only a pause this process remembers is found:
                    # reading the file there would block)
                    run = rec.resume_run(str(thread_id), from_file=not on_event_loop())
                    if run is not None:
                        rec.event(run, "resume", "fire", payload={"resume": inputs.resume})
                if run is None and tool is not None and tool[2]:
                    run = rec.resume_child(tool[0], tool[2])  # a paused subagent goes on
                    if run is not None:
                        rec.event(run, "resume", "fire")
                if run is None:
                    prun = tool[0] if tool else None
                    agent = meta.get("lc_agent_name")
                    run = rec.start_run(
                        name=agent if (prun and agent) else (
                            self._run_name if prun is None and self._run_name else name),
                        thread_id=str(thread_id) if thread_id and prun is None else None,
                        parent=prun, parent_tool_call_id=tool[2] if tool else None,
                        source="callbacks", agent_name=agent,
                        metadata=user_metadata(meta) if prun is None else None,
                    )
                    payload: dict[str, Any] = {"name": name}
                    if meta.get("ls_integration") == CREATE_AGENT:  # (not a loop of its own)
                        payload["graph"] = "create_agent"
                    if prun is None and self._stack is not None:  # the attached agent's own
                        payload["stack"] = self._stacks.get(str(name), self._stack)
                    rec.event(run, "run", "start", payload=payload)
                run.lc_ids.add(run_id)
                rec.lc_runs[run_id] = run
                self._roots[run_id] = run
                return
            rec.lc_runs[run_id] = parent
            node = meta.get("langgraph_node")
            if node == name and parent_run_id in self._roots:
                self._nodes[run_id] = (parent, name, time.perf_counter())
                # A node's input is the state as it is now: what the nodes before it
                # changed is recorded at the step of the node that made the change.
                msgs = inputs.get("messages") if isinstance(inputs, dict) else None
                if isinstance(msgs, list) and parent.last_seq >= 0:
                    rec.sync_messages(parent, parent.last_seq, _no_system(msgs),
                                      by=parent.last_node)
                    note_state(rec, parent, parent.last_seq, inputs, by=parent.last_node)
        except Exception as exc:  # noqa: BLE001
            self._guard("on_chain_start", exc)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            if self._elsewhere and run_id in self._elsewhere:
                self._elsewhere.discard(run_id)
                return
            rec = self.recorder
            root = self._roots.pop(run_id, None)
            if root is not None:
                rec.lc_runs.pop(run_id, None)
                if root.paused or (isinstance(outputs, dict) and outputs.get("__interrupt__")):
                    root.paused = False
                    if isinstance(outputs, dict) and outputs.get("__interrupt__"):
                        rec.event(root, "interrupt", "fire", payload={
                            "interrupts": _interrupt_values(outputs["__interrupt__"])})
                    rec.end_run(root, "interrupted")
                elif not root.ended:
                    # The final state, after the last node (the outermost after_agent).
                    # (``invoke``'s output leaves out the private keys, such as a call
                    # limit's counters: they are still in the state, not gone.)
                    if isinstance(outputs, dict) and isinstance(outputs.get("messages"), list):
                        rec.sync_messages(root, root.last_seq, _no_system(outputs["messages"]),
                                          by=root.last_node)
                        note_state(rec, root, root.last_seq, outputs, by=root.last_node,
                                   whole=False)
                    elif _continues(root, outputs):  # a hand-rolled loop returning its list
                        rec.sync_messages(root, root.last_seq, _no_system(outputs))
                    rec.end_run(root, "completed")
                return
            rec.lc_runs.pop(run_id, None)
            node = self._nodes.pop(run_id, None)
            if node is not None:
                self._node_event(node, outputs, None, self._node_calls.pop(run_id, None))
        except Exception as exc:  # noqa: BLE001
            self._guard("on_chain_end", exc)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            if self._elsewhere and run_id in self._elsewhere:
                self._elsewhere.discard(run_id)
                return
            rec = self.recorder
            root = self._roots.pop(run_id, None)
            owner = rec.lc_runs.pop(run_id, None)
            if isinstance(error, GraphInterrupt) and owner is not None:
                owner.paused = True  # the invocation will end paused, not completed
            if root is not None:
                if isinstance(error, GraphInterrupt):
                    rec.event(root, "interrupt", "fire",
                              payload={"interrupts": _interrupt_values(error.args[0]
                                                                       if error.args else [])})
                    rec.end_run(root, "interrupted")
                elif not rec.end_not_failed(root, error):  # (a handoff, a stopped stream)
                    text = f"{type(error).__name__}: {error}"
                    rec.event(root, "run", "error", payload={"error": text})
                    rec.end_run(root, "error", text)
                return
            node = self._nodes.pop(run_id, None)
            if node is not None:
                self._node_event(node, None, error)
        except Exception as exc:  # noqa: BLE001
            self._guard("on_chain_error", exc)

    def _node_event(self, node: tuple[RunState, str, float], outputs: Any,
                    error: BaseException | None,
                    calls: list[dict[str, Any]] | None = None) -> None:
        run, name, t0 = node
        run.last_node = name
        dur = (time.perf_counter() - t0) * 1000
        if "." in name:
            mw, hook = name.rsplit(".", 1)
        else:
            mw, hook = None, "node"
        if name in _SKIP_NODES and error is None:
            return
        if mw is not None and mw == self._mw_name and run.middleware and error is None:
            return  # the middleware recorded this firing itself
        if hook == "before_model" and error is None:
            begin_lap(run)
        payload: dict[str, Any] = {}
        if hook == "node":
            payload["node"] = name
        phase = "fire"
        if error is not None:
            if isinstance(error, GraphInterrupt):
                phase = "interrupt"
                payload["interrupts"] = _interrupt_values(error.args[0] if error.args else [])
            else:
                phase = "error"
                payload["error"] = f"{type(error).__name__}: {error}"
        elif isinstance(outputs, dict):
            payload["update_keys"] = sorted(str(k) for k in outputs)
            if outputs.get("jump_to"):
                payload["jump_to"] = outputs["jump_to"]
        elif isinstance(outputs, Command):
            payload["goto"] = str(outputs.goto)
        if calls:  # (what a model called inside this hook was sent and answered)
            payload["model_calls"] = calls
        self.recorder.event(run, hook, phase, middleware=mw, duration_ms=dur,
                            payload=payload or None)

    # -- model calls ----------------------------------------------------------
    def on_chat_model_start(self, serialized: dict[str, Any] | None,
                            messages: list[list[BaseMessage]], *, run_id: UUID,
                            parent_run_id: UUID | None = None,
                            invocation_params: dict[str, Any] | None = None,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        try:
            if self._skipped(run_id, parent_run_id):
                return
            run = self._run_of(self._known(parent_run_id))
            if run.middleware:
                meta = metadata or {}
                # (the agent's own call; not a model a hook calls, e.g. a summariser)
                if meta.get("langgraph_node") == "model" and meta.get(
                        "lc_source") != "summarization":
                    self._model_sent(run, messages[0] if messages else [])
                elif meta.get("langgraph_node") not in (None, "model", "tools"):
                    params = invocation_params or {}
                    self._inner[run_id] = (run, str(meta["langgraph_node"]),
                                           list(messages[0] if messages else []),
                                           meta.get("ls_model_name") or params.get("model"))
                return
            rec = self.recorder
            params = invocation_params or {}
            meta = metadata or {}
            begin_lap(run)
            if run.model is None:
                run.model = meta.get("ls_model_name") or params.get("model") or params.get(
                    "model_name") or params.get("_type")
                run.provider = meta.get("ls_provider")
            sent = messages[0] if messages else []
            system = [m for m in sent if isinstance(m, SystemMessage)]
            convo = _no_system(sent)
            payload: ModelEnterPayload = {"messages": len(convo), "model": run.model}
            tools = params.get("tools") or None
            note_request(run, payload, system=system[0].content if system else None,
                         tools=tools, tools_key=hash(repr(tools)), schemas=lambda: tools)
            _note_omitted(self._omitted, run, convo, payload)
            # (the enter event's seq is taken after a change the sync finds, so that the
            # change, and the messages it brings, come before the call that received them)
            rec.sync_messages(run, lambda: rec.event(run, "model", "enter", payload=payload),
                              convo)
            self._llm[run_id] = (run, time.perf_counter(), len(convo))
            rec.lc_runs[run_id] = run
        except Exception as exc:  # noqa: BLE001
            self._guard("on_chat_model_start", exc)

    def _inner_end(self, run_id: UUID, response: Any) -> None:
        """A model called inside a node hook answered: kept for that node's event."""
        run, node, sent, model = self._inner.pop(run_id)
        key = next((k for k, (r, name, _) in self._nodes.items()
                    if r is run and name == node), None)
        if key is None:
            return
        try:
            msg = response.generations[0][0].message
        except (AttributeError, IndexError):
            msg = None
        usage = getattr(msg, "usage_metadata", None)
        self._node_calls.setdefault(key, []).append({
            "model": model, "messages": [json.loads(message_json(m)) for m in sent],
            "response": json.loads(message_json(msg)) if msg is not None else None,
            "usage": dict(usage) if isinstance(usage, dict) else None})

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            if run_id in self._inner:
                self._inner_end(run_id, response)
                return
            entry = self._ended(self._llm, run_id)
            if entry is None:
                return
            run, t0, n = entry
            end_lap(run)
            rec = self.recorder
            msg = None
            try:
                msg = response.generations[0][0].message
            except (AttributeError, IndexError):
                pass
            seq = rec.event(run, "model", "exit", duration_ms=(time.perf_counter() - t0) * 1000,
                            payload=ResponsePayload(run, [msg] if msg is not None else []))
            if msg is not None:
                rec.message(run, seq, n, msg)
                calls = getattr(msg, "tool_calls", None)
                if calls:  # for tools a loop invokes with the arguments alone
                    self._asked[run.id] = [(c.get("id"), c.get("name"), c.get("args"))
                                           for c in calls if c.get("id")]
            rec.update_totals(run)
        except Exception as exc:  # noqa: BLE001
            self._guard("on_llm_end", exc)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            self._inner.pop(run_id, None)
            entry = self._ended(self._llm, run_id)
            if entry is None:
                return
            run, t0, _ = entry
            self.recorder.event(run, "model", "error", duration_ms=(time.perf_counter() - t0) *
                                1000, payload=_failed(run, error))
        except Exception as exc:  # noqa: BLE001
            self._guard("on_llm_error", exc)

    def _model_sent(self, run: RunState, sent: list[BaseMessage]) -> None:
        """What the model received, when the layers inside the middleware changed the
        request it recorded (messages or system prompt): a ``("model", "sent")`` step."""
        convo = _no_system(sent)
        system = next((m.content for m in sent if isinstance(m, SystemMessage)), None)
        req = run.req_objs
        if req is None:
            return
        same_system = system == run.req_system or (not system and not run.req_system)
        if same_system and len(req) == len(convo) and all(a is b for a, b in zip(req, convo)):
            return
        rec = self.recorder
        view = rec.request_view(run, convo)
        if same_system and "inline_messages" not in view and view["message_keys"] == [
                message_key(m) for m in req]:
            return  # copies of the same messages
        payload: ModelEnterPayload = {"messages": len(convo)}
        payload.update(view)
        if not same_system:
            payload["system"] = system
        rec.event(run, "model", "sent", payload=payload)

    # -- tool calls -----------------------------------------------------------
    def _call_of(self, run: RunState, name: str, inputs: Any) -> str | None:
        """The call a tool run answers when the loop invoked the tool with its arguments
        alone (``tool.invoke(tc["args"])``, as the seed's loop does): the first call of
        the latest reply with that name and those arguments not yet seen to start."""
        asked = self._asked.get(run.id)
        if not asked:
            return None
        for i, (cid, cname, args) in enumerate(asked):
            if cname == name and (inputs is None or args == inputs):
                del asked[i]
                return cid
        return None

    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: str, *,
                      run_id: UUID, parent_run_id: UUID | None = None,
                      inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        try:
            if self._skipped(run_id, parent_run_id):
                return
            run = self._run_of(self._known(parent_run_id))
            name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
            tcid = kwargs.get("tool_call_id") or self._call_of(run, name, inputs)
            self._tools[run_id] = (run, time.perf_counter(), tcid, name)
            self.recorder.lc_runs[run_id] = run
            if run.middleware:
                return
            self.recorder.event(run, "tool", "enter", tool_call_id=tcid,
                                payload={"name": name, "args": inputs if inputs is not None
                                         else input_str})
        except Exception as exc:  # noqa: BLE001
            self._guard("on_tool_start", exc)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            entry = self._ended(self._tools, run_id)
            if entry is None or entry[0].middleware:
                return  # (not seen to start, or the middleware records it: wrap_tool_call)
            run, t0, tcid, name = entry
            rec = self.recorder
            note_tool_end(run, tcid, output)
            payload: dict[str, Any] = {"name": name}
            msgs: list[BaseMessage] = []
            if isinstance(output, ToolMessage):
                payload["status"] = output.status
                msgs = [output]
            elif isinstance(output, Command):
                update = output.update if isinstance(output.update, dict) else {}
                msgs = [m for m in update.get("messages", ()) if isinstance(m, BaseMessage)]
                payload["command"] = True
            else:
                payload["output"] = output
            seq = rec.event(run, "tool", "exit", tool_call_id=tcid,
                            duration_ms=(time.perf_counter() - t0) * 1000, payload=payload)
            for m in msgs:
                rec.tool_result(run, seq, m)
        except Exception as exc:  # noqa: BLE001
            self._guard("on_tool_end", exc)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            entry = self._ended(self._tools, run_id)
            if entry is None or entry[0].middleware:
                return  # (not seen to start, or the middleware records it: wrap_tool_call)
            run, t0, tcid, name = entry
            dur = (time.perf_counter() - t0) * 1000
            if isinstance(error, GraphInterrupt):
                self.recorder.event(run, "tool", "interrupt", tool_call_id=tcid, duration_ms=dur,
                                    payload={"name": name})
                return
            self.recorder.event(run, "tool", "error", tool_call_id=tcid, duration_ms=dur,
                                payload={"name": name, **_failed(run, error)})
        except Exception as exc:  # noqa: BLE001
            self._guard("on_tool_error", exc)


def _traced_ancestor(span_id: UUID, known: Container[Any]) -> UUID | None:
    """The nearest run in ``known`` above the LangSmith span ``span_id``, read from the
    current tracing context's ``dotted_order`` (``<time>Z<id>.<time>Z<id>...``, the
    root first); None when no such span is current (tracing off: nothing to find)."""
    from langsmith.run_helpers import get_tracing_context

    span = get_tracing_context().get("parent")
    order = str(getattr(span, "dotted_order", "") or "")
    ids = [part.partition("Z")[2] for part in order.split(".")]
    if str(span_id) not in ids:
        return None
    for sid in reversed(ids[:ids.index(str(span_id))]):
        try:
            uid = UUID(sid)
        except ValueError:
            continue
        if uid in known:
            return uid
    return None


def _failed(run: RunState, error: BaseException) -> dict[str, Any]:
    """Note on ``run`` that a model or tool call raised ``error`` (``error_seen``: the
    run ends with it unless the loop goes on) and return its error event's payload."""
    text = f"{type(error).__name__}: {error}"
    run.error_seen = text
    return {"error": text, "type": type(error).__name__}


def _note_omitted(omitted: dict[str, frozenset[str]], run: RunState,
                  convo: list[BaseMessage], payload: ModelEnterPayload) -> None:
    """Record which recorded messages a model call did NOT get, when that changes.

    A hand-rolled loop may run a tool (its result is recorded at the tool's end)
    and then forget to append the result: the stored conversation would show a
    message the model never received. ``omitted_keys`` lists them; the checks
    leave them out of this call and later ones, until it changes again.
    """
    now = frozenset(set(run.seen).difference(message_key(m) for m in convo))
    if now != omitted.get(run.id, frozenset()):
        omitted[run.id] = now
        payload["omitted_keys"] = sorted(now)


def _continues(run: RunState, outputs: Any) -> bool:
    """Whether a chain's output is the run's conversation, grown: a hand-rolled loop
    that returns its message list (the results and the last words it appended
    after the last model call are seen only there)."""
    if not isinstance(outputs, list) or not outputs or not run.keys:
        return False
    if not all(isinstance(m, BaseMessage) for m in outputs):
        return False
    convo = _no_system(outputs)
    n = len(run.keys)
    return len(convo) >= n and [message_key(m) for m in convo[:n]] == run.keys


def _no_system(msgs: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in msgs if not isinstance(m, SystemMessage)]


def _interrupt_values(items: Any) -> list[Any]:
    out = []
    for it in items if isinstance(items, (list, tuple)) else [items]:
        out.append({"value": getattr(it, "value", it), "id": getattr(it, "id", None)})
    return out
