"""A session's compression claim: one run at a time per session, across threads, processes and
hosts. The claim is the session's ``compressing_until``, taken and released with conditional
``UPDATE … WHERE`` statements (no lock held across the model call); its expiry doubles as the
owner's token, so a run whose claim expired and was taken releases nothing of the new owner's.
Used by the engine's passes and by pruning and micro-compaction."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from sessions_app.models import Session


def take(session: Session, seconds: float) -> datetime | None:
    """The session's compression claim (its expiry, doubling as the owner's token), or None."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds)
    claimed = (
        Session.objects.filter(pk=session.pk)
        .filter(Q(compressing_until__isnull=True) | Q(compressing_until__lt=now))
        .update(compressing_until=until)
    )
    return until if claimed == 1 else None


def renew(session: Session, claim: datetime, seconds: float) -> datetime | None:
    """Extend our own claim before another pass; None if it was lost (expired and taken)."""
    until = timezone.now() + timedelta(seconds=seconds)
    renewed = Session.objects.filter(pk=session.pk, compressing_until=claim).update(
        compressing_until=until
    )
    return until if renewed == 1 else None


def release(session: Session, claim: datetime) -> None:
    """Release only our own claim: one that expired and was taken by another run stays theirs."""
    Session.objects.filter(pk=session.pk, compressing_until=claim).update(compressing_until=None)
