"""The compression-event trail: one way to write an entry, whichever path or trigger writes it,
so every entry answers "why did (or didn't) this session compress?" the same way."""

from __future__ import annotations

import time
from typing import Any

from compression.models import CompressionEvent
from sessions_app.models import Session

REASON_CHARS = 300  # the column's size


def record_event(
    session: Session,
    trigger: str,
    outcome: str,
    reason: str = "",
    *,
    path: str = CompressionEvent.Path.ENGINE,
    started: float | None = None,
    **fields: Any,
) -> CompressionEvent:
    """Write one event. ``tokens_before`` and ``messages_before`` default to the session's
    counters as read now; ``started`` (a ``time.monotonic()`` reading) gives the duration; other
    ``fields`` are the event's own columns."""
    fields.setdefault("tokens_before", session.live_tokens)
    fields.setdefault("messages_before", session.live_messages)
    if started is not None:
        fields["duration_ms"] = int((time.monotonic() - started) * 1000)
    return CompressionEvent.objects.create(
        session=session,
        trigger=trigger,
        outcome=outcome,
        path=path,
        reason=reason[:REASON_CHARS],
        **fields,
    )
