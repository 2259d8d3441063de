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

from collections.abc import Iterable
from dataclasses import replace

from .base import Call, Finding, ModelInput, ProtocolMessage

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
    def __init__(self, run_id: str, mc: ModelInput) -> None:
        self.run_id = run_id
        self.mc = mc
        self.out: list[Finding] = []

    def add(self, rule: str, severity: str, provider: str | None, message: str,
            keys: Iterable[str]) -> None:
        self.out.append(Finding(rule, severity, provider, message, self.run_id, self.mc.seq,
                                tuple(dict.fromkeys(keys))))


def check_model_call(run_id: str, mc: ModelInput, providers: Iterable[str]) -> list[Finding]:
    """Every protocol finding for the messages ``mc`` sent, for each provider."""
    return ProtocolScan(run_id, providers).check(mc)


class _Seen:
    """What a scan knows of the conversation it checked last."""

    def __init__(self, providers: tuple[str, ...]) -> None:
        self.turns: list[ProtocolMessage] = []
        self.results: dict[str | None, list[int]] = {}  # tool_call_id -> its results
        self.asked: set[str | None] = set()  # call ids asked for so far
        self.answered: dict[str | None, str] = {}  # call id -> key of its first result
        self.systems: list[int] = []  # indexes of system messages
        # assistant messages whose findings a later message may still change
        self.open: dict[str, list[int]] = {p: [] for p in providers}
        self.alt_last: ProtocolMessage | None = None  # (Anthropic turns) the last turn kept
        # before the last message


class ProtocolScan:
    """The protocol findings of a run's model calls, checked in order.

    A loop sends the model the same conversation again with a few messages more:
    when a call's messages extend the previous call's, only the new messages,
    and the few earlier ones whose findings they can still change (a call whose
    results may yet come), are looked at; any other conversation is checked
    whole. The findings are those of checking every call whole; a finding the
    caller has already seen (same rule, provider and messages) may or may not be
    given again.

    Example:
        ```python
        scan = ProtocolScan(run.id, ("openai", "anthropic"))
        for mc in model_inputs(run):
            findings = scan.check(mc)
        ```
    """

    def __init__(self, run_id: str, providers: Iterable[str]) -> None:
        self.run_id = run_id
        self.providers = tuple(providers)
        self.seen = _Seen(self.providers)

    def check(self, mc: ModelInput) -> list[Finding]:
        turns = mc.turns
        st = self.seen
        n = len(st.turns)
        if not (n <= len(turns) and turns[:n] == st.turns):
            st = self.seen = _Seen(self.providers)
            n = 0
        ctx = _Ctx(self.run_id, mc)
        new_calls = _index(st, turns, n)
        seen_by_results = _results_seen(st, turns, n)
        for provider in self.providers:
            still = []
            for i in sorted({*st.open[provider], *new_calls}):
                if not _results(ctx, provider, turns, i, st.results):
                    still.append(i)
            st.open[provider] = still
            _orphans_and_duplicates(ctx, provider, seen_by_results)
        if "anthropic" in self.providers:
            _anthropic_alternation(ctx, st, turns, max(n - 1, 0))
            _anthropic_system(ctx, st)
        if "ollama" in self.providers:
            for i in new_calls:
                _ollama_unlinked(ctx, turns, i)
        for t in turns[n:]:
            if t.empty:
                ctx.add("empty-assistant-message", "warning", None,
                        "An assistant message with no text and no tool calls was sent back to the "
                        "model. Anthropic rejects empty non-final assistant messages "
                        "(langchain-anthropic silently drops them); OpenAI and Ollama accept it, "
                        "and the model then sees a turn where it said nothing.", [t.key])
        st.turns = turns
        return ctx.out


def _index(st: _Seen, turns: list[ProtocolMessage], start: int) -> list[int]:
    """Note the messages from ``start`` on; return the indexes of assistant messages."""
    calls = []
    for k in range(start, len(turns)):
        t = turns[k]
        if t.role == "tool":
            st.results.setdefault(t.tool_call_id, []).append(k)
        elif t.role == "assistant":
            calls.append(k)
        elif t.role == "system":
            st.systems.append(k)
    return calls


def _results(ctx: _Ctx, provider: str, turns: list[ProtocolMessage], i: int,
             results: dict[str | None, list[int]]) -> bool:
    """Dangling calls, results out of place, tool_result not first (Anthropic), for
    the assistant message ``i``. Returns whether these findings are final: no
    message appended to ``turns`` can change them."""
    t = turns[i]
    name = _NAMES[provider]
    calls = [c for c in t.calls if _sends(provider, c)]
    if not calls:
        return True
    ids = {c.id for c in calls}
    n = len(turns)
    # Where the provider wants the results: the block right after the call.
    j = i + 1
    block: list[int] = []
    text_before_result: list[int] = []
    if provider == "anthropic":
        while j < n and (turns[j].role in ("user", "tool", "system")
                         or (turns[j].empty and j < n - 1)):
            if turns[j].role in ("user", "tool"):
                block.append(j)
            j += 1
        final = j < n - 1 or (j == n - 1 and not turns[j].empty)
    else:
        while j < n and turns[j].role == "tool":
            block.append(j)
            j += 1
        final = j < n
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
        final = False  # (its result may still come)
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
    return final


def _results_seen(st: _Seen, turns: list[ProtocolMessage], start: int) -> list[tuple[str, str | None,
                                                                          list[str]]]:
    """The results from ``start`` on that answer no earlier call, or a call already
    answered: ("orphan" | "duplicate", call id, message keys), in order."""
    out: list[tuple[str, str | None, list[str]]] = []
    asked, answered = st.asked, st.answered
    for k in range(start, len(turns)):
        t = turns[k]
        if t.role == "assistant":
            asked.update(c.id for c in t.calls if c.id is not None)
            continue
        if t.role != "tool":
            continue
        tcid = t.tool_call_id
        if tcid in answered:
            out.append(("duplicate", tcid, [answered[tcid], t.key]))
            continue
        answered[tcid] = t.key
        if tcid is None or tcid not in asked:
            out.append(("orphan", tcid, [t.key]))
    return out


def _orphans_and_duplicates(ctx: _Ctx, provider: str,
                            seen: list[tuple[str, str | None, list[str]]]) -> None:
    sev = "warning" if provider == "ollama" else "error"
    for kind, tcid, keys in seen:
        if kind == "duplicate":
            text = {"openai": "OpenAI expects exactly one tool message per tool_call_id.",
                    "anthropic": "Anthropic expects exactly one tool_result per tool_use id.",
                    "ollama": "Ollama links results by order, so an extra result shifts every "
                              "later pairing."}[provider]
            ctx.add("duplicate-tool-result", sev, provider,
                    f"{text} Here the call {tcid} is answered twice.", keys)
        else:
            text = {"openai": "OpenAI rejects a tool message that does not answer a tool call "
                              "of a preceding assistant message (400).",
                    "anthropic": "Anthropic rejects a tool_result whose tool_use_id matches no "
                                 "tool_use in the previous assistant turn (400).",
                    "ollama": "Ollama accepts it, but links results by order, so an unasked "
                              "result is paired with the wrong call or none."}[provider]
            ctx.add("orphan-tool-result", sev, provider,
                    f"{text} Here the result for call {tcid} answers no earlier call.", keys)


def _anthropic_alternation(ctx: _Ctx, st: _Seen, turns: list[ProtocolMessage], start: int) -> None:
    """Two assistant turns in a row, as langchain-anthropic sends the conversation:
    tool and human messages merged into user turns, system messages and empty
    non-final assistant messages taken out. From ``start`` on (what was kept
    before it is in ``st``: only the last message's place can change)."""
    last = st.alt_last if start else None
    n = len(turns)
    for k in range(start, n):
        t = turns[k]
        if k == n - 1:
            st.alt_last = last
        if t.role == "system" or (t.empty and k < n - 1):
            continue
        if (t.role == "assistant" and last is not None and last.role == "assistant"
                and not any(_sends("anthropic", c) for c in last.calls)):
            # (an assistant turn with calls right before: a dangling call, reported already)
            ctx.add("consecutive-same-role", "warning", "anthropic",
                    "Anthropic's Messages API expects user and assistant turns to alternate; "
                    "here two assistant messages follow each other, which the API merges into "
                    "one turn (or rejects), so the model reads them as a single reply.",
                    [last.key, t.key])
        last = t


def _anthropic_system(ctx: _Ctx, st: _Seen) -> None:
    turns = ctx.mc.turns
    prior_system = ctx.mc.has_system_prompt
    blocks: list[list[str]] = []
    for i in st.systems:
        t = turns[i]
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


def _ollama_unlinked(ctx: _Ctx, turns: list[ProtocolMessage], i: int) -> None:
    """Several calls in the assistant message ``i``: linked to results by order only.
    (Its finding names that message alone: the first one given is the one kept.)"""
    t = turns[i]
    calls = [c for c in t.calls if c.valid]
    if len(calls) < 2:
        return
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
            f"{len(calls)} calls in one turn ({_ids(calls)}) on Ollama: the server sends an id "
            "per call (since 0.12.10), but the ollama Python client (0.6.x, under ChatOllama) "
            "drops it, so only the order of the results links each to its call." + note,
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
