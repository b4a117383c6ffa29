"""Notices for the channel's user (``compression.progress_notices``): rows of the session's
history that are never live. They take the next position (so the history shows them where they
happened) but never enter the live context, its counters or the search indexes: a notice says
what happened to the conversation, it is not part of it."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from sessions_app.models import Message, Session


def add_notice(session: Session, text: str) -> Message:
    """Append a notice row to ``session``; it counts in ``total_messages`` only."""
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        position = locked.next_position
        Session.objects.filter(pk=locked.pk).update(
            next_position=F("next_position") + 1, total_messages=F("total_messages") + 1
        )
        return Message.objects.create(
            session=locked,
            channel_id=locked.channel_id,
            position=position,
            role=Message.Role.SYSTEM,
            content=text,
            active=False,
            compressed=False,
            is_notice=True,
        )
