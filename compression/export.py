"""A session's compression events in its export, and back on restore (``sessions_app.hooks``
export registry): the restored timeline tells what the original's did."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.utils import timezone

from compression.models import CompressionEvent
from sessions_app.bulk import keeping_timestamps
from sessions_app.models import Session

FIELDS = [
    f.attname
    for f in CompressionEvent._meta.concrete_fields
    if f.attname not in ("id", "session_id", "summary_message_id")
]
TIMES = {"created_at", "last_at"}


def dump(session: Session) -> Iterator[dict[str, Any]]:
    for event in CompressionEvent.objects.filter(session=session).order_by("id").iterator(2_000):
        record = {name: getattr(event, name) for name in FIELDS}
        for name in TIMES:
            record[name] = record[name].isoformat() if record[name] else None
        yield {**record, "summary_message": event.summary_message_id}


def load(session: Session, records: list[dict[str, Any]], ids: dict[int, int]) -> int:
    """Write the events back, in their order, each pointing to its summary's new id."""
    events = []
    for record in records:
        values = {name: record.get(name) for name in FIELDS if name in record}
        for name in TIMES:
            given = values.get(name)
            values[name] = datetime.fromisoformat(given) if isinstance(given, str) else None
        values["created_at"] = values.get("created_at") or timezone.now()
        summary = record.get("summary_message")
        events.append(
            CompressionEvent(
                session=session, summary_message_id=ids.get(summary) if summary else None, **values
            )
        )
    with keeping_timestamps([CompressionEvent]):
        CompressionEvent.objects.bulk_create(events, batch_size=500)
    return len(events)
