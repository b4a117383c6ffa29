"""Taking data out again: sessions as JSON Lines, one message per line, in conversation order.

Each line says which session the row belongs to, its position and kind, what was said (text,
parts, tool calls), its summary provenance (the summary that replaced it, the span a summary
covers, the row a carried copy repeats) and its timestamps. Rows stream from the database in
batches, so a session of any length exports in constant memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from sessions_app.models import Message, Session

BATCH = 2_000


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def message_record(message: Message, session: Session) -> dict[str, Any]:
    return {
        "session": str(session.pk),
        "external_id": session.external_id,
        "channel": session.channel.name,
        "id": message.pk,
        "position": message.position,
        "kind": message.kind,
        "role": message.role,
        "content": message.content,
        "content_parts": message.content_parts,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "is_summary": message.is_summary,
        "is_fallback_summary": message.is_fallback_summary,
        "summarized_by": message.summarized_by_id,
        "covers_from_position": message.covers_from_position,
        "covers_to_position": message.covers_to_position,
        "continues": message.continues_id,
        "archive_reason": message.archive_reason,
        "rollback_reason": message.rollback_reason or None,
        "created_at": _when(message.created_at),
        "archived_at": _when(message.archived_at),
        "rolled_back_at": _when(message.rolled_back_at),
        "origin": message.origin,
    }


def export_lines(sessions: Iterable[Session]) -> Iterator[str]:
    """One JSON line per message of each session (sessions in the order given)."""
    for session in sessions:
        rows = Message.objects.filter(session=session).order_by("position", "-is_summary", "id")
        for message in rows.iterator(chunk_size=BATCH):
            yield json.dumps(message_record(message, session), ensure_ascii=False) + "\n"
