"""Replay: the run as an animated two-pane walkthrough (graph | messages)."""

from __future__ import annotations

from app.bootstrap import ensure_navigation

ensure_navigation()

from app.replay_view import replay_page

replay_page()
