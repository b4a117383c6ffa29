"""Opening, finding, resetting and auditing sessions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from core import plain
from core.config import get_config
from sessions_app import hooks
from sessions_app.catalog import known_context_window
from sessions_app.models import Channel, Message, Session
from sessions_app.services.errors import InvalidInput, NotFound
from sessions_app.services.memory import channel_memory_tokens, memory_tokens
from sessions_app.services.messages import insert_messages
from sessions_app.services.validation import check_text, validate_message


def get_session_for_channel(channel: Channel | None, session_id: UUID | str) -> Session:
    """The session if it exists *and* belongs to ``channel`` (None = operator, any channel).

    Another channel's session is reported exactly like a missing one, so ids do not leak.
    """
    if channel is None:
        try:
            return Session.objects.select_related("channel").get(pk=session_id)
        except (Session.DoesNotExist, ValueError, DjangoValidationError):
            raise _no_session(session_id) from None
    try:
        key = session_id if isinstance(session_id, UUID) else UUID(hex=str(session_id))
    except ValueError:
        raise _no_session(session_id) from None
    # Every request of a gateway asks this, so it is one plain statement read by core.plain:
    # the ORM's query took 0.45-0.8 ms to build and run on SQLite (a tenth of an append's time in
    # the web process under load), a raw() query 0.2 ms. The channel is the caller's.
    found = plain.read_one(
        Session,
        f"SELECT {plain.columns(Session, 's')} FROM {Session._meta.db_table} s "  # noqa: S608
        "WHERE s.id = %s AND s.channel_id = %s",
        [Session._meta.pk.get_db_prep_value(key, connection), channel.pk],
    )
    if found is not None:
        session = found[0]
        session.channel = channel
        return session
    raise _no_session(session_id)


def _no_session(session_id: UUID | str) -> NotFound:
    return NotFound(f"No session {session_id} for this channel.")


def resolve_window(model: str, declared: int | None) -> tuple[int, str]:
    if declared is not None:
        return declared, Session.WindowSource.DECLARED
    known = known_context_window(model)
    if known is not None:
        return known, Session.WindowSource.CATALOG
    config = get_config()
    fallback = config.model.context_length or config.server.default_context_window
    return fallback, Session.WindowSource.DEFAULT


@dataclass(frozen=True)
class OpenResult:
    session: Session
    created: bool


def open_session(
    channel: Channel,
    *,
    model: str = "",
    context_window: int | None = None,
    system_prompt: str | None = None,
    title: str = "",
    external_id: str | None = None,
    codex_thread_id: str | None = None,
    recall_tool: str = "session_search",
) -> OpenResult:
    """Open a session; with an ``external_id`` already in use on this channel, return that one.

    Re-opening by external id makes a gateway's retry after a lost response harmless.
    """
    if context_window is not None and context_window < 1024:
        raise InvalidInput("context_window must be at least 1024 tokens.")
    if system_prompt is not None:
        validate_message({"role": "system", "content": system_prompt})
    check_text(
        {"model": model, "title": title, "external_id": external_id, "codex": codex_thread_id},
        "session",
    )
    model = model or get_config().model.default
    with transaction.atomic():
        if external_id is not None:
            existing = Session.objects.filter(channel=channel, external_id=external_id).first()
            if existing is not None:
                return OpenResult(existing, created=False)
        window, source = resolve_window(model, context_window)
        session = Session.objects.create(
            channel=channel,
            model=model,
            context_window=window,
            context_window_source=source,
            title=title,
            external_id=external_id,
            provider_state={"codex": {"thread_id": codex_thread_id}} if codex_thread_id else None,
            live_tokens=channel_memory_tokens(channel),
            recall_tool=recall_tool,
        )
        if system_prompt:
            insert_messages(session, [{"role": "system", "content": system_prompt}])
    return OpenResult(session, created=True)


@transaction.atomic
def reset_session(
    session: Session,
    *,
    after_position: int | None = None,
    keep_system_prompt: bool = True,
    source: str = "manual_api",
    note: str = "",
) -> int:
    """Archive every live row (never delete); the system prompt stays live unless asked otherwise.
    With ``after_position``, only the live rows after that position: a reset to an earlier point
    (exhaustion's, to the last good summary), which is not the user's activity.

    Returns how many rows were archived. ``source`` says who asked (a trigger's name: the API,
    the console, exhaustion) and ``note`` why; the reset hooks record both.
    """
    locked = Session.objects.select_for_update().get(pk=session.pk)
    tokens_before = locked.live_tokens
    live = Message.objects.filter(session=locked, active=True)
    now = timezone.now()
    fields = ["live_messages", "live_tokens", "last_reset_at", "last_prompt_tokens", "updated_at"]
    if after_position is not None:
        live = live.filter(position__gt=after_position)
        tokens = live.aggregate(tokens=Sum("token_count"))["tokens"] or 0
        archived = _archive_reset(live, now)
        locked.live_messages -= archived
        locked.live_tokens -= tokens
    else:
        kept = Message.objects.none()
        if keep_system_prompt:
            first = live.order_by("position").first()
            if first is not None and first.role == Message.Role.SYSTEM and not first.is_summary:
                kept = live.filter(pk=first.pk)
                live = live.exclude(pk=first.pk)
        archived = _archive_reset(live, now)
        kept_stats = kept.aggregate(n=Count("id"), tokens=Sum("token_count"))
        locked.live_messages = kept_stats["n"] or 0
        locked.live_tokens = (kept_stats["tokens"] or 0) + memory_tokens(locked)
        locked.last_activity_at = now
        fields.append("last_activity_at")
    locked.last_reset_at = now
    locked.last_prompt_tokens = None  # described the context that was just archived
    locked.save(update_fields=fields)
    hooks.after_reset(locked, archived, tokens_before, source, note)
    session.refresh_from_db()
    return archived


def _archive_reset(rows: QuerySet[Message], now: datetime) -> int:
    return rows.update(
        active=False,
        compressed=True,
        archive_reason=Message.ArchiveReason.RESET,
        archived_at=now,
    )


def lower_context_window(session: Session, window: int) -> None:
    """The provider said the context is too long for it: a smaller window from now on (its
    source says it was lowered, not configured). A window already that small stays."""
    if session.context_window > window:
        Session.objects.filter(pk=session.pk).update(
            context_window=window, context_window_source=Session.WindowSource.LOWERED
        )
        session.context_window = window
        session.context_window_source = Session.WindowSource.LOWERED


@dataclass(frozen=True)
class Recount:
    live_messages: int
    live_tokens: int
    total_messages: int


def recount(session: Session) -> Recount:
    """The counters recomputed by scanning rows: for audits and tests, never the hot path."""
    stats = Message.objects.filter(session=session).aggregate(
        total=Count("id"),
        live=Count("id", filter=Q(active=True)),
        tokens=Sum("token_count", filter=Q(active=True)),
    )
    return Recount(
        live_messages=stats["live"] or 0,
        live_tokens=(stats["tokens"] or 0) + memory_tokens(session),
        total_messages=stats["total"] or 0,
    )
