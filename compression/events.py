"""The compression-event trail: one way to write an entry, whichever path or trigger writes it,
so every entry answers "why did (or didn't) this session compress?" the same way."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from datetime import datetime, timedelta
from typing import Any, cast

from django.db import connection, transaction
from django.db.models import Field
from django.utils import timezone

from compression.models import CompressionEvent
from core.logs import current_request_id
from sessions_app.models import Session

REASON_CHARS = 300  # the column's size
compression_log = logging.getLogger("hermes.compression")
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
    event = CompressionEvent.objects.create(
        session=session,
        trigger=trigger,
        outcome=outcome,
        path=path,
        reason=reason[:REASON_CHARS],
        last_at=now,
        repeats=1,
        **fields,
    )
    if outcome not in CompressionEvent.DECISIONS:  # decisions come with every append: no line
        # Once it is committed (a line for a compression rolled back would mislead), with the
        # request id of now: the commit may come after the context that set it.
        request_id = current_request_id()
        transaction.on_commit(lambda: _log(event, request_id), robust=True)
    return event


def _log(event: CompressionEvent, request_id: str | None) -> None:
    """One line per compression attempt (a JSON object with ``server.log_format: json``)."""
    compression_log.info(
        "compression of session %s (%s, %s): %s -> %s tokens in %s ms",
        event.session_id,
        event.trigger,
        event.outcome,
        event.tokens_before,
        event.tokens_after,
        event.duration_ms,
        extra={
            "event": "compression",
            "session_id": str(event.session_id),
            "trigger": event.trigger,
            "outcome": event.outcome,
            "path": event.path,
            "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after,
            "ms": event.duration_ms,
            "event_id": event.pk,
            "request_id": request_id,
        },
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
    if outcome not in CompressionEvent.DECISIONS:  # a reset, say: each one is a row of its own
        record_event(session, trigger, outcome, reason, path=path, **fields)
        return
    shape = shape_of(trigger, outcome, path, reason)
    fields.setdefault("tokens_before", session.live_tokens)
    fields.setdefault("messages_before", session.live_messages)
    if not _repeat(session, shape, reason[:REASON_CHARS], fields):
        record_event(session, trigger, outcome, reason, path=path, shape=shape, **fields)


def _repeat(session: Session, shape: str, reason: str, fields: dict[str, Any]) -> bool:
    """Count one more on the session's latest event if it has ``shape``. Written out: it runs
    on every append, under the write lock, and the ORM's update with a subquery cost twice the
    INSERT it replaces in Python alone."""
    meta = CompressionEvent._meta
    names = sorted(fields)
    quote = connection.ops.quote_name
    columns = ", ".join(f"{quote(cast(Field, meta.get_field(n)).column)} = %s" for n in names)
    table = quote(meta.db_table)
    session_id = meta.get_field("session").target_field.get_db_prep_value(session.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET repeats = COALESCE(repeats, 1) + 1, last_at = %s, reason = %s, "  # noqa: S608
            f"{columns} WHERE id = (SELECT id FROM {table} WHERE session_id = %s "
            "ORDER BY created_at DESC, id DESC LIMIT 1) AND shape = %s",
            [
                meta.get_field("last_at").get_db_prep_value(timezone.now(), connection),
                reason,
                *(fields[n] for n in names),
                session_id,
                shape,
            ],
        )
        return cursor.rowcount == 1


TRIM_BATCH = 5_000


def trim_decisions(now: datetime | None = None) -> int:
    """Delete trigger decisions whose last repeat is older than ``events.retention_days``, a
    batch at a time (each its own short transaction, so appends never wait long behind it);
    compressions, failures, prunes and resets are kept. Returns how many went."""
    from core.config import get_config

    days = get_config().events.retention_days
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = CompressionEvent.objects.filter(
        outcome__in=CompressionEvent.DECISIONS, last_at__lt=cutoff
    )
    trimmed = 0
    while True:
        ids = list(old.order_by("id").values_list("id", flat=True)[:TRIM_BATCH])
        if not ids:
            return trimmed
        with transaction.atomic():
            trimmed += CompressionEvent.objects.filter(pk__in=ids).delete()[0]


RESET_BY: dict[str, str] = {
    CompressionEvent.Trigger.MANUAL_API: "reset through the API",
    CompressionEvent.Trigger.MANUAL_ADMIN: "reset by an operator",
    CompressionEvent.Trigger.EXHAUSTION: "compression exhausted: session reset",
}


def record_written(
    session: Session,
    trigger: str,
    outcome: str,
    reason: str,
    *,
    tokens_before: int,
    messages_before: int,
    summary: Any,
    rows_archived: int,
    threshold_tokens: int | None,
    summary_model: str,
    path: str = CompressionEvent.Path.ENGINE,
    **fields: Any,
) -> CompressionEvent:
    """A pass that wrote a summary: the context before it and after it (the session's counters
    as they are now), what it archived and what it wrote. The engine's passes and the OpenAI
    server's compactions are recorded alike, so the trail and the chart read them alike."""
    return record_event(
        session,
        trigger,
        outcome,
        reason,
        path=path,
        tokens_before=tokens_before,
        tokens_after=session.live_tokens,
        messages_before=messages_before,
        messages_after=session.live_messages,
        threshold_tokens=threshold_tokens,
        rows_archived=rows_archived,
        summary_message=summary,
        summary_model=summary_model,
        **fields,
    )


def record_reset(
    session: Session, archived: int, tokens_before: int, source: str, note: str
) -> CompressionEvent:
    """The store's reset hook: every reset is on the trail (and the chart), whoever asked."""
    said = note or RESET_BY.get(source, "reset")
    return record_event(
        session,
        source,
        CompressionEvent.Outcome.RESET,
        f"{said}: {archived} rows archived",
        tokens_before=tokens_before,
        tokens_after=session.live_tokens,
        rows_archived=archived,
    )


def events_page(
    session: Session, *, before: int | None = None, limit: int = 50, decisions: bool = False
) -> tuple[list[CompressionEvent], bool]:
    """Up to ``limit`` of the session's events older than event ``before``, newest first, and
    whether older ones follow; the triggers' decisions only with ``decisions``."""
    events = CompressionEvent.objects.filter(session=session)
    if not decisions:
        events = events.exclude(outcome__in=CompressionEvent.DECISIONS)
    if before is not None:
        events = events.filter(pk__lt=before)
    page = list(events.order_by("-id")[: limit + 1])
    return page[:limit], len(page) > limit
