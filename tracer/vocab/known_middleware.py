"""The middleware looptrace knows by name: what each one does on each hook it uses.

Pure data (and two lookups): LangChain's prebuilt middleware
(``langchain.agents.middleware``), Deep Agents' built-ins (``deepagents``), the
Anthropic prompt cache, and looptrace's own recorder. Each entry names the class
and the module that defines it, and gives its role on exactly the hooks the class
overrides (a sync or async twin of ``AgentMiddleware``'s hook): a test checks
every entry against the installed packages, so a class that moved, vanished or
changed hooks fails it. Replay captions, the floor plan and the graph's labels
read this table; a middleware it does not know gets ``GENERIC[hook]``.

A middleware is recorded under its ``.name``, which is the class name unless the
class says otherwise: ``PIIMiddleware[email]`` (a bracketed suffix per instance),
Deep Agents' ``_DeepAgentsSummarizationMiddleware`` as ``SummarizationMiddleware``.
Two entries can share a name: LangChain's ``SummarizationMiddleware`` summarises in
``before_model`` (a state update), Deep Agents' own works around the model call
(``wrap_model_call``); the hook it fired on tells them apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Known:
    cls: str  # the class name
    module: str  # the module that defines it
    source: str  # "LangChain", "Deep Agents", "langchain-anthropic", "looptrace"
    summary: str  # one line: what it is for
    roles: dict[str, str] = field(default_factory=dict)  # hook -> what it does there
    name: str | None = None  # the name it is recorded under, when not the class name
    note: str = ""  # a difference worth saying (LangChain vs Deep Agents)
    # said instead of ``note`` in a run that no recorded run started (a top-level run),
    # where a role that acts only for a parent agent does nothing
    top_level: str = ""

    @property
    def recorded_name(self) -> str:
        return self.name or self.cls

    @property
    def hooks(self) -> tuple[str, ...]:
        return tuple(self.roles)


_LC = "langchain.agents.middleware."
_DA = "deepagents.middleware."

KNOWN: tuple[Known, ...] = (
    # -- LangChain's prebuilt middleware ------------------------------------------
    Known("SummarizationMiddleware", _LC + "summarization", "LangChain",
          "summarises old history when the context fills up",
          {"before_model": "counts the history's tokens and, past its trigger (a token "
                           "count, a message count or a fraction of the window), replaces "
                           "the older messages in the state by one summary, keeping each AI "
                           "message with its tool results"},
          note="LangChain's summarises in before_model and rewrites the state; Deep Agents' "
               "SummarizationMiddleware works around the model call (wrap_model_call) at "
               "85% of the window and offloads the old history to a file."),
    Known("HumanInTheLoopMiddleware", _LC + "human_in_the_loop", "LangChain",
          "pauses for a human to review tool calls (interrupt_on)",
          {"after_model": "pauses the run (an interrupt, saved by the checkpointer) so a "
                          "person approves, edits, rejects or answers the tool calls named in "
                          "interrupt_on before any of them runs",
           "wrap_tool_call": "puts the reviewer's note in front of the result of an edited "
                             "call (in per_call mode it raises the pause here instead)"}),
    Known("ModelCallLimitMiddleware", _LC + "model_call_limit", "LangChain",
          "caps the number of model calls per thread or run",
          {"before_model": "ends the loop (jump to end) once the thread or run limit of "
                           "model calls is reached",
           "after_model": "counts the model call just made"}),
    Known("ToolCallLimitMiddleware", _LC + "tool_call_limit", "LangChain",
          "caps the number of tool calls",
          {"after_model": "counts the tool calls just asked for and, past the limit, answers "
                          "them with error ToolMessages or ends the run"}),
    Known("ModelFallbackMiddleware", _LC + "model_fallback", "LangChain",
          "falls back to other models on errors",
          {"wrap_model_call": "calls the rest of the onion again with the next fallback "
                              "model when the model call raises (a retry with another "
                              "model)"}),
    Known("ModelRetryMiddleware", _LC + "model_retry", "LangChain",
          "retries failing model calls",
          {"wrap_model_call": "calls the model again with backoff when it raises, up to "
                              "max_retries"}),
    Known("ModelRefusalMiddleware", _LC + "model_refusal", "LangChain",
          "treats a refusal as an error",
          {"wrap_model_call": "raises ModelRefusalError when the reply is a refusal, so a "
                              "fallback outside it can catch it"}),
    Known("ModelRouterMiddleware", _LC + "model_router", "LangChain",
          "routes the run to a model chosen by a classifier",
          {"before_agent": "classifies the latest user message once and stores the choice "
                           "in the state",
           "wrap_model_call": "sends every model call of the run to the chosen model"}),
    Known("PIIMiddleware", _LC + "pii", "LangChain",
          "redacts, masks, hashes or blocks personal data",
          {"before_model": "finds PII (emails, cards, IPs, ...) in user messages and tool "
                           "results and redacts, masks or hashes it in the state, or blocks",
           "after_model": "finds PII in the model's reply and redacts, masks or hashes it in "
                          "the state, or blocks"}),
    Known("TodoListMiddleware", _LC + "todo", "LangChain",
          "gives the agent a write_todos planning tool",
          {"wrap_model_call": "adds the write_todos instructions to the system prompt",
           "after_model": "rejects parallel write_todos calls (one update per turn)"}),
    Known("LLMToolSelectorMiddleware", _LC + "tool_selection", "LangChain",
          "filters the tools with a smaller model",
          {"wrap_model_call": "asks a selector model which tools fit the request and sends "
                              "only those to the model (tool filtering)"}),
    Known("ProviderToolSearchMiddleware", _LC + "provider_tool_search", "LangChain",
          "defers tool schemas behind the provider's tool search",
          {"wrap_model_call": "marks selected tools as deferred and adds the provider's "
                              "server-side tool-search tool to the request"}),
    Known("ContextEditingMiddleware", _LC + "context_editing", "LangChain",
          "clears old tool results from what the model gets",
          {"wrap_model_call": "clears old tool results in the request the model gets once it "
                              "passes a token threshold (the state keeps them)"}),
    Known("ToolRetryMiddleware", _LC + "tool_retry", "LangChain",
          "retries failing tool calls",
          {"wrap_tool_call": "calls the tool again with backoff when it raises; when the "
                             "retries run out it returns an error ToolMessage (on_failure="
                             "'continue', the default) or re-raises ('error')"}),
    Known("ToolErrorMiddleware", _LC + "tool_error", "LangChain",
          "turns selected tool exceptions into error messages",
          {"wrap_tool_call": "catches the exceptions its on_error handles and returns them "
                             "to the model as an error ToolMessage; others propagate and fail "
                             "the run"}),
    Known("LLMToolEmulator", _LC + "tool_emulator", "LangChain",
          "answers tool calls with an LLM (for testing)",
          {"wrap_tool_call": "answers the call with a model's made-up result instead of "
                             "running the tool (a short-circuit)"}),
    Known("AutoModeMiddleware", _LC + "auto_mode", "LangChain",
          "blocks risky tool calls judged by a decision model",
          {"wrap_tool_call": "asks a decision model whether the call is risky and answers a "
                             "risky one with an error ToolMessage without running it"}),
    Known("ShellToolMiddleware", _LC + "shell_tool", "LangChain",
          "gives the agent a persistent shell",
          {"before_agent": "starts the shell session and runs its startup commands",
           "after_agent": "runs the shutdown commands and releases the shell"}),
    Known("FilesystemFileSearchMiddleware", _LC + "file_search", "LangChain",
          "adds glob and grep tools over local files (tools only: no hook)", {}),
    # -- Anthropic's prompt cache ---------------------------------------------------
    Known("AnthropicPromptCachingMiddleware", "langchain_anthropic.middleware.prompt_caching",
          "langchain-anthropic", "marks the prompt for Anthropic's prompt cache",
          {"wrap_model_call": "adds cache_control markers to the request so Anthropic "
                              "caches the prompt prefix (other providers: unchanged)"}),
    # -- Deep Agents' built-ins ---------------------------------------------------------
    Known("PatchToolCallsMiddleware", _DA + "patch_tool_calls", "Deep Agents",
          "repairs dangling tool calls in the history",
          {"before_agent": "answers every tool call left without a ToolMessage in the "
                           "history (a run cut off mid-call) with an error ToolMessage saying "
                           "it did not complete, so the provider never gets a dangling call"}),
    Known("FilesystemMiddleware", _DA + "filesystem", "Deep Agents",
          "gives the agent files (ls, read_file, write_file, edit_file, glob, grep)",
          {"wrap_model_call": "adds the file tools' instructions to the system prompt, drops "
                              "execute when the backend cannot run commands, and evicts an "
                              "oversized user message to a file",
           "wrap_tool_call": "evicts a tool result over 20,000 tokens to a file and returns a "
                             "preview in its place; rejects parallel edits of one file (the "
                             "file tools check the permissions themselves)"}),
    Known("SubAgentMiddleware", _DA + "subagents", "Deep Agents",
          "gives the agent subagents through the task tool",
          {"wrap_model_call": "adds the task tool's instructions and the subagents on offer "
                              "to the system prompt (a subagent then runs inside the task "
                              "tool call)"}),
    Known("_DeepAgentsSummarizationMiddleware", _DA + "summarization", "Deep Agents",
          "summarises the history around the model call",
          {"wrap_model_call": "offloads the old history to a file and sends a summary in its "
                              "place once the conversation passes 85% of the model's context "
                              "window (170,000 tokens when the model has no profile); also "
                              "truncates large arguments of old tool calls"},
          name="SummarizationMiddleware",
          note="Deep Agents' summarises around the model call (wrap_model_call); LangChain's "
               "SummarizationMiddleware does it in before_model."),
    Known("SummarizationToolMiddleware", _DA + "summarization", "Deep Agents",
          "gives the agent a compact_conversation tool",
          {"wrap_model_call": "adds a nudge to use compact_conversation to the system prompt"}),
    Known("MemoryMiddleware", _DA + "memory", "Deep Agents",
          "loads AGENTS.md memory into the prompt",
          {"before_agent": "loads the memory files (AGENTS.md) into the state, once",
           "wrap_model_call": "puts the memory section into the system prompt (with a cache "
                              "marker for Anthropic)"}),
    Known("SkillsMiddleware", _DA + "skills", "Deep Agents",
          "exposes skills (SKILL.md) by progressive disclosure",
          {"before_agent": "loads the skills' metadata into the state, once per thread",
           "before_model": "adds the skills named in pinned_skills as messages",
           "wrap_model_call": "adds the skills section to the system prompt and discloses the "
                              "tools of the skills read",
           "wrap_tool_call": "runs a disclosed skill tool; a call to any other unregistered "
                             "tool fails as invalid"}),
    Known("RubricMiddleware", _DA + "rubric", "Deep Agents",
          "grades the answer against a rubric and sends the agent back to work",
          {"before_agent": "starts a grading run when the input carries a rubric",
           "after_agent": "grades the transcript against the rubric and, when it is not "
                          "satisfied, jumps back to the model with a revision request (the "
                          "agent goes back to work)"}),
    Known("UnsupportedContentMiddleware", _DA + "unsupported_content", "Deep Agents",
          "replaces content the model cannot take",
          {"wrap_model_call": "replaces input blocks the model cannot accept (an image for a "
                              "text-only model) by a text notice in the request"}),
    Known("AsyncSubAgentMiddleware", _DA + "async_subagents", "Deep Agents",
          "launches subagents on remote servers in the background",
          {"before_agent": "records the task notification that started this run, if any",
           "before_model": "checks the background tasks (async path only)",
           "after_model": "checks the background tasks (async path only)",
           "wrap_model_call": "adds the async subagents' instructions to the system prompt"}),
    Known("_ParentNotifierMiddleware", _DA + "_parent_notifier", "Deep Agents",
          "wakes the agent that started this run in the background",
          {"after_agent": "tells the agent that started this run in the background "
                          "(start_async_task), if one did, that it ended; passes through "
                          "otherwise",
           "wrap_model_call": "passes through (it acts on the async path only)"},
          top_level="No parent run is recorded for this run (it was not started as a "
                    "background task of another recorded agent), so there is no parent to "
                    "tell: it passes through."),
    Known("_LazyAnthropicPromptCachingMiddleware", _DA + "_prompt_caching", "Deep Agents",
          "Anthropic's prompt cache, imported only when an Anthropic model is used",
          {"wrap_model_call": "adds cache_control markers when the model is Anthropic's "
                              "(other providers: unchanged)"},
          name="AnthropicPromptCachingMiddleware"),
    Known("_ToolExclusionMiddleware", _DA + "_tool_exclusion", "Deep Agents",
          "removes the tools a harness profile excludes",
          {"wrap_model_call": "drops the excluded tools from the request (tool filtering)",
           "wrap_tool_call": "rejects a call to an excluded tool instead of running it"}),
    # -- looptrace ------------------------------------------------------------------------
    Known("TraceMiddleware", "tracer.record.middleware", "looptrace",
          "records every hook and message (changes nothing)",
          {"before_agent": "records the run's start", "before_model": "records the lap's start",
           "wrap_model_call": "records the request and the reply",
           "after_model": "records the reply's arrival in the state",
           "wrap_tool_call": "records the tool call and its result",
           "after_agent": "records the run's end"}),
    Known("LeanTraceMiddleware", "tracer.record.middleware", "looptrace",
          "records model and tool calls only (no graph nodes)",
          {"wrap_model_call": "records the request and the reply",
           "wrap_tool_call": "records the tool call and its result"}),
)

# What any middleware on a hook may be doing, for one the table does not know.
GENERIC: dict[str, str] = {
    "before_agent": "runs once per invocation before the loop: may load memory or files, "
                    "validate the input, or end at once (jump to end)",
    "before_model": "runs before every model call: may trim or summarise the history, "
                    "inject context, or jump",
    "wrap_model_call": "wraps the model call: may rewrite the request (prompt, tools, model), "
                       "retry, fall back, or answer itself",
    "after_model": "runs after every model call: may inspect or change the reply, pause for "
                   "a human, or jump back",
    "wrap_tool_call": "wraps each tool call: may change the arguments, retry, answer itself, "
                      "or turn an exception into an error ToolMessage",
    "after_agent": "runs once per invocation after the loop: may persist, clean up, or send "
                   "the agent back to work",
}

_SUFFIX = re.compile(r"\[.*\]$")


def base_name(name: str) -> str:
    """A recorded middleware name without its per-instance suffix (``PIIMiddleware[email]``)."""
    return _SUFFIX.sub("", name)


def find(name: str | None, hook: str | None = None, *, cls: str | None = None,
         module: str | None = None) -> Known | None:
    """The entry for a middleware recorded as ``name`` (and, when known, its class and
    module). A name two entries share is told apart by the ``hook`` it fired on."""
    if cls and module:
        for k in KNOWN:
            if k.cls == cls and k.module == module:
                return k
    if not name:
        return None
    base = base_name(name)
    matches = [k for k in KNOWN if k.recorded_name == base or k.cls == base]
    if hook is not None and len(matches) > 1:
        on_hook = [k for k in matches if hook in k.roles]
        matches = on_hook or matches
    return matches[0] if matches else None


def role(name: str | None, hook: str, *, cls: str | None = None,
         module: str | None = None) -> str:
    """What middleware ``name`` does on ``hook``: its known role, else the generic one."""
    k = find(name, hook, cls=cls, module=module)
    if k is not None and hook in k.roles:
        return k.roles[hook]
    return GENERIC.get(hook, "")


__all__ = ["GENERIC", "KNOWN", "Known", "base_name", "find", "role"]
