"""Archiving rows under the summary that replaces them: the one write every compaction path
makes (the engine, micro-compaction, OpenAI server compaction). Rows are never deleted."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from sessions_app.models import Message, Session

# What replace_with_summary changes on the session; save_compressed saves them.
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
    ``rows`` under it, moving the session's counters by exactly what changed (saved by
    :func:`save_compressed`). Returns the summary and how many rows it replaced."""
    row = Message.objects.create(
        session=locked, channel_id=locked.channel_id, is_summary=True, **summary
    )
    archived, archived_tokens = archive_under(rows, row)
    locked.live_messages += 1 - archived
    locked.live_tokens += row.token_count - archived_tokens
    locked.total_messages += 1
    locked.last_prompt_tokens = None  # the usage a model last reported described the old context
    return row, archived


def save_compressed(
    locked: Session,
    *,
    counted: bool = True,
    failed: bool = False,
    good: bool = False,
    cooldown_until: datetime | None = None,
) -> None:
    """Save what writing a summary changed on the session: the counters
    :func:`replace_with_summary` moved, one more compression (``counted``; a micro-compaction's
    rolling summary is not one), and the failure episode -- a failed model call behind a local
    summary adds to the streak and starts the cooldown (until ``cooldown_until``), a good
    summary ends both."""
    fields = list(COUNTERS)
    if counted:
        locked.compressions += 1
        fields.append("compressions")
    if failed:
        locked.failure_streak += 1
        locked.cooldown_until = cooldown_until
        fields += ["failure_streak", "cooldown_until"]
    elif good:
        locked.failure_streak = 0
        locked.cooldown_until = None
        fields += ["failure_streak", "cooldown_until"]
    locked.save(update_fields=fields)


def archive_folded(session: Session, ids: list[int], summary: Message) -> int:
    """Micro-compaction's second step: the folded turn's rows leave the live context under the
    rolling summary its first step wrote (a transaction of its own, under the session's lock).
    Returns how many rows were archived."""
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        archived, archived_tokens = archive_under(
            Message.objects.filter(session=locked, pk__in=ids), summary
        )
        locked.live_messages -= archived
        locked.live_tokens -= archived_tokens
        locked.save(update_fields=["live_messages", "live_tokens", "updated_at"])
    return archived
