"""Recovering from what the model says and from repeated failure: model errors that mean "the
request is too big" (SPEC T4) and the reset after compression is exhausted (F3)."""

from __future__ import annotations

import re

from django.db import transaction
from django.utils import timezone

from compression.models import CompressionEvent
from compression.policy.triggers import record_decision
from sessions_app.models import Message, Session

Trigger = CompressionEvent.Trigger
Outcome = CompressionEvent.Outcome
LONG_CONTEXT_WINDOW = 200_000


CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context window|prompt is too long|"
    r"too many tokens|reduce the length|input is too long|exceeds the context",
    re.I,
)
OUTPUT_TOO_LARGE = re.compile(
    r"max_tokens|max_completion_tokens|output.{0,40}too (large|long)", re.I
)
LONG_CONTEXT = re.compile(r"long.?context|extended context|context.{0,20}rate", re.I)


def classify_error(status: int | None, message: str, code: str | None = None) -> str | None:
    """Which model errors mean "the request is too big" (and so call for compression)."""
    text = f"{code or ''} {message}"
    if status == 413 or re.search(r"payload too large|request entity too large", text, re.I):
        return "payload_too_large"
    if status == 429:
        return "long_context_rate_limit" if LONG_CONTEXT.search(text) else None
    if OUTPUT_TOO_LARGE.search(text) and not CONTEXT_OVERFLOW.search(text):
        return "output_too_large"
    if CONTEXT_OVERFLOW.search(text):
        return "context_overflow"
    return None


def lower_window_for_long_context(session: Session) -> None:
    if session.context_window > LONG_CONTEXT_WINDOW:
        Session.objects.filter(pk=session.pk).update(
            context_window=LONG_CONTEXT_WINDOW,
            context_window_source=Session.WindowSource.LOWERED,
        )
        session.context_window = LONG_CONTEXT_WINDOW
        session.context_window_source = Session.WindowSource.LOWERED


# --- Exhaustion (F3) --------------------------------------------------------------------------


def reset_after_exhaustion(session: Session) -> int:
    """Keep the history up to the last good (model-written) summary and archive what came after;
    with no good summary, archive everything but the system prompt. Never deletes."""
    from sessions_app.services import reset_session

    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        good = (
            Message.objects.filter(
                session=locked, active=True, is_summary=True, is_fallback_summary=False
            )
            .order_by("-position", "-id")
            .first()
        )
        # A whole reset is recorded by the reset hook, as every reset; a partial one here.
        whole = good is None
        if whole:
            archived = reset_session(
                locked, source=Trigger.EXHAUSTION, note="compression exhausted: session reset"
            )
        else:
            now = timezone.now()
            after = Message.objects.filter(session=locked, active=True, position__gt=good.position)
            stats = list(after.values_list("token_count", flat=True))
            archived = after.update(
                active=False,
                compressed=True,
                archive_reason=Message.ArchiveReason.RESET,
                archived_at=now,
            )
            locked.live_messages -= archived
            locked.live_tokens -= sum(stats)
            locked.last_reset_at = now
            locked.last_prompt_tokens = None  # described the context that was just archived
            locked.save(
                update_fields=[
                    "live_messages",
                    "live_tokens",
                    "last_reset_at",
                    "last_prompt_tokens",
                    "updated_at",
                ]
            )
        Session.objects.filter(pk=locked.pk).update(failure_streak=0, cooldown_until=None)
    session.refresh_from_db()
    if not whole:
        record_decision(
            session,
            Trigger.EXHAUSTION,
            Outcome.RESET,
            f"compression exhausted: session reset to the last good summary, {archived} rows "
            "archived",
        )
    return archived
