"""The Wire pane: the current model call as OpenAI, Anthropic and Ollama send it.

``render_wire_pane(db_path, replay, step_index)`` follows the replay: it shows
the model call at (or before) the current step, each provider's request body
side by side, marked *captured* (recorded on the wire) or *rendered* (built
offline by that adapter's own request builder), with the annotations printed
on the JSON itself, plus the responses and a table of the differences. The
view is computed by ``tracer.wire.view`` (pure); this module only draws it,
with ``st.code(language=None)`` / ``st.text`` / ``st.dataframe``: bodies are
untrusted text, never markdown.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import streamlit as st

from ..data import wire
from ..data.steps import Replay, plural
from ..data.store import db_stamp
from ..kit.safe import md_escape

if TYPE_CHECKING:
    from ..data.wire import CallView, ProviderBody

TITLES = {"langchain": "LangChain", "openai": "OpenAI", "anthropic": "Anthropic",
          "ollama": "Ollama"}
# (the wire's names are read on first use, ``wire.X``: this module is imported with the
# replay page, and ``tracer.wire.view`` brings LangChain's adapters with it, seconds)


def _badges() -> dict[str, tuple[str, str, str]]:
    return {wire.CAPTURED: ("captured", "green", ":material/sensors:"),
            wire.RENDERED: ("rendered", "blue", ":material/build:"),
            wire.RECORDED: ("recorded", "violet", ":material/data_object:")}


def _columns() -> tuple[str, ...]:
    """LangChain's own form first: what every adapter starts from and reads back into."""
    return (wire.LANGCHAIN, *wire.PROVIDERS)
PARTS = ("Request", "Response", "Chunks", "Headers")


_warming = threading.Lock()
_warmed = False


WARM_UP_DELAY_S = 3.0


def warm_up() -> None:
    """Import the three adapters on a background thread (several seconds, once per
    process), so the pane opens at once when switched on. Called by the pages that
    offer the pane, not at import: the Runs page's first visit does not wait for it."""
    global _warmed
    with _warming:
        if _warmed:
            return
        _warmed = True
    # A few seconds later: the imports hold the interpreter for seconds, and the page that
    # called this (a replay of a large run, being loaded and sent) should not wait on them.
    t = threading.Timer(WARM_UP_DELAY_S, import_adapters)
    t.name, t.daemon = "looptrace-wire-warmup", True
    t.start()


def import_adapters() -> None:
    """Import the three providers' LangChain adapters (those installed)."""
    for mod in ("langchain_openai", "langchain_anthropic", "langchain_ollama"):
        try:
            __import__(mod)
        except Exception:  # noqa: BLE001, S112 - a missing adapter is reported when rendering
            continue


@st.cache_resource(show_spinner=False, max_entries=64)
def _cached_view(path: str, run_id: str, seq: int, stamp: Any, _replay: Replay) -> CallView:
    enter = next(e for e in _replay.run.events if e.seq == seq)
    return wire.call_view(_replay, enter, wire.wire_rows(path, run_id))


def call_view(path: str, replay: Replay, seq: int) -> CallView:
    """The (cached) side-by-side view of the model call whose enter event is ``seq``."""
    return _cached_view(path, replay.run.id, seq, db_stamp(path), replay)


def render_wire_pane(db_path: str, replay: Replay, step_index: int) -> None:
    """The three providers' bodies for the model call at or before ``step_index``."""
    with st.container(key="wire-pane"):
        if not replay.steps:
            st.caption("This run has no events.")
            return
        step = replay.steps[replay.clamp(step_index)]
        enter = wire.call_at(replay.run, step.event.seq)
        if enter is None:
            st.caption("No model call yet at this step: the wire shows the first one once "
                       "the model is called.")
            return
        with st.spinner("Rendering the three wire formats ..."):
            view = call_view(db_path, replay, enter.seq)
        render_call(view, key="pane")


def _badge(body: ProviderBody) -> None:
    badges = _badges()
    if body.source in badges:
        label, color, icon = badges[body.source]
        st.badge(label, color=color, icon=icon)  # type: ignore[arg-type]
    else:
        st.badge("unavailable", color="gray", icon=":material/block:")


def _code(text: str, height: int | None) -> None:
    st.code(text, language=None, wrap_lines=True, height=height if height else "content")


BUILDERS = {"openai": "ChatOpenAI._get_request_payload",
            "anthropic": "ChatAnthropic._get_request_payload",
            "ollama": "ChatOllama._chat_params"}


def _where(body: ProviderBody) -> str:
    """One caption line (the same height in every column): where the body comes from."""
    if body.wire:
        w = body.wire
        return (f"{w.get('method') or 'POST'} {w.get('url') or ''} · HTTP {w.get('status')} · "
                f"{w.get('duration_ms') or 0:.0f} ms")
    if body.source == wire.RENDERED:
        return f"built offline by {BUILDERS[body.provider]}"
    if body.source == wire.RECORDED:
        return "LangChain's messages, before the adapter (and the reply after it)"
    return "not available"


def render_body(body: ProviderBody, part: str, *, height: int | None = 520,
                fold_tools: bool = True, latest_only: bool = False) -> None:
    """One provider's request / response / chunks / headers, as plain text."""
    with st.container(key=f"wire-{body.provider}-{part.lower()}"):
        head = st.columns([3, 2], vertical_alignment="center")
        with head[0]:
            st.text(f"{TITLES[body.provider]}  ·  {body.model}")
        with head[1]:
            _badge(body)
        st.caption(_where(body))
        if body.error:
            st.error("This exchange failed:" if body.source == wire.CAPTURED else
                     "Cannot render this provider:", icon=":material/error:")
            st.code(body.error, language=None, wrap_lines=True)
        if part == "Request":
            if body.request is None:
                st.caption("No request body.")
            else:
                fold = [("tools",)] if fold_tools else []
                hide = wire.earlier_turns(body.request) if latest_only else []
                _code(wire.annotated_text(body.request, body.request_notes, above=True, fold=fold,
                                     hide=hide), height)
        elif part == "Response":
            if body.response is None:
                st.caption("No response recorded for this call.")
            elif isinstance(body.response, (dict, list)):
                _code(wire.annotated_text(body.response, body.response_notes, above=True), height)
            else:  # a malformed body is shown exactly as it came
                _code(str(body.response), height)
            if body.response is not None and body.response_source == wire.RENDERED:
                st.caption("The recorded reply, written in this provider's response shape.")
        elif part == "Chunks":
            chunks = body.chunks
            if not chunks:
                st.caption("Not streamed." if body.source == wire.CAPTURED else
                           "Only captured streams have chunks.")
            else:
                st.caption(f"{plural(len(chunks), 'raw chunk')}, as they arrived")
                _code("".join(chunks), height)
        elif part == "Headers":
            if not body.wire:
                st.caption("Only captured exchanges have headers.")
            else:
                st.text("request")
                _code(_pretty(body.wire.get("request_headers")), None)
                st.text("response")
                _code(_pretty(body.wire.get("response_headers")), None)


def _pretty(text: Any) -> str:
    import json

    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(text or "")


def render_call(view: CallView, *, key: str, height: int | None = 520,
                per_row: int | None = None) -> None:
    """The whole side by side for one model call (used by the pane and the Wire page).

    ``height``: each body's height (None: as tall as its text, the page scrolls once);
    ``per_row``: how many bodies share a row (None: all of them)."""
    sources = ", ".join(f"{TITLES[p]} {b.source}" for p, b in view.bodies.items())
    st.caption(f"Model {wire.call_label(view)}: {plural(len(view.call.messages), 'message')}"
               f"{' + system prompt' if view.call.system else ''}. {sources}. "
               "Captured = recorded on the wire; rendered = built offline by the "
               "adapter's own request builder from the recorded messages.")
    # The parts on a row of their own (in a third of the page, "Headers" was cut off in a
    # laptop's window), the toggles on the row below, wrapping when the page is narrow.
    part = st.segmented_control("Show", PARTS, default="Request", key=f"wire_part_{key}",
                                label_visibility="collapsed") or "Request"
    with st.container(horizontal=True, vertical_alignment="center", gap="medium",
                      key=f"wire_toggles_{key}"):
        latest = st.toggle("Fold earlier turns", value=True, key=f"wire_latest_{key}",
                           help="Fold the messages before the last assistant turn")
        lc = st.toggle("LangChain column", value=True, key=f"wire_lc_{key}",
                       help="LangChain's normalised messages beside the providers' formats")
        fold = not st.toggle("Show tool definitions", value=False, key=f"wire_tools_{key}")
    shown = [p for p in _columns() if p in view.bodies and (lc or p != wire.LANGCHAIN)]
    n = per_row or len(shown)
    for first in range(0, len(shown), n):
        cols = st.columns(n, gap="small")
        for col, p in zip(cols, shown[first:first + n]):
            with col:
                render_body(view.bodies[p], part, height=height, fold_tools=fold,
                            latest_only=latest)
    rows = wire.aspect_rows(view)
    if rows:
        with st.expander("The differences that matter", expanded=False):
            _differences(rows, key)


def _differences(rows: list[dict[str, str]], key: str) -> None:
    """The differences as a table whose cells wrap: the forms' names once, then each
    aspect's name over one cell per form (a data grid cut each cell to one line and
    scrolled sideways to reach Ollama)."""
    with st.container(key=f"wire_aspects_{key}"):
        head = st.columns(len(_columns()), gap="small")
        for col, p in zip(head, _columns()):
            col.markdown(f"**{TITLES[p]}**")
        for row in rows:
            st.caption(md_escape(row["aspect"]))
            cells = st.columns(len(_columns()), gap="small")
            for col, p in zip(cells, _columns()):
                col.text(row.get(p) or "-")
