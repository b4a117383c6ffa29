"""A continuation (`in_place: false`): the compressed context carries on in a new session linked
to the old. The engine decides when; this is the store's write."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from sessions_app.models import MemoryBlock, Message, Session
from sessions_app.selectors.context import live_rows
from sessions_app.services.memory import memory_tokens
from sessions_app.services.messages import insert_messages

# The fields a continuation copies from each live row of its parent, verbatim.
CARRIED = (
    "role",
    "content",
    "content_parts",
    "tool_calls",
    "tool_call_id",
    "name",
    "extra",
    "provider_item",
    "token_count",
    "pruned_content",
    "pruned_tool_calls",
    "pruned_at",
    "is_summary",
    "is_fallback_summary",
    "covers_from_position",
    "covers_to_position",
)


def continue_in_new_session(session: Session) -> Session:
    """``in_place: false``: the live context (head + summary + tail) continues in a new session
    linked to this one, and hands over its external id so the gateway's next open finds the
    continuation. Each carried row records the row it continues (the summary keeps the range of
    the parent's positions it covers, so summary and originals stay linked across the hop); the
    parent's rows are archived as compressed, never deleted, and search shows each pair once."""
    with transaction.atomic():
        old = Session.objects.select_for_update().get(pk=session.pk)
        rows = live_rows(old)
        external_id = old.external_id
        Session.objects.filter(pk=old.pk).update(external_id=None)
        new = Session.objects.create(
            channel=old.channel,
            parent=old,
            model=old.model,
            context_window=old.context_window,
            context_window_source=old.context_window_source,
            title=(old.title or str(old.pk))[:280] + " (continued)",
            external_id=external_id,
            # A mirroring client's count goes on with the conversation it counts.
            next_sequence=old.next_sequence,
            recall_tool=old.recall_tool,
        )
        copies = [
            Message(continues=row, **{name: getattr(row, name) for name in CARRIED}) for row in rows
        ]
        insert_messages(new, [row.as_openai() for row in rows], rows=copies)
        Message.objects.filter(session=old, active=True).update(
            active=False,
            compressed=True,
            archive_reason=Message.ArchiveReason.COMPRESSION,
            archived_at=timezone.now(),
        )
        # The session's memory goes on with the conversation.
        MemoryBlock.objects.filter(session=old).update(session=new)
        Session.objects.filter(pk=new.pk).update(live_tokens=F("live_tokens") + memory_tokens(new))
        Session.objects.filter(pk=old.pk).update(live_messages=0, live_tokens=memory_tokens(old))
    return new
