"""The compression-event trail: one way to write an entry, whichever path or trigger writes it,
so every entry answers "why did (or didn't) this session compress?" the same way."""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

from django.db.models import F, Subquery
from django.utils import timezone

from compression.models import CompressionEvent
from sessions_app.models import Session

REASON_CHARS = 300  # the column's size
_NUMBERS = re.compile(r"\d[\d,.:]*")


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
    now = timezone.now()  # created_at is set by the model, to the same moment give or take
    return CompressionEvent.objects.create(
        session=session,
        trigger=trigger,
        outcome=outcome,
        path=path,
        reason=reason[:REASON_CHARS],
        last_at=now,
        repeats=1,
        **fields,
    )


def shape_of(trigger: str, outcome: str, path: str, reason: str) -> str:
    """What makes two decisions the same: all but the numbers in the reason (token counts,
    times), which change on every append."""
    key = "\x1f".join((trigger, outcome, path, _NUMBERS.sub("#", reason[:REASON_CHARS])))
    return hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def record_repeatable(
    session: Session,
    trigger: str,
    outcome: str,
    reason: str,
    *,
    path: str = CompressionEvent.Path.ENGINE,
    **fields: Any,
) -> None:
    """A trigger's decision: when the session's latest event is the same decision (see
    :func:`shape_of`), that row counts one more and takes the new numbers, in one statement;
    otherwise a new row. Every append writes a decision, and a session held back by a
    cooldown would otherwise fill the trail with identical rows."""
    shape = shape_of(trigger, outcome, path, reason)
    fields.setdefault("tokens_before", session.live_tokens)
    fields.setdefault("messages_before", session.live_messages)
    latest = (
        CompressionEvent.objects.filter(session=session)
        .order_by("-created_at", "-id")
        .values("id")[:1]
    )
    repeated = CompressionEvent.objects.filter(pk=Subquery(latest), shape=shape).update(
        repeats=F("repeats") + 1, last_at=timezone.now(), reason=reason[:REASON_CHARS], **fields
    )
    if not repeated:
        record_event(session, trigger, outcome, reason, path=path, shape=shape, **fields)
