"""Loaded by Python at start-up when ``looptrace run`` puts this folder first on
``PYTHONPATH``: arms the tracing hook (``tracer.record.autohook``: into ``$LOOPTRACE_DB``, once
the program imports LangChain) before the user's code runs, then loads the ``sitecustomize`` this one stands in front of,
if any. It never stops the program: a failure is one line on stderr."""

import importlib
import os
import sys

try:
    if os.environ.get("LOOPTRACE_DB"):
        # (a path made absolute now: the handler may be created on an event loop, where it
        # is not read; a postgresql:// URL is left as it is, never taken for a path)
        from tracer.db.url import is_url

        if not is_url(os.environ["LOOPTRACE_DB"]):
            os.environ["LOOPTRACE_DB"] = os.path.abspath(os.environ["LOOPTRACE_DB"])
        from tracer.record.autohook import arm, arm_debug  # (imports no LangChain)

        arm()
        if os.environ.get("LOOPTRACE_DEBUG"):  # (looptrace debug)
            arm_debug()
except Exception as exc:  # noqa: BLE001
    print(f"looptrace: not tracing: {exc!r}", file=sys.stderr)

_here = os.path.dirname(os.path.abspath(__file__))
_mod = sys.modules.pop("sitecustomize", None)
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    importlib.import_module("sitecustomize")  # the one this stands in front of
except ImportError:
    pass
except Exception as exc:  # noqa: BLE001
    print(f"looptrace: the sitecustomize after looptrace's failed: {exc!r}", file=sys.stderr)
finally:
    sys.path[:] = _path
    if _mod is not None:
        sys.modules["sitecustomize"] = _mod
