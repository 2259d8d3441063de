"""Conversations: the runs of one thread id as the turns of a conversation.

``?thread=<thread id>`` opens one thread (without it, the one active last; a picker
lists them all). The thread's totals (turns, tokens, cost, interrupts, resumes), the
questions asked again across turns (a check of the thread, apart from each run's
findings), then each turn in order, in a box of its own (``turn_<N>``): its run (a
link to its replay), status, tokens and cost, what the person asked, the interrupts
and the decisions that resumed it, the answer it added. Trace text is untrusted: it
is shown with ``st.text`` / ``st.code`` only.
"""

from __future__ import annotations

import datetime as dt

import streamlit as st

from ... import navigation
from ...data import threads as conversations
from ...data.store import LooptraceError, open_db, show_error
from ...data.threads import Thread, ThreadSummary, Turn
from ...kit import state
from ...kit.safe import md_escape


def threads_page() -> None:
    st.title("Conversations")
    path = open_db()
    try:
        rows = conversations.threads(path)
    except LooptraceError as exc:
        show_error(exc)
    if not rows:
        st.info("No conversations: no run recorded a thread id (runs invoked with "
                "`config={\"configurable\": {\"thread_id\": ...}}` do).",
                icon=":material/info:")
        return
    ids = [t.thread_id for t in rows]
    by_id = {t.thread_id: t for t in rows}
    wanted = st.query_params.get("thread")
    if wanted is not None and wanted not in by_id:
        try:  # (a thread beyond the listed ones)
            conversations.thread(path, wanted)
            ids.append(wanted)
        except LooptraceError as exc:
            st.error(md_escape(str(exc)), icon=":material/error:")
            wanted = None
    if wanted is not None and st.session_state.get(state.THREAD) != wanted:
        st.session_state[state.THREAD] = wanted
    if st.session_state.get(state.THREAD) not in ids:
        st.session_state[state.THREAD] = ids[0]
    chosen = st.selectbox("Thread", ids, key=state.THREAD,
                          format_func=lambda t: _label(t, by_id.get(t)))
    st.query_params["thread"] = chosen
    try:
        thread = conversations.thread(path, chosen)
    except LooptraceError as exc:
        show_error(exc)
    show_thread(thread)


def _label(thread_id: str, row: ThreadSummary | None) -> str:
    if row is None:
        return thread_id
    return f"{thread_id} · {row.turns} turn{'s' if row.turns != 1 else ''} · {_when(row.last_at)}"


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "–"


def _tokens(n: int | None) -> str:
    return "not reported" if n is None else f"{n:,}"


def show_thread(thread: Thread) -> None:
    """The thread's totals, its findings across turns, and its turns in order."""
    with st.container(key="thread_totals"):
        cols = st.columns(5)
        cols[0].metric("Turns", len(thread.turns))
        cols[1].metric("Tokens", _tokens(thread.tokens))
        cols[2].metric("Cost", thread.cost.short())
        cols[3].metric("Interrupts", thread.interrupts)
        cols[4].metric("Resumes", thread.resumes)
    if thread.repeats:
        with st.container(border=True, key="thread_repeats"):
            st.markdown("**Across turns**")
            for r in thread.repeats:
                st.text(r.text_line())
    for turn in thread.turns:
        _turn(turn)


def _turn(turn: Turn) -> None:
    r = turn.run
    with st.container(border=True, key=f"turn_{turn.number}"):
        head = st.columns([5, 2], vertical_alignment="center")
        kind = " · resumed" if turn.resumed_only else ""
        head[0].markdown(
            f"**Turn {turn.number}**{kind} · {md_escape(r.status)} · {_when(r.started_at)} · "
            f"tokens {md_escape(_tokens(turn.tokens))} · cost {md_escape(turn.cost.short())}"
            + (f" · {turn.subagent_runs} subagent run"
               f"{'s' if turn.subagent_runs != 1 else ''}" if turn.subagent_runs else ""))
        head[1].page_link(navigation.page("replay"), label=f"Replay turn {turn.number} · {r.id[:12]}",
                          icon=":material/play_circle:", query_params={"run": r.id})
        for q in turn.asked:
            st.caption("Asked")
            st.text(q)
        for i in turn.interrupts:
            st.caption("Interrupted: asked a person to decide")
            st.code("\n".join(i.asks) or "(an interrupt)", language=None, wrap_lines=True)
        for res in turn.resumes:
            how = " (read from the tool calls that ran: no resume value recorded)" \
                if res.inferred else ""
            st.caption(f"Resumed with{how}")
            st.code("\n".join(res.decisions) if res.decisions is not None
                    else "(no decision recorded)", language=None, wrap_lines=True)
        if turn.answer is not None:
            st.caption("Answered")
            st.text(turn.answer)
        elif r.status == "interrupted":
            st.caption("Paused: no answer yet")
        kinds = [m.type for m in turn.added]
        st.caption("Added to the conversation: " + (", ".join(
            f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds)) or "nothing"))
