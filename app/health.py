"""Health of a run: the findings of ``tracer.check`` (when that module is
available) as a badge for the runs table and a panel in the replay. Clicking
a finding jumps to its step and highlights the messages involved."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from . import state
from .run_view import RunView

SEVERITY_COLOUR = {"error": "red", "warning": "orange", "info": "blue"}


def badge(findings: Sequence[Any] | None) -> str:
    """'ok', 'N warnings', 'N errors' (errors win)."""
    try:
        from .findings_pane import health_badge  # the checks' own wording, when present
    except ImportError:
        pass
    else:
        return str(health_badge(findings))
    if findings is None:
        return "–"
    errors = sum(1 for f in findings if getattr(f, "severity", "") == "error")
    warnings = sum(1 for f in findings if getattr(f, "severity", "") == "warning")
    if errors:
        return f"{errors} error{'s' if errors > 1 else ''}"
    if warnings:
        return f"{warnings} warning{'s' if warnings > 1 else ''}"
    return "ok"


def _jump(step: int | None, keys: tuple[str, ...]) -> None:
    if step is not None:
        state.set_step(step)
    st.session_state[state.HIGHLIGHT] = tuple(keys)
    st.session_state[state.PLAYING] = False


def _jump_to_seq(seq: int | None, keys: tuple[str, ...]) -> None:
    view: RunView | None = st.session_state.get("_lt_view")
    _jump(view.step_of_seq(seq) if view is not None else None, keys)


MAX_BUTTONS = 12


def render_findings(view: RunView) -> None:
    """The findings panel (outside the replay fragment: it does not change per step)."""
    if view.findings_pending:
        st.caption("Checking this run for protocol and loop problems…")
    if view.findings_error:
        st.warning("The run checks failed; the replay is unaffected.", icon=":material/warning:")
        st.text(view.findings_error)
    if not view.findings:
        return
    try:
        from .findings_pane import render_findings as pane  # written with tracer.check
    except ImportError:
        pane = None
    if pane is not None:
        st.session_state["_lt_view"] = view
        pane(view.findings, _jump_to_seq, key="finding", expanded=False)
        return
    with st.expander(f"Findings ({badge(view.findings)})", expanded=False,
                     icon=":material/health_and_safety:"):
        if len(view.findings) > MAX_BUTTONS:
            st.dataframe(findings_frame(view), hide_index=True, key="findings_table")
            st.caption(f"The first {MAX_BUTTONS} findings, with a jump to their step:")
        for k, (f, step) in enumerate(zip(view.findings[:MAX_BUTTONS], view.finding_steps)):
            sev = str(getattr(f, "severity", "info"))
            cols = st.columns([1.2, 6, 1.6], vertical_alignment="center")
            cols[0].badge(sev, color=SEVERITY_COLOUR.get(sev, "gray"))  # type: ignore[arg-type]
            provider = getattr(f, "provider", None)
            cols[1].text(f"{getattr(f, 'rule', '?')}"
                         f"{' · ' + str(provider) if provider else ''}: "
                         f"{getattr(f, 'message', '')}")
            cols[2].button(f"Step {step + 1}" if step is not None else "Show",
                           key=f"finding_{k}", icon=":material/my_location:",
                           on_click=_jump,
                           args=(step, tuple(getattr(f, "message_keys", ()) or ())))


def findings_frame(view: RunView) -> Any:
    import pandas as pd

    return pd.DataFrame([{
        "severity": getattr(f, "severity", ""), "rule": getattr(f, "rule", ""),
        "provider": getattr(f, "provider", None) or "", "step": None if s is None else s + 1,
        "message": getattr(f, "message", ""),
    } for f, s in zip(view.findings, view.finding_steps)])
