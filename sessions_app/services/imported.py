"""Writes of history that another system recorded first (a Hermes home): sessions opened with
their own times, rows inserted in bulk as they were, their states brought up to date on a
re-run, and the counters settled once at the end. The importer decides what the rows are; the
store writes them. Callers hold one transaction per conversation (and
``sessions_app.bulk.keeping_timestamps``, so the rows keep the times given)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.db import connection
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

from sessions_app.models import Channel, Message, Session
from sessions_app.services.memory import memory_tokens
from sessions_app.services.sessions import resolve_window


def open_imported(
    channel: Channel,
    *,
    model: str,
    title: str,
    created_at: dt.datetime,
    last_activity_at: dt.datetime,
) -> Session:
    """A new session for an imported conversation, dated as it was, its window resolved from
    its model as any new session's is."""
    window, source = resolve_window(model, None)
    return Session.objects.create(
        channel=channel,
        model=model[:200],
        context_window=window,
        context_window_source=source,
        title=title[:300],
        created_at=created_at,
        updated_at=dt.datetime.now(tz=dt.UTC),
        last_activity_at=last_activity_at,
    )


@functools.cache
def row_defaults() -> dict[str, Any]:
    """Every column's default by attribute name: the start of a row for ``insert_rows``."""
    return {f.attname: f.get_default() for f in Message._meta.concrete_fields if not f.primary_key}


def insert_rows(batch: list[dict[str, Any]]) -> dict[int, int]:
    """Insert message rows given as every column's value by attribute name (one session's,
    each at its own position) with one multi-row INSERT per chunk; returns each row's id by
    its position. Django's bulk_create spends more on preparing values than SQLite spends on
    the rows and their search triggers; here each column's adapter is chosen once."""
    if not batch:
        return {}
    columns, adapters = _columns()
    table = connection.ops.quote_name(Message._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c.column) for c in columns)
    one = "(" + ", ".join(["%s"] * len(columns)) + ")"
    per_statement = max(1, min(500, 30_000 // len(columns)))
    ids: dict[int, int] = {}
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
            ids.update((position, pk) for pk, position in cursor.fetchall())
    return ids


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


def stored_rows(
    session: Session, fields: tuple[str, ...], *, only: Iterable[int] | None = None
) -> Iterator[Message]:
    """The session's rows with just ``fields`` (all of them, or those of ``only``), streamed
    for ``save_states``."""
    if only is None:
        yield from Message.objects.filter(session=session).only(*fields).iterator(2_000)
        return
    keys = list(only)
    for start in range(0, len(keys), 500):
        yield from Message.objects.filter(pk__in=keys[start : start + 500]).only(*fields)


def save_states(changed: list[Message], fields: tuple[str, ...]) -> None:
    """Write ``fields`` of rows whose state the other system changed since the last import
    (a later compaction archived them, an undo took them back)."""
    Message.objects.bulk_update(changed, fields, batch_size=500)


def settle(session: Session, **fields: Any) -> None:
    """After an import's rows are written: each summary's range from the rows under it, the
    counters recounted from the rows, and ``fields`` (external id, title, guards) saved. A
    summary that continues another summary is that one's copy, not another compression."""
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
        live_messages=stats["live"] or 0,
        live_tokens=(stats["tokens"] or 0) + memory_tokens(session),
        total_messages=stats["total"] or 0,
        next_position=(stats["last"] + 1) if stats["last"] is not None else 0,
        compressions=summaries.exclude(continues__is_summary=True).count(),
        last_activity_at=stats["newest"] or session.created_at,
        **fields,
    )
