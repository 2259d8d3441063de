"""The debugger's MCP tools: a coding agent drives a live agent's pauses
(``tracer.debug.channel``), as the app and ``looptrace debug``'s prompt do."""

from __future__ import annotations

import os
from typing import Any

from tracer.debug import channel
from tracer.debug.breakpoints import CONDITION_HELP, FORMS, parse
from tracer.debug.reach import unreachable
from tracer.errors import UsageError
from tracer.read.loader import TraceDB
from tracer.vocab.edits import AT, KINDS

__all__ = ["DEBUG_TOOLS", "Debug"]

_EDITS = ("edit_kind names the edit, with the same arguments as fork_run's: message "
          "(position, text), drop (position), insert (position, text, role: human, ai, "
          "system, or tool with tool_call_id: a result for a dangling tool call), system (text), "
          "model (model: an init_chat_model name, or offline), tool_result (text), "
          "tool_args (args), and the debugger's own: tools (names: the tools to keep "
          "offering), settings (settings: an object), reply (text and/or tool_calls: "
          "[{name, args}]: answer the model call yourself, or replace its answer), raise "
          "(text: the tool call raises), state (text: a JSON object of state keys: at a graph "
          "node, merged into what it receives (before) or into its update (after) through "
          "the graph's reducers; at a node's error, its update instead). Which apply: "
          + "; ".join(
              f"{at.replace('_', ' ')}: {', '.join(k.name for k in KINDS.values() if at in k.at)}"
              for at in AT if at != "stack") + "; state: none.")

DEBUG_TOOLS: dict[str, str] = {
    "list_paused": (
        "The pauses in the debugger right now (agents armed with "
        "TraceMiddleware(debug=...), LOOPTRACE_DEBUG or `looptrace debug`), each with its "
        "own id (pause: a run paused at several parallel tool calls has one pause per "
        "call), its run id, tool_call_id (for a tool call), step (from 1, as list_steps "
        "counts), hook, at (before/after the call, fire, error), the breakpoint that hit, "
        "its parent run for a subagent, and the kind of what is pending (model_request, "
        "model_reply, tool_call, tool_result, error, state). A pause whose process died "
        "is not listed."),
    "get_pending": (
        "What a paused run is about to do: the model request as the model will receive "
        "it (messages with their positions, system prompt, tool names, settings, model), "
        "the tool call with its arguments, the AIMessage that just came back, the "
        "ToolMessage, the exception raised, or at a graph node (kind node) its `state` "
        "(also at the answer's top level): "
        "the input the node will receive (before) or the update it returned (after), "
        "every key as the State view shows it, and `keys`, the state's keys; at a hook "
        "of create_agent (kind state) the whole state. pause: the pause's id (from "
        "list_paused), needed when the run has several pauses at once. An error if the "
        "run is not "
        "paused."),
    "resume": (
        "WRITES to the database (the debugger's channel): let a paused run go on. pause: "
        "the pause's id (from list_paused); needed when the run has several pauses at "
        "once (parallel tool calls), else an error naming them. text is taken as it is "
        "(JSON text too). An edit that changes nothing is no edit. "
        "command: continue (to the next breakpoint), step (the next hook firing; at a "
        "tool call before it runs, e.g. a Deep Agents task call: into the subagent it "
        "runs, pausing at its first hook, in the subagent's run; get_pending's `into` "
        "names the subagent, the parent run and the call), out (step out: the subagent, "
        "or subgraph, runs to its end, breakpoints on the way still hitting, and the "
        "parent pauses after the call, with its result; only where get_pending has `out`, "
        "saying where it goes back to), lap "
        "(the next lap's model call), run (to the end, no more pauses), abort (the run "
        "ends as an error, 'aborted in the debugger'). With continue/step/out/lap an optional "
        "edit changes what is pending first; it is recorded with its before and after. "
        + _EDITS + " Several edits in one answer: edits, a list of objects "
        "({\"kind\": ..., ...} each), made in order. A bad edit, or a run that is not "
        "paused, is an error and changes nothing."),
    "set_breakpoint": (
        "WRITES to the database: arm a breakpoint for the agents debugged into it (it "
        "applies at their next hook firing), for one run (and its subagents), one thread, or "
        "every run (neither given). spec: " + "; ".join(
            f"{form}: {what}" for form, what in FORMS.values()) + ". " + CONDITION_HELP
        + ". A bad spec or expression is an error and arms nothing."),
    "playground": (
        "Re-send a recorded model call, edited, to a chosen model, and see the new answer "
        "beside the recorded one: the call at or after `step` of `run`, exactly as the "
        "model received it (every message with its tool calls and results, the system "
        "prompt, the tool schemas), one edit (edit_kind: message, drop, insert, system, "
        "tools, settings, with the arguments resume takes), then `model`: an "
        "init_chat_model name (the server's keys), 'recorded' (the recorded provider and "
        "model), or 'offline' (the default: no network, no key; the recorded answer when "
        "the run, its subagent runs or its reruns and forks recorded a call with the same "
        "request, else an answer saying it is offline and what the model would have been "
        "sent). Answer: the request, the recorded answer, the new answer, `served` (where "
        "the answer came from, one line), and the request in each provider's wire format "
        "(OpenAI, Anthropic, Ollama). Writes nothing."),
    "rewind": (
        "WRITES to the database: at a pause, go back to step `step` of the paused run "
        "(from 1, as list_steps counts; at most the step paused at) and go on from there "
        "as a fork of it, in the agent's process: the steps before it come from the "
        "record with no model or tool call, the edit (edit_kind with resume's arguments, "
        "or edits: a list of model-call edits made in order; the kinds fork_run makes) "
        "is made at the first call at or after the step, and the same breakpoints pause "
        "the fork after it (list_paused shows its pauses). The fork is linked as forks "
        "are (forked_from, with rewind: true). The paused run stays paused (a new pause, "
        "its breakpoint naming the fork): answer it with resume. An agent that cannot "
        "be built again (a graph the script compiled itself, no create_agent seen under "
        "looptrace debug and no --agent; a subagent's run), a step out of range or a bad "
        "edit is an error and changes nothing."),
    "clear_breakpoints": (
        "WRITES to the database: clear the breakpoints armed from outside (only those of "
        "`run` when given); returns how many."),
}


class Debug:
    """The debugger's tools over one database."""

    def __init__(self, db: str | os.PathLike[str]) -> None:
        self.db = os.fspath(db)

    def _rid(self, run: str) -> str:
        with TraceDB(self.db) as db:
            return db.resolve(run)

    def list_paused(self) -> dict[str, Any]:
        return {"paused": channel.list_paused(self.db)}

    def get_pending(self, run: str, pause: int | None = None) -> dict[str, Any]:
        out = channel.pending(self.db, self._rid(run), pause)
        pend = out.get("pending")
        if isinstance(pend, dict) and "state" in pend:  # (a node's or a hook's: at the top)
            out["state"] = pend["state"]
        return out

    # ``text: str = None``: annotated ``str`` alone, so that the MCP server takes it as
    # it is: it parses a string given for any other annotation (``str | None``) as JSON
    # first, and a tool result that is JSON text became an object and was refused.
    def resume(self, run: str, command: str = "continue", edit_kind: str | None = None,
               position: int | None = None,
               text: str = None,  # type: ignore[assignment]  # noqa: RUF013 - see above
               role: str = "human",
               model: str | None = None, args: dict[str, Any] | None = None,
               names: list[str] | None = None, settings: dict[str, Any] | None = None,
               tool_calls: list[dict[str, Any]] | None = None,
               tool_call_id: str | None = None,
               edits: list[dict[str, Any]] | None = None,
               pause: int | None = None) -> dict[str, Any]:
        edit: dict[str, Any] | list[dict[str, Any]] | None = None
        if edits is not None:
            if edit_kind is not None:
                msg = "give edit_kind (one edit) or edits (a list), not both"
                raise UsageError(msg)
            edit = edits
        if edit_kind is not None:
            edit = {"kind": edit_kind, "role": role}
            for name, value in (("position", position), ("text", text), ("model", model),
                                ("args", args), ("names", names), ("settings", settings),
                                ("tool_calls", tool_calls), ("tool_call_id", tool_call_id)):
                if value is not None:
                    edit[name] = value
        return channel.answer(self.db, self._rid(run), command, edit, pause=pause)

    def rewind(self, run: str, step: int, edit_kind: str | None = None,
               position: int | None = None,
               text: str = None,  # type: ignore[assignment]  # noqa: RUF013 - as resume's
               role: str = "human", model: str | None = None,
               args: dict[str, Any] | None = None,
               edits: list[dict[str, Any]] | None = None,
               pause: int | None = None) -> dict[str, Any]:
        from tracer.whatif.rewind import check

        if edits is not None and edit_kind is not None:
            msg = "give edit_kind (one edit) or edits (a list), not both"
            raise UsageError(msg)
        edit: Any = edits
        if edit_kind is not None:
            edit = {"kind": edit_kind, "role": role}
            for name, value in (("position", position), ("text", text), ("model", model),
                                ("args", args)):
                if value is not None:
                    edit[name] = value
        rid = self._rid(run)
        made = [e.to_json() for e in channel.rewind_edits(edit)]
        said = (channel.pending(self.db, rid, pause).get("pending") or {}).get("rewind") or {}
        if said.get("can"):  # (checked against the record first: a step, an edit's place)
            check(self.db, rid, step, made)
        return channel.rewind(self.db, rid, step, made, pause=pause)

    def set_breakpoint(self, spec: str, run: str | None = None,
                       thread: str | None = None) -> dict[str, Any]:
        rid = self._rid(run) if run else None
        bid = channel.arm(self.db, spec, run=rid, thread=thread, source="mcp")
        out: dict[str, Any] = {"id": bid, "spec": spec, "run": rid, "thread": thread}
        said = unreachable(self.db, parse(spec))
        if said is not None:
            out["warning"] = said
        return out

    def playground(self, run: str, step: int, model: str = "offline",
                   edit_kind: str | None = None, position: int | None = None,
                   text: str = None,  # type: ignore[assignment]  # noqa: RUF013 - as resume's
                   role: str = "human",
                   names: list[str] | None = None,
                   settings: dict[str, Any] | None = None) -> dict[str, Any]:
        from tracer.wire.playground import playground

        edit: dict[str, Any] | None = None
        if edit_kind is not None:
            edit = {"kind": edit_kind, "role": role}
            for name, value in (("position", position), ("text", text), ("names", names),
                                ("settings", settings)):
                if value is not None:
                    edit[name] = value
        return playground(self.db, run, step, edit=edit, model=model).to_dict()

    def clear_breakpoints(self, run: str | None = None) -> dict[str, Any]:
        rid = self._rid(run) if run else None
        return {"cleared": channel.clear(self.db, run=rid)}
