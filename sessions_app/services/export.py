"""Taking data out again: sessions as JSON Lines, in conversation order, with what a restore
into another instance needs (``sessions_app.services.restore``, ``manage.py import_sessions``).

Each session is a ``session`` line (title, model, window, counters, guards, provider state and
its memory blocks), then one ``message`` line per row -- its position and kind, what was said
(text, parts, tool calls), its state (live, archived, rolled back, pinned, pruned forms, token
count), its summary provenance (the summary that replaced it, the span a summary covers, the
row a carried copy repeats) and its timestamps -- then the lines other apps keep about it (the
compression events). A channel's own memory blocks come once, in a ``channel`` line before its
first session. Rows stream from the database in batches: a session of any length exports in
constant memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from sessions_app import hooks
from sessions_app.models import Channel, MemoryBlock, Message, Session

BATCH = 2_000
FORMAT = 2  # 1: message lines only, without the state a restore needs

# What a session line carries of the row: everything but its keys and the transient claims.
SESSION_FIELDS = (
    "external_id",
    "title",
    "model",
    "context_window",
    "context_window_source",
    "live_messages",
    "live_tokens",
    "total_messages",
    "compressions",
    "next_position",
    "next_sequence",
    "recall_tool",
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_usage_at",
    "provider_state",
    "cooldown_until",
    "thrash_lock_until",
    "failure_streak",
    "ineffective_streak",
    "created_at",
    "updated_at",
    "last_activity_at",
    "last_reset_at",
    "archived_at",
)
# A message's state, beyond what a reader of the transcript needs.
STATE_FIELDS = (
    "active",
    "compressed",
    "pinned",
    "is_notice",
    "token_count",
    "extra",
    "provider_item",
    "pruned_content",
    "pruned_tool_calls",
    "pruned_at",
)


def when(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _plain(value: Any) -> Any:
    return when(value) if isinstance(value, datetime) else value


def _blocks(blocks: Iterable[MemoryBlock]) -> list[dict[str, Any]]:
    return [
        {
            "label": b.label,
            "text": b.text,
            "token_count": b.token_count,
            "created_at": when(b.created_at),
            "updated_at": when(b.updated_at),
        }
        for b in blocks
    ]


def session_record(session: Session) -> dict[str, Any]:
    return {
        "type": "session",
        "format": FORMAT,
        "session": str(session.pk),
        "channel": session.channel.name,
        "parent": str(session.parent_id) if session.parent_id else None,
        **{name: _plain(getattr(session, name)) for name in SESSION_FIELDS},
        "memory": _blocks(session.memory_blocks.order_by("label", "id")),
    }


def channel_record(channel: Channel) -> dict[str, Any]:
    return {
        "type": "channel",
        "format": FORMAT,
        "channel": channel.name,
        "memory": _blocks(channel.memory_blocks.filter(session=None).order_by("label", "id")),
    }


def message_record(message: Message, session: Session) -> dict[str, Any]:
    return {
        "type": "message",
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
        "created_at": when(message.created_at),
        "archived_at": when(message.archived_at),
        "rolled_back_at": when(message.rolled_back_at),
        "origin": message.origin,
        **{name: _plain(getattr(message, name)) for name in STATE_FIELDS},
    }


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def export_lines(sessions: Iterable[Session]) -> Iterator[str]:
    """Each session's lines (sessions in the order given), its channel's line first."""
    channels: set[int] = set()
    for session in sessions:
        if session.channel_id not in channels:
            channels.add(session.channel_id)
            yield _line(channel_record(session.channel))
        yield _line(session_record(session))
        rows = Message.objects.filter(session=session).order_by("position", "-is_summary", "id")
        for message in rows.iterator(chunk_size=BATCH):
            yield _line(message_record(message, session))
        for kind, (dump, _) in hooks.exporters().items():
            for record in dump(session):
                yield _line({"type": kind, "session": str(session.pk), **record})
