"""The app's data seam: the one folder of ``app/`` that imports ``tracer``.

Every other module of ``app/`` reads the tracer through a module here, each one concern
and typed, with its ``__all__``: there is no barrel (this package holds no names).
``tests/app/test_app_seam.py`` holds the rule, and that importing any of them imports
no LangChain (the wire formats' adapters are imported on first use: ``wire``).

- ``store``: the database shown (``$LOOPTRACE_DB`` or the samples), its stamp, opening
  it, the one-line error.
- ``runs``: the runs as lists (a page, one by id, the newest), health and cost.
- ``loads``, ``run_view``: one run loaded and prepared for the replay (``RunView``).
- ``steps``, ``drawing``: what the panes read off a replay; what draws its graph.
- ``diff``: two runs compared. ``forks``: forks and reruns, and the command line that
  makes one. ``notes``, ``threads``: notes; conversations.
- ``debugger``: the runs paused now and the debugger's controls.
- ``wire``: one model call on the wire. ``playground``: one call edited and re-sent.

Loads are cached per (database path, run id, database stamp): the stamp changes
whenever the file (or its WAL) is written, so a run still being recorded is reloaded
and a finished one never is.
"""
