"""Findings of ``tracer.check`` in the app: a health badge and a findings panel.

The panel lists each finding (severity, rule, provider, the plain message as
text, never markdown) with a button that calls ``on_jump(seq, message_keys)``
so the replay can move to the step and highlight the messages involved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

SEVERITY_COLOUR = {"error": "red", "warning": "orange", "info": "blue"}
SEVERITY_ICON = {"error": ":material/error:", "warning": ":material/warning:",
                 "info": ":material/info:"}
_ORDER = ("error", "warning", "info")

OnJump = Callable[[int | None, tuple[str, ...]], Any]


def health_badge(findings: Sequence[Any] | None) -> str:
    """The worst severity with its count ("1 error", "2 warnings"), "ok", or "–" if unknown."""
    if findings is None:
        return "–"
    for sev in _ORDER:
        n = sum(1 for f in findings if getattr(f, "severity", None) == sev)
        if n:
            return f"{n} {sev}{'' if n == 1 else 's'}"
    return "ok"


def worst(findings: Sequence[Any]) -> str | None:
    """The worst severity among ``findings``, or None."""
    sevs = {getattr(f, "severity", None) for f in findings}
    return next((s for s in _ORDER if s in sevs), None)


def markers(findings: Sequence[Any]) -> dict[int, str]:
    """seq -> worst severity at that event, for marks on the scrubber."""
    out: dict[int, str] = {}
    for f in findings:
        seq = getattr(f, "seq", None)
        if seq is None:
            continue
        cur = out.get(seq)
        sev = str(getattr(f, "severity", "info"))
        if cur is None or _ORDER.index(sev) < _ORDER.index(cur):
            out[seq] = sev
    return out


def render_findings(findings: Sequence[Any], on_jump: OnJump, *, key: str = "finding",
                    title: str = "Findings", expanded: bool = True) -> None:
    """A panel of findings, each with a button that calls ``on_jump(seq, keys)``."""
    label = f"{title} ({health_badge(findings)})"
    with st.expander(label, expanded=expanded and bool(findings),
                     icon=":material/health_and_safety:"):
        if not findings:
            st.text("No findings: every model call's history is valid for the checked "
                    "providers, and no loop pattern was found.")
            return
        for i, f in enumerate(findings):
            sev = str(getattr(f, "severity", "info"))
            provider = getattr(f, "provider", None) or "all providers"
            seq = getattr(f, "seq", None)
            cols = st.columns([1.3, 6.0, 1.4], vertical_alignment="top")
            cols[0].badge(sev, color=SEVERITY_COLOUR.get(sev, "gray"),  # type: ignore[arg-type]
                          icon=SEVERITY_ICON.get(sev))
            with cols[1]:
                st.text(f"{getattr(f, 'rule', '?')} · {provider}")
                st.text(str(getattr(f, "message", "")))
            cols[2].button("Go to step" if seq is not None else "Show",
                           key=f"{key}_{i}", icon=":material/my_location:",
                           on_click=on_jump,
                           args=(seq, tuple(getattr(f, "message_keys", ()) or ())))
