"""Recorded runs as tests: the pytest plugin (``plugin``) and the ``looptrace`` fixture it
gives a test (``fixture``); and a chat model for tests that need no LLM
(``ScriptedChatModel``, ``tool_call``, ``turn_script``: ``tracer.testing.models``).

Every name is imported on first use (importing ``tracer.testing`` imports no LangChain).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracer._lazy import lazy_getattr

if TYPE_CHECKING:
    from .models import ScriptedChatModel, tool_call, turn_script

_EXPORTS = {"ScriptedChatModel": "models", "tool_call": "models", "turn_script": "models"}

__all__ = ["ScriptedChatModel", "tool_call", "turn_script"]

__getattr__ = lazy_getattr(__name__, _EXPORTS)
