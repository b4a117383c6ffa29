"""Archiving rows under the summary that replaces them: the one write every compaction path
makes (the engine, micro-compaction, OpenAI server compaction). Rows are never deleted."""

from __future__ import annotations

from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from sessions_app.models import Message


def archive_under(rows: QuerySet[Message], summary: Message) -> tuple[int, int]:
    """Archive the live ones of ``rows`` as replaced by ``summary``; returns how many rows and
    tokens left the live context. Call inside the transaction holding the session's lock."""
    rows = rows.filter(active=True).exclude(pk=summary.pk)
    stats = rows.aggregate(n=Count("id"), tokens=Sum("token_count"))
    rows.update(
        active=False,
        compressed=True,
        archive_reason=Message.ArchiveReason.COMPRESSION,
        archived_at=timezone.now(),
        summarized_by=summary,
    )
    return stats["n"] or 0, stats["tokens"] or 0
