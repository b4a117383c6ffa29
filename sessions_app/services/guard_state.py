"""The guards' state on a session row: the anti-thrash streak and lock, the failure streak and
cooldown, and the mark of a queued automatic compression. The policy decides
(``compression.policy.guards``, ``triggers``); these only write, each with one ``UPDATE`` of the
row, so concurrent runs add up instead of overwriting each other."""

from __future__ import annotations

from datetime import datetime

from django.db.models import F, Q

from sessions_app.models import Session


def count_ineffective(session: Session) -> None:
    """One more automatic run in a row that saved too little."""
    Session.objects.filter(pk=session.pk).update(ineffective_streak=F("ineffective_streak") + 1)


def clear_ineffective(session: Session) -> None:
    """A run that saved enough ends the streak and any anti-thrash lock."""
    Session.objects.filter(pk=session.pk).update(ineffective_streak=0, thrash_lock_until=None)


def lock_automatic(session: Session, until: datetime) -> None:
    """Automatic compression stays off until ``until`` (anti-thrash)."""
    Session.objects.filter(pk=session.pk).update(thrash_lock_until=until)
    session.thrash_lock_until = until


def end_failures(session: Session) -> None:
    """After the exhaustion reset: no failure streak, no cooldown."""
    Session.objects.filter(pk=session.pk).update(failure_streak=0, cooldown_until=None)


def mark_queued(session: Session, now: datetime, stale_before: datetime) -> bool:
    """Mark an automatic compression queued for ``session``, unless one is already (a mark set
    before ``stale_before`` is presumed lost): at most one waits per session."""
    marked = (
        Session.objects.filter(pk=session.pk)
        .filter(Q(auto_queued_at__isnull=True) | Q(auto_queued_at__lt=stale_before))
        .update(auto_queued_at=now)
    )
    if marked:
        session.auto_queued_at = now
    return bool(marked)


def unmark_queued(session_id: str, mark: datetime | None = None) -> None:
    """The queued compression started (any mark goes), or never reached the queue (only our
    own ``mark`` goes: a later one is another's)."""
    rows = Session.objects.filter(pk=session_id)
    if mark is not None:
        rows = rows.filter(auto_queued_at=mark)
    rows.update(auto_queued_at=None)


def count_failure(session: Session, cooldown_until: datetime) -> None:
    """A failed summary (F1): one more in the failure streak, and automatic triggers wait until
    ``cooldown_until``."""
    Session.objects.filter(pk=session.pk).update(
        cooldown_until=cooldown_until, failure_streak=F("failure_streak") + 1
    )


def cool_down(session: Session, until: datetime) -> None:
    """Automatic triggers wait until ``until`` (a stopped checkpoint); the streak stays."""
    Session.objects.filter(pk=session.pk).update(cooldown_until=until)
