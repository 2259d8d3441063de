"""The store's tables, declared once: the schema version, the columns of every table
and the indexes, with no engine (``tracer.db.schema`` makes them in a SQLite file,
``tracer.db.pg`` in a PostgreSQL store; both import them from here, and neither imports
the other for them)."""

from __future__ import annotations

SCHEMA_VERSION = 9
# Schema history (every older file is migrated in place when opened for writing;
# read-only, it is read as it is):
#   1  first release
#   2  messages.version: a row may be a later version of a message (same key);
#      messages.key: the key the writer gave it (the read side uses the same)
#   3  run_stats, run_checks, findings, search_runs, search_pending, messages_fts
#      (derived: see above);
#      indexes for the paged runs list; new files vacuum incrementally
#   4  state, state_values: every state key, as versions (tracer.record.state_keys)
#   5  search_pending(id, run_id, text): a message waiting for the search index names
#      its run, and gets its rowid in the index when the index takes it (the trigger on
#      messages is one insert: three fewer statements and pages per message written)
#   6  debug_breaks, debug_pauses: the debugger's channel (tracer.debug); notes: a
#      person's notes on a run or one of its steps; runs' tokens NULL where no model
#      call reported usage ("not reported"; schema 5 stored 0); run_stats.errors counts
#      errors, each once (tracer.read.errors), not error events
#   7  debug_breaks.owner, debug_breaks.owner_only, debug_pauses.owner: the
#      ``looptrace debug`` process a breakpoint or a pause belongs to ("PID@START"; a
#      breakpoint it armed applies only while it lives)
#   8  run_stats.errors counted again: a person's rejection (human in the loop) is a
#      decision, not an error (tracer.db.summaries.recount_errors); nothing added
#   9  runs.writer: the writer that records a running run into a PostgreSQL store
#      holds an advisory lock of that number while it lives (tracer.db.liveness);
#      PostgreSQL also gets idx_runs_running (runs(writer) WHERE status = 'running')
APP_ID = "looptrace"

# ``handoff``: the run handed the conversation to its parent graph (a ``Command`` to
# ``Command.PARENT``); ``stopped``: its caller stopped reading its stream. Neither failed.
RUN_STATUSES = ("running", "completed", "error", "interrupted", "handoff", "stopped")

RUNS_COLUMNS = {
    "id": str,
    "parent_id": str,
    "parent_tool_call_id": str,
    "name": str,
    "thread_id": str,
    "agent_name": str,
    "status": str,
    "started_at": float,
    "ended_at": float,
    "error": str,
    "model": str,
    "provider": str,
    "input_tokens": int,
    "output_tokens": int,
    "total_tokens": int,
    "source": str,  # "middleware", "callbacks", "import"
    "pid": int,
    "metadata": str,  # JSON
    # PostgreSQL: the lock its writer holds while it lives (tracer.db.liveness); NULL
    # in a SQLite file (a pid tells a dead process there: tracer.db.processes)
    "writer": int,
}

EVENTS_COLUMNS = {
    "run_id": str,
    "seq": int,
    "ts": float,
    "hook": str,
    "phase": str,
    "duration_ms": float,
    "middleware": str,
    "lap": int,
    "tool_call_id": str,
    "task": str,
    "payload": str,  # JSON
}

MESSAGES_COLUMNS = {
    "run_id": str,
    "position": int,  # index in the conversation (system prompt excluded)
    "seq": int,  # the event at which it first appeared
    "msg_id": str,
    "type": str,  # human / ai / tool / system
    "tool_call_id": str,
    "text": str,  # plain text, for search
    "data": str,  # JSON: {"type": ..., "data": ...} as messages_to_dict writes it
    "version": int,  # 0/NULL: the message as it first appeared; 1: a later version
    "key": str,  # the message's key as the writer knew it (tracer.vocab.records.message_key)
}

WIRE_COLUMNS = {
    "id": int,
    "run_id": str,
    "seq": int,  # the model-call event it belongs to (may be NULL)
    "ts": float,
    "provider": str,
    "method": str,
    "url": str,
    "request_headers": str,
    "request_body": str,
    "status": int,
    "response_headers": str,
    "response_body": str,
    "chunks": str,  # JSON list of raw streamed chunks
    "error": str,
    "duration_ms": float,
}


STATE_COLUMNS: dict[str, type] = {
    "run_id": str,
    "seq": int,  # the event at which the tracer saw the key take this value
    "key": str,  # the state key
    "hash": str,  # its value in state_values; NULL: the key left the state
    "by": str,  # the graph node or hook that changed it, when known
    "tool_call_id": str,  # the tool call whose Command(update=...) changed it
}

STATE_VALUES_COLUMNS: dict[str, type] = {
    "run_id": str,
    "hash": str,  # tracer.db.state_rows.value_hash of ``data``
    "data": str,  # JSON (redacted; type and repr for what JSON cannot carry)
}


# -- the debugger's channel and notes (schema 6) -----------------------------------
# A breakpoint armed from outside the agent's process (the app, the CLI, MCP): the
# paused process reads them. ``run_id`` / ``thread_id``: only that run, that thread's
# runs (NULL: every run recorded into this file).
DEBUG_BREAKS_COLUMNS: dict[str, type] = {
    "id": int,
    "spec": str,  # tracer.debug.breakpoints syntax: "model:2", "tool:search", ...
    "run_id": str,
    "thread_id": str,
    "source": str,  # "code", "cli", "app", "mcp"
    "created_at": float,
    "cleared_at": float,  # NULL while armed
    # "PID@START": the ``looptrace debug`` process that armed it (tracer.debug.owner);
    # it applies only while that process lives; NULL: until cleared
    "owner": str,
    "owner_only": int,  # 1: only for the agents that process started
}

# One pause of a running agent: what is pending, then what the debugger answered.
DEBUG_PAUSES_COLUMNS: dict[str, type] = {
    "id": int,
    "run_id": str,
    "seq": int,  # the run's ``paused`` event
    "hook": str,  # e.g. "wrap_tool_call"
    "at": str,  # "before" / "after" (the call), "fire" (a node hook)
    "reason": str,  # the breakpoint that hit, as written
    "pending": str,  # JSON: the request, the tool call or the reply about to go on
    "pid": int,
    "paused_at": float,
    "command": str,  # NULL while paused; continue / step / lap / run / abort
    "edit": str,  # JSON: the change to make before going on (tracer.vocab.edits)
    "commanded_at": float,
    "resumed_at": float,
    "outcome": str,  # continued / edited / aborted / timeout / rejected / released / cancelled
    "owner": str,  # "PID@START": the ``looptrace debug`` that started the agent, if one did
}

NOTES_COLUMNS: dict[str, type] = {
    "id": int,
    "run_id": str,
    "seq": int,  # the step's event (NULL: a note on the whole run)
    "text": str,
    "tags": str,  # JSON list of strings
    "author": str,
    "created_at": float,
}


# -- derived tables (schema 3) ----------------------------------------------------
RUN_STATS_COLUMNS = {
    "run_id": str,
    "laps": int,
    "model_calls": int,
    "tool_calls": int,  # tool calls entered, and tool results seen from outside
    "errors": int,  # errors, each once (tracer.read.errors; schema 5: error events)
    "events": int,
    "gen": int,  # 1, then one more at each refresh (stored findings name the gen they saw)
}

RUN_CHECKS_COLUMNS = {
    "run_id": str,
    "rules": int,  # tracer.checks.RULES_VERSION they were found with
    "gen": int,  # run_stats.gen of the run they were found on
    "errors": int,
    "warnings": int,
    "infos": int,
}

FINDINGS_COLUMNS = {
    "run_id": str,
    "n": int,  # order within the run
    "rule": str,
    "severity": str,
    "provider": str,
    "message": str,
    "seq": int,
    "message_keys": str,  # JSON list
}

SEARCH_RUNS_COLUMNS = {
    "n": int,  # the run's block of messages_fts rowids: n << 32 and up
    "run_id": str,
    "messages": int,  # messages indexed so far (the next rowid in the block)
}

SEARCH_PENDING_COLUMNS = {
    "id": int,  # the order it was written in
    "run_id": str,
    "text": str,
}

# Indexes: (table, columns). The runs list pages by start time, top-level runs or a
# run's subagent runs (``parent_id``), newest first, with the id to break ties.
INDEXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("runs", ("parent_id", "started_at", "id")),
    ("runs", ("started_at", "id")),
    ("runs", ("thread_id", "status")),
    ("wire", ("run_id", "seq")),
    ("search_runs", ("run_id",)),
)
# (schema 2 had runs(parent_id): the first index above serves what it did)
DROPPED_INDEXES = ("idx_runs_parent_id",)
