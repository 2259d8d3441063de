"""The recording scripted model: a chat model that answers from a script and keeps a deep
copy of every call it receives.

``Truth.model_inputs`` / ``sub_model_inputs`` / ``summary_inputs`` (:mod:`truth.run`)
are deep copies of the ``messages`` argument of ``RecordingChatModel._generate`` /
``_agenerate``, taken on entry, i.e. exactly what the chat model received after every
``wrap_model_call`` rewrote the request (system message included, first). A call is
classified from the callback metadata LangChain hands the model
(``run_manager.metadata``): ``lc_source == "summarization"`` marks a summarization call
(LangChain's and Deep Agents' ``SummarizationMiddleware`` both tag their summary calls
so); otherwise a ``checkpoint_ns`` containing ``|`` marks a call made inside a nested
graph (a Deep Agents subagent running inside the parent's ``task`` tool); anything else is
a call of the main agent's ``model`` node. Failed calls (``ModelFallbackMiddleware``'s
primary raises) are recorded too, with ``error`` set: they did receive their input. Use
``Truth.model_calls`` for the per-call detail (model name, tools offered, reply, error,
node, namespace).

The model implements ``_agenerate`` natively and :func:`make_tool` gives every tool a
coroutine, so an async run pushes nothing to a thread.
"""

from __future__ import annotations

import contextvars
import copy
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool

from tracer.demo.models import stamp

Script = Callable[[list[BaseMessage]], AIMessage]

@dataclass
class ModelCall:
    """One call of a :class:`RecordingChatModel` (deep copies, taken on entry)."""

    index: int
    model: str                      # the model's ``model_name``
    kind: str                       # "main" | "sub" | "summary"
    messages: list[BaseMessage]     # exactly what the call received (system message included)
    tools: list[str]                # names of the tools bound for this call
    node: str | None                # metadata ``langgraph_node`` (e.g. "model", "tools")
    checkpoint_ns: str              # metadata ``checkpoint_ns`` ("" at the root)
    agent_name: str | None          # metadata ``lc_agent_name``
    reply: AIMessage | None = None  # what the model answered (None if it raised)
    error: str | None = None        # "Type: message" if the call raised


class Recorder:
    """Collects :class:`ModelCall` s. Appends only (atomic under the GIL, no lock)."""

    def __init__(self) -> None:
        self.calls: list[ModelCall] = []
        self.counter = itertools.count()

    def of_kind(self, kind: str) -> list[ModelCall]:
        return [c for c in self.calls if c.kind == kind]


RECORDER: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "truth_recorder", default=None)


def current_recorder() -> Recorder:
    """The recorder of the :func:`run_truth` in progress (a throwaway one outside it)."""
    rec = RECORDER.get()
    return rec if rec is not None else Recorder()


def _tool_name(tool: Any) -> str:
    if isinstance(tool, BaseTool):
        return tool.name
    if isinstance(tool, dict):
        return str(tool.get("name") or tool.get("function", {}).get("name") or tool)
    return str(getattr(tool, "name", None) or getattr(tool, "__name__", tool))


def _classify(metadata: dict[str, Any]) -> tuple[str, str, str | None, str | None]:
    # `langgraph_checkpoint_ns` is the full path ("tools:<id>|model:<id>" inside a
    # subagent); `checkpoint_ns` there is only the parent graph's ("tools:<id>").
    ns = str(metadata.get("langgraph_checkpoint_ns") or metadata.get("checkpoint_ns") or "")
    if metadata.get("lc_source") == "summarization":
        kind = "summary"
    elif "|" in ns:
        kind = "sub"
    else:
        kind = "main"
    return kind, ns, metadata.get("langgraph_node"), metadata.get("lc_agent_name")


class RecordingChatModel(BaseChatModel):
    """A scripted ``BaseChatModel`` that records every call's input (sync and async).

    ``script(messages)`` answers the main agent's calls, ``sub_script`` (default:
    ``script``) a subagent's, ``summary`` summarization calls. ``fail=True`` makes
    every call raise ``RuntimeError`` (after recording it). ``bind_tools`` binds
    the tool names as a ``tools`` kwarg, so each call records what it was offered.
    """

    script: Any = None
    sub_script: Any = None
    summary: str = "Summary: the user asked for work; tools were called and answered."
    fail: bool = False
    recorder: Any = None
    model_name: str = "truth-model"

    @property
    def _llm_type(self) -> str:
        return "truth-scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "truth-scripted"
        params["ls_model_name"] = self.model_name
        return params

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:  # type: ignore[override]
        return self.bind(tools=[_tool_name(t) for t in tools], **kwargs)

    def _respond(self, messages: list[BaseMessage], run_manager: Any,
                 kwargs: dict[str, Any]) -> ChatResult:
        metadata = dict(getattr(run_manager, "metadata", None) or {})
        kind, ns, node, agent_name = _classify(metadata)
        rec = ModelCall(index=-1, model=self.model_name, kind=kind,
                        messages=copy.deepcopy(list(messages)),
                        tools=list(kwargs.get("tools") or []), node=node, checkpoint_ns=ns,
                        agent_name=agent_name)
        recorder = self.recorder if self.recorder is not None else Recorder()
        rec.index = next(recorder.counter)
        recorder.calls.append(rec)
        if self.fail:
            rec.error = f"RuntimeError: {self.model_name} is down"
            raise RuntimeError(f"{self.model_name} is down")
        if kind == "summary":
            reply = AIMessage(content=self.summary)
        else:
            script = self.sub_script if (kind == "sub" and self.sub_script) else self.script
            reply = script(list(messages)).model_copy(deep=True)
        reply = stamp(reply, messages, self.model_name)
        rec.reply = reply.model_copy(deep=True)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        return self._respond(messages, run_manager, kwargs)

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None,
                         **kwargs: Any) -> ChatResult:
        return self._respond(messages, run_manager, kwargs)


def turn_script(turns: Sequence[AIMessage | Script]) -> Script:
    """Play ``turns`` in order, by how many AI messages the model was sent (stateless)."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        n = sum(1 for m in messages if isinstance(m, AIMessage))
        turn = turns[min(n, len(turns) - 1)]
        return turn(messages) if callable(turn) else turn

    return script


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def last_tool_message(messages: Sequence[BaseMessage]) -> ToolMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, ToolMessage)), None)


def make_tool(fn: Callable[..., Any], name: str | None = None,
              description: str | None = None) -> StructuredTool:
    """A tool with both a sync and a native async implementation (no thread hop)."""

    async def coroutine(**kwargs: Any) -> Any:
        return fn(**kwargs)

    return StructuredTool.from_function(func=fn, coroutine=coroutine, name=name or fn.__name__,
                                        description=description or fn.__doc__ or fn.__name__)


def recording_model(script: Script | None = None, **kw: Any) -> RecordingChatModel:
    """A :class:`RecordingChatModel` that records into the run in progress's recorder."""
    return RecordingChatModel(script=script, recorder=current_recorder(), **kw)


__all__ = [
    "RECORDER", "ModelCall", "Recorder", "RecordingChatModel", "Script", "call",
    "current_recorder", "last_tool_message", "make_tool", "recording_model", "turn_script",
]
