"""Notes on the replay page: a person's text and tags on the run or on the current step
(``tracer.db.notes``), read and written in the step inspector.

The notes on this step and on the run are listed (``st.text``: a note is untrusted text,
never markdown or HTML); a form writes a new one through ``write_note`` (the app's
one write: the file opened for writing for that row only). A fork or replay shows the
notes of the run it came from. The notes are also marks on the replayer's tick strip
(``note_markers``) and, on the Presenter page, the current step's notes under the
replay (``render_presenter_notes``).
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

from ...data import notes as notebook
from ...data.forks import origin_of
from ...data.notes import Note, write_note
from ...data.run_view import RunView
from ...data.store import LooptraceError
from ...kit import state
from ...kit.safe import md_escape

ON_STEP = "this step"
ON_RUN = "the whole run"


def note_line(n: Note) -> str:
    """One note's heading: where, its tags, its author."""
    where = f"step {n.step}" if n.step is not None else "the run"
    tags = f" [{', '.join(n.tags)}]" if n.tags else ""
    who = f" by {n.author}" if n.author else ""
    return f"{where}{tags}{who}"


def note_markers(notes: list[Note]) -> list[dict[str, Any]]:
    """The notes on steps as marks on the replayer's tick strip (0-based steps)."""
    return [{"step": n.step - 1, "kind": "note"} for n in notes if n.step is not None]


def split_tags(text: str) -> list[str]:
    """Tags as typed: separated by commas or spaces."""
    return [t for t in re.split(r"[,\s]+", text or "") if t]


def _show(notes: list[Note]) -> None:
    for n in notes:
        st.text(f"{note_line(n)}:\n{n.text}")


def render_notes_box(path: str, view: RunView, index: int) -> None:
    """The notes at step ``index`` (0-based) and on the run, and the box that writes one."""
    run = view.replay.run
    notes = notebook.notes(path, run.id)
    here = [n for n in notes if n.step == index + 1]
    on_run = [n for n in notes if n.step is None]
    elsewhere = len(notes) - len(here) - len(on_run)
    with st.container(key="notes"):
        st.caption(f"Notes: {len(here)} on this step, {len(on_run)} on the run"
                   + (f", {elsewhere} on other steps (dots on the tick strip)" if elsewhere else ""))
        _show([*on_run, *here])
        origin = origin_of(run.metadata)
        if origin is not None:
            source = notebook.notes(path, origin[0])
            st.text(f"Notes on the source run {origin[0][:12]}: {len(source)}")
            if source:
                with st.expander("The source run's notes"):
                    _show(source)
        said = st.session_state.pop(state.NOTE_SAID, None)
        if isinstance(said, tuple) and said[0] == "error":
            st.error(md_escape(said[1]), icon=":material/error:")
        elif isinstance(said, tuple):
            st.success(md_escape(said[1]), icon=":material/check:")
        with st.form("note_form", clear_on_submit=True, border=False):
            st.text_area("Add a note", key=state.NOTE_TEXT, height=80,
                         placeholder="what happens here, what to look at")
            cols = st.columns([3, 2], vertical_alignment="bottom")
            cols[0].text_input("Tags", key=state.NOTE_TAGS,
                               placeholder="bug, good-example, workshop")
            cols[1].radio("On", [ON_STEP, ON_RUN], key=state.NOTE_ON, horizontal=True)
            # (written in the callback, before the page is drawn again: the list above
            # and the tick strip show the new note at once)
            st.form_submit_button("Add note", icon=":material/sticky_note_2:",
                                  on_click=_write, args=(path, run.id, index + 1))


def _write(path: str, run_id: str, step: int) -> None:
    text = str(st.session_state.get(state.NOTE_TEXT) or "")
    tags = str(st.session_state.get(state.NOTE_TAGS) or "")
    on_step = st.session_state.get(state.NOTE_ON, ON_STEP) == ON_STEP
    try:
        note = write_note(path, run_id, text, step=step if on_step else None,
                               tags=split_tags(tags))
    except LooptraceError as exc:
        st.session_state[state.NOTE_SAID] = ("error", str(exc))
        return
    st.session_state[state.NOTE_SAID] = ("ok", f"Note {note.id} added on {note_line(note)}.")


def render_presenter_notes(path: str, view: RunView, index: int) -> None:
    """On the Presenter page: the notes on the current step (a workshop's talking points)."""
    here = [n for n in notebook.notes(path, view.replay.run.id) if n.step == index + 1]
    if here:
        with st.container(key="presenter_notes", border=True):
            for n in here:
                st.text(n.text)
