"""Runs in and out of looptrace as files and text: JSON Lines export and import, the
self-contained HTML replay, a run as text (``looptrace show``)."""
