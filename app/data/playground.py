"""The playground (``tracer.wire.playground``): one recorded model call, edited and
re-sent to a model of the person's choosing. Nothing is written.

``tracer.wire.playground`` imports LangChain: imported on first use.
"""

from __future__ import annotations

import os
from typing import Any

import streamlit as st

from tracer.demo.catalog import demo_agent
from tracer.read.loader import RunSummary

from .forks import AGENT_ENV
from .store import db_stamp

__all__ = ["agent_of", "playground", "playground_call"]


def agent_of(run: RunSummary) -> str | None:
    """The agent factory whose model the playground can ask for a run: the one
    ``looptrace ui --agent`` named, or the demo's own for a demo or sample run."""
    return os.environ.get(AGENT_ENV) or demo_agent(run.name, run.model)


@st.cache_data(show_spinner=False, max_entries=64)
def _playground_call(path: str, stamp: Any, run_id: str, step: int) -> dict[str, Any]:
    from tracer.wire.playground import pending_at

    return pending_at(path, run_id, step)


def playground_call(path: str, run_id: str, step: int) -> dict[str, Any]:
    """The model call at or after ``step`` (from 1) of ``run_id`` as the playground edits
    it: ``{"run", "step", "model_call", "pending"}`` (``tracer.wire.playground.pending_at``)."""
    return _playground_call(path, db_stamp(path), run_id, step)


def playground(path: str, run_id: str, step: int, edit: dict[str, Any] | None, model: str,
               agent: str | None) -> dict[str, Any]:
    """That call re-sent, edited, to ``model`` (``offline``, ``recorded``, ``agent`` or an
    ``init_chat_model`` name): ``PlayResult.to_dict()``. Nothing is written."""
    from tracer.wire.playground import playground as play

    return play(path, run_id, step, edit=edit, model=model, agent=agent).to_dict()
