"""Context engines (SPEC T5): plug-ins that may ask for compression below the threshold.

A context engine is any object with a ``name`` and ``wants_compression(session, context)``
returning a reason (str) to compress now, or None. Register it once, e.g. in an AppConfig's
``ready()``::

    from compression.policy import plugins

    class KeepUnder50k:
        name = "keep-under-50k"

        def wants_compression(self, session, context):
            return "over 50K live tokens" if session.live_tokens > 50_000 else None

    plugins.register(KeepUnder50k())

The preflight check asks every engine before each turn; a request goes through the same guards
(cooldown, anti-thrash, master switch) as any automatic trigger and is recorded as trigger
``plugin``.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, runtime_checkable

logger = logging.getLogger(__name__)


@runtime_checkable
class ContextEngine(Protocol):
    name: str

    def wants_compression(self, session: Any, context: list[dict[str, Any]]) -> str | None: ...


_engines: list[ContextEngine] = []


def register(engine: ContextEngine) -> None:
    if not isinstance(engine, ContextEngine):
        raise TypeError("a context engine needs a name and wants_compression(session, context)")
    if engine not in _engines:
        _engines.append(engine)


def unregister(engine: ContextEngine) -> None:
    if engine in _engines:
        _engines.remove(engine)


def requests(session: Any, context: list[dict[str, Any]]) -> list[str]:
    """Reasons given by the engines that want compression now. A failing engine is logged and
    ignored: a plug-in must never break a turn."""
    out = []
    for engine in list(_engines):
        try:
            reason = engine.wants_compression(session, context)
        except Exception:
            logger.exception("context engine %s failed; ignoring it for this turn", engine.name)
            continue
        if reason:
            out.append(f"{engine.name}: {reason}")
    return out
