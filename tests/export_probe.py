"""What a restore must keep, read the same way from the source and from the restored instance
(in-process, or as ``python -m tests.export_probe`` in a subprocess, printing JSON)."""

from __future__ import annotations

import json
from typing import Any

PLANTED = ("zanzibar-quokka", "数据库迁移失败", "flamingo-7731", "用Django写代码")


def describe() -> dict[str, Any]:
    from compression.models import CompressionEvent
    from search.service import Filters, search
    from sessions_app.models import MemoryBlock, Message, Session
    from sessions_app.selectors import live_context

    out: dict[str, Any] = {}
    for session in Session.objects.select_related("channel").order_by("id"):
        rows = list(
            Message.objects.filter(session=session).order_by("position", "-is_summary", "id")
        )
        position = {m.pk: (m.position, m.is_summary) for m in rows}
        hits = {}
        for word in PLANTED:
            found = search(word, Filters(channel_id=session.channel_id, session_id=session.pk))
            hits[word] = [(h.message.position, h.message.kind) for h in found.hits]
        out[str(session.pk)] = {
            "channel": session.channel.name,
            "title": session.title,
            "model": session.model,
            "window": session.context_window,
            "counters": [
                session.live_messages,
                session.live_tokens,
                session.total_messages,
                session.compressions,
                session.next_position,
                session.next_sequence,
            ],
            "guards": [
                str(session.cooldown_until),
                session.failure_streak,
                session.ineffective_streak,
            ],
            "context": live_context(session),
            "hits": hits,
            "provenance": [
                (
                    m.position,
                    m.kind,
                    m.pinned,
                    m.token_count,
                    position.get(m.summarized_by_id),
                    position.get(m.continues_id),
                    m.covers_from_position,
                    m.covers_to_position,
                    str(m.created_at),
                )
                for m in rows
            ],
            "memory": sorted(
                [
                    (b.label, b.text, False)
                    for b in MemoryBlock.objects.filter(channel=session.channel)
                ]
                + [(b.label, b.text, True) for b in MemoryBlock.objects.filter(session=session)]
            ),
            "events": [
                (
                    e.trigger,
                    e.outcome,
                    e.tokens_before,
                    e.tokens_after,
                    e.rows_archived,
                    position.get(e.summary_message_id),
                    str(e.created_at),
                )
                for e in CompressionEvent.objects.filter(session=session).order_by("id")
            ],
        }
    return json.loads(json.dumps(out, default=str))


if __name__ == "__main__":
    import django

    django.setup()
    print(json.dumps(describe(), ensure_ascii=False))
