"""Provider protocol rules, checked on the message list of one model call.

What each provider accepts (see /work/shared/docs/langchain-facts.md for the
wire formats; the Anthropic notes follow langchain-anthropic's own request
builder):

- OpenAI chat completions: an assistant message with ``tool_calls`` must be
  followed, immediately, by one ``role: tool`` message per call id; a tool
  message must answer a call of the assistant message before it. The adapter
  sends ``invalid_tool_calls`` as tool calls too, so they need results as well.
  System messages are accepted anywhere.
- Anthropic messages: the results of an assistant turn's ``tool_use`` blocks
  travel as ``tool_result`` blocks in the NEXT user turn (langchain-anthropic
  merges consecutive tool and human messages into one user turn), and the
  ``tool_result`` blocks must come first in it. Each ``tool_result`` must match
  a ``tool_use`` id. User and assistant turns alternate. The system prompt is a
  top-level field: a second, non-consecutive system message is refused by the
  adapter ("Received multiple non-consecutive system messages"), a lone
  mid-conversation one is hoisted to the top and then applies everywhere.
- Ollama chat: nothing links a result to its call but order (no ids on the
  wire); Ollama rejects nothing here, so its findings are warnings about what
  the model will misread.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import replace

from .base import Call, Finding, ModelCall, Turn

_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic", "ollama": "Ollama"}
OLLAMA_SWAPPED = "NOT in the order of the calls"


def _sends(provider: str, c: Call) -> bool:
    """Whether the provider's adapter sends this call (and so needs a result)."""
    if c.id is None:
        return False
    if c.valid:
        return True
    return provider in ("openai", "anthropic")


def _ids(calls: Iterable[Call]) -> str:
    return ", ".join(f"{c.name} (id {c.id})" for c in calls)


class _Ctx:
    def __init__(self, run_id: str, mc: ModelCall) -> None:
        self.run_id = run_id
        self.mc = mc
        self.out: list[Finding] = []

    def add(self, rule: str, severity: str, provider: str | None, message: str,
            keys: Iterable[str]) -> None:
        self.out.append(Finding(rule, severity, provider, message, self.run_id, self.mc.seq,
                                tuple(dict.fromkeys(keys))))


def check_model_call(run_id: str, mc: ModelCall, providers: Iterable[str]) -> list[Finding]:
    """Every protocol finding for the messages ``mc`` sent, for each provider."""
    ctx = _Ctx(run_id, mc)
    provs = tuple(providers)
    for provider in provs:
        _results(ctx, provider)
        _orphans_and_duplicates(ctx, provider)
    if "anthropic" in provs:
        _anthropic_alternation(ctx)
        _anthropic_system(ctx)
    if "ollama" in provs:
        _ollama_unlinked(ctx)
    for t in mc.turns:
        if t.empty:
            ctx.add("empty-assistant-message", "warning", None,
                    "An assistant message with no text and no tool calls was sent back to the "
                    "model. Anthropic rejects empty non-final assistant messages "
                    "(langchain-anthropic silently drops them); OpenAI and Ollama accept it, "
                    "and the model then sees a turn where it said nothing.", [t.key])
    return ctx.out


def _results(ctx: _Ctx, provider: str) -> None:
    """Dangling calls, results out of place, tool_result not first (Anthropic)."""
    turns = ctx.mc.turns
    name = _NAMES[provider]
    results: dict[str | None, list[int]] = {}  # tool_call_id -> indexes of its results
    for k, tk in enumerate(turns):
        if tk.role == "tool":
            results.setdefault(tk.tool_call_id, []).append(k)
    for i, t in enumerate(turns):
        if t.role != "assistant":
            continue
        calls = [c for c in t.calls if _sends(provider, c)]
        if not calls:
            continue
        ids = {c.id for c in calls}
        # Where the provider wants the results: the block right after the call.
        j = i + 1
        block: list[int] = []
        text_before_result: list[int] = []
        if provider == "anthropic":
            while j < len(turns) and (turns[j].role in ("user", "tool", "system")
                                      or (turns[j].empty and j < len(turns) - 1)):
                if turns[j].role in ("user", "tool"):
                    block.append(j)
                j += 1
        else:
            while j < len(turns) and turns[j].role == "tool":
                block.append(j)
                j += 1
        in_block: set[str | None] = set()
        seen_text: list[int] = []
        for k in block:
            tk = turns[k]
            if tk.role == "user":
                seen_text.append(k)
            elif tk.tool_call_id in ids:
                in_block.add(tk.tool_call_id)
                if seen_text:
                    text_before_result.extend(seen_text + [k])
        later: dict[str | None, int] = {}
        for cid in ids - in_block:
            after = [k for k in results.get(cid, ()) if k >= j]
            if after:
                later[cid] = after[0]
        missing = [c for c in calls if c.id not in in_block and c.id not in later]
        misplaced = [c for c in calls if c.id not in in_block and c.id in later]
        sev = "warning" if provider == "ollama" else "error"
        if missing:
            if provider == "openai":
                rule_text = ("OpenAI requires an assistant message with tool_calls to be followed "
                             "by a tool message for each tool_call_id, and rejects the request "
                             "(400) otherwise.")
            elif provider == "anthropic":
                rule_text = ("Anthropic requires a tool_result block for every tool_use id in "
                             "the next user turn, and rejects the request (400) otherwise.")
            else:
                rule_text = ("Ollama accepts it, but the model sees a call that never got a "
                             "result (and, with results linked by order only, may pair later "
                             "results with the wrong call).")
            ctx.add("dangling-tool-call", sev, provider,
                    f"{rule_text} Here {_ids(missing)} got no result before this model call.",
                    [t.key])
        if misplaced:
            between = [turns[k].key for k in range(i + 1, max(later[c.id] for c in misplaced))
                       if turns[k].role != "tool"]
            where = {"openai": "immediately after the assistant message that asked for them "
                               "(OpenAI rejects the request otherwise)",
                     "anthropic": "in the next user turn (Anthropic rejects the request "
                                  "otherwise)",
                     "ollama": "right after the call (Ollama links a result to its call by "
                               "order only, so the model will misread them)"}[provider]
            ctx.add("result-not-after-call", sev, provider,
                    f"Tool results must come {where}. Here the result of {_ids(misplaced)} "
                    f"comes only after {len(between)} other message(s).",
                    [t.key, *between, *("t:" + str(c.id) for c in misplaced)])
        if provider == "anthropic" and text_before_result:
            ctx.add("tool-result-not-first", "error", "anthropic",
                    f"{name} requires the tool_result blocks to come first in the user turn "
                    "that answers a tool_use; here a user message sits between the call and "
                    "its result, so langchain-anthropic merges it into that turn ahead of the "
                    "tool_result and the request is rejected (400).",
                    [t.key, *(turns[k].key for k in text_before_result)])


def _orphans_and_duplicates(ctx: _Ctx, provider: str) -> None:
    turns = ctx.mc.turns
    asked: set[str | None] = set()
    answered: dict[str | None, str] = {}
    for t in turns:
        if t.role == "assistant":
            asked.update(c.id for c in t.calls if c.id is not None)
            continue
        if t.role != "tool":
            continue
        tcid = t.tool_call_id
        if tcid in answered:
            sev = "warning" if provider == "ollama" else "error"
            text = {"openai": "OpenAI expects exactly one tool message per tool_call_id.",
                    "anthropic": "Anthropic expects exactly one tool_result per tool_use id.",
                    "ollama": "Ollama links results by order, so an extra result shifts every "
                              "later pairing."}[provider]
            ctx.add("duplicate-tool-result", sev, provider,
                    f"{text} Here the call {tcid} is answered twice.", [answered[tcid], t.key])
            continue
        answered[tcid] = t.key
        if tcid is None or tcid not in asked:
            sev = "warning" if provider == "ollama" else "error"
            text = {"openai": "OpenAI rejects a tool message that does not answer a tool call "
                              "of a preceding assistant message (400).",
                    "anthropic": "Anthropic rejects a tool_result whose tool_use_id matches no "
                                 "tool_use in the previous assistant turn (400).",
                    "ollama": "Ollama accepts it, but links results by order, so an unasked "
                              "result is paired with the wrong call or none."}[provider]
            ctx.add("orphan-tool-result", sev, provider,
                    f"{text} Here the result for call {tcid} answers no earlier call.", [t.key])


def _anthropic_turns(turns: list[Turn]) -> list[tuple[str, list[Turn]]]:
    """The conversation as langchain-anthropic sends it: tool and human messages
    merged into user turns, empty non-final assistant messages and system
    messages taken out."""
    out: list[tuple[str, list[Turn]]] = []
    for i, t in enumerate(turns):
        if t.role == "system" or (t.empty and i < len(turns) - 1):
            continue
        role = "assistant" if t.role == "assistant" else "user"
        if out and out[-1][0] == role == "user":
            out[-1][1].append(t)
        else:
            out.append((role, [t]))
    return out


def _anthropic_alternation(ctx: _Ctx) -> None:
    merged = _anthropic_turns(ctx.mc.turns)
    for a, b in itertools.pairwise(merged):
        if a[0] == b[0] == "assistant":
            prev = a[1][-1]
            if any(_sends("anthropic", c) for c in prev.calls):
                continue  # reported as a dangling tool call already
            ctx.add("consecutive-same-role", "warning", "anthropic",
                    "Anthropic's Messages API expects user and assistant turns to alternate; "
                    "here two assistant messages follow each other, which the API merges into "
                    "one turn (or rejects), so the model reads them as a single reply.",
                    [prev.key, b[1][0].key])


def _anthropic_system(ctx: _Ctx) -> None:
    turns = ctx.mc.turns
    prior_system = ctx.mc.has_system_prompt
    blocks: list[list[str]] = []
    for i, t in enumerate(turns):
        if t.role != "system":
            continue
        if i == 0 and not prior_system:
            prior_system = True
            continue
        if blocks and turns[i - 1].role == "system":
            blocks[-1].append(t.key)
        else:
            blocks.append([t.key])
    if not blocks:
        return
    if prior_system or len(blocks) > 1:
        ctx.add("system-message-position", "error", "anthropic",
                "Anthropic takes the system prompt as one top-level field: langchain-anthropic "
                "refuses a second, non-consecutive system message (\"Received multiple "
                "non-consecutive system messages\") before sending anything. Here a system "
                "message sits in the middle of the conversation.",
                [k for b in blocks for k in b])
    else:
        ctx.add("system-message-position", "warning", "anthropic",
                "Anthropic takes the system prompt as one top-level field: a system message in "
                "the middle of the conversation is moved to the top, so it applies to the "
                "whole conversation, not from where it stands.", blocks[0])


def _ollama_unlinked(ctx: _Ctx) -> None:
    turns = ctx.mc.turns
    for i, t in enumerate(turns):
        calls = [c for c in t.calls if c.valid] if t.role == "assistant" else []
        if len(calls) < 2:
            continue
        order: list[str | None] = []
        k = i + 1
        while k < len(turns) and turns[k].role == "tool" and len(order) < len(calls):
            order.append(turns[k].tool_call_id)
            k += 1
        swapped = [x for x in order if x in {c.id for c in calls}] != [
            c.id for c in calls if c.id in order]
        note = (f" Here the results are {OLLAMA_SWAPPED}, so the model pairs "
                "them with the wrong calls." if swapped else
                " Keep the results in the order of the calls (parallel tools can finish out "
                "of order).")
        ctx.add("ollama-unlinked-calls", "warning", "ollama",
                f"Ollama sends no tool call ids: with {len(calls)} calls in one turn "
                f"({_ids(calls)}) only the order of the results links each to its call." + note,
                [t.key])


def collapse_ollama_order(findings: list[Finding]) -> list[Finding]:
    """Keep one general ``ollama-unlinked-calls`` warning per run (the first,
    with how many turns share it) and every one where the order is wrong."""
    general = [f for f in findings
               if f.rule == "ollama-unlinked-calls" and OLLAMA_SWAPPED not in f.message]
    if len(general) < 2:
        return findings
    first = general[0]
    merged = replace(first, message=first.message + f" {len(general)} turns of this run have "
                     "several calls; this is the first.")
    drop = {id(f) for f in general[1:]}
    return [merged if f is first else f for f in findings if id(f) not in drop]
