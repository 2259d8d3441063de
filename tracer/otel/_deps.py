"""The OpenTelemetry packages are an optional extra: import them here, on demand.

Every module of ``tracer.otel`` that needs the SDK or the OTLP protobufs calls
``require()`` inside the function that needs them, so ``looptrace --help`` and
the rest of looptrace work without them, and a missing package is one clear line
("install looptrace[otel]") instead of an ImportError traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from tracer.errors import OtelUnavailable

HINT = "install looptrace[otel] (pip install 'looptrace[otel]')"


def require(module: str) -> ModuleType:
    """Import ``module`` (one of the ``otel`` extra's); raise ``OtelUnavailable`` if missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in ("opentelemetry", "google"):
            raise  # a real bug in an installed package: not a missing extra
        msg = f"OpenTelemetry support needs packages that are not installed ({exc.name}): {HINT}"
        raise OtelUnavailable(msg) from None
