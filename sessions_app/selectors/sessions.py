"""Reads of sessions that the engine, the console and the agent make."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Exists, Q, QuerySet

from sessions_app.models import Channel, Session


def find_session(pk: Any, *, channel: Channel | None = None) -> Session | None:
    """The session, or None where there is none (a task for a session erased since it was
    queued; another channel's id, which is "not found" to that channel)."""
    sessions = Session.objects.filter(pk=pk)
    if channel is not None:
        sessions = sessions.filter(channel=channel)
    return sessions.first()


def reread(pk: Any) -> Session:
    """The session's row as it is now (another thread's copy may be stale)."""
    return Session.objects.get(pk=pk)


def lock_session(session: Session | Any) -> Session:
    """The session's row, fresh and locked until the surrounding transaction ends: what a write
    that first re-checks the session's state reads (a compression's fold, a codex record)."""
    pk = session.pk if isinstance(session, Session) else session
    return Session.objects.select_for_update().get(pk=pk)


def with_channel() -> QuerySet[Session]:
    """Sessions with their channel joined, for a page that names both."""
    return Session.objects.select_related("channel")


def guarded(now: datetime) -> tuple[QuerySet[Session], QuerySet[Session]]:
    """The sessions a guard holds back at ``now``: cooling down, and thrash-locked. A guard
    whose time has passed holds nothing and is not among them."""
    return (
        Session.objects.filter(cooldown_until__gt=now),
        Session.objects.filter(thrash_lock_until__gt=now),
    )


def in_the_live_set() -> QuerySet[Session]:
    """Sessions not archived (an archived session is out of the live set)."""
    return Session.objects.filter(archived_at__isnull=True)


def models_in_use(limit: int) -> dict[str, int]:
    """Up to ``limit`` models the sessions use, each with a context window one of them has."""
    pairs = Session.objects.order_by().values_list("model", "context_window").distinct()
    return dict(pairs[:limit])


def idle_since(
    before: datetime, floor: int, *, now: datetime, leave: Exists | None = None
) -> QuerySet[Session]:
    """Sessions last active before ``before`` with at least ``floor`` live tokens that no
    compression holds at ``now``, longest idle first; ``leave`` (a subquery over the session as
    ``OuterRef("pk")``) leaves out those it matches."""
    idle = Session.objects.filter(last_activity_at__lt=before, live_tokens__gte=floor).filter(
        Q(compressing_until__isnull=True) | Q(compressing_until__lt=now)
    )
    if leave is not None:
        idle = idle.exclude(leave)
    return idle.order_by("last_activity_at")


def channel_sessions(
    channel: Channel, *, external_id: str | None = None, archived: str = "false"
) -> QuerySet[Session]:
    """The channel's sessions, most recently active first (the model's order): the one with
    ``external_id`` whatever ``archived`` says, else archived ones left out ("false"), only
    them ("true") or both ("all")."""
    sessions = Session.objects.filter(channel=channel).select_related("channel")
    if external_id is not None:
        return sessions.filter(external_id=external_id)
    if archived != "all":
        sessions = sessions.filter(archived_at__isnull=archived == "false")
    return sessions
