"""Lazy public names for a package (PEP 562): imported from their module on first use.

``tracer``, ``tracer.otel`` and ``tracer.wire`` list their public names in an
``_EXPORTS`` table (name -> the submodule that defines it) and set
``__getattr__ = lazy_getattr(__name__, _EXPORTS)``, so that importing the
package imports nothing else: the read side starts without LangChain, the
CLI without the OpenTelemetry packages, the checks without the proxy.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_getattr(package: str, exports: dict[str, str], *,
                 base: str | None = None) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: a name in ``exports`` is imported
    from its submodule (relative to ``base``, by default ``package`` itself) and kept
    in the package's namespace, so the next use is a plain attribute; any other name
    raises ``AttributeError`` as a module does."""
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(f".{module}", base or package), name)
        namespace[name] = value
        return value

    return __getattr__
