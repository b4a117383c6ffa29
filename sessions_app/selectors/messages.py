"""Reads of message rows that the engine, the console and the agent make: spans, summaries and
their originals, windows around a position."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Q, QuerySet, Sum

from sessions_app.models import Message, Session


def rows_of(session: Session, pks: Iterable[int]) -> QuerySet[Message]:
    """The session's rows among ``pks`` (the rows a selection chose, read again)."""
    return Message.objects.filter(session=session, pk__in=list(pks))


def count_still_live(session: Session, pks: Iterable[int]) -> int:
    """How many of ``pks`` are still live and unpinned: a fold re-checks its rows with this
    under the session's lock before it writes."""
    return rows_of(session, pks).filter(active=True, pinned=False).count()


def live_span(session: Session, first: int, last: int, *, leave: Iterable[int] = ()) -> QuerySet:
    """The live rows from position ``first`` to ``last``, but ``leave`` (the pinned rows a
    compression keeps)."""
    return Message.objects.filter(
        session=session, active=True, position__gte=first, position__lte=last
    ).exclude(pk__in=list(leave))


def span_totals(span: QuerySet[Message]) -> dict[str, int]:
    """Rows, tokens and pinned rows of a span, in one query."""
    found = span.aggregate(
        n=Count("id"), tokens=Sum("token_count"), pinned=Count("id", filter=Q(pinned=True))
    )
    return {key: value or 0 for key, value in found.items()}


def last_good_summary(session: Session) -> Message | None:
    """The latest live summary a model wrote (a fallback summary is not one)."""
    return (
        Message.objects.filter(
            session=session, active=True, is_summary=True, is_fallback_summary=False
        )
        .order_by("-position", "-id")
        .first()
    )


def user_messages_since(session: Session, since: datetime | None) -> int:
    """What the user said since ``since`` (all of it for None)."""
    users = Message.objects.filter(session=session, role=Message.Role.USER, is_summary=False)
    if since is not None:
        users = users.filter(created_at__gt=since)
    return users.count()


def has_original_at(session: Session, position: int) -> bool:
    return Message.objects.filter(session=session, position=position, is_summary=False).exists()


def conversation_near(session: Session, position: int, radius: int) -> list[Message]:
    """The rows within ``radius`` of ``position``, whatever their kind (a summary's originals
    are archived rows at their own positions); rolled-back rows are not part of the
    conversation."""
    return conversation_between(session, max(position - radius, 0), position + radius)


def conversation_between(session: Session, first: int, last: int) -> list[Message]:
    """The conversation's rows from position ``first`` to ``last``, as conversation_near."""
    # ``active IN (true, false)`` says nothing about the rows and lets the planner seek
    # (session, active, position) twice, reading only the range, in a session of any size.
    return list(
        Message.objects.filter(
            session=session, active__in=[True, False], position__gte=first, position__lte=last
        )
        .exclude(active=False, compressed=False)
        .order_by("position", "id")
    )


def summaries_at(session: Session, summary_ids: set[int]) -> dict[int, int]:
    """The position of each of the session's summaries named (by id): where an archived
    original's replacement sits."""
    if not summary_ids:
        return {}
    rows = Message.objects.filter(session=session, pk__in=summary_ids, is_summary=True)
    return dict(rows.values_list("id", "position"))


def not_under_a_summary(session: Session) -> QuerySet[Message]:
    """The rows a timeline shows: head, summaries, live rows, rolled-back rows."""
    return Message.objects.filter(session=session, summarized_by=None)


def covering(session: Session, position: int) -> tuple[int, int] | None:
    """(summary id, original id) of the archived original at ``position``, or None where the
    original there is not under a summary."""
    return (
        Message.objects.filter(session=session, position=position, is_summary=False)
        .exclude(summarized_by=None)
        .values_list("summarized_by_id", "id")
        .first()
    )


def place_of(message_id: int) -> Message | None:
    """Just enough of a message to say where it is shown."""
    return (
        Message.objects.only("id", "session_id", "position", "summarized_by_id")
        .filter(pk=message_id)
        .first()
    )


def summary_in(session_id: Any, summary_id: int) -> Message | None:
    return (
        Message.objects.select_related("session__channel")
        .filter(pk=summary_id, session_id=session_id, is_summary=True)
        .first()
    )


def originals_of(summary: Message) -> QuerySet[Message]:
    return Message.objects.filter(summarized_by=summary)


def lifetimes(session: Session) -> Iterator[tuple[datetime, datetime | None, datetime | None, int]]:
    """(created, archived, rolled back, tokens) of every row, streamed: what a chart of live
    tokens over time is rebuilt from."""
    rows = Message.objects.filter(session=session).values_list(
        "created_at", "archived_at", "rolled_back_at", "token_count"
    )
    return rows.iterator(chunk_size=5_000)


def origin_ids(session: Session) -> dict[Any, int]:
    """Row id by the id its origin system gave it, for the session's imported rows."""
    return {
        origin: pk
        for pk, origin in Message.objects.filter(session=session, origin__isnull=False)
        .values_list("pk", "origin__id")
        .iterator()
        if origin is not None
    }


def last_position(session: Session) -> int:
    """The session's highest position, -1 while it has no row."""
    found = Message.objects.filter(session=session).aggregate(p=Max("position"))["p"]
    return -1 if found is None else found


def rows_page(
    session: Session, *, kind: str | None = None, after: int | None = None, limit: int = 100
) -> tuple[list[Message], bool]:
    """Up to ``limit`` of the session's rows of ``kind`` (every kind for None) after position
    ``after``, in order, and whether more follow."""
    rows = Message.objects.filter(session=session)
    if kind:
        rows = rows.of_kind(kind)
    if after is not None:
        rows = rows.filter(position__gt=after)
    page = list(rows.order_by("position")[: limit + 1])
    return page[:limit], len(page) > limit


def summary_numbers(session: Session) -> dict[int, int]:
    """Each of the session's summaries by id, numbered 1, 2, … in the order they were written:
    a summary that absorbed earlier ones takes their position, so a position does not tell
    two summaries apart, and a number does."""
    ids = Message.objects.filter(session=session, is_summary=True).order_by("id")
    return {pk: n for n, pk in enumerate(ids.values_list("id", flat=True).iterator(), start=1)}
