"""Pinning: a live message the model must keep seeing, whatever is compressed around it."""

from __future__ import annotations

from django.db import transaction

from sessions_app.models import Message, Session
from sessions_app.services.errors import NotFound, StateConflict


@transaction.atomic
def set_pinned(session: Session, position: int, pinned: bool) -> Message:
    """Pin (or unpin) the live message at ``position``. Under the session's lock, so a
    compression or pruning holding it sees the pin before or after, never half of it. A
    compression already summarising when the pin lands finds it at write-back and writes
    nothing (the next one keeps the pinned row)."""
    Session.objects.select_for_update().filter(pk=session.pk).first()
    row = (
        Message.objects.filter(session=session, position=position, is_summary=False)
        .order_by("id")
        .first()
    )
    if row is None:
        raise NotFound(f"No message at position {position} in this session.")
    if pinned and not row.active:
        raise StateConflict(
            f"Message #{position} is {row.kind.replace('_', ' ')}, no longer in the live "
            "context: only live messages can be pinned (search still finds this one)."
        )
    if row.pinned != pinned:
        row.pinned = pinned
        row.save(update_fields=["pinned"])
    return row
