"""Appending and rolling back messages, with counters kept exact in the same transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from core import plain
from sessions_app import hooks, tokens
from sessions_app.models import Message, Session
from sessions_app.services.errors import InvalidInput, SequenceGap, StateConflict
from sessions_app.services.validation import (
    KNOWN_FIELDS,
    check_tool_pairing,
    normalize_message,
    validate_message,
)

MAX_ROLLBACK = 10_000


def build_rows(model: str, messages: list[dict[str, Any]]) -> list[Message]:
    """Unsaved rows with their token counts. Done before any transaction so that tokenizing a big
    batch never holds the database's write lock."""
    rows = []
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else None
        text: str | None
        if parts is not None:
            text = "\n".join(
                p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        else:
            text = content
        extra = {k: v for k, v in message.items() if k not in KNOWN_FIELDS}
        rows.append(
            Message(
                role=message["role"],
                content=text,
                content_parts=parts,
                tool_calls=message.get("tool_calls") or None,
                tool_call_id=message.get("tool_call_id") or None,
                name=message.get("name") or None,
                extra=extra or None,
                token_count=tokens.count_message(message, model),
            )
        )
    return rows


def pending_tool_calls(session: Session) -> set[str]:
    """Call ids of the live context's last assistant tool-call message that have no result yet."""
    last = (
        Message.objects.filter(session=session, active=True)
        .exclude(role=Message.Role.TOOL)
        .order_by("-position")
        .only("position", "role", "tool_calls")
        .first()
    )
    if last is None or not last.tool_calls:
        return set()
    # Unordered: the model's default order (its session's, then the position) joins the session
    # and sorts on PostgreSQL for a set that needs no order.
    answered = (
        Message.objects.filter(
            session=session, active=True, role=Message.Role.TOOL, position__gt=last.position
        )
        .order_by()
        .values_list("tool_call_id", flat=True)
    )
    return {call["id"] for call in last.tool_calls} - set(answered)


# The claim of positions and the counters' update, one statement that also reads back what the
# triggers decide with: under the write lock, every statement and every hand-over of Python's
# GIL between them is time other writers wait.
_CLAIM = """
UPDATE sessions_app_session
   SET next_position = next_position + %s, live_messages = live_messages + %s,
       live_tokens = live_tokens + %s, total_messages = total_messages + %s,
       next_sequence = next_sequence + %s,
       last_activity_at = %s, updated_at = %s, archived_at = NULL{usage}
 WHERE id = %s
RETURNING next_position, next_sequence, live_messages, live_tokens, total_messages,
          auto_queued_at, compressing_until
"""
_CLAIMED = (
    "next_position",
    "next_sequence",
    "live_messages",
    "live_tokens",
    "total_messages",
    "auto_queued_at",
    "compressing_until",
)


_USAGE = ", last_prompt_tokens = %s, last_completion_tokens = %s, last_usage_at = %s"


def _claim(
    session: Session,
    rows: list[Message],
    usage: tuple[int | None, int | None] | None = None,
    sequenced: bool = False,
) -> int:
    """Reserve positions for ``rows`` at the end of ``session`` and count them (and record the
    usage the model reported, if any; ``sequenced``: the client counts them in its sequence);
    the first position. Takes the session's row lock on PostgreSQL (on SQLite, BEGIN IMMEDIATE
    already holds the database's write lock), so concurrent writers get consecutive, distinct
    ranges."""
    now = timezone.now()
    fields = {f.name: f for f in Session._meta.concrete_fields}
    stamp = fields["updated_at"].get_db_prep_value(now, connection)
    counts = [len(rows), len(rows), sum(row.token_count for row in rows), len(rows)]
    counts.append(len(rows) if sequenced else 0)
    reported = [*usage, stamp] if usage else []
    with connection.cursor() as cursor:
        cursor.execute(
            _CLAIM.format(usage=_USAGE if usage else ""),
            [
                *counts,
                stamp,
                stamp,
                *reported,
                fields["id"].get_db_prep_value(session.pk, connection),
            ],
        )
        found = cursor.fetchone()
    if found is None:
        raise Session.DoesNotExist(f"session {session.pk} is gone")
    for name, value in zip(_CLAIMED, found, strict=True):
        setattr(session, name, _from_db(fields[name], value))
    session.last_activity_at = session.updated_at = now
    session.archived_at = None  # an append brings an archived session back
    if usage:
        session.last_prompt_tokens, session.last_completion_tokens = usage
        session.last_usage_at = now
    return session.next_position - len(rows)


def _from_db(field, value: Any) -> Any:
    col = field.get_col(field.model._meta.db_table)
    for convert in plain.converters(col, connection):
        value = convert(value, col, connection)
    return value


def insert_messages(
    session: Session,
    messages: list[dict[str, Any]],
    rows: list[Message] | None = None,
    usage: tuple[int | None, int | None] | None = None,
    sequenced: bool = False,
) -> list[Message]:
    """Write validated messages at the end of ``session`` and bump its counters (``session``'s
    counters are updated to the stored ones; ``sequenced``: ``next_sequence`` too).

    Must run inside a transaction. Tool results are checked against the calls they answer after
    the positions are claimed, under the lock, so two writers cannot both answer the same call
    (a refused batch rolls the claim back with the transaction).
    """
    if rows is None:
        rows = build_rows(session.model, messages)
    start = _claim(session, rows, usage, sequenced)
    first_tool = next((m for m in messages if m.get("role") == Message.Role.TOOL), None)
    first_call = next((m for m in messages if m.get("tool_calls")), None)
    needs_context = first_tool is not None and (
        first_call is None or messages.index(first_tool) < messages.index(first_call)
    )
    check_tool_pairing(messages, pending_tool_calls(session) if needs_context else set())
    for i, row in enumerate(rows):
        row.session = session
        row.channel_id = session.channel_id
        row.position = start + i
    Message.objects.bulk_create(rows)
    if not all(row.pk for row in rows):  # backends without RETURNING: read the ids back
        ids = dict(
            Message.objects.filter(session=session, position__gte=start).values_list(
                "position", "id"
            )
        )
        for row in rows:
            row.pk = ids[row.position]
    return rows


def _copy_counters(source: Session, target: Session) -> None:
    if source is target:
        return
    for name in (
        "next_position",
        "next_sequence",
        "live_messages",
        "live_tokens",
        "total_messages",
        "last_activity_at",
        "last_prompt_tokens",
        "last_completion_tokens",
        "last_usage_at",
        "updated_at",
        "archived_at",
    ):
        setattr(target, name, getattr(source, name))


@dataclass
class AppendResult:
    messages: list[Message]
    session: Session
    decisions: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0  # messages of a sequenced batch that were stored before (not again)


def _usage_numbers(usage: dict[str, Any] | None) -> tuple[int | None, int | None]:
    if not usage:
        return None, None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    completion = usage.get("completion_tokens", usage.get("output_tokens"))
    for name, value in (("prompt_tokens", prompt), ("completion_tokens", completion)):
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise InvalidInput(f"usage.{name} must be a non-negative integer.")
    return prompt, completion


def append_messages(
    session: Session,
    messages: list[dict[str, Any]],
    *,
    usage: dict[str, Any] | None = None,
    run_hooks: bool = True,
    sequence: int | None = None,
    defer: bool = False,
) -> AppendResult:
    """Validate every message first, then write all or nothing; then let the registered hooks
    (the automatic compression triggers) decide, in the same transaction. What the hooks read
    that the append does not change, they read before it (``hooks.prepare``), outside the lock.

    ``sequence``: the client's index of the first message in its own count (exactly-once,
    in order): messages it sent before are skipped (``duplicates``), a gap raises SequenceGap.
    ``defer``: the hooks answer a compression as due instead of queueing it."""
    if not messages:
        raise InvalidInput("messages must contain at least one message.")
    if sequence is not None and (
        not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 0
    ):
        raise InvalidInput("sequence must be a non-negative integer.")
    messages = [normalize_message(m) for m in messages]
    for index, message in enumerate(messages):
        validate_message(message, index)
    prompt_tokens, completion_tokens = _usage_numbers(usage)
    reported = (
        (prompt_tokens, completion_tokens)
        if prompt_tokens is not None or completion_tokens is not None
        else None
    )
    rows = build_rows(session.model, messages)
    prepared = hooks.prepare(session) if run_hooks else []
    with transaction.atomic():
        duplicates = 0
        if sequence is not None:
            duplicates = _already_stored(session, sequence, len(messages))
            messages, rows = messages[duplicates:], rows[duplicates:]
            if not messages:  # a retry of a batch stored whole: its usage is stale too
                session.refresh_from_db()
                return AppendResult(messages=[], session=session, duplicates=duplicates)
        rows = insert_messages(session, messages, rows, reported, sequence is not None)
        decisions = hooks.after_append(session, usage, prepared, defer=defer) if run_hooks else []
    return AppendResult(messages=rows, session=session, decisions=decisions, duplicates=duplicates)


def _already_stored(session: Session, sequence: int, count: int) -> int:
    """How many of a batch starting at ``sequence`` the session holds already (a retry whose
    answer was lost). Takes the session's row lock first -- the one the append's claim takes
    anyway -- so two retries of one batch racing each other store it once."""
    expected = (
        Session.objects.select_for_update()
        .filter(pk=session.pk)
        .values_list("next_sequence", flat=True)
        .first()
    )
    if expected is None:
        raise Session.DoesNotExist(f"session {session.pk} is gone")
    if sequence > expected:
        raise SequenceGap(sequence, expected)
    return min(count, expected - sequence)


def rollback_messages(session: Session, count: int, *, reason: str = "undo") -> list[Message]:
    """Undo / regenerate: the last ``count`` live rows become rolled back (kept, not indexed)."""
    if not 1 <= count <= MAX_ROLLBACK:
        raise InvalidInput(f"count must be between 1 and {MAX_ROLLBACK}.")
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        last = list(
            Message.objects.filter(session=locked, active=True).order_by("-position")[:count]
        )
        blocked = next((m for m in last if m.role == Message.Role.SYSTEM or m.is_summary), None)
        if len(last) < count or blocked is not None:
            allowed = 0
            for m in last:
                if m.role == Message.Role.SYSTEM or m.is_summary:
                    break
                allowed += 1
            what = (
                "a summary" if blocked is not None and blocked.is_summary else "the system prompt"
            )
            limit = f"at most {allowed} can be rolled back"
            if blocked is not None:
                raise StateConflict(f"Rolling back {count} messages would reach {what}; {limit}.")
            raise StateConflict(f"The session has only {len(last)} live messages; {limit}.")
        earliest = last[-1]
        if earliest.role == Message.Role.TOOL:
            caller = (
                Message.objects.filter(session=locked, active=True, position__lt=earliest.position)
                .exclude(role=Message.Role.TOOL)
                .order_by("-position")
                .first()
            )
            if caller is not None and caller.tool_calls:
                wider = count + sum(
                    1
                    for _ in Message.objects.filter(
                        session=locked,
                        active=True,
                        position__gte=caller.position,
                        position__lt=earliest.position,
                    ).only("pk")
                )
                raise StateConflict(
                    f"Rolling back {count} message(s) would split the tool call at position "
                    f"{caller.position} from its results; roll back {wider} to include the call, "
                    "or fewer to keep every result."
                )
        now = timezone.now()
        Message.objects.filter(pk__in=[m.pk for m in last]).update(
            active=False, rolled_back_at=now, rollback_reason=reason[:20]
        )
        locked.live_messages -= len(last)
        locked.live_tokens -= sum(m.token_count for m in last)
        locked.last_activity_at = now
        locked.save(
            update_fields=["live_messages", "live_tokens", "last_activity_at", "updated_at"]
        )
        _copy_counters(locked, session)
    for m in last:
        m.active = False
        m.rolled_back_at = now
        m.rollback_reason = reason[:20]
    return sorted(last, key=lambda m: m.position)
