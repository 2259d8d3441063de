"""One model call on the wire (``tracer.wire``): the exchanges captured for a run, and
each provider's request rendered by its LangChain adapter.

``tracer.wire.render`` and ``tracer.wire.view`` import LangChain's provider adapters
(about 2 s): their names (``EXPORTS``: name -> module under ``tracer.wire``) are imported
on first use (PEP 562, ``tracer._lazy``), so no page waits for them before it asks.
``preload()`` imports them (``app/serve.py`` calls it before the server listens).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import streamlit as st

from tracer._lazy import lazy_getattr
from tracer.read.loader import TraceDB
from tracer.read.usage_why import usage_why as _usage_why
from tracer.wire.annotate import annotated_text, earlier_turns
from tracer.wire.providers import PROVIDERS

from .store import db_stamp

if TYPE_CHECKING:  # (imported on first use: ``EXPORTS``; listed here for the type checker)
    from tracer.wire.render import call_at, model_call_events
    from tracer.wire.view import (
        CAPTURED,
        LANGCHAIN,
        RECORDED,
        RENDERED,
        CallView,
        ProviderBody,
        aspect_rows,
        body_diff,
        call_label,
        call_view,
    )

BASE = "tracer.wire"
EXPORTS: dict[str, str] = {
    **dict.fromkeys(("call_at", "model_call_events"), "render"),
    **dict.fromkeys(("CAPTURED", "LANGCHAIN", "RECORDED", "RENDERED", "ProviderBody",
                     "CallView", "aspect_rows", "body_diff", "call_label", "call_view"),
                    "view"),
}

__all__ = [
    "CAPTURED",
    "LANGCHAIN",
    "PROVIDERS",
    "RECORDED",
    "RENDERED",
    "CallView",
    "ProviderBody",
    "annotated_text",
    "aspect_rows",
    "body_diff",
    "call_at",
    "call_label",
    "call_view",
    "earlier_turns",
    "model_call_events",
    "preload",
    "usage_why",
    "wire_rows",
]

__getattr__ = lazy_getattr(__name__, EXPORTS, base=BASE)


def preload() -> None:
    """Import the modules of ``EXPORTS`` (the provider adapters): what a first visit
    to the Wire page would otherwise wait for."""
    for module in dict.fromkeys(EXPORTS.values()):
        importlib.import_module(f"{BASE}.{module}")


@st.cache_data(show_spinner=False, max_entries=32)
def _wire_rows(path: str, run_id: str, stamp: Any) -> list[dict[str, Any]]:
    with TraceDB(path) as db:
        return db.wire(run_id)


def wire_rows(path: str, run_id: str) -> list[dict[str, Any]]:
    """The HTTP exchanges captured for ``run_id`` (``TraceDB.wire``), cached."""
    return _wire_rows(path, run_id, db_stamp(path))


def usage_why(path: str, run_id: str) -> str | None:
    """Why ``run_id``'s model calls reported no token usage, when its captured requests
    say (``tracer.read.usage_why``, as ``looptrace show`` says it); None: not known."""
    return _usage_why(wire_rows(path, run_id))
