"""Check recorded runs: provider protocol rules and loop findings.

``check_run(run)`` returns ``Finding`` records; ``looptrace check`` prints them
and exits 1 when any is an error, so it can gate a CI job over recorded runs.

Example:
    ```python
    from tracer.checks.run import check_run
    from tracer.read.loader import TraceDB

    with TraceDB("looptrace.db") as db:
        for f in check_run(db.run(db.runs()[0].id), providers=("openai",)):
            print(f.severity, f.rule, f.message)
    ```

Protocol rules are checked at every model call, on the message list the model
received, for each provider asked for; a broken history is reported once, at
the first model call that carries it. Loop findings look at the whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tracer.db.summaries import chunks as _chunks
from tracer.errors import InvalidOption
from tracer.read.loader import Run, TraceDB
from tracer.read.steps import Replay, build_replay
from tracer.vocab.provider_names import PROVIDERS

from . import saved as findings_store
from .base import SEVERITIES, Finding, Thresholds, health, model_inputs
from .captured import check_wire
from .handling import runaway, swallowed_errors
from .loops import endings, model_replies, repeated_calls, repeated_failures, token_jumps
from .protocol import ProtocolScan, check_model_call, collapse_ollama_order
from .whole_state import state_findings

OnRun = Callable[[str, list[Finding]], None]
"""Called as ``on_run(run_id, findings)`` as each run's findings are known."""

__all__ = ["PROVIDERS", "RULES", "Finding", "Thresholds", "check_db", "check_replay",
           "check_run", "findings_for", "format_text", "health", "step_numbers", "where"]


# Every rule id, with the provider(s) it can name and what it means.
RULES: dict[str, str] = {
    "dangling-tool-call": "an AI tool call not answered before the next model call",
    "orphan-tool-result": "a tool result whose tool_call_id matches no earlier call",
    "duplicate-tool-result": "a second result for a call already answered",
    "result-not-after-call": "a result not immediately after the AI message that asked for it",
    "tool-result-not-first": "Anthropic: a user message ahead of the tool_result in its turn",
    "consecutive-same-role": "Anthropic: two assistant turns in a row",
    "system-message-position": "Anthropic: a system message in the middle of the conversation",
    "ollama-unlinked-calls": "Ollama: several calls in one turn, linked to results by order only",
    "empty-assistant-message": "an assistant message with no text and no tool calls sent back",
    "invalid-tool-call": "a tool call whose arguments could not be parsed",
    "unknown-tool": "a call to a tool that was not offered",
    "repeated-tool-call": "the same tool with the same or nearly the same arguments, repeatedly",
    "repeated-tool-error": "a tool failing repeatedly in a row",
    "repeated-empty-result": "a tool returning an empty result repeatedly in a row",
    "recursion-limit": "LangGraph's recursion limit ended the run",
    "loop-bound-hit": "the run ended while the model still asked for tools",
    "no-final-answer": "the run ended without a final assistant answer",
    "token-jump": "a lap using far more tokens than the lap before",
    "swallowed-tool-error": "a tool raised and the loop went on without telling the model",
    "runaway-loop": "nearly the same call again and again until something outside failed the run",
    "todo-left-in-progress": "the agent ended with a step of its plan still in_progress",
    "file-never-read": "a file the agent wrote that nothing read afterwards",
    "structured-response-missing": "a response_format was set and the run ended without one",
    "jump-key-never-changed": "a key a middleware kept writing never changed, in a run that "
                              "never ended by itself",
}

_SEV_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


def on_ollama(run: Run, wire: Sequence[dict[str, Any]] | None = None) -> bool:
    """The run talked to Ollama: its model's provider, the provider its traffic was
    seen on, or a captured exchange says so."""
    meta = run.metadata if isinstance(run.metadata, dict) else {}
    return "ollama" in (run.summary.provider, meta.get("provider")) or any(
        w.get("provider") == "ollama" for w in wire or ())


def check_run(run: Run, *, providers: Iterable[str] = PROVIDERS,
              thresholds: Thresholds | None = None,
              wire: Sequence[dict[str, Any]] | None = None) -> list[Finding]:
    """Every finding for ``run``, ordered by step (then severity).

    ``wire``: the run's captured provider exchanges (``TraceDB.wire(run.id)``);
    their request bodies are checked too, for their own provider.
    """
    return check_replay(build_replay(run), providers=providers, thresholds=thresholds,
                        wire=wire)


def check_replay(replay: Replay, *, providers: Iterable[str] = PROVIDERS,
                 thresholds: Thresholds | None = None,
                 wire: Sequence[dict[str, Any]] | None = None) -> list[Finding]:
    """``check_run`` on a run already replayed: the app's opened run is replayed once,
    and its checks, floor plan and replayer JSON share that replay.

    Args:
        replay: the run's step model (``tracer.read.steps.build_replay``).
        providers: the providers whose protocol rules apply (default: all).
        thresholds: when a pattern across the run becomes a loop finding.
        wire: the run's captured provider exchanges (``TraceDB.wire(run.id)``).

    Returns:
        Every finding, ordered by step (then severity).
    """
    run = replay.run
    provs = tuple(dict.fromkeys(providers))
    unknown = [p for p in provs if p not in PROVIDERS]
    if unknown:
        msg = f"unknown provider {unknown[0]!r} (choose from {', '.join(PROVIDERS)})"
        raise InvalidOption(msg)
    th = thresholds or Thresholds()
    calls = model_inputs(run, replay)
    found: list[Finding] = []
    seen: set[tuple[str, str | None, tuple[str, ...]]] = set()
    scan = ProtocolScan(run.id, provs)  # (each call's conversation checked once)
    for mc in calls:
        before: set[tuple[str, str | None, tuple[str, ...]]] | None = None
        for f in scan.check(mc):
            key = (f.rule, f.provider, f.message_keys)
            if mc.sent_seq is not None and mc.entered is not None:
                # (a request changed after its enter: what was not true of it then is
                # first true where the changed request shows)
                if before is None:
                    before = {(g.rule, g.provider, g.message_keys) for g in check_model_call(
                        run.id, replace(mc, turns=mc.entered), provs)}
                if key not in before:
                    f = replace(f, seq=mc.sent_seq)
            if key not in seen:
                seen.add(key)
                found.append(f)
    found = collapse_ollama_order(found)
    if not on_ollama(run, wire):  # (a warning about Ollama's client, for Ollama runs only)
        found = [f for f in found if f.rule != "ollama-unlinked-calls"]
    if wire:
        found += check_wire(run, wire, provs, found, calls)
    found += model_replies(run, calls)
    found += repeated_calls(run, th)
    found += repeated_failures(run, th)
    found += endings(run, replay)
    found += token_jumps(run, th)
    found += swallowed_errors(run)
    found += runaway(run, th)
    found += state_findings(run, th)
    found.sort(key=lambda f: (f.seq if f.seq is not None else 1 << 60,
                              _SEV_ORDER.get(f.severity, 9), f.rule, f.provider or ""))
    return found


def check_db(db: str | Path | TraceDB, run_ids: Sequence[str] = (), *,
             providers: Iterable[str] = PROVIDERS,
             thresholds: Thresholds | None = None, keep: bool = True,
             on_run: OnRun | None = None) -> dict[str, list[Finding]]:
    """Findings per run for ``run_ids`` (ids or unique prefixes), or for every run
    (oldest first). With the default thresholds, findings kept from an earlier
    check are read back, and new ones kept (``keep``; ``tracer.checks.saved``).
    ``on_run(run_id, findings)`` is called as each run's findings are known."""
    own = not isinstance(db, TraceDB)
    tdb = TraceDB(db) if not isinstance(db, TraceDB) else db
    assert isinstance(tdb, TraceDB)
    try:
        provs = tuple(dict.fromkeys(providers))
        unknown = [p for p in provs if p not in PROVIDERS]
        if unknown:
            msg = f"unknown provider {unknown[0]!r} (choose from {', '.join(PROVIDERS)})"
            raise InvalidOption(msg)
        ids = [tdb.resolve(r) for r in run_ids] if run_ids else [
            str(r[0]) for r in tdb.query("SELECT id FROM runs ORDER BY started_at, id")]
        if thresholds is None or thresholds == Thresholds():
            return findings_for(tdb, ids, providers=provs, keep=keep, on_run=on_run)
        out = {}
        for rid in ids:
            out[rid] = check_run(tdb.run(rid), providers=provs, thresholds=thresholds,
                                 wire=tdb.wire(rid))
            if on_run is not None:
                on_run(rid, out[rid])
        return out
    finally:
        if own:
            tdb.close()


def findings_for(db: TraceDB, run_ids: Sequence[str], *,
                 providers: Sequence[str] = PROVIDERS, keep: bool = True,
                 on_run: OnRun | None = None,
                 replays: Mapping[str, Replay] | None = None) -> dict[str, list[Finding]]:
    """Findings of each of ``run_ids`` for ``providers``: kept ones where valid
    (``tracer.checks.saved``); the others found now, and kept, with ``keep``, for
    runs that have ended (through the file's one writer).

    Args:
        db: the open database.
        run_ids: full run ids.
        providers: whose protocol rules apply (kept findings are filtered to them).
        keep: keep what is found now (in a file of the current schema this process
            can write to).
        on_run: called as ``on_run(run_id, findings)`` as each run's findings are
            known, in the order of ``run_ids``.
        replays: runs already replayed, by id: checked as they are (``check_replay``)
            instead of being loaded and replayed again.

    Returns:
        The findings of each run, by run id.
    """
    provs = tuple(dict.fromkeys(providers))
    out: dict[str, list[Finding]] = {}
    keeping = keep and db.derived
    for part in _chunks(list(run_ids), findings_store.SAVE_EVERY):
        have = findings_store.stored(db, part)
        missing = [rid for rid in part if rid not in have]
        gens = findings_store.gens(db, missing) if keeping and missing else {}
        new: list[tuple[str, int, list[Finding]]] = []
        for rid in part:
            found = have.get(rid)
            if found is None:
                done = replays.get(rid) if replays else None
                found = (check_replay(done, wire=db.wire(rid)) if done is not None
                         else check_run(db.run(rid), wire=db.wire(rid)))
                if rid in gens:
                    new.append((rid, gens[rid], found))
            out[rid] = findings_store.only(found, provs) if provs != PROVIDERS else found
            if on_run is not None:
                on_run(rid, out[rid])
        if new:
            findings_store.keep(db.path, new)
    return out


StepNumbers = Mapping[tuple[str, int], int]  # (run id, seq) -> step, counted from 1


def step_numbers(db: str | Path | TraceDB,
                 results: Mapping[str, Sequence[Finding]]) -> dict[tuple[str, int], int]:
    """The step (counted from 1) of every finding of ``results`` that has one: what a
    person reads, and opens with ``looptrace show RUN --step N`` (``seq`` is the
    database's)."""
    own = not isinstance(db, TraceDB)
    tdb = TraceDB(db) if not isinstance(db, TraceDB) else db
    try:
        out: dict[tuple[str, int], int] = {}
        for rid, found in results.items():
            seqs = [f.seq for f in found if f.seq is not None]
            for seq, step in tdb.step_numbers(rid, seqs).items():
                out[(rid, seq)] = step
        return out
    finally:
        if own:
            tdb.close()


def where(f: Finding, steps: StepNumbers | None) -> str:
    """Where a finding is, as a person reads it: ``step N``, or ``the run``."""
    if f.seq is None:
        return "the run"
    step = steps.get((f.run_id, f.seq)) if steps is not None else None
    return f"step {step}" if step is not None else f"seq {f.seq}"


def format_text(results: dict[str, list[Finding]], steps: StepNumbers | None = None,
                names: Mapping[str, str | None] | None = None) -> str:
    """``check_db``'s findings as ``looptrace check`` prints them: per run (its id's 12
    characters and its name, from ``names``) its health and each finding at its step
    (``step_numbers``), then the totals (lines ending in a newline; "no runs" for none)."""
    if not results:
        return "no runs\n"
    lines = []
    total = {s: 0 for s in SEVERITIES}
    for rid, findings in results.items():
        name = (names or {}).get(rid)
        lines.append(f"run {rid[:12]}{' ' + name if name else ''}: {health(findings)}")
        for f in findings:
            total[f.severity] = total.get(f.severity, 0) + 1
            lines.append(f"  {f.severity.upper():7} {f.rule} [{f.provider or 'all'}] "
                         f"at {where(f, steps)}")
            lines.append(f"          {f.message}")
            if f.message_keys:
                lines.append(f"          messages: {', '.join(f.message_keys)}")
    lines.append(f"{len(results)} run(s) checked: {total['error']} error(s), "
                 f"{total['warning']} warning(s), {total['info']} info")
    return "\n".join(lines) + "\n"
