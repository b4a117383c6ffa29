"""One Hermes conversation written into the store, in its own transaction.

The first import and every re-run take the same path: the conversation's rows are planned from
Hermes's whole chain, then compared with what an earlier run stored (rows are known by their
Hermes id, kept in ``Message.origin``). New rows are appended after the existing ones (Hermes's
ids only grow, so order holds); rows whose state Hermes changed since (a later compaction
archived them, an ``/undo`` took them back) are updated; nothing is duplicated or deleted.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    CharField,
    Count,
    DateTimeField,
    Field,
    IntegerField,
    JSONField,
    Max,
    Min,
    Q,
    Sum,
    TextField,
)

from hermes_import.mapping import ARCHIVED, LIVE, ROLLED_BACK, Conversation, Planned
from hermes_import.models import ImportedSession
from hermes_import.provenance import infer
from sessions_app import tokens
from sessions_app.bulk import keeping_timestamps
from sessions_app.models import Channel, Message, Session
from sessions_app.services.memory import memory_tokens
from sessions_app.services.sessions import resolve_window

BATCH = 2_000
# What a later Hermes run can change about a row already imported: its kind and its links.
RECONCILED = (
    "active",
    "compressed",
    "summarized_by",
    "continues",
    "archive_reason",
    "archived_at",
    "rollback_reason",
    "rolled_back_at",
)


@dataclass
class Outcome:
    """What importing one conversation did."""

    created: bool = False
    updated_rows: int = 0
    kinds: Counter = field(default_factory=Counter)


def _when(epoch: float | None) -> dt.datetime | None:
    if epoch is None:
        return None
    try:
        return dt.datetime.fromtimestamp(float(epoch), tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _flags(row: Planned) -> dict[str, Any]:
    if row.kind == LIVE:
        return {"active": True, "compressed": False}
    if row.kind == ARCHIVED:
        return {"active": False, "compressed": True}
    return {"active": False, "compressed": False}


class _Tokens:
    """Token counts for one conversation's rows, as ``tokens.count_message`` counts them (an
    imported row has no ``name``): one counter for the session's model, and one count per
    distinct text, since Hermes's copies repeat their originals."""

    def __init__(self, model: str) -> None:
        self.counter = tokens.counter_for(model)
        self.seen: dict[str, int] = {}

    def __call__(self, message: dict[str, Any]) -> int:
        text = tokens.message_text(message)
        count = self.seen.get(text)
        if count is None:
            count = self.seen[text] = tokens.TOKENS_PER_MESSAGE + self.counter.count_text(text)
        return count


def _values(
    session: Session, row: Planned, position: int, ids: dict[int, int], count: _Tokens
) -> dict[str, Any]:
    """The row's column values by attribute name: every column, as the batch INSERT writes
    them (no model instance: building one per row cost more than its INSERT)."""
    when = _when(row.timestamp)
    if row.copied is not None and row.timestamp is not None and row.copied > row.timestamp:
        # Hermes's copy keeps its original's timestamp; here it is written when Hermes wrote
        # it, at its compaction (so the live-token chart does not count a row twice).
        row.origin["timestamp"] = row.timestamp
        when = _when(row.copied)
    values = dict(_defaults())
    values.update(
        session_id=session.pk,
        channel_id=session.channel_id,
        position=position,
        role=row.role,
        content=row.text,
        content_parts=row.parts,
        tool_calls=row.tool_calls,
        tool_call_id=row.tool_call_id,
        origin=row.origin,
        is_summary=row.summary,
        summarized_by_id=ids.get(row.summarized_by) if row.summarized_by else None,
        continues_id=ids.get(row.continues) if row.continues else None,
        created_at=when or session.created_at,
        **_flags(row),
    )
    if row.kind == ARCHIVED:
        values["archive_reason"] = Message.ArchiveReason.COMPRESSION
        values["archived_at"] = _when(row.ended) or when
    elif row.kind == ROLLED_BACK:
        values["rollback_reason"] = "hermes"
        values["rolled_back_at"] = when
    # Every row carries what it cost in the live context while it was there, as this
    # service's own rows do after a compression archives them. (What Message.as_openai sends
    # for such a row: nothing of it is pruned, named or extra.)
    sent: dict[str, Any] = {
        "role": row.role,
        "content": row.parts if row.parts is not None else row.text,
    }
    if row.tool_calls:
        sent["tool_calls"] = row.tool_calls
    if row.tool_call_id:
        sent["tool_call_id"] = row.tool_call_id
    values["token_count"] = count(sent)
    return values


def import_conversation(
    channel: Channel,
    store: str,
    conversation: Conversation,
    hermes_sessions: dict[str, dict[str, Any]],
    rows: list[Planned],
    fingerprints: dict[str, str],
) -> Outcome:
    """Write one conversation (all links) and record its links, in one transaction."""
    infer(conversation, rows)
    tip = hermes_sessions[conversation.tip]
    root = hermes_sessions[conversation.root]
    outcome = Outcome()
    with transaction.atomic(), keeping_timestamps([Message, Session]):
        link = (
            ImportedSession.objects.filter(store=store, hermes_id__in=conversation.links)
            .select_related("session")
            .first()
        )
        if link is None:
            model = tip.get("model") or ""
            window, source = resolve_window(model, None)
            session = Session.objects.create(
                channel=channel,
                model=model[:200],
                context_window=window,
                context_window_source=source,
                title=(tip.get("title") or "")[:300],
                created_at=_when(root.get("started_at")) or dt.datetime.now(tz=dt.UTC),
                updated_at=dt.datetime.now(tz=dt.UTC),
                last_activity_at=_when(tip.get("started_at")) or dt.datetime.now(tz=dt.UTC),
            )
            outcome.created = True
        else:
            session = Session.objects.select_for_update().get(pk=link.session_id)
        existing = {
            hermes_id: pk
            for pk, hermes_id in Message.objects.filter(session=session, origin__isnull=False)
            .values_list("pk", "origin__id")
            .iterator()
            if hermes_id is not None
        }
        if outcome.created and tip.get("prompt"):
            Message.objects.create(
                session=session,
                channel_id=session.channel_id,
                position=0,
                role=Message.Role.SYSTEM,
                content=tip["prompt"],
                origin={"system": "hermes", "session": conversation.tip, "system_prompt": True},
                token_count=tokens.count_message(
                    {"role": "system", "content": tip["prompt"]}, session.model
                ),
                created_at=session.created_at,
            )
        position = Message.objects.filter(session=session).aggregate(p=Max("position"))["p"]
        position = -1 if position is None else position
        ids = dict(existing)
        count = _Tokens(session.model)
        new = [r for r in rows if r.hermes_id not in existing]
        # Summaries first, newest first: an older summary may be archived under a newer one.
        positions = {}
        for row in new:
            position += 1
            positions[row.hermes_id] = position
        for row in sorted((r for r in new if r.summary), key=lambda r: -r.hermes_id):
            message = Message(**_values(session, row, positions[row.hermes_id], ids, count))
            message.continues_id = None  # set below, once what it continues exists
            message.save(force_insert=True)
            ids[row.hermes_id] = message.pk
        batch: list[dict[str, Any]] = []
        pending: set[int] = set()
        for row in new:
            if row.summary:
                continue
            if len(batch) >= BATCH or (row.continues in pending):
                _flush(batch, ids)
                pending.clear()
            batch.append(_values(session, row, positions[row.hermes_id], ids, count))
            pending.add(row.hermes_id)
        _flush(batch, ids)
        outcome.updated_rows = _reconcile(session, rows, ids, existing)
        for row in new:
            outcome.kinds[("summary " if row.summary else "") + row.kind] += 1
        _finish(session, conversation, hermes_sessions, store, fingerprints)
    return outcome


def _flush(batch: list[dict[str, Any]], ids: dict[int, int]) -> None:
    """Insert the batch with one multi-row INSERT per chunk, returning each row's id and
    position (ids are matched by position, unique per session). Django's bulk_create spends
    more on preparing values than SQLite spends on the rows and their search triggers; here each
    column's adapter is chosen once."""
    if not batch:
        return
    columns, adapters = _columns()
    table = connection.ops.quote_name(Message._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c.column) for c in columns)
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    per_statement = max(1, min(500, 30_000 // len(columns)))
    by_position = {values["position"]: values["origin"]["id"] for values in batch}
    with connection.cursor() as cursor:
        for start in range(0, len(batch), per_statement):
            chunk = batch[start : start + per_statement]
            params: list[Any] = []
            for values in chunk:
                params.extend(
                    adapt(values[c.attname]) for c, adapt in zip(columns, adapters, strict=True)
                )
            cursor.execute(
                f"INSERT INTO {table} ({names}) VALUES {', '.join([one] * len(chunk))} "  # noqa: S608
                "RETURNING id, position",
                params,
            )
            for pk, position in cursor.fetchall():
                ids[by_position[position]] = pk
    batch.clear()


@functools.cache
def _defaults() -> dict[str, Any]:
    return {f.attname: f.get_default() for f in Message._meta.concrete_fields if not f.primary_key}


def _columns() -> tuple[list[Any], list[Callable[[Any], Any]]]:
    columns = [f for f in Message._meta.concrete_fields if not f.primary_key]
    adapters: list[Callable[[Any], Any]] = []
    for column in columns:
        if isinstance(column, JSONField):
            adapters.append(functools.partial(_adapt_json, column))
        elif isinstance(column, DateTimeField):
            adapters.append(connection.ops.adapt_datetimefield_value)
        elif isinstance(column, (BooleanField, CharField, IntegerField, TextField)):
            adapters.append(lambda v: v)
        else:  # keys (a UUID is text on SQLite) and anything else: Django's own preparation
            adapters.append(functools.partial(_prepare, column))
    return columns, adapters


def _adapt_json(field: JSONField, value: Any) -> Any:
    return None if value is None else connection.ops.adapt_json_value(value, field.encoder)


def _prepare(field: Field, value: Any) -> Any:
    return field.get_db_prep_save(value, connection)


def _reconcile(
    session: Session, rows: list[Planned], ids: dict[int, int], existing: dict[int, int]
) -> int:
    """Bring every row to its planned state: links of new summaries, and existing rows whose
    kind Hermes changed since the last run."""
    wanted = {}
    for row in rows:
        # New rows were written as planned, except a summary's link to the row it continues
        # (summaries go first); existing rows may have changed in Hermes since.
        if row.hermes_id in existing or (row.summary and row.continues):
            wanted[ids[row.hermes_id]] = (
                _flags(row),
                ids.get(row.summarized_by) if row.summarized_by else None,
                ids.get(row.continues) if row.continues else None,
                row.kind,
                _when(row.ended),
            )
    if not wanted:
        return 0
    changed = []
    now = dt.datetime.now(tz=dt.UTC)
    fields = ("pk", *RECONCILED)
    if existing:
        stored = Message.objects.filter(session=session).only(*fields).iterator(BATCH)
    else:
        stored = _by_keys(list(wanted), fields)
    for message in stored:
        if message.pk not in wanted:
            continue
        flags, summary, continues, kind, ended = wanted[message.pk]
        state = (message.active, message.compressed, message.summarized_by_id, message.continues_id)
        goal = (flags["active"], flags["compressed"], summary, continues)
        if state == goal:
            continue
        message.active, message.compressed = flags["active"], flags["compressed"]
        message.summarized_by_id, message.continues_id = summary, continues
        if kind == ARCHIVED and message.archive_reason is None:
            message.archive_reason = Message.ArchiveReason.COMPRESSION
            message.archived_at = message.archived_at or ended or now
        if kind == ROLLED_BACK and not message.rollback_reason:
            message.rollback_reason = "hermes"
            message.rolled_back_at = message.rolled_back_at or now
        changed.append(message)
    Message.objects.bulk_update(changed, RECONCILED, batch_size=500)
    known = set(existing.values())
    return sum(1 for m in changed if m.pk in known)


def _by_keys(keys: list[int], fields: tuple[str, ...]) -> Iterator[Message]:
    for start in range(0, len(keys), 500):
        yield from Message.objects.filter(pk__in=keys[start : start + 500]).only(*fields)


def _finish(
    session: Session,
    conversation: Conversation,
    hermes_sessions: dict[str, dict[str, Any]],
    store: str,
    fingerprints: dict[str, str],
) -> None:
    """Counters, summary ranges, guard state and the record of each link."""
    tip = hermes_sessions[conversation.tip]
    summaries = Message.objects.filter(session=session, is_summary=True)
    ranges = {
        row["summarized_by"]: (row["low"], row["high"])
        for row in Message.objects.filter(session=session, summarized_by__isnull=False)
        .values("summarized_by")
        .annotate(low=Min("position"), high=Max("position"))
    }
    for summary in summaries.only("pk", "covers_from_position", "covers_to_position"):
        low, high = ranges.get(summary.pk, (None, None))
        if (summary.covers_from_position, summary.covers_to_position) != (low, high):
            summary.covers_from_position, summary.covers_to_position = low, high
            summary.save(update_fields=["covers_from_position", "covers_to_position"])
    stats = Message.objects.filter(session=session).aggregate(
        total=Count("id"),
        live=Count("id", filter=Q(active=True)),
        tokens=Sum("token_count", filter=Q(active=True)),
        last=Max("position"),
        newest=Max("created_at"),
    )
    Session.objects.filter(pk=session.pk).update(
        external_id=conversation.tip,
        title=(tip.get("title") or session.title or "")[:300],
        live_messages=stats["live"] or 0,
        live_tokens=(stats["tokens"] or 0) + memory_tokens(session),
        total_messages=stats["total"] or 0,
        next_position=(stats["last"] + 1) if stats["last"] is not None else 0,
        # A summary Hermes kept in a later head is its copy, not another compaction.
        compressions=summaries.exclude(continues__is_summary=True).count(),
        cooldown_until=_when(tip.get("compression_failure_cooldown_until")),
        failure_streak=int(tip.get("compression_fallback_streak") or 0),
        ineffective_streak=int(tip.get("compression_ineffective_count") or 0),
        last_activity_at=stats["newest"] or session.created_at,
    )
    notes = "\n".join(conversation.notes)
    for hermes_id in conversation.links:
        ImportedSession.objects.update_or_create(
            store=store,
            hermes_id=hermes_id,
            defaults={
                "session": session,
                "conversation_root": conversation.root,
                "fingerprint": fingerprints.get(hermes_id, "0:0:0:0"),
                "notes": notes,
            },
        )
