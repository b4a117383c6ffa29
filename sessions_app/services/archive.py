"""Archiving rows under the summary that replaces them: the one write every compaction path
makes (the engine, micro-compaction, OpenAI server compaction). Rows are never deleted."""

from __future__ import annotations

from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from sessions_app.models import Message, Session

# What replace_with_summary changes on the session; callers add their own fields and save.
COUNTERS = ["live_messages", "live_tokens", "total_messages", "last_prompt_tokens", "updated_at"]


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


def replace_with_summary(
    locked: Session, rows: QuerySet[Message], **summary: object
) -> tuple[Message, int]:
    """Store a summary row (``summary``: its Message fields) and archive the live ones of
    ``rows`` under it, moving the session's counters by exactly what changed (saved by the
    caller, with ``COUNTERS``). Returns the summary and how many rows it replaced."""
    row = Message.objects.create(
        session=locked, channel_id=locked.channel_id, is_summary=True, **summary
    )
    archived, archived_tokens = archive_under(rows, row)
    locked.live_messages += 1 - archived
    locked.live_tokens += row.token_count - archived_tokens
    locked.total_messages += 1
    locked.last_prompt_tokens = None  # the usage a model last reported described the old context
    return row, archived
