"""Retention: live sessions idle for ``retention.archive_idle_days`` (per channel overridable)
are archived -- ``Session.archived_at`` set, nothing else touched. Their messages stay, search
still finds them, the default session lists leave them out, and the next append clears the mark
(sessions_app.services.messages). Nothing is ever deleted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from core.config import get_config
from sessions_app.models import Channel, Session

BATCH = 500  # sessions per write transaction: the SQLite write lock is held milliseconds


@dataclass
class ChannelRetention:
    channel: str
    days: int
    idle: int  # sessions idle long enough (archived now, or would be with --dry-run)


def idle_sessions(channel: Channel, days: int, now: datetime):
    return Session.objects.filter(
        channel=channel, archived_at__isnull=True, last_activity_at__lt=now - timedelta(days=days)
    )


def archive_idle(*, dry_run: bool = False, now: datetime | None = None) -> list[ChannelRetention]:
    """Archive every channel's idle live sessions (or, with ``dry_run``, count them)."""
    now = now or timezone.now()
    config = get_config().retention
    done = []
    for channel in Channel.objects.order_by("name"):
        days = config.days_for(channel.name)
        if not days:
            continue
        idle = idle_sessions(channel, days, now)
        if dry_run:
            done.append(ChannelRetention(channel.name, days, idle.count()))
            continue
        archived = 0
        while True:
            with transaction.atomic():
                ids = list(idle.order_by("pk").values_list("pk", flat=True)[:BATCH])
                if not ids:
                    break
                # Re-checked in the UPDATE: a session appended to since the ids were read is
                # active again and stays live.
                archived += Session.objects.filter(
                    pk__in=ids,
                    archived_at__isnull=True,
                    last_activity_at__lt=now - timedelta(days=days),
                ).update(archived_at=now)
        done.append(ChannelRetention(channel.name, days, archived))
    return done


def archive_idle_task() -> dict[str, int]:
    """Scheduled daily (migration sessions_app 0012). Does nothing while retention is off."""
    return {r.channel: r.idle for r in archive_idle()}
