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


def render_findings(view: RunView, index: int) -> None:
    if view.findings_error:
        st.warning("The run checks failed; the replay is unaffected.", icon=":material/warning:")
        st.text(view.findings_error)
    if not view.findings:
        return
    with st.expander(f"Findings ({badge(view.findings)})", expanded=False,
                     icon=":material/health_and_safety:"):
        for k, f in enumerate(view.findings):
            sev = str(getattr(f, "severity", "info"))
            step = view.step_of_seq(getattr(f, "seq", None))
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
